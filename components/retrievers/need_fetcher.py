"""NEED retry: fetch what the answer said it lacks, and merge it into the context for one more answer."""

import time
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.core.serialization import component_to_dict

from components.utils.nested import nested_init_parameters, warm_up_nested

logger = logging.getLogger(__name__)

NESTED_COMPONENTS = ("fetcher", "chain")


@component
class NeedFetcher:
    """
    Resolves the answer's `NEED` requests and returns the enlarged context for the regenerated answer.

    - `NEED|<article>|<law>` (a AnswerMetaParser item of type `article`): every part of that article is fetched by
      metadata (`BlockFetcher`); when the store has no such article, the request's text (`art. 48 ET`) is searched
      instead (semantic fallback).
    - `NEED|<keywords>` (type `keywords`): the keywords run through the foundation retrieval chain
      (`RetrievalChain`: hybrid search, parent blocks, legal re-ranking).

    New blocks are scored, merged with the current context (a block already there keeps its place) and the
    score cap is raised to `max_documents` (30) for the second answer. When nothing new is found, regenerating
    would repeat the first answer: the `answer` given is passed through on `unchanged_answer` instead (no second
    LLM call), and `documents` is not emitted. Fetched articles are what the model asked
    for by name: they get the best score of the current context so the cap never cuts them. Every read goes
    through `filters` (the request's access filter). `retries` counts NEED rounds for the pipeline's
    `ConditionalRouter` (one retry by default).

    ### Usage example

    ```python
    from components.retrievers.need_fetcher import NeedFetcher

    need_fetcher = NeedFetcher(fetcher=BlockFetcher(document_store=store), chain=retrieval_chain)
    out = need_fetcher.run(need=parsed["need"], documents=context_documents, filters=access_filters)
    out["documents"], out["max_documents"], out["retries"]
    ```
    """

    def __init__(self, *, fetcher: Any, chain: Any, max_documents: int = 30, max_new: int = 10) -> None:
        """
        Create a NeedFetcher.

        :param fetcher: `BlockFetcher` (`run(need, filters)` -> parent blocks of the requested articles).
        :param chain: `RetrievalChain` (`run(text, filters)` -> parent blocks) for keyword requests and the
            semantic fallback.
        :param max_documents: Score cap of the regenerated answer.
        :param max_new: Most new blocks added per NEED round.
        :raises ValueError: A component without `run`, or non-positive limits.
        """
        for name, value in (("fetcher", fetcher), ("chain", chain)):
            if not callable(getattr(value, "run", None)):
                raise ValueError(f"{name} must be a Haystack component with a run() method, got {value!r}")
        if max_documents < 1 or max_new < 1:
            raise ValueError(f"max_documents and max_new must be >= 1, got {max_documents}, {max_new}")
        self.fetcher = fetcher
        self.chain = chain
        self.max_documents = max_documents
        self.max_new = max_new
        self._is_warmed_up = False

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary (nested components with `component_to_dict`)."""
        nested = {name: component_to_dict(getattr(self, name), name) for name in NESTED_COMPONENTS}
        return default_to_dict(self, **nested, max_documents=self.max_documents, max_new=self.max_new)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "NeedFetcher":
        """Deserialize this component from a dictionary (nested classes must be on the allowlist)."""
        return default_from_dict(cls, nested_init_parameters(data, NESTED_COMPONENTS))

    def warm_up(self) -> None:
        """Warm up the nested components (models). Calling it again does nothing."""
        if self._is_warmed_up:
            return
        warm_up_nested(self, NESTED_COMPONENTS)
        self._is_warmed_up = True

    @component.output_types(
        documents=list[Document], max_documents=int, retries=int, unchanged_answer=str, trace=dict[str, Any]
    )
    def run(
        self,
        need: list[dict[str, Any]],
        documents: list[Document],
        filters: dict[str, Any] | None = None,
        retries: int = 0,
        answer: str | None = None,
    ) -> dict[str, Any]:
        """
        Fetch the requested blocks and merge them into the context.

        :param need: `AnswerMetaParser` NEED items (`{"type": "article"|"keywords", "query", ...}`).
        :param documents: The context the first answer was given.
        :param filters: Restriction for every read (access control).
        :param retries: NEED rounds already done.
        :param answer: The first answer, passed on as `unchanged_answer` when nothing new is found.
        :returns: `documents`: the context plus the new blocks, best first, and `max_documents`: the raised cap
            (only when something new was found; otherwise `unchanged_answer`); `retries`: `retries + 1`;
            `trace`: what was asked, how each request was served, the new block ids.
        :raises ValueError: `need` is not a list of dicts.
        """
        if not isinstance(need, list) or any(not isinstance(item, dict) for item in need):
            raise ValueError(f"need must be a list of AnswerMetaParser items (dicts), got {need!r}")
        started = time.perf_counter()
        self.warm_up()
        have = {doc.id for doc in documents}
        top = max((doc.score or 0.0 for doc in documents), default=1.0) or 1.0
        new: dict[str, Document] = {}
        served: list[dict[str, Any]] = []
        for item in need:
            found: list[Document] = []
            how = "fetch"
            if item.get("type") == "article" and item.get("law_id") and item.get("article"):
                found = [
                    Document(id=d.id, content=d.content, meta={**d.meta, "need": item.get("query")}, score=top)
                    for d in self.fetcher.run(need=[item], filters=filters)["documents"]
                ]
            if not found and (item.get("query") or "").strip():
                how = "search" if item.get("type") != "article" else "fetch_missing_then_search"
                found = [
                    Document(id=d.id, content=d.content, meta={**d.meta, "need": item["query"]}, score=d.score)
                    for d in self.chain.run(text=item["query"], filters=filters)["documents"]
                ]
            added = [d for d in found if d.id not in have and d.id not in new][: self.max_new - len(new)]
            for doc in added:
                new[doc.id] = doc
            served.append({"need": item.get("query"), "type": item.get("type"), "how": how,
                           "found": len(found), "added": [d.id for d in added]})
            if len(new) >= self.max_new:
                break
        trace = {"requests": served, "new_ids": list(new), "ms": round((time.perf_counter() - started) * 1000, 1)}
        logger.info("NEED retry: {n} request(s) -> {k} new block(s)", n=len(need), k=len(new))
        if not new:
            return {"unchanged_answer": answer or "", "retries": retries + 1, "trace": trace}
        merged = sorted([*documents, *new.values()], key=lambda d: d.score or 0.0, reverse=True)
        return {"documents": merged, "max_documents": self.max_documents, "retries": retries + 1, "trace": trace}
