"""Graph enrichment: a short text on how the retrieved articles relate to others (2 hops) and their precedents."""

from typing import Any, Final

from haystack import Document, component, default_from_dict, default_to_dict, logging

from components.legal.access import and_filters, owner_condition, owner_key
from components.document_stores.block_reader import articles_condition, count_blocks, read_blocks
from components.document_stores.legal_graph import LegalGraph, article_node_id, open_legal_graph, resolve_backend

logger = logging.getLogger(__name__)

GRAPH_CONTEXT_HEADER: Final[str] = "Relaciones entre normas (grafo normativo):"
# (edge type, direction seen from the retrieved article) -> how the relation reads
RELATION_LABELS: Final[dict[tuple[str, str], str]] = {
    ("CITA", "out"): "cita",
    ("CITA", "in"): "citado por",
    ("REGULAMENTA", "in"): "desarrollado por",
    ("REGULAMENTA", "out"): "desarrolla",
    ("REVOGA", "in"): "derogado por",
    ("REVOGA", "out"): "deroga",
    ("INTERPRETA", "in"): "interpretado por",
    ("INTERPRETA", "out"): "interpreta",
}
PRECEDENT_COLLECTIONS: Final[frozenset[str]] = frozenset({"sentencias", "criterios"})


def _label(node: dict[str, Any]) -> str:
    """ "ET, art. 15 (Duración del contrato de trabajo)" for an article node, the law's name for a law node."""
    law = node.get("law") or node.get("law_id") or node.get("id")
    if node.get("kind") != "article":
        return str(law)
    article = str(node.get("article") or "")
    label = f"{law}, art. {article}" if article[:1].isdigit() else f"{law}, {node.get('label') or article}"
    title = str(node.get("title") or "").strip().rstrip(".")
    return f"{label} ({title})" if title else label


