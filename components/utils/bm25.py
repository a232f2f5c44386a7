"""
Qdrant Edge's `Bm25` models, one per language, with the settings shared by the sparse embedders and the lexical
breakpoints of the semantic parent splitter (stopwords, Snowball stemmer, ASCII folding); `word_token` reads one
word as those models do (the equivalence table's inflection-tolerant matching).
"""

import functools

from haystack import logging
from qdrant_edge import Bm25, Bm25Config, Language, StopwordsSet

logger = logging.getLogger(__name__)

# ISO 639-1 codes found in `meta["lang"]` to the language names Qdrant's tokenizer uses.
LANGUAGE_CODES = {
    "es": "spanish",
    "pt": "portuguese",
    "en": "english",
    "fr": "french",
    "it": "italian",
    "de": "german",
    "nl": "dutch",
    "ro": "romanian",
}

# Qdrant folds accents *before* the stopword check, so with `ascii_folding` the accented entries of its stopword
# lists ("más", "también", "não") never match and survive as tokens. These are their folded forms (accented
# stopwords of Qdrant's lists, checked against qdrant-edge-py 0.9.0), added as custom stopwords.
FOLDED_STOPWORDS = {
    "spanish": (
        "el eramos esta estabamos estais estan estara estaran estaras estare estareis estaria estariais estariamos "
        "estarian estarias estas este esteis esten estes estuvieramos estuviesemos fueramos fuesemos habeis habia "
        "habiais habiamos habian habias habra habran habras habre habreis habria habriais habriamos habrian habrias "
        "hayais hubieramos hubiesemos mas mi que seais sera seran seras sere sereis seria seriais seriamos serian "
        "serias si tambien tendra tendran tendras tendre tendreis tendria tendriais tendriamos tendrian tendrias "
        "teneis tengais tenia teniais teniamos tenian tenias tu tuvieramos tuviesemos"
    ).split(),
    "portuguese": (
        "a as ate e eramos esta estao estavamos estiveramos estivessemos foramos fossemos ha hao houvera "
        "houveramos houverao houveriamos houvessemos ja nao nos sao sera serao seriamos so tambem tem tera terao "
        "teriamos tinhamos tiveramos tivessemos voce voces"
    ).split(),
}


def _language_name(language: str) -> str:
    return LANGUAGE_CODES.get(language.lower(), language.lower())


class Bm25Models:
    """The BM25 settings shared by the document and the query embedder, with one `Bm25` model per language."""

    def __init__(self, *, k: float, b: float, avg_len: float | None, ascii_folding: bool) -> None:
        self.k = k
        self.b = b
        self.avg_len = avg_len
        self.ascii_folding = ascii_folding
        self._models: dict[str, Bm25] = {}

    def get(self, language: str, fallback: str | None = None) -> Bm25:
        """
        Returns the model for `language` (a name such as `spanish` or an ISO code such as `es`).

        Stopwords and the Snowball stemmer follow the language.

        :param language: The language.
        :param fallback: Language used, with a warning, if Qdrant has no tokenizer for `language`.
        :raises ValueError: If Qdrant has no tokenizer for the language (and no fallback is given) or a BM25
            parameter is out of range.
        """
        name = _language_name(language)
        if name not in self._models:
            stopwords = None
            if self.ascii_folding and name in FOLDED_STOPWORDS:
                stopwords = StopwordsSet(
                    languages={getattr(Language, name.capitalize())}, custom=set(FOLDED_STOPWORDS[name])
                )
            config = Bm25Config(
                k=self.k,
                b=self.b,
                avg_len=self.avg_len,
                language=name,
                ascii_folding=self.ascii_folding,
                stopwords=stopwords,
            )
            try:
                self._models[name] = Bm25(config)
            except ValueError as error:
                if fallback is None:
                    raise ValueError(f"Cannot build a BM25 model for language '{language}': {error}") from error
                logger.warning(
                    "No BM25 tokenizer for language '{language}' ({error}); using '{fallback}'",
                    language=language,
                    error=str(error),
                    fallback=fallback,
                )
                self._models[name] = self.get(fallback)
        return self._models[name]


_STEMMING = Bm25Models(k=1.2, b=0.75, avg_len=None, ascii_folding=True)  # k and b do not change the token ids


@functools.lru_cache(maxsize=65536)
def word_token(word: str, language: str) -> int | None:
    """
    The BM25 token of one word as `language`'s analyser reads it (ASCII folding, stopwords, Snowball stem), None
    for a stopword: "atrasando" and "atrasou" share one token, "meu" has none. Words compare by meaning-bearing
    stem this way without a stemmer of our own.

    :param word: One word (no spaces).
    :param language: ISO 639-1 code or language name with a Qdrant tokenizer (`es`, `pt`, ...).
    """
    indices = _STEMMING.get(language).embed_query(word).indices
    return int(indices[0]) if len(indices) == 1 else None
