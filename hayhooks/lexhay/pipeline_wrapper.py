"""hayhooks pipeline `lexhay`: the chat model name OpenAI clients use (the `ask` pipeline, chat only)."""

from typing import Any

from hayhooks import BasePipelineWrapper

from pipelines.serving.auth import current_principal
from pipelines.serving.chat import chat_completion
from pipelines.serving.engine import get_engine


class PipelineWrapper(BasePipelineWrapper):
    """
    `POST /v1/chat/completions` with `"model": "lexhay"`: the answer of `LexHay.ask` to the last user message,
    earlier messages as history, streaming included. No `/lexhay/run` route: that is `/ask/run`.

    Extra body fields: `previous_chunk_ids` (carryover: the `lexhay.context_chunk_ids` of the previous response),
    `filters`, `options`, and `access` for gateway keys. See `pipelines.serving.chat` and hayhooks/README.md.
    """

    skip_mcp = True

    def setup(self) -> None:
        self.engine = get_engine()
        self.pipeline = self.engine.lex.pipeline("query")

    def run_chat_completion(self, model: str, messages: list[dict], body: dict) -> Any:
        """Answer the last user message of an OpenAI-style conversation (`stream: true` streams the answer)."""
        return chat_completion(self.engine, current_principal(), model, messages, body)
