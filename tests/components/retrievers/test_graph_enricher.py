import pytest

from components.document_stores.edge_document_store import EdgeDocumentStore
from components.retrievers.graph_enricher import GRAPH_CONTEXT_HEADER, GraphEnricher
from tests.reference_fixtures import DEFAULT_PATHS, ET, RD, block, build_store


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return build_store(tmp_path_factory.mktemp("enrich") / "store", *DEFAULT_PATHS)


def test_init_and_validation(tmp_path):
    store = EdgeDocumentStore(path=str(tmp_path / "s"))
    enricher = GraphEnricher(document_store=store)
    assert (enricher.hops, enricher.max_sources, enricher.enabled) == (2, 5, True)
    with pytest.raises(ValueError, match="hops"):
        GraphEnricher(document_store=store, hops=3)
    with pytest.raises(ValueError, match="backend"):
        GraphEnricher(document_store=store, backend="sqlite")
    with pytest.raises(ValueError, match="max_related"):
        GraphEnricher(document_store=store, max_related=0)


def test_to_dict_from_dict(tmp_path):
    enricher = GraphEnricher(document_store=EdgeDocumentStore(path=str(tmp_path / "s")), hops=1, max_chars=500)
    data = enricher.to_dict()
    assert data["init_parameters"]["hops"] == 1 and data["init_parameters"]["max_chars"] == 500
    restored = GraphEnricher.from_dict(data)
    assert (restored.hops, restored.max_chars) == (1, 500)


def test_run_summarizes_related_articles(store):
    docs = [block(store, ET, "15", score=0.9)]
    result = GraphEnricher(document_store=store).run(documents=docs)
    assert result["documents"] == docs
    text = result["graph_context"]
    assert text.startswith(GRAPH_CONTEXT_HEADER)
    line = text.splitlines()[1]
    assert line.startswith("- ET, art. 15 (Duración del contrato de trabajo):")
    assert "desarrollado por RD 2720/1998" in line  # REGULAMENTA, law -> article
    assert "citado por RD 2720/1998, " in line and "cita ET, art. 16" in line


def test_run_respects_filters_context_and_flags(store):
    docs = [block(store, ET, "15", score=0.9)]
    only_et = {"field": "meta.law_id", "operator": "==", "value": ET}
    text = GraphEnricher(document_store=store).run(documents=docs, filters=only_et)["graph_context"]
    assert "RD 2720/1998" not in text  # invisible through the filter: never named
    with_rd = docs + [block(store, RD, "3", score=0.5)]
    text = GraphEnricher(document_store=store, max_sources=1).run(documents=with_rd)["graph_context"]
    assert "RD 2720/1998, art. 3 " not in text  # already in the context
    assert GraphEnricher(document_store=store, enabled=False).run(documents=docs)["graph_context"] == ""
    assert GraphEnricher(document_store=store).run(documents=docs, enabled=False)["graph_context"] == ""
    assert GraphEnricher(document_store=store).run(documents=[])["graph_context"] == ""
    short = GraphEnricher(document_store=store, max_chars=60).run(documents=docs)["graph_context"]
    assert short == ""  # no whole line fits
