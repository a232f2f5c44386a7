"""Lexical-first gating: when a question cites articles and the direct fetch finds them, skip query expansion."""

import re
from dataclasses import replace
from typing import Any, Final

from haystack import Document, component, default_from_dict, default_to_dict, logging

from components.legal.answer_format import holds_subdivision
from components.legal.citations import cited_articles, cites_block, listed_spans
from components.legal.ids import EXACT_MATCH, LEXICAL_MATCH, REPEALED, WHOLE_TEXT, decree_key
from components.legal.jurisdiction import in_jurisdiction

logger = logging.getLogger(__name__)

EXACT_HIT_SCORE: Final[float] = 1.0
ARTICLE_MATCH_SCORE: Final[float] = 0.5
REASON_NO_ARTICLES: Final[str] = "no article cited in the query"
REASON_EXACT_HIT: Final[str] = "exact article hit: {hits}"
REASON_ENOUGH_RESULTS: Final[str] = "{count} cited articles fetched (min_results {min_results})"
REASON_DISABLED: Final[str] = "lexical-first gating disabled: expansion runs"
REASON_WEAK_FETCH: Final[str] = "weak direct fetch: {count} cited articles, no exact hit (min_results {min_results})"


@component
class LexicalFirstGate:
    """
    Decides from the directly fetched documents of the cited articles whether query expansion can be skipped.

    Input: the citations of `CitationDetector` and the documents its `filters` fetched from the store. A document
    is an *exact hit* when its `law_id` and `article` match a citation (for a norm the laws table lacks, that a
    caller indexed: its `law_key`, "art. 6 da Lei 605/49"), or when it matches a citation without a law
    ("según el artículo 122") and that article was found in one law only, or in a law the question names with
    another citation ("o art. 3º da CLT e o art. 2º"), or in one law only of the question's jurisdiction, or of
    those in one law only has the subdivision the citation names ("o que diz o artigo 7º, inciso XVII?": the CLT's
    and the Constitution's article 7 are Brazilian, the Constitution's alone has an inciso XVII); it then gets score
    1.0. A document that matches a law-less citation found in several such laws is an article match (score 0.5),
    unless its law is outside the question's jurisdiction and a law inside it has that article (then dropped: a
    Spanish "¿qué dice el artículo 2?" is not about the Brazilian Constitution). Both carry `meta["score_type"] =
    "unit"` (calibrated scores, read by `CRAGRouter`) and `meta["lexical_match"]` (`exact` / `article`); documents
    that match no citation are dropped. When the citations ask for the cited articles' whole wording (`whole_text`,
    "transcribe el artículo 38"), the exact hits carry `meta["whole_text"] = True`: `ContextCompressor` keeps them
    whole.

    Expansion is skipped when there is an exact hit, or when at least `min_results` distinct cited articles
    (law, article) were fetched.

    A cited article the fetch did not find ("artículo 500 del ET", a mistyped "art. 1000 da CLT") is reported in
    `missing`, for the answer to say that it is not in the legislation available, rather than quote the nearest
    article as if it were the one asked about.

    ### Usage example

    ```python
    from components.extractors.citation_detector import CitationDetector
    from components.routers.lexical_first_gate import LexicalFirstGate

    detected = CitationDetector().run(query="¿Qué dice el art. 38 ET?")
    fetched = store.filter_documents(detected["filters"]) if detected["filters"] else []
    gate = LexicalFirstGate(min_results=3).run(citations=detected["citations"], documents=fetched)
    if gate["skip_expansion"]:
        documents = gate["documents"]
    ```
    """

    def __init__(self, *, min_results: int = 3, enabled: bool = True) -> None:
        """
        Create a LexicalFirstGate.

        :param min_results: Distinct cited articles that make a fetch strong enough without an exact hit.
        :param enabled: Feature flag (`lexical_first_gating`); `False` never skips expansion, the cited documents
            are still passed on. A run's `enabled` overrides it.
        :raises ValueError: If `min_results` < 1.
        """
        if min_results < 1:
            raise ValueError(f"min_results must be >= 1, got {min_results}")
        self.enabled = enabled
        self.min_results = min_results

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(self, enabled=self.enabled, min_results=self.min_results)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "LexicalFirstGate":
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)

    @component.output_types(skip_expansion=bool, documents=list[Document], reason=str, missing=list[str])
    def run(
        self, citations: list[dict[str, Any]], documents: list[Document], enabled: bool | None = None
    ) -> dict[str, Any]:
        """
        Score the directly fetched documents and decide whether to skip query expansion.

        :param citations: Citations from `CitationDetector` (`law_id`, `article`; law-only citations are ignored).
        :param documents: Documents fetched with the detector's `filters`.
        :param enabled: Overrides the init `enabled` for this run (per-request feature flag).
        :returns: `skip_expansion`; `documents`: the documents matching a citation, exact hits first, with scores
            set as described above, each group in the order the question cites the articles; `reason`: why (for the
            trace); `missing`: the cited articles of a known law (or, without a law, of any) that the fetch did not
            find, as the question writes them ("artículo 500 del ET"; "ET art. 500" for one of a list), in order.
        """
        gated = self.enabled if enabled is None else enabled
        result = self._gate(citations, documents)
        if not gated and result["skip_expansion"]:
            result = {**result, "skip_expansion": False, "reason": REASON_DISABLED}
        return result

    def _gate(self, citations: list[dict[str, Any]], documents: list[Document]) -> dict[str, Any]:
        """The gate's decision (see `run`)."""
        with_law = {(c["law_id"], c["article"]) for c in citations if c.get("article") and c.get("law_id")}
        lawless = {c["article"] for c in citations if c.get("article") and not c.get("law_id") and not c.get("law")}
        # an article of a norm the laws table lacks, fetched by its `law_key` when a caller indexed that norm
        unlisted = [c for c in citations if c.get("article") and not c.get("law_id") and c.get("law")]
        if not with_law and not lawless and not unlisted:
            return {"skip_expansion": False, "documents": [], "reason": REASON_NO_ARTICLES, "missing": []}

        fetched = _by_article(documents, lawless)
        read_as = _lawless_laws(citations, fetched)
        cited = cited_articles(citations)  # a law-less article under a law the question names is cited too
        # "disposición derogatoria única del ET": the approving decree's provision of that name (`decree_key`)
        cited |= {(law_id, decree) for law_id, article in list(cited) if (decree := decree_key(article))}
        foreign = _foreign(citations, fetched)
        exact, partial = [], []
        whole = any(c.get(WHOLE_TEXT) for c in citations)  # the question asks for the cited articles' wording
        for doc in documents:
            key = (doc.meta.get("law_id"), doc.meta.get("article"))
            if (key in cited or (key[1] in read_as and read_as[key[1]] == key[0])
                    or any(cites_block(c, doc.meta) for c in unlisted)):
                exact.append(_scored(doc, EXACT_HIT_SCORE, EXACT_MATCH, whole=whole))
            elif key[1] in lawless and key not in foreign:
                partial.append(_scored(doc, ARTICLE_MATCH_SCORE, "article"))
            else:
                logger.debug("Fetched document {doc_id} matches no citation; dropped", doc_id=doc.id)
        # In the order the question cites them ("arts. 391 e 391-A": 391 first), not in the store's order.
        position = _citation_positions(citations)
        exact.sort(key=lambda d: _position(position, d))
        partial.sort(key=lambda d: _position(position, d))
        matched = exact + partial
        count = len({(d.meta.get("law_id"), d.meta.get("article")) for d in matched})
        if exact:
            hits = sorted(
                {f"{d.meta.get('law_short') or d.meta.get('law_id')} art. {d.meta['article']}" for d in exact}
            )
            skip, reason = True, REASON_EXACT_HIT.format(hits=", ".join(hits))
        elif count >= self.min_results:
            skip, reason = True, REASON_ENOUGH_RESULTS.format(count=count, min_results=self.min_results)
        else:
            skip, reason = False, REASON_WEAK_FETCH.format(count=count, min_results=self.min_results)
        logger.debug("Lexical-first gate: skip_expansion={skip} ({reason})", skip=skip, reason=reason)
        missing = _missing(citations, documents)
        return {"skip_expansion": skip, "documents": matched, "reason": reason, "missing": missing}


