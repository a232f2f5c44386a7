"""
Shared term tables and word-level text analysis of Spanish (and Portuguese) legal questions.

The colloquial -> statutory equivalence table (`components/legal/data/equivalences.yaml`, `load_equivalences`),
the Spanish stopwords, keyword extraction and light stemming. Query decomposition, HyDE, CRAG retry queries, the
extractive answer and the context compressor all read questions through these, so they agree on what a content
word is.
"""

import re
from collections.abc import Iterable
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import yaml

from components.legal.legal_text import cardinal_to_int, detect_query_language, fold_accents
from components.utils.bm25 import word_token

DEFAULT_EQUIVALENCES_FILE = Path(__file__).resolve().parent / "data" / "equivalences.yaml"
HINTS_HEADER = "\n\nEquivalencias aplicables (término coloquial -> términos jurídicos):"
HINTS_HEADERS = {"es": HINTS_HEADER, "pt": "\n\nEquivalências aplicáveis (termo coloquial -> termos jurídicos):"}

# Spanish function words, question words, light verbs and fillers, accent-folded (compared with folded tokens).
STOPWORDS = frozenset(
    fold_accents(word)
    for word in """
    a al algo alguien algun alguna algunas alguno algunos ante antes aqui asi aun aunque bajo bien buenas buenos
    cada casi caso casos como con conmigo contigo contra corresponde corresponden corresponder cosa cosas cual
    cuales cualquier cuando cuanta cuantas cuanto cuantos da dado dan dar de debe deben deberia debo decir del desde
    dice dicen diferencia diferencias donde doy durante e el ella ellas ello ellos en entonces entre era eres es esa
    esas ese eso esos esta estaba estado estan estar estas este esto estos estoy existe existen favor forma fue ha
    haber habia habra hace hacen hacer hacia hago han has hasta hay haya he hecho hola hubiera igual ir la las le
    les lo los luego mal manera me mejor menos mi mia mientras mio mis misma mismo mucho muchos muy nada nadie
    necesito ni no nos nosotras nosotros nuestra nuestro nunca o ocurre os otra otras otro otros para pasa pasaria
    peor pero podemos poder podria podrias por porque pregunta puede pueden puedes puedo pues que queria quien
    quienes quiere quiero respecto sabe saber se sea segun ser si sido siempre sin sino sobre somos son soy su sus
    tal tambien tampoco tan tanto te tendria tenemos tener tengo tenia tiene tienen tipo toda todas todavia todo
    todos tras tu tus u un una unas uno unos usted ustedes va vamos veces vez vosotros voy y ya yo
    fuera fuese fueran fuesen sean seria serian fueron eran estuviera estuviese estuvieran esten estaria
    """.split()
)
# Portuguese (Brazilian, colloquial spellings included) function words, question words, light verbs and fillers.
PT_STOPWORDS = frozenset(
    fold_accents(word)
    for word in """
    a à ao aos aquela aquele aquilo as assim até ate com como contra da das de dela dele deles depois desse
    dessa disso do dos e é ela elas ele eles em entre era essa esse esta está estão este estou eu foi fui
    isso isto já ja la lá lhe mais mas me mesmo meu meus minha minhas muito na nas nem não nao no nos nós num numa o
    os ou para pra pela pelas pelo pelos por porque pq pode podem posso qual quando quanto quantos quantas que
    quem são se sem ser somos sou seu seus só sua suas também tambem te tem têm tenho ter to tô ta tá tu um uma
    umas uns vai você voce vocês vc vou coisa alguma algum certo direito fazer faz fica ficar dar dá deu diz quer
    quero sobre sob após apos antes durante desde
    for fosse forem fossem seja sejam seria seriam foram eram estiver estiverem estava estavam estaria
    """.split()
)
STOPWORDS_BY_LANGUAGE = {"es": STOPWORDS, "pt": PT_STOPWORDS}

ARTICLE_WORDS = frozenset({"articulo", "articulos", "artigo", "artigos", "art", "arts"})
_WORD = re.compile(r"\w+(?:-\w+)*")
_TOKEN_RE = re.compile(r"[a-z0-9]+")


# the pronouns Spanish writes onto an infinitive ("expropiarme", "despedirla", "quitármela"): a one-word key that is
# an infinitive matches with them, as a key of several words does through its stems
_ENCLITICS = r"(?:(?:me|te|se|nos|os)(?:lo|la|le|los|las|les)?|lo|la|le|los|las|les)?"


