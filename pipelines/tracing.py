"""
Per-request pipeline traces: a Haystack `Tracer` that records one stage per component run into a `PipelineTrace`.

Haystack has one global tracer (`haystack.tracing.tracer`). `install_tracer()` makes it a `LexhayTracer`, which

- records, for the request active in the current context (`request_trace(...)`, a contextvar, so concurrent
  requests in threads never mix), one `StageTrace` per component run: name, type, start offset and duration in
  ms, a SHORT summary of its inputs and outputs (document counts, truncated query strings, id counts; never whole
  documents, never the caller's filters) and the decisions it took (gate reason, CRAG route / confidence / retries,
  NEED requests, topic, fallbacks, router branches), plus cache hits and misses tagged by components on the
  current span (`tracing.tracer.current_span().set_tag("lexhay.cache.<name>", "hit" | "miss")`, or a batch
  `{"hits": n, "misses": m}`);
- forwards every span to the tracers it multiplexes: the tracer that was installed before it (hayhooks' tracer
  behind its `/traces` view, an OpenTelemetry tracer that hayhooks or the application set up), and
  OpenTelemetry (opentelemetry-haystack's `OpenTelemetryTracer`) when `LEXHAY_OTEL=1` or
  `OTEL_EXPORTER_OTLP_ENDPOINT` is set and no OpenTelemetry tracer is installed yet (never one span exported twice).

Content tracing stays Haystack's: component inputs and outputs reach OpenTelemetry only with
`HAYSTACK_CONTENT_TRACING_ENABLED=true` (off by default: questions are legal matters), and the pipeline's
input / output data tags are held back from forwarded spans unless it is on.

A finished trace is appended, as one JSON line, to a `TraceSink` (`LEXHAY_TRACE_FILE`; the SDK defaults to
`<store path>/traces.jsonl` for the embedded store). `LEXHAY_TRACE_TEXT_CHARS` (default 60) caps every string kept
in a trace; 0 keeps only lengths (and the question's hash).

### Usage example

```python
from pipelines.tracing import TraceSink, install_tracer, request_trace

install_tracer()
with request_trace("retrieve", "¿Cuántos días de vacaciones tengo?", sink=TraceSink("traces.jsonl")) as trace:
    pipeline.run({...})
print([(s.name, s.duration_ms) for s in trace.stages], trace.to_dict()["cache"])
```
"""

import contextlib
import contextvars
import hashlib
import json
import os
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from haystack import Document, logging
from haystack import tracing as haystack_tracing
from haystack.dataclasses import ChatMessage, SparseEmbedding
from haystack.tracing import Span, Tracer
from haystack.tracing.tracer import NullSpan, NullTracer

logger = logging.getLogger(__name__)

TRACE_FILE_ENV = "LEXHAY_TRACE_FILE"
OTEL_ENV = "LEXHAY_OTEL"
OTLP_ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
TEXT_CHARS_ENV = "LEXHAY_TRACE_TEXT_CHARS"
DEFAULT_TEXT_CHARS = 60
TRACE_FILE_OFF = {"", "-", "0", "off", "none", "false"}
TRACE_MAX_BYTES_ENV = "LEXHAY_TRACE_MAX_BYTES"  # size at which the trace file is rotated (default 50 MB)
TRACE_BACKUPS_ENV = "LEXHAY_TRACE_BACKUPS"  # rotated files kept: traces.jsonl.1 .. .N (default 5)
TRACE_MAX_BYTES = 50 * 1024 * 1024
TRACE_BACKUPS = 5
TRACE_FILE_MODE = 0o600  # traces hold questions about legal matters: readable by the server's user only
PRINCIPAL_KEYS = ("tenant_id", "user_id", "group_ids", "case_id", "case_ids", "roles")

