"""
Pure-Python text utilities for Spanish and Portuguese statutes, shared by the indexing and query stages.

- `split_sentences`: a rule-based sentence splitter that knows legal abbreviations ("art.", "núm.", "Sr."),
  ordinals ("1.º", "2.ª"), numbers ("1.500,50", "3.1.b)"), enumerations ("1.", "a)", "I -") and
  article labels ("Artículo 38. Vacaciones anuales."), for texts where NLTK punkt is not available.
- `normalize_article_key`: canonical article keys (`38`, `2 bis`, `1` for "primero", `da1` for
  "disposición adicional primera", `5-a` for the Brazilian "5º-A").
- `fold_accents`, `ordinal_to_int`, `cardinal_to_int` (and `leading_cardinal`, the number words that start a text),
  `roman_to_int`, `detect_language`: the helpers behind them.
"""

import logging
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Final

logger = logging.getLogger(__name__)

# ---------------------------------------------------------------------------------------------------------------
# Accents, numerals
# ---------------------------------------------------------------------------------------------------------------


class _CombiningMarks(dict):
    """A `str.translate` table that drops combining marks: code point -> None for a mark, else itself. Filled as
    characters are met (below U+3000, so a caller cannot grow it without bound), one `unicodedata` call each."""

    def __missing__(self, code: int) -> int | None:
        kept = None if unicodedata.combining(chr(code)) else code
        if code < 0x3000:
            self[code] = kept
        return kept


_DROP_COMBINING_MARKS = _CombiningMarks()


def fold_accents(text: str) -> str:
    """
    Remove diacritics: "Disposición" -> "Disposicion", "ñ" -> "n", "ção" -> "cao".

    Canonical decomposition (NFD) is used, so "º" and "ª" are kept as they are (NFKD would turn them into "o"/"a").
    ASCII text has nothing to fold and is returned as it is.
    """
    if text.isascii():
        return text
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", text).translate(_DROP_COMBINING_MARKS))


# A text with at least this many cased letters, nearly all of them capitals, was typed with caps lock on
SHOUTED_MIN_LETTERS: Final[int] = 12
SHOUTED_MIN_SHARE: Final[float] = 0.8


def unshout(text: str) -> str:
    """
    `text` in lower case when it is typed in capitals ("QUANTO TEMPO TENHO PARA ENTRAR NA JUSTIÇA?"), else as it is.

    A dense model reads "FÉRIAS" as other tokens than "férias"; a question in capitals would be matched by the
    shape of its letters rather than by what it asks. Short texts and texts where capitals are a part ("CLT art.
    477", "¿qué dice el ET?") are left alone.
    """
    cased = [ch for ch in text if ch.isupper() or ch.islower()]
    if len(cased) < SHOUTED_MIN_LETTERS or sum(ch.isupper() for ch in cased) < SHOUTED_MIN_SHARE * len(cased):
        return text
    return text.lower()


def blank_spans(text: str, spans: Iterable[Sequence[int]]) -> str:
    """
    `text` with each `(start, end)` span replaced by one space, overlapping or repeated spans as one (the citations
    of a list, "arts. 40 y 41 ET", share their span): a question read without what its citations or names say.
    """
    pieces, last = [], 0
    for start, end in sorted((int(span[0]), int(span[1])) for span in spans):
        if start >= last:
            pieces += [text[last:start], " "]
        last = max(last, end)
    return "".join([*pieces, text[last:]])


_UNIT_ORDINALS: Final[dict[str, int]] = {
    "primer": 1, "primero": 1, "primera": 1, "primeiro": 1, "primeira": 1,
    "segundo": 2, "segunda": 2,
    "tercer": 3, "tercero": 3, "tercera": 3, "terceiro": 3, "terceira": 3,
    "cuarto": 4, "cuarta": 4, "quarto": 4, "quarta": 4,
    "quinto": 5, "quinta": 5,
    "sexto": 6, "sexta": 6,
    "septimo": 7, "septima": 7, "setimo": 7, "setima": 7,
    "octavo": 8, "octava": 8, "oitavo": 8, "oitava": 8,
    "noveno": 9, "novena": 9, "nono": 9, "nona": 9,
}
_TEN_STEMS: Final[dict[str, int]] = {
    "decim": 10, "vigesim": 20, "trigesim": 30, "cuadragesim": 40, "quadragesim": 40,
    "quincuagesim": 50, "quinquagesim": 50, "sexagesim": 60, "septuagesim": 70, "setuagesim": 70,
    "octogesim": 80, "nonagesim": 90,
}
_UNIT_ORDINAL_PATTERN: Final[str] = "|".join(sorted(_UNIT_ORDINALS, key=len, reverse=True))
# stem + optional gender vowel + optional unit: "decimotercera", "decimoctava" (elided o), "vigesima primera"
_COMPOUND_ORDINAL_RE: Final[re.Pattern[str]] = re.compile(
    rf"({'|'.join(_TEN_STEMS)})[oa]?({_UNIT_ORDINAL_PATTERN})?"
)
_SPECIAL_ORDINALS: Final[dict[str, int]] = {
    "undecimo": 11, "undecima": 11, "duodecimo": 12, "duodecima": 12, "centesimo": 100, "centesima": 100,
}

