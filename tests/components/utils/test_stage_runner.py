"""run_stages: the components of an acyclic graph in order, values handed on without copies."""

import pytest
from haystack import Document, Pipeline, component, tracing
from haystack.components.joiners import DocumentJoiner
from haystack.components.routers import MetadataRouter

from components.utils.stage_runner import pipeline_stages, run_stages, stage_order


def test_run_stages_hands_values_on_without_copies_in_graph_order_and_traces_each_stage(monkeypatch):
    calls = []

    @component
    class Emit:
        @component.output_types(embedding=list[float])
        def run(self, text: str):
            calls.append(("emit", text))
            return {"embedding": VECTOR}

    @component
    class Take:
        @component.output_types(documents=list)
        def run(self, query_embedding: list[float], top_k: int = 1):
            calls.append(("take", top_k))
            return {"documents": [query_embedding]}

    VECTOR = [0.5] * 768
    stages = {"retriever": Take(), "text_embedder": Emit(), "reranker": None}  # graph order, not dict order
    connections = [("text_embedder.embedding", "retriever.query_embedding")]
    out = run_stages(stages, {"text_embedder": {"text": "q"}, "retriever": {"top_k": 3}}, connections)
    assert calls == [("emit", "q"), ("take", 3)]
    assert out["retriever"]["documents"][0] is VECTOR  # handed on as it is: no deep copy along the edge
    assert "reranker" not in out

    spans = []

    class Recorder:
        is_content_tracing_enabled = False

        def trace(self, operation_name, tags=None, parent_span=None):
            from contextlib import contextmanager

            @contextmanager
            def span_cm():
                span = type("S", (), {"tags": dict(tags or {}), "content": {}})()
                span.set_tag = lambda k, v: span.tags.__setitem__(k, v)
                span.set_content_tag = lambda k, v: span.content.__setitem__(k, v)
                spans.append((operation_name, span))
                yield span
            return span_cm()

    monkeypatch.setattr(tracing.tracer, "actual_tracer", Recorder())
    run_stages(stages, {"text_embedder": {"text": "q"}}, connections, traced=True)
    assert [name for name, _ in spans] == ["haystack.pipeline.run"] + ["haystack.component.run"] * 2
    emit = spans[1][1]
    assert emit.tags["haystack.component.name"] == "text_embedder" and emit.tags["haystack.component.type"] == "Emit"
    assert emit.tags["haystack.component.visits"] == 1
    assert emit.content["haystack.component.input"] == {"text": "q"}
    assert emit.content["haystack.component.output"]["embedding"] is VECTOR


@component
class Produce:
    @component.output_types(documents=list[Document])
    def run(self, texts: list[str]):
        return {"documents": [Document(content=t, meta={"level": "parent" if "p" in t else "child"}) for t in texts]}


@component
class Count:
    @component.output_types(count=int)
    def run(self, documents: list[Document]):
        return {"count": len(documents)}


def _router_pipeline():
    pipe = Pipeline()
    pipe.add_component("produce", Produce())
    pipe.add_component("router", MetadataRouter(rules={
        "parents": {"field": "meta.level", "operator": "==", "value": "parent"},
        "children": {"field": "meta.level", "operator": "==", "value": "child"},
    }))
    pipe.add_component("joiner", DocumentJoiner(sort_by_score=False))
    pipe.add_component("count", Count())
    pipe.connect("produce.documents", "router.documents")
    pipe.connect("router.parents", "joiner.documents")
    pipe.connect("router.children", "joiner.documents")
    pipe.connect("joiner.documents", "count.documents")
    return pipe


def test_matches_pipeline_run_on_a_graph_with_a_router_and_a_variadic_joiner():
    pipe = _router_pipeline()
    stages, connections = pipeline_stages(pipe)
    assert list(stages) == ["produce", "router", "joiner", "count"]
    assert ("router.parents", "joiner.documents") in connections
    data = {"produce": {"texts": ["p1", "c1", "c2"]}}
    direct = run_stages(stages, data, connections)
    piped = pipe.run(data, include_outputs_from=set(stages))
    assert direct["count"] == piped["count"] == {"count": 3}  # both branches reached the variadic joiner
    assert sorted(d.content for d in direct["joiner"]["documents"]) == ["c1", "c2", "p1"]
    assert direct["joiner"]["documents"][0] is direct["router"]["parents"][0]  # no copy along the edges


def test_a_stage_without_its_mandatory_input_is_skipped():
    stages = {"count": Count(), "produce": Produce()}
    out = run_stages(stages, {}, [("produce.documents", "count.documents")])
    assert out == {}  # produce has no texts: neither it nor what depends on it runs
    out = run_stages({"count": Count()}, {"count": {"documents": [Document(content="x")]}}, [])
    assert out == {"count": {"count": 1}}


def test_stage_order_is_topological_with_ties_in_the_given_order_and_refuses_cycles():
    assert stage_order(["c", "b", "a"], [("a.x", "c.y")]) == ["b", "a", "c"]
    with pytest.raises(ValueError, match="cycle"):
        stage_order(["a", "b"], [("a.x", "b.y"), ("b.x", "a.y")])