def _by_article(documents: list[Document], lawless: set[str]) -> dict[str, dict[Any, list[Document]]]:
    """The fetched blocks of the articles cited with no law, by article and then by law."""
    found: dict[str, dict[Any, list[Document]]] = {}
    for doc in documents:
        if doc.meta.get("article") in lawless:
            found.setdefault(doc.meta["article"], {}).setdefault(doc.meta.get("law_id"), []).append(doc)
    return found


def _lawless_laws(citations: list[dict[str, Any]], found: dict[str, dict[Any, list[Document]]]) -> dict[str, str]:
    """
    Per article cited with no law, the one law it is read as, when the fetch tells: the only law it was found in;
    else the only one of those in force (the corpus keeps repealed texts for questions that name them); else the only
    one of those in the citation's `jurisdiction`; else, of those, the only one whose article has the subdivision the
    citation names (`units`). An article the fetch leaves in several laws is not in the result. `found`: `_by_article`.
    """
    read_as: dict[str, str] = {}
    for article, laws in found.items():
        for citation in (c for c in citations if c.get("article") == article and not c.get("law_id")):
            jurisdiction, units = citation.get("jurisdiction"), citation.get("units")
            if len(laws) > 1:
                laws = {law: blocks for law, blocks in laws.items() if blocks[0].meta.get("status") != REPEALED} or laws
            if jurisdiction and len(laws) > 1:
                laws = {law: blocks for law, blocks in laws.items()
                        if in_jurisdiction(blocks[0].meta, jurisdiction)} or laws
            if units and len(laws) > 1:
                units = [(str(kind), str(value)) for kind, value in units]
                laws = {law: blocks for law, blocks in laws.items() if holds_subdivision(blocks, units)} or laws
        if len(laws) == 1:
            read_as[article] = next(iter(laws))
    return read_as


