"""Citations inside parent blocks -> `meta["refs"]` (cited parent-block ids) and legal-graph nodes and edges."""

import dataclasses
import re
from collections import Counter
from typing import Any, Final

from haystack import Document, component, default_from_dict, default_to_dict, logging

from components.legal.citations import CitationGrammar
from components.document_stores.legal_graph import article_node_id, law_node_id
from components.legal.ids import parent_id_for

logger = logging.getLogger(__name__)

# collections whose documents interpret norms (their citations become INTERPRETA edges)
INTERPRETING_COLLECTIONS: Final[frozenset[str]] = frozenset({"sentencias", "criterios"})
# article keys of derogatory provisions: what they cite, they repeal (REVOGA)
DEROGATORY_ARTICLES: Final[frozenset[str]] = frozenset({"dd", "rd-dd"})
# "Real Decreto 2720/1998, ... por el que se desarrolla el artículo 15 del Estatuto de los Trabajadores ..."
_DEVELOPS_RE: Final[re.Pattern[str]] = re.compile(
    r"\b(?:por\s+(?:el|la)\s+que\s+se\s+desarroll\w+|de\s+desarrollo\s+de|para\s+la\s+aplicaci[oó]n\s+y\s+"
    r"desarrollo\s+de|que\s+regulamenta|regulamenta\s+(?:o|a|os|as))\b",
    re.IGNORECASE,
)
# in a derogatory provision, a citation right after these words describes or spares a norm; it does not repeal it
_NOT_REPEALED_RE: Final[re.Pattern[str]] = re.compile(
    r"\b(?:por\s+(?:el|la|lo)\s+que|sobre\s+modificaci|conformidad\s+con|dispuesto\s+en|previsto\s+en|establecido"
    r"|efectos\s+de|desarroll|contenid[ao]s?\s+en|excepto|salvo|sin\s+perjuicio|a\s+excepci[oó]n|manteni|vigente"
    r"|aprobad[oa]s?\s+por)",
    re.IGNORECASE,
)
# a list item of a derogatory provision: "a) ", "1. ", "2.ª "
_LIST_ITEM_RE: Final[re.Pattern[str]] = re.compile(r"(?:^|\s)(?:[a-zñ]\)|\d{1,2}\.ª?)\s", re.MULTILINE)
MAX_EDGE_TEXT: Final[int] = 160


