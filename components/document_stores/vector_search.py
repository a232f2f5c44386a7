"""The one place where the stages that search by vector tell the embedded store and a Qdrant server apart."""

from typing import Any

from haystack import Document

from components.document_stores.edge_converters import point_id
from components.document_stores.ties import TIE_MARGIN, settle_ties
from components.legal.access import and_filters
from components.legal.ids import CHILD_FILTER

MODES = ("dense", "sparse", "hybrid")


def supports_vector_search(document_store: Any) -> bool:
    """Whether `document_store` can be searched by vector: the embedded store or a Qdrant server."""
    return hasattr(document_store, "query_batch") or _is_qdrant(document_store)


def search_batch(
    document_store: Any, requests: list[dict[str, Any]], *, meta_fields: list[str] | None = None
) -> list[list[Document]]:
    """
    Dense, sparse and hybrid searches on either vector store lexhay runs on, one result list per request.

    - The embedded `EdgeDocumentStore` runs the requests in one planned `query_batch` call.
    - qdrant-haystack's `QdrantDocumentStore` (a Qdrant server) runs each request through the integration's own
      retrievers: `QdrantEmbeddingRetriever`, `QdrantSparseEmbeddingRetriever`, `QdrantHybridRetriever`. They are
      imported on first use, so a deployment without the integration never imports it. The server fuses a hybrid
      request itself; `prefetch_k` applies to the embedded store only. On both, equal scores at a search's `top_k` cut
      go in point id order (`components.document_stores.ties`), so the two rank the same documents alike.

    `HybridRetriever`, `ScopeChecker` and `BlockFetcher` search through here. Each stage would otherwise carry
    its own copy of the dispatch, and the copies drift apart. Nothing is kept between calls: the pipeline
    loader points a component at a shared store after its init, and a search always reaches the store the
    component holds at that moment.

    A request is a dict in `EdgeDocumentStore.query_batch`'s format: `mode` (`dense`, `sparse` or `hybrid`), the
    vectors the mode needs (`embedding`, `sparse_embedding`), and optionally `filters`, `top_k` (default 10) and
    `prefetch_k`.

    Usage example:
    ```python
    from components.document_stores.edge_document_store import EdgeDocumentStore
    from components.document_stores.vector_search import search_batch

    dense_hits, sparse_hits = search_batch(EdgeDocumentStore(path=".lexhay"), [
        {"mode": "dense", "embedding": query_vector, "top_k": 20},
        {"mode": "sparse", "sparse_embedding": query_sparse, "top_k": 20},
    ])
    ```

    :param document_store: An `EdgeDocumentStore` or a qdrant-haystack `QdrantDocumentStore`.
    :param requests: The searches.
    :param meta_fields: Light hits: the embedded store returns each hit with its id, score and these meta fields
        only, reading no payload (`EdgeDocumentStore.query_batch`); a server's hits are whole Documents either way.
    :returns: One list of Documents per request, in the order of `requests`, best first, each with its `score`.
    :raises TypeError: The store is neither of the two.
    :raises ValueError: A request is malformed (unknown mode, missing vector).
    """
    if hasattr(document_store, "query_batch"):
        if meta_fields is not None:
            return document_store.query_batch(requests, meta_fields=meta_fields)
        return document_store.query_batch(requests)
    if not _is_qdrant(document_store):
        raise TypeError(
            "Vector search needs an EdgeDocumentStore or a qdrant-haystack QdrantDocumentStore, "
            f"got {type(document_store)}"
        )
    return [_qdrant_search(document_store, request) for request in requests]


def search_dense(
    document_store: Any, embedding: list[float], *, filters: dict[str, Any] | None = None, top_k: int = 10
) -> list[Document]:
    """
    The documents nearest to a dense query vector (`search_batch` with one dense request).

    :param document_store: An `EdgeDocumentStore` or a qdrant-haystack `QdrantDocumentStore`.
    :param embedding: The query vector.
    :param filters: Haystack filters applied before ranking.
    :param top_k: How many documents at most.
    :returns: Documents, best first, `score` the similarity.
    """
    request = {"mode": "dense", "embedding": list(embedding), "filters": filters, "top_k": top_k}
    return search_batch(document_store, [request])[0]


def similarity_by_id(
    document_store: Any, embedding: list[float], ids: list[str], *, filters: dict[str, Any] | None = None
) -> dict[str, float]:
    """
    The similarity of a query vector to the stored dense vector of each of `ids`: one dense search restricted to them.

    Scores blocks that reached a ranking some other way (found by BM25 alone, carried over from the last turn)
    on their meaning, with the vectors already stored: nothing is embedded again. The embedded store answers with
    scores alone (`EdgeDocumentStore.dense_similarities`, no payload read); a Qdrant server, with a dense search
    restricted to the ids. A block without a dense vector, or one `filters` excludes, gets no score.

    :param document_store: An `EdgeDocumentStore` or a qdrant-haystack `QdrantDocumentStore`.
    :param embedding: The query vector.
    :param ids: Document ids.
    :param filters: Haystack filters the blocks must also pass.
    :returns: id -> similarity, for each of `ids` found.
    :raises ValueError: The query vector does not fit the store (e.g. another model's dimension).
    """
    unique = list(dict.fromkeys(ids))
    if not unique:
        return {}
    if hasattr(document_store, "dense_similarities"):
        return document_store.dense_similarities(embedding, unique, filters=filters)
    restriction = and_filters({"field": "id", "operator": "in", "value": unique}, filters)
    hits = search_dense(document_store, embedding, filters=restriction, top_k=len(unique))
    return {hit.id: float(hit.score) for hit in hits if hit.score is not None}


