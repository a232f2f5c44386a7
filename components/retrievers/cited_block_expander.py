"""Cited-block expansion (query time): retrieved blocks pull in the blocks they cite (upward in rank only) and
their siblings. The citations themselves are found at indexing time by `ReferenceExtractor`."""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging

from components.document_stores.block_reader import articles_condition, ids_condition, read_blocks, with_score

logger = logging.getLogger(__name__)


def _rank(document: Document) -> int | None:
    rank = document.meta.get("rank")
    return int(rank) if isinstance(rank, (int, float)) and not isinstance(rank, bool) else None


@component
class CitedBlockExpander:
    """
    Adds to the retrieved parent blocks the blocks they cite (`meta["refs"]`, computed at indexing by
    `ReferenceExtractor`) and the other parts of their articles.

    - **Siblings always**: every other part of a retrieved block's article (`part`/`parts`) is added.
    - **Refs upward only**: a cited block is followed only when its legal rank is equal or higher than the
      source's (rank number <= the source's: a regulation pulls in the law it applies, a law does not pull in
      regulations); at most `max_refs_per_document` per source block, in citing order; ids not in the store (a
      cited law that is not indexed) or not visible through `filters` are skipped. A followed block brings its
      own siblings along.
    - **Scores**: an added block inherits `score_factor` x its source's score; reached from several sources, the
      highest wins. Sources are expanded best first; at most `max_documents` blocks are added in all.

    Added blocks carry `meta["expansion"]` (`sibling` / `ref`) and `meta["expanded_from"]` (the source id). The
    output holds the input blocks and the added ones, sorted by score (best first).

    ### Usage example

    ```python
    from components.retrievers.cited_block_expander import CitedBlockExpander

    expander = CitedBlockExpander(document_store=store)
    blocks = expander.run(documents=reranked_parents, filters=access_filters)["documents"]
    ```
    """

    def __init__(
        self,
        *,
        document_store: Any,
        max_refs_per_document: int = 3,
        score_factor: float = 0.8,
        max_documents: int = 15,
        include_siblings: bool = True,
        enabled: bool = True,
    ) -> None:
        """
        Create a CitedBlockExpander.

        :param document_store: The store of the parent blocks (`filter_documents`).
        :param max_refs_per_document: Cited blocks followed per source block.
        :param score_factor: Score of an added block = this x its source's score (0 < factor <= 1).
        :param max_documents: Blocks added in all (siblings and refs).
        :param include_siblings: Whether the other parts of the sources' (and followed refs') articles are added.
        :param enabled: Feature flag: when False the documents pass through unchanged.
        :raises ValueError: A negative cap or a factor outside (0, 1].
        """
        if max_refs_per_document < 0:
            raise ValueError(f"max_refs_per_document must be >= 0, got {max_refs_per_document}")
        if max_documents < 0:
            raise ValueError(f"max_documents must be >= 0, got {max_documents}")
        if not 0 < score_factor <= 1:
            raise ValueError(f"score_factor must be in (0, 1], got {score_factor}")
        self.document_store = document_store
        self.max_refs_per_document = max_refs_per_document
        self.score_factor = score_factor
        self.max_documents = max_documents
        self.include_siblings = include_siblings
        self.enabled = enabled

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(
            self,
            document_store=self.document_store,
            max_refs_per_document=self.max_refs_per_document,
            score_factor=self.score_factor,
            max_documents=self.max_documents,
            include_siblings=self.include_siblings,
            enabled=self.enabled,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CitedBlockExpander":
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document], expanded=list[Document])
    def run(
        self, documents: list[Document], filters: dict[str, Any] | None = None, enabled: bool | None = None
    ) -> dict[str, list[Document]]:
        """
        Expand the retrieved blocks.

        :param documents: Retrieved parent blocks with scores (their `meta["refs"]`, `rank`, `law_id`, `article`,
            `parts`).
        :param filters: Haystack filters AND-ed into every store read (the request's access filter).
        :param enabled: Overrides the init `enabled` for this run.
        :returns: `documents`: input and added blocks, best score first; `expanded`: the added blocks only.
        """
        if not (self.enabled if enabled is None else enabled) or not documents or self.max_documents == 0:
            return {"documents": list(documents), "expanded": []}
        present = {doc.id for doc in documents}
        sources = sorted(documents, key=lambda d: d.score or 0.0, reverse=True)
        wanted = [r for doc in sources for r in (doc.meta.get("refs") or []) if r not in present]
        targets = {doc.id: doc for doc in read_blocks(self.document_store, ids_condition(wanted), filters)}
        articles = self._articles(sources, targets, filters) if self.include_siblings else {}

        added: dict[str, Document] = {}

        def add(block: Document, score: float, kind: str, source: Document) -> bool:
            if block.id in present:
                return False
            if block.id in added:
                if score > (added[block.id].score or 0.0):
                    added[block.id] = with_score(block, score, expansion=kind, expanded_from=source.id)
                return True
            if len(added) >= self.max_documents:
                return False
            added[block.id] = with_score(block, score, expansion=kind, expanded_from=source.id)
            return True

        for source in sources:
            score = (source.score or 0.0) * self.score_factor
            for sibling in self._siblings(source, articles):
                add(sibling, score, "sibling", source)
            followed = 0
            for ref in source.meta.get("refs") or []:
                if followed >= self.max_refs_per_document:
                    break
                target = targets.get(ref)
                if target is None or target.id in present or target.id == source.id:
                    continue
                source_rank, target_rank = _rank(source), _rank(target)
                if source_rank is not None and target_rank is not None and target_rank > source_rank:
                    continue  # downward in the hierarchy
                if add(target, score, "ref", source):
                    followed += 1
                    for sibling in self._siblings(target, articles):
                        add(sibling, score, "sibling", source)
        expanded = sorted(added.values(), key=lambda d: d.score or 0.0, reverse=True)
        logger.debug("CitedBlockExpander: {count} block(s) added", count=len(expanded))
        merged = sorted([*documents, *expanded], key=lambda d: d.score or 0.0, reverse=True)
        return {"documents": merged, "expanded": expanded}

    def _articles(
        self, sources: list[Document], targets: dict[str, Document], filters: dict[str, Any] | None
    ) -> dict[tuple[str, str], list[Document]]:
        """Every part of the multi-part articles of the sources and the ref targets, in one read."""
        pairs = [
            (str(doc.meta["law_id"]), str(doc.meta["article"]))
            for doc in [*sources, *targets.values()]
            if (doc.meta.get("parts") or 1) > 1 and doc.meta.get("law_id") and doc.meta.get("article")
        ]
        grouped: dict[tuple[str, str], list[Document]] = {}
        for block in read_blocks(self.document_store, articles_condition(pairs), filters):
            grouped.setdefault((str(block.meta["law_id"]), str(block.meta["article"])), []).append(block)
        for blocks in grouped.values():
            blocks.sort(key=lambda d: d.meta.get("part") or 0)
        return grouped

    @staticmethod
    def _siblings(block: Document, articles: dict[tuple[str, str], list[Document]]) -> list[Document]:
        key = (str(block.meta.get("law_id")), str(block.meta.get("article")))
        return [b for b in articles.get(key, []) if b.id != block.id]
