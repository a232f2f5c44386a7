"""
Jurisdictions: which country's law a question is about, and which a norm belongs to (`meta["country"]`).

The corpus holds the law of more than one country in more than one language (Spain in Spanish, Brazil in
Portuguese), and both countries regulate the same matters (holidays, dismissal, overtime), so a question can be
close in meaning to the other country's statute. A citizen who asks in Spanish about "mis vacaciones" asks about
Spanish law unless they say otherwise; naming a norm ("la CLT") or a country ("en Brasil") says otherwise.
`question_jurisdiction` reads that from the question, in that order of precedence, and `in_jurisdiction` tells
whether a norm belongs to it; the legal re-ranker puts the norms of that jurisdiction first.
"""

import re
import unicodedata
from collections.abc import Callable, Iterable
from typing import Any, Final

from components.legal.legal_text import blank_spans, detect_query_language, fold_accents

# the language a country's statutes are written in, and the country whose law a question in a language is about
COUNTRY_LANGUAGE: Final[dict[str, str]] = {"es": "es", "br": "pt", "pt": "pt"}
LANGUAGE_COUNTRY: Final[dict[str, str]] = {"es": "es", "pt": "br"}

# country names and demonyms, matched accent- and case-insensitively as whole-word prefixes
_COUNTRY_WORDS: Final[dict[str, tuple[str, ...]]] = {
    "br": ("brasil", "brazil", "brasilen", "brasileir", "brasilic"),
    "es": ("espana", "espanha", "espanol", "espanhol", "spain", "spanish"),
}
_COUNTRY_RES: Final[dict[str, re.Pattern[str]]] = {
    country: re.compile(r"\b(?:" + "|".join(words) + r")\w*", re.IGNORECASE)
    for country, words in _COUNTRY_WORDS.items()
}


def countries_named(text: str) -> set[str]:
    """The countries `text` names by name or demonym ("en Brasil", "a lei espanhola")."""
    folded = fold_accents(text or "")
    return {country for country, pattern in _COUNTRY_RES.items() if pattern.search(folded)}


def country_readings(question: str) -> list[str]:
    """
    A question about several countries' law ("¿cuántos días de vacaciones hay en España y en Brasil?") read once
    per country, the other countries' names left out: "¿cuántos días de vacaciones hay en España y en ?", "... en y
    en Brasil?". Searched as written, the question goes to whichever country's statute is nearest in wording; each
    reading names one country, whose norms the re-ranker puts first. `[]` for a question naming fewer than two.
    """
    named = countries_named(question)
    if len(named) < 2:
        return []
    return [without_countries(question, named - {country}) for country in sorted(named)]


def without_countries(text: str, countries: Iterable[str] | None = None) -> str:
    """
    `text` without the names of `countries` (all by default): "¿y en Brasil?" -> "¿y en ?". A conversation's turn
    that names only a country ("¿y en Brasil?", "e na Espanha?") asks the question before it of that country's law.
    """
    text = unicodedata.normalize("NFC", text)
    folded = fold_accents(text)
    if len(folded) != len(text):  # the spans must index both
        return " ".join(text.split())
    chosen = _COUNTRY_RES if countries is None else {c: _COUNTRY_RES[c] for c in countries if c in _COUNTRY_RES}
    spans = [match.span() for pattern in chosen.values() for match in pattern.finditer(folded)]
    return " ".join(blank_spans(text, spans).split())


def question_jurisdiction(
    question: str,
    *,
    cited_law_ids: Iterable[str] = (),
    law_country: Callable[[str], str | None] = lambda law_id: None,
) -> dict[str, Any] | None:
    """
    The law `question` is about, and why: a country it names (through a norm or by name), else its language.

    In order of precedence: the norms the question names (`cited_law_ids`, mapped by `law_country`), the countries
    it names, the language it is written in. Two countries from the same source (a comparison: "la CE y la CF88")
    give no single jurisdiction, and neither does a question whose language cannot be told. A question that names
    no country is about the law written in its language (`meta["lang"]`: Spain's for Spanish, Brazil's, or any
    other Portuguese-language law indexed, for Portuguese).

    :param question: The question.
    :param cited_law_ids: Law ids of the norms the question cites or names (e.g. from `CitationGrammar.extract`).
    :param law_country: Law id -> its country (`meta["country"]`), None when unknown.
    :returns: `{"country": "es" | "br" | ..., "source": "law" | "country"}` or `{"language": "es" | "pt",
        "source": "language"}`, or None.
    """
    from_laws = {country for country in map(law_country, cited_law_ids) if country}
    for source, countries in (("law", from_laws), ("country", countries_named(question))):
        if len(countries) == 1:
            return {"country": next(iter(countries)), "source": source}
        if countries:
            return None
    language = detect_query_language(question)
    return {"language": language, "source": "language"} if language else None


def in_jurisdiction(meta: dict[str, Any], jurisdiction: dict[str, Any]) -> bool | None:
    """
    Whether a norm (its document's meta) belongs to `jurisdiction` (`question_jurisdiction`'s answer).

    :returns: True / False, or None when the meta does not say (no `country` / `lang`).
    """
    field = "country" if "country" in jurisdiction else "lang"
    value = meta.get(field)
    if not value:
        return None
    return str(value).lower() == jurisdiction["country" if field == "country" else "language"]
