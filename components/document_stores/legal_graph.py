"""
The legal knowledge graph: norms and articles as nodes, CITA / REVOGA / REGULAMENTA / INTERPRETA as edges.

One interface (`LegalGraph`), two backends: `NetworkXGraph` (default: an in-process `networkx.MultiDiGraph`
persisted as node-link JSON beside the document store, `<store path>/graph.json`) and `Neo4jGraph` (selected when
`LEXHAY_NEO4J_URI` is set; every query is a module constant with `$parameters`, relationship types included: one
constant per type, since Cypher cannot parameterize them). `open_legal_graph` picks the backend and shares one
instance per graph location in a process.

Node ids: a law is its `law_id` ("BOE-A-2015-11430"), a law that is not in the laws table is `ext:<law_key>`
("ext:ley 36/2011"); an article is `<law node>#<article key>` ("BOE-A-2015-11430#15").

Owners: every edge belongs to the owner of the documents that produced it (`owner` = `owner_key` of their access
meta, "" for the public corpus, plus the owner's `owner_*` meta), so a tenant's private copy of a law adds edges
of its own, re-indexing replaces only its owner's edges, and a reader is shown only the edges of owners it may
read (`related(..., owners=...)`, see `GraphEnricher`). Node properties (names, titles) are written only by
global writes; a private write adds a missing node with its `kind` and `law_id` only, never renames a public one.
"""

import json
import os
import threading
from pathlib import Path
from typing import Any, Final

import networkx as nx
from haystack import logging

from components.legal.access import owner_key
from components.legal.citations import law_key

logger = logging.getLogger(__name__)

EDGE_TYPES: Final[tuple[str, ...]] = ("CITA", "REVOGA", "REGULAMENTA", "INTERPRETA")
BACKENDS: Final[tuple[str, ...]] = ("networkx", "neo4j")
GRAPH_FILE: Final[str] = "graph.json"
NEO4J_URI_ENV: Final[str] = "LEXHAY_NEO4J_URI"
NEO4J_USER_ENV: Final[str] = "LEXHAY_NEO4J_USER"
NEO4J_PASSWORD_ENV: Final[str] = "LEXHAY_NEO4J_PASSWORD"  # noqa: S105 (the variable's name, not a secret)
NEO4J_DATABASE_ENV: Final[str] = "LEXHAY_NEO4J_DATABASE"
MAX_HOPS: Final[int] = 2
EXTERNAL_PREFIX: Final[str] = "ext:"


def law_node_id(law_id: str | None, law: str | None = None) -> str | None:
    """Node id of a law: its `law_id`, else `ext:<law_key(law)>` for a norm outside the table; None if neither."""
    if law_id:
        return str(law_id)
    return f"{EXTERNAL_PREFIX}{law_key(law)}" if law else None


def article_node_id(law_node: str, article: str) -> str:
    """Node id of an article of the law node `law_node`: `<law node>#<article key>`."""
    return f"{law_node}#{article}"


def _check_edges(edges: list[dict[str, Any]]) -> None:
    for edge in edges:
        if not isinstance(edge, dict) or not edge.get("source") or not edge.get("target"):
            raise ValueError(f"A graph edge needs 'source' and 'target' node ids, got {edge!r}")
        if edge.get("type") not in EDGE_TYPES:
            raise ValueError(f"Unknown edge type {edge.get('type')!r}; use one of {EDGE_TYPES}")


def _check_nodes(nodes: list[dict[str, Any]]) -> None:
    for node in nodes:
        if not isinstance(node, dict) or not node.get("id"):
            raise ValueError(f"A graph node needs an 'id', got {node!r}")


def _check_hops(hops: int) -> int:
    if not isinstance(hops, int) or not 1 <= hops <= MAX_HOPS:
        raise ValueError(f"hops must be 1..{MAX_HOPS}, got {hops!r}")
    return hops


