"""Query stage: the article and law citations of a question, and the filter that fetches the cited articles."""

from collections.abc import Iterator
from typing import Any, Final

from haystack import component, default_from_dict, default_to_dict, logging
from haystack.dataclasses import ChatMessage, ChatRole

from components.legal.citations import (
    FIRST_ARTICLE,
    CitationGrammar,
    adjacent_article,
    article_alone,
    asks_about_whole_norm,
    citation_filters,
    law_key,
    letter_alone,
    listed_spans,
    not_in_corpus,
    pinpoint,
    subdivisions,
)
from components.legal.ids import WHOLE_TEXT
from components.legal.jurisdiction import question_jurisdiction
from components.legal.legal_text import adjacent_key
from components.legal.terms import asks_for_cited_text, asks_nothing_new

logger = logging.getLogger(__name__)


def _user_turns(history: list[ChatMessage] | None) -> Iterator[tuple[int, str]]:
    """The conversation's user questions, the last first, with their index in `history` (what came before each)."""
    messages = list(history or [])
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, ChatMessage) and message.is_from(ChatRole.USER):
            yield index, message.text or ""


# the subdivisions a number goes on counting: "¿y el 5?" after "¿y el apartado 4?" / "e o 2?" after "e o § 1º?"
_NUMBERED_UNITS: Final[frozenset[str]] = frozenset({"apartado", "paragrafo", "regla"})


def _continued_unit(
    query: str, bare: tuple[str, list[int]] | None, history: list[ChatMessage] | None
) -> tuple[list[tuple[str, str]], list[int]] | None:
    """
    A plain number (`bare`, "¿y el 5?") asked right after a question that named a numbered subdivision alone ("¿y
    el apartado 4?"): that kind of subdivision, numbered so (`subdivisions`' shape), of the article the conversation
    is about; None otherwise (then the number is an article's).
    """
    if bare is None or not query[bare[1][0]:bare[1][1]].strip().isdigit():
        return None
    previous = next((text for _, text in _user_turns(history)), "")
    units = subdivisions(previous) if previous and article_alone(previous) is None else None
    if units is None or units[0][-1][0] not in _NUMBERED_UNITS:
        return None
    return [(units[0][-1][0], bare[0])], bare[1]


def _continued_letter(
    grammar: CitationGrammar, query: str, history: list[ChatMessage] | None
) -> tuple[list[tuple[str, str]], list[int]] | None:
    """
    A letter alone ("¿y la c?", "e a alínea d?") asked right after a question that named a letter of an article
    ("ET art 49.1 b", "¿y la letra b?", or another letter alone): that letter of the same article, under the same
    outer subdivisions ("49.1.c"); None otherwise.
    """
    letter = letter_alone(query)
    if letter is None:
        return None
    chained = False  # "¿y la d?" after "¿y la c?": the letters go on; their outer subdivisions come from before
    for _, text in _user_turns(history):
        if letter_alone(text):
            chained = True
            continue
        cited = [c for c in grammar.extract(text, colloquial=True) if c["article"]]
        found = article_alone(text)
        units = (pinpoint(text, cited[-1]["span"]) if cited else pinpoint(text, found[1]) if found
                 else (subdivisions(text) or ([], []))[0])
        lettered = bool(units) and units[-1][0] == "letra"
        if not (lettered or chained):
            return None
        return [*(units[:-1] if lettered else units), ("letra", letter[0])], letter[1]
    return None


