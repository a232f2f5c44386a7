"""Multi-query retrieval: the foundation retrieval run for several queries in parallel, merged per parent block."""

import contextvars
import math
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.core.serialization import component_to_dict

from components.legal.ids import BASIS_EXPANSION
from components.utils.fusion import rrf_scores
from components.utils.nested import nested_init_parameters, warm_up_nested

logger = logging.getLogger(__name__)

NESTED_COMPONENTS = ("chain",)


@component
class MultiQueryRetriever:
    """
    Runs the foundation retrieval chain for each of several queries and merges the parent blocks they find.

    For every query the `RetrievalChain` runs (dense + sparse query embedding -> `HybridRetriever` ->
    `ParentResolver` -> optional `LegalReranker`), the queries in parallel threads. The rankings of several
    queries are fused by reciprocal rank fusion (`rrf_k`): a block found by several queries, such as the two
    readings of a conversation turn (as written, and read with the question before it), comes before a block
    only one of them ranks as high. The fused scores are scaled so that the first block keeps the best score any
    query gave, the scale of the cited and carried-over blocks the query pipeline merges them with. A constitutional
    basis the chain placed (`BasisExpander`) takes no rank in the fusion: it follows the block it followed, scored
    just below it. One query's blocks keep the chain's scores. The queries that found a block are listed in its
    `meta["matched_queries"]`, and its rank in each of their rankings (0 = that query's best block) in
    `meta["query_ranks"]`: the answer quotes each query's best block, so a comparison ("despido objetivo y
    disciplinario") gets both sides.
    This is the retrieval step after `DecomposeQuery` (1-4 search queries) and HyDE: a `hypothetical_document`
    replaces the text embedded on the dense side for every query, while the BM25 side keeps each query's words.

    ### Usage example

    ```python
    from components.retrievers.multi_query_retriever import MultiQueryRetriever
    from components.retrievers.retrieval_chain import RetrievalChain

    retriever = MultiQueryRetriever(chain=RetrievalChain(...), top_k=30)  # the chain's stages: see RetrievalChain
    result = retriever.run(queries=["contrato de interinidad", "contrato eventual"])
    result["documents"], result["per_query"]  # merged parent blocks; [{"query", "hits", "ms"}, ...]
    ```
    """

    def __init__(
        self, *, chain: Any, top_k: int = 30, max_workers: int = 4, require_filters: bool = False, rrf_k: int = 2
    ) -> None:
        """
        Create a MultiQueryRetriever.

        :param chain: The retrieval chain run for each query (`RetrievalChain`: `run(text, dense_text, filters)` ->
            `documents`, and `candidates` before re-ranking).
        :param top_k: Maximum number of merged parent blocks returned.
        :param max_workers: Maximum number of queries retrieved at the same time (threads).
        :param require_filters: Refuse to run without `filters` (the query pipeline sets it: every run there must
            carry the request's access filter, including the runs of the CRAG retry loop).
        :param rrf_k: The rank constant of the fusion of several queries' rankings: a block at rank r of a query
            adds `1 / (rrf_k + r)`. Small, as in `HybridRetriever`'s fusion: the first ranks of a few short
            rankings are what counts.
        :raises ValueError: A chain without `run`, a non-positive `top_k` / `max_workers`, or a negative `rrf_k`.
        """
        if not callable(getattr(chain, "run", None)):
            raise ValueError(f"chain must be a Haystack component with a run() method, got {chain!r}")
        if top_k <= 0:
            raise ValueError(f"top_k must be > 0, got {top_k}")
        if max_workers <= 0:
            raise ValueError(f"max_workers must be > 0, got {max_workers}")
        if rrf_k < 0:
            raise ValueError(f"rrf_k must be >= 0, got {rrf_k}")
        self.chain = chain
        self.top_k = top_k
        self.max_workers = max_workers
        self.require_filters = require_filters
        self.rrf_k = rrf_k
        self._is_warmed_up = False

    def to_dict(self) -> dict[str, Any]:
        """
        Serialize this component to a dictionary; the chain is serialized with `component_to_dict`.

        :returns: Dictionary with serialized data.
        """
        return default_to_dict(
            self,
            chain=component_to_dict(self.chain, "chain"),
            top_k=self.top_k,
            max_workers=self.max_workers,
            require_filters=self.require_filters,
            rrf_k=self.rrf_k,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "MultiQueryRetriever":
        """
        Deserialize this component from a dictionary (the chain's classes must be on the allowlist).

        :param data: Dictionary to deserialize from.
        :returns: Deserialized component.
        """
        return default_from_dict(cls, nested_init_parameters(data, NESTED_COMPONENTS))

    def warm_up(self) -> None:
        """Warm up the chain (models, BM25). Calling it again does nothing."""
        if self._is_warmed_up:
            return
        warm_up_nested(self, NESTED_COMPONENTS)
        self._is_warmed_up = True

    @component.output_types(
        documents=list[Document], per_query=list[dict[str, Any]], applied_filters=dict[str, Any] | None
    )
    def run(
        self,
        queries: list[str],
        filters: dict[str, Any] | None = None,
        hypothetical_document: str | None = None,
        top_k: int | None = None,
        rerank: bool | None = None,
        named_laws: list[str] | None = None,
        question: str | None = None,
    ) -> dict[str, Any]:
        """
        Retrieve parent blocks for each query and merge them.

        :param queries: The queries (e.g. `DecomposeQuery`'s search queries). Empty or blank ones and repeats are
            skipped; no query left returns no documents.
        :param filters: Haystack filters applied to every query's retrieval.
        :param hypothetical_document: HyDE text: when given, it is embedded on the dense side instead of each
            query (the same text for every query: the process-wide query embedding cache embeds it once); the sparse
            (BM25) side always uses each query.
        :param top_k: Overrides the init `top_k`.
        :param rerank: Feature flag `rerank` for this run: `False` returns the chain's blocks before re-ranking
            (plain hybrid scores).
        :param named_laws: Law ids of the norms the question names (`CitationDetector.named_laws`), passed on to
            every query's chain (its retriever also searches within them, its re-ranker puts their blocks first).
        :param question: The user's question the queries were made from, passed on to every query's chain: its
            re-ranker puts the question's jurisdiction first even for a query such as "pagar", which shows none.
        :returns: `documents`: merged parent blocks, best first (several queries: fused, see the class docstring),
            at most `top_k`, each with `meta["matched_queries"]` and `meta["query_ranks"]`; `per_query`:
            `{"query", "hits", "ms"}` per query run, for the trace; `applied_filters`: the `filters` used (a loop
            passes them on to the next run, see `CRAGRouter`).
        :raises ValueError: `queries` is not a list of strings, `top_k` is not positive, or `filters` is missing
            while `require_filters` is set.
        """
        if not isinstance(queries, list) or any(not isinstance(q, str) for q in queries):
            raise ValueError(f"queries must be a list of strings, got {queries!r}")
        if self.require_filters and not filters:
            raise ValueError("MultiQueryRetriever: filters are required here (the request's access filter)")
        top_k = self.top_k if top_k is None else top_k
        if top_k <= 0:
            raise ValueError(f"top_k must be > 0, got {top_k}")
        kept = list(dict.fromkeys(q.strip() for q in queries if q.strip()))
        if not kept:
            return {"documents": [], "per_query": [], "applied_filters": filters}
        self.warm_up()
        dense_text = hypothetical_document if hypothetical_document and hypothetical_document.strip() else None

        def retrieve(query: str) -> tuple[list[Document], float]:
            start = time.perf_counter()
            asked = {"named_laws": named_laws} if named_laws is not None else {}
            if question is not None and question.strip():
                asked["question"] = question
            out = self.chain.run(text=query, dense_text=dense_text, filters=filters, **asked)
            # feature flag `rerank` off: the chain's parent blocks before re-ranking
            documents = out["documents"] if rerank is not False else out.get("candidates", out["documents"])
            return documents, (time.perf_counter() - start) * 1000

        with ThreadPoolExecutor(max_workers=min(self.max_workers, len(kept))) as pool:
            # each thread runs in a copy of the caller's context, so the request's trace sees its cache hits
            futures = [pool.submit(contextvars.copy_context().run, retrieve, query) for query in kept]
            results = [future.result() for future in futures]

        documents = self._fused([(query, docs) for query, (docs, _) in zip(kept, results)], top_k)
        per_query = [
            {"query": query, "hits": len(docs), "ms": round(ms, 1)} for query, (docs, ms) in zip(kept, results)
        ]
        logger.debug(
            "Multi-query retrieval: {n_queries} queries -> {n_docs} parent blocks",
            n_queries=len(kept),
            n_docs=len(documents),
        )
        return {"documents": documents, "per_query": per_query, "applied_filters": filters}

    def _fused(self, rankings: list[tuple[str, list[Document]]], top_k: int) -> list[Document]:
        """The blocks of the queries' rankings, one per id, best first, at most `top_k` (see the class docstring)."""
        best: dict[str, Document] = {}
        matched: dict[str, dict[str, int]] = {}
        ids: list[list[str]] = []
        after: dict[str, str | None] = {}  # a basis -> the block before it where it scores best (None: first)
        for query, documents in rankings:
            ranked = sorted(documents, key=lambda d: d.score or 0.0, reverse=True)
            # a constitutional basis (`BasisExpander`) takes no rank of its own: it follows the block before it
            ids.append([doc.id for doc in ranked if doc.meta.get("expansion") != BASIS_EXPANSION])
            previous = None
            for rank, doc in enumerate(ranked):
                matched.setdefault(doc.id, {}).setdefault(query, rank)
                better = doc.id not in best or (doc.score or 0.0) > (best[doc.id].score or 0.0)
                if doc.meta.get("expansion") != BASIS_EXPANSION:
                    previous = doc.id
                elif better:
                    after[doc.id] = previous
                if better:
                    best[doc.id] = doc
        if len(rankings) == 1:
            scores = {doc_id: best[doc_id].score or 0.0 for doc_id in best}
        else:
            fused = rrf_scores(ids, k=self.rrf_k)
            scale = max((d.score or 0.0) for d in best.values()) / max(fused.values()) if fused else 0.0
            scores = {doc_id: value * scale for doc_id, value in fused.items()}
            top = max(scores.values(), default=0.0)
            for doc_id, previous in after.items():
                if doc_id not in scores:  # just below the block before it; above the first when it opened a ranking
                    scores[doc_id] = math.nextafter(scores[previous], -math.inf) if previous else math.nextafter(
                        top, math.inf)
        order = sorted(scores, key=scores.__getitem__, reverse=True)[:top_k]
        return [
            Document(
                id=doc_id,
                content=best[doc_id].content,
                meta={**best[doc_id].meta, "matched_queries": list(matched[doc_id]), "query_ranks": matched[doc_id]},
                score=scores[doc_id],
            )
            for doc_id in order
        ]