def _properties(item: dict[str, Any], skip: tuple[str, ...]) -> dict[str, Any]:
    """The JSON-scalar properties of a node or an edge (None dropped; lists of scalars kept)."""
    return {k: v for k, v in item.items() if k not in skip and v is not None}


OWNER_FIELDS: Final[tuple[str, ...]] = ("scope", "tenant_id", "user_id", "case_id", "group_ids")
NODE_CORE: Final[tuple[str, ...]] = ("kind", "law_id")  # what a private write may set on a node it creates


def owner_properties(owner: dict[str, Any] | None) -> dict[str, Any]:
    """Edge properties naming the owner of access meta `owner`: `owner` (its key, "" = global) and `owner_<field>`."""
    key = owner_key(owner or {})
    if not key:
        return {"owner": ""}
    props: dict[str, Any] = {"owner": key}
    for name in OWNER_FIELDS:
        value = (owner or {}).get(name)
        if value:
            props[f"owner_{name}"] = sorted(value) if name == "group_ids" else value
    return props


def owner_meta(properties: dict[str, Any]) -> dict[str, Any]:
    """The access meta of an edge's owner (from `owner_properties`); `{"scope": "global"}` for public edges."""
    if not properties.get("owner"):
        return {"scope": "global"}
    return {name: properties[f"owner_{name}"] for name in OWNER_FIELDS if properties.get(f"owner_{name}")}


def _edge_key(edge_type: str, owner: str) -> str:
    return edge_type if not owner else f"{edge_type}|{owner}"


def _step(data: dict[str, Any], direction: str) -> dict[str, Any]:
    """One step of a `related` path: the edge's type, direction, owner, origin and owner meta."""
    return {"type": data.get("type", ""), "direction": direction, "owner": data.get("owner", ""),
            "origin": data.get("origin"), "owner_meta": owner_meta(data)}


class LegalGraph:
    """
    The graph interface used by `GraphWriter` and `GraphEnricher`.

    - `upsert(nodes, edges, replace_origins, owner)`: merge nodes (by `id`, properties updated by global writes
      only) and edges (unique per source, target, type and owner); first delete the edges of this owner whose
      `origin` (the law node whose text produced them) is in `replace_origins`, so re-indexing a law replaces its
      owner's edges instead of piling them up, and never touches another owner's.
    - `related(node_ids, hops, limit, owners)`: nodes within `hops` edges of each start node, either direction,
      along edges of `owners` only (None = every owner); one row per (start, reached node) on a shortest path:
      `{"source", "node" (properties with "id"), "distance", "path" ([{"type", "direction": "out" | "in",
      "owner", "origin", "owner_meta"}, ...] from the start node), "via" (intermediate node ids)}`.
    - `remove_origins(origins, owner)`: delete only those edges of `owner`, and return how many went.
    - `counts()`: `{"nodes": n, "edges": m}`.
    """

    backend: str = ""

    def upsert(
        self,
        nodes: list[dict[str, Any]],
        edges: list[dict[str, Any]],
        replace_origins: list[str] | None = None,
        owner: dict[str, Any] | None = None,
    ) -> int:
        """Merge nodes and edges of `owner` (access meta; None = global); returns the number of edges written."""
        raise NotImplementedError

    def remove_origins(self, origins: list[str], owner: dict[str, Any] | None = None) -> int:
        """Delete `owner`'s edges whose `origin` is in `origins` (nodes stay); returns the number deleted."""
        raise NotImplementedError

    def related(
        self, node_ids: list[str], hops: int = 2, limit: int = 50, owners: list[str] | None = None
    ) -> list[dict[str, Any]]:
        """Rows of the nodes reached from `node_ids` within `hops` edges (see the class docstring)."""
        raise NotImplementedError

    def counts(self) -> dict[str, int]:
        """Number of nodes and edges."""
        raise NotImplementedError

    def close(self) -> None:  # noqa: B027 (optional hook)
        """Release resources (the Neo4j driver)."""


