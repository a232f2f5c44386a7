"""Small-to-big: chunk hits -> their parent blocks, one per parent, with the best chunk score."""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging

from components.legal.ids import DENSE_SCORE, PASSAGE_SCORE, parent_key

logger = logging.getLogger(__name__)


@component
class ParentResolver:
    """
    Replaces retrieved chunks by the parent blocks they belong to.

    Children are the precise search unit; parents (an article, or one part of a long article) are what the
    reader and the LLM get. Several hits of one parent return that parent once, with the best score among its
    hits; a hit that is itself a parent counts for itself. The ids of the chunks that matched are kept in the
    parent's `meta["matched_chunk_ids"]` (traceability); the best `meta["dense_score"]` of its hits (the absolute
    dense similarity `HybridRetriever` records) and the best `meta["passage_score"]` (its passages' best) are kept too.

    Why not Haystack's `AutoMergingRetriever`: it swaps leaves for their parent only when more than `threshold`
    of the parent's children were retrieved, over the tree `HierarchicalDocumentSplitter` writes (`__parent_id`,
    `__children_ids`, `__level`). Here a parent is a legal unit (an article, or one part of a long one) and one
    matching child is reason enough to return it whole: answers quote and cite provisions, not fragments. The
    parents also keep the best child score and dense similarity (which the re-ranker and CRAG grade), and are read
    through the request's access filter.

    ### Usage example

    ```python
    from components.retrievers.parent_resolver import ParentResolver

    resolver = ParentResolver(document_store=store, top_k=10)
    parents = resolver.run(documents=retriever_hits)["documents"]
    ```
    """

    def __init__(self, *, document_store: Any, top_k: int = 10) -> None:
        """
        Create a ParentResolver.

        :param document_store: The store holding the parent blocks (any store with `get_documents_by_id`
            or `filter_documents`).
        :param top_k: Maximum number of parent blocks returned.
        """
        if top_k <= 0:
            raise ValueError(f"top_k must be > 0, got {top_k}")
        self.document_store = document_store
        self.top_k = top_k

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(self, document_store=self.document_store, top_k=self.top_k)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ParentResolver":
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(
        self, documents: list[Document], top_k: int | None = None, filters: dict[str, Any] | None = None
    ) -> dict[str, list[Document]]:
        """
        Resolve chunk hits to parent blocks.

        :param documents: Retrieved chunks (children and/or parents) with scores; a parent without content (a light
            hit, `HybridRetriever(light_hits=True)`) is read from the store like a child's parent.
        :param top_k: Overrides the init `top_k`.
        :param filters: The request's filters (access filter included): parents are read through them, so a
            parent the caller may not read is never returned, even when one of its chunks was.
        :returns: `documents`: parent blocks sorted by their best hit score.
        """
        top_k = top_k or self.top_k
        best: dict[str, float] = {}
        matched: dict[str, list[str]] = {}
        known: dict[str, Document] = {}
        similarity: dict[str, dict[str, float]] = {DENSE_SCORE: {}, PASSAGE_SCORE: {}}  # best per parent
        for doc in documents:
            parent_id = parent_key(doc)
            for key, best_of in similarity.items():
                if isinstance(doc.meta.get(key), (int, float)):
                    best_of[parent_id] = max(best_of.get(parent_id, doc.meta[key]), doc.meta[key])
            if doc.id == parent_id and doc.content is not None:  # a light hit (no content): its block is read
                known[doc.id] = doc
            score = doc.score or 0.0
            if parent_id not in best or score > best[parent_id]:
                best[parent_id] = score
            matched.setdefault(parent_id, []).append(doc.id)
        ranked = sorted(best, key=best.__getitem__, reverse=True)[:top_k]
        missing = [pid for pid in ranked if pid not in known]
        if missing:
            for doc in self._fetch(missing, filters):
                known[doc.id] = doc
        out = []
        for pid in ranked:
            doc = known.get(pid)
            if doc is None:
                logger.warning("Parent {parent_id} not found in the store or not readable", parent_id=pid)
                continue
            meta = {**doc.meta, "matched_chunk_ids": matched[pid]}
            meta.update({key: best_of[pid] for key, best_of in similarity.items() if pid in best_of})
            out.append(Document(id=doc.id, content=doc.content, meta=meta, score=best[pid]))
        return {"documents": out}

    def _fetch(self, ids: list[str], filters: dict[str, Any] | None = None) -> list[Document]:
        if filters is None and hasattr(self.document_store, "get_documents_by_id"):
            return self.document_store.get_documents_by_id(ids)
        by_id = {"field": "id", "operator": "in", "value": ids}
        return self.document_store.filter_documents(
            by_id if filters is None else {"operator": "AND", "conditions": [by_id, filters]}
        )
