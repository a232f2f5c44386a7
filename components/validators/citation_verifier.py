"""Post-answer check: every law / article the answer cites must be in the context given to the model."""

import re
from typing import Any, Final

from haystack import Document, component, default_from_dict, default_to_dict, logging

from components.legal.access import and_filters
from components.legal.answer_format import (
    LEFT_OUT_NOTES,
    MISSING_ARTICLES_NOTES,
    UNVERIFIED_MARK,
    UNVERIFIED_MARKS,
    left_out_notices,
    missing_articles_notice,
)
from components.legal.citations import CitationGrammar, citation_condition, cites_block, law_key
from components.legal.legal_text import detect_query_language

logger = logging.getLogger(__name__)

REASON_NOT_IN_CONTEXT: Final[str] = "not_in_context"
REASON_NOT_IN_INDEX: Final[str] = "not_in_index"
# where the text around a citation stops being one quoted run: a quotation mark, a line end, an elision ("[…]",
# "…"), a sentence end (a quote joins sentences without their numbering: "… artículo 99. Si el Congreso …" from
# "… artículo 99.\n\n2. Si el Congreso …"; a capital must follow, "art. 611-A" is no sentence end)
_RUN_STOP_RE: Final[re.Pattern[str]] = re.compile(
    r"[«»“”\"\n]|\[…\]|\[\.\.\.\]|…|\.\.\.|(?<=[.;:!?])\s+(?=[A-ZÁÉÍÓÚÂÊÔÃÕÇÑÜ¿¡])"
)
# the text a citation is judged by: up to this many characters each side, within its run
QUOTE_WINDOW_CHARS: Final[int] = 60
# a shorter run proves nothing about where it comes from
MIN_QUOTED_CHARS: Final[int] = 40


@component
class CitationVerifier:
    """
    Checks the citations of a generated answer against the context the model was given and, optionally, the index.

    Citations are read with `CitationGrammar` (articles with or without a law, law-only mentions). One is verified
    when a context document carries it: same `law_id` and `article`; same `article` in any law when the answer
    names no law; same `law_id` for a law-only mention; same short name for a norm outside the laws table. Each
    unverified citation gets a reason: `not_in_index` when a `document_store` is given and holds no document for
    it (a non-existent or unindexed article), `not_in_context` otherwise. Every occurrence of an unverified
    citation is marked in the answer, in the answer's language: "artículo 999 ET [cita no verificada]",
    "art. 999 da CLT [citação não verificada]".

    A citation inside text the answer quotes verbatim from a context block ("«… o disposto no art. 611-A desta
    Consolidação …» (CLT, art. 444)") is the statute's own cross-reference, not a claim of the answer: it is
    neither checked nor marked. Such a citation is recognised by its words: the citation with up to 60 characters
    each side, within the same sentence and quoted run (at least 40 characters), appears in a context block's text,
    whitespace aside; the answer's own sentences, and text the context does not hold, are checked as before.

    ### Usage example

    ```python
    from components.validators.citation_verifier import CitationVerifier

    verifier = CitationVerifier(document_store=store)
    result = verifier.run(answer=parsed["answer"], context_documents=context)
    result["answer"], result["unverified_citations"]
    ```
    """

    def __init__(
        self,
        *,
        document_store: Any | None = None,
        laws_file: str | None = None,
        aliases: dict[str, str | None] | None = None,
    ) -> None:
        """
        Create a CitationVerifier.

        :param document_store: Store to tell non-existent articles (`not_in_index`) from ones merely missing from
            the context; any store with `filter_documents` (`count_documents_by_filter` is used when present).
        :param laws_file: Known-laws table (see `CitationGrammar`).
        :param aliases: Extra law aliases (see `CitationGrammar`).
        :raises ValueError: If the store has no `filter_documents`, or `laws_file` / `aliases` is invalid.
        """
        if document_store is not None and not hasattr(document_store, "filter_documents"):
            raise ValueError(f"document_store must have filter_documents, got {type(document_store).__name__}")
        self.document_store = document_store
        self.laws_file = laws_file
        self.aliases = aliases
        self._detector = CitationGrammar(laws_file=laws_file, aliases=aliases)

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(
            self, document_store=self.document_store, laws_file=self.laws_file, aliases=self.aliases
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CitationVerifier":
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)

    @component.output_types(
        answer=str, unverified_citations=list[dict[str, Any]], verified_citations=list[dict[str, Any]]
    )
    def run(
        self,
        answer: str,
        context_documents: list[Document],
        filters: dict[str, Any] | None = None,
        unknown_norms: list[str] | None = None,
        missing_articles: list[str] | None = None,
        out_of_scope: list[str] | None = None,
    ) -> dict[str, Any]:
        """
        Verify the citations of `answer`.

        :param answer: The generated answer (without its metadata block).
        :param context_documents: The documents given to the model as context. The extractive answer's notice of a
            law that leaves out a group the question names (`left_out_notices` of these documents: "CLT, art. 7:
            esta norma não rege diretamente empregados domésticos ...") is neither verified nor marked.
        :param filters: Restriction of the index check (the request's access filter): a document the caller may
            not read counts as absent.
        :param unknown_norms: The norms the question cites that the corpus does not hold
            (`CitationDetector.unknown_norms`). The answer is told to say so: a mention of one of them without an
            article ("el Código Penal no está en el corpus") is neither verified nor marked; an article of one is
            still marked, since no context block can back it.
        :param missing_articles: The cited articles the direct fetch did not find (`LexicalFirstGate.missing`).
            The extractive answer's notice that names them ("No encuentro en la normativa disponible: artículo 500
            del ET.") is neither verified nor marked; any other mention of them is checked as usual (a model may
            still write what such an article "says").
        :param out_of_scope: The matters the question is about whose statutes the corpus lacks (`ScopeChecker`):
            a norm their notice names without an article ("benefícios do INSS (Lei 8.213/1991)") is said to be
            absent, and is neither verified nor marked, as an unknown norm is.
        :returns: `answer` with unverified citations marked; `unverified_citations`: unique citations
            (`law_id`, `law`, `article`, `text`, `span` of the first occurrence) with a `reason`;
            `verified_citations`: the unique verified ones.
        """
        verified: list[dict[str, Any]] = []
        unverified: list[dict[str, Any]] = []
        unverified_keys: set[tuple[Any, ...]] = set()
        seen: set[tuple[Any, ...]] = set()
        texts = [" ".join((doc.content or "").split()) for doc in context_documents]
        said = set(unknown_norms or ())
        matters = " ".join(out_of_scope or [])  # their labels name their laws: "benefícios do INSS (Lei 8.213/1991)"
        notices = _notice_spans(answer, missing_articles or [], context_documents)
        occurrences = [
            citation for citation in self._detector.extract(answer)
            if not _quoted_verbatim(answer, tuple(citation["span"]), texts)
            and not (citation["article"] is None and not citation["law_id"]
                     and (citation["law"] in said or (citation["law"] and citation["law"] in matters)))
            and not any(start <= citation["span"][0] and citation["span"][1] <= end for start, end in notices)
        ]
        for citation in occurrences:
            key = _key(citation)
            if key in seen:
                continue
            seen.add(key)
            if _in_context(citation, context_documents):
                verified.append(citation)
                continue
            reason = REASON_NOT_IN_CONTEXT if self._in_index(citation, filters) else REASON_NOT_IN_INDEX
            unverified.append({**citation, "reason": reason})
            unverified_keys.add(key)
            logger.info("Unverified citation {text!r}: {reason}", text=citation["text"], reason=reason)

        marked = answer
        mark = UNVERIFIED_MARKS.get(detect_query_language(answer, default="es"), UNVERIFIED_MARK)
        spans = sorted({tuple(c["span"]) for c in occurrences if _key(c) in unverified_keys}, reverse=True)
        for _, end in spans:
            if not marked[end:].lstrip().startswith(mark):
                marked = f"{marked[:end]} {mark}{marked[end:]}"
        return {"answer": marked, "unverified_citations": unverified, "verified_citations": verified}

    def _in_index(self, citation: dict[str, Any], filters: dict[str, Any] | None) -> bool:
        """Whether the store holds the citation; True (benefit of the doubt) when it cannot be checked."""
        condition = and_filters(citation_condition(citation), filters) if citation_condition(citation) else None
        if self.document_store is None or condition is None or (citation["law"] and not citation["law_id"]):
            return True
        if hasattr(self.document_store, "count_documents_by_filter"):
            return self.document_store.count_documents_by_filter(condition) > 0
        return bool(self.document_store.filter_documents(condition))


