import json
import os

import pytest

from components.legal.access import owner_key
from components.document_stores.legal_graph import (
    CYPHER_DELETE_ORIGINS,
    CYPHER_MERGE_EDGES,
    CYPHER_MERGE_NODES,
    CYPHER_RELATED,
    Neo4jGraph,
    NetworkXGraph,
    article_node_id,
    graph_path,
    law_node_id,
    open_legal_graph,
    resolve_backend,
)

NODES = [
    {"id": "ET", "kind": "law", "law": "ET", "indexed": True},
    {"id": "ET#15", "kind": "article", "law": "ET", "article": "15", "title": "Duración del contrato"},
    {"id": "ET#49", "kind": "article", "law": "ET", "article": "49"},
    {"id": "LGSS#267", "kind": "article", "law": "LGSS", "article": "267"},
    {"id": "RD2720", "kind": "law", "law": "RD 2720/1998", "indexed": True},
]
EDGES = [
    {"source": "ET#49", "target": "ET#15", "type": "CITA", "origin": "ET"},
    {"source": "LGSS#267", "target": "ET#49", "type": "CITA", "origin": "LGSS"},
    {"source": "RD2720", "target": "ET#15", "type": "REGULAMENTA", "origin": "RD2720"},
]


def test_node_ids():
    assert law_node_id("BOE-A-2015-11430") == "BOE-A-2015-11430"
    assert law_node_id(None, "Ley  36/2011") == "ext:ley 36/2011"
    assert law_node_id(None, None) is None
    assert article_node_id("ext:ley 36/2011", "12") == "ext:ley 36/2011#12"


def test_networkx_upsert_related_and_persistence(tmp_path):
    path = tmp_path / "graph.json"
    graph = NetworkXGraph(path)
    assert graph.upsert(NODES, EDGES) == 3
    assert graph.counts() == {"nodes": 5, "edges": 3}
    assert graph.upsert(NODES, EDGES) == 3 and graph.counts()["edges"] == 3  # no duplicates
    rows = {(r["node"]["id"], r["distance"]): r for r in graph.related(["ET#15"], hops=2)}
    assert set(rows) == {("ET#49", 1), ("RD2720", 1), ("LGSS#267", 2)}
    assert rows[("RD2720", 1)]["path"] == [{"type": "REGULAMENTA", "direction": "in", "owner": "", "origin": "RD2720",
                                            "owner_meta": {"scope": "global"}}]
    assert rows[("LGSS#267", 2)]["via"] == ["ET#49"]
    assert rows[("ET#49", 1)]["node"]["article"] == "49"
    assert {r["node"]["id"] for r in graph.related(["ET#15"], hops=1)} == {"ET#49", "RD2720"}
    assert graph.related(["nope"]) == []
    # another process (a fresh instance) reads the saved file
    data = json.loads(path.read_text(encoding="utf-8"))
    assert len(data["edges"]) == 3
    assert NetworkXGraph(path).counts() == {"nodes": 5, "edges": 3}
    with pytest.raises(ValueError, match="hops"):
        graph.related(["ET#15"], hops=3)


def test_networkx_replace_origins_and_validation(tmp_path):
    graph = NetworkXGraph(tmp_path / "graph.json")
    graph.upsert(NODES, EDGES)
    graph.upsert([], [{"source": "ET#49", "target": "ET#48", "type": "CITA", "origin": "ET"}], replace_origins=["ET"])
    assert {r["node"]["id"] for r in graph.related(["ET#49"], hops=1)} == {"ET#48", "LGSS#267"}
    with pytest.raises(ValueError, match="edge type"):
        graph.upsert([], [{"source": "a", "target": "b", "type": "LIKES"}])
    with pytest.raises(ValueError, match="source"):
        graph.upsert([], [{"target": "b", "type": "CITA"}])
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="not a valid"):
        NetworkXGraph(tmp_path / "bad.json").counts()