class NetworkXGraph(LegalGraph):
    """
    The graph in process: a `networkx.MultiDiGraph` (edge key = edge type) saved as node-link JSON at `path` after
    every `upsert` (write to a temporary file, then rename), and reloaded when another process changed the file.
    """

    backend = "networkx"

    def __init__(self, path: str | Path) -> None:
        """:param path: The JSON file (created on the first `upsert`)."""
        self.path = Path(path)
        self._graph = nx.MultiDiGraph()
        self._mtime: float | None = None
        self._lock = threading.RLock()

    def _refresh(self) -> None:
        try:
            mtime = self.path.stat().st_mtime
        except FileNotFoundError:
            return
        if mtime == self._mtime:
            return
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            self._graph = nx.node_link_graph(data, directed=True, multigraph=True, edges="edges")
        except (OSError, ValueError, KeyError, nx.NetworkXError) as error:
            message = f"The legal graph file {self.path} is not a valid node-link JSON graph: {error}"
            raise ValueError(message) from error
        self._mtime = mtime

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = nx.node_link_data(self._graph, edges="edges")
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        tmp.replace(self.path)
        self._mtime = self.path.stat().st_mtime

    def upsert(
        self,
        nodes: list[dict[str, Any]],
        edges: list[dict[str, Any]],
        replace_origins: list[str] | None = None,
        owner: dict[str, Any] | None = None,
    ) -> int:
        """Merge nodes and edges of `owner`, replacing its edges of `replace_origins`, and save the file."""
        _check_nodes(nodes)
        _check_edges(edges)
        stamp = owner_properties(owner)
        with self._lock:
            self._refresh()
            graph = self._graph
            self._remove_origins(replace_origins or [], stamp["owner"])
            for node in nodes:
                if not stamp["owner"]:
                    graph.add_node(node["id"], **_properties(node, ("id",)))
                elif node["id"] not in graph:
                    core = {k: v for k, v in _properties(node, ("id",)).items() if k in NODE_CORE}
                    graph.add_node(node["id"], **core)
            for edge in edges:
                for end in (edge["source"], edge["target"]):
                    if end not in graph:
                        graph.add_node(end)
                graph.add_edge(
                    edge["source"], edge["target"], key=_edge_key(edge["type"], stamp["owner"]),
                    **{**_properties(edge, ("source", "target")), **stamp},
                )
            self._save()
        return len(edges)

    def remove_origins(self, origins: list[str], owner: dict[str, Any] | None = None) -> int:
        """Delete `owner`'s edges of `origins` and save the file (only when one went)."""
        with self._lock:
            self._refresh()
            deleted = self._remove_origins(origins, owner_properties(owner)["owner"])
            if deleted:
                self._save()
        return deleted

    def _remove_origins(self, origins: list[str], owner: str) -> int:
        """Drop `owner`'s edges of `origins` from the graph in memory (the caller holds the lock)."""
        wanted = set(origins)
        if not wanted:
            return 0
        stale = [(s, t, k) for s, t, k, d in self._graph.edges(keys=True, data=True)
                 if d.get("origin") in wanted and d.get("owner", "") == owner]
        self._graph.remove_edges_from(stale)
        return len(stale)

    def related(
        self, node_ids: list[str], hops: int = 2, limit: int = 50, owners: list[str] | None = None
    ) -> list[dict[str, Any]]:
        """Breadth-first, both directions, `hops` levels, along `owners`' edges; unknown start nodes give no rows."""
        _check_hops(hops)
        allowed = None if owners is None else set(owners)
        with self._lock:
            self._refresh()
            graph = self._graph
            rows: list[dict[str, Any]] = []
            for start in dict.fromkeys(node_ids):
                if start not in graph:
                    continue
                seen = {start}
                frontier: list[tuple[str, list[dict[str, str]], list[str]]] = [(start, [], [])]
                for distance in range(1, hops + 1):
                    next_frontier = []
                    for node, path, via in frontier:
                        steps = [(t, d, "out") for _, t, d in graph.out_edges(node, data=True)]
                        steps += [(s, d, "in") for s, _, d in graph.in_edges(node, data=True)]
                        steps = [(o, d, di) for o, d, di in steps if allowed is None or d.get("owner", "") in allowed]
                        for other, data, direction in sorted(
                            steps, key=lambda step: (step[1].get("type", ""), step[1].get("owner", ""), step[0])
                        ):
                            if other in seen:
                                continue
                            seen.add(other)
                            step_path = [*path, _step(data, direction)]
                            rows.append(
                                {
                                    "source": start,
                                    "node": {"id": other, **graph.nodes[other]},
                                    "distance": distance,
                                    "path": step_path,
                                    "via": via,
                                }
                            )
                            if len(rows) >= limit:
                                return rows
                            next_frontier.append((other, step_path, [*via, other]))
                    frontier = next_frontier
            return rows

    def counts(self) -> dict[str, int]:
        """Number of nodes and edges (after reloading a changed file)."""
        with self._lock:
            self._refresh()
            return {"nodes": self._graph.number_of_nodes(), "edges": self._graph.number_of_edges()}


