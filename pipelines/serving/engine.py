"""
The engine of a server process: one `LexHay` per store, shared by every hayhooks wrapper, with a shared /
exclusive lock (reads run concurrently up to `LEXHAY_SERVE_READERS`, indexing runs alone). A request that cannot
get its turn within `LEXHAY_SERVE_QUEUE_TIMEOUT` seconds gets `EngineBusy` (a 503 with `Retry-After`).
"""

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from haystack import logging

from pipelines.sdk import LexHay
from pipelines.serving.config import server_settings
from pipelines.settings import Settings, setup_environment

logger = logging.getLogger(__name__)


class EngineBusy(RuntimeError):
    """No turn on the engine within the queue timeout (answered 503 with Retry-After)."""


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

    def acquire_reading(self) -> None:
        """Take a read turn (release with `lock.release_shared()`); `EngineBusy` when none came in time."""
        if not self.lock.acquire_shared(self.queue_timeout):
            raise EngineBusy(f"the server is busy: no turn within {self.queue_timeout:g} s, retry later")

    @contextmanager
    def reading(self) -> Iterator[LexHay]:
        """A turn for a retrieve / ask call (shared with other reads)."""
        self.acquire_reading()
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


def check_store_free(settings: Settings) -> None:
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
            check_store_free(settings)
            serving = server_settings()
            lex = LexHay(settings=settings)  # its lazy pipeline loading is thread-safe
            lex.max_question_chars = serving.max_question_chars
            for name in ("retrieval", "query"):  # models loaded before the first request, not during it
                lex.pipeline(name)
            preloaded = lex.preload_hits()  # new questions then read no payload for the hits they rank
            engine = Engine(lex, readers=serving.serve_readers, queue_timeout=serving.serve_queue_timeout)
            _ENGINES[key] = engine
            logger.info("lexhay engine ready: {where} ({readers} concurrent reads, {preloaded} chunks in the "
                        "light-hit table)", where=key, readers=serving.serve_readers, preloaded=preloaded)
    return engine


def close_engines() -> None:
    """Release every engine's store (server shutdown)."""
    with _ENGINES_LOCK:
        for engine in _ENGINES.values():
            engine.lex.close()
        _ENGINES.clear()