@component
class GraphEnricher:
    """
    Summarizes, for the best retrieved blocks, the articles related to theirs in the legal graph within `hops`
    edges (CITA, REGULAMENTA, REVOGA in either direction) and their precedents (INTERPRETA edges from
    `sentencias` / `criterios` documents), as a short text for the answer prompt:

    ```
    Relaciones entre normas (grafo normativo):
    - ET, art. 15 (Duración del contrato de trabajo): desarrollado por RD 2720/1998; citado por ET, art. 49 (...)
      y LGSS, art. 267 (...); relacionado (2 saltos) con ...
      Precedentes: STS 123/2020 (...)
    ```

    Only articles and laws visible in the store through `filters` are named (titles are read from the store, so a
    tenant never sees another tenant's documents through the graph), and only along paths whose intermediate node
    is visible too; articles already in the context are not repeated. The graph is the one `GraphWriter` wrote:
    NetworkX beside the store, or Neo4j when `LEXHAY_NEO4J_URI` is set.

    ### Usage example

    ```python
    from components.retrievers.graph_enricher import GraphEnricher

    enricher = GraphEnricher(document_store=store)
    result = enricher.run(documents=context_blocks, filters=access_filters)
    result["graph_context"]  # "" when the graph knows nothing about these articles
    ```
    """

    def __init__(
        self,
        *,
        document_store: Any,
        path: str | None = None,
        backend: str | None = None,
        hops: int = 2,
        max_sources: int = 5,
        max_related: int = 6,
        max_precedents: int = 3,
        max_chars: int = 1500,
        enabled: bool = True,
    ) -> None:
        """
        Create a GraphEnricher.

        :param document_store: The store of the blocks (`filter_documents`); the NetworkX graph file is beside it.
        :param path: The NetworkX graph file; None: `graph.json` beside the store.
        :param backend: `networkx`, `neo4j`, or None: `neo4j` when `LEXHAY_NEO4J_URI` is set, else `networkx`.
        :param hops: Graph distance explored from each article (1 or 2).
        :param max_sources: Best-scored blocks whose articles are summarized.
        :param max_related: Related articles named per source article (nearest first).
        :param max_precedents: Precedents named per source article.
        :param max_chars: Length cap of the summary (whole lines are dropped past it).
        :param enabled: Feature flag: when False the summary is empty and the documents pass through.
        :raises ValueError: An invalid backend, `hops` not 1..2, or a non-positive cap.
        """
        if backend is not None:
            resolve_backend(backend)
        if hops not in (1, 2):
            raise ValueError(f"hops must be 1 or 2, got {hops!r}")
        for name, value in (("max_sources", max_sources), ("max_related", max_related), ("max_chars", max_chars)):
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        if max_precedents < 0:
            raise ValueError(f"max_precedents must be >= 0, got {max_precedents}")
        self.document_store = document_store
        self.path = path
        self.backend = backend
        self.hops = hops
        self.max_sources = max_sources
        self.max_related = max_related
        self.max_precedents = max_precedents
        self.max_chars = max_chars
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
            hops=self.hops,
            max_sources=self.max_sources,
            max_related=self.max_related,
            max_precedents=self.max_precedents,
            max_chars=self.max_chars,
            enabled=self.enabled,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "GraphEnricher":
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document], graph_context=str)
    def run(
        self, documents: list[Document], filters: dict[str, Any] | None = None, enabled: bool | None = None
    ) -> dict[str, Any]:
        """
        Summarize the graph neighbourhood of the best blocks.

        :param documents: The context blocks (meta `law_id`, `article`), best first or with scores.
        :param filters: Haystack filters AND-ed into every store read (the request's access filter).
        :param enabled: Overrides the init `enabled` for this run.
        :returns: `documents` unchanged; `graph_context`: the summary ("" when there is nothing to say).
        """
        documents = list(documents)
        if not (self.enabled if enabled is None else enabled) or not documents:
            return {"documents": documents, "graph_context": ""}
        self.warm_up()
        graph = self._graph
        assert graph is not None
        ranked = sorted(documents, key=lambda d: d.score or 0.0, reverse=True)
        in_context = {
            article_node_id(str(d.meta["law_id"]), str(d.meta["article"]))
            for d in documents
            if d.meta.get("law_id") and d.meta.get("article")
        }
        sources = list(
            dict.fromkeys(
                article_node_id(str(d.meta["law_id"]), str(d.meta["article"]))
                for d in ranked
                if d.meta.get("law_id") and d.meta.get("article")
            )
        )[: self.max_sources]
        limit = 50 * len(sources) or 1
        # edges belong to the owner of the documents that produced them: follow only the owners the caller may read
        owners = self._readable_owners(graph.related(sources, hops=self.hops, limit=limit), filters)
        rows = graph.related(sources, hops=self.hops, limit=limit, owners=owners)
        visible = self._visible(sources, rows, filters)
        lines = []
        for source in sources:
            line = self._summary(source, [r for r in rows if r["source"] == source], visible, in_context)
            if line:
                lines.append(line)
        text = GRAPH_CONTEXT_HEADER
        kept = 0
        for line in lines:
            if len(text) + len(line) + 1 > self.max_chars:
                break
            text += "\n" + line
            kept += 1
        logger.debug("GraphEnricher: {count} article(s) summarized", count=kept)
        return {"documents": documents, "graph_context": text if kept else ""}

    def _readable_owners(self, rows: list[dict[str, Any]], filters: dict[str, Any] | None) -> list[str]:
        """
        The edge owners whose documents the caller reads through `filters`: the public corpus always, another
        owner when one of its blocks of the law that produced such an edge is visible (and of that very owner).
        """
        origins: dict[str, set[str]] = {}
        metas: dict[str, dict[str, Any]] = {}
        for row in rows:
            for step in row["path"]:
                if step.get("owner"):
                    origins.setdefault(step["owner"], set()).add(str(step.get("origin") or ""))
                    metas[step["owner"]] = step.get("owner_meta") or {}
        readable = [""]
        for owner, laws in origins.items():
            condition = and_filters(
                owner_condition(metas[owner]),
                {"field": "meta.law_id", "operator": "in", "value": sorted(laws)},
            )
            if any(owner_key(b.meta) == owner for b in read_blocks(self.document_store, condition, filters)):
                readable.append(owner)
        return readable

    def _visible(
        self, sources: list[str], rows: list[dict[str, Any]], filters: dict[str, Any] | None
    ) -> dict[str, dict[str, Any]]:
        """
        The source, reached and intermediate nodes visible in the store through `filters`, labelled from the store
        (articles) or the graph (laws with at least one visible block). External nodes are never visible.
        """
        nodes: dict[str, tuple[str, str]] = {}
        laws: dict[str, dict[str, Any]] = {}
        for node_id, props in [(s, {}) for s in sources] + [
            (n, row["node"] if n == row["node"]["id"] else {}) for row in rows for n in [row["node"]["id"], *row["via"]]
        ]:
            law_id, _, article = node_id.partition("#")
            if law_id.startswith("ext:"):
                continue
            if article:
                nodes[node_id] = (law_id, article)
            elif props:
                laws[node_id] = props
        visible: dict[str, dict[str, Any]] = {}
        for law_id, props in laws.items():
            if count_blocks(self.document_store, {"field": "meta.law_id", "operator": "==", "value": law_id}, filters):
                visible[law_id] = {"id": law_id, "kind": "law", "law": props.get("law") or law_id,
                                   "collection": props.get("collection")}
        for block in read_blocks(self.document_store, articles_condition(list(nodes.values()), part=1), filters):
            meta = block.meta
            node_id = article_node_id(str(meta["law_id"]), str(meta["article"]))
            visible[node_id] = {
                "id": node_id, "kind": "article", "law": meta.get("law_short") or meta.get("law_id"),
                "article": meta.get("article"), "title": meta.get("article_title"), "label": meta.get("article_label"),
                "collection": meta.get("collection"),
            }
        return visible

    def _summary(
        self,
        source: str,
        rows: list[dict[str, Any]],
        visible: dict[str, dict[str, Any]],
        in_context: set[str],
    ) -> str:
        """One line: the source article, its related articles by relation, its precedents."""
        if source not in visible and not rows:
            return ""
        relations: dict[str, list[str]] = {}
        precedents: list[str] = []
        related = 0
        # nearest first; at one distance, the rarer legal relations (develops, repeals, interprets) before citations
        for row in sorted(rows, key=lambda r: (r["distance"], r["path"][0]["type"] == "CITA")):
            node_id = row["node"]["id"]
            if node_id not in visible or node_id in in_context or any(v not in visible for v in row["via"]):
                continue
            node = visible[node_id]
            first = row["path"][0]
            if node.get("collection") in PRECEDENT_COLLECTIONS and first["type"] == "INTERPRETA":
                if len(precedents) < self.max_precedents:
                    precedents.append(_label(node))
                continue
            if related >= self.max_related:
                continue
            if row["distance"] == 1:
                relation = RELATION_LABELS.get((first["type"], first["direction"]), first["type"].lower())
            else:
                relation = f"relacionado (vía {_label(visible[row['via'][0]])})"
            relations.setdefault(relation, []).append(_label(node))
            related += 1
        if not relations and not precedents:
            return ""
        head = _label(visible.get(source) or {"kind": "article", "id": source, "article": source.partition("#")[2],
                                               "law": source.partition("#")[0]})
        parts = [f"{relation} {', '.join(labels)}" for relation, labels in relations.items()]
        line = f"- {head}: " + "; ".join(parts) if parts else f"- {head}"
        if precedents:
            line += ("; " if parts else ": ") + "precedentes: " + ", ".join(precedents)
        return line + "."
