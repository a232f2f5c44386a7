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


def test_a_tenants_edges_are_shown_only_to_who_may_read_them(tmp_path):
    from haystack import Document

    from components.legal.access import access_filter
    from components.writers.graph_writer import GraphWriter

    def parent(doc_id, law_id, article, title, **owner):
        return Document(id=doc_id, content=f"Artículo {article}. {title}.", meta={
            "level": "parent", "part": 1, "law_id": law_id, "article": article, "article_title": title,
            "law_short": law_id,
            **owner})

    store = EdgeDocumentStore(path=str(tmp_path / "store"))
    acme = {"scope": "tenant", "tenant_id": "acme"}
    store.write_documents([
        parent("et15", "ET", "15", "Duración del contrato"),
        parent("et49", "ET", "49", "Extinción del contrato"),
        parent("et52", "ET", "52", "Extinción por causas objetivas"),
        parent("acme-et15", "ET", "15", "Duración del contrato", **acme),  # acme's private copy of ET
        parent("memo1", "MEMO", "1", "Nota interna secreta", **acme),
    ])
    graph_file = str(tmp_path / "graph.json")
    writer = GraphWriter(document_store=store, path=graph_file)
    writer.run(nodes=[{"id": "ET", "kind": "law", "law": "ET", "indexed": True}],
               edges=[{"source": "ET#49", "target": "ET#15", "type": "CITA", "origin": "ET"}])
    # acme's copy of ET cites its private memo: an edge of acme, not of the public ET
    writer.run(nodes=[{"id": "ET", "kind": "law", "law": "FORGED NAME", "indexed": True}],
               edges=[{"source": "ET#15", "target": "MEMO#1", "type": "CITA", "origin": "ET"},
                      {"source": "ET#15", "target": "ET#52", "type": "CITA", "origin": "ET"}], owner=acme)
    enricher = GraphEnricher(document_store=store, path=graph_file)
    docs = [Document(id="et15", content="...", meta={"law_id": "ET", "article": "15"}, score=0.9)]
    for access in (None, {"tenant_id": "beta"}):
        text = enricher.run(documents=docs, filters=access_filter(access))["graph_context"]
        assert "citado por ET, art. 49" in text and "FORGED" not in text, access
        assert "MEMO" not in text and "art. 52" not in text, access  # acme's edges, even to a public article
    text = enricher.run(documents=docs, filters=access_filter({"tenant_id": "acme"}))["graph_context"]
    assert "MEMO, art. 1 (Nota interna secreta)" in text and "citado por ET, art. 49" in text
    assert "ET, art. 52" in text
    # acme re-indexing its ET copy without the memo citation removes its edge only
    writer.run(nodes=[{"id": "ET", "kind": "law", "indexed": True}], edges=[], owner=acme)
    text = enricher.run(documents=docs, filters=access_filter({"tenant_id": "acme"}))["graph_context"]
    assert "MEMO" not in text and "citado por ET, art. 49" in text
    store.close()
