"""
A Haystack DocumentStore on Qdrant Edge, the Qdrant engine embedded in the Python process.

The store keeps one Edge shard per directory. Points use the payload layout of qdrant-haystack's
`QdrantDocumentStore` (`{"id", "content", "meta"}`), so filters such as `meta.law_id` and the payload schema work
unchanged on a Qdrant server (the scale-out path). As in qdrant-haystack, the store is split in three modules: this
one, `edge_converters` (Documents to points and back) and `edge_filters` (Haystack filters to Qdrant Edge filters).
"""

import atexit
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from haystack import default_from_dict, default_to_dict, logging
from haystack.dataclasses import Document, SparseEmbedding
from haystack.document_stores.errors import DocumentStoreError, DuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy
from haystack.errors import FilterError
from qdrant_edge import (
    CountRequest,
    Distance,
    EdgeConfig,
    EdgeShard,
    EdgeSparseVectorParams,
    EdgeVectorParams,
    FacetRequest,
    Filter,
    Fusion,
    HnswIndexConfig,
    Modifier,
    PayloadSelector,
    PayloadSchemaType,
    Prefetch,
    Query,
    QueryBatchRequest,
    QueryRequest,
    ScrollRequest,
    SparseVector,
    UpdateOperation,
)

from components.document_stores.edge_converters import (
    DENSE_VECTOR_NAME,
    SPARSE_VECTOR_NAME,
    light_entry,
    light_selector,
    point_id,
    to_document,
    to_point,
)
from components.document_stores.edge_filters import convert_filters
from components.document_stores.ties import TIE_MARGIN, settle_ties
from components.legal.ids import SOURCE_DIGEST

logger = logging.getLogger(__name__)

DEFAULT_STORE_PATH = "./.lexhay"
STORE_PATH_ENV = "LEXHAY_STORE"
SHARD_DIRNAME = "shard"
SETTINGS_FILENAME = "edge_store.json"

SIMILARITIES = {"cosine": Distance.Cosine, "dot_product": Distance.Dot, "l2": Distance.Euclid}

PAYLOAD_SCHEMA_TYPES = {
    "keyword": PayloadSchemaType.Keyword,
    "integer": PayloadSchemaType.Integer,
    "float": PayloadSchemaType.Float,
    "bool": PayloadSchemaType.Bool,
    "datetime": PayloadSchemaType.Datetime,
    "text": PayloadSchemaType.Text,
    "uuid": PayloadSchemaType.Uuid,
}

DEFAULT_PAYLOAD_INDEXES = {
    **{
        f"meta.{field}": "keyword"
        for field in (
            "law_id",
            "law_short",
            "law_key",
            "article",
            "collection",
            "country",
            "level",
            "parent_id",
            "status",
            "lang",
            "topics",
            "tenant_id",
            "scope",
            "case_id",
            "group_ids",
            "user_id",
            SOURCE_DIGEST,
        )
    },
    "meta.rank": "integer",
    # ISO dates ("2015-10-24") parse into a datetime index, which serves range filters; `==` still matches the string.
    "meta.publication_date": "datetime",
    "meta.last_updated": "datetime",
}

# the most distinct values one facet call counts (a keyword field of laws, collections or tenants has far fewer)
_FACET_LIMIT = 100_000
_SCROLL_PAGE_SIZE = 1024


@dataclass
class _OpenShard:
    """One open Edge shard, shared by every store instance on the same directory in this process."""

    shard: EdgeShard
    settings_path: Path
    settings: dict[str, Any]
    lock: threading.RLock
    users: int = 0
    # Light hits (`query_batch(meta_fields=...)`): per field set, point id -> (document id, those meta fields), filled
    # from the points searches return and kept current by this process's writes (the only process the shard is
    # open in). A point not in it is read once, with those fields alone.
    keys: dict[tuple[str, ...], dict[str, tuple[str, dict[str, Any]]]] = field(default_factory=dict)
    # the field sets whose table was filled with every point (`EdgeDocumentStore.preload_light_hits`), and how many
    # times the tables were emptied (a preload the emptying overtook does not count as one)
    preloaded: set[tuple[str, ...]] = field(default_factory=set)
    emptied: int = 0

    def forget(self, point_ids: list[str] | None = None) -> None:
        """Drop `point_ids` from every light-hit table (`None`: empty them)."""
        for table in list(self.keys.values()):  # a search may add a field set meanwhile
            if point_ids is None:
                table.clear()
            for pid in point_ids or ():
                table.pop(pid, None)
        if point_ids is None:
            self.preloaded.clear()
            self.emptied += 1

    def save_settings(self) -> None:
        tmp_path = self.settings_path.with_suffix(".tmp")
        tmp_path.write_text(json.dumps(self.settings, indent=2))
        tmp_path.replace(self.settings_path)


_OPEN_SHARDS: dict[str, _OpenShard] = {}
_OPEN_SHARDS_LOCK = threading.Lock()


@atexit.register
def _close_open_shards() -> None:
    """Flushes and closes the shards still open at interpreter exit (the WAL already makes every write durable)."""
    with _OPEN_SHARDS_LOCK:
        for entry in _OPEN_SHARDS.values():
            entry.shard.flush()
            entry.shard.close()
        _OPEN_SHARDS.clear()


