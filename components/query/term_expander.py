# SPDX-License-Identifier: Apache-2.0
"""
Lexical query expansion: the statutory terms of a question's colloquial expressions, added to what BM25 searches.
"""

from typing import Any

from haystack import component, default_from_dict, default_to_dict, logging

from components.legal.terms import load_equivalences

logger = logging.getLogger(__name__)


@component
class TermExpander:
    """
    Appends to a query the statutory terms of the colloquial expressions found in it (the equivalence table,
    `components/legal/data/equivalences.yaml`), for the lexical side of the search.

    A citizen writes "me han despedido" or "fui mandado embora"; the statute says "extinción del contrato" or
    "dispensa sem justa causa". BM25 only matches words, so without the statute's words it cannot find the
    article; the table bridges the two vocabularies. The expanded text goes to BM25 only: the dense side keeps the
    question as written, which the embedding model reads better than a question followed by a list of terms.
    Expressions are matched in the question's language (detected, or `language`), as whole words, ignoring case
    and accents, the longest first; an entry whose terms the query already holds adds nothing.

    ### Usage example

    ```python
    from components.query.term_expander import TermExpander

    expander = TermExpander()
    result = expander.run(query="fui mandado embora grávida, tenho direito a quê?")
    result["query"]
    # "fui mandado embora grávida, tenho direito a quê? dispensa sem justa causa rescisão contrato empregada
    #  gestante estabilidade provisória licença-maternidade"
    result["expressions"]  # ["mandado embora", "grávida"]
    ```
    """

    def __init__(self, *, enabled: bool = True, equivalences_file: str | None = None) -> None:
        """
        Create a TermExpander.

        :param enabled: Whether to expand; when False the query passes through unchanged.
        :param equivalences_file: YAML mapping colloquial expressions to statutory terms; `None` = the bundled
            `components/legal/data/equivalences.yaml`.
        :raises ValueError: An unreadable equivalences file.
        """
        self.enabled = enabled
        self.equivalences_file = equivalences_file
        self.equivalences = load_equivalences(equivalences_file)

    def to_dict(self) -> dict[str, Any]:
        """
        Serializes the component to a dictionary.

        :returns: Dictionary with serialized data.
        """
        return default_to_dict(self, enabled=self.enabled, equivalences_file=self.equivalences_file)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TermExpander":
        """
        Deserializes the component from a dictionary.

        :param data: Dictionary to deserialize from.
        :returns: Deserialized component.
        """
        return default_from_dict(cls, data)

    @component.output_types(query=str, expressions=list[str])
    def run(self, query: str, language: str | None = None) -> dict[str, Any]:
        """
        Expands a query with statutory terms.

        :param query: The query (a question, or a search query).
        :param language: Its language (ISO 639-1: `es`, `pt`); None detects it.
        :returns: A dictionary with:
            - `query`: the query, whitespace normalised, followed by the statutory terms of the expressions found in
              it; the query exactly as given when expansion is disabled.
            - `expressions`: the colloquial expressions found, in the order they occur.
        :raises TypeError: `query` is not a string.
        """
        if not isinstance(query, str):
            raise TypeError(f"TermExpander expects a string query, got {type(query).__name__}")
        if not self.enabled:
            return {"query": query, "expressions": []}
        matches = self.equivalences.matches(query, language)
        expanded = self.equivalences.expand(query, language, matches=matches)
        logger.debug("TermExpander: {expressions}", expressions=[key for key, _ in matches])
        return {"query": expanded, "expressions": [key for key, _ in matches]}