# -- Neo4j: every statement is a constant; values travel as $parameters ------------------------------------------
CYPHER_CONSTRAINT: Final[str] = (
    "CREATE CONSTRAINT legal_node_id IF NOT EXISTS FOR (n:LegalNode) REQUIRE n.id IS UNIQUE"
)
CYPHER_DELETE_ORIGINS: Final[str] = (
    "MATCH (:LegalNode)-[r]->(:LegalNode) WHERE r.origin IN $origins AND coalesce(r.owner, '') = $owner "
    "DELETE r RETURN count(r) AS deleted"
)
CYPHER_MERGE_NODES: Final[str] = "UNWIND $nodes AS row MERGE (n:LegalNode {id: row.id}) SET n += row.properties"
# a private write never renames a node: it creates a missing one with its core properties only
CYPHER_CREATE_NODES: Final[str] = (
    "UNWIND $nodes AS row MERGE (n:LegalNode {id: row.id}) ON CREATE SET n += row.properties"
)
CYPHER_MERGE_EDGES: Final[dict[str, str]] = {
    edge_type: (
        "UNWIND $edges AS row "
        "MERGE (s:LegalNode {id: row.source}) "
        "MERGE (t:LegalNode {id: row.target}) "
        f"MERGE (s)-[r:{edge_type} {{owner: row.owner}}]->(t) "
        "SET r += row.properties"
    )
    for edge_type in EDGE_TYPES
}
CYPHER_RELATED: Final[dict[int, str]] = {
    hops: (
        "MATCH (s:LegalNode) WHERE s.id IN $ids "
        f"MATCH p = (s)-[*1..{hops}]-(t:LegalNode) WHERE t.id <> s.id "
        "AND ($owners IS NULL OR all(r IN relationships(p) WHERE coalesce(r.owner, '') IN $owners)) "
        "WITH s, t, p ORDER BY length(p) "
        "WITH s, t, head(collect(p)) AS p "
        "RETURN s.id AS source, properties(t) AS node, length(p) AS distance, "
        "[r IN relationships(p) | {type: type(r), start: startNode(r).id, properties: properties(r)}] AS rels, "
        "[n IN nodes(p) | n.id] AS ids "
        "ORDER BY source, distance, node.id LIMIT $limit"
    )
    for hops in range(1, MAX_HOPS + 1)
}
CYPHER_COUNTS: Final[str] = (
    "MATCH (n:LegalNode) WITH count(n) AS nodes "
    "OPTIONAL MATCH (:LegalNode)-[r]->(:LegalNode) RETURN nodes, count(r) AS edges"
)


