import threading

import pytest

from components.utils.ttl_cache import TTLCache


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_init_validation():
    cache = TTLCache()
    assert (cache.max_entries, cache.ttl) == (10_000, 300.0)
    with pytest.raises(ValueError, match="max_entries"):
        TTLCache(max_entries=0)
    with pytest.raises(ValueError, match="ttl"):
        TTLCache(ttl=0)


def test_entries_expire_after_ttl():
    clock = FakeClock()
    cache = TTLCache(ttl=300, clock=clock)
    cache.set(("¿vacaciones?", "et-38"), 0.9)
    clock.now += 299
    assert cache.get(("¿vacaciones?", "et-38")) == 0.9
    assert ("¿vacaciones?", "et-38") in cache
    clock.now += 2
    assert ("¿vacaciones?", "et-38") not in cache
    assert cache.get(("¿vacaciones?", "et-38")) is None
    assert cache.get("other", "default") == "default"
    assert len(cache) == 0
    assert cache.stats() == {"entries": 0, "hits": 1, "misses": 2, "hit_rate": 1 / 3, "max_entries": 10_000,
                             "ttl": 300.0}


def test_setting_again_refreshes_the_ttl():
    clock = FakeClock()
    cache = TTLCache(ttl=10, clock=clock)
    cache.set("k", 1)
    clock.now += 8
    cache.set("k", 2)
    clock.now += 8
    assert cache.get("k") == 2


def test_lru_eviction_keeps_the_recently_used():
    cache = TTLCache(max_entries=2, ttl=60)
    cache.set("a", 1)
    cache.set("b", 2)
    assert cache.get("a") == 1  # "b" is now the least recently used
    cache.set("c", 3)
    assert "b" not in cache and cache.get("a") == 1 and cache.get("c") == 3
    assert len(cache) == 2


def test_expired_entries_are_evicted_before_live_ones():
    clock = FakeClock()
    cache = TTLCache(max_entries=2, ttl=10, clock=clock)
    cache.set("old", 0)
    clock.now += 5
    cache.set("live", 1)
    cache.get("old")  # most recently used, but it expires first
    clock.now += 6
    cache.set("new", 2)
    assert cache.get("live") == 1 and cache.get("new") == 2


def test_get_many_and_clear():
    cache = TTLCache()
    cache.set("a", 1)
    assert cache.get_many(["a", "b"]) == {"a": 1}
    assert (cache.hits, cache.misses) == (1, 1)
    cache.clear()
    assert cache.stats()["entries"] == 0 and cache.stats()["hit_rate"] == 0.0


def test_thread_safe_under_concurrent_writers():
    cache = TTLCache(max_entries=100, ttl=60)

    def work(offset: int) -> None:
        for i in range(2000):
            cache.set((offset, i), i)
            cache.get((offset, i - 1))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stats = cache.stats()
    assert stats["entries"] == 100
    assert stats["hits"] + stats["misses"] == 8000


def test_eviction_at_capacity_drops_expired_then_least_recently_used():
    clock = FakeClock()
    cache = TTLCache(max_entries=1000, ttl=10, clock=clock)
    for i in range(500):
        cache.set(("old", i), i)
    clock.now += 5
    for i in range(500):
        cache.set(("live", i), i)
    assert len(cache) == 1000
    cache.get(("live", 0))  # touched: no longer the least recently used live entry
    cache.set("one-more", 1)  # full, nothing expired yet: exactly the least recently used entry goes
    assert ("old", 0) not in cache and ("old", 1) in cache and len(cache) == 1000
    clock.now += 6  # every "old" entry has expired, every "live" one has not
    cache.set("after-expiry", 2)
    stats = cache.stats()
    assert stats["entries"] == 502  # 500 live + "one-more" + "after-expiry": the expired went, no live one did
    assert all((("live", i) in cache) for i in range(500))
    assert cache.get(("old", 1)) is None
    cache.set("x", 3)
    cache.set("y", 4)
    assert len(cache) == 504  # below capacity again: inserts evict nothing