COMPONENT_RUN = "haystack.component.run"
CACHE_TAG_PREFIX = "lexhay.cache."
# tags whose values are pipeline data: forwarded only with HAYSTACK_CONTENT_TRACING_ENABLED=true
CONTENT_TAGS = frozenset(
    {"haystack.component.input", "haystack.component.output", "haystack.pipeline.input_data",
     "haystack.pipeline.output_data"}
)
# input / output keys summarized by presence only (the caller's filters and identity, the conversation)
PRESENCE_ONLY = frozenset({"filters", "applied_filters", "retry_filters", "user_id", "group_ids", "case_id", "prompt", "replies", "history"})
# output keys (top level, or inside a `trace` / `stats` dict) that are a stage's decisions
DECISION_KEYS = (
    "reason", "skip_expansion", "has_citations", "route", "confidence", "retries", "topic", "fallback",
    "fallback_reason", "path", "mode", "skip_retrieval", "need", "need_retries", "requests", "new_ids",
    "meta_valid", "backend", "cache_hits", "cache_misses", "jurisdiction", "superseded", "named", "cited",
    "expressions", "bases", "special", "left_out", "special_first",
)
NESTED_DECISIONS = ("trace", "stats")
MAX_ITEMS = 4
MAX_KEYS = 16
MAX_DEPTH = 3
VECTOR_MIN_LEN = 16

_TRACE: contextvars.ContextVar["PipelineTrace | bool | None"] = contextvars.ContextVar("lexhay_trace", default=None)
_SPAN: contextvars.ContextVar["LexhaySpan | None"] = contextvars.ContextVar("lexhay_span", default=None)
_TEXT_CHARS: contextvars.ContextVar[int | None] = contextvars.ContextVar("lexhay_trace_text_chars", default=None)
_INSTALL_LOCK = threading.Lock()


def text_chars() -> int:
    """
    How many characters of any string a trace keeps (`LEXHAY_TRACE_TEXT_CHARS`, default 60; 0 = none): read once
    per request (`request_trace`), else from the settings.
    """
    chars = _TEXT_CHARS.get()
    if chars is not None:
        return chars
    from pipelines.settings import current_settings  # noqa: PLC0415 - the settings module imports the SDK's users

    return current_settings().trace_text_chars


def short_text(text: str, limit: int | None = None) -> str:
    """`text` cut to `limit` characters (default `text_chars()`) with an ellipsis; only its length at 0."""
    limit = text_chars() if limit is None else limit
    if limit == 0:
        return f"<{len(text)} chars>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def text_hash(text: str) -> str:
    """A short stable hash of `text` (first 16 hex digits of its SHA-256): correlates traces without the text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def summarize(value: Any, key: str = "", depth: int = 0) -> Any:
    """
    A short, JSON-ready summary of a component input or output value, for a trace.

    Documents and messages become counts, embeddings their dimension, id lists (`*ids`) their count, strings are
    truncated (`short_text`), dicts and lists are cut to a few keys / items and two levels; filters, the caller's
    identity, prompts and replies are kept as presence only.
    """
    if key in PRESENCE_ONLY:
        return None if value is None else "<set>"
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, str):
        return short_text(value)
    if isinstance(value, Document):
        return {"documents": 1}
    if isinstance(value, ChatMessage):
        return {"messages": 1}
    if isinstance(value, SparseEmbedding):
        return {"sparse_terms": len(value.indices)}
    if isinstance(value, dict):
        if depth >= MAX_DEPTH:
            return {"keys": len(value)}
        items = list(value.items())
        summary = {str(k): summarize(v, str(k), depth + 1) for k, v in items[:MAX_KEYS]}
        if len(items) > MAX_KEYS:
            summary["more_keys"] = len(items) - MAX_KEYS
        return summary
    if isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)
        if not items:
            return []
        if all(isinstance(v, Document) for v in items):
            return {"documents": len(items)}
        if all(isinstance(v, ChatMessage) for v in items):
            return {"messages": len(items)}
        # every item a number (the types compared once each: a query vector has 768 items)
        if len(items) >= VECTOR_MIN_LEN and all(issubclass(t, (int, float)) for t in set(map(type, items))):
            return {"vector_dim": len(items)}
        if key.endswith(("ids", "_id")):
            return {"ids": len(items)}
        if depth >= MAX_DEPTH:
            return {"count": len(items)}
        head = [summarize(v, key, depth + 1) for v in items[:MAX_ITEMS]]
        return head if len(items) <= MAX_ITEMS else {"count": len(items), "first": head}
    return f"<{type(value).__name__}>"


def decisions_of(component_type: str, outputs: dict[str, Any]) -> dict[str, Any]:
    """The decisions in a component's outputs (`DECISION_KEYS`, also inside `trace` / `stats`), summarized."""
    found: dict[str, Any] = {}
    if component_type == "ConditionalRouter":
        found["branch"] = sorted(outputs)
    sources = [outputs] + [outputs[k] for k in NESTED_DECISIONS if isinstance(outputs.get(k), dict)]
    for source in sources:
        for name in DECISION_KEYS:
            if name in source and name not in found:
                found[name] = summarize(source[name], name)
    return found