# Cardinal number words, Spanish and Portuguese, 1-999: how an article number is said ("artículo cuarenta y ocho",
# "artigo quatrocentos e setenta e sete"). A ten joins its unit with "y" (es) or "e" (pt); a hundred joins what
# follows with "e" in Portuguese only. "veinti-" compounds are one word ("veintidós").
_CARDINAL_UNITS: Final[dict[str, int]] = {
    "un": 1, "uno": 1, "una": 1, "um": 1, "dos": 2, "dois": 2, "duas": 2, "tres": 3, "cuatro": 4, "quatro": 4,
    "cinco": 5, "seis": 6, "siete": 7, "sete": 7, "ocho": 8, "oito": 8, "nueve": 9, "nove": 9,
}
_CARDINAL_TEENS: Final[dict[str, int]] = {
    "diez": 10, "dez": 10, "once": 11, "onze": 11, "doce": 12, "doze": 12, "trece": 13, "treze": 13,
    "catorce": 14, "catorze": 14, "quatorze": 14, "quince": 15, "quinze": 15, "dieciseis": 16, "dezesseis": 16,
    "dezasseis": 16, "diecisiete": 17, "dezessete": 17, "dezassete": 17, "dieciocho": 18, "dezoito": 18,
    "diecinueve": 19, "dezenove": 19, "dezanove": 19,
}
_CARDINAL_TENS: Final[dict[str, int]] = {
    "veinte": 20, "vinte": 20, "treinta": 30, "trinta": 30, "cuarenta": 40, "quarenta": 40, "cincuenta": 50,
    "cinquenta": 50, "sesenta": 60, "sessenta": 60, "setenta": 70, "ochenta": 80, "oitenta": 80, "noventa": 90,
}
_CARDINAL_HUNDREDS: Final[dict[str, int]] = {
    "ciento": 100, "cento": 100, "doscientos": 200, "doscientas": 200, "duzentos": 200, "duzentas": 200,
    "trescientos": 300, "trescientas": 300, "trezentos": 300, "trezentas": 300, "cuatrocientos": 400,
    "cuatrocientas": 400, "quatrocentos": 400, "quatrocentas": 400, "quinientos": 500, "quinientas": 500,
    "quinhentos": 500, "quinhentas": 500, "seiscientos": 600, "seiscientas": 600, "seiscentos": 600,
    "seiscentas": 600, "setecientos": 700, "setecientas": 700, "setecentos": 700, "setecentas": 700,
    "ochocientos": 800, "ochocientas": 800, "oitocentos": 800, "oitocentas": 800, "novecientos": 900,
    "novecientas": 900, "novecentos": 900, "novecentas": 900,
}
_CARDINAL_HUNDRED_ALONE: Final[frozenset[str]] = frozenset({"cien", "cem"})  # 100 with nothing after it


def _below_hundred(words: Sequence[str], at: int) -> tuple[int, int] | None:
    """The cardinal 1-99 that starts at `words[at]` ("ocho", "veintidos", "cuarenta y ocho", "vinte e um") and
    how many words it takes; None when none starts there."""
    word = words[at] if at < len(words) else ""
    if word in _CARDINAL_UNITS or word in _CARDINAL_TEENS:
        return _CARDINAL_UNITS.get(word) or _CARDINAL_TEENS[word], 1
    if word.startswith("veinti") and word[6:] in _CARDINAL_UNITS:
        return 20 + _CARDINAL_UNITS[word[6:]], 1
    if word not in _CARDINAL_TENS:
        return None
    if at + 2 < len(words) and words[at + 1] in ("y", "e") and words[at + 2] in _CARDINAL_UNITS:
        return _CARDINAL_TENS[word] + _CARDINAL_UNITS[words[at + 2]], 3
    return _CARDINAL_TENS[word], 1


def leading_cardinal(words: Sequence[str]) -> tuple[int, int] | None:
    """
    The cardinal number word(s) at the start of `words` (folded, lowercase), Spanish or Portuguese, 1-999: its
    value and how many words it takes, the longest reading. `["cuarenta", "y", "ocho", "del"]` -> (48, 3);
    `["cento", "e", "trinta", "e", "cinco"]` -> (135, 5); `["dos", "y", "tres"]` -> (2, 1) (a list, not a
    number); None when `words` does not start with one.
    """
    if not words:
        return None
    first = words[0]
    if first in _CARDINAL_HUNDRED_ALONE:
        return 100, 1
    if first not in _CARDINAL_HUNDREDS:
        return _below_hundred(words, 0)
    after = 2 if len(words) > 1 and words[1] == "e" else 1  # Portuguese "cento e dez"; Spanish "ciento diez"
    rest = _below_hundred(words, after)
    if rest is not None:
        return _CARDINAL_HUNDREDS[first] + rest[0], after + rest[1]
    return (_CARDINAL_HUNDREDS[first], 1) if _CARDINAL_HUNDREDS[first] > 100 else None  # "ciento" is not a number


