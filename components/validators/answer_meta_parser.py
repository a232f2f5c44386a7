"""
Parses the answer stage's reply: the answer text, then `===META===` with USED / DROP / NEED lines (the answer's
META block, `components.legal.answer_format`; nothing to do with `Document.meta`)."""

import re
from typing import Any, Final

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.dataclasses import ChatMessage

from components.legal.answer_format import (
    META_DELIMITER,
    META_LINE_RE,
    cited_indices,
    parse_indices,
    split_meta,
)
from components.legal.citations import CitationGrammar

logger = logging.getLogger(__name__)

MAX_NEEDS: Final[int] = 2
WARN_NO_REPLY: Final[str] = "empty reply: no answer and no metadata"
WARN_NO_DELIMITER: Final[str] = f"no {META_DELIMITER} delimiter"
WARN_MISSING_LINE: Final[str] = "mandatory {key} line missing"
WARN_DUPLICATE_LINE: Final[str] = "{key} line repeated; values merged"
WARN_BAD_INDICES: Final[str] = "{key} line without valid indices: {value!r}"
WARN_OUT_OF_RANGE: Final[str] = "{key} indices out of range 1..{count} ignored: {indices}"
WARN_CONFLICT: Final[str] = "indices both USED and DROP, treated as dropped: {indices}"
WARN_UNKNOWN_LINE: Final[str] = "unrecognised metadata line ignored: {line!r}"
WARN_TOO_MANY_NEEDS: Final[str] = f"more than {MAX_NEEDS} NEED lines; extra ones ignored: {{needs}}"
WARN_NEED_WITHOUT_LAW: Final[str] = "NEED for article {article} without a law"
WARN_UNKNOWN_LAW: Final[str] = "NEED law not in the laws table: {law!r}"
WARN_USED_FROM_TEXT: Final[str] = "USED taken from the [n] references in the answer"

_NONE_VALUES: Final[frozenset[str]] = frozenset(
    {"", "ninguno", "ninguna", "ningun", "nada", "none", "nenhum", "nenhuma", "-", "n/a", "[]"}
)