def _word_suffix(key: str, language: str) -> str:
    """
    What a one-word key may carry after it: a Spanish infinitive the pronouns written onto it (`_ENCLITICS`:
    "expropiar" matches "expropiarme"); a noun of either language its plural ("nómina": "no me dan nóminas"; "falta":
    "quantas faltas"). A word ending in -ar, -er or -ir reads as a verb in both languages and takes no plural; a key
    of several words matches through its stems. Keys match case- and accent-insensitively, and so do these suffixes.
    """
    if " " in key.strip():
        return ""
    folded = fold_accents(key.lower())
    if re.fullmatch(r"\w+(?:ar|er|ir)", folded):
        return _ENCLITICS if language == "es" and re.fullmatch(r"[a-z]+(?:ar|er|ir)", folded) else ""
    return "" if folded.endswith("s") or not folded.isalpha() else "(?:e?s)?"


def _key_entry(key: str, terms: str, language: str) -> tuple[str, str, str, re.Pattern[str]]:
    """
    A table key as `Equivalences.matches` reads it: the key, its terms, its folded letters and its pattern. A key whose
    letters the text lacks cannot match, and a substring test is far cheaper than the pattern (hundreds of keys, every
    question).
    """
    letters = fold_accents(key.lower())
    return key, terms, letters, re.compile(rf"(?<!\w){re.escape(letters)}{_word_suffix(key, language)}(?!\w)")


class Equivalences:
    """
    The colloquial -> statutory equivalence table: finds its expressions in a text, longest match first.

    Keys match whole words, ignoring case and accents; a matched span is not matched again by a shorter key. A key
    of two content words or more also matches them inflected and with other function words around them, as the
    BM25 analyser of its language reads words (Snowball stems, stopwords skipped: `components.utils.bm25.word_token`):
    "assinar a carteira" matches "não assinaram minha carteira", "atrasando o salário" matches "atrasou meu
    salário". One-word keys match as written or, a noun, in the plural ("acordo" is not "acordei"), a Spanish
    infinitive with the pronouns written onto it too ("expropiar": "expropiarme").
    With tables for several languages, a text is matched against the table of its language (given, or detected
    with `detect_query_language`; `default_language` when the text gives no evidence).

    :param table: Colloquial expression -> space-separated statutory search terms, in `default_language`.
    :param by_language: More tables, by ISO 639-1 code (`{"pt": {...}}`).
    :param default_language: The language of `table`.
    """

    def __init__(
        self, table: dict[str, str], *, by_language: dict[str, dict[str, str]] | None = None,
        default_language: str = "es",
    ) -> None:
        self.table = table
        self.default_language = default_language
        self.by_language = {**(by_language or {}), default_language: table}
        self._patterns_by_language = {
            language: [
                _key_entry(key, terms, language)
                for key, terms in sorted(entries.items(), key=lambda item: len(item[0]), reverse=True)
            ]
            for language, entries in self.by_language.items()
        }
        self._stemmed_keys: dict[str, list[tuple[str, str, tuple[int, ...]]]] = {}

    def language_of(self, text: str) -> str:
        """The table language `text` is matched in: detected, else the default; one without a table -> default."""
        language = detect_query_language(text, default=self.default_language) if len(self.by_language) > 1 else None
        return language if language in self.by_language else self.default_language

    def matches(self, text: str, language: str | None = None) -> list[tuple[str, str]]:
        """
        The table entries found in `text`, in the order they occur.

        :param text: Any text (a question, a concept).
        :param language: The text's language (ISO 639-1); None detects it.
        :returns: `(colloquial expression, statutory terms)` pairs.
        """
        language = language if language in self.by_language else self.language_of(text)
        folded = fold_accents(text.lower())
        # (longest span first, as written before inflected, longest key, leftmost): start, end, key, terms
        candidates: list[tuple[tuple[int, int, int, int], int, int, str, str]] = []
        for key, terms, letters, pattern in self._patterns_by_language[language]:
            if letters not in folded:
                continue
            for hit in pattern.finditer(folded):
                candidates.append(((hit.start() - hit.end(), 0, -len(key), hit.start()), *hit.span(), key, terms))
        tokens = _word_tokens(folded, language)
        sequence = tuple(token for token, _, _ in tokens)
        present = set(sequence)
        for key, terms, key_tokens in self._stemmed(language):
            if key_tokens[0] not in present:  # cannot start anywhere
                continue
            size = len(key_tokens)
            for first in range(len(sequence) - size + 1):
                if sequence[first : first + size] == key_tokens:
                    start, end = tokens[first][1], tokens[first + size - 1][2]
                    candidates.append(((start - end, 1, -len(key), start), start, end, key, terms))
        taken: list[tuple[int, int]] = []
        found: list[tuple[int, str, str]] = []
        for _, start, end, key, terms in sorted(candidates, key=lambda candidate: candidate[0]):
            if not any(start < stop and begin < end for begin, stop in taken):
                taken.append((start, end))
                found.append((start, key, terms))
        return [(key, terms) for _, key, terms in sorted(found)]

    def _stemmed(self, language: str) -> list[tuple[str, str, tuple[int, ...]]]:
        """The keys of `language` with two content words or more, as their BM25 tokens (longest key first)."""
        if language not in self._stemmed_keys:
            keys = []
            for key, terms, letters, _ in self._patterns_by_language[language]:
                key_tokens = tuple(token for token, _, _ in _word_tokens(letters, language))
                if len(key_tokens) >= 2:
                    keys.append((key, terms, key_tokens))
            self._stemmed_keys[language] = keys
        return self._stemmed_keys[language]

    def terms(self, text: str, language: str | None = None) -> list[str]:
        """The statutory terms of every entry found in `text`, without duplicates (first occurrence kept)."""
        return dedup(term for _, terms in self.matches(text, language) for term in terms.split())

    def expand(self, text: str, language: str | None = None, matches: list[tuple[str, str]] | None = None) -> str:
        """
        `text` (whitespace normalised) followed by the statutory terms of each entry found in it, an entry's terms
        left out when `text` already holds every one of them: "me han dado la baja médica" -> "me han dado la
        baja médica incapacidad temporal prestación".

        :param text: A question or a query.
        :param language: The text's language (ISO 639-1); None detects it.
        :param matches: The entries found in `text` when the caller has them already (`matches`).
        """
        words = _folded_words(text)
        found = self.matches(text, language) if matches is None else matches
        return " ".join([" ".join(text.split()), *(terms for _, terms in found if not _folded_words(terms) <= words)])


