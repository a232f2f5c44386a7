"""
Words misspelled as they sound ("bacaciones", "indenisacion", "trabaio"): how to tell one and the common word it
stands for, from wordfreq's Spanish and Portuguese word frequencies. Read by `SpellingCorrector` (the retrieval
chain's first stage) and by `ExtractiveAnswer` (which matches sentences with the question's words).
"""

import math
import re
import threading
from typing import Final

import wordfreq

from components.legal.legal_text import detect_query_language, fold_accents

KNOWN_ZIPF: Final[float] = 2.5  # a word at least this frequent (Zipf scale: ~3 in a million words) is never corrected
MIN_GAIN: Final[float] = 1.5  # a correction is at least this many Zipf points more frequent than the word
MIN_ZIPF: Final[float] = 2.0  # the least frequent word a correction may be

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
# chat shorthand, read as the word it stands for, per language (a language without a reading leaves the word as
# written: "hj" is Portuguese "hoje"). Never a bare letter other than "q": "x", "d" or "n" are also an inciso
# ("art. 7º, X"), a letter ("art. 54.2 d") and "número" ("Lei n. 8.213"); and never beside a digit ("q1")
SHORTHAND: Final[dict[str, dict[str, str]]] = {
    "q": {"es": "que", "pt": "que"}, "xq": {"es": "porque", "pt": "porque"}, "pq": {"es": "porque", "pt": "porque"},
    "vc": {"es": "você", "pt": "você"}, "vcs": {"es": "vocês", "pt": "vocês"},
    "tb": {"es": "también", "pt": "também"}, "tmb": {"es": "también", "pt": "também"},
    "tbm": {"es": "también", "pt": "também"}, "stoy": {"es": "estoy"},
    "oq": {"pt": "o que"}, "hj": {"pt": "hoje"}, "qdo": {"pt": "quando"}, "qnd": {"pt": "quando"},
    "qnt": {"pt": "quanto"}, "qnto": {"pt": "quanto"}, "qnts": {"pt": "quantos"}, "msm": {"pt": "mesmo"},
    "mto": {"pt": "muito"}, "dps": {"pt": "depois"},
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


def load_lexicons(min_zipf: float = MIN_ZIPF, known_zipf: float = KNOWN_ZIPF) -> None:
    """Load both word lists and build their sound-alike indexes (once per process; about a second each)."""
    for language in LANGUAGES:
        _lexicon(language, min_zipf, known_zipf)


def correct_spelling(
    text: str, *, known_zipf: float = KNOWN_ZIPF, min_gain: float = MIN_GAIN, min_zipf: float = MIN_ZIPF
) -> tuple[str, list[dict[str, str]]]:
    """
    `text` with its words misspelled as they sound replaced by the common word they sound like, and the list of
    changes (`from`, `to`). A word is replaced only when it is rare in both languages (below `known_zipf`, and no
    known word has its accent-folded form: "cesion" is "cesión"), and a word of the text's language
    (`detect_query_language`) with the same `sound_key` is `min_gain` Zipf points more frequent (and at least
    `min_zipf`). Chat shorthand ("q", "xq", "vc"; Portuguese "hj", "qdo") is read as the word it stands for in the
    text's language (`SHORTHAND`). A text whose language cannot be told gets the shorthand both languages read
    alike only. A word with a capital after its first letter ("FGTS") or under three letters is left, and so is
    shorthand beside a digit ("q1"); a misspelt word glued to digits is still corrected ("bacaciones2" ->
    "vacaciones2").
    """
    language = detect_query_language(text)
    corrections: list[dict[str, str]] = []

    def one(match: re.Match[str]) -> str:
        word = match.group(0)
        lowered = word.lower()
        if lowered in SHORTHAND:
            if _beside_digit(match):
                return word
            entry = SHORTHAND[lowered]
            readings = {entry.get(language)} if language else set(entry.values())
            if None in readings or len(readings) > 1 or (not language and len(entry) < 2):
                return word
            replacement = readings.pop()
        elif language is None or len(word) < 3 or any(char.isupper() for char in word[1:]):
            return word
        else:
            replacement = _sound_alike(lowered, language, known_zipf, min_gain, min_zipf)
            if replacement is None:
                return word
            if word[0].isupper():
                replacement = replacement[0].upper() + replacement[1:]
        corrections.append({"from": word, "to": replacement})
        return replacement

    return _WORD_RE.sub(one, text), corrections


def _beside_digit(match: re.Match[str]) -> bool:
    """Whether the matched word touches a digit ("q1"): part of a code or a figure, not shorthand."""
    text, start, end = match.string, match.start(), match.end()
    return (start > 0 and text[start - 1].isdigit()) or (end < len(text) and text[end].isdigit())


def _sound_alike(word: str, language: str, known_zipf: float, min_gain: float, min_zipf: float) -> str | None:
    """The common word of `language` that `word` sounds like, when `word` is rare in both; None to leave it."""
    lexicons = {name: _lexicon(name, min_zipf, known_zipf) for name in LANGUAGES}
    own = max(lexicon.zipf(word) for lexicon in lexicons.values())
    folded = fold_accents(word)
    if own >= known_zipf or any(folded in lexicon.known_folded for lexicon in lexicons.values()):
        return None
    found = lexicons[language].by_sound.get(sound_key(word))
    if found is None or found[1] < own + min_gain or fold_accents(found[0]) == folded:
        return None
    return found[0]