def _compact(word: str) -> str:
    """Lowercase, accent-free, without spaces or hyphens: "Vigésima primera" -> "vigesimaprimera"."""
    return re.sub(r"[\s\-]+", "", fold_accents(word).lower())


def ordinal_to_int(word: str) -> int | None:
    """
    Spanish (and common Portuguese) ordinal words to int, 1-99; None when `word` is not an ordinal.

    One- and two-word forms are accepted: "primero", "Primera", "decimotercera", "décima tercera",
    "vigésimo primero", "vigesimoprimera", "trigésima segunda", "decimoctava", "undécima".
    """
    compact = _compact(word)
    if compact in _UNIT_ORDINALS:
        return _UNIT_ORDINALS[compact]
    if compact in _SPECIAL_ORDINALS:
        return _SPECIAL_ORDINALS[compact]
    match = _COMPOUND_ORDINAL_RE.fullmatch(compact)
    if not match:
        return None
    return _TEN_STEMS[match.group(1)] + (_UNIT_ORDINALS[match.group(2)] if match.group(2) else 0)


def cardinal_to_int(word: str) -> int | None:
    """
    Spanish or Portuguese cardinal words to int, 1-999 ("diez", "veintiuno", "treinta y dos", "ciento treinta y
    cinco", "quatrocentos e setenta e sete"); None when `word` is not wholly one.
    """
    words = re.split(r"[\s\-]+", fold_accents(word).lower().strip())
    found = leading_cardinal(words)
    return found[0] if found and found[1] == len(words) else None


_ROMAN_RE: Final[re.Pattern[str]] = re.compile(r"M{0,3}(CM|CD|D?C{0,3})(XC|XL|L?X{0,3})(IX|IV|V?I{0,3})")
_ROMAN_VALUES: Final[dict[str, int]] = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def roman_to_int(numeral: str) -> int | None:
    """Uppercase Roman numeral to int ("XIV" -> 14); None when `numeral` is not a valid numeral."""
    if not numeral or not _ROMAN_RE.fullmatch(numeral):
        return None
    total = 0
    for current, following in zip(numeral, numeral[1:] + " "):
        value = _ROMAN_VALUES[current]
        total += -value if _ROMAN_VALUES.get(following, 0) > value else value
    return total


# ---------------------------------------------------------------------------------------------------------------
# Article keys
# ---------------------------------------------------------------------------------------------------------------

ARTICLE_KINDS: Final[dict[str, str]] = {
    "articulo": "",
    "adicional": "da",
    "transitoria": "dt",
    "derogatoria": "dd",
    "final": "df",
    "anexo": "anexo",
}
_KIND_ALIASES: Final[dict[str, str]] = {"artigo": "articulo", "article": "articulo", "art": "articulo"}
LATIN_SUFFIXES: Final[str] = "bis|ter|quater|quinquies|sexies|septies|octies|novies|nonies|decies"
_SUFFIX_RE: Final[re.Pattern[str]] = re.compile(rf"^(.*?)(?:(?<=\d)\s*|\s+)({LATIN_SUFFIXES})$", re.IGNORECASE)
_PREFIX_RE: Final[re.Pattern[str]] = re.compile(
    r"^(?:disposicion\s+(?P<kind>adicional|transitoria|derogatoria|final)\b|(?P<art>articulos?|artigos?|arts?\.?)"
    r"|(?P<anexo>anexo)\b)\s*",
    re.IGNORECASE,
)
_NUMBER_RE: Final[re.Pattern[str]] = re.compile(r"(\d+)(?:\s*-?\s*([a-z]))?", re.IGNORECASE)
_UNICO: Final[frozenset[str]] = frozenset({"unico", "unica"})


def _number_core(text: str, kind: str) -> str | None:
    """The canonical number part ("38", "2 bis", "5-a", "unico", "93-97") of accent-free `text`, or None."""
    suffix = ""
    suffix_match = _SUFFIX_RE.match(text)
    if suffix_match and suffix_match.group(1).strip():
        text, suffix = suffix_match.group(1).strip(), " " + suffix_match.group(2).lower()
    if kind == "articulo":
        range_match = re.fullmatch(r"(.+?)\s+a\s+(.+)", text)
        if range_match:
            low, high = _number_core(range_match.group(1), kind), _number_core(range_match.group(2), kind)
            return f"{low}-{high}{suffix}" if low and high else None
    number = _NUMBER_RE.fullmatch(text)
    if number:
        value = str(int(number.group(1)))
        return (f"{value}-{number.group(2).lower()}" if number.group(2) else value) + suffix
    if _compact(text) in _UNICO:
        return "unico" + suffix
    value_int = ordinal_to_int(text)
    if value_int is None:
        value_int = cardinal_to_int(text)
    if value_int is None:
        value_int = roman_to_int(text)  # uppercase only: "Anexo II"
    return None if value_int is None else str(value_int) + suffix