@component
class CitationDetector:
    """
    Detects the article and law citations of a question and the Haystack filter that fetches the cited articles.

    The reading itself (forms such as "art. 38 ET", "arts. 40 y 41 ET", "el 48.4 del Estatuto", "Art. 5º, caput,
    da CF", law resolution through `laws.yaml` and aliases) is the shared citation grammar,
    `components.legal.citations.CitationGrammar`; this stage deduplicates the citations of one question and builds
    the direct-fetch filter (OR of `meta.law_id == X AND meta.article == N`; `meta.article == N` alone when no law
    follows the article) used by lexical-first gating. An article of a norm the laws table does not hold ("art. 234
    del Código Penal", "art. 18 do CDC", "art. 5 de la Ley 30/1992") is fetched from nowhere: its number would only
    match other norms' articles. Those norms are reported in `unknown_norms`, for the answer to say so. Brazilian
    forms are read too: "art. 477 da CLT", "§ 8º do art. 477", "CLT 59-A", "artigo 7º, inciso XVII, da CF",
    "art. 10, II, b, do ADCT". A norm named as people type it ("es verdad que la constitucion dice...", "o que a clt
    fala") counts too (the grammar's `colloquial` reading). Case law ("Súmula 331 do TST", CNJ process numbers
    "0001234-56.2023.5.02.0001") is reported apart in `case_law`: statutes hold none of it, so it fetches nothing, and
    it is listed in `unknown_norms` too, for the answer to say it is not in the corpus.

    In a conversation (`history`), a follow-up question cites what the earlier ones cited: an article with no law or
    with an anaphora ("¿y el artículo 15 de la misma ley?", "e o art. 2º?") is of the law the last question citing
    one named (so is an article named by its number alone, the whole question being "¿y el 41?", "e o 483?"), and a
    subdivision with no article ("e o parágrafo 8º?", "¿y el apartado 2?") is of the article the last question
    citing one named (the citation then carries `units`, for the answer to quote that subdivision). Such a citation
    has `from_history: True`. So has the article after or before the one the conversation is about, named as such
    ("¿y el siguiente?", "¿y el artículo anterior?", "e o próximo artigo?"; `adjacent_article`, `adjacent_key`): the
    next or previous number of the last article the conversation cited, in its law.

    A turn that only asks to go on ("resúmelo", "explica melhor", `terms.asks_nothing_new`) cites the articles of the
    last user question citing any, read as that question was (`from_history: True`, an empty span).

    An article cited with no law carries what tells its law among those that have that number: the question's
    `jurisdiction` (`question_jurisdiction`) and the subdivision it names (`units`, `pinpoint`); `LexicalFirstGate`
    reads it in the one law they leave.

    A question about a norm as a whole, its name and nothing else to search ("ET", "¿qué es la CLT?", "¿de qué trata
    la Ley de Prevención de Riesgos Laborales?"), cites the norm's first article, which states its object and scope
    (`whole_norm: True`; `citations.asks_about_whole_norm`): searched, the name alone found nothing close enough and
    the question was refused as outside the corpus.

    ### Usage example

    ```python
    from components.extractors.citation_detector import CitationDetector

    detector = CitationDetector()
    result = detector.run(query="¿Qué dicen los arts. 40 y 41 ET?")
    result["citations"][0]  # {"law_id": "BOE-A-2015-11430", "law": "ET", "article": "40", ...}
    store.filter_documents(result["filters"])
    ```
    """

    def __init__(self, *, laws_file: str | None = None, aliases: dict[str, str | None] | None = None) -> None:
        """
        Create a CitationDetector.

        :param laws_file: YAML table of known norms (`laws: {<law_id>: {law_short: ...}}`); `None` uses the bundled
            `components/legal/data/laws.yaml`.
        :param aliases: Extra law names -> `law_short` or `law_id` (a target that is neither is used as the law id
            as given); `None` as target marks an ambiguous name that resolves to no law. Overrides the built-in
            `DEFAULT_ALIASES` and the table.
        :raises ValueError: If `laws_file` does not exist or is not a valid table, or an alias is not a string.
        """
        self.laws_file = laws_file
        self.aliases = aliases
        self.grammar = CitationGrammar(laws_file=laws_file, aliases=aliases)

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(self, laws_file=self.laws_file, aliases=self.aliases)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CitationDetector":
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)

    def _in_conversation(self, query: str, history: list[ChatMessage] | None) -> list[dict[str, Any]]:
        """The question's citations, completed from the earlier questions of the conversation (class docstring)."""
        references = self.grammar.extract_references(query, colloquial=True)
        bare = None if references else article_alone(query)  # "¿y el 41?": an article of the conversation's law
        # "¿y el 5?" right after "¿y el apartado 4?": the next apartado of the same article, not article 5
        continued = _continued_unit(query, bare, history)
        # "¿y la c?" right after "ET art 49.1 b": letter c of the same article and apartado
        continued = continued or (None if references or bare else _continued_letter(self.grammar, query, history))
        bare = None if continued else bare
        lacking = bare is not None or any(map(_lacks_law, references))
        alone = continued or (None if bare or any(ref["article"] for ref in references) else subdivisions(query))
        # the conversation is read only for what the question leaves to it, back to the last question naming it
        law = article = None
        for index, text in _user_turns(history) if lacking or alone else ():
            cited = self.grammar.extract(text, colloquial=True)
            if not any(c["article"] for c in cited) and (article_alone(text) or letter_alone(text)):
                cited = self._in_conversation(text, history[:index])  # type: ignore[index]  # "¿y el 48?" as read
            law = law or next((c for c in reversed(cited) if c["law_id"]), None)
            article = article or next((c for c in reversed(cited) if c["law_id"] and c["article"]), None)
            if (law or not lacking) and (article or not alone):
                break
        found = []
        for reference in references:
            citation = {k: v for k, v in reference.items() if k != "scope"}
            if law and _lacks_law(reference):
                citation.update(law_id=law["law_id"], law=law["law"], from_history=True)
            found.append(citation)
        if bare and law:
            key, span = bare
            found.append({"law_id": law["law_id"], "law": law["law"], "article": key,
                          "text": query[span[0]:span[1]], "span": span, "from_history": True})
        if alone and article:
            units, span = alone
            found.append({"law_id": article["law_id"], "law": article["law"], "article": article["article"],
                          "text": query[span[0]:span[1]], "span": span, "units": units, "from_history": True})
        adjacent = None if references or bare or alone else adjacent_article(query)
        if adjacent and (last := self._last_cited(history)):  # "¿y el siguiente?": after the conversation's article
            step, span = adjacent
            key = adjacent_key(last[-1]["article"], step)
            if key:
                found.append({"law_id": last[-1]["law_id"], "law": last[-1]["law"], "article": key,
                              "text": query[span[0]:span[1]], "span": span, "from_history": True})
        elif not (references or bare or alone) and asks_nothing_new(query):
            found += self._last_cited(history)  # "explícamelo mejor": the articles the conversation is about
        return found

    def _last_cited(self, history: list[ChatMessage] | None) -> list[dict[str, Any]]:
        """
        The articles (of a known law) the last user question citing any cites, read as it was ("¿y el 39?" after
        "art. 38 ET" is ET art. 39), as follow-up citations: a turn that only asks to go on ("resúmelo", "explica
        melhor") is about them. Their span is empty: the turn does not write them.
        """
        history = list(history or [])
        for index, text in _user_turns(history):
            if text:
                read = self._in_conversation(text, history[:index])
                cited = [c for c in read if c["law_id"] and c["article"]]
                if cited:
                    return [{**c, "span": [0, 0], "from_history": True} for c in cited]
        return []

    @component.output_types(
        citations=list[dict[str, Any]],
        filters=dict[str, Any] | None,
        has_citations=bool,
        case_law=list[dict[str, Any]],
        named_laws=list[str],
        unknown_norms=list[str],
    )
    def run(self, query: str, history: list[ChatMessage] | None = None) -> dict[str, Any]:
        """
        Detect the citations of a question.

        :param query: The user's question.
        :param history: The conversation so far (follow-up mode): the earlier user questions' citations complete a
            follow-up's (see the class docstring).
        :returns: `citations`: unique citations in order of appearance (a law-only citation is dropped when the
            same law is also cited with an article; `whole_text: True` on those with an article when the question
            asks for their whole wording, `terms.asks_for_cited_text`); `filters`: the direct-fetch filter, None when
            no article is cited; `has_citations`: whether any citation was found; `case_law`: the case-law citations
            (`CitationGrammar.extract_case_law`: `kind`, `number`, `court`, `text`, `span`); `named_laws`: the law
            ids of the known norms the question names or cites, in order (`HybridRetriever` also searches within
            them); `unknown_norms`: the norms it names or cites that the laws table does not hold ("Código Penal",
            "Lei 8.078/1990"), then its case law as written ("Súmula 331 do TST"), in order: nothing is fetched for
            them, and the answer says they are not in the corpus.
        """
        found = _of_the_one_unknown_norm(self._in_conversation(query, history))
        cited_laws = {c["law_id"] or c["law"] for c in found if c["article"]}
        citations: list[dict[str, Any]] = []
        seen: set[tuple[Any, ...]] = set()
        for citation in found:
            key = (citation["law_id"] or citation["law"], citation["article"])
            if key in seen or (citation["article"] is None and key[0] in cited_laws):
                continue
            seen.add(key)
            citations.append(citation)
        if asks_about_whole_norm(query, citations):  # "¿qué es la CLT?": the first article states a norm's object
            citations = [{**c, "article": FIRST_ARTICLE, "whole_norm": True} for c in citations]
        citations = _read_lawless(query, citations)
        # "transcribe el artículo 38", "el artículo 48 del ET completo": read here, where the citations' ends are known
        if asks_for_cited_text(query, citations):
            citations = [{**c, WHOLE_TEXT: True} if c["article"] else c for c in citations]
        if citations:
            logger.debug("Citations in query: {citations}", citations=[(c["law"], c["article"]) for c in citations])
        case_law = self.grammar.extract_case_law(query)
        return {
            "citations": citations,
            "filters": citation_filters(citations),
            "has_citations": bool(citations),
            "case_law": case_law,
            "named_laws": list(dict.fromkeys(c["law_id"] for c in citations if c["law_id"])),
            "unknown_norms": not_in_corpus(citations, case_law),
        }