def test_networkx_remove_origins_counts_only_that_owners_edges_and_persists(tmp_path):
    path = tmp_path / "graph.json"
    graph = NetworkXGraph(path)
    acme = {"scope": "tenant", "tenant_id": "acme"}
    graph.upsert(NODES, EDGES)
    graph.upsert([], EDGES[:2], owner=acme)  # acme's copy of two edges, one of ET and one of LGSS
    assert graph.counts()["edges"] == 5
    assert graph.remove_origins(["ET"], owner=acme) == 1
    assert graph.remove_origins(["ET"], owner=acme) == 0 and graph.remove_origins([], owner=acme) == 0
    reloaded = NetworkXGraph(path)  # the deletion was saved
    assert reloaded.counts() == {"nodes": 5, "edges": 4}
    def reached(owner):
        return {r["node"]["id"] for r in reloaded.related(["ET#49"], hops=1, owners=[owner])}

    assert reached(owner_key(acme)) == {"LGSS#267"} and reached("") == {"ET#15", "LGSS#267"}
    assert reloaded.remove_origins(["ET", "RD2720"]) == 2  # the public edges of both laws; nodes stay
    assert reloaded.counts() == {"nodes": 5, "edges": 2}


def test_neo4j_remove_origins_returns_the_deleted_count():
    driver = FakeDriver(replies=[[], [{"deleted": 4}]])
    assert Neo4jGraph(driver=driver).remove_origins(["ET"]) == 4
    assert [q for q, _ in driver.calls][1] == CYPHER_DELETE_ORIGINS and driver.calls[1][1] == {
        "origins": ["ET"], "owner": ""}
    assert Neo4jGraph(driver=FakeDriver()).remove_origins([]) == 0


def test_backend_resolution_and_paths(tmp_path, monkeypatch):
    monkeypatch.delenv("LEXHAY_NEO4J_URI", raising=False)
    assert resolve_backend(None) == "networkx"
    monkeypatch.setenv("LEXHAY_NEO4J_URI", "bolt://localhost:7687")
    assert resolve_backend(None) == "neo4j"
    with pytest.raises(ValueError, match="backend"):
        resolve_backend("sqlite")

    class Store:
        resolved_path = tmp_path / "store"

    assert graph_path(None, Store()) == tmp_path / "store" / "graph.json"
    assert graph_path(str(tmp_path / "g.json")) == tmp_path / "g.json"
    monkeypatch.setenv("LEXHAY_STORE", str(tmp_path / "env"))
    assert graph_path() == tmp_path / "env" / "graph.json"
    shared = open_legal_graph(backend="networkx", document_store=Store())
    assert shared is open_legal_graph(backend="networkx", path=str(tmp_path / "store" / "graph.json"))


class FakeRecord:
    def __init__(self, data):
        self._data = data

    def data(self):
        return self._data


class FakeSession:
    def __init__(self, driver):
        self.driver = driver

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def run(self, query, parameters):
        self.driver.calls.append((query, parameters))
        return [FakeRecord(r) for r in self.driver.replies.pop(0)] if self.driver.replies else []


class FakeDriver:
    def __init__(self, replies=None):
        self.calls, self.replies, self.databases, self.closed = [], list(replies or []), [], False

    def session(self, database=None):
        self.databases.append(database)
        return FakeSession(self)

    def close(self):
        self.closed = True


def test_neo4j_upsert_sends_parameterized_cypher():
    driver = FakeDriver()
    graph = Neo4jGraph(driver=driver, database="legal")
    assert graph.upsert(NODES[:2], EDGES[2:] + EDGES[:1], replace_origins=["ET"]) == 2
    queries = [q for q, _ in driver.calls]
    assert queries[0].startswith("CREATE CONSTRAINT legal_node_id")
    assert queries[1:] == [
        CYPHER_DELETE_ORIGINS, CYPHER_MERGE_NODES, CYPHER_MERGE_EDGES["CITA"], CYPHER_MERGE_EDGES["REGULAMENTA"]
    ]
    params = [p for _, p in driver.calls]
    assert params[1] == {"origins": ["ET"], "owner": ""}
    properties = {"kind": "article", "law": "ET", "article": "15", "title": "Duración del contrato"}
    assert params[2]["nodes"][1] == {"id": "ET#15", "properties": properties}
    edge = {"source": "ET#49", "target": "ET#15", "owner": "",
            "properties": {"type": "CITA", "origin": "ET", "owner": ""}}
    assert params[3] == {"edges": [edge]}
    assert set(driver.databases) == {"legal"}
    # values never appear in the statements
    assert not any("ET#" in q for q in queries)
    graph.upsert([], [])
    assert sum(q.startswith("CREATE CONSTRAINT") for q, _ in driver.calls) == 1
    graph.close()
    assert driver.closed