def _quoted_verbatim(answer: str, span: tuple[int, int], texts: list[str]) -> bool:
    """Whether the citation at `span`, with the words around it, is text of a context block (whitespace aside)."""
    start, end = span
    lower = max(0, start - QUOTE_WINDOW_CHARS)
    stops = [match.end() for match in _RUN_STOP_RE.finditer(answer, lower, start)]
    left = stops[-1] if stops else lower
    upper = min(len(answer), end + QUOTE_WINDOW_CHARS)
    stop = _RUN_STOP_RE.search(answer, end, upper)
    window = " ".join(answer[left : stop.start() if stop else upper].split())
    return len(window) >= MIN_QUOTED_CHARS and any(window in text for text in texts)


def _notice_spans(
    answer: str, missing_articles: list[str], documents: list[Document] | None = None
) -> list[tuple[int, int]]:
    """
    Where `answer` holds the extractive answer's notices: of the articles not found (`missing_articles_notice`), and
    of the laws of `documents` that leave out a group the question names (`left_out_notices`).
    """
    labels = [str(label).strip() for label in missing_articles if str(label).strip()]
    notices = [missing_articles_notice(labels, language) for language in MISSING_ARTICLES_NOTES if labels]
    notices += [line for language in LEFT_OUT_NOTES for line in left_out_notices(documents or [], language)]
    spans = []
    for notice in notices:
        start = answer.find(notice)
        while start >= 0:
            spans.append((start, start + len(notice)))
            start = answer.find(notice, start + 1)
    return spans


def _key(citation: dict[str, Any]) -> tuple[Any, ...]:
    return citation["law_id"] or (law_key(citation["law"]) if citation["law"] else None), citation["article"]


def _in_context(citation: dict[str, Any], documents: list[Document]) -> bool:
    return any(cites_block(citation, doc.meta) for doc in documents)