_KEY_NUMBER_RE: Final[re.Pattern[str]] = re.compile(r"(?P<prefix>[a-z]*-?)(?P<n>\d+)(?P<rest>.*)")


def adjacent_key(key: str, step: int) -> str | None:
    """
    The key of the article `step` (+1 or -1) numbers after or before `key` in its series: "38" -> "39" / "37",
    "da1" -> "da2", "adct-10" -> "adct-11"; before a lettered or Latin-suffixed article, its base article
    ("38 bis", "59-a" -> "38", "59"), after one, the next number ("59-a" -> "60"). None before the first article,
    and for a key with no number ("unico", "da").

    Lettered and suffixed articles between two numbers ("38 bis" after "38") are not known from the key alone: the
    step is by number.
    """
    match = _KEY_NUMBER_RE.fullmatch(key)
    if match is None or step not in (1, -1):
        return None
    number = int(match.group("n"))
    if step < 0 and match.group("rest"):
        return f"{match.group('prefix')}{number}"
    return f"{match.group('prefix')}{number + step}" if number + step >= 1 else None


def normalize_article_key(raw: str, kind: str = "articulo", *, strict: bool = False) -> str:
    """
    Canonical key of an article, disposition or annex, as stored in the `article` meta field.

    Articles: "38" -> "38", "2 bis" -> "2 bis", "primero" / "Primera" -> "1", "diez" -> "10",
    "decimotercera" -> "13", "único" -> "unico", "93 a 97" -> "93-97", Portuguese "1º" -> "1", "5º-A" -> "5-a".
    Dispositions (`kind` "adicional", "transitoria", "derogatoria", "final"): "primera" -> "da1" / "dt1" /
    "dd1" / "df1"; "única" or no ordinal -> "da" / "dt" / "dd" / "df"; "novena bis" -> "da9 bis".
    Annexes (`kind` "anexo"): "I" -> "anexo1", "" or "único" -> "anexo".
    A leading label in `raw` ("Artículo 38", "Disposición adicional primera", "Art. 5º") overrides `kind`.

    :param raw: The number or ordinal as written, with or without its label.
    :param kind: "articulo" (also "artigo", "article", "art"), "adicional", "transitoria", "derogatoria",
        "final" or "anexo".
    :param strict: Raise instead of falling back to a lowercase, accent-free slug of `raw` when the number
        cannot be parsed.
    :returns: The normalized key.
    :raises ValueError: If `kind` is unknown, or if `strict` and `raw` cannot be parsed.
    """
    kind = _KIND_ALIASES.get(kind, kind)
    if kind not in ARTICLE_KINDS:
        raise ValueError(f"Unknown article kind {kind!r}; expected one of {sorted(ARTICLE_KINDS)} (or 'artigo').")
    text = fold_accents(re.sub(r"\[[^\]]*\]", " ", raw)).replace("º", "").replace("ª", "").replace("°", "")
    text = re.sub(r"[–—]", "-", text).strip().strip("*").strip().strip(".:;,").strip()
    prefix_match = _PREFIX_RE.match(text)
    if prefix_match:
        kind = (prefix_match.group("kind") or ("anexo" if prefix_match.group("anexo") else "articulo")).lower()
        text = text[prefix_match.end() :]
    text = re.sub(r"\s+", " ", re.sub(r"(?<=\d)\.(?=\s|-|$)", "", text)).strip()  # "1.º" -> "1." -> "1"
    prefix = ARTICLE_KINDS[kind]
    if kind != "articulo" and _compact(text) in ("", *_UNICO):
        return prefix
    core = _number_core(text, kind)
    if core is None:
        if strict:
            raise ValueError(f"Cannot parse article number {raw!r} (kind {kind!r}).")
        core = text.lower()
        logger.debug("Unparsed article number %r; using slug %r", raw, core)
    return f"{prefix}{core}"


# ---------------------------------------------------------------------------------------------------------------
# Language
# ---------------------------------------------------------------------------------------------------------------

_LANG_MARKERS: Final[dict[str, frozenset[str]]] = {
    "es": frozenset({"el", "los", "las", "del", "y", "una", "con", "al", "según", "también", "artículo", "ley"}),
    "pt": frozenset(
        {"o", "os", "do", "dos", "das", "e", "um", "uma", "com", "não", "ao", "pelo", "pela", "artigo", "lei"}
    ),
}


def detect_language(text: str, default: str = "es", sample_chars: int = 20000) -> str:
    """
    Tell Spanish from Portuguese by counting exclusive function words in the first `sample_chars` characters.

    :returns: "es", "pt", or `default` when neither language has enough evidence (e.g. an English text).
    """
    words = re.findall(r"[a-záéíóúâêôãõçñü]+", text[:sample_chars].lower())
    counts = {lang: sum(1 for w in words if w in markers) for lang, markers in _LANG_MARKERS.items()}
    best = max(counts, key=lambda lang: counts[lang])
    if counts[best] < 5 or counts[best] < 1.5 * min(counts.values()):
        return default
    return best


