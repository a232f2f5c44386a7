"""Direct fetch of parent blocks (carried-over block ids, citation filters, NEED requests) with a fixed score."""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging

from components.document_stores.vector_search import (
    best_passage_similarity,
    similarity_by_id,
    supports_vector_search,
)
from components.legal.access import and_filters
from components.legal.answer_format import block_part
from components.legal.ids import DENSE_SCORE, PARENT_FILTER, PASSAGE_SCORE, parent_key

logger = logging.getLogger(__name__)


# the most articles whose first part a citation fetch returns beyond `max_documents` ("arts. 1 a 20 ET, 21 a 40 ET,
# ..."): a bound on what one question can make the answer read
MAX_CITED_ARTICLES = 100


@component
class BlockFetcher:
    """
    Fetches parent blocks directly from the store, without a search, each with a fixed score.

    Three selections, combined and deduplicated by id (in this order):
    - `ids`: block ids carried over from a previous turn (the `previous_chunk_ids` of the SDK, CLI and HTTP API:
      that public name is kept, the ids are parent block ids); a parent is returned as is, a child id is replaced
      by its parent (`meta["parent_id"]`). Unknown ids are skipped with a log line. These blocks carry
      `meta["carried_over"] = True` and, given the new question's `query_embedding`, their own dense similarity
      to it in `meta["dense_score"]` (read from the stored block vectors by one dense search restricted to them)
      and their best passage's in `meta["passage_score"]` (their children's late-chunked vectors), as the
      retriever records them for the blocks it finds, so the re-ranker weighs both kinds of block alike:
      `CRAGRouter` grades a carried-over block on that, never on its fixed score, so carried-over ids cannot by
      themselves make an off-topic question look answerable.
    - `select`: Haystack filters (e.g. a detected citation: `law_id` + `article`), AND-ed with
      `meta.level == parent`, at most `max_documents` blocks: every article's first part before any article's
      second, so a question citing long articles ("arts. 37, 48 y 51 ET") loses their later parts, not a whole one.
      A question citing more articles than `max_documents` gets the first part of each, up to
      `MAX_CITED_ARTICLES`: an article not fetched would be said to be missing from the corpus.
    - `need`: `AnswerMetaParser` NEED items; `article` items with `law_id` and `article` fetch every part of that
      article. `keywords` items are ignored here: they go through retrieval.

    `filters` (the request's access filter AND the caller's filters, see `AccessFilter`) restricts every one of
    them: an id the caller may not read is skipped exactly like an unknown id. Nothing selected returns nothing
    (never the whole store).

    ### Usage example

    ```python
    from components.retrievers.block_fetcher import BlockFetcher

    fetcher = BlockFetcher(document_store=store, score=0.5)
    docs = fetcher.run(
        ids=previous_turn_chunk_ids,
        need=[{"type": "article", "law_id": "BOE-A-2015-11430", "article": "48", "law": "ET", "query": "art. 48 ET"}],
    )["documents"]
    ```
    """

    def __init__(self, *, document_store: Any, score: float = 0.5, max_documents: int = 20) -> None:
        """
        Create a BlockFetcher.

        :param document_store: The store holding the blocks (`get_documents_by_id` and `filter_documents`).
        :param score: Score given to every fetched block (they were not ranked by a search).
        :param max_documents: Maximum number of blocks returned for `select`, raised to one block per selected
            article when more are selected (up to `MAX_CITED_ARTICLES`).
        :raises ValueError: A negative `score` or a non-positive `max_documents`.
        """
        if score < 0:
            raise ValueError(f"score must be >= 0, got {score}")
        if max_documents <= 0:
            raise ValueError(f"max_documents must be > 0, got {max_documents}")
        self.document_store = document_store
        self.score = score
        self.max_documents = max_documents

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(
            self, document_store=self.document_store, score=self.score, max_documents=self.max_documents
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "BlockFetcher":
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(
        self,
        ids: list[str] | None = None,
        select: dict[str, Any] | None = None,
        need: list[dict[str, Any]] | None = None,
        filters: dict[str, Any] | None = None,
        query_embedding: list[float] | None = None,
    ) -> dict[str, list[Document]]:
        """
        Fetch parent blocks by id, by a selecting filter and by NEED items, within `filters`.

        :param ids: Chunk ids (parents or children).
        :param select: Haystack filters selecting parent blocks.
        :param need: `AnswerMetaParser` NEED items (`{"type", "article", "law_id", "law", "query"}`).
        :param filters: Restriction AND-ed into every read (access control, the caller's filters).
        :param query_embedding: The new question's dense embedding: the `ids` blocks get their similarity to it
            (`meta["dense_score"]`) when the store can search them by vector.
        :returns: `documents`: the parent blocks found, unique by id, each with the fixed `score`.
        :raises ValueError: `ids` is not a list of strings, or `need` is not a list of dicts.
        """
        if ids is not None and (not isinstance(ids, list) or any(not isinstance(i, str) for i in ids)):
            raise ValueError(f"ids must be a list of strings, got {ids!r}")
        if need is not None and (not isinstance(need, list) or any(not isinstance(n, dict) for n in need)):
            raise ValueError(f"need must be a list of AnswerMetaParser items (dicts), got {need!r}")
        found: dict[str, Document] = {}
        if ids:
            carried = self._by_ids(ids, filters)
            similarity = self._similarity([d.id for d in carried], query_embedding, filters)
            for doc in carried:
                meta = {**doc.meta, "carried_over": True}
                for key in (DENSE_SCORE, PASSAGE_SCORE):
                    meta.pop(key, None)  # only a similarity to this question counts
                    if doc.id in similarity[key]:
                        meta[key] = similarity[key][doc.id]
                found.setdefault(doc.id, Document(id=doc.id, content=doc.content, meta=meta, score=doc.score))
        if select:
            selected = self.document_store.filter_documents(and_filters(select, PARENT_FILTER, filters))
            # every cited article's first part, then the others' later parts up to `max_documents` (stable sort:
            # store order within a part): an article left out would be reported as missing from the corpus
            articles = len({(doc.meta.get("law_id"), doc.meta.get("article")) for doc in selected})
            limit = max(self.max_documents, min(articles, MAX_CITED_ARTICLES))
            for doc in sorted(selected, key=block_part)[:limit]:
                found.setdefault(doc.id, doc)
        need_filter = self._need_filter(need or [])
        if need_filter:
            for doc in self.document_store.filter_documents(and_filters(need_filter, PARENT_FILTER, filters)):
                found.setdefault(doc.id, doc)
        # the fixed score is a calibrated confidence (score_type `unit`), not a search score
        documents = [
            Document(id=d.id, content=d.content, meta={**d.meta, "score_type": "unit"}, score=self.score)
            for d in found.values()
        ]
        return {"documents": documents}

    def _similarity(
        self, ids: list[str], query_embedding: list[float] | None, filters: dict[str, Any] | None
    ) -> dict[str, dict[str, float]]:
        """
        Dense similarity of blocks `ids` to the query from their stored vectors (`dense_score`), and of their best
        passage (`passage_score`), as `HybridRetriever` records them for the blocks it finds.
        """
        none: dict[str, dict[str, float]] = {DENSE_SCORE: {}, PASSAGE_SCORE: {}}
        if not ids or not query_embedding or not supports_vector_search(self.document_store):
            return none
        try:
            return {
                DENSE_SCORE: similarity_by_id(self.document_store, query_embedding, ids, filters=filters),
                PASSAGE_SCORE: best_passage_similarity(self.document_store, query_embedding, ids, filters=filters),
            }
        except ValueError as error:  # e.g. an embedding of another model's dimension: no evidence, no failure
            logger.warning("BlockFetcher: carried-over blocks not scored: {error}", error=str(error))
            return none

    def _read_ids(self, ids: list[str], filters: dict[str, Any] | None) -> list[Document]:
        """Documents of `ids` the restriction lets through (all of them without one)."""
        if not ids:
            return []
        if filters is None:
            return self.document_store.get_documents_by_id(ids)
        return self.document_store.filter_documents(
            and_filters({"field": "id", "operator": "in", "value": list(ids)}, filters)
        )

    def _by_ids(self, ids: list[str], filters: dict[str, Any] | None) -> list[Document]:
        """The blocks of `ids` (within `filters`), children replaced by their parents, in the order of `ids`."""
        chunks = {doc.id: doc for doc in self._read_ids(list(dict.fromkeys(ids)), filters)}
        missing = [i for i in dict.fromkeys(ids) if i not in chunks]
        if missing:
            logger.warning("BlockFetcher: ids not in the store or not readable, skipped: {ids}", ids=missing)
        wanted = []
        for chunk_id in dict.fromkeys(ids):
            doc = chunks.get(chunk_id)
            if doc is None:
                continue
            wanted.append(parent_key(doc))
        parents = {p.id: p for p in self._read_ids([w for w in dict.fromkeys(wanted) if w not in chunks], filters)}
        blocks = {**chunks, **parents}
        lost = [w for w in dict.fromkeys(wanted) if w not in blocks]
        if lost:
            logger.warning("BlockFetcher: parent blocks not in the store, skipped: {ids}", ids=lost)
        return [blocks[w] for w in dict.fromkeys(wanted) if w in blocks]

    @staticmethod
    def _need_filter(need: list[dict[str, Any]]) -> dict[str, Any] | None:
        """One OR filter over the `article` NEED items that name a law and an article."""
        conditions = []
        for item in need:
            if item.get("type") != "article":
                continue
            if not item.get("law_id") or not item.get("article"):
                logger.warning("NEED item without law_id or article skipped: {item}", item=item)
                continue
            conditions.append(
                {
                    "operator": "AND",
                    "conditions": [
                        {"field": "meta.law_id", "operator": "==", "value": item["law_id"]},
                        {"field": "meta.article", "operator": "==", "value": str(item["article"])},
                    ],
                }
            )
        if not conditions:
            return None
        return conditions[0] if len(conditions) == 1 else {"operator": "OR", "conditions": conditions}