@component
class AnswerMetaParser:
    """
    Splits the answer stage's reply into the answer and its metadata, never raising on malformed metadata.

    Expected reply (PROMPTS.md, "Answer"): the answer, a line `===META===`, then `USED|1,3` (mandatory),
    `DROP|2` or `DROP|ninguno` (mandatory) and at most two `NEED|<article>|<law>` or `NEED|<keywords>` lines.

    Tolerated: spaces, lowercase keys, `:` for `|`, Markdown around the delimiter, `[1, 3]`, `1 y 3` and ranges
    `1-3`, repeated lines (merged), out-of-range indices (dropped), an index both used and dropped (dropped).
    Without the delimiter, trailing USED/DROP/NEED lines are still read as metadata; when there are none the whole
    text is the answer and `used` holds the fragments the answer cites as `[n]`. Every deviation is reported in
    `warnings`, and `meta_valid` is True only for a delimiter plus well-formed USED and DROP lines.

    NEED lines are resolved with `CitationGrammar`: `NEED|art. 48|ET` -> `{"type": "article", "article": "48",
    "law_id": "BOE-A-2015-11430", "law": "ET", "query": "art. 48 ET"}`; `NEED|vacaciones no disfrutadas` ->
    `{"type": "keywords", "article": None, "law_id": None, "law": None, "query": "vacaciones no disfrutadas"}`.

    ### Usage example

    ```python
    from components.validators.answer_meta_parser import AnswerMetaParser

    parsed = AnswerMetaParser().run(
        text="Tienes 30 días naturales [1].\\n===META===\\nUSED|1\\nDROP|2\\nNEED|48|ET",
        context_documents=[art_38, art_37],
    )
    parsed["answer"], parsed["context_chunk_ids"], parsed["need"]
    ```
    """

    def __init__(self, *, laws_file: str | None = None, aliases: dict[str, str | None] | None = None) -> None:
        """
        Create a AnswerMetaParser.

        :param laws_file: Known-laws table used to resolve NEED laws (see `CitationGrammar`).
        :param aliases: Extra law aliases (see `CitationGrammar`).
        :raises ValueError: If `laws_file` or `aliases` is invalid.
        """
        self.laws_file = laws_file
        self.aliases = aliases
        self._detector = CitationGrammar(laws_file=laws_file, aliases=aliases)

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(self, laws_file=self.laws_file, aliases=self.aliases)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "AnswerMetaParser":
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)

    @component.output_types(
        answer=str,
        used=list[int],
        dropped=list[int],
        need=list[dict[str, Any]],
        context_chunk_ids=list[str],
        meta_valid=bool,
        warnings=list[str],
    )
    def run(
        self,
        replies: list[ChatMessage] | None = None,
        text: str | None = None,
        context_documents: list[Document] | None = None,
    ) -> dict[str, Any]:
        """
        Parse one reply.

        :param replies: The chat generator's replies (the first one with text is parsed).
        :param text: The reply as text (used when `replies` has no text).
        :param context_documents: The numbered fragments given to the model, in order ([1] is the first); without
            them indices are not range-checked and `context_chunk_ids` is empty.
        :returns: `answer`; `used` / `dropped`: 1-based fragment indices; `need`: resolved NEED requests;
            `context_chunk_ids`: ids of the fragments used and not dropped (for carryover); `meta_valid`;
            `warnings`.
        """
        reply = next((m.text for m in replies or [] if m.text), None) or text or ""
        warnings: list[str] = []
        if not reply.strip():
            warnings.append(WARN_NO_REPLY)
        answer, meta_lines, has_delimiter = split_meta(reply)  # context delimiters a model echoes removed too
        if not has_delimiter and reply.strip():
            warnings.append(WARN_NO_DELIMITER)

        values: dict[str, list[str]] = {"USED": [], "DROP": [], "NEED": []}
        for line in meta_lines:
            match = META_LINE_RE.match(line)
            if match is None:
                warnings.append(WARN_UNKNOWN_LINE.format(line=line.strip()))
                continue
            values[match.group("key").upper()].append(match.group("value").strip())

        count = len(context_documents) if context_documents is not None else None
        used = self._indices("USED", values["USED"], count, warnings)
        dropped = self._indices("DROP", values["DROP"], count, warnings)
        well_formed = has_delimiter and used is not None and dropped is not None
        if used is None:
            used = _in_range("USED", cited_indices(answer), count, warnings)
            if used:
                warnings.append(WARN_USED_FROM_TEXT)
        dropped = dropped or []
        conflict = sorted(set(used) & set(dropped))
        if conflict:
            warnings.append(WARN_CONFLICT.format(indices=conflict))

        chunk_ids: list[str] = []
        if context_documents:
            chunk_ids = [context_documents[i - 1].id for i in used if i not in dropped]
        for warning in warnings:
            logger.debug("AnswerMetaParser: {warning}", warning=warning)
        return {
            "answer": answer,
            "used": used,
            "dropped": dropped,
            "need": self._needs(values["NEED"], warnings),
            "context_chunk_ids": list(dict.fromkeys(chunk_ids)),
            "meta_valid": well_formed,
            "warnings": warnings,
        }

    @staticmethod
    def _indices(key: str, lines: list[str], count: int | None, warnings: list[str]) -> list[int] | None:
        """The indices of all `key` lines, or None when the line is missing or holds no valid value."""
        if not lines:
            warnings.append(WARN_MISSING_LINE.format(key=key))
            return None
        if len(lines) > 1:
            warnings.append(WARN_DUPLICATE_LINE.format(key=key))
        found: list[int] = []
        valid = True
        for value in lines:
            cleaned = re.sub(r"\([^)]*\)", " ", value).strip().strip("[]{}.").strip()
            if cleaned.lower() in _NONE_VALUES:
                continue
            numbers = parse_indices(cleaned)
            if not numbers:
                warnings.append(WARN_BAD_INDICES.format(key=key, value=value))
                valid = False
            found.extend(numbers)
        in_range = _in_range(key, list(dict.fromkeys(found)), count, warnings)
        return in_range if valid else None

    def _needs(self, lines: list[str], warnings: list[str]) -> list[dict[str, Any]]:
        needs: list[dict[str, Any]] = []
        for value in lines:
            need = self._need(value, warnings)
            if need is not None and need not in needs:
                needs.append(need)
        if len(needs) > MAX_NEEDS:
            warnings.append(WARN_TOO_MANY_NEEDS.format(needs=[n["query"] for n in needs[MAX_NEEDS:]]))
        return needs[:MAX_NEEDS]

    def _need(self, value: str, warnings: list[str]) -> dict[str, Any] | None:
        parts = [part.strip() for part in value.split("|")]
        query = " ".join(part for part in parts if part)
        if not query or query.lower() in _NONE_VALUES:
            return None
        article = self._detector.article_key(parts[0]) if len(parts) > 1 else None
        if article is not None:
            law_text = " ".join(part for part in parts[1:] if part)
            query = f"artículo {query}" if parts[0][:1].isdigit() else query
            law_id, law = self._detector.resolve_law(law_text) if law_text else (None, None)
            if not law_text:
                warnings.append(WARN_NEED_WITHOUT_LAW.format(article=article))
            elif law_id is None:
                warnings.append(WARN_UNKNOWN_LAW.format(law=law_text))
            return {"type": "article", "article": article, "law_id": law_id, "law": law or law_text or None,
                    "query": query}
        cited = [c for c in self._detector.extract(query) if c["article"] and c["law_id"]]
        if len(cited) == 1:  # "NEED|artículo 48 del ET" written on one field
            citation = cited[0]
            return {"type": "article", "article": citation["article"], "law_id": citation["law_id"],
                    "law": citation["law"], "query": query}
        return {"type": "keywords", "article": None, "law_id": None, "law": None, "query": query}


def _in_range(key: str, indices: list[int], count: int | None, warnings: list[str]) -> list[int]:
    if count is None:
        return indices
    outside = [i for i in indices if not 1 <= i <= count]
    if outside:
        warnings.append(WARN_OUT_OF_RANGE.format(key=key, count=count, indices=outside))
    return [i for i in indices if 1 <= i <= count]
