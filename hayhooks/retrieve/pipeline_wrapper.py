"""hayhooks pipeline `retrieve`: the parent blocks (articles or article parts) that best answer a question."""

from typing import Any, Literal

from hayhooks import BasePipelineWrapper

from pipelines.serve import checked_collections, checked_filters, checked_question, document_row, engine_kwargs
from pipelines.serve import get_engine, http_error, http_errors

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
        :param access: Who asks (multi-tenant access): keys among tenant_id, user_id, group_ids, case_id.
        :param options: Per-request feature flags, e.g. {"use_rerank": false}.
        :returns: {"results": [{"id", "score", "content", "meta"}]}, meta with law_id, law_short, article, ...
        """
        question = checked_question(question)
        if not 1 <= top_k <= MAX_TOP_K:
            raise http_error(422, f"top_k must be between 1 and {MAX_TOP_K}, got {top_k}")
        lex = self.engine.lex
        kwargs = {
            "top_k": top_k,
            "mode": mode,
            "filters": checked_filters(filters),
            "collections": checked_collections(self.engine, collections),
            **engine_kwargs(lex.retrieve, access=access, options=options),
        }
        with http_errors(), self.engine.reading():
            docs = lex.retrieve_articles(question, **kwargs) if articles else lex.retrieve(question, **kwargs)
        return {"results": [document_row(d) for d in docs]}