# Questions are short and colloquial ("to quase 2 anos sem tirar ferias pq o patrao nunca libera"): words that
# occur in one language only (not "que", "como", "empresa", "contrato"), slang spellings included, and letters that
# only one language writes. Words frequent in one language that the other also writes count half
# (`_QUERY_LANG_WEAK_MARKERS`): Portuguese "o", "da", "mas", "dia(s)" are Spanish "or", "gives", unaccented "más",
# "día(s)"; Spanish "ha" is unaccented Portuguese "há".
_QUERY_LANG_MARKERS: Final[dict[str, frozenset[str]]] = {
    "es": frozenset(
        "el los las del y una un con al según también artículo artículos ley en la lo le les mi mis yo usted él "
        "ella eso esto muy sin hasta ya pero cuando cuándo cuánto cuántos cuántas cuál dónde donde qué tengo "
        "tiene tienen tener puedo puede pueden estoy soy son hay trabajo trabajar vacaciones despido despedir "
        "despedido jefe baja nómina nomina sueldo embarazada paro cosa más ahora aquí después todavía dinero hoy "
        "año años día días constitución estatuto derecho han he ayer servicio servicios trabajador trabajadora "
        "trabajadores empleo empleado empleada hijo hija hijos llevo si dice alguno alguna algún ninguno ninguna "
        "ningún quién quien quiénes mejor gracias explícame explicame explícamelo nosotros ustedes ganó "
        "hola buenos buenas ayuda ayúdame ayudame adiós adios "
        # case law only one country cites so: a Supreme or Constitutional Court judgment ("STS 1234/2020", "STC")
        "sts stc stsj".split()
    ),
    "pt": frozenset(
        "os do dos das e um uma com não nao ao pelo pela artigo artigos lei em na eu meu minha meus "
        "minhas você voce vc ele isso isto muito sem até ate já ja quando quanto quantos quantas qual onde "
        "tenho tem têm ter posso pode podem estou tô to tá ta sou são sao há trabalho trabalhar férias ferias "
        "demissão demissao demitido demitida demitir dispensa chefe patrão patrao grávida gravida gestante "
        "carteira assinada coisa mais agora aqui depois ainda dinheiro hoje ano anos pra pq tb q fui "
        "fiz vou mandado mandada embora constituição constituicao salário direito direitos consigo preciso "
        "ganho recebo receber recebi ontem amanhã amanha mandaram demitiram trabalhei serviço servico trabalhador "
        "trabalhadora empregado empregada emprego filho filha filhos levo diz algum alguma nenhum nenhuma quem "
        "melhor obrigado obrigada entendi também tambem explique nós vocês ganhou "
        "olá oi tudo bem bom boa ajuda ajude tchau é "
        # Brazilian case law: "Súmula 85 do TST", "STF", "STJ", a regional labour court
        "súmula sumula tst stf stj trt".split()
    ),
}
_QUERY_LANG_WEAK_MARKERS: Final[dict[str, frozenset[str]]] = {
    "es": frozenset({"ha"}),
    "pt": frozenset({"o", "da", "mas", "dia", "dias"}),
}
_QUERY_LANG_LETTERS: Final[dict[str, str]] = {"es": "ñ¿¡", "pt": "ãõçê"}
# Word endings only one language writes, one marker each: Spanish "-ción(es)", "-sión(es)" against Portuguese
# "-ção/-ções", "-são/-sões" (typed without accents: "-cao", "-sao"), and Portuguese "-ário", "-ório" (Spanish writes
# "salario", "obligatorio" unaccented). They tell a question of words neither list holds ("kuantos dias d bacaciones
# tngo", "rescisao indireta", "votar é obrigatório no Brasil?").
_QUERY_LANG_ENDINGS: Final[dict[str, re.Pattern[str]]] = {
    "es": re.compile(r"[cs]i[oó]n(?:es)?$"),
    "pt": re.compile(r"[çcs](?:ão|ao|ões|oes)$|[áó]ri[oa]s?$"),
}
# A question in English ("How many days of paid holiday do I get in Spain?") holds a Portuguese marker or two ("do")
# by chance: English function words neither language writes tell it, so that it is not taken for either.
_ENGLISH_MARKERS: Final[frozenset[str]] = frozenset(
    "the how what which who why is are does did was were my you your we our they their can could should would will "
    "of to for with without from get got have has had if after before during and or not this that be been being i "
    "i'm it its am paid work job boss fired holiday holidays leave employer employee day days say says".split()
)


# "DA 7ª", "D.A. 1.ª", "DA única": the abbreviation of a Spanish disposición adicional, not the Portuguese "da"
_DISPOSITION_ABBREVIATION_RE: Final[re.Pattern[str]] = re.compile(r"(?<!\w)D\.?[^\S\n]?A\.?(?=[^\S\n]*(?:\d|[Úú]nica))")


