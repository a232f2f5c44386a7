"""Dense + BM25 hybrid retrieval across logical collections, on Qdrant Edge or a Qdrant server (+ OpenSearch BM25)."""

import copy
import functools
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.dataclasses import SparseEmbedding

from components.document_stores.vector_search import best_passage_similarity, search_batch, similarity_by_id
from components.legal.access import and_filters
from components.legal.ids import (
    DEFAULT_COLLECTION_WEIGHTS,
    DENSE_SCORE,
    NOT_CHILD_FILTER,
    PASSAGE_SCORE,
    TEXT_META_FIELDS,
    check_named_laws,
    parent_key,
)
from components.legal.legal_text import detect_query_language
from components.legal.terms import lexical_coverage
from components.utils.fusion import rrf_scores

logger = logging.getLogger(__name__)

MODES = ("dense", "sparse", "hybrid")
# The meta a hit needs for fusion: its parent block (`parent_key`) and its norm (the named-norm search).
HIT_FIELDS = ("level", "parent_id", "law_id")
FUSIONS = ("rrf", "score")

# BM25 request on the OpenSearch lexical store: the chunk text and its `TEXT_META_FIELDS` (the section's name where
# the title repeats in its law, the article title: what the embedded BM25 vectors embed), any term may match;
# `$filters` always holds at least the collection condition.
LEXICAL_BM25_QUERY: dict[str, Any] = {
    "query": {
        "bool": {
            "must": [
                {"multi_match": {"query": "$query", "type": "most_fields",
                                 "fields": ["content", *TEXT_META_FIELDS]}}
            ],
            "filter": "$filters",
        }
    }
}


