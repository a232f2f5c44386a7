"""compile_templates_once: Haystack's template components keep their output and stop recompiling."""

from haystack.components.converters import OutputAdapter
from haystack.components.routers import ConditionalRouter

from components.utils.templates import compile_templates_once

ROUTES = [
    {"condition": "{{ retries < 1 }}", "output": "{{ query }}", "output_name": "retry", "output_type": str},
    {"condition": "{{ retries >= 1 }}", "output": "{{ [query, 'fin'] }}", "output_name": "done",
     "output_type": list[str]},
]


def test_a_router_gives_the_same_routes_and_compiles_each_template_once(jinja_compilations):
    plain, cached = ConditionalRouter(routes=ROUTES), compile_templates_once(ConditionalRouter(routes=ROUTES))
    runs = [{"retries": 0, "query": "¿vacaciones?"}, {"retries": 1, "query": "¿despido?"}, {"retries": 0, "query": "x"}]
    assert [cached.run(**r) for r in runs] == [plain.run(**r) for r in runs] == [
        {"retry": "¿vacaciones?"}, {"done": ["¿despido?", "fin"]}, {"retry": "x"}]
    del jinja_compilations[:]
    for r in runs:
        cached.run(**r)
    assert jinja_compilations == []  # every condition and output was compiled by the first runs
    for r in runs:
        plain.run(**r)
    assert len(jinja_compilations) > len(runs)  # the unwrapped router compiles on every run


def test_an_output_adapter_and_idempotence(jinja_compilations):
    adapter = compile_templates_once(compile_templates_once(OutputAdapter(template="{{ [q] }}", output_type=list[str])))
    assert adapter.run(q="uno") == {"output": ["uno"]}
    del jinja_compilations[:]
    assert adapter.run(q="dos") == {"output": ["dos"]} and jinja_compilations == []
    assert compile_templates_once(object) is object  # nothing to wrap: unchanged


def test_the_loader_wraps_every_template_component_of_the_query_pipeline(tmp_path):
    from pipelines.loader import load_pipeline
    from pipelines.settings import Settings

    pipe = load_pipeline("query", Settings.load(store_path=str(tmp_path / "store")))
    wrapped = {name for name, instance in pipe.walk() if getattr(getattr(instance, "_env", None),
                                                               "_lexhay_compiles_once", False)}
    assert {"expansion_router", "need_router", "retry_counter", "retry_queries"} <= wrapped