def detect_query_language(text: str, default: str | None = None) -> str | None:
    """
    Tell a Spanish question from a Portuguese one (`detect_language` needs longer text).

    Counts the words that only one of the two languages uses (half for the weak ones, which the other language also
    writes), plus two for each letter only one of them writes ("ã", "ç" / "ñ", "¿"). A question with more English
    function words than either count is neither.

    A disposition's abbreviation in capitals ("DA 7ª LGSS": disposición adicional) is no Portuguese "da".

    :returns: "es", "pt", or `default` when the question gives no evidence either way (a tie) or is in English.
    """
    lowered = _DISPOSITION_ABBREVIATION_RE.sub(" ", text or "").lower()
    words = re.findall(r"[a-záéíóúâêôãõçñüà]+", lowered)
    counts = {
        lang: sum(1 for word in words if word in markers)
        + 0.5 * sum(1 for word in words if word in _QUERY_LANG_WEAK_MARKERS[lang])
        + 2 * sum(lowered.count(letter) for letter in _QUERY_LANG_LETTERS[lang])
        + sum(1 for word in words if word not in markers and _QUERY_LANG_ENDINGS[lang].search(word))
        for lang, markers in _QUERY_LANG_MARKERS.items()
    }
    english = sum(1 for word in re.findall(r"[a-z']+", lowered) if word in _ENGLISH_MARKERS)
    if counts["es"] == counts["pt"] or english > max(counts.values()):
        return default
    return "es" if counts["es"] > counts["pt"] else "pt"


# ---------------------------------------------------------------------------------------------------------------
# Sentences
# ---------------------------------------------------------------------------------------------------------------

_COMMON_ABBREVIATIONS: Final[frozenset[str]] = frozenset(
    {
        "art", "arts", "núm", "núms", "num", "nums", "nº", "n.º", "pág", "págs", "pag", "pags", "p", "pp",
        "cap", "caps", "inc", "incs", "al", "als", "sr", "sra", "sres", "srs", "dr", "dra", "prof",
        "ref", "cfr", "cf", "vid", "op", "cit", "ob", "id", "ibid", "ed", "vol", "vols", "aprox", "ss",
        "excmo", "excma", "ilmo", "ilma", "av", "avda", "tel", "fdo", "ej", "vs", "§",
    }
)
_LANG_ABBREVIATIONS: Final[dict[str, frozenset[str]]] = {
    "es": frozenset(
        {
            "apdo", "apdos", "ap", "dña", "d", "dª", "srta", "disp", "disps", "adic", "transit", "trans", "párr",
            "parr", "pto", "ptos", "lit", "ord", "sig", "sigs", "rec", "sent", "cía", "ud", "uds",
        }
    ),
    "pt": frozenset(
        {"exmo", "exma", "sra", "srª", "ltda", "cia", "par", "parág", "des", "min", "rel", "proc", "fls", "dec"}
    ),
}
_ALL_ABBREVIATIONS: Final[frozenset[str]] = _COMMON_ABBREVIATIONS.union(*_LANG_ABBREVIATIONS.values())

# candidate boundary: terminal punctuation (+ closing quotes/brackets) followed by whitespace; a run is read from its
# first mark and whole (possessive), so a long run of dots without a space after it costs linear time, not quadratic
_TERMINAL_RE: Final[re.Pattern[str]] = re.compile(r"(?<![.!?…])[.!?…]++[»\"”’')\]*]*+(?=\s)")
_SENTENCE_START_CHARS: Final[str] = "«\"“‘'¿¡([§"
# an enumeration marker opening a line, not a sentence end: "1. ", "«2. ", "2 bis. ", "a. ", "IV. ", "Uno. ",
# "Primera. "
_ENUMERATOR_LEAD_RE: Final[re.Pattern[str]] = re.compile(
    rf"[«\"“]?(?:\d+(?:\.\d+)*(?:\s+(?:{LATIN_SUFFIXES}))?|[a-zA-ZñÑ]|[IVXLCDM]+"
    r"|(?P<word>[A-ZÁÉÍÓÚ][a-záéíóúñ]+))\."
)
# a lowercase line that starts a list item ("a) ", "iv) ", "b. "): never joined to the previous line
_LIST_ITEM_RE: Final[re.Pattern[str]] = re.compile(r"(?:[a-zñ]{1,4}\)|[a-zñ]\.)\s")
# label at the start of a line whose final period is not a sentence end: "Artículo 38.", "Art. 10.",
# "Disposición adicional primera.", "CAPÍTULO II.", "§ 2.", "Parágrafo único."
_LABEL_RE: Final[re.Pattern[str]] = re.compile(
    r"\s*(?:\*\*)?(?:(?:art[íi]culos?|arts?\.|artigos?|t[íi]tulo|cap[íi]tulo|secci[óo]n|se[çc][ãa]o"
    rf"|subsecci[óo]n|subse[çc][ãa]o|libro|livro|anexo|§)\s*[\wºª°-]+?(?:\s+(?:{LATIN_SUFFIXES}))?"
    rf"|disposici[óo]n\s+(?:adicional|transitoria|derogatoria|final)(?:\s+\w+){{0,2}}?|par[áa]grafo\s+[úu]nico)\.",
    re.IGNORECASE,
)
_DOTTED_ACRONYM_RE: Final[re.Pattern[str]] = re.compile(r"(?:[A-Za-z]{1,3}\.)+[A-Za-z]{1,3}")
_SOFT_WRAP_END: Final[str] = ".:;!?…»\"”)"


