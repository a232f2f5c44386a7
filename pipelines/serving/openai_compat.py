"""
What OpenAI clients expect of the `/v1/*` routes, added around hayhooks' OpenAI router (an ASGI middleware: the
router itself is left as hayhooks builds it):

- errors in OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`, whatever raised them (the engine's
  422s, the guard's 401 / 403 / 413 / 429, FastAPI's own validation);
- `GET /v1/models` lists only the models that can chat (`ask`, `lexhay`), not every deployed pipeline;
- a streamed completion ends with `data: [DONE]`, as OpenAI's own streams do.
"""

import json
from typing import Any

from pipelines.serving.errors import openai_error_body

OPENAI_ALIASES = ("/models", "/chat/completions", "/responses", "/files")
MODELS_PATHS = ("/v1/models", "/models")
DONE = b"data: [DONE]\n\n"


def is_openai_path(path: str) -> bool:
    return path.startswith("/v1/") or path in OPENAI_ALIASES or path.startswith(tuple(a + "/" for a in OPENAI_ALIASES))


def chat_models(app: Any) -> set[str] | None:
    """Names of the deployed pipelines that implement chat (None when the app has no hayhooks registry)."""
    from hayhooks import BasePipelineWrapper  # noqa: PLC0415

    registry = getattr(getattr(app, "state", None), "pipeline_registry", None)
    if registry is None:
        return None
    names = set()
    for name in registry.get_names():
        wrapper = registry.get(name)
        cls = type(wrapper)
        if isinstance(wrapper, BasePipelineWrapper) and (
            cls.run_chat_completion is not BasePipelineWrapper.run_chat_completion
            or cls.run_chat_completion_async is not BasePipelineWrapper.run_chat_completion_async
        ):
            names.add(name)
    return names


def _with_length(headers: list[tuple[bytes, bytes]], length: int) -> list[tuple[bytes, bytes]]:
    kept = [(k, v) for k, v in headers if k.lower() not in (b"content-length", b"content-type")]
    return [*kept, (b"content-type", b"application/json"), (b"content-length", str(length).encode())]


class OpenAICompat:
    """The ASGI middleware described in the module docstring."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if not is_openai_path(path):
            await self.app(scope, receive, send)
            return
        listing = scope.get("method") == "GET" and path in MODELS_PATHS
        state: dict[str, Any] = {"start": None, "mode": "pass", "body": b""}

        async def patched_send(message: Any) -> None:
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = dict((k.lower(), v) for k, v in message.get("headers", []))
                if status >= 400:
                    state["mode"] = "error"
                elif listing and status == 200:
                    state["mode"] = "models"
                elif headers.get(b"content-type", b"").startswith(b"text/event-stream"):
                    state["mode"] = "stream"
                if state["mode"] in ("error", "models"):
                    state["start"] = message
                    return
                await send(message)
                return
            if message["type"] != "http.response.body":
                await send(message)
                return
            if state["mode"] == "stream":
                if message.get("more_body", False):
                    await send(message)
                else:
                    await send({**message, "more_body": True})
                    await send({"type": "http.response.body", "body": DONE, "more_body": False})
                return
            if state["mode"] == "pass":
                await send(message)
                return
            state["body"] += message.get("body", b"")
            if message.get("more_body", False):
                return
            start = state["start"]
            body = self._rewrite(state["mode"], start["status"], state["body"], scope)
            await send({**start, "headers": _with_length(start.get("headers", []), len(body))})
            await send({"type": "http.response.body", "body": body, "more_body": False})

        await self.app(scope, receive, patched_send)

    @staticmethod
    def _rewrite(mode: str, status: int, raw: bytes, scope: dict[str, Any]) -> bytes:
        try:
            payload = json.loads(raw) if raw else {}
        except ValueError:
            payload = {"detail": raw.decode("utf-8", "replace").strip() or f"HTTP {status}"}
        if mode == "error":
            if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
                return raw  # already OpenAI's shape
            detail = payload.get("detail", payload) if isinstance(payload, dict) else payload
            return json.dumps(openai_error_body(status, detail), ensure_ascii=False).encode("utf-8")
        names = chat_models(scope.get("app"))
        if names is not None and isinstance(payload, dict) and isinstance(payload.get("data"), list):
            payload["data"] = [m for m in payload["data"] if isinstance(m, dict) and m.get("id") in names]
        return json.dumps(payload, ensure_ascii=False).encode("utf-8")