def _foreign(citations: list[dict[str, Any]], found: dict[str, dict[Any, list[Document]]]) -> set[tuple[Any, str]]:
    """
    The (law, article) pairs fetched for an article cited with no law that lie outside the citation's
    `jurisdiction` while a law inside it has that article: "¿qué dice el artículo 2?", asked in Spanish, is not
    about the Brazilian Constitution's article 2. A law whose meta does not say its jurisdiction is kept. `found`:
    `_by_article`.
    """
    foreign: set[tuple[Any, str]] = set()
    for citation in citations:
        article, jurisdiction = citation.get("article"), citation.get("jurisdiction")
        if citation.get("law_id") or citation.get("law") or not jurisdiction or article not in found:
            continue
        inside = {law: in_jurisdiction(blocks[0].meta, jurisdiction) for law, blocks in found[article].items()}
        if any(inside.values()):
            foreign |= {(law, article) for law, within in inside.items() if within is False}
    return foreign


def _missing(citations: list[dict[str, Any]], documents: list[Document]) -> list[str]:
    """The cited articles no fetched document is (see `run`'s `missing`), once each, in the question's order."""
    fetched = {(doc.meta.get("law_id"), doc.meta.get("article")) for doc in documents}
    articles = {article for _, article in fetched}
    listed = listed_spans(citations)
    missing: list[str] = []
    for citation in citations:
        law_id, article = citation.get("law_id"), citation.get("article")
        if not article or {(law_id, article), (law_id, decree_key(article))} & fetched or (
            not law_id and (citation.get("law") or article in articles)
        ):
            continue  # found, or of a norm the corpus lacks (`CitationDetector.unknown_norms` says so)
        if citation.get("whole_norm"):
            continue  # the question did not cite that article: the norm's first one was only its best answer
        alone = tuple(citation.get("span") or ()) not in listed and citation.get("text")
        written = re.sub(r"-([a-z])$", lambda m: f"-{m.group(1).upper()}", article)  # "477-z": "art. 477-Z"
        label = citation["text"] if alone else ", ".join(p for p in (citation.get("law"), f"art. {written}") if p)
        if label not in missing:
            missing.append(label)
    return missing


def _citation_positions(citations: list[dict[str, Any]]) -> dict[tuple[str | None, str], int]:
    """The first position of each cited (law, article) and of each law-less article (law `None`) in `citations`."""
    positions: dict[tuple[str | None, str], int] = {}
    for index, citation in enumerate(citations):
        if citation.get("article"):
            positions.setdefault((citation.get("law_id") or None, citation["article"]), index)
    return positions


def _position(positions: dict[tuple[str | None, str], int], doc: Document) -> int:
    article = doc.meta.get("article")
    found = positions.get((doc.meta.get("law_id"), article), positions.get((None, article)))
    return len(positions) if found is None else found


def _scored(doc: Document, score: float, match: str, *, whole: bool = False) -> Document:
    meta = {**doc.meta, "score_type": "unit", LEXICAL_MATCH: match}
    if whole:
        meta[WHOLE_TEXT] = True
    return replace(doc, score=score, meta=meta)