def _word_tokens(folded: str, language: str) -> list[tuple[int, int, int]]:
    """The content words of a folded text as `(BM25 token, start, end)`; stopwords are left out."""
    out = []
    for match in re.finditer(r"\w+", folded):
        token = word_token(match.group(), language)
        if token is not None:
            out.append((token, match.start(), match.end()))
    return out


def _folded_words(text: str) -> set[str]:
    return set(re.findall(r"\w+", fold_accents(text.lower())))


@cache
def load_equivalences(path: str | None = None) -> Equivalences:
    """
    Loads an equivalence table (cached per path).

    :param path: A YAML mapping of colloquial expression -> statutory terms (Spanish), optionally with
        per-language mappings under two-letter language keys (`pt: {mandado embora: dispensa ...}`); `None` = the
        bundled `components/legal/data/equivalences.yaml`.
    :returns: The table.
    :raises ValueError: The file is missing or is not a mapping of non-empty strings to non-empty strings.
    """
    file = Path(path) if path else DEFAULT_EQUIVALENCES_FILE
    if not file.is_file():
        raise ValueError(f"Equivalences file not found: {file}")
    data = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        data = None
    languages = [key for key in (data or {}) if re.fullmatch(r"[a-z]{2}", str(key)) and isinstance(data[key], dict)]
    sections = {key: data.pop(key) for key in languages}

    def valid(table: Any) -> bool:
        return isinstance(table, dict) and all(
            isinstance(key, str) and key.strip() and isinstance(value, str) and value.strip()
            for key, value in table.items()
        )

    if not valid(data) or not all(valid(table) for table in sections.values()):
        raise ValueError(f"{file} must be a YAML mapping of colloquial expression -> statutory search terms (strings).")

    def clean(table: dict[str, str]) -> dict[str, str]:
        return {key.strip().lower(): " ".join(value.split()) for key, value in table.items()}

    return Equivalences(clean(data), by_language={code: clean(table) for code, table in sections.items()})


