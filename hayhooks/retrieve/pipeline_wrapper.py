"""hayhooks pipeline `retrieve`: the parent blocks (articles or article parts) that best answer a question."""

from typing import Any, Literal

from hayhooks import BasePipelineWrapper

from pipelines.results import document_row
from pipelines.serving.auth import current_principal, request_access
from pipelines.serving.engine import get_engine
from pipelines.serving.errors import http_error, http_errors

MAX_TOP_K = 100


class PipelineWrapper(BasePipelineWrapper):
    """The retrieval pipeline (`yaml/retrieval.yaml`) through `LexHay.retrieve`, on the server's shared engine."""

    def setup(self) -> None:
        self.engine = get_engine()
        self.pipeline = self.engine.lex.pipeline("retrieval")

    def run_api(
        self,
        question: str,
        top_k: int = 10,
        mode: Literal["sparse", "dense", "hybrid", "full"] = "full",
        filters: dict[str, Any] | None = None,
        collections: list[str] | None = None,
        articles: bool = False,
        access: dict[str, Any] | None = None,
        options: dict[str, Any] | None = None,
    ) -> dict:
        """
        Retrieve the statute blocks that best answer a question, best first.

        :param question: The question, in natural language (at most LEXHAY_MAX_QUESTION_CHARS characters).
        :param top_k: Number of results, 1 to 100.
        :param mode: sparse, dense, hybrid, or full (hybrid + legal re-ranking, the best).
        :param filters: Haystack metadata filters, e.g. {"field": "meta.law_short", "operator": "==", "value": "ET"}.
        :param collections: Restrict to these logical collections (normativa, sentencias, criterios).
        :param articles: One result per article (its best-scored part) instead of one per parent block.
        :param access: Gateway keys only: the user the gateway acts for (tenant_id, user_id, group_ids, case_id),
            within the gateway's tenant. Other callers get their key's own access.
        :param options: Per-request feature flags, e.g. {"use_rerank": false}.
        :returns: {"results": [{"id", "score", "content", "meta"}]}, meta with law_id, law_short, article, ...
        """
        if not 1 <= top_k <= MAX_TOP_K:  # an HTTP limit; the engine takes any positive top_k
            raise http_error(422, f"top_k must be between 1 and {MAX_TOP_K}, got {top_k}")
        principal = current_principal()
        with http_errors():
            kwargs = {"top_k": top_k, "mode": mode, "filters": filters, "collections": collections,
                      "access": request_access(principal, access), "options": options}
            with self.engine.reading() as lex:
                docs = lex.retrieve_articles(question, **kwargs) if articles else lex.retrieve(question, **kwargs)
        return {"results": [document_row(d) for d in docs]}