@component
class ReferenceExtractor:
    """
    Reads the citations inside parent blocks at indexing time and resolves them to the parent blocks they cite.

    Citations are parsed by `CitationGrammar.extract_references` (the same parser as the query stage) and
    resolved against the block's own law:

    - "artículo 48 de esta ley", "de la presente ley", "deste Ato ..." and an article with no law after it: the
      law being parsed; "de la citada ley", "del mismo texto legal": the last law named before it in the block;
    - "el artículo 15 del Estatuto de los Trabajadores", "art. 7º da Constituição": the named law of the laws
      table; a named law outside the table ("Ley 36/2011") becomes a graph edge to an external article node
      only, and a norm named without a number ("del Reglamento General de Recaudación") stays unresolved;
    - the block's own heading ("Artículo 38. ...") and citations of its own article are skipped.

    A resolved citation points to part 1 of the cited article: `parent_id_for(law_id, article, 1)` (the other
    parts are its siblings, added at query time by `CitedBlockExpander`); ids are computed, not looked up, so a cited law
    that is not indexed gives ids that the query stage skips. `meta["refs"]` lists the ids in reading order,
    unique, at most `max_refs`.

    Graph edges (`nodes` / `edges` outputs, written by `GraphWriter`):
    - `CITA` article -> cited article (`INTERPRETA` when the block's `collection` is `sentencias` or `criterios`,
      also for law-only citations);
    - `REVOGA` law -> repealed law from `meta["derogated_by"]` (front matter / laws table: ET 2015 -> ET 1995),
      and from what a derogatory provision (`dd`, `rd-dd`) cites in other laws (law or article nodes);
    - `REGULAMENTA` law -> article (or law) cited in the law's title after "por el que se desarrolla"
      (RD 2720/1998 -> ET art. 15); with `regulation_refs`, every block of that law also gets those ids in
      `refs`, after its own citations.

    ### Usage example

    ```python
    from components.extractors.reference_extractor import ReferenceExtractor

    extractor = ReferenceExtractor()
    result = extractor.run(documents=parent_blocks)  # SemanticParentSplitter output
    result["documents"][0].meta["refs"]  # ids of the cited parent blocks
    graph_writer.run(nodes=result["nodes"], edges=result["edges"])
    ```
    """

    def __init__(
        self,
        *,
        laws_file: str | None = None,
        aliases: dict[str, str | None] | None = None,
        max_refs: int = 20,
        regulation_refs: bool = True,
    ) -> None:
        """
        Create a ReferenceExtractor.

        :param laws_file: Laws table for the citation grammar (None: the bundled `components/legal/data/laws.yaml`).
        :param aliases: Extra law names for the citation grammar.
        :param max_refs: At most this many ids in one block's `refs` (a few blocks list dozens of articles).
        :param regulation_refs: Whether the blocks of a regulation also refer to the articles its title says it
            develops (REGULAMENTA targets).
        :raises ValueError: `max_refs` < 1, or an invalid laws table / alias (see `CitationGrammar`).
        """
        if not isinstance(max_refs, int) or max_refs < 1:
            raise ValueError(f"max_refs must be a positive integer, got {max_refs!r}")
        self.laws_file = laws_file
        self.aliases = aliases
        self.max_refs = max_refs
        self.regulation_refs = regulation_refs
        self._detector = CitationGrammar(laws_file=laws_file, aliases=aliases)

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(
            self,
            laws_file=self.laws_file,
            aliases=self.aliases,
            max_refs=self.max_refs,
            regulation_refs=self.regulation_refs,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ReferenceExtractor":
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)

    @component.output_types(
        documents=list[Document], nodes=list[dict[str, Any]], edges=list[dict[str, Any]], stats=dict[str, int]
    )
    def run(self, documents: list[Document]) -> dict[str, Any]:
        """
        Extract the references of parent blocks.

        :param documents: Parent blocks with meta `law_id` and `article` (`SemanticParentSplitter` output); other
            meta used: `law_short`, `law_title`, `rank`, `status`, `derogated_by`, `collection`, `article_title`.
        :returns: A dictionary with:
            - `documents`: the blocks, each with `meta["refs"]` (a list, possibly empty);
            - `nodes`: graph nodes (`id`, `kind` law/article, `law_id`, `law`, `article`, `title`, `rank`, ...);
              the laws of the blocks carry `indexed: True` (`GraphWriter` replaces their old edges);
            - `edges`: unique graph edges `{"source", "target", "type", "origin" (law id of the block), "text"}`;
            - `stats`: counts: `blocks`, `citations` (article citations read), `resolved` (to a law of the
              table), `external` (to a law outside it), `unresolved`, `law_level`, `refs`.
        :raises ValueError: A document without `law_id` / `article`.
        """
        nodes: dict[str, dict[str, Any]] = {}
        edges: dict[tuple[str, str, str], dict[str, Any]] = {}
        stats: Counter[str] = Counter()
        regulated: dict[str, list[str]] = {}
        out: list[Document] = []
        for doc in documents:
            meta = doc.meta
            if not meta.get("law_id") or not meta.get("article"):
                raise ValueError(f"Document {doc.id} lacks meta 'law_id'/'article': run ArticleParser first")
            law_id, article = str(meta["law_id"]), str(meta["article"])
            stats["blocks"] += 1
            source = article_node_id(law_id, article)
            self._add_node(nodes, law_id, None, meta, indexed=True)
            self._add_node(nodes, law_id, article, meta, indexed=True)
            if law_id not in regulated:
                regulated[law_id] = self._law_edges(meta, nodes, edges)
            refs = self._block_refs(doc, source, nodes, edges, stats)
            if self.regulation_refs:
                refs.extend(r for r in regulated[law_id] if r not in refs and r != doc.id)
            refs = refs[: self.max_refs]
            stats["refs"] += len(refs)
            out.append(dataclasses.replace(doc, meta={**meta, "refs": refs}))
        logger.info(
            "ReferenceExtractor: {blocks} blocks, {citations} article citations ({resolved} resolved, {external} "
            "external, {unresolved} unresolved), {refs} refs, {edges} graph edges",
            blocks=stats["blocks"],
            citations=stats["citations"],
            resolved=stats["resolved"],
            external=stats["external"],
            unresolved=stats["unresolved"],
            refs=stats["refs"],
            edges=len(edges),
        )
        stat_keys = ("blocks", "citations", "resolved", "external", "unresolved", "law_level", "refs")
        return {
            "documents": out,
            "nodes": list(nodes.values()),
            "edges": list(edges.values()),
            "stats": {key: stats[key] for key in stat_keys},
        }

    # -- per block -----------------------------------------------------------------------------------------------

    def _block_refs(
        self,
        doc: Document,
        source: str,
        nodes: dict[str, dict[str, Any]],
        edges: dict[tuple[str, str, str], dict[str, Any]],
        stats: Counter[str],
    ) -> list[str]:
        """Resolve one block's citations: its refs (part-1 ids) and its edges."""
        meta = doc.meta
        law_id, article = str(meta["law_id"]), str(meta["article"])
        text = doc.content or ""
        interprets = meta.get("collection") in INTERPRETING_COLLECTIONS
        cite_type = "INTERPRETA" if interprets else "CITA"
        refs: list[str] = []
        last_law: tuple[str | None, str | None] | None = None
        for citation in self._detector.extract_references(text):
            scope, target_article = citation["scope"], citation["article"]
            repeals = self._repeals(meta, text, citation)
            if scope == "law":
                last_law = (citation["law_id"], citation["law"])
            if target_article is None:  # a law named without an article
                target_law = law_node_id(citation["law_id"], citation["law"])
                if target_law is None or target_law == law_id:
                    continue
                stats["law_level"] += 1
                if repeals or interprets:
                    self._add_law_target(nodes, citation)
                    self._add_edge(edges, law_id if repeals else source, target_law,
                                   "REVOGA" if repeals else cite_type, law_id, citation)
                continue
            if scope == "none" and not text[: citation["span"][0]].strip():
                continue  # the block's own heading: "Artículo 38. Vacaciones anuales."
            if scope in ("self", "none"):
                target_id, target_name = law_id, meta.get("law_short")
            elif scope == "anaphora" and last_law is not None:
                target_id, target_name = last_law
            elif scope == "law":
                target_id, target_name = citation["law_id"], citation["law"]
            else:
                stats["citations"] += 1
                stats["unresolved"] += 1
                continue
            target_law = law_node_id(target_id, target_name)
            if target_law is None:
                continue
            if target_law == law_id and target_article == article:
                continue  # "apartado 2 de este artículo 38" inside article 38
            stats["citations"] += 1
            stats["resolved" if target_id else "external"] += 1
            node = article_node_id(target_law, target_article)
            if node not in nodes:
                nodes[node] = {"id": node, "kind": "article", "law_id": target_id, "law": target_name,
                               "article": target_article}
            if target_id is None:
                self._add_law_target(nodes, {"law_id": None, "law": target_name})
            if repeals and target_law != law_id:
                self._add_edge(edges, law_id, node, "REVOGA", law_id, citation)
                continue
            self._add_edge(edges, source, node, cite_type, law_id, citation)
            if target_id:
                ref = parent_id_for(target_id, target_article, 1)
                if ref not in refs and ref != doc.id:
                    refs.append(ref)
        return refs

    @staticmethod
    def _repeals(meta: dict[str, Any], text: str, citation: dict[str, Any]) -> bool:
        """
        Whether a citation of a derogatory provision names what it repeals: not after words that describe or
        spare a norm ("por el que se desarrolla el artículo 15 ...", "excepto lo dispuesto en sus artículos 45")
        earlier in its list item (or line), and never the law that repeals this one.
        """
        if str(meta["article"]) not in DEROGATORY_ARTICLES:
            return False
        if citation["law_id"] and citation["law_id"] == meta.get("derogated_by"):
            return False
        start = citation["span"][0]
        item_start = text.rfind("\n", 0, start) + 1
        for item in _LIST_ITEM_RE.finditer(text, item_start, start):
            item_start = item.end()
        window = text[item_start:start]
        return not _NOT_REPEALED_RE.search(window)

    def _law_edges(
        self, meta: dict[str, Any], nodes: dict[str, dict[str, Any]], edges: dict[tuple[str, str, str], dict[str, Any]]
    ) -> list[str]:
        """The law-level edges of a block's law (REVOGA from `derogated_by`, REGULAMENTA from the title); returns
        the part-1 ids of the articles the law develops."""
        law_id = str(meta["law_id"])
        derogated_by = meta.get("derogated_by")
        if derogated_by and str(derogated_by) != law_id:
            nodes.setdefault(str(derogated_by), {"id": str(derogated_by), "kind": "law", "law_id": str(derogated_by)})
            origin = {"text": f"derogated_by: {derogated_by}"}
            self._add_edge(edges, str(derogated_by), law_id, "REVOGA", law_id, origin)
        title = str(meta.get("law_title") or "")
        develops = _DEVELOPS_RE.search(title)
        if not develops:
            return []
        ids: list[str] = []
        for citation in self._detector.extract_references(title[develops.end() :]):
            target_law = law_node_id(citation["law_id"], citation["law"])
            if citation["scope"] != "law" or target_law is None or target_law == law_id:
                continue
            self._add_law_target(nodes, citation)
            if citation["article"] is None:
                self._add_edge(edges, law_id, target_law, "REGULAMENTA", law_id, citation)
                continue
            node = article_node_id(target_law, citation["article"])
            nodes.setdefault(node, {"id": node, "kind": "article", "law_id": citation["law_id"],
                                    "law": citation["law"], "article": citation["article"]})
            self._add_edge(edges, law_id, node, "REGULAMENTA", law_id, citation)
            if citation["law_id"]:
                ids.append(parent_id_for(citation["law_id"], citation["article"], 1))
        return ids

    # -- graph helpers -------------------------------------------------------------------------------------------

    @staticmethod
    def _add_node(
        nodes: dict[str, dict[str, Any]], law_id: str, article: str | None, meta: dict[str, Any], *, indexed: bool
    ) -> None:
        """The node of an indexed law or article, with the properties the enricher shows."""
        if article is None:
            node = {"id": law_id, "kind": "law", "law_id": law_id, "law": meta.get("law_short"),
                    "title": meta.get("law_title"), "rank": meta.get("rank"), "status": meta.get("status"),
                    "collection": meta.get("collection"), "indexed": indexed}
        else:
            node = {"id": article_node_id(law_id, article), "kind": "article", "law_id": law_id,
                    "law": meta.get("law_short"), "article": article, "title": meta.get("article_title") or None,
                    "label": meta.get("article_label"), "rank": meta.get("rank"),
                    "collection": meta.get("collection"), "indexed": indexed}
        existing = nodes.get(node["id"], {})
        nodes[node["id"]] = {**existing, **{k: v for k, v in node.items() if v is not None}}

    @staticmethod
    def _add_law_target(nodes: dict[str, dict[str, Any]], citation: dict[str, Any]) -> None:
        target = law_node_id(citation["law_id"], citation["law"])
        if target and target not in nodes:
            nodes[target] = {"id": target, "kind": "law", "law_id": citation["law_id"], "law": citation["law"]}

    @staticmethod
    def _add_edge(
        edges: dict[tuple[str, str, str], dict[str, Any]],
        source: str,
        target: str,
        edge_type: str,
        origin: str,
        citation: dict[str, Any],
    ) -> None:
        key = (source, target, edge_type)
        if key not in edges:
            text = " ".join(str(citation.get("text") or "").split())[:MAX_EDGE_TEXT]
            edges[key] = {"source": source, "target": target, "type": edge_type, "origin": origin, "text": text}
