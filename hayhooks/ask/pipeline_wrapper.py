"""hayhooks pipeline `ask`: answers with citations (`/ask/run`) and as an OpenAI-compatible chat model."""

from typing import Any

from hayhooks import BasePipelineWrapper

from pipelines.serving.auth import current_principal, request_access
from pipelines.serving.chat import chat_completion
from pipelines.serving.engine import get_engine
from pipelines.serving.errors import http_errors


class PipelineWrapper(BasePipelineWrapper):
    """
    The query pipeline (`yaml/query.yaml`) through `LexHay.ask`, on the engine shared by this server's pipelines.

    `POST /ask/run` answers one question (JSON in, JSON out); `POST /v1/chat/completions` with model `ask` (or its
    alias `lexhay`) answers the last user message of a conversation, streaming included (see
    `pipelines.serving.chat`).
    """

    def setup(self) -> None:
        self.engine = get_engine()
        self.pipeline = self.engine.lex.pipeline("query")

    def run_api(
        self,
        question: str,
        history: list[dict[str, Any]] | None = None,
        previous_chunk_ids: list[str] | None = None,
        filters: dict[str, Any] | None = None,
        access: dict[str, Any] | None = None,
        options: dict[str, Any] | None = None,
    ) -> dict:  # a `pipelines.results.QueryResult`; plain `dict` keeps hayhooks' response model as it is
        """
        Answer a question about the indexed statutes, with article-level citations.

        :param question: The question, in natural language (at most LEXHAY_MAX_QUESTION_CHARS characters).
        :param history: Earlier turns of the conversation: a list of {"role": "user" | "assistant", "content"}.
        :param previous_chunk_ids: `context_chunk_ids` of the previous answer (carryover for follow-up questions).
        :param filters: Haystack metadata filters, e.g. {"field": "meta.law_short", "operator": "==", "value": "ET"}.
        :param access: Gateway keys only: the user the gateway acts for (tenant_id, user_id, group_ids, case_id),
            within the gateway's tenant. Other callers get their key's own access.
        :param options: Per-request feature flags, e.g. {"use_rerank": false}.
        :returns: answer, citations, context_chunk_ids, need, route, fallbacks, unverified_citations, flags and trace.
        """
        principal = current_principal()
        with http_errors():
            kwargs = {"question": question, "history": history, "previous_chunk_ids": previous_chunk_ids,
                      "filters": filters, "access": request_access(principal, access), "options": options}
            self.engine.lex.check_ask(**kwargs)  # bad input is a 422 before waiting for a turn
            with self.engine.reading() as lex:
                return lex.ask(**kwargs)

    def run_chat_completion(self, model: str, messages: list[dict], body: dict) -> Any:
        """Answer the last user message of an OpenAI-style conversation (`stream: true` streams the answer)."""
        return chat_completion(self.engine, current_principal(), model, messages, body)