@dataclass
class StageTrace:
    """One component run of a request: where it started (ms after the request), how long it took, what it did."""

    name: str
    type: str
    start_ms: float
    duration_ms: float = 0.0
    visit: int | None = None
    depth: int = 0
    inputs: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)
    decisions: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


def _stage_dict(stage: StageTrace) -> dict[str, Any]:
    """A stage as a dict, its summaries copied one level deep (`asdict`'s full deep copy cost ~2 ms a request)."""
    out = {}
    for f in fields(stage):
        value = getattr(stage, f.name)
        out[f.name] = dict(value) if isinstance(value, dict) else value
    return out


@dataclass
class PipelineTrace:
    """
    What one SDK request did: its stages, decisions, totals and cache hit rates (`to_dict()` is the JSON line).

    `details` holds the request's answer-level summary (for `ask`: citations, gate, queries, crag, need_retry, ...);
    `to_dict()` puts its keys at the top level, next to the trace's own.
    """

    method: str
    question: str
    question_hash: str
    request_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    started_at: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="milliseconds"))
    tenant: str | None = None
    principal: dict[str, Any] = field(default_factory=dict)
    flags: dict[str, bool] = field(default_factory=dict)
    stages: list[StageTrace] = field(default_factory=list)
    totals: dict[str, Any] = field(default_factory=dict)
    cache: dict[str, dict[str, Any]] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    _t0: float = field(default_factory=time.perf_counter, repr=False)
    _lock: Any = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def start(
        cls,
        method: str,
        question: str,
        *,
        access: dict[str, Any] | None = None,
        flags: dict[str, bool] | None = None,
    ) -> "PipelineTrace":
        """
        A new trace of a request, started now.

        :param method: The SDK method (`ask`, `retrieve`).
        :param question: The question: the trace keeps its hash and its first `LEXHAY_TRACE_TEXT_CHARS` characters.
        :param access: The caller's access context: its principal (`PRINCIPAL_KEYS`) is recorded.
        :param flags: The feature flags of the request.
        """
        access = access or {}
        return cls(
            method=method,
            question=short_text(question),
            question_hash=text_hash(question),
            tenant=access.get("tenant_id"),
            principal={k: access[k] for k in PRINCIPAL_KEYS if access.get(k) is not None},
            flags=dict(flags or {}),
        )

    def elapsed_ms(self) -> float:
        """Milliseconds since the request started."""
        return (time.perf_counter() - self._t0) * 1000

    def add_stage(self, stage: StageTrace) -> None:
        """Append a finished stage (thread-safe)."""
        with self._lock:
            self.stages.append(stage)

    def note_cache(self, name: str, *, hits: int = 0, misses: int = 0, **extra: Any) -> None:
        """Count cache hits / misses of cache `name` during this request; `extra` keys are stored as given."""
        with self._lock:
            entry = self.cache.setdefault(name, {"hits": 0, "misses": 0})
            entry["hits"] += hits
            entry["misses"] += misses
            lookups = entry["hits"] + entry["misses"]
            entry["hit_rate"] = round(entry["hits"] / lookups, 4) if lookups else 0.0
            entry.update(extra)

    def finish(self, error: BaseException | None = None) -> None:
        """Close the trace: totals (seconds, stages, component ms, slowest stage) and the error, if any."""
        with self._lock:
            if error is not None:
                self.error = f"{type(error).__name__}: {short_text(str(error), 200)}"
            top = [s for s in self.stages if s.depth == 0]
            slowest = max(top, key=lambda s: s.duration_ms, default=None)
            self.totals = {
                "seconds": round(self.elapsed_ms() / 1000, 3),
                "stages": len(self.stages),
                "components_ms": round(sum(s.duration_ms for s in top), 1),
                "slowest": {"name": slowest.name, "ms": slowest.duration_ms} if slowest else None,
            }

    def decisions(self) -> list[dict[str, Any]]:
        """The decisions of every stage that took one, in run order (`stage` and `visit` first)."""
        return [{"stage": s.name, "visit": s.visit, **s.decisions} for s in self.stages if s.decisions]

    def to_dict(self) -> dict[str, Any]:
        """The trace as a JSON-ready dict: `details` keys, then the trace's own keys (they win on a clash)."""
        with self._lock:
            return {
                **self.details,
                "request_id": self.request_id,
                "method": self.method,
                "started_at": self.started_at,
                "question": self.question,
                "question_hash": self.question_hash,
                "tenant": self.tenant,
                "principal": dict(self.principal),
                "flags": dict(self.flags),
                "stages": [_stage_dict(s) for s in self.stages],
                "decisions": self.decisions(),
                "totals": dict(self.totals),
                "seconds": self.totals.get("seconds", round(self.elapsed_ms() / 1000, 3)),
                "cache": {name: dict(entry) for name, entry in self.cache.items()},
                "error": self.error,
            }


