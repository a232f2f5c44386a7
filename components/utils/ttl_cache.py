"""A small bounded, thread-safe in-memory cache with per-entry time-to-live and LRU eviction (cachetools inside)."""

import contextlib
import contextvars
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from typing import Any

import cachetools

_MISSING = object()
# The cache partition of the request running in this context (its tenant; "" = anonymous / the public corpus).
# Caches shared by a process (query embeddings, reranker scores and block vectors) put it in their keys, so one
# tenant never gets, nor can time, an entry another tenant's request stored.
_PARTITION: contextvars.ContextVar[str] = contextvars.ContextVar("lexhay_cache_partition", default="")


def cache_partition() -> str:
    """The cache partition of the current request (see `partitioned`); "" outside one."""
    return _PARTITION.get()


@contextlib.contextmanager
def partitioned(name: str | None) -> Iterator[str]:
    """Run a request's cache lookups in partition `name` (a tenant id; None or "" = the public partition)."""
    token = _PARTITION.set(name or "")
    try:
        yield name or ""
    finally:
        _PARTITION.reset(token)


class TTLCache:
    """
    Bounded in-memory cache: entries expire `ttl` seconds after they were stored, and past `max_entries` the least
    recently used entry is evicted. Every method is thread-safe; `hits` / `misses` count `get` outcomes.

    Storage and eviction are `cachetools.TTLCache`'s (a linked list in expiry order plus an LRU order): an insert
    into a full cache drops the expired entries at the head of the expiry list, then the least recently used one,
    without scanning the whole cache. This class adds the lock, the hit / miss counters and `stats()`.

    lexhay caches reranker scores (5 min), query embeddings (1 h) and identical requests (30 s) with it.

    ### Usage example

    ```python
    from components.utils.ttl_cache import TTLCache

    scores = TTLCache(max_entries=10_000, ttl=300)
    scores.set(("vacaciones", "chunk-id:hash"), 0.91)
    scores.get(("vacaciones", "chunk-id:hash"))  # 0.91 for the next 5 minutes, then None
    scores.stats()  # {"entries": 1, "hits": 1, "misses": 0, "hit_rate": 1.0, "max_entries": 10000, "ttl": 300.0}
    ```
    """

    def __init__(self, *, max_entries: int = 10_000, ttl: float = 300.0, clock: Callable[[], float] | None = None):
        """
        Create a TTLCache.

        :param max_entries: Most entries kept; the least recently used one is evicted past it.
        :param ttl: Seconds an entry stays valid after it was stored.
        :param clock: Monotonic time source in seconds (tests pass a fake one); default `time.monotonic`.
        :raises ValueError: `max_entries` < 1 or `ttl` <= 0.
        """
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries}")
        if ttl <= 0:
            raise ValueError(f"ttl must be a positive number of seconds, got {ttl}")
        self.max_entries = max_entries
        self.ttl = float(ttl)
        self._clock = clock or time.monotonic
        self._data: cachetools.TTLCache = cachetools.TTLCache(maxsize=max_entries, ttl=self.ttl, timer=self._clock)
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value stored under `key` if it has not expired (counted as a hit), else `default` (a miss)."""
        with self._lock:
            value = self._data.get(key, _MISSING)  # an unexpired hit also becomes the most recently used
            if value is _MISSING:
                self.misses += 1
                return default
            self.hits += 1
            return value

    def set(self, key: Hashable, value: Any) -> None:
        """Store `value` under `key` for `ttl` seconds, evicting expired entries, then the least recently used."""
        with self._lock:
            self._data[key] = value

    def get_many(self, keys: list[Hashable]) -> dict[Hashable, Any]:
        """The unexpired values of `keys` (each key counted as a hit or a miss), missing keys left out."""
        found = {}
        for key in keys:
            value = self.get(key, _MISSING)
            if value is not _MISSING:
                found[key] = value
        return found

    def clear(self) -> None:
        """Drop every entry and reset the counters."""
        with self._lock:
            self._data.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        with self._lock:
            self._data.expire()
            return len(self._data)

    def __contains__(self, key: Hashable) -> bool:
        """Whether `key` holds an unexpired value (not counted as a hit or a miss)."""
        with self._lock:
            return key in self._data

    def stats(self) -> dict[str, Any]:
        """`entries`, `hits`, `misses`, `hit_rate` (0.0 before any lookup), `max_entries` and `ttl`."""
        with self._lock:
            self._data.expire()
            lookups = self.hits + self.misses
            return {
                "entries": len(self._data),
                "hits": self.hits,
                "misses": self.misses,
                "hit_rate": self.hits / lookups if lookups else 0.0,
                "max_entries": self.max_entries,
                "ttl": self.ttl,
            }
