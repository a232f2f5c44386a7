"""Question words misspelled as they sound ("bacaciones", "indenisacion", "trabaio") corrected before the search."""

from typing import Any

from haystack import component, default_from_dict, default_to_dict

from components.legal.spelling import KNOWN_ZIPF, MIN_GAIN, MIN_ZIPF, correct_spelling, load_lexicons


@component
class SpellingCorrector:
    """
    Corrects the question's words that no Spanish or Portuguese word list knows but that sound like a common word:
    "kuantos dias de bacaciones tengo" -> "cuantos dias de vacaciones tengo", "trabaio a noiti, tenho direito a
    adisional?" -> "trabalho a noite, tenho direito a adicional?", and reads chat shorthand ("q", "xq", "vc").

    The dense model reads a misspelled word as other tokens: "bacaciones" put the Estatuto's holiday article fourth
    and the question was refused, since no block was close enough. People who ask about their job write as they
    speak, and the errors of Spanish and Portuguese spelling are errors of sound: b/v, c/s/z, k/qu, a silent h,
    ll/y, g/j, lh/i, a final u for o. So a word is corrected only to a word that sounds the same
    (`components.legal.spelling.sound_key`; the rules live there, shared with the extractive answer), and only when
    the word itself is rare and that word common: a word at `known_zipf` or more on the Zipf scale
    (wordfreq's frequencies of Spanish and Portuguese, from subtitles, web and books; 2.5 = about three in a
    million words), or whose accent-folded form is such a word's ("cesion": "cesión"), is never touched, and the
    correction must be `min_gain` Zipf points more frequent. A word with a capital after its first letter ("FGTS",
    "LGSS"), with digits, or of fewer than three letters (shorthand aside) is left as written; so are words with no
    sound-alike. Corrections are words of the question's language (`detect_query_language`); a question whose
    language it cannot tell gets none (a word of the other language would change how the rest reads it), only the
    shorthand both languages read alike.

    `query` is the question corrected (the question itself when nothing changed); `dense_query` the text the dense
    side embeds: `dense_text` when given (a HyDE passage, written by a model), else `query`. `corrections` lists
    each change (`from`, `to`) for the trace.

    ### Usage example

    ```python
    from components.query.spelling_corrector import SpellingCorrector

    corrector = SpellingCorrector()
    corrector.warm_up()
    corrector.run(query="kuantos dias de bacaciones tengo")["query"]  # "cuantos dias de vacaciones tengo"
    ```
    """

    def __init__(
        self,
        *,
        enabled: bool = True,
        known_zipf: float = KNOWN_ZIPF,
        min_gain: float = MIN_GAIN,
        min_zipf: float = MIN_ZIPF,
    ) -> None:
        """
        Create a SpellingCorrector.

        :param enabled: Correct the question (`False`: hand it on as written).
        :param known_zipf: A word at least this frequent (Zipf scale) in Spanish or Portuguese is never corrected.
        :param min_gain: A correction is at least this many Zipf points more frequent than the word it replaces.
        :param min_zipf: The least frequent word a correction may be.
        :raises ValueError: A non-positive `min_gain`, or `min_zipf` above `known_zipf`.
        """
        if min_gain <= 0 or min_zipf > known_zipf:
            raise ValueError(f"needs min_gain > 0 and min_zipf <= known_zipf, got {min_gain}, {min_zipf}, {known_zipf}")
        self.enabled = enabled
        self.known_zipf = known_zipf
        self.min_gain = min_gain
        self.min_zipf = min_zipf

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(
            self, enabled=self.enabled, known_zipf=self.known_zipf, min_gain=self.min_gain, min_zipf=self.min_zipf
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SpellingCorrector":
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """Load the word lists and build their sound-alike indexes (once per process; about a second each)."""
        if self.enabled:
            load_lexicons(self.min_zipf, self.known_zipf)

    @component.output_types(query=str, dense_query=str, corrections=list[dict[str, str]])
    def run(self, query: str, dense_text: str | None = None) -> dict[str, Any]:
        """
        Correct the question.

        :param query: The question (or a query made from it).
        :param dense_text: A text to embed on the dense side instead (a HyDE passage): handed on as it is.
        :returns: `query` (corrected), `dense_query` (`dense_text`, else `query`) and `corrections`.
        :raises ValueError: `query` is not a string.
        """
        if not isinstance(query, str):
            raise ValueError(f"SpellingCorrector needs a `query` string, got {type(query).__name__}")
        corrected, corrections = query, []
        if self.enabled:
            corrected, corrections = correct_spelling(
                query, known_zipf=self.known_zipf, min_gain=self.min_gain, min_zipf=self.min_zipf
            )
        return {"query": corrected, "dense_query": dense_text or corrected, "corrections": corrections}