def current_trace() -> PipelineTrace | None:
    """The trace of the request running in this context, if any (None when tracing is off for it)."""
    active = _TRACE.get()
    return active if isinstance(active, PipelineTrace) else None


class TraceSink:
    """
    Appends finished traces to a JSONL file: one line each, thread-safe (one lock per file in this process).

    The file is created with mode 0600 (it holds the questions and who asked them) and rotated by size: past
    `max_bytes` it becomes `<file>.1` (older ones shift up to `<file>.<backups>`, the oldest is deleted).

    ### Usage example

    ```python
    sink = TraceSink("/var/lib/lexhay/traces.jsonl")
    sink.write(trace)
    ```
    """

    _locks: dict[str, threading.Lock] = {}
    _locks_guard = threading.Lock()

    def __init__(self, path: str | Path, *, max_bytes: int | None = None, backups: int | None = None) -> None:
        """
        Create a TraceSink.

        :param path: The JSONL file (created with its folder on the first write, mode 0600).
        :param max_bytes: Size at which the file is rotated; None: `LEXHAY_TRACE_MAX_BYTES` or 50 MB.
        :param backups: Rotated files kept; None: `LEXHAY_TRACE_BACKUPS` or 5.
        :raises ValueError: An empty path, a non-positive `max_bytes` or a negative `backups`.
        """
        if not str(path).strip():
            raise ValueError("TraceSink needs a file path")
        if max_bytes is None or backups is None:
            from pipelines.settings import current_settings  # noqa: PLC0415 - validates both variables

            settings = current_settings()
            max_bytes = settings.trace_max_bytes if max_bytes is None else max_bytes
            backups = settings.trace_backups if backups is None else backups
        self.max_bytes, self.backups = int(max_bytes), int(backups)
        if self.max_bytes < 1 or self.backups < 0:
            raise ValueError(f"max_bytes must be >= 1 and backups >= 0, got {self.max_bytes}, {self.backups}")
        self.path = Path(path).expanduser()
        key = str(self.path.resolve())
        with self._locks_guard:
            self._lock = self._locks.setdefault(key, threading.Lock())

    @classmethod
    def from_env(cls, default: str | Path | None = None) -> "TraceSink | None":
        """The sink of `LEXHAY_TRACE_FILE` (`off` / `none` / `-` = no file), else of `default` (None = no file)."""
        from pipelines.settings import current_settings  # noqa: PLC0415

        raw = current_settings().trace_file
        if raw is not None:
            return None if raw.strip().lower() in TRACE_FILE_OFF else cls(raw.strip())
        return cls(default) if default else None

    def write(self, trace: PipelineTrace | dict[str, Any]) -> None:
        """Append `trace` (a PipelineTrace or its dict) as one JSON line."""
        data = trace.to_dict() if isinstance(trace, PipelineTrace) else trace
        line = json.dumps(data, ensure_ascii=False, default=str) + "\n"
        data_bytes = line.encode("utf-8")
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                size = self.path.stat().st_size
            except FileNotFoundError:
                size = 0
            if size and size + len(data_bytes) > self.max_bytes:
                self._rotate()
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, TRACE_FILE_MODE)
            try:
                os.fchmod(fd, TRACE_FILE_MODE)  # also a file created before with the default umask
                os.write(fd, data_bytes)
            finally:
                os.close(fd)

    def _rotate(self) -> None:
        """`<file>` -> `<file>.1` -> ... -> `<file>.<backups>` (the oldest dropped); no backups: truncate."""
        if self.backups == 0:
            self.path.unlink(missing_ok=True)
            return
        for n in range(self.backups, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{n}")
            newer = self.path if n == 1 else self.path.with_name(f"{self.path.name}.{n - 1}")
            if newer.exists():
                newer.replace(older)


@contextlib.contextmanager
def request_trace(
    method: str,
    question: str,
    *,
    access: dict[str, Any] | None = None,
    flags: dict[str, bool] | None = None,
    enabled: bool = True,
    sink: TraceSink | None = None,
) -> Iterator[PipelineTrace | None]:
    """
    Scope a request: component runs in this context (this thread) are recorded into a new `PipelineTrace`.

    On exit the trace is finished (with the error, if one is raised) and written to `sink`. With `enabled=False`
    nothing is recorded, written or forwarded (OpenTelemetry included) and None is yielded.

    :param method: The SDK method (`ask`, `retrieve`).
    :param question: The request's question.
    :param access: The caller's access context (only the tenant is kept).
    :param flags: The request's feature flags.
    :param enabled: The request's `tracing` flag.
    :param sink: Where the finished trace is appended (None = nowhere).
    """
    if not enabled:
        token = _TRACE.set(False)
        try:
            yield None
        finally:
            _TRACE.reset(token)
        return
    install_tracer()
    chars_token = _TEXT_CHARS.set(None)
    _TEXT_CHARS.set(text_chars())  # the request's strings are all cut to the same length, read once
    trace = PipelineTrace.start(method, question, access=access, flags=flags)
    token = _TRACE.set(trace)
    error: BaseException | None = None
    try:
        yield trace
    except BaseException as exc:
        error = exc
        raise
    finally:
        _TRACE.reset(token)
        trace.finish(error)
        _TEXT_CHARS.reset(chars_token)
        if sink is not None:
            try:
                sink.write(trace)
            except OSError as exc:  # a full disk or a read-only folder must not fail the request
                logger.warning("Cannot append the trace to {path}: {error}", path=str(sink.path), error=str(exc))


class LexhaySpan(Span):
    """A span of `LexhayTracer`: records a component run into the request's trace and forwards to other spans."""

    def __init__(
        self,
        operation_name: str,
        trace: PipelineTrace | None,
        forwards: list[Span],
        parent: "LexhaySpan | None",
    ) -> None:
        """
        Create a LexhaySpan (done by `LexhayTracer.trace`).

        :param operation_name: The traced operation (`haystack.component.run`, `haystack.pipeline.run`, ...).
        :param trace: The request's trace (None = record nothing, only forward).
        :param forwards: The spans of the multiplexed tracers.
        :param parent: The enclosing LexhaySpan.
        """
        self.operation_name = operation_name
        self.trace = trace
        self.forwards = forwards
        self.parent = parent
        self.stage: StageTrace | None = None
        self._started = time.perf_counter()
        if trace is not None and operation_name == COMPONENT_RUN:
            self.stage = StageTrace(name="", type="", start_ms=round(trace.elapsed_ms(), 1), depth=self._depth())

    def _depth(self) -> int:
        depth, span = 0, self.parent
        while span is not None:
            depth += span.stage is not None
            span = span.parent
        return depth

    def set_tag(self, key: str, value: Any) -> None:
        """Record the tag (component name / type / visits, cache hits) and forward it."""
        if self.trace is not None and key.startswith(CACHE_TAG_PREFIX):
            if isinstance(value, dict):  # a batch: {"hits": n, "misses": m}
                hits, misses = int(value.get("hits") or 0), int(value.get("misses") or 0)
            else:  # one lookup: "hit" / "miss" (or a bool)
                hits = int(value == "hit" or value is True)
                misses = 1 - hits
            self.trace.note_cache(key[len(CACHE_TAG_PREFIX):], hits=hits, misses=misses)
        if self.stage is not None:
            if key == "haystack.component.name":
                self.stage.name = str(value)
            elif key == "haystack.component.type":
                self.stage.type = str(value)
            elif key == "haystack.component.visits":
                self.stage.visit = value
        if key in CONTENT_TAGS and not haystack_tracing.tracer.is_content_tracing_enabled:
            return
        for span in self.forwards:
            span.set_tag(key, value)

    def set_content_tag(self, key: str, value: Any) -> None:
        """Keep a short summary of component inputs / outputs; forward (Haystack's content tracing decides)."""
        if self.stage is not None and isinstance(value, dict):
            if key == "haystack.component.input":
                self.stage.inputs = summarize(value, depth=0)
            elif key == "haystack.component.output":
                self.stage.outputs = summarize(value, depth=0)
                self.stage.decisions = decisions_of(self.stage.type, value)
                self._note_component_caches(value)
        for span in self.forwards:
            span.set_content_tag(key, value)

    def _note_component_caches(self, outputs: dict[str, Any]) -> None:
        """Cache hits a component reports in its `stats` output (LegalReranker: `cache_hits` / `cache_misses`)."""
        stats = outputs.get("stats")
        if self.trace is not None and isinstance(stats, dict) and "cache_hits" in stats:
            self.trace.note_cache(
                self.stage.name if self.stage else "component",
                hits=int(stats.get("cache_hits") or 0),
                misses=int(stats.get("cache_misses") or 0),
            )

    def raw_span(self) -> Any:
        """The first forwarded span's raw span (the OpenTelemetry span when exporting), else this span."""
        return self.forwards[0].raw_span() if self.forwards else self

    def get_correlation_data_for_logs(self) -> dict[str, Any]:
        """The request id, and the forwarded spans' correlation data (OpenTelemetry trace / span ids)."""
        data: dict[str, Any] = {}
        for span in self.forwards:
            data.update(span.get_correlation_data_for_logs())
        if self.trace is not None:
            data["lexhay_request_id"] = self.trace.request_id
        return data

    def close(self, error: BaseException | None) -> None:
        """End the span: the stage gets its duration (and error) and joins the trace."""
        if self.stage is None or self.trace is None:
            return
        self.stage.duration_ms = round((time.perf_counter() - self._started) * 1000, 1)
        if error is not None:
            self.stage.error = f"{type(error).__name__}: {short_text(str(error), 200)}"
        self.trace.add_stage(self.stage)


class LexhayTracer(Tracer):
    """
    Haystack's global tracer for lexhay: records stages into the current request's `PipelineTrace` and forwards
    every span to the tracers it multiplexes (OpenTelemetry, a tracer installed before it).

    Outside a request (no `request_trace` active in this context) it only forwards; in a request whose tracing
    flag is off it does nothing at all.

    ### Usage example

    ```python
    from haystack.tracing import enable_tracing
    from haystack_integrations.tracing.opentelemetry import OpenTelemetryTracer
    from opentelemetry import trace

    enable_tracing(LexhayTracer(forward_to=[OpenTelemetryTracer(trace.get_tracer("lexhay"))]))
    ```
    """

    def __init__(self, *, forward_to: list[Tracer] | None = None) -> None:
        """
        Create a LexhayTracer.

        :param forward_to: Tracers every span is forwarded to (not another LexhayTracer, not a NullTracer).
        :raises ValueError: A `forward_to` entry that is not a Haystack Tracer, or is a LexhayTracer.
        """
        forward_to = list(forward_to or [])
        for target in forward_to:
            if not isinstance(target, Tracer) or isinstance(target, LexhayTracer):
                raise ValueError(f"forward_to takes Haystack tracers other than LexhayTracer, got {target!r}")
        # a plain NullTracer does nothing; a subclass may (hayhooks' mirrors spans into its `/traces` buffer)
        self.forward_to = [t for t in forward_to if type(t) is not NullTracer]

    @contextlib.contextmanager
    def trace(
        self, operation_name: str, tags: dict[str, Any] | None = None, parent_span: Span | None = None
    ) -> Iterator[Span]:
        """Open a span: a recording one in a traced request, a forwarding one outside, a null one when off."""
        active = _TRACE.get()
        if active is False:
            yield NullSpan()
            return
        parent = parent_span if isinstance(parent_span, LexhaySpan) else _SPAN.get()
        with contextlib.ExitStack() as stack:
            forwards = []
            for index, target in enumerate(self.forward_to):
                parent_forward = parent.forwards[index] if parent is not None and index < len(parent.forwards) else None
                forwards.append(stack.enter_context(target.trace(operation_name, parent_span=parent_forward)))
            span = LexhaySpan(operation_name, active if isinstance(active, PipelineTrace) else None, forwards, parent)
            if tags:
                span.set_tags(tags)
            token = _SPAN.set(span)
            error: BaseException | None = None
            try:
                yield span
            except BaseException as exc:
                error = exc
                raise
            finally:
                _SPAN.reset(token)
                span.close(error)

    def current_span(self) -> Span | None:
        """The innermost open span of this context (None outside any)."""
        return _SPAN.get()


def otel_enabled(environ: dict[str, str] | None = None) -> bool:
    """
    Whether OpenTelemetry export is configured: `LEXHAY_OTEL` on, or `OTEL_EXPORTER_OTLP_ENDPOINT` set, in
    `environ` (a mapping of variables) or, by default, in the deployment's settings.
    """
    if environ is None:
        from pipelines.settings import current_settings  # noqa: PLC0415

        return current_settings().otel_enabled()
    flag = environ.get(OTEL_ENV, "").strip().lower()
    if flag in {"0", "false", "no", "off"}:
        return False
    return flag in {"1", "true", "yes", "on"} or bool(environ.get(OTLP_ENDPOINT_ENV, "").strip())


def opentelemetry_tracer(tracer_provider: Any = None) -> Tracer:
    """
    opentelemetry-haystack's `OpenTelemetryTracer` on `tracer_provider`.

    Without one, the globally configured OpenTelemetry SDK provider is used; if none is configured, an SDK
    `TracerProvider` (service name `OTEL_SERVICE_NAME`, default `lexhay`) exporting over OTLP/HTTP to
    `OTEL_EXPORTER_OTLP_ENDPOINT` (default `http://localhost:4318`) is created and set globally.

    :raises RuntimeError: The OpenTelemetry packages are not installed.
    """
    try:
        from haystack_integrations.tracing.opentelemetry import OpenTelemetryTracer  # noqa: PLC0415
        from opentelemetry import trace as otel_trace  # noqa: PLC0415
        from opentelemetry.sdk.trace import TracerProvider  # noqa: PLC0415
    except ImportError as exc:
        raise RuntimeError(
            "OpenTelemetry export needs opentelemetry-haystack and opentelemetry-sdk (lexhay dependencies): "
            f"{exc}"
        ) from exc
    if tracer_provider is None:
        tracer_provider = otel_trace.get_tracer_provider()
        if not isinstance(tracer_provider, TracerProvider):
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: PLC0415
            from opentelemetry.sdk.resources import Resource  # noqa: PLC0415
            from opentelemetry.sdk.trace.export import BatchSpanProcessor  # noqa: PLC0415

            resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "lexhay")})
            tracer_provider = TracerProvider(resource=resource)
            tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
            otel_trace.set_tracer_provider(tracer_provider)
            tracer_provider = otel_trace.get_tracer_provider()
    return OpenTelemetryTracer(tracer_provider.get_tracer("lexhay"))