@component
class HybridRetriever:
    """
    Retrieves chunks by dense + sparse (BM25) search fused with Reciprocal Rank Fusion, across collections.

    Fusion is done per parent block by default (`fuse_by_parent=True`): each ranked list (dense, sparse) is first
    collapsed to the parent blocks its chunks belong to (a child counts for its `parent_id`, a parent for itself,
    at the rank of its best chunk), then the lists are fused with weighted RRF, `w / (rrf_k + rank + 1)`. The
    best chunk of each parent from each list is returned with the fused score. Why: chunk-level RRF lets the far
    more numerous BM25 children crowd out the dense parent hits; parent-level fusion keeps hybrid at or above the
    better single retriever (benchmarks/README.md).
    `fuse_by_parent=False` uses the store's own chunk-level RRF (Qdrant's fusion), whose dense side also ranks the
    child chunks that carry passage vectors. RRF only measures rank agreement, so each fused chunk also carries its
    parent's best dense similarity in `meta["dense_score"]` (when the dense search found it): an absolute relevance
    signal for `CRAGRouter`.

    Passages (`passage_scores`): the dense searches rank blocks only (`meta.level != child`); child chunks indexed
    with late-chunked passage vectors are read per block instead, after fusion: each returned hit carries its
    parent's best passage similarity in `meta["passage_score"]`, which `LegalReranker` blends with the block's own.

    Lexical coverage (`coverage_pivot`): how far a BM25 ranking can be trusted shows in its best hit. A question in
    the statute's own words ("¿Quién nombra y separa a los miembros del Gobierno?") finds most of its content words
    in the best BM25 hit, and that hit is then usually the answer; a question in everyday words ("o patrão nunca
    libera minhas férias") shares few words with any article, and its BM25 ranking is mostly noise that RRF would
    still count at full weight. So the BM25 ranking's weight in parent-level RRF is `sparse_weight * coverage /
    coverage_pivot`, where coverage is the share of the query's content words (`components.legal.terms.stems`:
    accent-folded stems, stopwords of the query's language dropped) that the best BM25 hit of the list holds: at
    the pivot BM25 weighs `sparse_weight`, below it less, above it more. A query without content words, or without
    `query` text, keeps `sparse_weight`. Chunk-level fusion (`fuse_by_parent=False`) and `fusion="score"` do not
    use it.

    Each logical collection (`normativa`, `sentencias`, `criterios`: a payload field, not a separate index) is
    searched with the caller's filters in one batched call per query; each collection's scores are multiplied by
    its weight, the lists are merged, and a chunk found twice keeps its highest score.

    Named norms (`named_laws`): a question that names a norm ("¿dónde dice la Constitución que tenemos derecho a
    vacaciones?") asks what that norm says, but the norms with more and longer text on the topic (the labour
    statutes) can fill every place of an unrestricted search. When none of the blocks the parent resolver will
    keep (the hits' first `top_k / chunks_for_blocks` parents; a hit further down is dropped there) is from a
    named norm, each collection is searched again within the missing ones and those lists are merged like a
    collection's: their best chunks rank beside the overall best ones, so the re-ranker (which puts a named norm's
    blocks first) has them to rank. A named norm already among those blocks changes nothing.

    Works with the embedded `EdgeDocumentStore` (one `query_batch` call for all collections) and with
    qdrant-haystack's `QdrantDocumentStore` for a Qdrant server (through qdrant-haystack's own hybrid /
    embedding / sparse retrievers), with the same payload schema and the same BM25 sparse vectors.

    With a `lexical_store` (an opensearch-haystack `OpenSearchDocumentStore` holding the child chunks, written by
    the text-only `PruningDocumentWriter`), the BM25 side comes from `OpenSearchBM25Retriever` on the query text
    (`query` input), with the same filters and collections, and the dense side from `document_store`; the two are
    fused as above (the loader sets `rrf_k=60` for this backend), or per chunk by Haystack's `DocumentJoiner`
    reciprocal rank fusion (k=60) with `fuse_by_parent=False`.

    ### Usage example

    ```python
    from components.document_stores.edge_document_store import EdgeDocumentStore
    from components.retrievers.hybrid_retriever import HybridRetriever

    retriever = HybridRetriever(document_store=EdgeDocumentStore(path="./.lexhay"), top_k=40)
    hits = retriever.run(query_embedding=dense, query_sparse_embedding=sparse,
                         filters={"field": "meta.status", "operator": "==", "value": "in_force"})["documents"]

    # BM25 on OpenSearch instead of the store's sparse vectors
    retriever = HybridRetriever(document_store=qdrant_store, lexical_store=opensearch_store, rrf_k=60)
    hits = retriever.run(query="vacaciones anuales", query_embedding=dense)["documents"]
    ```
    """

    def __init__(
        self,
        *,
        document_store: Any,
        top_k: int = 40,
        mode: str = "hybrid",
        collections: dict[str, float] | None = None,
        filters: dict[str, Any] | None = None,
        prefetch_k: int | None = None,
        fuse_by_parent: bool = True,
        rrf_k: int = 2,
        dense_weight: float = 1.1,
        sparse_weight: float = 1.0,
        lexical_store: Any | None = None,
        fusion: str = "rrf",
        dense_share: float = 0.7,
        coverage_pivot: float | None = 0.5,
        light_hits: bool = False,
        passage_scores: bool = True,
    ) -> None:
        """
        Create a HybridRetriever.

        :param document_store: An `EdgeDocumentStore` or a qdrant-haystack `QdrantDocumentStore`.
        :param top_k: Number of chunks returned after merging the collections.
        :param mode: `hybrid` (dense + sparse, RRF), `dense` or `sparse`; overridable per run.
        :param collections: Collection name -> weight. Defaults to normativa 1.0, sentencias 0.8, criterios 0.9.
        :param filters: Haystack filters always applied (AND) together with the per-run filters.
        :param prefetch_k: Candidates taken from each of the dense and sparse searches before fusion
            (default `max(top_k, 50)`). Each hit costs its share of the search (and, without `light_hits`, the
            conversion of its payload), and a hit ranked below `top_k` in its list adds to its block no more than the
            RRF share of a rank past `top_k`: it can reorder only the tail of the fused list (twice as deep: the same
            on the dev sets, within the noise).
        :param fuse_by_parent: Fuse the dense and sparse rankings per parent block (see above) instead of per chunk.
        :param rrf_k: RRF rank constant for parent-level fusion (2, as Qdrant's own fusion).
        :param dense_weight: Weight of the dense ranking in parent-level fusion (1.1 breaks RRF ties toward the
            dense side, which does better on colloquial questions without losing on textual ones).
        :param sparse_weight: Weight of the BM25 ranking in parent-level fusion.
        :param lexical_store: An opensearch-haystack `OpenSearchDocumentStore`: when given, the BM25 side is
            searched there on the query text (`query` run input) instead of the store's sparse vectors.
        :param fusion: Parent-level fusion: `rrf` (weighted reciprocal rank fusion, `dense_weight` /
            `sparse_weight` / `rrf_k`) or `score` (each candidate parent's dense cosine and best BM25 score, each
            min-max normalized over the candidates, blended `dense_share : 1 - dense_share`; a parent only the BM25
            side found gets its cosine from its stored vector, so every candidate is scored on both signals).
        :param dense_share: Share of the dense cosine in `score` fusion, in [0, 1].
        :param coverage_pivot: The share of the query's content words in the best BM25 hit at which the BM25
            ranking weighs `sparse_weight` in parent-level RRF; it weighs `sparse_weight * coverage /
            coverage_pivot` (see above). In (0, 1]; `None` = always `sparse_weight`.
        :param light_hits: Return the hits without their content and with only the meta fusion reads (`HIT_FIELDS`)
            and `dense_score`, for a `ParentResolver`, which reads the blocks it keeps. The embedded store then reads
            no payload for the 100-odd hits it ranks (`EdgeDocumentStore.query_batch(meta_fields=...)`), the
            largest share of a search's time; a Qdrant server's and OpenSearch's hits come whole either way.
        :param passage_scores: Record in `meta["passage_score"]` the best similarity of the query to the passages
            of each returned hit's parent block (its child chunks' late-chunked vectors, see
            `DenseDocumentEmbedder(passages=True)`; one more dense search, restricted to those children). A question
            in the words of one paragraph of a long article is close to that paragraph, less to the article's mean:
            the re-ranker blends both. A store without passage vectors gives no score.
        """
        if top_k <= 0:
            raise ValueError(f"top_k must be > 0, got {top_k}")
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        collections = dict(DEFAULT_COLLECTION_WEIGHTS if collections is None else collections)
        if not collections or any(w <= 0 for w in collections.values()):
            raise ValueError(f"collections must map names to positive weights, got {collections}")
        if rrf_k < 0 or dense_weight < 0 or sparse_weight < 0 or dense_weight + sparse_weight == 0:
            raise ValueError("rrf_k and the fusion weights must be >= 0, with at least one positive weight")
        if fusion not in FUSIONS:
            raise ValueError(f"fusion must be one of {FUSIONS}, got {fusion!r}")
        if not 0.0 <= dense_share <= 1.0:
            raise ValueError(f"dense_share must be in [0, 1], got {dense_share}")
        if coverage_pivot is not None and not 0.0 < coverage_pivot <= 1.0:
            raise ValueError(f"coverage_pivot must be in (0, 1] or None, got {coverage_pivot}")
        if lexical_store is not None:
            from components.utils.extras import optional_import  # noqa: PLC0415

            with optional_import("opensearch", "An OpenSearch lexical store") as opensearch_import:
                from haystack_integrations.document_stores.opensearch import OpenSearchDocumentStore  # noqa: PLC0415
            opensearch_import.check()
            if not isinstance(lexical_store, OpenSearchDocumentStore):
                raise ValueError(
                    f"lexical_store must be an opensearch-haystack OpenSearchDocumentStore, got {type(lexical_store)}"
                )
        self.document_store = document_store
        self.top_k = top_k
        self.mode = mode
        self.collections = collections
        self.filters = filters
        self.prefetch_k = prefetch_k
        self.fuse_by_parent = fuse_by_parent
        self.rrf_k = rrf_k
        self.dense_weight = dense_weight
        self.sparse_weight = sparse_weight
        self.lexical_store = lexical_store
        self.fusion = fusion
        self.dense_share = dense_share
        self.coverage_pivot = coverage_pivot
        self.light_hits = light_hits
        self.passage_scores = passage_scores
        self._lexical_retriever: Any | None = None

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(
            self,
            document_store=self.document_store,
            top_k=self.top_k,
            mode=self.mode,
            collections=self.collections,
            filters=self.filters,
            prefetch_k=self.prefetch_k,
            fuse_by_parent=self.fuse_by_parent,
            rrf_k=self.rrf_k,
            dense_weight=self.dense_weight,
            sparse_weight=self.sparse_weight,
            fusion=self.fusion,
            dense_share=self.dense_share,
            coverage_pivot=self.coverage_pivot,
            light_hits=self.light_hits,
            passage_scores=self.passage_scores,
            # only when set, so the canonical YAML files (no OpenSearch) stay exactly what this serializes to
            **({"lexical_store": self.lexical_store} if self.lexical_store is not None else {}),
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "HybridRetriever":
        """Deserialize this component from a dictionary (a copy: OpenSearchDocumentStore.from_dict edits its input)."""
        return default_from_dict(cls, copy.deepcopy(data))

    def preload_hits(self, *, max_points: int | None = None) -> int:
        """
        With `light_hits`, fill the document store's light-hit table for the fields fusion reads (`HIT_FIELDS`), so
        that a question never asked before ranks its hits without reading any payload. A long-running server does
        this once at start-up; a one-off command would pay more for it than it saves.

        :param max_points: Fill nothing on a store of more chunks than this (`None`: no limit).
        :returns: The number of chunks added to the table: 0 without `light_hits`, on a store without such a table
            (a Qdrant server, OpenSearch) or when it was already filled.
        """
        preload = getattr(self.document_store, "preload_light_hits", None)
        if not self.light_hits or preload is None:
            return 0
        return preload(list(HIT_FIELDS), max_points=max_points)

    def chunks_for_blocks(self, blocks: int, mode: str | None = None) -> int:
        """
        How many chunks to ask `run` for so that `blocks` distinct parent blocks are among them (at least 40).

        Parent-level fusion (`hybrid` with `fuse_by_parent`) returns each block with at most one chunk from each
        list, the dense and the BM25 one, so twice `blocks` chunks hold at least `blocks` blocks; a single list or a
        chunk-level fusion can return several children of one block, so four times as many are asked for. Asking
        for more than needed costs every extra hit's share of the search (the searches go `top_k` deep).

        :param blocks: Parent blocks wanted.
        :param mode: The run's mode (default the init `mode`).
        """
        if blocks <= 0:
            raise ValueError(f"blocks must be > 0, got {blocks}")
        return max(self._chunks_per_block(mode) * blocks, 40)

    def _chunks_per_block(self, mode: str | None) -> int:
        """The chunks `chunks_for_blocks` asks for per wanted block in `mode`."""
        return 2 if (mode or self.mode) == "hybrid" and self.fuse_by_parent else 4

    @component.output_types(documents=list[Document])
    def run(
        self,
        query_embedding: list[float] | None = None,
        query_sparse_embedding: SparseEmbedding | None = None,
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        mode: str | None = None,
        collections: list[str] | None = None,
        query: str | None = None,
        named_laws: list[str] | None = None,
        passage_scores: bool | None = None,
    ) -> dict[str, list[Document]]:
        """
        Retrieve chunks for one query.

        :param query_embedding: Dense query embedding (needed by `dense` and `hybrid`).
        :param query_sparse_embedding: BM25 query vector (needed by `sparse` and `hybrid`, unless a
            `lexical_store` is set).
        :param filters: Haystack filters for this run, AND-ed with the init filters.
        :param top_k: Overrides the init `top_k`.
        :param mode: Overrides the init `mode`.
        :param collections: Restricts the search to these collections (names must be configured).
        :param query: The query text: the BM25 query on the `lexical_store` (needed by `sparse` and `hybrid` there).
        :param named_laws: Law ids of the norms the question names (`CitationDetector.named_laws`): each collection
            is also searched within them (see the class docstring).
        :param passage_scores: Overrides the init `passage_scores` for this query: `RetrievalChain` turns it off
            for a query that reads the question with the turns before it, whose best passage is often the earlier
            question's (`components.legal.conversation.reads_earlier_turns`).
        :returns: `documents`: chunks sorted by weighted score, unique by id.
        """
        mode = mode or self.mode
        top_k = top_k or self.top_k
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if mode in ("dense", "hybrid") and query_embedding is None:
            raise ValueError(f"mode {mode!r} needs query_embedding")
        lexical = self.lexical_store is not None and mode in ("sparse", "hybrid")
        if lexical and (not isinstance(query, str) or not query.strip()):
            raise ValueError(f"mode {mode!r} with an OpenSearch lexical_store needs the query text (`query`)")
        if mode in ("sparse", "hybrid") and not lexical and query_sparse_embedding is None:
            raise ValueError(f"mode {mode!r} needs query_sparse_embedding")
        names = list(self.collections) if collections is None else collections
        unknown = [c for c in names if c not in self.collections]
        if unknown:
            raise ValueError(f"Unknown collection(s) {unknown}; configured: {sorted(self.collections)}")

        check_named_laws(named_laws)

        base = and_filters(self.filters, filters)
        per_collection = [and_filters(base, {"field": "meta.collection", "operator": "==", "value": c}) for c in names]
        search = functools.partial(
            self._search_collections,
            mode=mode,
            lexical=lexical,
            embedding=query_embedding,
            sparse=query_sparse_embedding,
            query=query,
            top_k=top_k,
        )
        best = self._merged(names, search(per_collection))
        ranked = sorted(best.values(), key=lambda pair: pair[0], reverse=True)[:top_k]
        # the norms the question names that none of the blocks kept downstream is from (the first top_k / chunks
        # per block parents: a named norm's hit further down is dropped by the parent resolver): every collection
        # searched again within them
        present = _laws_of_first_parents(ranked, max(1, top_k // self._chunks_per_block(mode)))
        absent = [law for law in dict.fromkeys(named_laws or ()) if law not in present]
        if absent:
            within = {"field": "meta.law_id", "operator": "in", "value": absent}
            best = self._merged(names, search([and_filters(f, within) for f in per_collection]), best)
            ranked = sorted(best.values(), key=lambda pair: pair[0], reverse=True)[:top_k]
        wanted = self.passage_scores if passage_scores is None else passage_scores
        passages = self._passage_scores([doc for _, doc in ranked], query_embedding, base) if wanted else {}
        documents = []
        for score, doc in ranked:
            passage = passages.get(parent_key(doc))
            meta = doc.meta if passage is None else {**doc.meta, PASSAGE_SCORE: passage}
            documents.append(Document(id=doc.id, content=doc.content, meta=meta, score=score, embedding=doc.embedding))
        return {"documents": documents}

    def _passage_scores(
        self, hits: list[Document], query_embedding: list[float] | None, filters: dict[str, Any] | None
    ) -> dict[str, float]:
        """The best passage similarity of each hit's parent block (none without an embedding)."""
        if query_embedding is None or not hits:
            return {}
        return best_passage_similarity(self.document_store, query_embedding, [parent_key(d) for d in hits],
                                       filters=filters)

    def _search_collections(
        self,
        per_collection: list[dict[str, Any] | None],
        *,
        mode: str,
        lexical: bool,
        embedding: list[float] | None,
        sparse: SparseEmbedding | None,
        query: str | None,
        top_k: int,
    ) -> list[list[Document]]:
        """The hits of each collection's filters, fused as `mode` says: one ranked list per collection."""
        prefetch_k = self.prefetch_k or max(top_k, 50)
        if mode == "hybrid" and self.fuse_by_parent:
            # dense and sparse lists of every collection (one batch on the embedded store), fused per parent block
            dense, sparse_lists = self._ranked_lists(per_collection, embedding, sparse, query, prefetch_k)
            if self.fusion == "score":
                return [self._fuse_scores(d, s, embedding, top_k) for d, s in zip(dense, sparse_lists)]
            return [
                self._fuse_by_parent(d, s, embedding, top_k, sparse_weight=self.lexical_weight(query, s))
                for d, s in zip(dense, sparse_lists)
            ]
        if mode == "hybrid" and lexical:
            # chunk-level fusion across two stores: Haystack's reciprocal rank fusion (k=60)
            dense, sparse_lists = self._ranked_lists(per_collection, embedding, sparse, query, prefetch_k)
            return [self._joiner().run(documents=[d, s])["documents"][:top_k] for d, s in zip(dense, sparse_lists)]
        if lexical:
            return [self._lexical_search(query or "", f, top_k) for f in per_collection]
        return self._search([(mode, f) for f in per_collection], embedding, sparse, top_k, prefetch_k)

    def _merged(
        self,
        names: list[str],
        results: list[list[Document]],
        best: dict[str, tuple[float, Document]] | None = None,
    ) -> dict[str, tuple[float, Document]]:
        """Each chunk at its best collection-weighted score (added to `best`); Documents are built later."""
        best = {} if best is None else best
        for name, hits in zip(names, results):
            weight = self.collections[name]
            for doc in hits:
                score = (doc.score or 0.0) * weight
                if doc.id not in best or score > best[doc.id][0]:
                    best[doc.id] = (score, doc)
        return best

    def lexical_weight(self, query: str | None, hits: list[Document]) -> float:
        """
        The weight of the BM25 ranking `hits` (best first) of `query` in parent-level RRF: `sparse_weight` scaled by
        the share of the query's content words its best hit holds (`coverage_pivot`; see the class docstring).
        """
        if self.coverage_pivot is None or not hits or not isinstance(query, str):
            return self.sparse_weight
        best = hits[0]
        if best.content is None and hasattr(self.document_store, "get_documents_by_id"):  # a light hit
            best = next(iter(self.document_store.get_documents_by_id([best.id])), best)
        language = detect_query_language(query) or str(best.meta.get("lang") or "es")
        coverage = lexical_coverage(query, best.content or "", language)
        if coverage is None:
            return self.sparse_weight
        return self.sparse_weight * coverage / self.coverage_pivot

    def _fuse_by_parent(
        self,
        dense: list[Document],
        sparse: list[Document],
        query_embedding: list[float] | None = None,
        limit: int | None = None,
        sparse_weight: float | None = None,
    ) -> list[Document]:
        """
        Weighted RRF over the parent-level rankings of both lists; the best chunk per parent and list is kept.

        With `query_embedding`, a parent only the BM25 side found gets its `dense_score` from its stored vector.
        `limit`: the most chunks returned (all when `None`). `sparse_weight`: the BM25 list's weight for this
        query (`lexical_weight`); `None` = the init `sparse_weight`.
        """
        chunks: dict[str, list[Document]] = {}
        cosine: dict[str, float] = {}  # best dense similarity per parent: an absolute relevance signal (CRAG)
        rankings: list[list[str]] = []  # each list's parents, in the order of their best chunk
        best: list[list[float | None]] = []  # that chunk's score: parents scored equally share a rank
        for hits in (dense, sparse):
            ranking: dict[str, float | None] = {}  # ordered set
            for doc in hits:
                key = parent_key(doc)
                if hits is dense and doc.score is not None:
                    cosine[key] = max(cosine.get(key, doc.score), doc.score)
                if key not in ranking:
                    ranking[key] = doc.score
                    chunks.setdefault(key, []).append(doc)
            rankings.append(list(ranking))
            best.append(list(ranking.values()))
        lexical = self.sparse_weight if sparse_weight is None else sparse_weight
        scores = rrf_scores(rankings, k=self.rrf_k, weights=[self.dense_weight, lexical], scores=best)
        missing = [key for key in scores if key not in cosine]
        if missing and query_embedding is not None:
            cosine.update(self._stored_cosines(missing, query_embedding))
        return _ranked(scores, chunks, cosine, limit)

    def _fuse_scores(
        self,
        dense: list[Document],
        sparse: list[Document],
        query_embedding: list[float] | None,
        limit: int | None = None,
    ) -> list[Document]:
        """
        Score-level fusion per parent: `dense_share * minmax(cosine) + (1 - dense_share) * minmax(best BM25)`.

        A parent the dense search did not return gets its cosine from its stored vector (one dense search
        restricted to them), so a block found by BM25 alone is still judged on its meaning; a parent the BM25
        search did not return gets BM25 0.
        """
        cosine: dict[str, float] = {}
        lexical: dict[str, float] = {}
        chunks: dict[str, list[Document]] = {}
        for doc in dense:
            key = parent_key(doc)
            if doc.score is not None and doc.score > cosine.get(key, float("-inf")):
                cosine[key] = doc.score
            chunks.setdefault(key, []).append(doc)
        for doc in sparse:
            key = parent_key(doc)
            lexical[key] = max(lexical.get(key, 0.0), doc.score or 0.0)
            if key not in chunks or all(c.id != doc.id for c in chunks[key]):
                chunks.setdefault(key, []).append(doc)
        missing = [key for key in chunks if key not in cosine]
        if missing and query_embedding is not None:
            cosine.update(self._stored_cosines(missing, query_embedding))

        def minmax(values: dict[str, float]) -> dict[str, float]:
            if not values:
                return {}
            low, high = min(values.values()), max(values.values())
            return {k: (v - low) / (high - low) if high > low else 1.0 for k, v in values.items()}

        # over every candidate: a parent the BM25 search did not return counts as BM25 0
        dense_norm, sparse_norm = minmax(cosine), minmax({key: lexical.get(key, 0.0) for key in chunks})
        scores = {
            key: self.dense_share * dense_norm.get(key, 0.0) + (1 - self.dense_share) * sparse_norm.get(key, 0.0)
            for key in chunks
        }
        return _ranked(scores, chunks, cosine, limit)

    def _stored_cosines(self, parent_ids: list[str], query_embedding: list[float]) -> dict[str, float]:
        """Cosine of the query and the stored dense vector of each parent (one dense search restricted to them)."""
        return similarity_by_id(self.document_store, query_embedding, parent_ids)

    def _ranked_lists(
        self,
        per_collection: list[dict[str, Any] | None],
        embedding: list[float] | None,
        sparse: SparseEmbedding | None,
        query: str | None,
        k: int,
    ) -> tuple[list[list[Document]], list[list[Document]]]:
        """The dense and the BM25 ranking of each collection (BM25 from the lexical store when there is one)."""
        n = len(per_collection)
        if self.lexical_store is None:
            searches = [("dense", f) for f in per_collection] + [("sparse", f) for f in per_collection]
            lists = self._search(searches, embedding, sparse, k, k)
            return lists[:n], lists[n:]
        dense = self._search([("dense", f) for f in per_collection], embedding, None, k, k)
        return dense, [self._lexical_search(query or "", f, k) for f in per_collection]

    def _lexical_search(self, query: str, filters: dict[str, Any] | None, top_k: int) -> list[Document]:
        """BM25 on the OpenSearch lexical store (`OpenSearchBM25Retriever` with `LEXICAL_BM25_QUERY`)."""
        if self._lexical_retriever is None:
            from haystack_integrations.components.retrievers.opensearch import (  # noqa: PLC0415
                OpenSearchBM25Retriever,
            )

            self._lexical_retriever = OpenSearchBM25Retriever(
                document_store=self.lexical_store, custom_query=LEXICAL_BM25_QUERY
            )
        return self._lexical_retriever.run(query=query, filters=filters, top_k=top_k)["documents"]

    def _joiner(self) -> Any:
        from haystack.components.joiners import DocumentJoiner  # noqa: PLC0415

        return DocumentJoiner(join_mode="reciprocal_rank_fusion", weights=[self.dense_weight, self.sparse_weight])

    def _search(
        self,
        searches: list[tuple[str, dict[str, Any] | None]],
        embedding: list[float] | None,
        sparse: SparseEmbedding | None,
        top_k: int,
        prefetch_k: int,
    ) -> list[list[Document]]:
        """Run `(mode, filters)` searches: one batched call on the embedded store, one call each on a server."""
        requests = [
            {
                "mode": mode,
                "embedding": embedding if mode != "sparse" else None,
                "sparse_embedding": sparse if mode != "dense" else None,
                "filters": and_filters(f, NOT_CHILD_FILTER) if mode == "dense" else f,
                "top_k": top_k,
                **({"prefetch_k": prefetch_k} if mode == "hybrid" else {}),
            }
            for mode, f in searches
        ]
        return search_batch(self.document_store, requests, meta_fields=list(HIT_FIELDS) if self.light_hits else None)


def _laws_of_first_parents(ranked: list[tuple[float, Document]], parents: int) -> set[Any]:
    """The law ids of the first `parents` distinct parent blocks of `ranked` (score, chunk) pairs, best first."""
    laws: set[Any] = set()
    seen: set[str] = set()
    for _, doc in ranked:
        key = parent_key(doc)
        if key not in seen:
            if len(seen) == parents:
                break
            seen.add(key)
            laws.add(doc.meta.get("law_id"))
    return laws


def _ranked(
    scores: dict[Any, float],
    chunks: dict[Any, list[Document]],
    cosine: dict[Any, float],
    limit: int | None = None,
) -> list[Document]:
    """
    The chunks of every fused key, best fused score first, each chunk once with its key's score and dense cosine;
    at most `limit` of them (a new Document is built only for those returned). Keys fused equally go in key order,
    not in the order a search returned them.
    """
    ranked: list[Document] = []
    seen: set[str] = set()
    for key in sorted(scores, key=lambda key: (-scores[key], str(key))):
        for doc in chunks[key]:
            if doc.id in seen:  # the same chunk from the dense and the BM25 list
                continue
            if limit is not None and len(ranked) >= limit:
                return ranked
            seen.add(doc.id)
            meta = {**doc.meta, DENSE_SCORE: cosine[key]} if key in cosine else doc.meta
            ranked.append(
                Document(id=doc.id, content=doc.content, meta=meta, score=scores[key], embedding=doc.embedding)
            )
    return ranked