def format_hints(matches: list[tuple[str, str]], language: str = "es") -> str:
    """
    The equivalences found in a question as a block appended to an LLM prompt (empty when none), headed in the
    question's `language` (Spanish for one without a header).
    """
    if not matches:
        return ""
    header = HINTS_HEADERS.get(language, HINTS_HEADER)
    return header + "".join(f"\n- {key} -> {terms}" for key, terms in matches)


def dedup(items: Any) -> list[str]:
    """Items without repeats, comparing case- and accent-insensitively; the first spelling is kept."""
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        folded = fold_accents(item.lower())
        if folded not in seen:
            seen.add(folded)
            out.append(item)
    return out


# Words that only ask to go on with the previous answer; in follow-up mode they bring nothing new to search.
FOLLOWUP_FILLER = frozenset(
    fold_accents(word)
    for word in """
    aclara aclarame aclarar claro contar cuentame detalle detalles dime decirme ejemplo ejemplos entendido
    entiendo explica explicame explicamelo explicar explicarlo explicarmelo explicas gracias mas ok okay repetir
    repite resume resumelo resumeme resumemelo resumen resumes resumidamente resumir resumirlo resumirmelo
    seguro sentido significa vale explicarias
    beleza certo detalha detalhar detalhe entendi exemplo exemplos explique explica-me melhor obrigada
    obrigado repete repita resuma resumindo resumo valeu entender entendo
    """.split()
)


def asks_nothing_new(text: str, language: str | None = None) -> bool:
    """
    Whether a conversation's turn only asks to go on with what came before ("explícamelo mejor", "resúmelo",
    "explica melhor", "¿y en Brasil?" once its country is left out): no keyword but `FOLLOWUP_FILLER`'s.
    """
    return not extract_keywords(text, extra_stopwords=FOLLOWUP_FILLER, language=language)


# a question asking for an article's whole wording: "dame el texto completo del artículo 38", "transcreva o art. 7º
# na íntegra", "¿qué dice literalmente el artículo 14?", "o inteiro teor do art. 482"
_FULL_TEXT_RE = re.compile(
    r"\b(?:(?:texto|redaccion|contenido|teor)\s+(?:completo|integro|integral|entero|literal|exacto)"
    r"|inteiro\s+teor|na\s+integra|en\s+su\s+totalidad|integramente|literal(?:mente)?|textual(?:mente)?"
    r"|palabra\s+por\s+palabra|palavra\s+por\s+palavra|transcri\w*|transcrev\w*)\b"
)
# ... or said right after the citation: "el artículo 38 del ET completo", "o art. 7º da CF inteiro"
_WHOLE_AFTER_RE = re.compile(r"[^\S\n]*,?[^\S\n]*(?:completo|completa|entero|entera|integro|integra|inteiro|inteira)\b")


# a question asking what something is: "¿qué es un ERTE?", "¿qué significa finiquito?", "o que é FGTS?"
_DEFINITION_RE = re.compile(
    r"^\W*(?:y\s+|e\s+)?(?:(?:que|o\s+que)\s+(?:es|son|e|sao|significa|significan|quiere\s+decir|quer\s+dizer)"
    r"|(?:e[nm]\s+)?que\s+consiste)\b(?!\s+(?:lo\s+que|que)\b)"
)


def asks_for_definition(question: str) -> bool:
    """
    Whether `question` asks what something is ("¿qué es un ERTE?", "¿en qué consiste el finiquito?", "o que é o
    FGTS?"): what answers it is where the statute defines it, the opening of its article, more than any sentence
    that merely mentions it.
    """
    return bool(_DEFINITION_RE.match(fold_accents(question.lower())))


def asks_for_full_text(question: str, citation_ends: Iterable[int] = ()) -> bool:
    """
    Whether `question` asks for the whole wording of what it cites ("texto completo", "na íntegra",
    "literalmente", "transcribe"), or says "completo" / "inteiro" right after a citation, at one of
    `citation_ends` (offsets in `question`).
    """
    folded = "".join(fold_accents(ch) or ch for ch in question).lower()  # offsets kept
    return bool(_FULL_TEXT_RE.search(folded)) or any(_WHOLE_AFTER_RE.match(folded, end) for end in citation_ends)


def asks_for_cited_text(question: str, citations: list[dict[str, Any]] | None) -> bool:
    """
    Whether `question` cites articles (`citations`, as `CitationGrammar.extract` reads them: `article`, `span`) and
    asks for their whole wording (`asks_for_full_text`, "completo" read at the citations' ends).
    """
    cited = [c for c in citations or [] if c.get("article")]
    return bool(cited) and asks_for_full_text(question, [int(c["span"][1]) for c in citations or [] if c.get("span")])