def test_neo4j_related_maps_records():
    reply = [
        {"source": "ET#15", "node": {"id": "LGSS#267", "kind": "article"}, "distance": 2,
         "rels": [{"type": "CITA", "start": "ET#49"}, {"type": "CITA", "start": "LGSS#267"}],
         "ids": ["ET#15", "ET#49", "LGSS#267"]},
    ]
    driver = FakeDriver(replies=[reply])
    rows = Neo4jGraph(driver=driver).related(["ET#15", "ET#15"], hops=2, limit=7)
    assert driver.calls == [(CYPHER_RELATED[2], {"ids": ["ET#15"], "limit": 7, "owners": None})]
    step = {"type": "CITA", "direction": "in", "owner": "", "origin": None, "owner_meta": {"scope": "global"}}
    assert rows == [{
        "source": "ET#15", "node": {"id": "LGSS#267", "kind": "article"}, "distance": 2,
        "path": [step, step], "via": ["ET#49"],
    }]
    assert "*1..1" in CYPHER_RELATED[1] and "$ids" in CYPHER_RELATED[1] and "$limit" in CYPHER_RELATED[1]


def test_neo4j_needs_a_uri(monkeypatch):
    monkeypatch.delenv("LEXHAY_NEO4J_URI", raising=False)
    with pytest.raises(ValueError, match="LEXHAY_NEO4J_URI"):
        Neo4jGraph()


@pytest.mark.integration
@pytest.mark.skipif(not os.environ.get("LEXHAY_NEO4J_URI"), reason="needs a Neo4j server: set LEXHAY_NEO4J_URI "
                    "(and LEXHAY_NEO4J_USER / LEXHAY_NEO4J_PASSWORD)")
def test_neo4j_server_round_trip():
    graph = Neo4jGraph()
    origin = "lexhay-test-origin"
    nodes = [{**n, "id": f"t:{n['id']}"} for n in NODES]
    edges = [{**e, "source": f"t:{e['source']}", "target": f"t:{e['target']}", "origin": origin} for e in EDGES]
    try:
        graph.upsert(nodes, edges, replace_origins=[origin])
        rows = {(r["node"]["id"], r["distance"]) for r in graph.related(["t:ET#15"], hops=2)}
        assert {("t:ET#49", 1), ("t:RD2720", 1), ("t:LGSS#267", 2)} <= rows
    finally:
        graph.upsert([], [], replace_origins=[origin])
        graph.close()


ACME = {"scope": "tenant", "tenant_id": "acme"}


def test_edges_and_nodes_are_keyed_by_owner(tmp_path):
    graph = NetworkXGraph(tmp_path / "graph.json")
    graph.upsert(NODES, EDGES)
    # acme indexes its own copy of ET: its edges are its own, and it cannot rename the public node
    forged_nodes = [{"id": "ET", "kind": "law", "law": "FORGED", "indexed": True},
                    {"id": "ACME#1", "kind": "article", "law_id": "ACME", "law": "X", "article": "1", "title": "t"}]
    forged_edges = [{"source": "ET#15", "target": "ACME#1", "type": "CITA", "origin": "ET"}]
    graph.upsert(forged_nodes, forged_edges, replace_origins=["ET"], owner=ACME)
    assert graph.counts()["edges"] == 4  # the public CITA edge of ET survives acme's re-index of "ET"
    public = {r["node"]["id"] for r in graph.related(["ET#15"], hops=1, owners=[""])}
    assert public == {"ET#49", "RD2720"}
    acme = graph.related(["ET#15"], hops=1, owners=["", "acme/tenant///"])
    assert {r["node"]["id"] for r in acme} == {"ET#49", "RD2720", "ACME#1"}
    acme_step = next(r for r in acme if r["node"]["id"] == "ACME#1")["path"][0]
    assert acme_step["owner"] == "acme/tenant///" and acme_step["owner_meta"] == ACME
    data = json.loads((tmp_path / "graph.json").read_text(encoding="utf-8"))
    assert next(n for n in data["nodes"] if n["id"] == "ET")["law"] == "ET"  # not renamed
    assert next(n for n in data["nodes"] if n["id"] == "ACME#1") == {"id": "ACME#1", "kind": "article",
                                                                     "law_id": "ACME"}
    # re-indexing the public ET replaces only the public edges of ET
    graph.upsert(NODES, [e for e in EDGES if e["origin"] != "ET"], replace_origins=["ET"])
    assert graph.counts()["edges"] == 3
    assert {r["node"]["id"] for r in graph.related(["ET#15"], hops=1)} == {"RD2720", "ACME#1"}