def _blocks(text: str) -> list[str]:
    """
    Lines grouped into blocks that never share a sentence.

    Every newline is a boundary, except a soft wrap: a line that does not end in punctuation followed by a
    line that starts in lowercase and is not a list item (PDF and plain-text line wrapping).
    """
    blocks: list[str] = []
    previous_open = False
    for line in text.split("\n"):
        stripped = line.strip()
        if not stripped:
            previous_open = False
            continue
        if previous_open and stripped[0].islower() and not _LIST_ITEM_RE.match(stripped):
            blocks[-1] = f"{blocks[-1]} {stripped}"
        else:
            blocks.append(stripped)
        previous_open = stripped[-1] not in _SOFT_WRAP_END
    return blocks


def _lead_end(block: str) -> int:
    """End of a leading label or enumeration marker whose period does not end a sentence; -1 when none."""
    lead = _LABEL_RE.match(block) or _ENUMERATOR_LEAD_RE.match(block)
    if lead is None:
        return -1
    word = lead.groupdict().get("word")
    if word and ordinal_to_int(word) is None and cardinal_to_int(word) is None:
        return -1  # "Dado." is a sentence, "Uno." / "Primera." are markers
    return lead.end()


def _is_boundary(block: str, match: re.Match[str], abbreviations: frozenset[str], lead_end: int) -> bool:
    """Whether the terminal punctuation in `match` ends a sentence."""
    following = block[match.end() :].lstrip()
    if not following:
        return False
    first = following[0]
    if not (first.isupper() or first.isdigit() or first in _SENTENCE_START_CHARS):
        return False  # "etc. y", "art. 38 del", "S.A. que": lowercase never starts a sentence
    punct = match.group(0)
    if punct.rstrip("»\"”’')]*").endswith(("!", "?", "…", "...")):
        return not block[: match.start()].endswith("(")  # "(...) La" is an omission mark
    if match.start() + 1 == lead_end:
        return False  # "Artículo 38. Vacaciones anuales.", "1. Los trabajadores ...", "Uno. Se modifica ..."
    token_start = block.rfind(" ", 0, match.start()) + 1
    token = block[token_start : match.start() + 1]
    word = token[:-1].lstrip("«\"“‘'([¿¡*")
    if not word:
        return True
    if fold_accents(word).lower() in abbreviations or word.lower() in abbreviations:
        return False
    if len(word) == 1 and word.isupper():
        return False  # initials: "D. Juan", "J. García"
    if _DOTTED_ACRONYM_RE.fullmatch(word):
        return False  # "S.A.", "EE.UU.", "S.L."
    before = block[:token_start].rstrip()
    # an enumeration marker after a sentence or a colon: "siguientes: 1. El despido. 2. La dimisión."
    return not (before.endswith((".", ":", ";")) and re.fullmatch(r"\d+|[a-zñ]|[IVXLCDM]+", word))


def split_sentences(text: str, lang: str = "es") -> list[str]:
    """
    Split Spanish or Portuguese legal text into sentences.

    Boundaries: blank lines and newlines between paragraphs or list items (a lowercase continuation of an
    unpunctuated line is a soft wrap and is joined), and ".", "!", "?", "…" followed by whitespace and an
    uppercase letter, digit or opening quote/bracket. Not a boundary: abbreviations ("art.", "núm.", "Sr.",
    "Excmo.", "S.A.", Portuguese "Art.", "inc.", "al."), initials ("D. Juan"), "etc." before a lowercase word,
    ordinals ("1.º", "2.ª"), numbers and dates ("1.500,50", "3.1.b)", "24.03.1995"), enumeration markers at a
    line start ("1. Los ..."), and the period of a leading label ("Artículo 38. Vacaciones anuales.").

    Sentences are stripped and non-empty; concatenated they hold every non-space character of `text`, in order.

    :param text: The text to split.
    :param lang: "es" or "pt" selects the abbreviation list; any other value uses both lists.
    :returns: The sentences, in order.
    """
    abbreviations = (
        _COMMON_ABBREVIATIONS | _LANG_ABBREVIATIONS[lang] if lang in _LANG_ABBREVIATIONS else _ALL_ABBREVIATIONS
    )
    sentences: list[str] = []
    for block in _blocks(text):
        lead_end = _lead_end(block)
        start = 0
        for match in _TERMINAL_RE.finditer(block):
            if _is_boundary(block, match, abbreviations, lead_end):
                sentence = block[start : match.end()].strip()
                if sentence:
                    sentences.append(sentence)
                start = match.end()
        tail = block[start:].strip()
        if tail:
            sentences.append(tail)
    return sentences


