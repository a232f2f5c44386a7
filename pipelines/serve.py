"""
HTTP serving of lexhay with hayhooks: the shared engine of the `hayhooks/` pipeline wrappers and `lexhay serve`.

One server process holds one `LexHay` engine per store (the embedded Qdrant Edge shard opens in one process only),
shared by the `index`, `retrieve`, `ask` and `lexhay` wrappers through `get_engine()`. Reads (retrieve, ask) run
concurrently up to `LEXHAY_SERVE_READERS` at a time; indexing runs alone (a shared / exclusive lock). A request that
cannot get its turn within `LEXHAY_SERVE_QUEUE_TIMEOUT` seconds gets a 503 with `Retry-After`.

Bad input is a 4xx with a clear message (`http_errors`), never a traceback: 422 for invalid values (empty or too
long questions, malformed filters, unknown collections or modes, unsupported request options), 404 for missing
paths, 403 for paths outside the allowed roots, 413 / 415 for oversized / unsupported uploads; 503 when the store
or the engine is unavailable. An LLM that is down or slow is not an error: the answer stage falls back to the
extractive answer and `fallbacks.answer` says so.

Environment:

- `LEXHAY_STORE`, `LEXHAY_EMBEDDER`, `LEXHAY_QDRANT_URL`, `LEXHAY_LLM*`: the engine (see `pipelines.settings`,
  `components.generators.llm_backends`).
- `LEXHAY_SERVE_READERS` (default 4): concurrent retrieve / ask calls; 1 serializes every call.
- `LEXHAY_SERVE_QUEUE_TIMEOUT` (default 120): seconds a request may wait for its turn before a 503.
- `LEXHAY_MAX_QUESTION_CHARS` (default 4000): longer questions get a 422.
- `LEXHAY_MAX_UPLOAD_MB` (default 50): larger uploaded files get a 413.
- `LEXHAY_INDEX_ROOTS`: folders (`os.pathsep`-separated) under which the `index` endpoint may read server-side
  `paths`; default the server's working directory. Anything else is a 403.
"""

import inspect
import os
import queue
import re
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from haystack import Document, logging
from haystack.dataclasses import ChatMessage, StreamingChunk

from components.builders.access_filter import check_filters
from components.validators.citation_verifier import UNVERIFIED_MARK
from components.validators.meta_parser import DELIMITER_RE, META_LINE_RE  # the META block, as MetaParser reads it
from pipelines.sdk import INDEXED_SUFFIXES, LexHay, expand_paths
from pipelines.settings import Settings, setup_environment

logger = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 1416
CHAT_MODEL = "lexhay"
HAYHOOKS_DIR = Path(__file__).resolve().parents[1] / "hayhooks"
# deployed one after the other (parallel startup deploy races in hayhooks 2.1); `ask` first: it warms the engine
PIPELINE_NAMES = ("ask", "lexhay", "retrieve", "index")
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")

READERS_ENV = "LEXHAY_SERVE_READERS"
QUEUE_TIMEOUT_ENV = "LEXHAY_SERVE_QUEUE_TIMEOUT"
MAX_QUESTION_ENV = "LEXHAY_MAX_QUESTION_CHARS"
MAX_UPLOAD_ENV = "LEXHAY_MAX_UPLOAD_MB"
INDEX_ROOTS_ENV = "LEXHAY_INDEX_ROOTS"
DEFAULT_READERS = 4
DEFAULT_QUEUE_TIMEOUT = 120.0
DEFAULT_MAX_QUESTION_CHARS = 4000
DEFAULT_MAX_UPLOAD_MB = 50.0
MAX_CARRYOVER_IDS = 100
MAX_HISTORY_MESSAGES = 20
MAX_HISTORY_CHARS = 8000
STREAM_CHUNK_CHARS = 48
STREAM_RESULT_TIMEOUT = 600.0
REVISED_ANSWER = "Respuesta revisada:"


class EngineBusy(RuntimeError):
    """No turn on the engine within the queue timeout (answered 503 with Retry-After)."""


def _env_number(name: str, default: float, minimum: float) -> float:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise ValueError(f"{name} must be a number >= {minimum:g}, got {raw!r}")
    return value