def _tracer_chain(tracer: Tracer, depth: int = 0) -> Iterator[Tracer]:
    """
    `tracer` and every tracer it hands spans to: a LexhayTracer's `forward_to`, Haystack's `ProxyTracer`
    (`actual_tracer`) and wrappers that keep the tracer they wrap in `_delegate` (hayhooks' live-buffer proxy).
    """
    yield tracer
    if depth >= 8:
        return
    inner: list[Any] = list(tracer.forward_to) if isinstance(tracer, LexhayTracer) else []
    for attribute in ("actual_tracer", "_delegate"):
        wrapped = getattr(tracer, attribute, None)
        if isinstance(wrapped, Tracer) and wrapped is not tracer:
            inner.append(wrapped)
    for wrapped in inner:
        yield from _tracer_chain(wrapped, depth + 1)


def _is_opentelemetry(tracer: Tracer) -> bool:
    """Whether `tracer` is opentelemetry-haystack's `OpenTelemetryTracer` (whichever package provided it)."""
    return type(tracer).__name__ == "OpenTelemetryTracer"


def install_tracer(*, forward_to: list[Tracer] | None = None) -> LexhayTracer:
    """
    Make a `LexhayTracer` Haystack's global tracer (idempotent) and return it.

    The first install forwards to the tracer already installed, whatever it is (hayhooks' tracer that feeds its
    `/traces` view, an OpenTelemetry tracer set up by hayhooks or the application, ...), and adds an
    OpenTelemetry tracer of its own only when `otel_enabled()` and no OpenTelemetry tracer is installed yet, so a
    span is never exported twice. A LexhayTracer already installed, also one that another tracer wraps (hayhooks
    wraps the global tracer when it starts), is returned unchanged, unless `forward_to` is given: it then replaces
    the tracers it forwards to (tests pass an in-memory OpenTelemetry exporter's tracer).

    :param forward_to: Tracers to forward every span to.
    """
    with _INSTALL_LOCK:
        current = haystack_tracing.tracer.actual_tracer
        installed = next((t for t in _tracer_chain(current) if isinstance(t, LexhayTracer)), None)
        if installed is not None:
            if forward_to is not None:
                installed.forward_to = LexhayTracer(forward_to=forward_to).forward_to
            return installed
        if forward_to is None:
            forward_to = [] if type(current) is NullTracer else [current]
            if otel_enabled():
                if any(_is_opentelemetry(t) for t in _tracer_chain(current)):
                    logger.info("OpenTelemetry export: spans go to the OpenTelemetry tracer already installed")
                else:
                    forward_to.append(opentelemetry_tracer())
        tracer = LexhayTracer(forward_to=forward_to)
        haystack_tracing.enable_tracing(tracer)
        return tracer
