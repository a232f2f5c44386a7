"""Post-answer check: every law / article the answer cites must be in the context given to the model."""

from typing import Any, Final

from haystack import Document, component, default_from_dict, default_to_dict, logging

from components.legal.access import and_filters
from components.legal.answer_format import UNVERIFIED_MARK
from components.legal.citations import CitationGrammar, citation_condition, law_key

logger = logging.getLogger(__name__)

REASON_NOT_IN_CONTEXT: Final[str] = "not_in_context"
REASON_NOT_IN_INDEX: Final[str] = "not_in_index"


@component
class CitationVerifier:
    """
    Checks the citations of a generated answer against the context the model was given and, optionally, the index.

    Citations are read with `CitationGrammar` (articles with or without a law, law-only mentions). One is verified
    when a context document carries it: same `law_id` and `article`; same `article` in any law when the answer
    names no law; same `law_id` for a law-only mention; same short name for a norm outside the laws table. Each
    unverified citation gets a reason: `not_in_index` when a `document_store` is given and holds no document for
    it (a non-existent or unindexed article), `not_in_context` otherwise. Every occurrence of an unverified
    citation is marked in the answer, e.g. "artículo 999 ET [cita no verificada]".

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
        self, answer: str, context_documents: list[Document], filters: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """
        Verify the citations of `answer`.

        :param answer: The generated answer (without its metadata block).
        :param context_documents: The documents given to the model as context.
        :param filters: Restriction of the index check (the request's access filter): a document the caller may
            not read counts as absent.
        :returns: `answer` with unverified citations marked; `unverified_citations`: unique citations
            (`law_id`, `law`, `article`, `text`, `span` of the first occurrence) with a `reason`;
            `verified_citations`: the unique verified ones.
        """
        verified: list[dict[str, Any]] = []
        unverified: list[dict[str, Any]] = []
        unverified_keys: set[tuple[Any, ...]] = set()
        seen: set[tuple[Any, ...]] = set()
        occurrences = self._detector.extract(answer)
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
        spans = sorted({tuple(c["span"]) for c in occurrences if _key(c) in unverified_keys}, reverse=True)
        for _, end in spans:
            if not marked[end:].lstrip().startswith(UNVERIFIED_MARK):
                marked = f"{marked[:end]} {UNVERIFIED_MARK}{marked[end:]}"
        return {"answer": marked, "unverified_citations": unverified, "verified_citations": verified}

    def _in_index(self, citation: dict[str, Any], filters: dict[str, Any] | None) -> bool:
        """Whether the store holds the citation; True (benefit of the doubt) when it cannot be checked."""
        condition = and_filters(citation_condition(citation), filters) if citation_condition(citation) else None
        if self.document_store is None or condition is None or (citation["law"] and not citation["law_id"]):
            return True
        if hasattr(self.document_store, "count_documents_by_filter"):
            return self.document_store.count_documents_by_filter(condition) > 0
        return bool(self.document_store.filter_documents(condition))


def _key(citation: dict[str, Any]) -> tuple[Any, ...]:
    return citation["law_id"] or (law_key(citation["law"]) if citation["law"] else None), citation["article"]


def _in_context(citation: dict[str, Any], documents: list[Document]) -> bool:
    law_id, law, article = citation["law_id"], citation["law"], citation["article"]
    for doc in documents:
        if article is not None and doc.meta.get("article") != article:
            continue
        if law_id is not None:
            if doc.meta.get("law_id") == law_id:
                return True
        elif law is None or law_key(str(doc.meta.get("law_short", ""))) == law_key(law):
            return True
    return False