def best_passage_similarity(
    document_store: Any,
    embedding: list[float],
    parent_ids: list[str],
    *,
    filters: dict[str, Any] | None = None,
    per_parent: int = 8,
) -> dict[str, float]:
    """
    The best similarity of a query vector to the passages (child chunks with a dense vector) of each parent block.

    One dense search restricted to the children of `parent_ids`, reading no payload on the embedded store (the
    hits carry their `parent_id` alone). Up to `per_parent` hits per parent are read, best first, so each parent's
    best passage is among them unless its passages rank below `per_parent * len(parent_ids)` others.

    :param document_store: An `EdgeDocumentStore` or a qdrant-haystack `QdrantDocumentStore`.
    :param embedding: The query vector.
    :param parent_ids: Parent block ids.
    :param filters: Haystack filters the children must also pass.
    :param per_parent: Hits read per parent.
    :returns: parent id -> best passage similarity, for each parent with at least one passage vector.
    """
    unique = list(dict.fromkeys(parent_ids))
    if not unique:
        return {}
    restriction = and_filters(CHILD_FILTER, {"field": "meta.parent_id", "operator": "in", "value": unique}, filters)
    request = {"mode": "dense", "embedding": list(embedding), "filters": restriction, "top_k": per_parent * len(unique)}
    meta_fields = ["parent_id"] if hasattr(document_store, "query_batch") else None
    best: dict[str, float] = {}
    for hit in search_batch(document_store, [request], meta_fields=meta_fields)[0]:
        parent = hit.meta.get("parent_id")
        if parent is not None and hit.score is not None and float(hit.score) > best.get(parent, float("-inf")):
            best[parent] = float(hit.score)
    return best


def stored_vectors(document_store: Any, ids: list[str]) -> dict[str, tuple[dict[str, Any], list[float] | None]]:
    """
    The meta and the stored dense vector of each of `ids` the store holds.

    Indexing reads them to keep the vector of a block whose embedded text did not change. The embedded store
    reads its points directly (`EdgeDocumentStore.dense_vectors_by_id`); any other Haystack document store (a
    Qdrant server included, whose reads return the vectors) answers a filter on the ids.

    :param document_store: An `EdgeDocumentStore` or any Haystack document store.
    :param ids: Document ids.
    :returns: id -> (meta, dense vector, or `None` for a document without one), for each of `ids` found.
    """
    unique = list(dict.fromkeys(ids))
    if not unique:
        return {}
    if hasattr(document_store, "dense_vectors_by_id"):
        return document_store.dense_vectors_by_id(unique)
    documents = document_store.filter_documents({"field": "id", "operator": "in", "value": unique})
    return {
        doc.id: (dict(doc.meta), list(doc.embedding) if doc.embedding is not None else None) for doc in documents
    }


def _qdrant_search(document_store: Any, request: dict[str, Any]) -> list[Document]:
    from haystack_integrations.components.retrievers.qdrant import (  # noqa: PLC0415
        QdrantEmbeddingRetriever,
        QdrantHybridRetriever,
        QdrantSparseEmbeddingRetriever,
    )

    mode = request.get("mode")
    if mode not in MODES:
        raise ValueError(f"A search request's mode must be one of {MODES}, got {mode!r}")
    dense = {"query_embedding": request.get("embedding")}
    sparse = {"query_sparse_embedding": request.get("sparse_embedding")}
    retriever, vectors = {
        "dense": (QdrantEmbeddingRetriever, dense),
        "sparse": (QdrantSparseEmbeddingRetriever, sparse),
        "hybrid": (QdrantHybridRetriever, {**dense, **sparse}),
    }[mode]
    missing = [name for name, value in vectors.items() if value is None]
    if missing:
        raise ValueError(f"A {mode} search request needs {', '.join(missing)}")
    search = retriever(document_store=document_store)
    top_k, depth = request.get("top_k", 10), TIE_MARGIN
    while True:  # equal scores at the cut in point id order, as on the embedded store (`ties`)
        found = search.run(**vectors, filters=request.get("filters"), top_k=top_k + depth)["documents"]
        kept = settle_ties([(doc.score or 0.0, point_id(doc.id), doc) for doc in found], top_k, depth)
        if kept is not None:
            return [doc for _, _, doc in kept]
        depth *= 2


def _is_qdrant(document_store: Any) -> bool:
    """A qdrant-haystack `QdrantDocumentStore`, told by its class without importing the integration."""
    return any(
        cls.__name__ == "QdrantDocumentStore" and cls.__module__.startswith("haystack_integrations.")
        for cls in type(document_store).__mro__
    )