def _of_the_one_unknown_norm(citations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """
    The citations, an article cited with no law read as the norm's when the question names one norm only and the
    laws table lacks it ("En la Ley 36/2011, ¿qué dice el artículo 2?"): nothing is fetched for it, where reading
    it as an article of any law would quote another norm's article 2. (An article cited beside a known law is read
    as that law's by `cited_articles`.)
    """
    named = {law_key(c["law"]) for c in citations if c["law"]} | {c["law_id"] for c in citations if c["law_id"]}
    norm = next((c["law"] for c in citations if c["law"] and not c["law_id"]), None)
    if len(named) != 1 or norm is None:
        return citations
    return [{**c, "law": norm} if c["article"] and not c["law_id"] and not c["law"] else c for c in citations]


def _read_lawless(query: str, citations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """
    The citations, an article cited with no law carrying what tells its law among those that have that article:
    the question's `jurisdiction` (`question_jurisdiction`: "o que diz o artigo 7º?" is Brazilian law) and the
    subdivision it names (`units`: only the Constitution's article 7 has an inciso XVII).
    """
    listed = listed_spans(citations)
    jurisdiction = question_jurisdiction(query)
    read = []
    for citation in citations:
        if citation.get("article") and not citation.get("law_id") and not citation.get("law"):
            citation = dict(citation)
            if jurisdiction:
                citation["jurisdiction"] = jurisdiction
            units = pinpoint(query, citation["span"]) if tuple(citation["span"]) not in listed else []
            if units:
                citation["units"] = units
        read.append(citation)
    return read


def _lacks_law(reference: dict[str, Any]) -> bool:
    """An article cited with no law, or with an anaphora or "esta ley": the conversation's law, in a follow-up."""
    return bool(reference["article"]) and not reference["law_id"] and not reference["law"] and (
        reference["scope"] in ("anaphora", "none", "self")
    )