def extract_keywords(
    text: str, *, extra_stopwords: frozenset[str] = frozenset(), language: str | None = None
) -> list[str]:
    """
    Content words of `text`, lowercased, accents kept: stopwords, question words and article numbers removed.

    :param text: A question or a part of it.
    :param extra_stopwords: More accent-folded words to drop.
    :param language: `es` or `pt` (the stopwords of that language); None detects it (Spanish without evidence).
    :returns: The keywords in order, without duplicates.
    """
    stopwords = STOPWORDS_BY_LANGUAGE.get(language or detect_query_language(text, default="es") or "es", STOPWORDS)
    keywords: list[str] = []
    after_article = False
    for token in _WORD.findall(text.lower()):
        folded = fold_accents(token)
        if folded in ARTICLE_WORDS:
            after_article = True
            continue
        if after_article and (token[0].isdigit() or folded in ("bis", "ter")):
            continue
        after_article = False
        if folded in stopwords or folded in extra_stopwords or (len(token) < 2 and not token.isdigit()):
            continue
        keywords.append(token)
    return dedup(keywords)


def _stem(word: str) -> str:
    """A light Spanish stem of an accent-folded word: plural and final vowel dropped, at most 6 letters."""
    if word.endswith("es") and len(word) > 5 and word[-3] not in "aeiou":
        word = word[:-2]
    elif word.endswith("s") and len(word) > 3:
        word = word[:-1]
    if word[-1] in "aeo" and len(word) > 3:
        word = word[:-1]
    return word[:6]


def stems(text: str, language: str = "es") -> set[str]:
    """
    The accent-folded stems of the content words of `text`: "¿Cuántos días de vacaciones?" -> {"dia", "vacaci"}.

    Stopwords (of `language`: `es`, `pt`) and question words are dropped, number words become digits ("treinta" ->
    "30").
    """
    stopwords = STOPWORDS_BY_LANGUAGE.get(language, STOPWORDS)
    found = set()
    for token in _TOKEN_RE.findall(fold_accents(text.lower())):
        if token in stopwords or (len(token) < 2 and not token.isdigit()):
            continue
        found.add(_word_stem(token))
    return found


def lexical_coverage(query: str, text: str, language: str = "es") -> float | None:
    """
    The share of the content-word stems of `query` (`stems`, in `language`) that `text` holds, in [0, 1]; `None`
    when `query` has no content word. "vacaciones anuales retribuidas" over "Las vacaciones anuales ..." -> 2/3.
    """
    wanted = stems(query, language)
    if not wanted:
        return None
    return len(wanted & stems(text, language)) / len(wanted)


@lru_cache(maxsize=16384)
def _word_stem(token: str) -> str:
    """The stem of one folded, lowercase content word: its digits for a number word, else `_stem` (cached)."""
    number = cardinal_to_int(token)
    return str(number) if number is not None else token if token.isdigit() else _stem(token)


# a question comparing concepts, in Spanish or Portuguese: "diferencia(s) entre X y Y", "diferença entre X e Y",
# "comparar X con Y", "X vs Y"
_COMPARISONS = (
    re.compile(r"\bdiferen(?:cia|ça|ca)s?\b.*?\bentre\s+(?P<items>.+)$"),
    re.compile(r"\bcompar(?:ar|a|o|ación|acion|ação|acao|ativa|ativo)\s+(?:entre\s+)?(?P<items>.+)$"),
    re.compile(r"^(?P<items>.+\s(?:vs\.?|versus|frente\s+a)\s.+)$"),
)
# what separates the items, and "X or Y", per language: Portuguese "o" is the article ("o patrão"), its "or" is "ou"
_COMPARISON_ITEMS = {
    "es": re.compile(r"\s*,\s*|\s+(?:y|e|o|u|con|vs\.?|versus|frente\s+a)\s+"),
    "pt": re.compile(r"\s*,\s*|\s+(?:e|ou|com|vs\.?|versus|frente\s+a)\s+"),
}
_ALTERNATIVES = {"es": re.compile(r"\s+[ou]\s+"), "pt": re.compile(r"\s+ou\s+")}
MAX_ALTERNATIVE_KEYWORDS = 3  # "X o Y" is split only when both sides are short, i.e. two concepts
# single words that qualify the head noun of the previous concept: "despido objetivo y disciplinario"
_QUALIFIER = re.compile(r"(?:ivo|iva|ario|aria|al|ente|ante|ado|ada|ido|ida|ico|ica|oso|osa|ble|ulo|ula|vel)s?$")


