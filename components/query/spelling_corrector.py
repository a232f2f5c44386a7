"""Question words misspelled as they sound ("bacaciones", "indenisacion", "trabaio") corrected before the search."""

import math
import re
import threading
from typing import Any, Final

import wordfreq
from haystack import component, default_from_dict, default_to_dict, logging

from components.legal.legal_text import detect_query_language, fold_accents

logger = logging.getLogger(__name__)

LANGUAGES: Final[tuple[str, ...]] = ("es", "pt")
# A sound-alike key: the spellings Spanish and Portuguese writers confuse map to one form (b/v, c/s/z, qu/k, a
# silent h, ll/y, g/j before e and i, n/m before p and b, "lh" read as "i", a final u/o and i/e), in this order
_SOUND_RULES: Final[tuple[tuple[re.Pattern[str], str], ...]] = tuple(
    (re.compile(pattern), replacement)
    for pattern, replacement in (
        ("lh", "i"), ("nh", "ni"), ("ch", "X"), ("qu(?=[ei])", "k"), ("qu", "ku"), ("c(?=[ei])", "s"), ("c", "k"),
        ("z", "s"), ("[vw]", "b"), ("g(?=[ei])", "j"), ("h", ""), ("ll", "y"), ("y", "i"), ("n(?=[pb])", "m"),
        ("mn", "n"), (r"(.)\1+", r"\1"), ("u$", "o"), ("i$", "e"),
    )
)
# chat shorthand, read as the word it stands for (per language where the two differ)
SHORTHAND: Final[dict[str, dict[str, str]]] = {
    "q": {"es": "que", "pt": "que"}, "xq": {"es": "porque", "pt": "porque"}, "pq": {"es": "porque", "pt": "porque"},
    "vc": {"es": "você", "pt": "você"}, "tb": {"es": "también", "pt": "também"},
    "tmb": {"es": "también", "pt": "também"},
}
_WORD_RE: Final[re.Pattern[str]] = re.compile(r"[^\W\d_]+")


def sound_key(word: str) -> str:
    """The word's sound-alike key: "bacaciones" and "vacaciones" -> "bakasiones"; "trabaio", "trabalho" -> "trabaio"."""
    key = fold_accents(word.lower())
    for pattern, replacement in _SOUND_RULES:
        key = pattern.sub(replacement, key)
    return key


class _Lexicon:
    """One language's word frequencies (wordfreq's `large` list, Zipf scale) and its sound-alike index."""

    def __init__(self, language: str, min_zipf: float, known_zipf: float) -> None:
        self.frequencies = wordfreq.get_frequency_dict(language, wordlist="large")
        self.by_sound: dict[str, tuple[str, float]] = {}  # key -> its most frequent word of at least `min_zipf`
        self.known_folded: set[str] = set()  # accent-folded forms of the known words ("cesion": "cesión")
        floor = 10 ** (min_zipf - 9)
        for word, frequency in self.frequencies.items():  # most frequent first
            if frequency < floor:
                break
            if not word.isalpha():
                continue
            zipf = math.log10(frequency) + 9
            self.by_sound.setdefault(sound_key(word), (word, zipf))
            if zipf >= known_zipf:
                self.known_folded.add(fold_accents(word))

    def zipf(self, word: str) -> float:
        frequency = self.frequencies.get(word)
        return math.log10(frequency) + 9 if frequency else 0.0


_LEXICONS: dict[tuple[str, float, float], _Lexicon] = {}  # process-wide: every pipeline reads the same lists
_LEXICONS_LOCK = threading.Lock()


def _lexicon(language: str, min_zipf: float, known_zipf: float) -> _Lexicon:
    with _LEXICONS_LOCK:
        key = (language, min_zipf, known_zipf)
        if key not in _LEXICONS:
            _LEXICONS[key] = _Lexicon(language, min_zipf, known_zipf)
        return _LEXICONS[key]


@component
class SpellingCorrector:
    """
    Corrects the question's words that no Spanish or Portuguese word list knows but that sound like a common word:
    "kuantos dias de bacaciones tengo" -> "cuantos dias de vacaciones tengo", "trabaio a noiti, tenho direito a
    adisional?" -> "trabalho a noite, tenho direito a adicional?", and reads chat shorthand ("q", "xq", "vc").

    The dense model reads a misspelled word as other tokens: "bacaciones" put the Estatuto's holiday article fourth
    and the question was refused, since no block was close enough. People who ask about their job write as they
    speak, and the errors of Spanish and Portuguese spelling are errors of sound: b/v, c/s/z, k/qu, a silent h,
    ll/y, g/j, lh/i, a final u for o. So a word is corrected only to a word that sounds the same (`sound_key`), and
    only when the word itself is rare and that word common: a word at `known_zipf` or more on the Zipf scale
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
        self, *, enabled: bool = True, known_zipf: float = 2.5, min_gain: float = 1.5, min_zipf: float = 2.0
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
            for language in LANGUAGES:
                _lexicon(language, self.min_zipf, self.known_zipf)

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
        corrections: list[dict[str, str]] = []
        corrected = query
        if self.enabled:
            language = detect_query_language(query)
            corrected = _WORD_RE.sub(lambda m: self._word(m.group(0), language, corrections), query)
        return {"query": corrected, "dense_query": dense_text or corrected, "corrections": corrections}

    def _word(self, word: str, language: str | None, corrections: list[dict[str, str]]) -> str:
        lowered = word.lower()
        if lowered in SHORTHAND:
            readings = {SHORTHAND[lowered][language]} if language else set(SHORTHAND[lowered].values())
            if len(readings) > 1:
                return word
            replacement = readings.pop()
        elif language is None or len(word) < 3 or any(char.isupper() for char in word[1:]):
            return word
        else:
            replacement = self._sound_alike(lowered, language)
            if replacement is None:
                return word
            if word[0].isupper():
                replacement = replacement[0].upper() + replacement[1:]
        corrections.append({"from": word, "to": replacement})
        return replacement

    def _sound_alike(self, word: str, language: str) -> str | None:
        """The common word of `language` that `word` sounds like, when `word` is rare in both; None to leave it."""
        lexicons = {name: _lexicon(name, self.min_zipf, self.known_zipf) for name in LANGUAGES}
        own = max(lexicon.zipf(word) for lexicon in lexicons.values())
        folded = fold_accents(word)
        if own >= self.known_zipf or any(folded in lexicon.known_folded for lexicon in lexicons.values()):
            return None
        found = lexicons[language].by_sound.get(sound_key(word))
        if found is None or found[1] < own + self.min_gain or fold_accents(found[0]) == folded:
            return None
        return found[0]
