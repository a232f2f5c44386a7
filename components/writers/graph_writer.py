"""Writes the legal-graph nodes and edges found at indexing (`ReferenceExtractor`) to the graph backend."""

from typing import Any

from haystack import component, default_from_dict, default_to_dict, logging

from components.document_stores.legal_graph import LegalGraph, open_legal_graph, resolve_backend

logger = logging.getLogger(__name__)


@component
class GraphWriter:
    """
    Writes graph nodes and edges to the legal graph: NetworkX JSON beside the document store
    (`<store path>/graph.json`) by default, Neo4j when `LEXHAY_NEO4J_URI` is set (see `components.document_stores.legal_graph`).

    The laws whose blocks were indexed in this run (nodes with `kind: law` and `indexed: True`) have their old
    edges replaced, so re-indexing a law never leaves stale or duplicate edges. Edges belong to `owner` (the access
    meta the documents were indexed with, `LexHay.index` passes it; None = the public corpus): a tenant's copy of
    a law replaces only that tenant's edges and never renames a public node (see `LegalGraph`).

    ### Usage example

    ```python
    from components.writers.graph_writer import GraphWriter
    from components.extractors.reference_extractor import ReferenceExtractor

    extracted = ReferenceExtractor().run(documents=parent_blocks)
    GraphWriter(document_store=store).run(nodes=extracted["nodes"], edges=extracted["edges"])
    ```
    """

    def __init__(
        self,
        *,
        document_store: Any = None,
        path: str | None = None,
        backend: str | None = None,
        enabled: bool = True,
    ) -> None:
        """
        Create a GraphWriter.

        :param document_store: The store the blocks go to; the NetworkX graph file lives in its directory.
        :param path: The NetworkX graph file; None: `graph.json` beside the store (else in `$LEXHAY_STORE` or
            `./.lexhay`).
        :param backend: `networkx`, `neo4j`, or None: `neo4j` when `LEXHAY_NEO4J_URI` is set, else `networkx`.
        :param enabled: Feature flag: when False nothing is written.
        :raises ValueError: An unknown backend.
        """
        if backend is not None:
            resolve_backend(backend)
        self.document_store = document_store
        self.path = path
        self.backend = backend
        self.enabled = enabled
        self._graph: LegalGraph | None = None

    def warm_up(self) -> None:
        """Open the graph (once)."""
        if self._graph is None:
            self._graph = open_legal_graph(backend=self.backend, path=self.path, document_store=self.document_store)

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(
            self,
            document_store=self.document_store,
            path=self.path,
            backend=self.backend,
            enabled=self.enabled,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "GraphWriter":
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)

    @component.output_types(nodes_written=int, edges_written=int, backend=str)
    def run(
        self,
        nodes: list[dict[str, Any]] | None = None,
        edges: list[dict[str, Any]] | None = None,
        enabled: bool | None = None,
        owner: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """
        Write nodes and edges.

        :param nodes: Graph nodes (`ReferenceExtractor.nodes`).
        :param edges: Graph edges (`ReferenceExtractor.edges`).
        :param enabled: Overrides the init `enabled` for this run.
        :param owner: Owner access meta of the documents these came from (`scope`, `tenant_id`, ...; what
            `tenant_meta` stamps); None = global.
        :returns: `nodes_written`, `edges_written` and the `backend` used (`disabled` when switched off).
        :raises ValueError: A node without `id` or an edge without `source` / `target` / a known `type`.
        """
        if not (self.enabled if enabled is None else enabled):
            return {"nodes_written": 0, "edges_written": 0, "backend": "disabled"}
        nodes, edges = list(nodes or []), list(edges or [])
        self.warm_up()
        graph = self._graph
        assert graph is not None
        origins = [n["id"] for n in nodes if n.get("kind") == "law" and n.get("indexed")]
        written = graph.upsert(nodes, edges, replace_origins=origins, owner=owner)
        logger.info(
            "GraphWriter: {nodes} nodes, {edges} edges ({backend}), replaced edges of {laws} law(s)",
            nodes=len(nodes),
            edges=written,
            backend=graph.backend,
            laws=len(origins),
        )
        return {"nodes_written": len(nodes), "edges_written": written, "backend": graph.backend}

    def remove(self, law_ids: list[str], owner: dict[str, Any] | None = None) -> int:
        """
        Delete `owner`'s edges that these laws' texts produced (an owner withdrawing what it uploaded); other
        owners' edges, and the nodes, stay.

        :param law_ids: The laws' `law_id`s (their law nodes are the edges' `origin`).
        :param owner: Owner access meta, as for `run`; None = global.
        :returns: The number of edges deleted (0 when the writer is disabled).
        """
        if not self.enabled or not law_ids:
            return 0
        self.warm_up()
        graph = self._graph
        assert graph is not None
        return graph.remove_origins(list(law_ids), owner=owner)
