"""`lexhay migrate`: copy the embedded store (Qdrant Edge) to a Qdrant server and its child chunks to OpenSearch."""

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from haystack import Document, logging
from haystack.document_stores.types import DuplicatePolicy

from components.document_stores.edge_document_store import SHARD_DIRNAME, EdgeDocumentStore
from pipelines.loader import _opensearch_store_dict, _store_dict
from pipelines.settings import Settings

logger = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 256
QDRANT_SCHEMES = {"qdrant://": "http://", "qdrants://": "https://"}


@dataclass
class MigrationReport:
    """What one migration did; `problems` lists failed count checks (empty = every target holds the source)."""

    source: int = 0
    children: int = 0
    qdrant_written: int = 0
    qdrant_count: int | None = None
    opensearch_written: int = 0
    opensearch_count: int | None = None
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def qdrant_location(target: str) -> str:
    """`qdrant://host:6333` -> `http://host:6333` (`qdrants://` -> https); http(s) URLs and `:memory:` as given."""
    target = target.strip()
    for scheme, http in QDRANT_SCHEMES.items():
        if target.startswith(scheme):
            return http + target[len(scheme) :]
    if target == ":memory:" or target.startswith(("http://", "https://")):
        return target
    raise ValueError(f"--to must be qdrant://HOST:PORT, an http(s):// URL or :memory:, got {target!r}")


def open_source_store(path: str | Path) -> EdgeDocumentStore:
    """The embedded store at `path`, returning vectors; a clear error when there is none (never creates one)."""
    store_path = Path(path).expanduser()
    if not (store_path / SHARD_DIRNAME / "edge_config.json").is_file():
        raise FileNotFoundError(f"No embedded lexhay store at {store_path} (expected {SHARD_DIRNAME}/ inside)")
    return EdgeDocumentStore(path=str(store_path), return_embedding=True)


def scroll_documents(store: EdgeDocumentStore, batch_size: int = DEFAULT_BATCH_SIZE) -> Iterator[list[Document]]:
    """Every document of the embedded store with its dense and sparse vectors, `batch_size` at a time."""
    from qdrant_edge import ScrollRequest  # noqa: PLC0415

    if batch_size <= 0:
        raise ValueError(f"batch_size must be > 0, got {batch_size}")
    shard = store._open().shard  # noqa: SLF001 (EdgeDocumentStore has no public paged scroll yet)
    offset = None
    while True:
        vectors = store._with_vector()  # noqa: SLF001
        records, offset = shard.scroll(
            ScrollRequest(offset=offset, limit=batch_size, with_payload=True, with_vector=vectors)
        )
        if records:
            yield [store._to_document(record.payload, record.vector) for record in records]  # noqa: SLF001
        if offset is None:
            return


def migrate(
    source: EdgeDocumentStore,
    *,
    qdrant: Any | None = None,
    opensearch: Any | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    on_batch: Callable[[int, int], None] | None = None,
) -> MigrationReport:
    """
    Copy every document of `source` to `qdrant` (all levels, with dense + sparse vectors) and the child chunks to
    `opensearch` (text and meta, for BM25), then check the counts.

    Writes overwrite by id (the same deterministic ids), so running it again is idempotent.

    :param source: The embedded store (opened with `return_embedding=True`, see `open_source_store`).
    :param qdrant: A qdrant-haystack `QdrantDocumentStore`, or None.
    :param opensearch: An opensearch-haystack `OpenSearchDocumentStore`, or None.
    :param batch_size: Documents read and written per batch.
    :param on_batch: Called after each batch with (documents done, documents in the source).
    :returns: A `MigrationReport`; `problems` is non-empty when a target holds fewer documents than expected.
    """
    if qdrant is None and opensearch is None:
        raise ValueError("Nothing to migrate to: give a Qdrant target, an OpenSearch target, or both")
    if not source.return_embedding:
        raise ValueError("The source store must be opened with return_embedding=True (see open_source_store)")
    start = time.perf_counter()
    report = MigrationReport(source=source.count_documents())
    writer = None
    if opensearch is not None:
        from components.writers.pruning_writer import PruningDocumentWriter  # noqa: PLC0415

        # batches carry parts of laws: no pruning (it would delete the rest of each law)
        writer = PruningDocumentWriter(document_store=opensearch, prune_stale=False, strip_embeddings=True)
    done = 0
    for batch in scroll_documents(source, batch_size):
        if qdrant is not None:
            report.qdrant_written += qdrant.write_documents(batch, policy=DuplicatePolicy.OVERWRITE)
        children = [doc for doc in batch if doc.meta.get("level") == "child"]
        report.children += len(children)
        if writer is not None and children:
            report.opensearch_written += writer.run(documents=children)["documents_written"]
        done += len(batch)
        if on_batch:
            on_batch(done, report.source)
    if done != report.source:
        report.problems.append(f"read {done} documents from the source, which counts {report.source}")
    if qdrant is not None:
        report.qdrant_count = qdrant.count_documents()
        _check(report, "Qdrant", report.qdrant_count, report.source)
    if opensearch is not None:
        report.opensearch_count = opensearch.count_documents()
        _check(report, "OpenSearch", report.opensearch_count, report.children)
    report.seconds = time.perf_counter() - start
    return report


