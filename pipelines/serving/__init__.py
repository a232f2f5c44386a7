"""
HTTP serving of lexhay with hayhooks, in parts:

- `engine`: one `LexHay` per store for the whole server, with its shared / exclusive lock.
- `errors`: engine errors as HTTP errors (ValueError -> 422, busy -> 503, ...), OpenAI's error shape.
- `auth`: API keys, principals, roles and the `access` built from them.
- `guard`: the ASGI middleware in front of every route: origin, keys, per-key rate / concurrency, body size,
  deadline.
- `openai_compat`: OpenAI's error shape, chat models only in `/v1/models`, `[DONE]` at the end of a stream.
- `strict_fields`: a JSON field a `/{name}/run` route does not declare is a 422, not silently dropped.
- `uploads`: indexing uploads and server-side paths.
- `chat`: the OpenAI-compatible chat of `ask`, plain and streaming.
- `app`: the app (`create_app`) and `serve`.
- `config`: the `LEXHAY_*` server settings.

Input validation is the engine's (`pipelines.sdk`); serving adds only HTTP limits.
"""

from pipelines.serving.app import create_app, serve
from pipelines.serving.engine import get_engine

__all__ = ["create_app", "get_engine", "serve"]
