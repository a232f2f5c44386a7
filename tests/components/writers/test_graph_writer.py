import pytest

from components.document_stores.edge_document_store import EdgeDocumentStore
from components.writers.graph_writer import GraphWriter
from components.document_stores.legal_graph import NetworkXGraph
from tests.corpus_helpers import RD_2720
from tests.reference_fixtures import ET, RD, extracted


def test_init_and_validation(tmp_path):
    writer = GraphWriter()
    assert (writer.document_store, writer.path, writer.backend, writer.enabled) == (None, None, None, True)
    with pytest.raises(ValueError, match="backend"):
        GraphWriter(backend="sqlite")
    with pytest.raises(TypeError):
        GraphWriter(None)  # keyword-only


def test_to_dict_from_dict(tmp_path):
    writer = GraphWriter(document_store=EdgeDocumentStore(path=str(tmp_path / "s")), backend="networkx")
    data = writer.to_dict()
    assert data["type"] == "components.writers.graph_writer.GraphWriter"
    assert data["init_parameters"]["document_store"]["type"] == "components.document_stores.edge_document_store.EdgeDocumentStore"
    assert data["init_parameters"]["backend"] == "networkx"
    restored = GraphWriter.from_dict(data)
    assert isinstance(restored.document_store, EdgeDocumentStore)
    assert restored.document_store.path == str(tmp_path / "s")
    assert GraphWriter.from_dict(GraphWriter().to_dict()).document_store is None


def test_run_writes_beside_the_store_and_replaces_edges(tmp_path):
    store = EdgeDocumentStore(path=str(tmp_path / "store"))
    result = extracted(RD_2720)
    writer = GraphWriter(document_store=store)
    out = writer.run(nodes=result["nodes"], edges=result["edges"])
    assert out == {"nodes_written": len(result["nodes"]), "edges_written": len(result["edges"]), "backend": "networkx"}
    graph = NetworkXGraph(tmp_path / "store" / "graph.json")
    counts = graph.counts()
    assert counts["edges"] == len(result["edges"])
    assert any(r["node"]["id"] == RD for r in graph.related([f"{ET}#15"], hops=1))
    writer.run(nodes=result["nodes"], edges=result["edges"])  # re-indexing the same law: same edges
    assert NetworkXGraph(tmp_path / "store" / "graph.json").counts() == counts


def test_remove_deletes_one_owners_edges_of_a_law(tmp_path):
    store = EdgeDocumentStore(path=str(tmp_path / "store"))
    result = extracted(RD_2720)
    writer = GraphWriter(document_store=store)
    acme = {"scope": "tenant", "tenant_id": "acme"}
    writer.run(nodes=result["nodes"], edges=result["edges"])
    writer.run(nodes=result["nodes"], edges=result["edges"], owner=acme)  # acme's copy of the same law
    graph = tmp_path / "store" / "graph.json"
    both = NetworkXGraph(graph).counts()["edges"]
    assert both == 2 * len(result["edges"])
    assert writer.remove([RD], owner=acme) == len(result["edges"])
    assert NetworkXGraph(graph).counts()["edges"] == len(result["edges"])
    assert [r["path"][0]["owner"] for r in NetworkXGraph(graph).related([f"{ET}#15"], hops=1)
            if r["node"]["id"] == RD] == [""]  # the public edges stay
    assert writer.remove(["NO-SUCH-LAW"]) == 0
    assert writer.remove([RD]) == len(result["edges"]) and NetworkXGraph(graph).counts()["edges"] == 0
    assert GraphWriter(path=str(tmp_path / "g.json"), enabled=False).remove([RD]) == 0


def test_run_disabled_writes_nothing(tmp_path):
    writer = GraphWriter(path=str(tmp_path / "g.json"), enabled=False)
    assert writer.run(nodes=[{"id": "x"}], edges=[])["backend"] == "disabled"
    assert not (tmp_path / "g.json").exists()
    assert GraphWriter(path=str(tmp_path / "g.json")).run(nodes=[], edges=[], enabled=False)["nodes_written"] == 0


def test_remove_on_neo4j_deletes_the_owners_edges_of_those_laws_by_parameterized_cypher(monkeypatch):
    from components.document_stores import legal_graph
    from components.legal.access import owner_key
    from tests.components.document_stores.test_legal_graph import FakeDriver

    # replies in call order: the constraint, then the delete, which returns how many edges it deleted
    driver = FakeDriver(replies=[[], [{"deleted": 3}]])
    monkeypatch.setattr("components.writers.graph_writer.open_legal_graph",
                        lambda **_: legal_graph.Neo4jGraph(driver=driver))
    acme = {"scope": "tenant", "tenant_id": "acme"}
    assert GraphWriter(backend="neo4j").remove([RD], owner=acme) == 3
    queries = [query for query, _ in driver.calls]
    assert queries[1:] == [legal_graph.CYPHER_DELETE_ORIGINS]  # one query: no whole-graph counts around it
    assert "RETURN count(r)" in queries[1]
    assert driver.calls[1][1] == {"origins": [RD], "owner": owner_key(acme)} and owner_key(acme)
    assert not any(RD in query for query in queries)  # values only as parameters