def max_question_chars() -> int:
    """The longest question accepted (`LEXHAY_MAX_QUESTION_CHARS`, default 4000)."""
    return int(_env_number(MAX_QUESTION_ENV, DEFAULT_MAX_QUESTION_CHARS, 1))


class SharedExclusiveLock:
    """
    Up to `max_shared` holders at once, or one exclusive holder; a waiting exclusive holder goes before new shared
    ones. Acquisitions give up after a timeout. Not owner-bound: any thread may release.
    """

    def __init__(self, max_shared: int) -> None:
        if max_shared < 1:
            raise ValueError(f"max_shared must be >= 1, got {max_shared}")
        self.max_shared = max_shared
        self._cond = threading.Condition()
        self._shared = 0
        self._exclusive = False
        self._exclusive_waiting = 0

    def _wait(self, ready: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not ready():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self._cond.wait(remaining)
        return True

    def _shared_free(self) -> bool:
        return not self._exclusive and not self._exclusive_waiting and self._shared < self.max_shared

    def acquire_shared(self, timeout: float) -> bool:
        """Take a shared slot; False when none was free within `timeout` seconds."""
        with self._cond:
            if not self._wait(self._shared_free, timeout):
                return False
            self._shared += 1
            return True

    def release_shared(self) -> None:
        with self._cond:
            self._shared -= 1
            self._cond.notify_all()

    def acquire_exclusive(self, timeout: float) -> bool:
        """Take the lock alone; False when it was not free within `timeout` seconds."""
        with self._cond:
            self._exclusive_waiting += 1
            try:
                if not self._wait(lambda: not self._exclusive and self._shared == 0, timeout):
                    return False
                self._exclusive = True
                return True
            finally:
                self._exclusive_waiting -= 1
                self._cond.notify_all()

    def release_exclusive(self) -> None:
        with self._cond:
            self._exclusive = False
            self._cond.notify_all()


class Engine:
    """The engine of one store in this server process, with its shared / exclusive access lock."""

    def __init__(self, lex: LexHay, *, readers: int, queue_timeout: float) -> None:
        self.lex = lex
        self.queue_timeout = queue_timeout
        self.lock = SharedExclusiveLock(readers)

    @contextmanager
    def reading(self) -> Iterator[LexHay]:
        """A turn for a retrieve / ask call (shared with other reads)."""
        if not self.lock.acquire_shared(self.queue_timeout):
            raise EngineBusy(f"the server is busy: no turn within {self.queue_timeout:g} s, retry later")
        try:
            yield self.lex
        finally:
            self.lock.release_shared()

    @contextmanager
    def writing(self) -> Iterator[LexHay]:
        """A turn for an index call (alone)."""
        if not self.lock.acquire_exclusive(self.queue_timeout):
            raise EngineBusy(f"the server is busy: no turn to index within {self.queue_timeout:g} s, retry later")
        try:
            yield self.lex
        finally:
            self.lock.release_exclusive()


def _check_store_free(settings: Settings) -> None:
    """
    Opens an existing embedded store once, before any model loads: a store held by another process fails the start
    at once, with the store's own message.

    :raises DocumentStoreError: The store is held by another process.
    """
    from components.document_stores.edge_document_store import SHARD_DIRNAME, EdgeDocumentStore  # noqa: PLC0415

    if settings.qdrant_url or not (Path(settings.store_path) / SHARD_DIRNAME / "edge_config.json").exists():
        return
    probe = EdgeDocumentStore(path=settings.store_path)
    try:
        probe.count_documents()
    finally:
        probe.close()


_ENGINES: dict[str, Engine] = {}
_ENGINES_LOCK = threading.Lock()


def get_engine(store_path: str | None = None) -> Engine:
    """
    The engine of this process for `store_path` (default `LEXHAY_STORE`), created and warmed up on first use.

    Every wrapper of a server calls this and gets the same engine: one store, one set of loaded models.

    :raises DocumentStoreError: The store is held by another process.
    """
    setup_environment()
    settings = Settings.load(store_path=store_path)
    key = settings.qdrant_url or str(Path(settings.store_path).resolve())
    with _ENGINES_LOCK:
        engine = _ENGINES.get(key)
        if engine is None:
            _check_store_free(settings)
            lex = LexHay(settings=settings)  # its lazy pipeline loading is thread-safe
            for name in ("retrieval", "query"):  # models loaded before the first request, not during it
                lex.pipeline(name)
            readers = int(_env_number(READERS_ENV, DEFAULT_READERS, 1))
            queue_timeout = _env_number(QUEUE_TIMEOUT_ENV, DEFAULT_QUEUE_TIMEOUT, 0)
            engine = Engine(lex, readers=readers, queue_timeout=queue_timeout)
            _ENGINES[key] = engine
            logger.info("lexhay engine ready: {where} ({readers} concurrent reads)", where=key, readers=readers)
    return engine


def close_engines() -> None:
    """Release every engine's store (server shutdown)."""
    with _ENGINES_LOCK:
        for engine in _ENGINES.values():
            engine.lex.close()
        _ENGINES.clear()


# ---------------------------------------------------------------------------------------------------------------
# Request checks and error mapping
# ---------------------------------------------------------------------------------------------------------------


def http_error(status: int, detail: Any, headers: dict[str, str] | None = None) -> Exception:
    """A FastAPI HTTPException (imported lazily: the engine part of this module needs no web stack)."""
    from fastapi import HTTPException  # noqa: PLC0415

    return HTTPException(status_code=status, detail=detail, headers=headers)


def _root_cause(error: BaseException) -> BaseException:
    """The original error under Haystack's PipelineRuntimeError wrappers."""
    seen = set()
    while error.__cause__ is not None and id(error) not in seen:
        seen.add(id(error))
        error = error.__cause__
    return error


def error_response(error: BaseException) -> tuple[int, str]:
    """HTTP status and message for an error raised while serving a request."""
    from haystack.document_stores.errors import DocumentStoreError  # noqa: PLC0415
    from haystack.errors import FilterError  # noqa: PLC0415

    cause = _root_cause(error)
    message = str(cause) or type(cause).__name__
    if isinstance(error, EngineBusy):
        return 503, message
    if isinstance(cause, FilterError):
        return 422, f"invalid filters: {message}"
    if isinstance(cause, FileNotFoundError):
        return 404, message
    if isinstance(cause, ValueError):
        return 422, message
    if isinstance(cause, DocumentStoreError):
        return 503, f"document store unavailable: {message}"
    if isinstance(cause, (RuntimeError, TimeoutError, OSError)):
        return 503, f"{type(cause).__name__}: {message}"
    return 500, f"internal error ({type(cause).__name__}); see the server log"


@contextmanager
def http_errors() -> Iterator[None]:
    """Turns the engine's errors into HTTP errors with a clear message (see `error_response`)."""
    from fastapi import HTTPException  # noqa: PLC0415

    try:
        yield
    except HTTPException:
        raise
    except Exception as error:  # noqa: BLE001 - every failure becomes a clear HTTP error
        status, message = error_response(error)
        if status >= 500:
            logger.exception("request failed: {error}", error=error)
        headers = {"Retry-After": "5"} if status == 503 else None
        raise http_error(status, message, headers) from error


def checked_question(question: Any) -> str:
    """The question, stripped; 422 for a non-string, empty or too long question."""
    if not isinstance(question, str) or not question.strip():
        raise http_error(422, "question must be a non-empty string")
    question = question.strip()
    limit = max_question_chars()
    if len(question) > limit:
        raise http_error(422, f"question too long: {len(question)} characters, at most {limit} ({MAX_QUESTION_ENV})")
    return question


def checked_ids(ids: Any) -> list[str] | None:
    """`previous_chunk_ids`: None, or a list of at most 100 non-empty strings (422 otherwise)."""
    if ids is None:
        return None
    if not isinstance(ids, list) or not all(isinstance(i, str) and i.strip() for i in ids):
        raise http_error(422, "previous_chunk_ids must be a list of chunk id strings")
    if len(ids) > MAX_CARRYOVER_IDS:
        raise http_error(422, f"previous_chunk_ids holds {len(ids)} ids, at most {MAX_CARRYOVER_IDS}")
    return [i.strip() for i in ids]


def checked_filters(filters: Any) -> dict[str, Any] | None:
    """Haystack metadata filters: None or a well-formed filter (422 otherwise), checked before any model runs."""
    try:
        return check_filters(filters)
    except ValueError as error:
        raise http_error(422, str(error)) from None


def checked_collections(engine: Engine, collections: Any) -> list[str] | None:
    """Collection names: None or known ones (422 for an unknown collection)."""
    if collections is None:
        return None
    known = engine.lex.settings.collections
    if not isinstance(collections, list) or not collections or not all(isinstance(c, str) for c in collections):
        raise http_error(422, f"collections must be a non-empty list of names among {sorted(known)}")
    unknown = [c for c in collections if c not in known]
    if unknown:
        raise http_error(422, f"unknown collection(s) {unknown}; configured: {sorted(known)}")
    return collections


def engine_kwargs(method: Callable[..., Any], **optional: Any) -> dict[str, Any]:
    """
    The optional per-request arguments (`access`, `options`, `scope`, ...) that were given, for an engine method;
    the engine validates their values (a ValueError there is a 422).

    An argument the engine does not take is a 422, never silently dropped: ignoring an access restriction would
    widen what the caller sees.
    """
    given = {k: v for k, v in optional.items() if v is not None}
    accepted = inspect.signature(method).parameters
    unsupported = sorted(k for k in given if k not in accepted)
    if unsupported:
        raise http_error(422, f"this lexhay version does not support {unsupported} on {method.__name__}")
    return given


_MAKERS: dict[str, Callable[[str], ChatMessage]] = {
    "user": ChatMessage.from_user,
    "assistant": ChatMessage.from_assistant,
    "system": ChatMessage.from_system,
}


def message_text(content: Any) -> str:
    """Text of an OpenAI message content: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def to_history(messages: Any) -> list[ChatMessage] | None:
    """
    Conversation history as ChatMessages from `{"role", "content"}` dicts: user and assistant turns, the last
    `MAX_HISTORY_MESSAGES` kept, each cut to `MAX_HISTORY_CHARS`. System and tool messages are not history (the
    answer stage has its own system prompt). 422 for anything but a list of such dicts.
    """
    if messages is None:
        return None
    if not isinstance(messages, list) or not all(isinstance(m, dict) and "role" in m for m in messages):
        raise http_error(422, 'history must be a list of {"role", "content"} messages')
    turns = [m for m in messages if m.get("role") in ("user", "assistant")]
    history = []
    for m in turns[-MAX_HISTORY_MESSAGES:]:
        text = message_text(m.get("content")).strip()
        if text:
            history.append(_MAKERS[m["role"]](text[:MAX_HISTORY_CHARS]))
    return history or None


def document_row(doc: Document) -> dict[str, Any]:
    """A retrieved parent block as JSON: id, score, content, meta."""
    return {"id": doc.id, "score": None if doc.score is None else float(doc.score), "content": doc.content,
            "meta": dict(doc.meta)}


# ---------------------------------------------------------------------------------------------------------------
# Indexing uploads and server-side paths
# ---------------------------------------------------------------------------------------------------------------


def index_roots() -> list[Path]:
    """Folders the `index` endpoint may read `paths` from (`LEXHAY_INDEX_ROOTS`, default the working directory)."""
    raw = os.environ.get(INDEX_ROOTS_ENV)
    roots = [r for r in raw.split(os.pathsep) if r.strip()] if raw else [os.getcwd()]
    return [Path(r).resolve() for r in roots]


def checked_paths(paths: list[str]) -> list[Path]:
    """Server-side paths to index: 403 outside the allowed roots, 404 when missing (nothing is indexed then)."""
    roots = index_roots()
    resolved, outside, missing = [], [], []
    for raw in paths:
        if not isinstance(raw, str) or not raw.strip():
            raise http_error(422, "paths must be non-empty strings")
        path = Path(raw.strip()).resolve()
        if not any(path == root or root in path.parents for root in roots):
            outside.append(raw)
        elif not path.exists():
            missing.append(raw)
        resolved.append(path)
    if outside:
        raise http_error(403, f"paths outside the folders this server may index ({INDEX_ROOTS_ENV}): {outside}")
    if missing:
        raise http_error(404, f"paths not found: {missing}")
    return resolved


def save_uploads(uploads: list[Any], folder: Path) -> dict[Path, str]:
    """
    Writes uploaded files (FastAPI `UploadFile`s) under `folder`, each with its own name, and returns saved path ->
    the name the client gave. 415 for an unsupported file type, 413 for a file over `LEXHAY_MAX_UPLOAD_MB`.
    """
    limit = int(_env_number(MAX_UPLOAD_ENV, DEFAULT_MAX_UPLOAD_MB, 0) * 1024 * 1024)
    saved: dict[Path, str] = {}
    for n, upload in enumerate(uploads):
        name = Path(upload.filename or "").name
        if not name:
            raise http_error(422, "every uploaded file needs a file name (its suffix gives its type)")
        if Path(name).suffix.lower() not in INDEXED_SUFFIXES:
            raise http_error(415, f"{name}: unsupported file type; supported: {', '.join(INDEXED_SUFFIXES)}")
        content = upload.file.read(limit + 1)
        if len(content) > limit:
            raise http_error(413, f"{name}: larger than {limit // (1024 * 1024)} MB ({MAX_UPLOAD_ENV})")
        target = folder / str(n) / name  # one folder per file: the file name (the law id without front matter) stays
        target.parent.mkdir(parents=True)
        target.write_bytes(content)
        saved[target] = name
    return saved


def index_files(engine: Engine, uploads: list[Any] | None, paths: list[str] | None, **kwargs: Any) -> dict[str, Any]:
    """
    Indexes uploaded files and server-side paths; the report as JSON, sources named as the client named them.

    Files that fail are reported in `errors` and the others are indexed; when nothing could be indexed the answer
    is a 422 carrying the report. What the store held before is never lost (the SDK prunes a law's stale chunks
    only after its new version is written).
    """
    uploads = [u for u in uploads or [] if u is not None]
    if not uploads and not paths:
        raise http_error(422, "give files to upload (multipart field `files`) and/or server-side `paths`")
    resolved = checked_paths(paths) if paths else []
    lex = engine.lex
    extra = engine_kwargs(lex.index, **kwargs)
    with tempfile.TemporaryDirectory(prefix="lexhay-upload-") as tmp:
        names = save_uploads(uploads, Path(tmp))
        sources = [*names, *resolved]
        if not expand_paths(sources):
            raise http_error(422, f"no indexable files ({', '.join(INDEXED_SUFFIXES)}) in {paths}")
        with http_errors(), engine.writing():
            report = lex.index(sources, **extra)
        errors = [{**e, "source": names.get(Path(e.get("source", "")), e.get("source"))} for e in report.errors]
    result = {
        "files": report.files, "articles": report.articles, "parents": report.parents, "children": report.children,
        "written": report.written, "pruned": report.pruned, "seconds": round(report.seconds, 3), "errors": errors,
    }
    if errors and report.written == 0:
        raise http_error(422, {"message": "no file could be indexed", **result})
    return result


# ---------------------------------------------------------------------------------------------------------------
# OpenAI-compatible chat
# ---------------------------------------------------------------------------------------------------------------


def chat_inputs(engine: Engine, messages: list[dict[str, Any]], body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """
    The question and `LexHay.ask` arguments of a chat completion request.

    The last message must be the user's question; earlier user / assistant messages are the history. Extra body
    fields: `previous_chunk_ids` (the `lexhay.context_chunk_ids` of the previous answer: carryover), `filters`,
    `access`, `options`. Other OpenAI fields (temperature, max_tokens, ...) are ignored.
    """
    if not messages or not isinstance(messages[-1], dict) or messages[-1].get("role") != "user":
        raise http_error(422, "the last message must be the user's question")
    question = checked_question(message_text(messages[-1].get("content")))
    kwargs: dict[str, Any] = {
        "history": to_history(messages[:-1]),
        "previous_chunk_ids": checked_ids(body.get("previous_chunk_ids")),
        "filters": checked_filters(body.get("filters")),
    }
    kwargs.update(engine_kwargs(engine.lex.ask, access=body.get("access"), options=body.get("options")))
    return question, kwargs


def answer_extras(result: dict[str, Any]) -> dict[str, Any]:
    """The `lexhay` field of a chat completion: what a client needs besides the text (carryover ids first)."""
    keys = ("context_chunk_ids", "citations", "route", "need", "fallbacks", "unverified_citations", "flags")
    return {k: result.get(k) for k in keys}


def _completion(resp_id: str, model: str, created: int, *, content: str | None, finish: str | None,
                extras: dict[str, Any] | None, chunk: bool) -> Any:
    from fastapi_openai_compat import ChatCompletion, Choice, Message  # noqa: PLC0415

    message = Message(role="assistant", content=content)
    choice = Choice(index=0, delta=message, finish_reason=finish) if chunk else Choice(
        index=0, message=message, finish_reason=finish)
    fields = {"lexhay": extras} if extras is not None else {}
    return ChatCompletion(id=resp_id, object="chat.completion.chunk" if chunk else "chat.completion",
                          created=created, model=model, choices=[choice], **fields)


class AnswerTokenFilter:
    """
    Streams an answer stage's reply token by token without its metadata: stops at the `===META===` line and holds
    back trailing `USED|` / `DROP|` / `NEED|` lines (MetaParser's format); a line that might become one of those is
    held until it is complete.
    """

    _META_KEYS = ("USED", "DROP", "NEED")

    def __init__(self) -> None:
        self.pending = ""  # the start of the current line, held
        self.line_open = False  # part of the current line was already emitted: it is answer text
        self.held_meta: list[str] = []
        self.stopped = False
        self.emitted: list[str] = []

    def _maybe_meta(self, partial: str) -> bool:
        start = partial.lstrip(" \t*_`-").upper()
        if not start or start[0] == "=":
            return True
        return any(k.startswith(start[:4]) or start.startswith(k) for k in self._META_KEYS)

    def feed(self, text: str) -> str:
        """The part of the reply that can be shown now."""
        if self.stopped or not text:
            return ""
        out: list[str] = []
        self.pending += text
        while not self.stopped:
            newline = self.pending.find("\n")
            if newline < 0:
                break
            line, self.pending = self.pending[: newline + 1], self.pending[newline + 1 :]
            if self.line_open:
                out.append(line)
            elif DELIMITER_RE.match(line.strip()):
                self.stopped = True
            elif META_LINE_RE.match(line.strip()):
                self.held_meta.append(line)
            else:
                out.extend([*self.held_meta, line])
                self.held_meta.clear()
            self.line_open = False
        if not self.stopped and self.pending and (self.line_open or not self._maybe_meta(self.pending)):
            out.extend([*self.held_meta, self.pending])
            self.held_meta.clear()
            self.pending, self.line_open = "", True
        emitted = "".join(out)
        self.emitted.append(emitted)
        return emitted

    @property
    def text(self) -> str:
        return "".join(self.emitted)


def text_pieces(text: str, size: int = STREAM_CHUNK_CHARS) -> list[str]:
    """`text` cut into pieces of about `size` characters at whitespace; joined they give `text` back."""
    pieces, current = [], ""
    for token in re.findall(r"\S+\s*|\s+", text):
        current += token
        if len(current) >= size:
            pieces.append(current)
            current = ""
    if current:
        pieces.append(current)
    return pieces


def _without_marks(text: str) -> str:
    return " ".join(text.replace(UNVERIFIED_MARK, "").split())


def supports_streaming(lex: LexHay) -> bool:
    """Whether `LexHay.ask` takes a `streaming_callback` (LLM tokens streamed as they are generated)."""
    return "streaming_callback" in inspect.signature(lex.ask).parameters


def stream_answer(engine: Engine, question: str, kwargs: dict[str, Any], model: str) -> Generator[Any, None, None]:
    """
    Runs `LexHay.ask` in a worker thread now and returns the SSE chunks of its answer.

    LLM tokens are streamed as they come when the engine supports a streaming callback (without the META block);
    otherwise (the extractive answer, or an engine without the callback) the finished answer is streamed in pieces.
    The last chunk carries `finish_reason="stop"` and the `lexhay` field (carryover ids, citations, the verified
    `answer`). Errors after the stream started end it with an error message and `lexhay.error`.

    The turn on the engine is taken before returning (a busy server answers 503, not a broken stream) and released
    by the worker, whether or not the client reads the stream to the end.
    """
    if not engine.lock.acquire_shared(engine.queue_timeout):
        raise http_error(503, f"the server is busy: no turn within {engine.queue_timeout:g} s, retry later",
                         {"Retry-After": "5"})
    events: queue.Queue[tuple[str, Any]] = queue.Queue()
    tokens = AnswerTokenFilter()
    call = dict(kwargs)
    if supports_streaming(engine.lex):
        call["streaming_callback"] = lambda chunk: events.put(("token", chunk))

    def work() -> None:
        try:
            events.put(("done", engine.lex.ask(question, **call)))
        except Exception as error:  # noqa: BLE001 - reported to the client in the stream
            events.put(("error", error))
        finally:
            engine.lock.release_shared()

    threading.Thread(target=work, name="lexhay-chat-stream", daemon=True).start()
    resp_id, created = f"lexhay-{uuid.uuid4().hex}", int(time.time())

    def chunk(content: str | None, finish: str | None = None, extras: dict[str, Any] | None = None) -> Any:
        return _completion(resp_id, model, created, content=content, finish=finish, extras=extras, chunk=True)

    def generate() -> Generator[Any, None, None]:
        yield chunk("")
        while True:
            try:
                kind, value = events.get(timeout=STREAM_RESULT_TIMEOUT)
            except queue.Empty:
                kind, value = "error", TimeoutError(f"no answer within {STREAM_RESULT_TIMEOUT:g} s")
            if kind == "token":
                text = tokens.feed(value.content if isinstance(value, StreamingChunk) else str(value or ""))
                if text:
                    yield chunk(text)
                continue
            if kind == "error":
                status, message = error_response(value)
                logger.warning("chat stream failed: {error}", error=value)
                yield chunk(f"Error {status}: {message}", "stop", {"error": {"status": status, "message": message}})
                return
            answer = value["answer"]
            shown = tokens.text
            if not shown.strip():
                for piece in text_pieces(answer):
                    yield chunk(piece)
            elif _without_marks(answer) == _without_marks(shown):  # the verifier may have marked citations since
                unverified = ", ".join(u.get("text", "") for u in value.get("unverified_citations") or [])
                if unverified:
                    yield chunk(f"\n\n[{UNVERIFIED_MARK}: {unverified}]")
            else:  # the answer was generated again after these tokens (NEED retry): the final one follows
                yield chunk(f"\n\n{REVISED_ANSWER}\n\n")
                for piece in text_pieces(answer):
                    yield chunk(piece)
            yield chunk(None, "stop", {**answer_extras(value), "answer": answer})
            return

    return generate()


def chat_completion(model: str, messages: list[dict[str, Any]], body: dict[str, Any]) -> Any:
    """
    An OpenAI-compatible chat completion answered by `LexHay.ask` (the `run_chat_completion` of `ask` / `lexhay`).

    Non-streaming: a `ChatCompletion` whose message is the answer and whose extra field `lexhay` holds
    `context_chunk_ids` (send them back as `previous_chunk_ids` on the next turn), `citations`, `route`, `need`,
    `fallbacks` and `unverified_citations`. Streaming (`"stream": true`): see `stream_answer`.
    """
    engine = get_engine()
    with http_errors():
        question, kwargs = chat_inputs(engine, messages, body)
        if body.get("stream"):
            return stream_answer(engine, question, kwargs, model)
        with engine.reading() as lex:
            result = lex.ask(question, **kwargs)
    return _completion(f"lexhay-{uuid.uuid4().hex}", model, int(time.time()), content=result["answer"],
                       finish="stop", extras=answer_extras(result), chunk=False)


# ---------------------------------------------------------------------------------------------------------------
# The server
# ---------------------------------------------------------------------------------------------------------------

# hayhooks routes that deploy or remove pipelines at run time (they accept Python code): not on a lexhay server
_RUNTIME_DEPLOY_PATHS = ("/deploy-yaml", "/deploy_files", "/undeploy/{pipeline_name}")


def create_app(*, store: str | None = None, pipelines_dir: str | Path | None = None) -> Any:
    """
    The hayhooks FastAPI app serving lexhay: `index`, `retrieve`, `ask` (`/{name}/run`) and the OpenAI-compatible
    `/v1/chat/completions` + `/v1/models` (models `ask` and `lexhay`), deployed one after the other.

    The run-time deploy / undeploy routes of hayhooks are removed: this server runs only the lexhay pipelines.

    :param store: Store folder (sets `LEXHAY_STORE` for the wrappers); default `LEXHAY_STORE` or `./.lexhay`.
    :param pipelines_dir: The wrappers' folder (default the repository's `hayhooks/`, or `LEXHAY_HAYHOOKS_DIR`).
    :raises RuntimeError: A pipeline could not be deployed (its error says why, e.g. a store held by another process).
    """
    setup_environment()
    if store:
        os.environ["LEXHAY_STORE"] = str(store)
    os.environ.setdefault("HAYSTACK_DESERIALIZATION_ALLOWLIST", "components.*,pipelines.*")
    folder = Path(pipelines_dir or os.environ.get("LEXHAY_HAYHOOKS_DIR") or HAYHOOKS_DIR)
    from hayhooks.server.app import create_app as hayhooks_app  # noqa: PLC0415
    from hayhooks.server.utils.deploy_utils import (  # noqa: PLC0415
        deploy_pipeline_files,
        read_pipeline_files_from_dir,
        rebuild_openapi,
    )
    from hayhooks.settings import settings  # noqa: PLC0415

    from hayhooks.server.routers import deploy_router, undeploy_router  # noqa: PLC0415

    settings.pipelines_dir = ""  # the lifespan deploys nothing: the pipelines are deployed below, sequentially
    settings.show_tracebacks = False
    app = hayhooks_app()

    def runtime_deploy(route: Any) -> bool:  # FastAPI >= 0.16x keeps included routers as one route each
        included = getattr(route, "original_router", None)
        return any(included is r for r in (deploy_router, undeploy_router)) or (
            getattr(route, "path", None) in _RUNTIME_DEPLOY_PATHS)

    app.router.routes[:] = [r for r in app.router.routes if not runtime_deploy(r)]
    if hasattr(app.router, "_mark_routes_changed"):
        app.router._mark_routes_changed()
    for name in PIPELINE_NAMES:
        files = read_pipeline_files_from_dir(folder / name)
        if "pipeline_wrapper.py" not in files:
            raise RuntimeError(f"{folder / name}/pipeline_wrapper.py not found")
        try:
            deploy_pipeline_files(pipeline_name=name, files=files, app=app, save_files=False)
        except Exception as error:
            raise RuntimeError(f"cannot deploy the {name!r} pipeline: {_root_cause(error)}") from error
    rebuild_openapi(app)
    return app


def serve(*, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, store: str | None = None,
          pipelines_dir: str | Path | None = None) -> None:
    """
    Start the lexhay HTTP server (blocks until stopped). Loopback by default: the API has no authentication.

    :raises RuntimeError: The pipelines could not be deployed.
    """
    if not 0 < port < 65536:
        raise ValueError(f"port must be 1-65535, got {port}")
    if host not in LOOPBACK_HOSTS:
        logger.warning("lexhay serve on {host}: the API has no authentication; put it behind a gateway", host=host)
    from haystack.document_stores.errors import DocumentStoreError  # noqa: PLC0415

    try:
        _check_store_free(Settings.load(store_path=store))  # held by another process: fail before loading anything
    except DocumentStoreError as error:
        raise RuntimeError(str(error)) from error
    app = create_app(store=store, pipelines_dir=pipelines_dir)
    from hayhooks.server.app import run_app  # noqa: PLC0415

    try:
        run_app(app, host=host, port=port)
    finally:
        close_engines()
