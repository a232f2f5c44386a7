"""Sibling window: the neighbouring parent blocks of each retrieved block, adjacent blocks of one article merged."""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging

from components.document_stores.block_reader import any_of, read_blocks, with_score

logger = logging.getLogger(__name__)

MIN_OVERLAP = 20
MAX_OVERLAP = 800


def join_overlapping(first: str, second: str) -> str:
    """
    `first` + `second`, with the text repeated at the seam (the safety split's overlap) written once, as Haystack's
    `SentenceWindowRetriever.merge_documents_text` does for split documents (here without split offsets: the
    longest suffix of `first` that starts `second`, at least `MIN_OVERLAP` characters).
    """
    first, second = first.rstrip(), second.lstrip()
    for size in range(min(len(first), len(second), MAX_OVERLAP), MIN_OVERLAP - 1, -1):
        if first.endswith(second[:size]):
            return first + second[size:]
    return f"{first}\n{second}"


def _order(document: Document) -> tuple[int, int] | None:
    order, part = document.meta.get("article_order"), document.meta.get("part") or 1
    if not isinstance(order, int) or isinstance(order, bool):
        return None
    return order, int(part)


@component
class SiblingExpander:
    """
    Adds the neighbouring parent blocks of each retrieved block, in document order, and merges adjacent blocks of
    one article into one.

    The idea of Haystack's `SentenceWindowRetriever` at the level of parent blocks: for every block, the `window`
    blocks before and after it in the same law (document order = `article_order`, then `part`: the previous block
    of part 1 of article 38 is the last part of article 37) are fetched from the store and added with
    `score_factor` x the block's score (best source first, at most `max_documents` added). Then, with
    `merge_adjacent`, consecutive parts of one article (retrieved or added, e.g. by `CitedBlockExpander`) become one
    block: texts joined with the safety-split overlap written once, the first part's id and meta,
    `meta["merged_ids"]` listing every part, and the best score. Blocks of different articles are never merged,
    so every block keeps one article citation.

    Added blocks carry `meta["expansion"] = "window"` and `meta["expanded_from"]`. Blocks without
    `article_order` (no document order) get no neighbours.

    Why not `SentenceWindowRetriever` itself: it windows over the chunks `DocumentSplitter` cut from one source
    document (`split_id`, `source_id`) and returns text windows; here the units are parent blocks ordered across
    a whole law (`article_order`, `part`), every read goes through the request's access filter, and neighbours
    stay Documents that keep one article citation each.

    ### Usage example

    ```python
    from components.retrievers.sibling_expander import SiblingExpander

    expander = SiblingExpander(document_store=store, window=1)
    blocks = expander.run(documents=expanded_blocks, filters=access_filters)["documents"]
    ```
    """

    def __init__(
        self,
        *,
        document_store: Any,
        window: int = 1,
        max_documents: int = 12,
        score_factor: float = 0.8,
        merge_adjacent: bool = True,
        enabled: bool = True,
    ) -> None:
        """
        Create a SiblingExpander.

        :param document_store: The store of the parent blocks (`filter_documents`).
        :param window: Blocks added before and after each block (0: no neighbours, merging only).
        :param max_documents: Blocks added in all.
        :param score_factor: Score of an added block = this x its source's score (0 < factor <= 1).
        :param merge_adjacent: Whether consecutive parts of one article are merged into one block.
        :param enabled: Feature flag: when False the documents pass through unchanged.
        :raises ValueError: A negative window or cap, or a factor outside (0, 1].
        """
        if window < 0:
            raise ValueError(f"window must be >= 0, got {window}")
        if max_documents < 0:
            raise ValueError(f"max_documents must be >= 0, got {max_documents}")
        if not 0 < score_factor <= 1:
            raise ValueError(f"score_factor must be in (0, 1], got {score_factor}")
        self.document_store = document_store
        self.window = window
        self.max_documents = max_documents
        self.score_factor = score_factor
        self.merge_adjacent = merge_adjacent
        self.enabled = enabled

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(
            self,
            document_store=self.document_store,
            window=self.window,
            max_documents=self.max_documents,
            score_factor=self.score_factor,
            merge_adjacent=self.merge_adjacent,
            enabled=self.enabled,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SiblingExpander":
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(
        self, documents: list[Document], filters: dict[str, Any] | None = None, enabled: bool | None = None
    ) -> dict[str, list[Document]]:
        """
        Add the window around each block and merge adjacent parts.

        :param documents: Parent blocks with scores (meta `law_id`, `article`, `article_order`, `part`).
        :param filters: Haystack filters AND-ed into every store read (the request's access filter).
        :param enabled: Overrides the init `enabled` for this run.
        :returns: `documents`: input, added and merged blocks, best score first.
        """
        if not (self.enabled if enabled is None else enabled) or not documents:
            return {"documents": list(documents)}
        blocks = list(documents)
        if self.window and self.max_documents:
            blocks += self._neighbours(documents, filters)
        if self.merge_adjacent:
            blocks = self._merge(blocks)
        return {"documents": sorted(blocks, key=lambda d: d.score or 0.0, reverse=True)}

    def _neighbours(self, documents: list[Document], filters: dict[str, Any] | None) -> list[Document]:
        """The window blocks of every source (one store read), best source first, capped."""
        orders: dict[str, set[int]] = {}
        for doc in documents:
            position = _order(doc)
            if position and doc.meta.get("law_id"):
                span = range(position[0] - self.window, position[0] + self.window + 1)
                orders.setdefault(str(doc.meta["law_id"]), set()).update(span)
        condition = any_of(
            [
                {
                    "operator": "AND",
                    "conditions": [
                        {"field": "meta.law_id", "operator": "==", "value": law_id},
                        {"field": "meta.article_order", "operator": "in", "value": sorted(values)},
                    ],
                }
                for law_id, values in orders.items()
            ]
        )
        by_law: dict[str, list[Document]] = {}
        for block in read_blocks(self.document_store, condition, filters):
            if _order(block):
                by_law.setdefault(str(block.meta["law_id"]), []).append(block)
        for blocks in by_law.values():
            blocks.sort(key=lambda d: _order(d) or (0, 0))
        present = {doc.id for doc in documents}
        added: dict[str, Document] = {}
        for source in sorted(documents, key=lambda d: d.score or 0.0, reverse=True):
            sequence = by_law.get(str(source.meta.get("law_id")), [])
            index = next((i for i, b in enumerate(sequence) if b.id == source.id), None)
            if index is None:
                continue
            score = (source.score or 0.0) * self.score_factor
            around = [*sequence[max(0, index - self.window) : index], *sequence[index + 1 : index + 1 + self.window]]
            for block in around:
                if block.id in present:
                    continue
                if block.id in added:
                    if score > (added[block.id].score or 0.0):
                        added[block.id] = with_score(block, score, expansion="window", expanded_from=source.id)
                    continue
                if len(added) >= self.max_documents:
                    break
                added[block.id] = with_score(block, score, expansion="window", expanded_from=source.id)
        logger.debug("SiblingExpander: {count} neighbouring block(s) added", count=len(added))
        return list(added.values())

    @staticmethod
    def _merge(blocks: list[Document]) -> list[Document]:
        """Consecutive parts of one article -> one block; everything else unchanged."""
        unique: dict[str, Document] = {}
        for block in blocks:
            if block.id not in unique or (block.score or 0.0) > (unique[block.id].score or 0.0):
                unique[block.id] = block
        groups: dict[tuple[str, str], list[Document]] = {}
        out: list[Document] = []
        for block in unique.values():
            if block.meta.get("law_id") and block.meta.get("article") and block.meta.get("part"):
                groups.setdefault((str(block.meta["law_id"]), str(block.meta["article"])), []).append(block)
            else:
                out.append(block)
        for parts in groups.values():
            parts.sort(key=lambda d: int(d.meta["part"]))
            run = [parts[0]]
            for block in parts[1:]:
                if int(block.meta["part"]) == int(run[-1].meta["part"]) + 1:
                    run.append(block)
                else:
                    out.append(_merged(run))
                    run = [block]
            out.append(_merged(run))
        return out


def _merged(run: list[Document]) -> Document:
    if len(run) == 1:
        return run[0]
    content = run[0].content or ""
    for block in run[1:]:
        content = join_overlapping(content, block.content or "")
    first = run[0]
    meta = {
        **first.meta,
        "merged_ids": [b.id for b in run],
        "merged_parts": [int(b.meta["part"]) for b in run],
    }
    if any("expansion" not in b.meta for b in run):  # a retrieved part is in the run: not an expansion
        meta.pop("expansion", None)
        meta.pop("expanded_from", None)
    best = max(b.score or 0.0 for b in run)
    return Document(id=first.id, content=content, meta=meta, score=best)