def _check(report: MigrationReport, target: str, count: int, expected: int) -> None:
    if count < expected:
        report.problems.append(f"{target} holds {count} documents, fewer than the {expected} migrated")
    elif count > expected:
        report.notes.append(f"{target} holds {count - expected} documents that are not in the source")


def migrate_store(
    store_path: str | Path | None = None,
    *,
    to: str | None = None,
    opensearch_url: str | None = None,
    settings: Settings | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    on_batch: Callable[[int, int], None] | None = None,
) -> MigrationReport:
    """
    Migrate the embedded store at `store_path` to the servers named by URL (the `lexhay migrate` command).

    :param store_path: Embedded store folder (default: the settings' `store_path`, `LEXHAY_STORE` or `./.lexhay`).
    :param to: Qdrant target: `qdrant://HOST:PORT`, an http(s) URL or `:memory:` (default: `LEXHAY_QDRANT_URL`).
    :param opensearch_url: OpenSearch URL(s) for the child chunks (default: `LEXHAY_OPENSEARCH_URL`).
    :param settings: Settings for the index names and API key (default: `Settings.load()`).
    :param batch_size: Documents per batch.
    :param on_batch: Progress callback (done, total).
    """
    settings = settings or Settings.load()
    to = to or settings.qdrant_url
    opensearch_url = opensearch_url or settings.opensearch_url
    if not to and not opensearch_url:
        raise ValueError("Give --to (Qdrant) and/or --opensearch, or set LEXHAY_QDRANT_URL / LEXHAY_OPENSEARCH_URL")
    source = open_source_store(store_path or settings.store_path)
    qdrant = opensearch = None
    try:
        if to:
            from haystack_integrations.document_stores.qdrant import QdrantDocumentStore  # noqa: PLC0415

            dim = source._open().settings["embedding_dim"] or settings.resolved_embedding_dim()  # noqa: SLF001
            target = settings.model_copy(update={"qdrant_url": qdrant_location(to), "embedding_dim": dim})
            qdrant = QdrantDocumentStore.from_dict(_store_dict(target))
        if opensearch_url:
            from components.utils.extras import optional_import  # noqa: PLC0415

            with optional_import("opensearch", "Migrating to OpenSearch") as opensearch_import:
                from haystack_integrations.document_stores.opensearch import OpenSearchDocumentStore  # noqa: PLC0415
            opensearch_import.check()
            target = settings.model_copy(update={"opensearch_url": opensearch_url})
            opensearch = OpenSearchDocumentStore.from_dict(_opensearch_store_dict(target))
        return migrate(source, qdrant=qdrant, opensearch=opensearch, batch_size=batch_size, on_batch=on_batch)
    finally:
        source.close()
        for store in (qdrant, opensearch):
            if store is not None:
                store.close()