# a message asking several questions: each part ending with "?" that holds at least this many content words is a
# question of its own; a shorter one ("isso vale?", "de quanto?", "quantas vezes?") goes on from the one before
MIN_QUESTION_KEYWORDS = 3
_QUESTION_END = re.compile(r"(?<=\?)\s+")
# a part that points back at the one before ("o que eu recebo nesse caso?", "¿y eso es legal?") goes on from it
_REFERS_BACK = re.compile(r"\b(?:(?:en\s+)?(?:ese|este|esse|nesse|neste)\s+caso|isso|isto|disso|nisso|eso|esto|ello)\b")


def split_questions(message: str) -> list[str]:
    """
    The questions of a message that asks several ("¿Cuántos días de vacaciones tengo? ¿Me pueden obligar a trabajar
    los domingos?"): its parts ending with a question mark, each with at least `MIN_QUESTION_KEYWORDS` content words
    (`extract_keywords`) and no word pointing back at the one before ("nesse caso", "eso"); any other part, and
    anything after the last question mark, stays with the part before it ("tenho direito a algum adicional por
    isso? de quanto?" is one question).

    :param message: The user's message.
    :returns: The questions as written (stripped), or `[message]` when it asks one.
    """
    language = "pt" if detect_query_language(message, default="es") == "pt" else "es"
    questions: list[str] = []
    for part in _QUESTION_END.split(message.strip()):
        asks = (part.rstrip().endswith("?") and not _REFERS_BACK.search(part.lower())
                and len(extract_keywords(part, language=language)) >= MIN_QUESTION_KEYWORDS)
        if questions and not asks:
            questions[-1] = f"{questions[-1]} {part}"
        else:
            questions.append(part)
    # a first part too short to stand alone ("¿es legal?") goes on with the next one
    if len(questions) > 1 and len(extract_keywords(questions[0], language=language)) < MIN_QUESTION_KEYWORDS:
        questions[:2] = [f"{questions[0]} {questions[1]}"]
    return questions if len(questions) > 1 else [message.strip()]


def split_concepts(question: str) -> list[str]:
    """
    The concepts a question asks about: each question of a message that asks several (`split_questions`), else the
    items of a comparison ("diferencia entre X y Y", "X vs Y", "comparar X con Y", "diferença entre X e Y") or the
    short alternatives of "X o Y" ("X ou Y"); otherwise the whole question.
    Separators are the question's language's (`detect_query_language`): a Portuguese "o" is an article.

    A one-word item that qualifies the head noun of the first item inherits it: "despido objetivo y
    disciplinario" -> "despido objetivo", "despido disciplinario".

    :param question: The question.
    :returns: One text per concept (lowercased, without ¿?¡!).
    """
    questions = split_questions(question)
    if len(questions) > 1:
        return [" ".join(re.sub(r"[¿?¡!]", " ", q.lower()).split()) for q in questions]
    text = re.sub(r"[¿?¡!]", " ", question.lower()).strip()
    language = "pt" if detect_query_language(question, default="es") == "pt" else "es"
    items: list[str] = []
    for pattern in _COMPARISONS:
        match = pattern.search(text)
        if match:
            separators = _COMPARISON_ITEMS[language]
            items = [item for item in separators.split(match.group("items")) if extract_keywords(item)]
            break
    else:
        parts = _ALTERNATIVES[language].split(text)
        if len(parts) > 1 and all(0 < len(extract_keywords(part)) <= MAX_ALTERNATIVE_KEYWORDS for part in parts):
            items = parts
    if len(items) < 2:
        return [text]
    head_keywords = extract_keywords(items[0])
    head = head_keywords[0] if len(head_keywords) >= 2 else None
    concepts = [items[0].strip()]
    for item in items[1:]:
        keywords = extract_keywords(item)
        if head and len(keywords) == 1 and _QUALIFIER.search(fold_accents(keywords[0])):
            concepts.append(f"{head} {keywords[0]}")
        else:
            concepts.append(item.strip())
    return concepts