# ---------------------------------------------------------------------------------------------------------------
# Subdivisions of an article
# ---------------------------------------------------------------------------------------------------------------

# How deep each subdivision sits (`components.legal.citations.UNIT_KINDS`): a unit runs from the line that opens it
# to the next line that opens one as deep or shallower. Spanish: apartado > regla (an ordinal item, "7.ª" of CE art.
# 149.1) > letra; Brazilian: parágrafo > inciso > alínea (kind "letra").
UNIT_DEPTH: Final[dict[str, int]] = {"apartado": 1, "paragrafo": 1, "regla": 2, "inciso": 2, "letra": 3}

# the marker a Brazilian provision's line opens with, as a consolidated text writes it: "§ 2º", "Parágrafo único.",
# "I -", "a)"
BR_PROVISION_MARKER: Final[str] = r"§\s*\d+\s*[º°o]?\.?|Par[áa]grafo\s+[úu]nico\.?|[IVXLCDM]+\s*[-–—]|[a-z]\)"
# the whole text of a provision a later norm repealed, vetoed or emptied, which statutes keep in place under its
# marker: "§ 7º (Revogado).", "a) (revogado);", "XII - (VETADO)", "4. (Suprimido).", "2. (Derogado)", "(Sin contenido)"
REPEALED_PROVISION_RE: Final[re.Pattern[str]] = re.compile(
    rf"^(?:{BR_PROVISION_MARKER}|\d+(?:\s+bis)?\.)?\s*"
    r"\((?P<kind>revogad[oa]s?|suprimid[oa]s?|vetad[oa]s?|derogad[oa]s?|sin\s+contenido)\)\s*[.;]?$",
    re.IGNORECASE,
)


def repealed_provision(text: str) -> str | None:
    """
    How a provision whose whole text is a repeal marker was emptied ("revogado", "vetado", "suprimido", "derogado",
    "sin contenido", lower-cased as written), None for a provision with text of its own.
    """
    match = REPEALED_PROVISION_RE.match(text.strip())
    return " ".join(match.group("kind").lower().split()) if match else None


# the marker a subdivision's first line opens with: "2. ", "7.ª ", "1.º ", "b) ", "§ 8º ", "Parágrafo único.",
# "XVII - " (and "1.El", as some consolidated BOE texts write it without the space)
_UNIT_MARKER_RE: Final[re.Pattern[str]] = re.compile(
    r"(?P<regla>\d+)\.[\u00aa\u00ba](?=\s)"
    r"|(?P<apartado>\d+)(?:[^\S\n]+bis)?\.(?=\s|[^\W\d_])"
    r"|(?P<letra>[a-z](?: bis)?)\)(?=\s)"
    r"|\u00a7+[^\S\n]*(?P<paragrafo>\d+)(?!\d)"
    r"|(?i:(?P<unico>par[aá]grafo[^\S\n]+[uú]nico))"
    r"|(?P<inciso>[IVXLC]+)[^\S\n]*[-\u2013\u2014](?=\s)"
)


def unit_marker(sentence: str) -> tuple[str, str] | None:
    """The subdivision a sentence of statute text opens, if any ("§ 8º A inobservância" -> `("paragrafo", "8")`)."""
    match = _UNIT_MARKER_RE.match(sentence.lstrip())
    if not match:
        return None
    if match.group("unico"):
        return ("paragrafo", "unico")
    kind = next(name for name in ("regla", "apartado", "letra", "paragrafo", "inciso") if match.group(name))
    return (kind, match.group(kind))


def unit_range(sentences: list[str], units: list[tuple[str, str]]) -> tuple[int | None, int, int] | None:
    """
    Where the subdivision `units` names (outermost first, as `components.legal.citations.pinpoint` reads a
    citation) lies among an article's sentences (`split_sentences` of its body, its parts in order).

    :returns: `(lead, start, end)`: the unit is `sentences[start:end]`; `lead` is the sentence that introduces an
        inciso or a letter ("São direitos dos trabalhadores...:", "1. El contrato de trabajo se extinguirá:"), None
        when there is none. None when the article has no such subdivision (or `units` is empty).
    """
    markers = [unit_marker(sentence) for sentence in sentences]
    low, high, lead = 0, len(sentences), None
    for kind, value in units:
        if kind == "caput":  # what the article says before its first subdivision
            stop = next((i for i in range(low, high) if markers[i]), high)
            if stop == low:
                return None
            high, lead = stop, None
            continue
        depth = UNIT_DEPTH.get(kind)
        found = next((i for i in range(low, high) if markers[i] == (kind, value)), None)
        if depth is None or found is None:
            return None
        lead = next(
            (
                i
                for i in range(found - 1, low - 1, -1)
                if sentences[i].rstrip().endswith(":") and (markers[i] is None or UNIT_DEPTH[markers[i][0]] < depth)
            ),
            None,
        ) if depth > 1 else None
        stop = next((i for i in range(found + 1, high) if markers[i] and UNIT_DEPTH[markers[i][0]] <= depth), high)
        low, high = found, stop
    return (lead, low, high) if units else None