class Neo4jGraph(LegalGraph):
    """
    The graph on a Neo4j server through the official `neo4j` driver (nodes `:LegalNode {id, ...}`, one
    relationship type per edge type). Connection from `LEXHAY_NEO4J_URI`, `LEXHAY_NEO4J_USER` (default `neo4j`)
    and `LEXHAY_NEO4J_PASSWORD`; `driver` replaces the connection (tests pass a fake one).
    """

    backend = "neo4j"

    def __init__(self, *, uri: str | None = None, database: str | None = None, driver: Any = None) -> None:
        """
        :param uri: Bolt / neo4j URI; None reads `LEXHAY_NEO4J_URI`.
        :param database: Database name; None reads `LEXHAY_NEO4J_DATABASE`, else the server's default.
        :param driver: A ready driver (anything with `session(database=...)`); None creates one from the URI.
        :raises ValueError: No driver and no URI.
        """
        from pipelines.settings import current_settings  # noqa: PLC0415 - the one reader of LEXHAY_* variables

        settings = current_settings()
        self.uri = uri or settings.neo4j_uri
        self.database = database or settings.neo4j_database or None
        if driver is None:
            if not self.uri:
                raise ValueError(f"Neo4jGraph needs a URI: pass uri= or set {NEO4J_URI_ENV}")
            from components.utils.extras import optional_import  # noqa: PLC0415

            with optional_import("neo4j", "The Neo4j legal graph") as neo4j_import:
                from neo4j import GraphDatabase  # noqa: PLC0415
            neo4j_import.check()
            user, password = settings.neo4j_user, settings.neo4j_password
            driver = GraphDatabase.driver(self.uri, auth=(user, password))
        self._driver = driver
        self._constraint_done = False

    def _run(self, query: str, parameters: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        with self._driver.session(database=self.database) as session:
            return [record.data() for record in session.run(query, parameters or {})]

    def _ensure_constraint(self) -> None:
        if not self._constraint_done:
            self._run(CYPHER_CONSTRAINT)
            self._constraint_done = True

    def upsert(
        self,
        nodes: list[dict[str, Any]],
        edges: list[dict[str, Any]],
        replace_origins: list[str] | None = None,
        owner: dict[str, Any] | None = None,
    ) -> int:
        """Delete `owner`'s edges of `replace_origins`, merge the nodes, then the edges of each type (a batch each)."""
        _check_nodes(nodes)
        _check_edges(edges)
        stamp = owner_properties(owner)
        self._ensure_constraint()
        if replace_origins:
            self._delete_origins(replace_origins, stamp["owner"])
        if nodes:
            if stamp["owner"]:
                rows = [{"id": n["id"], "properties": {k: v for k, v in _properties(n, ("id",)).items()
                                                       if k in NODE_CORE}} for n in nodes]
                self._run(CYPHER_CREATE_NODES, {"nodes": rows})
            else:
                rows = [{"id": n["id"], "properties": _properties(n, ("id",))} for n in nodes]
                self._run(CYPHER_MERGE_NODES, {"nodes": rows})
        for edge_type in EDGE_TYPES:
            rows = [
                {"source": e["source"], "target": e["target"], "owner": stamp["owner"],
                 "properties": {**_properties(e, ("source", "target")), **stamp}}
                for e in edges
                if e["type"] == edge_type
            ]
            if rows:
                self._run(CYPHER_MERGE_EDGES[edge_type], {"edges": rows})
        return len(edges)

    def remove_origins(self, origins: list[str], owner: dict[str, Any] | None = None) -> int:
        """One `CYPHER_DELETE_ORIGINS` query, which returns how many edges it deleted."""
        if not origins:
            return 0
        self._ensure_constraint()
        return self._delete_origins(origins, owner_properties(owner)["owner"])

    def _delete_origins(self, origins: list[str], owner: str) -> int:
        records = self._run(CYPHER_DELETE_ORIGINS, {"origins": list(origins), "owner": owner})
        return int(records[0]["deleted"]) if records else 0

    def related(
        self, node_ids: list[str], hops: int = 2, limit: int = 50, owners: list[str] | None = None
    ) -> list[dict[str, Any]]:
        """One `CYPHER_RELATED[hops]` query for all start nodes."""
        hops = _check_hops(hops)
        if not node_ids:
            return []
        records = self._run(CYPHER_RELATED[hops], {"ids": list(dict.fromkeys(node_ids)), "limit": int(limit),
                                                   "owners": None if owners is None else list(owners)})
        rows = []
        for record in records:
            ids = list(record["ids"])
            path = [
                _step({**dict(rel.get("properties") or {}), "type": rel["type"]},
                      "out" if rel["start"] == ids[i] else "in")
                for i, rel in enumerate(record["rels"])
            ]
            rows.append(
                {
                    "source": record["source"],
                    "node": dict(record["node"]),
                    "distance": int(record["distance"]),
                    "path": path,
                    "via": ids[1:-1],
                }
            )
        return rows

    def counts(self) -> dict[str, int]:
        """Number of `:LegalNode` nodes and of relationships between them."""
        records = self._run(CYPHER_COUNTS)
        row = records[0] if records else {"nodes": 0, "edges": 0}
        return {"nodes": int(row["nodes"]), "edges": int(row["edges"])}

    def close(self) -> None:
        """Close the driver."""
        self._driver.close()


_GRAPHS: dict[tuple[str, str], LegalGraph] = {}
_GRAPHS_LOCK = threading.Lock()


def resolve_backend(backend: str | None) -> str:
    """`backend` checked, or (None) `neo4j` when `LEXHAY_NEO4J_URI` is set, else `networkx`."""
    if backend is None:
        from pipelines.settings import current_settings  # noqa: PLC0415 - the one reader of LEXHAY_* variables

        return "neo4j" if current_settings().neo4j_uri else "networkx"
    if backend not in BACKENDS:
        raise ValueError(f"Unknown graph backend {backend!r}; use one of {BACKENDS} (or None: automatic)")
    return backend


def graph_path(path: str | None = None, document_store: Any = None) -> Path:
    """
    The NetworkX graph file: `path`; else `graph.json` in the document store's directory (`resolved_path` of an
    `EdgeDocumentStore`); else in `$LEXHAY_STORE` or `./.lexhay` (a store on a server has no directory).
    """
    if path:
        return Path(path).expanduser().resolve()
    store_dir = getattr(document_store, "resolved_path", None)
    if store_dir is None:
        from pipelines.settings import current_settings  # noqa: PLC0415 - the one reader of LEXHAY_* variables

        store_dir = Path(current_settings().store_path or "./.lexhay").expanduser().resolve()
    return Path(store_dir) / GRAPH_FILE


def open_legal_graph(
    *, backend: str | None = None, path: str | None = None, document_store: Any = None, database: str | None = None
) -> LegalGraph:
    """
    The shared graph of this process for a location: NetworkX at `graph_path(path, document_store)`, or Neo4j at
    `LEXHAY_NEO4J_URI` (see `resolve_backend`).
    """
    backend = resolve_backend(backend)
    if backend == "neo4j":
        from pipelines.settings import current_settings  # noqa: PLC0415 - the one reader of LEXHAY_* variables

        settings = current_settings()
        uri = settings.neo4j_uri
        if not uri:
            raise ValueError(f"The neo4j graph backend needs {NEO4J_URI_ENV} (bolt://host:7687)")
        key = (backend, f"{uri}|{database or settings.neo4j_database or ''}")
    else:
        key = (backend, str(graph_path(path, document_store)))
    with _GRAPHS_LOCK:
        graph = _GRAPHS.get(key)
        if graph is None:
            graph = Neo4jGraph(uri=uri, database=database) if backend == "neo4j" else NetworkXGraph(key[1])
            _GRAPHS[key] = graph
        return graph