def _scrolled(shard: EdgeShard, qdrant_filter: Filter | None, with_payload: Any, with_vector: Any) -> Iterator[Any]:
    """Every point of `shard` that matches `qdrant_filter`, in point-id order, read page by page."""
    offset = None
    while True:
        records, offset = shard.scroll(ScrollRequest(
            offset=offset, limit=_SCROLL_PAGE_SIZE, filter=qdrant_filter, with_payload=with_payload,
            with_vector=with_vector,
        ))
        yield from records
        if offset is None:
            return


class EdgeDocumentStore:
    """
    A DocumentStore on Qdrant Edge: the Qdrant engine (HNSW dense vectors, BM25 sparse vectors, payload indexes,
    RRF fusion) running in-process on a local directory, with no server.

    Dense embeddings are stored as the named vector `dense`, sparse embeddings as `bm25` (with Qdrant's IDF
    modifier, so BM25 term-frequency vectors from `SparseDocumentEmbedder` score as real BM25). Documents without an
    embedding or a sparse embedding are stored without that vector and are not hits of the searches that need it.
    The payload is `{"id", "content", "meta"}`, the layout of qdrant-haystack's `QdrantDocumentStore`, so the same
    filters work on a Qdrant server.

    All instances on the same directory in one process share one shard (a pipeline loaded from YAML creates one
    store per component). The directory holds the Edge shard (`shard/`) and the store settings
    (`edge_store.json`, with the embedding dimension inferred from the first embedded document).

    ### Usage example

    ```python
    from haystack import Document
    from haystack.dataclasses import SparseEmbedding
    from components.document_stores.edge_document_store import EdgeDocumentStore

    store = EdgeDocumentStore(path="./.lexhay")
    store.write_documents([
        Document(
            content="Vacaciones anuales retribuidas",
            meta={"law_id": "BOE-A-2015-11430", "article": "38"},
            embedding=[0.1, 0.9, 0.2],
            sparse_embedding=SparseEmbedding(indices=[1401913122], values=[1.3]),
        )
    ])
    hits = store.query_hybrid(
        [0.1, 0.8, 0.3],
        SparseEmbedding(indices=[1401913122], values=[1.0]),
        filters={"field": "meta.law_id", "operator": "==", "value": "BOE-A-2015-11430"},
        top_k=5,
    )
    ```
    """

    def __init__(
        self,
        *,
        path: str | None = None,
        embedding_dim: int | None = None,
        similarity: str = "cosine",
        sparse_idf: bool = True,
        payload_indexes: dict[str, str] | None = None,
        hnsw_m: int = 16,
        hnsw_ef_construct: int = 100,
        rrf_k: int = 2,
        write_batch_size: int = 256,
        return_embedding: bool = False,
    ) -> None:
        """
        Creates a new EdgeDocumentStore. The shard is opened (or created) on first use.

        :param path: Directory of the store. If `None`, the `LEXHAY_STORE` environment variable is used, else
            `./.lexhay`. It is resolved on first use and kept as given in `to_dict`, so serialized pipelines stay
            portable.
        :param embedding_dim: Dimension of the dense embeddings. If `None`, it is inferred from the first written
            document that has an embedding and persisted with the shard.
        :param similarity: Dense similarity: `cosine`, `dot_product` or `l2`. Fixed when the shard is created.
        :param sparse_idf: Whether the sparse vectors use Qdrant's IDF modifier, which turns BM25 term-frequency
            document vectors into BM25 scores at query time. Fixed when the shard is created.
        :param payload_indexes: Payload field path to index type (`keyword`, `integer`, `float`, `bool`,
            `datetime`, `text`, `uuid`). If `None`, keyword indexes on the lexhay meta fields used in filters,
            an integer index on `meta.rank` and datetime indexes on `meta.publication_date` and
            `meta.last_updated`. Missing indexes are created when the shard is opened (about 0.15 s each on an
            empty shard, mostly fsync).
        :param hnsw_m: Edges per node of the HNSW graph. Used when the shard is created.
        :param hnsw_ef_construct: Candidates considered while building the HNSW graph. Used when the shard is created.
        :param rrf_k: The `k` constant of Reciprocal Rank Fusion in `query_hybrid`. The default, 2, is Qdrant's,
            so results match `QdrantHybridRetriever` on a Qdrant server.
        :param write_batch_size: Number of points per upsert operation in `write_documents`.
        :param return_embedding: Whether returned Documents carry their dense and sparse embeddings. With `cosine`
            similarity, Qdrant stores (and returns) normalized dense vectors.
        :raises ValueError: If a parameter is invalid.
        """
        if similarity not in SIMILARITIES:
            raise ValueError(f"Unknown similarity '{similarity}'. Choose one of: {', '.join(SIMILARITIES)}.")
        if embedding_dim is not None and embedding_dim <= 0:
            raise ValueError(f"embedding_dim must be a positive integer, got {embedding_dim}.")
        for key, index_type in (payload_indexes or {}).items():
            if index_type not in PAYLOAD_SCHEMA_TYPES:
                raise ValueError(
                    f"Unknown payload index type '{index_type}' for field '{key}'. "
                    f"Choose one of: {', '.join(PAYLOAD_SCHEMA_TYPES)}."
                )
        if hnsw_m <= 0 or hnsw_ef_construct <= 0:
            raise ValueError("hnsw_m and hnsw_ef_construct must be positive integers.")
        if rrf_k <= 0:
            raise ValueError(f"rrf_k must be a positive integer, got {rrf_k}.")
        if write_batch_size <= 0:
            raise ValueError(f"write_batch_size must be a positive integer, got {write_batch_size}.")

        self.path = path
        self.embedding_dim = embedding_dim
        self.similarity = similarity
        self.sparse_idf = sparse_idf
        self.payload_indexes = payload_indexes
        self.hnsw_m = hnsw_m
        self.hnsw_ef_construct = hnsw_ef_construct
        self.rrf_k = rrf_k
        self.write_batch_size = write_batch_size
        self.return_embedding = return_embedding
        self._resolved_path: Path | None = None
        self._entry: _OpenShard | None = None

    def to_dict(self) -> dict[str, Any]:
        """
        Serializes the store to a dictionary.

        :returns: Dictionary with serialized data.
        """
        return default_to_dict(
            self,
            path=self.path,
            embedding_dim=self.embedding_dim,
            similarity=self.similarity,
            sparse_idf=self.sparse_idf,
            payload_indexes=self.payload_indexes,
            hnsw_m=self.hnsw_m,
            hnsw_ef_construct=self.hnsw_ef_construct,
            rrf_k=self.rrf_k,
            write_batch_size=self.write_batch_size,
            return_embedding=self.return_embedding,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "EdgeDocumentStore":
        """
        Deserializes the store from a dictionary.

        :param data: The dictionary to deserialize from.
        :returns: The deserialized store.
        """
        return default_from_dict(cls, data)

    @property
    def resolved_path(self) -> Path:
        """The absolute store directory: `path`, else `$LEXHAY_STORE`, else `./.lexhay`, resolved on first use."""
        if self._resolved_path is None:
            if self.path:
                raw_path = self.path
            else:
                from pipelines.settings import current_settings  # noqa: PLC0415 - the one reader of LEXHAY_* variables

                raw_path = current_settings().store_path or DEFAULT_STORE_PATH
            self._resolved_path = Path(raw_path).expanduser().resolve()
        return self._resolved_path

    # ------------------------------------------------------------------ shard lifecycle

    def _open(self) -> _OpenShard:
        if self._entry is not None:
            return self._entry
        key = str(self.resolved_path)
        with _OPEN_SHARDS_LOCK:
            entry = _OPEN_SHARDS.get(key)
            if entry is None:
                entry = self._load_or_create_shard(self.resolved_path)
                _OPEN_SHARDS[key] = entry
            self._reconcile_settings(entry)
            self._ensure_payload_indexes(entry)
            entry.users += 1
        self._entry = entry
        return entry

    def _load_or_create_shard(self, store_path: Path) -> _OpenShard:
        shard_path = store_path / SHARD_DIRNAME
        settings_path = store_path / SETTINGS_FILENAME
        if (shard_path / "edge_config.json").exists():
            if not settings_path.exists():
                raise DocumentStoreError(
                    f"'{shard_path}' holds an Edge shard but '{settings_path}' is missing: "
                    "it was not created by EdgeDocumentStore."
                )
            settings = json.loads(settings_path.read_text())
            try:
                shard = EdgeShard.load(str(shard_path))
            except Exception as error:
                raise DocumentStoreError(
                    f"Cannot open the Edge shard at '{shard_path}': {error}. A shard can be open in only one process "
                    "at a time (its write-ahead log is locked): stop the other process using this store, or give "
                    "this one another path."
                ) from error
            logger.info("Opened Edge shard at {path}", path=str(shard_path))
            return _OpenShard(shard=shard, settings_path=settings_path, settings=settings, lock=threading.RLock())

        settings = {"embedding_dim": self.embedding_dim, "similarity": self.similarity, "sparse_idf": self.sparse_idf}
        config = EdgeConfig(
            vectors=(
                {DENSE_VECTOR_NAME: EdgeVectorParams(size=self.embedding_dim, distance=SIMILARITIES[self.similarity])}
                if self.embedding_dim
                else None
            ),
            sparse_vectors={
                SPARSE_VECTOR_NAME: EdgeSparseVectorParams(modifier=Modifier.Idf if self.sparse_idf else None)
            },
            hnsw_config=HnswIndexConfig(m=self.hnsw_m, ef_construct=self.hnsw_ef_construct, full_scan_threshold=10_000),
        )
        shard_path.mkdir(parents=True, exist_ok=True)
        shard = EdgeShard.create(str(shard_path), config)
        entry = _OpenShard(shard=shard, settings_path=settings_path, settings=settings, lock=threading.RLock())
        entry.save_settings()
        logger.info("Created Edge shard at {path}", path=str(shard_path))
        return entry

    def _reconcile_settings(self, entry: _OpenShard) -> None:
        """Checks this instance against the shard's persisted settings; adds the dense vector if now known."""
        settings = entry.settings
        for name in ("similarity", "sparse_idf"):
            if settings[name] != getattr(self, name):
                raise ValueError(
                    f"The store at '{self.resolved_path}' was created with {name}={settings[name]!r}, "
                    f"but this EdgeDocumentStore has {name}={getattr(self, name)!r}. Use the same value or a new path."
                )
        if self.embedding_dim is None:
            return
        if settings["embedding_dim"] is None:
            with entry.lock:
                self._add_dense_vector(entry, self.embedding_dim)
        elif settings["embedding_dim"] != self.embedding_dim:
            raise ValueError(
                f"The store at '{self.resolved_path}' holds {settings['embedding_dim']}-dimensional embeddings, "
                f"but this EdgeDocumentStore has embedding_dim={self.embedding_dim}."
            )

    def _add_dense_vector(self, entry: _OpenShard, dim: int) -> None:
        entry.shard.update(
            UpdateOperation.create_dense_vector(DENSE_VECTOR_NAME, dim, SIMILARITIES[entry.settings["similarity"]])
        )
        entry.settings["embedding_dim"] = dim
        entry.save_settings()
        logger.info("Added the {dim}-dimensional dense vector to the Edge shard", dim=dim)

    def _ensure_payload_indexes(self, entry: _OpenShard) -> None:
        wanted = DEFAULT_PAYLOAD_INDEXES if self.payload_indexes is None else self.payload_indexes
        existing = entry.shard.info().payload_schema
        for key, index_type in wanted.items():
            if key not in existing:
                entry.shard.update(UpdateOperation.create_field_index(key, PAYLOAD_SCHEMA_TYPES[index_type]))

    def close(self) -> None:
        """
        Releases this instance's use of the shard. The shard is flushed and closed when no instance uses it anymore.

        The store reopens the shard if it is used again.
        """
        if self._entry is None:
            return
        key = str(self.resolved_path)
        with _OPEN_SHARDS_LOCK:
            self._entry.users -= 1
            if self._entry.users == 0:
                self._entry.shard.flush()
                self._entry.shard.close()
                _OPEN_SHARDS.pop(key, None)
        self._entry = None

    def optimize(self) -> bool:
        """
        Runs Qdrant's segment optimizers (merges segments and builds the HNSW and payload indexes), blocking until done.

        Call it once after a bulk write, not after every write: on 10k 768-dimensional points it takes about 20-30 s
        and roughly halves query latency (hybrid with a filter: about 2.5-5 ms -> 1.8-3.5 ms on 2 busy cores).

        :returns: `True` if any segment was optimized, `False` if the shard was already optimal.
        """
        entry = self._open()
        with entry.lock:
            return entry.shard.optimize()

    # ------------------------------------------------------------------ DocumentStore protocol

    def count_documents(self) -> int:
        """
        Returns the number of documents in the store.
        """
        return self._open().shard.count(CountRequest(exact=True))

    def count_documents_by_filter(self, filters: dict[str, Any]) -> int:
        """
        Returns the number of documents that match the filters.

        :param filters: Haystack filters, see `filter_documents`.
        :returns: The number of matching documents.
        """
        return self._open().shard.count(CountRequest(exact=True, filter=convert_filters(filters)))

    def get_metadata_field_unique_values(
        self,
        metadata_field: str,
        search_term: str | None = None,
        from_: int = 0,
        size: int = 10,
        filters: dict[str, Any] | None = None,
    ) -> tuple[list[Any], int]:
        """
        The distinct values of a meta field among the documents that match `filters`, as qdrant-haystack's
        `QdrantDocumentStore.get_metadata_field_unique_values` returns them (same arguments, same order).

        A field with a keyword payload index (`payload_indexes`: `law_id`, `law_short`, `status` ...) is counted by
        the index (Qdrant's facet), reading no payload; any other field, or a `search_term`, scrolls the matching
        points reading that field only. A list value counts each of its items.

        :param metadata_field: The meta field (`law_id` or `meta.law_id`).
        :param search_term: Keep only the values that hold this text (case-insensitive).
        :param from_: The offset of the first value returned (0-based).
        :param size: The most values returned.
        :param filters: Haystack filters restricting the documents considered (see `filter_documents`).
        :returns: The values, sorted by their text then their type name, from `from_`, at most `size`; and how many
            distinct values there are in all.
        :raises ValueError: An empty field name, a negative `from_` or a non-positive `size`.
        """
        name = metadata_field[len("meta."):] if metadata_field.startswith("meta.") else metadata_field
        if not name or from_ < 0 or size <= 0:
            raise ValueError("needs a field name, from_ >= 0 and size > 0")
        key = f"meta.{name}"
        qdrant_filter = convert_filters(filters)
        entry = self._open()
        indexed = DEFAULT_PAYLOAD_INDEXES if self.payload_indexes is None else self.payload_indexes
        values: set[Any] = set()
        if search_term is None and indexed.get(key) == "keyword":
            hits = entry.shard.facet(FacetRequest(key=key, limit=_FACET_LIMIT, exact=True, filter=qdrant_filter))
            values.update(hit.value for hit in hits.hits)
        else:
            needle = None if search_term is None else search_term.lower()
            for record in _scrolled(entry.shard, qdrant_filter, PayloadSelector.Include([key]), False):
                found = (record.payload.get("meta") or {}).get(name)
                for value in found if isinstance(found, list) else [found]:
                    if value is not None and (needle is None or needle in str(value).lower()):
                        values.add(value)
        ordered = sorted(values, key=lambda value: (str(value), type(value).__name__))
        return ordered[from_:from_ + size], len(ordered)

    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[Document]:
        """
        Returns the documents that match the filters, or all documents if no filters are given.

        Filters follow the Haystack syntax (https://docs.haystack.deepset.ai/docs/metadata-filtering), nested
        arbitrarily; field paths are payload paths (`meta.law_id`, `content`), and `id` filters by document id.
        Ranges (`>`, `>=`, `<`, `<=`) take numbers or ISO 8601 date strings.

        :param filters: The filters to apply.
        :returns: The matching documents, ordered by point id.
        :raises FilterError: If the filters are invalid.
        """
        records = _scrolled(self._open().shard, convert_filters(filters), True, self._with_vector())
        return [self._to_document(record.payload, record.vector) for record in records]

    def write_documents(self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE) -> int:
        """
        Writes Documents into the store and flushes them to disk.

        :param documents: The Documents to write.
        :param policy: What to do with a Document whose id already exists. `NONE` behaves like `FAIL`.
        :returns: The number of Documents written.
        :raises DuplicateDocumentError: If `policy` is `FAIL` or `NONE` and a Document id already exists in the store
            or twice in `documents`. Nothing is written in that case.
        :raises ValueError: If `documents` is not a list of Documents, embeddings have different dimensions, or a
            Document's meta is not JSON-serializable.
        """
        if not isinstance(documents, list) or any(not isinstance(doc, Document) for doc in documents):
            raise ValueError("Please provide a list of Documents.")
        if policy == DuplicatePolicy.NONE:
            policy = DuplicatePolicy.FAIL

        entry = self._open()
        with entry.lock:
            to_write = self._apply_duplicate_policy(entry, documents, policy)
            if not to_write:
                return 0
            self._check_embedding_dim(entry, list(to_write.values()))
            items = list(to_write.items())
            for start in range(0, len(items), self.write_batch_size):
                batch = items[start : start + self.write_batch_size]
                entry.shard.update(UpdateOperation.upsert_points([to_point(doc, pid) for pid, doc in batch]))
            entry.shard.flush()
            entry.forget(list(to_write))
        logger.debug("Wrote {count} documents to the Edge shard", count=len(to_write))
        return len(to_write)

    def delete_documents(self, document_ids: list[str]) -> None:
        """
        Deletes the documents with the given ids. Ids that are not in the store are ignored.

        :param document_ids: The ids of the documents to delete.
        """
        entry = self._open()
        with entry.lock:
            for start in range(0, len(document_ids), self.write_batch_size):
                batch = document_ids[start : start + self.write_batch_size]
                entry.shard.update(UpdateOperation.delete_points([point_id(doc_id) for doc_id in batch]))
            entry.shard.flush()
            entry.forget([point_id(doc_id) for doc_id in document_ids])

    def delete_by_filter(self, filters: dict[str, Any]) -> int:
        """
        Deletes the documents that match the filters, for example every chunk of a law before re-indexing it.

        :param filters: Haystack filters, see `filter_documents`.
        :returns: The number of deleted documents.
        """
        qdrant_filter = convert_filters(filters)
        if qdrant_filter is None:
            raise FilterError("delete_by_filter needs filters; refusing to delete every document.")
        entry = self._open()
        with entry.lock:
            count = entry.shard.count(CountRequest(exact=True, filter=qdrant_filter))
            entry.shard.update(UpdateOperation.delete_points_by_filter(qdrant_filter))
            entry.shard.flush()
            entry.forget()
        return count

    # ------------------------------------------------------------------ retrieval

    def get_documents_by_id(self, ids: list[str]) -> list[Document]:
        """
        Returns the documents with the given ids, in the order of `ids`. Missing ids are skipped.

        :param ids: Document ids.
        :returns: The documents found.
        """
        unique_ids = list(dict.fromkeys(ids))
        if not unique_ids:
            return []
        records = self._open().shard.retrieve(
            [point_id(doc_id) for doc_id in unique_ids], with_payload=True, with_vector=self._with_vector()
        )
        by_id = {record.payload["id"]: self._to_document(record.payload, record.vector) for record in records}
        return [by_id[doc_id] for doc_id in unique_ids if doc_id in by_id]

    def dense_vectors_by_id(
        self, ids: list[str], *, with_meta: bool = True
    ) -> dict[str, tuple[dict[str, Any], list[float] | None]]:
        """
        The meta and the stored dense vector of each of `ids` the store holds (whatever `return_embedding` says).

        Used to reuse the vector of an unchanged block when re-indexing. An empty store (no dense vector configured
        yet) returns `{}`.

        :param ids: Document ids.
        :param with_meta: Read each point's payload for its meta; `False` reads the vectors alone (the meta is then
            `{}`): a caller that needs no payload skips its conversion, which costs more than the read itself.
        :returns: id -> (meta, dense vector or `None` for a point without one).
        """
        by_point = {point_id(i): i for i in ids}
        entry = self._open()
        # an approximate count is enough to tell an empty store (the exact one scans the whole index per call)
        if not by_point or entry.shard.count(CountRequest(exact=False)) == 0:
            return {}
        with_vector: list[str] | bool = [DENSE_VECTOR_NAME] if entry.settings.get("embedding_dim") else False
        records = entry.shard.retrieve(list(by_point), with_payload=with_meta, with_vector=with_vector)
        out = {}
        for record in records:
            vector = (record.vector or {}).get(DENSE_VECTOR_NAME) if with_vector else None
            meta = (record.payload.get("meta") or {}) if with_meta else {}
            out[by_point[str(record.id)]] = (meta, list(vector) if vector is not None else None)
        return out

    def dense_similarities(
        self, embedding: list[float], ids: list[str], *, filters: dict[str, Any] | None = None
    ) -> dict[str, float]:
        """
        The similarity of a query vector to the stored dense vector of each of `ids`, without reading a payload.

        One dense search restricted to the ids' points, whose hits come back as point ids and scores only: each
        point id maps back to its document id (`point_id` is deterministic), so the payloads, whose reading and
        conversion cost more than the search itself, are never read.

        :param embedding: The query vector.
        :param ids: Document ids.
        :param filters: Haystack filters the documents must also pass.
        :returns: id -> similarity, for each of `ids` the store holds with a dense vector and `filters` lets through.
        :raises ValueError: The query vector has another dimension than the stored ones.
        :raises FilterError: `filters` are invalid.
        """
        by_point = {point_id(doc_id): doc_id for doc_id in ids}
        if not by_point:
            return {}
        entry = self._open()
        dense_query = self._dense_query(entry, 0, embedding)
        if dense_query is None:
            return {}  # no document has a dense vector yet
        by_id = {"field": "id", "operator": "in", "value": list(by_point.values())}
        restriction = by_id if filters is None else {"operator": "AND", "conditions": [by_id, filters]}
        request = QueryRequest(
            limit=len(by_point), query=dense_query, filter=convert_filters(restriction), with_payload=False,
            with_vector=False,
        )
        points = entry.shard.query_batch(QueryBatchRequest([request]))[0]
        return {by_point[str(point.id)]: float(point.score) for point in points if point.score is not None}

    def query_dense(
        self, embedding: list[float], *, filters: dict[str, Any] | None = None, top_k: int = 10
    ) -> list[Document]:
        """
        Retrieves the documents most similar to a dense query embedding.

        :param embedding: The query embedding.
        :param filters: Haystack filters applied before ranking.
        :param top_k: Maximum number of documents to return.
        :returns: Documents with `score` set (the similarity), best first.
        """
        return self.query_batch([{"mode": "dense", "embedding": embedding, "filters": filters, "top_k": top_k}])[0]

    def query_sparse(
        self, sparse_embedding: SparseEmbedding, *, filters: dict[str, Any] | None = None, top_k: int = 10
    ) -> list[Document]:
        """
        Retrieves the documents that best match a sparse (BM25) query embedding.

        :param sparse_embedding: The query's sparse embedding, for example from `SparseTextEmbedder`.
        :param filters: Haystack filters applied before ranking.
        :param top_k: Maximum number of documents to return.
        :returns: Documents with `score` set (BM25 when `sparse_idf` is on), best first.
        """
        request = {"mode": "sparse", "sparse_embedding": sparse_embedding, "filters": filters, "top_k": top_k}
        return self.query_batch([request])[0]

    def query_hybrid(
        self,
        embedding: list[float],
        sparse_embedding: SparseEmbedding,
        *,
        filters: dict[str, Any] | None = None,
        top_k: int = 10,
        prefetch_k: int | None = None,
    ) -> list[Document]:
        """
        Retrieves documents by a dense and a sparse search, each filtered, fused with Qdrant's Reciprocal Rank Fusion.

        :param embedding: The dense query embedding.
        :param sparse_embedding: The sparse (BM25) query embedding.
        :param filters: Haystack filters applied to both searches.
        :param top_k: Maximum number of documents to return.
        :param prefetch_k: Candidates taken from each search before fusion. Defaults to `4 * top_k`.
        :returns: Documents with `score` set (the RRF score), best first.
        """
        request = {
            "mode": "hybrid",
            "embedding": embedding,
            "sparse_embedding": sparse_embedding,
            "filters": filters,
            "top_k": top_k,
            "prefetch_k": prefetch_k,
        }
        return self.query_batch([request])[0]

    def query_batch(
        self, requests: list[dict[str, Any]], *, meta_fields: list[str] | None = None
    ) -> list[list[Document]]:
        """
        Runs several dense, sparse or hybrid queries in one planned Qdrant batch.

        Reading a hit's payload (its content and whole meta) and converting it costs more than the search itself.
        A caller that ranks many hits and keeps few (`HybridRetriever` fuses two lists of 50 and keeps the best
        chunks) asks for light hits with `meta_fields`: the search then reads no payload, and each hit is a
        Document with its id, score and those meta fields only (no content), which the caller completes with
        `get_documents_by_id` for the hits it keeps. The fields come from an in-memory table per field set, keyed
        by point id, that holds the points searches have returned (a point not in it is read once, those fields
        alone) and that this store's writes and deletes keep current.

        :param requests: Query requests, each a dict with `mode` (`dense`, `sparse` or `hybrid`), the vectors the mode
            needs (`embedding`: list of floats, `sparse_embedding`: `SparseEmbedding`), and optionally `filters`,
            `top_k` (default 10) and `prefetch_k` (hybrid only, default `4 * top_k`).
        :param meta_fields: Light hits holding these meta fields (see above); `None`: whole Documents.
        :returns: One list of Documents per request, in the order of `requests`, each with `score` set.
        :raises ValueError: If a request is malformed or a dense embedding has the wrong dimension.
        :raises FilterError: If a request's filters are invalid.
        """
        entry = self._open()
        light = meta_fields is not None
        results: list[list[Document]] = [[] for _ in requests]
        batch: list[tuple[int, QueryRequest]] = []
        for position, request in enumerate(requests):
            query_request = self._build_query_request(entry, position, request, extra=TIE_MARGIN)
            if query_request is not None:
                batch.append((position, query_request))
        if not batch:
            return results
        scored = self._settled_batch(entry, requests, batch)
        if light:
            keys = self._light_keys(entry, tuple(meta_fields or ()), [pid for found in scored for pid, _ in found])
            for (position, _), found in zip(batch, scored, strict=True):
                results[position] = [
                    Document(id=keys[pid][0], meta=dict(keys[pid][1]), score=score)
                    for pid, score in found
                    if pid in keys  # a point deleted since the search is not a hit
                ]
            return results
        # the searches read no payload: only the hits kept are read, once each
        kept = list(dict.fromkeys(pid for points in scored for pid, _ in points))
        read = entry.shard.retrieve(kept, with_payload=True, with_vector=self._with_vector()) if kept else []
        records = {str(record.id): record for record in read}
        for (position, _), points in zip(batch, scored, strict=True):
            results[position] = [
                self._to_document(records[pid].payload, records[pid].vector, score)
                for pid, score in points
                if pid in records  # a point deleted since the search is not a hit
            ]
        return results

    def _settled_batch(
        self,
        entry: _OpenShard,
        requests: list[dict[str, Any]],
        batch: list[tuple[int, QueryRequest]],
    ) -> list[list[tuple[str, float]]]:
        """
        The `(point id, score)` hits of each batched request (built `TIE_MARGIN` past its `top_k`), best
        first, `top_k` at most, equal scores in point id order (`components.document_stores.ties`): a request whose
        tie at the cut runs past what it fetched is asked again, deeper. A hybrid request's own fusion is the
        engine's: its RRF ranks the tied hits of each prefetch in the engine's order (`HybridRetriever` fuses settled
        dense and sparse lists itself).
        """
        wanted = {position: _positive_int(position, "top_k", requests[position].get("top_k"), default=10)
                  for position, _ in batch}
        depth = dict.fromkeys(wanted, TIE_MARGIN)
        settled: dict[int, list[tuple[str, float]]] = {}
        asked = batch
        while asked:
            answers = entry.shard.query_batch(QueryBatchRequest([query_request for _, query_request in asked]))
            pending = []
            for (position, _), points in zip(asked, answers, strict=True):
                # a point's `id` is a new UUID object at each access: read once
                kept = settle_ties([(point.score, str(point.id), None) for point in points], wanted[position],
                                   depth[position])
                if kept is None:
                    depth[position] *= 2
                    pending.append(position)
                else:
                    settled[position] = [(pid, score) for score, pid, _ in kept]
            asked = [
                (position, cast(QueryRequest, self._build_query_request(
                    entry, position, requests[position], extra=depth[position])))
                for position in pending
            ]
        return [settled[position] for position, _ in batch]

    @staticmethod
    def _light_keys(
        entry: _OpenShard, fields: tuple[str, ...], point_ids: list[str]
    ) -> dict[str, tuple[str, dict[str, Any]]]:
        """
        Document id and `fields` of each of `point_ids`, from the light-hit table of `fields` (a point it lacks is
        read with these fields alone, and added). The answer is this call's own: a write that empties the table
        meanwhile takes nothing from it.
        """
        table = entry.keys.setdefault(fields, {})
        found: dict[str, tuple[str, dict[str, Any]]] = {}
        for pid in point_ids:
            known = table.get(pid)
            if known is not None:
                found[pid] = known
        missing = list(dict.fromkeys(pid for pid in point_ids if pid not in found))
        if missing:
            with entry.lock:  # no write (which holds the lock) lands between the read and the table's update
                for record in entry.shard.retrieve(missing, with_payload=light_selector(fields), with_vector=False):
                    table[str(record.id)] = found[str(record.id)] = light_entry(record.payload, fields)
        return found

    def preload_light_hits(self, meta_fields: list[str], *, max_points: int | None = None) -> int:
        """
        Fills the light-hit table of `meta_fields` (see `query_batch`) with every point of the shard, so that the hits
        of a question never asked before are ranked without reading any payload.

        Without it the table fills from the hits searches return, and a new question reads the few fields of each hit
        the table lacks: a long-running server calls this once at start-up. One scroll of the whole shard, each page
        read and stored under the store's lock (no write lands between a page's read and its storing); a second call
        for the same fields does nothing until `delete_by_filter` empties the tables (one that empties them during
        the scroll leaves the table to be filled again). Writes keep the table current as for any light hit.

        :param meta_fields: The meta fields of the light hits.
        :param max_points: Fill nothing when the shard holds more points than this (the table keeps about 0.5 KB a
            point); `None`: no limit.
        :returns: The number of points added to the table: 0 when it was already filled or the shard is too large.
        """
        fields = tuple(meta_fields)
        entry = self._open()
        if fields in entry.preloaded:
            return 0
        if max_points is not None and entry.shard.count(CountRequest(exact=False)) > max_points:
            return 0
        selector = light_selector(fields)
        added, offset, emptied = 0, None, entry.emptied
        while True:
            with entry.lock:
                records, offset = entry.shard.scroll(
                    ScrollRequest(offset=offset, limit=_SCROLL_PAGE_SIZE, with_payload=selector, with_vector=False)
                )
                table = entry.keys.setdefault(fields, {})
                for record in records:
                    pid = str(record.id)
                    if pid not in table:
                        table[pid] = light_entry(record.payload, fields)
                        added += 1
            if offset is None:
                break
        with entry.lock:
            if entry.emptied == emptied:  # else the pages read before the emptying are gone: read on their first hit
                entry.preloaded.add(fields)
        return added

    def _build_query_request(
        self, entry: _OpenShard, position: int, request: dict[str, Any], *, extra: int = 0
    ) -> QueryRequest | None:
        """
        Builds the Qdrant request, or returns `None` when no document can match (no usable vector). `extra`: hits
        asked for past `top_k` (`components.document_stores.ties`). The search reads ids and scores alone: the
        caller reads the payload of the hits it keeps.
        """
        unknown = set(request) - {"mode", "embedding", "sparse_embedding", "filters", "top_k", "prefetch_k"}
        if unknown:
            raise ValueError(f"Query request {position} has unknown keys: {sorted(unknown)}.")
        mode = request.get("mode")
        if mode not in ("dense", "sparse", "hybrid"):
            raise ValueError(f"Query request {position} has mode {mode!r}; use 'dense', 'sparse' or 'hybrid'.")
        top_k = _positive_int(position, "top_k", request.get("top_k"), default=10)
        qdrant_filter = convert_filters(request.get("filters"))
        dense_query = sparse_query = None
        if mode in ("dense", "hybrid"):
            dense_query = self._dense_query(entry, position, request.get("embedding"))
        if mode in ("sparse", "hybrid"):
            sparse_query = _sparse_query(position, request.get("sparse_embedding"))

        if mode != "hybrid":
            query = dense_query or sparse_query
            if query is None:
                return None
            return QueryRequest(
                limit=top_k + extra, query=query, filter=qdrant_filter, with_payload=False, with_vector=False
            )
        prefetch_k = _positive_int(position, "prefetch_k", request.get("prefetch_k"), default=4 * top_k)
        prefetches = [
            Prefetch(limit=prefetch_k, query=query, filter=qdrant_filter)
            for query in (sparse_query, dense_query)  # the order of qdrant-haystack's hybrid query
            if query is not None
        ]
        if not prefetches:
            return None
        return QueryRequest(
            limit=top_k + extra,
            prefetches=prefetches,
            query=Fusion.Rrf(k=self.rrf_k),
            with_payload=False,
            with_vector=False,
        )

    @staticmethod
    def _dense_query(entry: _OpenShard, position: int, embedding: Any) -> Query | None:
        if embedding is None:
            raise ValueError(f"Query request {position} needs 'embedding' for a dense or hybrid search.")
        dim = entry.settings["embedding_dim"]
        if dim is None:
            return None  # no document has an embedding yet
        if len(embedding) != dim:
            raise ValueError(
                f"Query request {position}: the query embedding has {len(embedding)} dimensions, "
                f"the store holds {dim}-dimensional embeddings."
            )
        return Query.Nearest([float(value) for value in embedding], using=DENSE_VECTOR_NAME)

    def _check_embedding_dim(self, entry: _OpenShard, documents: list[Document]) -> None:
        dims = {len(doc.embedding) for doc in documents if doc.embedding is not None}
        if not dims:
            return
        dim = entry.settings["embedding_dim"]
        if dim is None and len(dims) == 1:
            self._add_dense_vector(entry, dims.pop())
            return
        wrong = sorted(dims - {dim}) if dim is not None else sorted(dims)
        if wrong:
            expected = f"{dim}-dimensional embeddings" if dim is not None else "embeddings of one dimension"
            raise ValueError(f"The store expects {expected}, got documents with dimensions {wrong}.")

    @staticmethod
    def _apply_duplicate_policy(
        entry: _OpenShard, documents: list[Document], policy: DuplicatePolicy
    ) -> dict[str, Document]:
        """Applies the duplicate policy within `documents` and against the store; returns point id -> Document."""
        unique: dict[str, Document] = {}
        for doc in documents:
            if doc.id in unique and policy != DuplicatePolicy.OVERWRITE:
                if policy == DuplicatePolicy.FAIL:
                    raise DuplicateDocumentError(f"ID '{doc.id}' appears more than once in the documents to write.")
                continue  # SKIP keeps the first, OVERWRITE the last of repeated ids
            unique[doc.id] = doc
        to_write = {point_id(doc_id): doc for doc_id, doc in unique.items()}
        if policy == DuplicatePolicy.OVERWRITE:
            return to_write

        existing = entry.shard.retrieve(list(to_write), with_payload=False, with_vector=False)
        duplicates = [to_write.pop(str(record.id)).id for record in existing]
        if duplicates and policy == DuplicatePolicy.FAIL:
            shown = ", ".join(f"'{doc_id}'" for doc_id in duplicates[:5])
            raise DuplicateDocumentError(
                f"{len(duplicates)} document ID(s) already exist in the store: {shown}. "
                "Use DuplicatePolicy.OVERWRITE or DuplicatePolicy.SKIP."
            )
        if duplicates:
            logger.info("Skipping {count} documents that already exist", count=len(duplicates))
        return to_write

    def _with_vector(self) -> list[str] | bool:
        return [DENSE_VECTOR_NAME, SPARSE_VECTOR_NAME] if self.return_embedding else False

    def _to_document(self, payload: dict[str, Any], vector: Any = None, score: float | None = None) -> Document:
        return to_document(payload, vector, score, with_embedding=self.return_embedding)


def _positive_int(position: int, name: str, value: Any, *, default: int) -> int:
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"Query request {position}: '{name}' must be a positive integer, got {value!r}.")
    return value


def _sparse_query(position: int, sparse_embedding: Any) -> Query | None:
    if sparse_embedding is None:
        raise ValueError(f"Query request {position} needs 'sparse_embedding' for a sparse or hybrid search.")
    if not isinstance(sparse_embedding, SparseEmbedding):
        raise ValueError(
            f"Query request {position}: 'sparse_embedding' must be a haystack SparseEmbedding, "
            f"got {type(sparse_embedding).__name__}."
        )
    if not sparse_embedding.indices:
        return None  # e.g. a query made only of stopwords
    vector = SparseVector(list(sparse_embedding.indices), [float(value) for value in sparse_embedding.values])
    return Query.Nearest(vector, using=SPARSE_VECTOR_NAME)
