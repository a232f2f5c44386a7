"""
The citation grammar and law resolution: how Spanish and Portuguese text cites articles and norms.

`CitationGrammar` reads citations ("art. 38 ET", "arts. 40 y 41 ET", "Art. 5º, caput, da CF", "Lei 8.213") and
resolves laws through the known-laws table (`components/legal/data/laws.yaml`) and `DEFAULT_ALIASES`;
`law_key` is the lookup key of a law name; `citation_condition` / `citation_filters` turn citations into Haystack
filters. Shared vocabulary: every stage that reads citations imports it from here.
"""

import functools
import re
from collections import Counter
import unicodedata
from dataclasses import dataclass
from typing import Any, Final

from haystack import logging

from components.legal.ids import ADCT_PREFIX, APPROVAL_PREFIX, decree_key, numbered_as
from components.legal.laws import load_laws_table
from components.legal.legal_text import (
    LATIN_SUFFIXES,
    blank_spans,
    fold_accents,
    leading_cardinal,
    normalize_article_key,
    ordinal_to_int,
)
from components.legal.terms import extract_keywords

logger = logging.getLogger(__name__)

# Names and abbreviations of the bundled norms -> `law_short` (or `law_id`). None marks a name that is recognised
# but does not identify one norm ("Constitución Federal": of which country?): it resolves to no law, and being longer
# it keeps a shorter alias ("Constitución") from matching inside it. User `aliases` override these entries.
DEFAULT_ALIASES: Final[dict[str, str | None]] = {
    "Estatuto de los Trabajadores": "ET",
    "Ley del Estatuto de los Trabajadores": "ET",
    "Estatuto": "ET",
    "TRLET": "ET",
    "Real Decreto Legislativo 2/2015": "ET",
    "E.T.": "ET",
    "Estatuto de los Trabajadores de 1995": "ET1995",
    "Real Decreto Legislativo 1/1995": "ET1995",
    "Constitución": "CE",
    "Constitución Española": "CE",
    "Constitución de España": "CE",
    "C.E.": "CE",
    # the other language's names of each country's norms: a Portuguese question about Spanish law and the reverse
    "Constituição Espanhola": "CE",
    "Constituição da Espanha": "CE",
    "Estatuto dos Trabalhadores": "ET",
    "Ley General de la Seguridad Social": "LGSS",
    "TRLGSS": "LGSS",
    "L.G.S.S.": "LGSS",
    "Real Decreto Legislativo 8/2015": "LGSS",
    "Ley General de la Seguridad Social de 1994": "LGSS1994",
    "Real Decreto Legislativo 1/1994": "LGSS1994",
    "Ley de Prevención de Riesgos Laborales": "LPRL",
    "Ley 31/1995": "LPRL",
    "Ley Orgánica de Libertad Sindical": "LOLS",
    "Ley de Libertad Sindical": "LOLS",
    "Ley Orgánica 11/1985": "LOLS",
    "Ley de Infracciones y Sanciones en el Orden Social": "LISOS",
    "Ley sobre Infracciones y Sanciones en el Orden Social": "LISOS",
    "Real Decreto Legislativo 5/2000": "LISOS",
    "Reglamento General de Cotización": "RGC",
    "Reglamento General sobre Cotización y Liquidación de otros Derechos de la Seguridad Social": "RGC",
    "Real Decreto 2064/1995": "RGC",
    "Constituição": "CF88",
    "Constituição Federal": "CF88",
    "Constituição Federal de 1988": "CF88",
    "Constituição da República": "CF88",
    "Constituição da República Federativa do Brasil": "CF88",
    "Constitución de Brasil": "CF88",
    "Constitución brasileña": "CF88",
    "Constitución Federal de Brasil": "CF88",
    "Constituição brasileira": "CF88",
    "Constituição do Brasil": "CF88",
    "Consolidación de las Leyes del Trabajo": "CLT",
    "CF": "CF88",
    "CF/88": "CF88",
    "CF/1988": "CF88",
    "CRFB": "CF88",
    "CRFB/88": "CF88",
    "CF 88": "CF88",
    "CF 1988": "CF88",
    "Constituição de 1988": "CF88",
    "Consolidação das Leis do Trabalho": "CLT",
    "C.L.T.": "CLT",
    "Consolidação das Leis Trabalhistas": "CLT",
    "Decreto-Lei 5.452": "CLT",
    "Constitución Federal": None,
}
# Norms a question may cite that the bundled corpus does not hold: name or abbreviation -> the name shown to the
# user. A citation of one gets `law` (the name) without a `law_id`, as a numbered norm outside the table does, so
# nothing fetches its article number from the norms that are held ("art. 18 do CDC" is not CLT art. 18). A name the
# laws table or the `aliases` resolve wins over this list (a deployment that indexes the Código Penal).
ABSENT_NORMS: Final[dict[str, str]] = {
    "Estatuto de Autonomía": "Estatuto de Autonomía",
    "Estatuto Básico del Empleado Público": "Estatuto Básico del Empleado Público",
    "EBEP": "Estatuto Básico del Empleado Público",
    "Estatuto del Trabajo Autónomo": "Estatuto del Trabajo Autónomo",
    "Código Penal": "Código Penal",
    "CP": "Código Penal",
    "Código Civil": "Código Civil",
    "CC": "Código Civil",
    "Código de Comercio": "Código de Comercio",
    "Ley de Enjuiciamiento Civil": "Ley de Enjuiciamiento Civil",
    "LEC": "Ley de Enjuiciamiento Civil",
    "Ley de Enjuiciamiento Criminal": "Ley de Enjuiciamiento Criminal",
    "LECrim": "Ley de Enjuiciamiento Criminal",
    "Ley Reguladora de la Jurisdicción Social": "Ley Reguladora de la Jurisdicción Social",
    "LRJS": "Ley Reguladora de la Jurisdicción Social",
    "Ley de Arrendamientos Urbanos": "Ley de Arrendamientos Urbanos",
    "LAU": "Ley de Arrendamientos Urbanos",
    "Ley General Tributaria": "Ley General Tributaria",
    "Ley de Propiedad Horizontal": "Ley de Propiedad Horizontal",
    "Ley del Procedimiento Administrativo Común": "Ley del Procedimiento Administrativo Común",
    "Código de Processo Civil": "Código de Processo Civil",
    "CPC": "Código de Processo Civil",
    "Código de Processo Penal": "Código de Processo Penal",
    "CPP": "Código de Processo Penal",
    "Código de Defesa do Consumidor": "Código de Defesa do Consumidor",
    "CDC": "Código de Defesa do Consumidor",
    "Código de Trânsito Brasileiro": "Código de Trânsito Brasileiro",
    "CTB": "Código de Trânsito Brasileiro",
    "Código Tributário Nacional": "Código Tributário Nacional",
    "CTN": "Código Tributário Nacional",
    "Estatuto da Criança e do Adolescente": "Estatuto da Criança e do Adolescente",
    "ECA": "Estatuto da Criança e do Adolescente",
    "Lei do Inquilinato": "Lei do Inquilinato",
    "Lei Geral de Proteção de Dados": "Lei Geral de Proteção de Dados",
    "LGPD": "Lei Geral de Proteção de Dados",
    # norms people name by their popular name; not the amending laws whose text the consolidated statutes already
    # carry ("reforma trabalhista", "Ley Rider"). Shown without their number: the answer's citation check would read
    # "Lei nº 11.340/2006" in the notice as a citation it cannot verify
    "Lei Maria da Penha": "Lei Maria da Penha",
    "Lei das Domésticas": "Lei das Domésticas",
    "Lei do FGTS": "Lei do FGTS",
    "Lei do Estágio": "Lei do Estágio",
    "Lei da Terceirização": "Lei da Terceirização",
    "Lei de Greve": "Lei de Greve",
    "Lei do Seguro-Desemprego": "Lei do Seguro-Desemprego",
    "Lei de Benefícios da Previdência Social": "Lei de Benefícios da Previdência Social",
    "Estatuto da Pessoa Idosa": "Estatuto da Pessoa Idosa",
    "Estatuto do Idoso": "Estatuto da Pessoa Idosa",
    "Estatuto da Pessoa com Deficiência": "Estatuto da Pessoa com Deficiência",
    "Marco Civil da Internet": "Marco Civil da Internet",
    "Lei de Licitações": "Lei de Licitações",
    "Lei de Improbidade Administrativa": "Lei de Improbidade Administrativa",
    "Lei Anticorrupção": "Lei Anticorrupção",
    "Lei de Falências": "Lei de Falências",
    "Lei da Ficha Limpa": "Lei da Ficha Limpa",
    "Ley de Igualdad": "Ley de Igualdad",
    "Ley de Dependencia": "Ley de Dependencia",
    "Ley de Extranjería": "Ley de Extranjería",
    "Ley de Protección de Datos": "Ley de Protección de Datos",
    "LOPDGDD": "Ley de Protección de Datos",
    "Ley de Trabajo a Distancia": "Ley de Trabajo a Distancia",
    "Ley del Teletrabajo": "Ley de Trabajo a Distancia",
    "Ley de Empleo": "Ley de Empleo",
    "Ley Concursal": "Ley Concursal",
    "Ley de Contratos del Sector Público": "Ley de Contratos del Sector Público",
    "Ley de Sociedades de Capital": "Ley de Sociedades de Capital",
    "Ley de Seguridad Ciudadana": "Ley de Seguridad Ciudadana",
    "Ley de Vivienda": "Ley de Vivienda",
}

# Numbered norms ("Ley 31/1995", "RD 1561/1995", "Lei nº 8.213/91"): (pattern, canonical kind), longest first.
# Abbreviations are case-sensitive ("RD", "LO"); Spanish kinds need the year, Portuguese ones are unique by number.
_NUMBERED_KINDS: Final[tuple[tuple[str, str], ...]] = (
    (r"ley\s+organica|(?-i:LO)", "ley organica"),
    (r"real\s+decreto\s+legislativo|(?-i:RDLeg|RDLG)\.?|(?-i:RD)\s+legislativo", "real decreto legislativo"),
    (r"real\s+decreto[\s-]+ley|(?-i:RDL)|(?-i:RD)-ley", "real decreto-ley"),
    (r"real\s+decreto|(?-i:R\.?\s?D)\.?", "real decreto"),
    (r"decreto\s+legislativo", "decreto legislativo"),
    (r"decreto[\s-]+lei", "decreto-lei"),
    (r"decreto[\s-]+ley", "decreto-ley"),
    (r"lei\s+complementar|(?-i:LC)", "lei complementar"),
    (r"medida\s+provisoria|(?-i:MP)", "medida provisoria"),
    (r"decreto", "decreto"),
    (r"ley", "ley"),
    (r"lei", "lei"),
    (r"orden", "orden"),
)
_PORTUGUESE_KINDS: Final[frozenset[str]] = frozenset({"lei", "lei complementar", "decreto-lei", "medida provisoria"})
_NUMBERED_PATTERN: Final[str] = (
    "(?:" + "|".join(f"(?P<k{i}>{pattern})" for i, (pattern, _) in enumerate(_NUMBERED_KINDS)) + ")"
    r"\s*(?:(?:n\.?\s?[o\u00ba\u00b0]\.?|num\.|numero)\s*)?"
    r"(?P<num>(?:[a-z]{2,5}/)?(?:\d{1,3}(?:\.\d{3})+|\d+))(?:/(?P<year>\d{4}|\d{2}))?(?![\w/])"
)
_NUMBERED_RE: Final[re.Pattern[str]] = re.compile(_NUMBERED_PATTERN, re.IGNORECASE)

# Citation heads: an article or disposition label, or (bare form, "el 48.4 del Estatuto") a determiner or list
# word before a number; the bare form only counts when a known law follows.
_HEAD_RE: Final[re.Pattern[str]] = re.compile(
    r"(?<!\w)(?:(?P<art>articulos?|artigos?|arts?(?![a-z]))\.?"
    r"|disposicion(?:es)?\s+(?P<disp>adicional|transitoria|derogatoria|final)(?:es|s)?(?!\w)"
    # "DA 1.ª", "D.T. 4ª", "DD única", "disp. adic. 1ª": a number (or "única") must follow the letters, whose
    # case is checked on the text as written
    r"|(?P<dabbr>d\.?[^\S\n]?(?P<dletter>[atfd])\.?)(?=[^\S\n]*(?:\d|unica(?!\w)))"
    r"|disp\.?[^\S\n]+(?P<dword>adic|trans|derog|final)[a-z]*\.?"
    r"|(?P<bare>(?:el|al|del|los|o|os|ao|do|no|nos|y|e)(?!\w)|,))[^\S\n]*",
    re.IGNORECASE,
)
# What an abbreviated disposition label's letter ("DA", "DT", "DF", "DD") or word ("disp. adic.") names.
_DISPOSITION_KINDS: Final[dict[str, str]] = {
    "a": "adicional", "adic": "adicional", "t": "transitoria", "trans": "transitoria", "f": "final", "final": "final",
    "d": "derogatoria", "derog": "derogatoria",
}
_ITEM_NUMBER_RE: Final[re.Pattern[str]] = re.compile(
    r"(?P<n>\d+)(?![\d/])(?:\s?[\u00ba\u00aa\u00b0]|\.[\u00ba\u00aa\u00b0]|o(?![a-z\d]))?"
    r"(?:\s?-\s?(?P<letter>[a-z])(?![a-z\d]))?"
    rf"(?:\s+(?P<suffix>{LATIN_SUFFIXES})(?![a-z]))?",
    re.IGNORECASE,
)
# up to five words: "vigésima primera", "cuarenta y ocho", "cento e trinta e cinco"
_ITEM_WORDS_RE: Final[re.Pattern[str]] = re.compile(
    r"[a-z]+(?:(?:[^\S\n]+|[^\S\n]*-[^\S\n]*)[a-z]+){0,4}", re.IGNORECASE
)
_ITEM_WORD_RE: Final[re.Pattern[str]] = re.compile(r"[a-z]+", re.IGNORECASE)
# an indefinite article is not an article number on its own: "el artículo un poco...", "o artigo uma vez..."
_INDEFINITE_WORDS: Final[frozenset[str]] = frozenset({"un", "una", "um", "uma"})
# Spanish "dos" (two) is also Portuguese "dos" (of the): "o artigo dos direitos sociais". Alone, it is read as a
# number only at the end of the citation or before a word that can follow one ("dos de la", "dos y tres").
_AFTER_LONE_DOS_RE: Final[re.Pattern[str]] = re.compile(
    r"[^\S\n]*(?:$|[^\w\s]|(?:de|del|y|e|o|ou|a|al|hasta|ate)(?!\w))", re.IGNORECASE
)
# An inciso's Roman number (I to XCIX: CF88 art. 5 goes to LXXIX). After the word "inciso" any case; after the article
# number or a comma in capitals ("art. 7, XVII", "art 7 XVII CF") or of two letters or more in lower case ("art 7
# xvii cf"): a lone "i", "v" or "x" there is not taken for one, nor the initial of an abbreviation.
_ROMAN_UPPER: Final[str] = r"(?=[IVXL])(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})(?!\w)"
_ROMAN_LOWER: Final[str] = r"(?=[ivxl])(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3})(?!\w)"
_ROMAN_ANY_CASE: Final[str] = f"(?i:{_ROMAN_LOWER})"
_ROMAN_BARE: Final[str] = f"(?-i:{_ROMAN_UPPER}|(?=[ivxl]{{2}}){_ROMAN_LOWER})(?!\\.\\w)"  # not "L.G.S.S."
# A letter after a space and no parenthesis ("ET art 37.3 b", "art. 52 c del ET"): only a lower-case letter that is
# no word of its own ("a", "e", "o", "u", "y" are "to", "and", "or"; "i" an inciso) nor an abbreviation's initial
# ("L.G.S.S."), and at the end, before a punctuation mark, "del" / "da" / "do" or a law's abbreviation in capitals
_SPACED_LETTER: Final[str] = (
    r"[^\S\n]{1,3}(?P<spaced>(?-i:[b-df-hj-np-tv-xz]))(?!\.\w)"
    r"(?=[^\S\n]*(?:$|[,;:.?!)])|[^\S\n]+(?:del?|de[^\S\n]+la|da|do)(?!\w)|[^\S\n]+(?-i:[A-Z]{2}))"
)
# one item of a subdivision: "XVII", "8º", "1.ª", "b)", "b", "\"b\"", "único"
_UNIT_ITEM: Final[str] = (
    rf"(?:{_ROMAN_ANY_CASE}|\d+(?:\.[\u00ba\u00aa](?!\w)|\s?[\u00ba\u00aa\u00b0])?|[a-z]\)"
    r"|[a-z](?!\w)|[\"\u201c\u201d'][a-z][\"\u201c\u201d']|unico)"
)
# between two items of a list of subdivisions: "6º e 8º", "3, 4 y 5", "b), c)"
_UNIT_LIST_SEPARATOR: Final[str] = r"(?:\s*,\s*(?:(?:y|e)\s+)?|\s+(?:y|e)\s+)"
# apartado / letra / inciso / parágrafo after the article number: part of the citation, not of the key
_SUBDIVISION_RE: Final[re.Pattern[str]] = re.compile(
    # "52.c)", "49.1.b", "37.3.b bis", "149.1.7.ª", "37.3 b"
    r"(?P<dotted>(?:\.\d+(?!\d)(?:\.?[\u00aa\u00ba](?!\w))?)*)"
    r"(?:\.?[^\S\n]?[a-z](?:[^\S\n]+bis)?\)|\.[a-z](?:[^\S\n]+bis)?(?!\w)"
    + "|" + _SPACED_LETTER.replace("?P<spaced>", "?:") + r")?"
    # a subdivision word after a comma or a list word ("§ 6º e § 8º"); a plural one heads a list of its own items
    # ("§§ 6º e 8º", "apartados 3 y 4", "incisos I e II"), not of articles
    r"(?:[^\S\n]*(?:,[^\S\n]*|(?:y|e)[^\S\n]+)?(?:(?:apartados|parrafos|letras|incisos|numeros|\u00a7\u00a7+|paragrafos"
    rf"|alineas)\s*{_UNIT_ITEM}(?:{_UNIT_LIST_SEPARATOR}{_UNIT_ITEM})*"
    r"|(?:apartados?|apdos?\.?|reglas?|parrafos?|letras?|incisos?|inc\.?|numeros?|num\.|\u00a7+"
    rf"|paragrafos?|alineas?)\s*{_UNIT_ITEM})"
    rf"|\s*,\s*(?:{_ROMAN_BARE}|[a-z]\)|caput(?!\w))|[^\S\n]+{_ROMAN_BARE}"
    r"|\s+(?:y|e)\s+(?:siguientes|ss\.|seguintes)(?!\w)"
    rf"|\s+(?:y|e)\s+{_ROMAN_BARE}"  # "art. 473, III e IV, da CLT"
    rf"|{_UNIT_LIST_SEPARATOR}[a-z]\)"  # "49.1.b) y c)": a letter in parentheses is no article
    r"|\s*,\s*(?:[a-z]|[\"\u201c\u201d'][a-z][\"\u201c\u201d'])(?=\s*,|\s+(?:do|da|de|del|dos|das)(?!\w)))*",
    re.IGNORECASE,
)
_SEPARATOR_RE: Final[re.Pattern[str]] = re.compile(
    r"\s*,\s*(?:(?:y|e)\s+)?|\s+(?:y|e|o|ou)\s+|\s+(?P<range>a|al|hasta|ate)\s+"
    r"|(?P<dash>[^\S\n]?[-\u2013][^\S\n]?)(?=\d)",  # "arts. 38-40": a range only up to a higher number
    re.IGNORECASE,
)
_CONNECTOR: Final[str] = (
    r"\s*(?:,\s*)?(?:(?:del\s+texto\s+refundido\s+de\s+la|del?|de\s+la|de\s+los|da|do|das|dos|en\s+(?:el|la)"
    r"|na|no)\s+)?"
)
# "..., aprobado por el Real Decreto Legislativo 1/1994": the approving norm pins the version of a named law
_APPROVED_BY_RE: Final[re.Pattern[str]] = re.compile(
    r"\s*(?:,\s*)?(?:(?:su\s+)?texto\s+refundido\s*(?:,\s*)?)?(?:que\s+fue\s+)?aprobad[oa]\s+(?:por|mediante)\s+"
    r"(?:el\s+|la\s+)?"
    + _NUMBERED_PATTERN,
    re.IGNORECASE,
)
# What follows an article citation that names no known law (see `CitationGrammar.extract_references`):
# the text being read ("de esta ley", "desta Constituição"), an earlier-named law ("de la citada ley", "del mismo
# texto legal", "de la Ley."), or a norm that is not in the table ("del Reglamento General de Recaudación").
_NORM_WORDS: Final[str] = (
    r"ley(?:\s+organica)?|real\s+decreto(?:[\s-]+ley|\s+legislativo)?|texto\s+refundido|texto\s+legal|reglamento"
    r"|constitucion|estatuto|norma|disposicion|orden|decreto(?:[\s-]+lei)?|codigo|convenio|lei(?:\s+complementar)?"
    r"|constituicao|emenda(?:\s+constitucional)?|regulamento|consolidacao"
    r"|(?P<adct>ato\s+das\s+disposicoes\s+constitucionais\s+transitorias)"
)
_SELF_TAIL_RE: Final[re.Pattern[str]] = re.compile(
    r"\s*(?:,\s*)?(?:de|del|da|do|en|na|no)\s+(?:esta|este|esto|la\s+presente|el\s+presente|desta|deste"
    rf"|da\s+presente|do\s+presente|presente)\s+(?:{_NORM_WORDS})(?!\w)"
    r"|\s*(?:,\s*)?(?P<adct2>deste\s+ato|do\s+ato\s+das\s+disposicoes\s+constitucionais\s+transitorias"
    r"|do\s+adct|adct)(?!\w)",
    re.IGNORECASE,
)
_ANAPHORA_TAIL_RE: Final[re.Pattern[str]] = re.compile(
    r"\s*(?:,\s*)?(?:de|del|da|do|en|na|no)\s+(?:(?:la|el|o|a)\s+)?"
    r"(?:(?:citad|mencionad|referid|precitad|dich|mism|aludid|indicad)[oa]s?(?!\w)"
    r"|aquel(?:la)?(?!\w)|(?:ley|lei)(?=[^\S\n]*(?:[.,;:)]|$)))",
    re.IGNORECASE,
)
_OTHER_NORM_TAIL_RE: Final[re.Pattern[str]] = re.compile(
    rf"\s*(?:,\s*)?(?:de\s+la|de\s+las|de\s+los|del|de|da|do|das|dos)\s+(?:{_NORM_WORDS}|leyes|directiva|tratado"
    r"|carta|resolucion|instrumento|acuerdo)(?!\w)",
    re.IGNORECASE,
)
# between two citation groups of one list: "artículos 14 y el 38", "la disposición adicional primera y la final"
_LIST_JOIN_RE: Final[re.Pattern[str]] = re.compile(
    r"[^\S\n]*(?:,[^\S\n]*)?(?:(?:y|e|o|ou)[^\S\n]+)?(?:(?:en|a)[^\S\n]+)?(?:(?:el|la|los|las|o|a|os|as)[^\S\n]*)?",
    re.IGNORECASE,
)
# In a question, what joins an article to a citation of a known law before it, so that the article is that law's:
# "art. 14 CE y art. 9.2", "art. 38 ET y el 39", "art. 14 CE en relación con el 9.2", "art. 477 da CLT e o 478",
# "art. 59 da CLT c/c o 61" (c/c: "combinado com"), "art. 38 ET, 39 y 40"
_CONTINUED_WORD: Final[str] = (
    r"(?:y|e|en[^\S\n]+relacion[^\S\n]+con|c/c|combinado[^\S\n]+com|junto[^\S\n]+con|as[ií][^\S\n]+como)"
    r"[^\S\n]+"
)
_CONTINUED_JOIN: Final[str] = (
    rf"[^\S\n]*(?:,[^\S\n]*(?:{_CONTINUED_WORD})?|{_CONTINUED_WORD})(?:(?:el|al|del|o|ao|do|los|os)[^\S\n]+)?"
)
_CONTINUED_JOIN_RE: Final[re.Pattern[str]] = re.compile(_CONTINUED_JOIN, re.IGNORECASE)
# a number alone after that join is an article only where a citation's list could end: at the end, before a
# punctuation mark or another list word ("... y el 39?", not "... y 30 días", "... y el 1 de mayo")
_CONTINUED_NUMBER_RE: Final[re.Pattern[str]] = re.compile(
    _CONTINUED_JOIN + r"(?=\d{1,3}(?!\d))", re.IGNORECASE
)
_CONTINUED_END_RE: Final[re.Pattern[str]] = re.compile(r"[^\S\n]*(?:$|[,;:.?!)]|(?:y|e|o|ou)(?!\w))", re.IGNORECASE)
# how an article citation names its law (`extract_references`)
REFERENCE_SCOPES: Final[tuple[str, ...]] = ("law", "self", "anaphora", "other", "none")
_LEADING_ARTICLE_RE: Final[re.Pattern[str]] = re.compile(
    r"^(?:(?:el|la|los|las|o|a|os|as|del?|da|do)\s+)+", re.IGNORECASE
)
MAX_RANGE_EXPANSION: Final[int] = 20
# "ADCT, art. 10": the Brazilian constitution's transitional act named before the article (not a law of the table)
_ADCT_BEFORE_RE: Final[re.Pattern[str]] = re.compile(r"(?<!\w)adct[^\S\n]*[,:]?[^\S\n]*\Z", re.IGNORECASE)
_YEAR_RE: Final[re.Pattern[str]] = re.compile(r"(?<!\d)(?:1[5-9]|20)\d\d(?!\d)")
# the year written after a constitution's name: "Constitución de 1812", "Constituição de 1967", "CE 1978"
_YEAR_AFTER_RE: Final[re.Pattern[str]] = re.compile(
    r"[^\S\n]*,?[^\S\n]*(?:(?:de|del|da|do)[^\S\n]+)?(?P<year>(?:1[5-9]|20)\d\d)(?!\w)", re.IGNORECASE
)
# law first, then the article: "CLT 59-A", "CLT, art. 477", "ET art. 38"
_LAW_FIRST_GAP_RE: Final[re.Pattern[str]] = re.compile(r"[^\S\n]*[,:]?[^\S\n]*")
_LAW_FIRST_HEAD_RE: Final[re.Pattern[str]] = re.compile(
    r"[^\S\n]*[,:]?[^\S\n]*(?:(?:articulos?|artigos?|arts?(?![a-z]))\.?[^\S\n]*)?", re.IGNORECASE
)
# A question's colloquial way of naming a norm (`extract(..., colloquial=True)`), after a definite article and in any
# case: an abbreviation of three letters or more ("a clt", "la lgss"), or a one-word name heading a clause ("es
# verdad que la constitucion dice...", "o que a constituição garante?") rather than a noun phrase with its complement
# ("la constitución de una sociedad", "o estatuto da empresa", "la constitución y funcionamiento del comité", "el
# estatuto jurídico"): followed by the end of the sentence, a punctuation mark, or a word that starts a predicate,
# a relative clause or a topic ("dice", "que", "sobre").
_COLLOQUIAL_ARTICLE: Final[str] = r"(?:la|el|a|o|na|no|da|do|pela|pelo|segun\s+la|segundo\s+a)"
_COLLOQUIAL_FOLLOW: Final[str] = (
    r"(?=[^\S\n]*(?:[?.!;:)]|$)|[^\S\n]*,|[^\S\n]+(?:que|dice|dicen|decia|dira|diz|dizem|dizia|establece|estabelece"
    r"|reconoce|reconhece|garantiza|garante|protege|prohibe|proibe|permite|obliga|obriga|preve|regula|recoge|ampara"
    r"|fala|falam|habla|trata|determina|define|manda|asegura|assegura|exige|contempla|senala|menciona|estipula"
    r"|sobre|acerca|respecto|en|em|para|me|te|nos|le|les|lhe|lhes|se|si|sim|no|nao|tambem|tambien|ya|ja)(?!\w))"
)
# Brazilian case law: "Súmula 331 do TST", "Súmula Vinculante 13 do STF", "OJ 394 da SDI-1"; CNJ process numbers
# (Resolução CNJ 65/2008): NNNNNNN-DD.AAAA.J.TR.OOOO. Spanish judgments by number and year: "STS 1234/2020",
# "STC 31/2010", "la sentencia del Tribunal Supremo 1234/2020", "sentencia del TC n.º 31/2010"
_SPANISH_COURTS: Final[dict[str, str]] = {"sts": "TS", "stc": "TC", "san": "AN", "stsj": "TSJ"}
_CASE_LAW_RE: Final[re.Pattern[str]] = re.compile(
    r"(?<!\w)(?:(?P<es_court>(?-i:STS|STC|SAN|STSJ)|sentencia[^\S\n]+(?:del?|de[^\S\n]+la)[^\S\n]+"
    r"(?:Tribunal[^\S\n]+(?:Supremo|Constitucional|Superior[^\S\n]+de[^\S\n]+Justicia(?:[^\S\n]+de[^\S\n]+\w+)?)"
    r"|(?-i:TS|TC|TSJ|AN)|Audiencia[^\S\n]+Nacional))"
    r"[^\S\n]*(?:,[^\S\n]*)?(?:(?:n\.?[^\S\n]?[o\u00ba\u00b0]\.?|num\.|numero)[^\S\n]*)?(?P<es_number>\d{1,5}/\d{4})"
    r"|(?P<kind>sumulas?(?:\s+vinculantes?)?|(?:orientacao\s+jurisprudencial|OJ)|enunciados?)"
    r"\s*(?:n\.?\s?[o\u00ba\u00b0]\.?\s*)?(?P<number>\d{1,4})"
    r"(?:[^\S\n]*(?:,[^\S\n]*)?(?:d[oa]s?|de)?[^\S\n]*"
    r"(?P<court>TST|STF|STJ|TSE|TRF-?\d|TRT-?\d{1,2}|SDI-?[12]|SBDI-?[12]))?"
    r"|(?P<process>\d{7}-\d{2}\.\d{4}\.\d\.\d{2}\.\d{4}))(?!\w)",
    re.IGNORECASE,
)


# a number as a citation writes it: "605/49", "8.036", "1º", "59-A"
_CITED_NUMBER_RE: Final[re.Pattern[str]] = re.compile(r"\d+(?:[./-]\d+)*(?:[\u00ba\u00aa\u00b0]|-[a-z](?!\w))?", re.I)


def _fold(text: str) -> str:
    """Accent-free copy of NFC `text`, character for character (offsets stay valid)."""
    if text.isascii():
        return text
    return "".join(_fold_char(ch) for ch in text)


@functools.lru_cache(maxsize=4096)
def _fold_char(ch: str) -> str:
    return fold_accents(ch) or ch


def law_key(name: str) -> str:
    """
    Lookup key of a law name: accent-free, lowercase, single-spaced; numbered norms in a canonical form.

    "Constitución  Española" -> "constitucion espanola"; "RD 1561/1995" and "Real Decreto 1561/1995" ->
    "real decreto 1561/1995"; "Lei nº 8.213/91" -> "lei 8213".
    """
    folded = _fold(unicodedata.normalize("NFC", name)).strip()
    match = _NUMBERED_RE.fullmatch(folded)
    numbered = _numbered_key(match) if match else None
    return numbered or re.sub(r"\s+", " ", folded.lower())


def _numbered_key(match: re.Match[str]) -> str | None:
    """Canonical key of a numbered-norm match ("ley 31/1995", "lei 8213"); None when it is not a valid citation."""
    kind = next(canonical for i, (_, canonical) in enumerate(_NUMBERED_KINDS) if match.group(f"k{i}"))
    number = match.group("num").lower()
    number = number.replace(".", "") if re.search(r"\d\.\d{3}", number) else number
    year = match.group("year")
    if kind in _PORTUGUESE_KINDS:
        return f"{kind} {number}"
    if year is None:
        return None  # "ley 30" is not a Spanish norm number; "Ley 30/1992" is
    if len(year) == 2:
        year = ("19" if int(year) >= 30 else "20") + year
    return f"{kind} {number}/{year}"


def _numbered_name(match: re.Match[str]) -> str | None:
    """The canonical key of the numbered norm a law-reference match names ("real decreto 2064/1995"), if any."""
    if not match.group("numbered"):
        return None
    start, end = match.span("numbered")
    numbered = _NUMBERED_RE.fullmatch(match.string, start, end)
    return _numbered_key(numbered) if numbered else None


def citation_condition(citation: dict[str, Any]) -> dict[str, Any] | None:
    """
    Haystack filter matching the documents of one citation.

    law + article -> AND(meta.law_id, meta.article) (the article or its approving decree's provision of that name,
    `decree_key`: "disposición derogatoria única del ET"); article only -> meta.article; law only -> meta.law_id; an
    article of a norm the table does not hold (`law` without `law_id`: "art. 6 da Lei 605/49", "art. 18 do CDC") ->
    AND(meta.law_key, meta.article): the blocks of that norm if a caller indexed it (the converter stores each
    norm's `law_key`), never the same-numbered articles of other norms. None when the citation has neither a
    resolved law nor an article, or names such a norm without an article.
    """
    if citation.get("law") and not citation.get("law_id"):
        if not citation.get("article"):
            return None
        return {"operator": "AND", "conditions": [
            {"field": "meta.law_key", "operator": "==", "value": law_key(str(citation["law"]))},
            {"field": "meta.article", "operator": "==", "value": citation["article"]},
        ]}
    conditions = [
        {"field": f"meta.{field}", "operator": "==", "value": citation[field]}
        for field in ("law_id", "article")
        if citation.get(field)
    ]
    if citation.get("law_id") and (decree := decree_key(str(citation.get("article") or ""))):
        # "disposición derogatoria única del ET": the recast law's own if it has one, else its decree's (`rd-dd`)
        conditions[-1] = {"field": "meta.article", "operator": "in", "value": [citation["article"], decree]}
    if not conditions:
        return None
    return conditions[0] if len(conditions) == 1 else {"operator": "AND", "conditions": conditions}


def unknown_norms(citations: list[dict[str, Any]]) -> list[str]:
    """The norms `citations` name (`law`) that the laws table does not hold (no `law_id`), in order, once each."""
    return list(dict.fromkeys(c["law"] for c in citations if c.get("law") and not c.get("law_id")))


def citation_filters(citations: list[dict[str, Any]]) -> dict[str, Any] | None:
    """
    Direct-fetch filter for the cited articles: OR of `citation_condition` over the citations that name an article.

    Law-only citations are left out (fetching a whole law is not a direct fetch). None when no article is cited.
    """
    conditions: list[dict[str, Any]] = []
    for citation in citations:
        condition = citation_condition(citation) if citation.get("article") else None
        if condition and condition not in conditions:
            conditions.append(condition)
    return {"operator": "OR", "conditions": conditions} if conditions else None


@dataclass(frozen=True)
class _LawRef:
    law_id: str | None
    law: str | None



def listed_spans(citations: list[dict[str, Any]]) -> set[tuple[int, ...]]:
    """The spans several cited articles share: a list ("arts. 40 y 41 ET") names no one article's subdivision."""
    counts = Counter(tuple(c.get("span") or ()) for c in citations)
    return {span for span, count in counts.items() if count > 1}


def cited_articles(citations: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """
    The (law_id, article) pairs `citations` cite: each article with its law, and an article cited without one under
    each law the question names with another citation ("o art. 3º da CLT e o art. 2º": CLT art. 3 and CLT art. 2).
    """
    named = {c["law_id"] for c in citations if c.get("law_id")}
    pairs = {(c["law_id"], c["article"]) for c in citations if c.get("law_id") and c.get("article")}
    lawless = {c["article"] for c in citations if c.get("article") and not c.get("law_id") and not c.get("law")}
    return pairs | {(law_id, article) for law_id in named for article in lawless}


def cites_block(citation: dict[str, Any], meta: dict[str, Any]) -> bool:
    """
    Whether a block (its `meta`) is what a citation (`CitationGrammar.extract`) names: its article (any article for
    a law-only citation) of its law; of any law when the citation names none; of a norm outside the laws table,
    the block whose short name is that norm's. A provision the statute numbers as an earlier one ("dt35-2") is
    cited by that number (`numbered_as`).
    """
    article, law_id, law = citation.get("article"), citation.get("law_id"), citation.get("law")
    if article is not None and not numbered_as(str(meta.get("article") or ""), article):
        return False
    if law_id is not None:
        return meta.get("law_id") == law_id
    return law is None or law_key(str(meta.get("law_short", ""))) == law_key(law)


# Words that ask what a norm as a whole is about ("¿de qué trata la LPRL?", "o que a CLT regula?"), folded; with them
# and the norm's name alone, a question asks for the norm's object, which its first article states.
_WHOLE_NORM_WORDS: Final[frozenset[str]] = frozenset(
    "trata tratan regula regulan dice diz dizem habla fala sirve serve resumen resumo resume resumir explica "
    "explicas explicame explique objeto objetivo ambito aplicacion significa".split()
)
FIRST_ARTICLE: Final[str] = "1"


def asks_about_whole_norm(question: str, citations: list[dict[str, Any]]) -> bool:
    """
    Whether `question` asks about the norms it names as a whole ("ET", "¿qué es la CLT?", "¿de qué trata la Ley de
    Prevención de Riesgos Laborales?"): every citation names a known law and no article, and, the citations' text
    left out, the question holds no content word but `_WHOLE_NORM_WORDS`.
    """
    if not citations or any(not c.get("law_id") or c.get("article") for c in citations):
        return False
    rest = blank_spans(question or "", [c["span"] for c in citations])
    return all(fold_accents(word) in _WHOLE_NORM_WORDS for word in extract_keywords(rest, language=None))


def asks_only_case_law(question: str, citations: list[dict[str, Any]], case_law: list[dict[str, Any]]) -> bool:
    """
    Whether `question` asks about case law and nothing else ("Súmula 331 do TST", "¿Qué dice la STS 1234/2020?"):
    it cites case law, no norm, and, the citations' text left out, holds no content word but `_WHOLE_NORM_WORDS`.
    An index of statutes holds no case law, and its other words ("súmula", "sentencia") would find any article. (A
    norm the laws table lacks is still searched: the caller may have indexed it.)
    """
    if not case_law or citations:
        return False
    rest = blank_spans(question or "", [c["span"] for c in case_law if c.get("span")])
    return all(fold_accents(word) in _WHOLE_NORM_WORDS for word in extract_keywords(rest, language=None))


def still_unknown(unknown: list[str], documents: list[Any]) -> list[str]:
    """
    `unknown` (`not_in_corpus`) without the norms the documents hold: a norm the laws table lacks that the caller
    indexed ("Lei 605/49" for a store holding "Lei 605/1949", same `law_key`) is not missing from the corpus.
    """
    held = {law_key(str(d.meta["law_short"])) for d in documents if d.meta.get("law_short")}
    return [norm for norm in unknown if law_key(norm) not in held]


# A legislative-history note of a consolidated text that says a norm changed the provision ("Redação dada pela Lei nº
# 13.467, de 2017", "Incluído pelo Decreto-lei nº 229, de 1967", "Revogado pela Medida Provisória nº 2.164-41"), not
# one that only points at a norm ("Vide Lei nº 13.467", "Regulamento", "Vigência")
_AMENDING_NOTE_RE: Final[re.Pattern[str]] = re.compile(
    r"^(?:(?:paragrafo|inciso|alinea|artigo|caput)(?:\s+\S+)?\s+)?"
    r"(?:redacao\s+(?:dada|restabelecida)|(?:restabelecid|revigorad)[oa]s?\s+com\s+nova\s+redacao"
    r"|(?:incluid|renumerad|acrescentad|acrescid|restaurad|transformad|revogad|suprimid)[oa]s?)\b",
    re.IGNORECASE,
)


def amending_norms(notes: list[str]) -> list[str]:
    """
    The law keys (`law_key`) of the norms that legislative-history `notes` (`meta["amendments"]`, kept by the
    article parser) say changed a provision, in order: ["Redação dada pela Lei nº 13.467, de 2017", "Vide Lei nº
    605"] -> ["lei 13467"]. A consolidated text already holds what those norms changed.
    """
    keys: list[str] = []
    for note in notes:
        folded = _fold(unicodedata.normalize("NFC", str(note))).strip()
        if not _AMENDING_NOTE_RE.match(folded):
            continue
        for match in _NUMBERED_RE.finditer(folded):
            key = _numbered_key(match)
            if key and key not in keys:
                keys.append(key)
    return keys


def amended_by(norm: str, documents: list[Any]) -> list[Any]:
    """
    The `documents` whose provisions `norm` changed, by their legislative-history notes (`amending_norms`): "Lei
    13.467/2017" -> the CLT blocks it gave their wording to. A norm the corpus lacks as a text of its own may still
    be in it, as the changes a consolidated text carries.
    """
    key = law_key(norm)
    return [doc for doc in documents if key in amending_norms(list(doc.meta.get("amendments") or []))]


def not_in_corpus(citations: list[dict[str, Any]], case_law: list[dict[str, Any]]) -> list[str]:
    """
    What a question cites that no statute of the corpus holds, in order, once each: the unknown norms
    (`unknown_norms`), then the case law as written ("Súmula 331 do TST", a CNJ process number). The answer says
    so first, and no quote passes for theirs.
    """
    return list(dict.fromkeys([*unknown_norms(citations), *(str(c["text"]) for c in case_law if c.get("text"))]))


# The subdivision of an article a citation names ("pinpoint"), as (kind, value) pairs, the outermost first: a Spanish
# apartado ("38.2", "apartado 4"), a Brazilian parágrafo ("§ 8º", "parágrafo único": value "unico"), an inciso
# ("inciso XVII", "art. 10, II"), a letter or alínea ("49.1.b)", "alínea b": kind "letra"), the caput.
UNIT_KINDS: Final[tuple[str, ...]] = ("apartado", "regla", "paragrafo", "inciso", "letra", "caput")
_UNIT_NAMED: Final[str] = (
    r"(?:apartados?|apdos?\.?|numeros?|num\.)[^\S\n]*(?P<apartado>\d+)(?!\d)"
    r"|reglas?[^\S\n]*(?P<regla>\d+)(?!\d)(?:\.?[\u00aa\u00ba](?!\w))?"
    r"|(?:letras?|alineas?)[^\S\n]*(?P<quote>[\"\u201c\u201d'])?(?P<letra>[a-z](?:[^\S\n]+bis)?)"
    r"(?(quote)[\"\u201c\u201d']|(?:\)|(?!\w)))"
    r"|(?:(?<!\u00a7)\u00a7++|paragrafos?)[^\S\n]*(?P<paragrafo>\d+|unico)(?:[^\S\n]?[\u00ba\u00aa\u00b0o](?!\w))?"
    rf"|(?:incisos?|inc\.?)[^\S\n]*(?P<inciso>{_ROMAN_ANY_CASE})"
    r"|(?P<caput>caput)(?!\w)"
)
# after the article number: "38.2", "49.1.b)", "52.c)", ", apartado 2", ", § 8º", ", inciso XVII", ", II, b,"
_UNIT_AFTER_RE: Final[re.Pattern[str]] = re.compile(
    r"\.(?P<dotregla>\d+)\.?[\u00aa\u00ba](?!\w)|\.(?P<dot>\d+)(?!\d)|\.?[^\S\n]?(?P<dotletter>[a-z](?:[^\S\n]+bis)?)\)"
    r"|\.(?P<dotletter2>[a-z](?:[^\S\n]+bis)?)(?!\w)"
    rf"|{_SPACED_LETTER}"
    rf"|[^\S\n]*(?:,[^\S\n]*)?(?:{_UNIT_NAMED})"
    rf"|[^\S\n]+(?P<roman2>{_ROMAN_BARE})"
    rf"|[^\S\n]*,[^\S\n]*(?:(?P<roman>{_ROMAN_BARE})"
    r"|(?P<barequote>[\"\u201c\u201d'])?(?P<bareletter>[a-z])(?(barequote)[\"\u201c\u201d']|\)?)"
    r"(?=[^\S\n]*,|[^\S\n]+(?:do|da|de|del)(?!\w)))",
    re.IGNORECASE,
)
# before the article: "§ 8º do art. 477", "apartado 4 del artículo 55", "alínea b do inciso II do art. 10"
_UNIT_BEFORE_RE: Final[re.Pattern[str]] = re.compile(
    rf"(?<!\w)(?:{_UNIT_NAMED})[^\S\n]*(?:,[^\S\n]*)?(?:de[^\S\n]+la|del?|da|do)[^\S\n]+$", re.IGNORECASE
)
_ARTICLE_WORD_RE: Final[re.Pattern[str]] = re.compile(r"(?<!\w)(?:articulos?|artigos?|arts?(?![a-z]))\.?[^\S\n]*", re.I)


def _unit(match: re.Match[str]) -> tuple[str, str]:
    groups = {name: value for name, value in match.groupdict().items() if value}
    if "caput" in groups:
        return ("caput", "")
    for name, kind in (("dot", "apartado"), ("apartado", "apartado"), ("dotregla", "regla"), ("regla", "regla"),
                       ("paragrafo", "paragrafo")):
        if name in groups:
            return (kind, groups[name].lower())
    if roman := groups.get("inciso") or groups.get("roman") or groups.get("roman2"):
        return ("inciso", roman.upper())
    letter = next(groups[n] for n in ("letra", "dotletter", "dotletter2", "bareletter", "spaced") if n in groups)
    return ("letra", letter.lower())


_ROMAN_ITEM_RE: Final[re.Pattern[str]] = re.compile(_ROMAN_BARE)
_LETTER_ITEM_RE: Final[re.Pattern[str]] = re.compile(r"[a-z](?:\)|(?!\w))")
_UNIT_NAMED_RE: Final[re.Pattern[str]] = re.compile(_UNIT_NAMED, re.IGNORECASE)


def pinpoint(question: str, span: list[int] | tuple[int, int]) -> list[tuple[str, str]]:
    """
    The subdivision of the article cited at `span` of `question` (`CitationGrammar.extract` spans): `UNIT_KINDS`
    pairs, the outermost first. "artículo 38.2 del ET" -> `[("apartado", "2")]`; "art. 477, § 8º, da CLT" and
    "§ 8º do art. 477" -> `[("paragrafo", "8")]`; "artigo 7º, inciso XVII" -> `[("inciso", "XVII")]`; "letra b) del
    artículo 49.1" -> `[("apartado", "1"), ("letra", "b")]`; "artículo 149.1.7.ª" -> `[("apartado", "1"),
    ("regla", "7")]`; `[]` when the citation names the whole article or a list ("artículos 38.1 y 38.3").
    """
    folded = _fold(unicodedata.normalize("NFC", question or ""))
    start, end = int(span[0]), int(span[1])
    after: list[tuple[str, str]] = []
    word = _ARTICLE_WORD_RE.search(folded, start, end)
    # without the word, the law is named first ("CLT 611-B inciso XXX", "ET 38.2"): the article is the first number
    number = _ITEM_NUMBER_RE.match(folded, word.end()) if word else _ITEM_NUMBER_RE.search(folded, start, end)
    position = number.end() if number and number.end() <= end else end
    while (match := _UNIT_AFTER_RE.match(folded, position)) and position < match.end() <= end:
        unit = _unit(match)
        # a number after an apartado's ("149.1.7") is an item of it: no apartado holds apartados
        after.append(("regla", unit[1]) if unit[0] == "apartado" and after and after[-1][0] == "apartado" else unit)
        position = match.end()
    separator = _SEPARATOR_RE.match(folded, position, end)
    listed = separator and (
        _ITEM_NUMBER_RE.match(folded, separator.end(), end)
        or _ROMAN_ITEM_RE.match(folded, separator.end(), end)
        or (after and after[-1][0] == "letra" and _LETTER_ITEM_RE.match(folded, separator.end(), end))
        or _UNIT_NAMED_RE.match(folded, separator.end(), end)
    )
    if listed:
        # a list ("38.1 y 38.3", "168.1 y 2", "473, III e IV", "letras a y b", "§ 6º e § 8º"): no one subdivision
        return []
    before, _ = _units_before(folded, start)
    return after + before


def with_units_before(question: str, span: list[int] | tuple[int, int]) -> tuple[int, int]:
    """
    The span of the article cited at `span` of `question` widened to the subdivision named before it: "§ 1º do art.
    59 da CLT" for the citation "art. 59 da CLT" (what `pinpoint` reads as its `before` units).
    """
    _, begin = _units_before(_fold(unicodedata.normalize("NFC", question or "")), int(span[0]))
    return begin, int(span[1])


def _units_before(folded: str, start: int) -> tuple[list[tuple[str, str]], int]:
    """
    The subdivisions named right before the citation at `start` of `folded`, the outermost (nearest the article)
    first ("alínea b do inciso II do art. 10": inciso, then letra), and where they begin (`start` when none is).
    """
    units: list[tuple[str, str]] = []
    head = folded[:start]
    while match := _UNIT_BEFORE_RE.search(head):
        units.append(_unit(match))
        head = head[: match.start()]
    return units, len(head)


_UNIT_ALONE_RE: Final[re.Pattern[str]] = re.compile(rf"(?<!\w)(?:{_UNIT_NAMED})", re.IGNORECASE)


def subdivisions(text: str) -> tuple[list[tuple[str, str]], list[int]] | None:
    """
    The subdivision a text names with no article ("e o parágrafo 8º?", "¿y el apartado 2?", "e o inciso II, alínea
    b?"): its `UNIT_KINDS` pairs, the outermost first, and the span they cover; None when it names none. A follow-up
    question means the article the conversation is about.
    """
    folded = _fold(unicodedata.normalize("NFC", text or ""))
    matches = list(_UNIT_ALONE_RE.finditer(folded))
    if not matches:
        return None
    return [_unit(match) for match in matches], [matches[0].start(), matches[-1].end()]


# a follow-up naming an article by its number alone: "¿y el 41?", "¿y qué dice el 20 bis?", "e o 483?", "e o 59-A?",
# "¿y el 38.2?" (the whole question: a number inside a sentence is a quantity or a year, not an article)
# ("¿y la letra d del 52?", "e o § 1º do 477?": a subdivision named before the number, which `pinpoint` reads)
_ARTICLE_ALONE_LEAD_RE: Final[re.Pattern[str]] = re.compile(
    r"[\s\u00bf\u00a1]*(?:(?:y|e)\s+)?(?:(?:que|o\s+que)\s+(?:dice|dicen|diz|dizem|establece|estabelece)\s+)?"
    rf"(?:(?:(?:el|la|o|a)\s+)?(?:{_UNIT_NAMED})\s*(?:del?|do|da)|el|o)\s+",
    re.IGNORECASE,
)
_ARTICLE_ALONE_TAIL_RE: Final[re.Pattern[str]] = re.compile(r"(?P<unit>(?:\.\d+)*(?:\.?[a-z]\))?)[\s?!.]*", re.I)


def article_alone(text: str) -> tuple[str, list[int]] | None:
    """
    The article a follow-up question names by its number alone, the whole question being "¿y el 41?", "¿y qué dice
    el 20 bis?", "e o 483?", "e o 59-A?", "¿y el 38.2?" or "¿y la letra d del 52?" (a subdivision before it, which
    `pinpoint` reads before the span): its article key (`normalize_article_key`) and the span of
    the number and any subdivision written after it (for `pinpoint`); None for any other text. A conversation
    about an article means the article of that law.
    """
    folded = _fold(unicodedata.normalize("NFC", text or ""))
    lead = _ARTICLE_ALONE_LEAD_RE.match(folded)
    number = _ITEM_NUMBER_RE.match(folded, lead.end()) if lead else None
    if number is None or len(number.group("n")) > 3:  # articles run to 922 (CLT); "el 2024" is a year
        return None
    tail = _ARTICLE_ALONE_TAIL_RE.fullmatch(folded, number.end())
    if tail is None:
        return None
    return normalize_article_key(number.group(0)), [number.start(), number.end() + len(tail.group("unit"))]


# a follow-up naming a letter alone: "¿y la c?", "e a d)?", "¿y la letra c?" (the whole question)
_LETTER_ALONE_RE: Final[re.Pattern[str]] = re.compile(
    r"[\s\u00bf\u00a1]*(?:(?:y|e)\s+)?(?:la|a)\s+(?:(?:letra|alinea)\s+)?(?P<letter>[a-z])\)?[\s?!.]*",
    re.IGNORECASE,
)


def letter_alone(text: str) -> tuple[str, list[int]] | None:
    """
    The letter a follow-up question names alone, the whole question being "¿y la c?", "e a alínea d?" or "¿y la
    letra c)?": the letter and its span; None for any other text. Right after a question that named a letter of an
    article, it is that article's letter of the same name.
    """
    folded = _fold(unicodedata.normalize("NFC", text or ""))
    match = _LETTER_ALONE_RE.fullmatch(folded)
    return (match.group("letter").lower(), list(match.span("letter"))) if match else None


# "¿y el siguiente?", "¿qué dice el artículo anterior?", "e o próximo artigo?", "o artigo seguinte": the whole
# question names the article after or before the one the conversation is about
_ADJACENT_RE: Final[re.Pattern[str]] = re.compile(
    r"[\s\u00bf\u00a1]*(?:(?:y|e)\s+)?(?:(?:que|o\s+que)\s+(?:dice|diz|establece|estabelece)\s+)?(?:el|o)\s+"
    r"(?P<reference>(?:(?:articulo|artigo|art\.?)\s+)?(?P<word>siguiente|seguinte|proximo|posterior|anterior|previo)"
    r"(?:\s+(?:articulo|artigo))?)[\s?!.]*",
    re.IGNORECASE,
)
_ADJACENT_STEPS: Final[dict[str, int]] = {
    "siguiente": 1, "seguinte": 1, "proximo": 1, "posterior": 1, "anterior": -1, "previo": -1,
}


def adjacent_article(text: str) -> tuple[int, list[int]] | None:
    """
    The step, +1 or -1, of a follow-up question that names the article after or before the one the conversation is
    about, the whole question being "¿y el siguiente?", "¿qué dice el artículo anterior?", "e o próximo artigo?" or
    "o artigo seguinte?", and the span of its reference ("siguiente", "próximo artigo"); None for any other text.
    """
    folded = _fold(unicodedata.normalize("NFC", text or ""))
    match = _ADJACENT_RE.fullmatch(folded)
    if match is None:
        return None
    return _ADJACENT_STEPS[match.group("word").lower()], list(match.span("reference"))


class CitationGrammar:
    """
    The citation grammar: reads article and law citations in Spanish or Portuguese text and resolves them to keys.

    Recognised forms: "art. 38 ET", "arts. 40 y 41 ET", "artículos 14 a 16 de la Constitución" (ranges up to
    20 articles are expanded), "el 48.4 del Estatuto de los Trabajadores" (a bare number counts only when a known
    law follows), "artículo 37.3.b) ET", "disposición adicional primera de la LGSS" (also abbreviated: "DA 1ª",
    "D.T. 4.ª", "DD única", "disp. adic. 1ª"; the letters in capitals), "Art. 5º, caput, da CF",
    "artigo 7º, XXIX, da Constituição", numbers in words after an article label ("artículo cuarenta y ocho del
    Estatuto", "artigo quatrocentos e setenta e sete da CLT", "artículo primero"), and law-only mentions such as
    "Lei 8.213" or "la Ley 31/1995".

    Laws resolve through the known-laws table (`law_id` and `law_short` of `laws.yaml`), the built-in
    `DEFAULT_ALIASES` (Estatuto de los Trabajadores, Constitución, Constituição / CF, ...) and the `aliases` given
    here. In free text, abbreviations (ET, CE, CF) match as written and one-word names need a capital
    ("Estatuto", "Constitución"); right after an article number any case is accepted ("art. 38 et"). An article
    with no law after it, or followed by an ambiguous name, keeps `law_id=None`. Article keys are normalized with
    `normalize_article_key` ("48.4" -> "48", "5º-A" -> "5-a", "disposición adicional primera" -> "da1").

    Each citation is a dict `{"law_id", "law", "article", "text", "span"}`: `law` is the law's short name (or the
    norm as written when it is not in the table, e.g. "Lei 8.213"), `article` is None for a law-only citation,
    `text`/`span` locate the citation in the text.

    This is vocabulary, not a pipeline stage: the query stage (`CitationDetector`), the answer-META parser, the
    extractive answer, the citation verifier and the statute reference extractor all read citations through it.

    ### Usage example

    ```python
    from components.legal.citations import CitationGrammar, citation_filters

    grammar = CitationGrammar()
    citations = grammar.extract("¿Qué dicen los arts. 40 y 41 ET?")
    citations[0]  # {"law_id": "BOE-A-2015-11430", "law": "ET", "article": "40", "text": ..., "span": [...]}
    grammar.resolve_law("del Estatuto de los Trabajadores")  # ("BOE-A-2015-11430", "ET")
    citation_filters(citations)  # Haystack filter fetching arts. 40 and 41 of the ET
    ```
    """

    def __init__(self, *, laws_file: str | None = None, aliases: dict[str, str | None] | None = None) -> None:
        """
        Build the grammar for a laws table and extra aliases.

        :param laws_file: YAML table of known norms (`laws: {<law_id>: {law_short: ...}}`); `None` uses the bundled
            `components/legal/data/laws.yaml`.
        :param aliases: Extra law names -> `law_short` or `law_id` (a target that is neither is used as the law id
            as given); `None` as target marks an ambiguous name that resolves to no law. Overrides the built-in
            `DEFAULT_ALIASES` and the table.
        :raises ValueError: If `laws_file` does not exist or is not a valid table, or an alias is not a string.
        """
        laws = load_laws_table(laws_file)
        for alias, target in (aliases or {}).items():
            if not isinstance(alias, str) or not alias.strip() or not (target is None or isinstance(target, str)):
                raise ValueError(
                    f"aliases must map non-empty law names to a law_short, a law_id or None; got {alias!r}: {target!r}"
                )
        self.laws_file = laws_file
        self.aliases = aliases

        self._short_by_id: dict[str, str] = {}
        self._year_by_id: dict[str, str] = {}  # a law's year: its publication date's, else the one in its id
        self._lookup: dict[str, str | None] = {}
        originals: dict[str, list[str]] = {}
        for law_id, info in laws.items():
            law_id, short = str(law_id), str((info or {}).get("law_short") or law_id)
            self._short_by_id[law_id] = short
            year = _YEAR_RE.search(str((info or {}).get("publication_date") or "")) or _YEAR_RE.search(law_id)
            if year:
                self._year_by_id[law_id] = year.group(0)
            for name in (law_id, short):
                self._register(name, law_id, originals)
        for alias, target in DEFAULT_ALIASES.items():
            resolved = self._lookup.get(law_key(target)) if target else None
            if target and resolved is None:
                logger.debug("Default alias {alias} -> {target}: no such law in the table", alias=alias, target=target)
                continue
            self._register(alias, resolved, originals)
        self._absent: dict[str, str] = {}
        for name, shown in ABSENT_NORMS.items():
            if law_key(name) not in self._lookup:
                self._register(name, None, originals)
                self._absent[law_key(name)] = shown
        for alias, target in (aliases or {}).items():
            resolved = (self._lookup.get(law_key(target)) or target.strip()) if target else None
            self._register(alias, resolved, originals)
            self._absent.pop(law_key(alias), None)

        names = sorted(originals, key=len, reverse=True)
        any_case = _law_ref_pattern(names, originals, free_text=False)
        self._law_ref_re = re.compile(_law_ref_pattern(names, originals, free_text=True), re.IGNORECASE)
        self._tail_re = re.compile(_CONNECTOR + any_case, re.IGNORECASE)
        self._law_name_re = re.compile(any_case, re.IGNORECASE)
        # one-word names heading a clause; abbreviations of three letters or more anywhere ("a clt e a constituição";
        # not "et", "ce", "cf"): they are no common nouns
        one_word = [key for key in names if " " not in key and any(c.islower() for n in originals[key] for c in n)]
        abbreviations = [key for key in names if key.isalpha() and len(key) > 2 and key not in one_word]
        self._colloquial_re = re.compile(
            rf"(?<!\w){_COLLOQUIAL_ARTICLE}\s+(?:(?P<alias>{'|'.join(map(re.escape, one_word)) or '(?!)'})(?!\w)"
            rf"{_COLLOQUIAL_FOLLOW}|(?P<abbreviation>{'|'.join(map(re.escape, abbreviations)) or '(?!)'})(?!\w))",
            re.IGNORECASE,
        )

    def _register(self, name: str, law_id: str | None, originals: dict[str, list[str]]) -> None:
        key = law_key(name)
        self._lookup[key] = law_id
        if not _NUMBERED_RE.fullmatch(_fold(name.strip())):
            originals.setdefault(key, []).append(name.strip())

    # -- reading ---------------------------------------------------------------------------------------------

    def extract(self, text: str, *, colloquial: bool = False) -> list[dict[str, Any]]:
        """
        Every citation in `text`, in order, repeats included (one dict per cited article, sharing the `text` and
        `span` of their group for lists like "arts. 40 y 41 ET").

        :param colloquial: Also read how people write a norm's one-word name or abbreviation (three letters or
            more) in a question: in any case after a definite article, an abbreviation anywhere ("o que a clt
            diz?"), a name when it heads a clause ("es verdad que la constitucion dice...", "o que a constituição
            garante?") rather than a noun phrase with its complement ("la constitución de una sociedad", "la
            constitución y funcionamiento del comité", "el estatuto jurídico"). For questions only: statute text
            uses those words as common nouns.
        """
        return [
            {k: v for k, v in ref.items() if k != "scope"}
            for ref in self.extract_references(text, colloquial=colloquial)
        ]

    def extract_references(self, text: str, *, colloquial: bool = False) -> list[dict[str, Any]]:
        """
        `extract`, for statute text: each citation also says how it names its law, in `scope`:

        - `law`: a law is named (`law_id` set when known, else `law` as written: "Ley 36/2011"); law-only
          citations ("la Ley 39/2015") always have this scope;
        - `self`: the text being read ("artículo 48 de esta ley", "del presente real decreto", "art. 7º desta
          Constituição"; "deste Ato das Disposições Constitucionais Transitórias" prefixes the key with `adct-`);
        - `anaphora`: a law named earlier ("de la citada ley", "del mismo texto legal", "de la Ley.");
        - `other`: a norm that is not in the table and has no number ("del Reglamento General de Recaudación");
        - `none`: nothing follows the article: by drafting convention, the text being read.

        A named law followed by its approving norm ("texto refundido de la Ley General de la Seguridad Social,
        aprobado por el Real Decreto Legislativo 1/1994") resolves to the approving norm's law when it is known.
        `colloquial`: as in `extract`.
        """
        original = unicodedata.normalize("NFC", text or "")
        folded = _fold(original)
        found: list[tuple[int, int, str | None, _LawRef, str]] = []
        consumed: list[tuple[int, int]] = []
        position = 0
        while head := _HEAD_RE.search(folded, position):
            group = self._parse_group(folded, original, head)
            if group is None or isinstance(group, int):
                position = max(group or 0, head.start() + 1)
                continue
            start, end, articles, law, scope = group
            found.extend((start, end, article, law, scope) for article in articles)
            consumed.append((start, end))
            position = end
        for match in self._law_ref_re.finditer(folded):
            if any(s < match.end() and match.start() < e for s, e in consumed):
                continue
            law = self._interpret(match, original)
            if law is not None and (law.law_id or law.law):
                law, end = self._approved_by(folded, match.end(), law)
                found.append((match.start(), end, None, law, "law"))
                consumed.append((match.start(), end))
        for match in self._colloquial_re.finditer(folded) if colloquial else ():
            group = "alias" if match.group("alias") else "abbreviation"
            start, end = match.span(group)
            law_id = self._lookup.get(law_key(match.group(group)))
            if law_id and not any(s < end and start < e for s, e in consumed):
                found.append((start, end, None, _LawRef(law_id, self._short_by_id.get(law_id, law_id)), "law"))
                consumed.append((start, end))
        found.sort(key=lambda item: item[0])
        found = self._law_first(folded, self._adct_first(folded, found))
        # "las disposiciones adicionales primera y segunda y la disposición final quinta de la Ley 27/2011", "el
        # artículo 14 y el 38 del ET": a group joined to the next one by a list word takes the next group's law
        for i in range(len(found) - 2, -1, -1):
            start, end, article, law, scope = found[i]
            following = next((item for item in found[i + 1 :] if item[0] >= end), None)
            if (
                scope == "none"
                and article is not None
                and following is not None
                and following[2] is not None
                and _LIST_JOIN_RE.fullmatch(folded, end, following[0])
            ):
                found[i] = (start, end, article, following[3], following[4])
        if colloquial:
            found = self._continued(folded, found)
        return [
            {
                "law_id": law.law_id,
                "law": law.law,
                "article": article,
                "text": original[start:end],
                "span": [start, end],
                "scope": scope,
            }
            for start, end, article, law, scope in found
        ]

    @staticmethod
    def _continued(
        folded: str, found: list[tuple[int, int, str | None, _LawRef, str]]
    ) -> list[tuple[int, int, str | None, _LawRef, str]]:
        """
        `found` (a question's citations), an article joined to a cited article of a known law before it read as that
        law's: one that names no law ("art. 14 CE y art. 9.2" -> CE art. 9) and a number alone ("art. 38 ET y el
        39", "art. 14 CE en relación con el 9.2", "art. 477 da CLT e o 478"), which the grammar reads only before
        a law's name ("el 48.4 del Estatuto").
        """
        out: list[tuple[int, int, str | None, _LawRef, str]] = []
        for item in found:
            start, end, article, law, scope = item
            previous = out[-1] if out else None
            known = previous is not None and previous[2] is not None and previous[3].law_id is not None
            if known and scope == "none" and article is not None and _CONTINUED_JOIN_RE.fullmatch(
                folded, previous[1], start  # type: ignore[index]
            ):
                item = (start, end, article, previous[3], "law")  # type: ignore[index]
            out.append(item)
            if item[2] is None or item[3].law_id is None or item[4] != "law":
                continue
            # numbers alone after it, up to the next citation
            limit = next((other[0] for other in found if other[0] >= end), len(folded))
            position = end
            while (join := _CONTINUED_NUMBER_RE.match(folded, position, limit)) is not None:
                parsed = _parse_item(folded, join.end(), "articulo", words=False)
                if parsed is None or parsed[1] > limit or not _CONTINUED_END_RE.match(folded, parsed[1]):
                    break
                out.append((join.end(), parsed[1], parsed[0], item[3], "law"))
                position = parsed[1]
        return out

    def _adct_law(self) -> _LawRef | None:
        """The law whose transitional act "ADCT" names: the Brazilian constitution, when the laws table holds it."""
        constitution = self._lookup.get(law_key("CF88"))
        return _LawRef(constitution, self._short_by_id[constitution]) if constitution else None

    def _adct_first(
        self, folded: str, found: list[tuple[int, int, str | None, _LawRef, str]]
    ) -> list[tuple[int, int, str | None, _LawRef, str]]:
        """
        `found`, an article group that names no law read as the ADCT's when "ADCT" comes right before it ("ADCT, art.
        10", "ADCT art. 8"), as "art. 10 do ADCT" is: the Brazilian constitution's transitional act (`adct-` keys).
        """
        law = self._adct_law()
        if law is None:
            return found
        out = []
        for start, end, article, reference, scope in found:
            before = _ADCT_BEFORE_RE.search(folded, 0, start) if article is not None and scope == "none" else None
            if before and not article.startswith(ADCT_PREFIX):  # type: ignore[union-attr]
                out.append((before.start(), end, f"{ADCT_PREFIX}{article}", law, "law"))
            else:
                out.append((start, end, article, reference, scope))
        return out

    @staticmethod
    def _law_first(
        folded: str, found: list[tuple[int, int, str | None, _LawRef, str]]
    ) -> list[tuple[int, int, str | None, _LawRef, str]]:
        """
        Citations that name the law before the article: "CLT, art. 477" or "Ley 36/2011 artículo 2" (an article
        group with no law right after a named law, known or not: an unknown law's article is that law's, never
        another law's article of the same number) and "CLT 59-A" (a known law's name followed by a number that is
        not a year).
        """
        out: list[tuple[int, int, str | None, _LawRef, str]] = []
        index = 0
        while index < len(found):
            start, end, article, law, scope = found[index]
            if article is not None or scope != "law" or not (law.law_id or law.law):
                out.append(found[index])
                index += 1
                continue
            following = found[index + 1] if index + 1 < len(found) else None
            group = [item for item in found[index + 1 :] if following and item[0] == following[0]]
            if group and group[0][2] is not None and group[0][4] == "none" and _LAW_FIRST_GAP_RE.fullmatch(
                folded, end, group[0][0]
            ):
                out.extend((start, item[1], item[2], law, "law") for item in group)
                index += 1 + len(group)
                continue
            head = _LAW_FIRST_HEAD_RE.match(folded, end) if law.law_id else None
            parsed = _parse_items(folded, head.end(), "articulo", words=False) if head else None
            fits = parsed and parsed[1] <= (following[0] if following else len(folded))
            if fits and not (len(parsed[0]) == 1 and _is_year(parsed[0][0])):  # type: ignore[index]
                out.extend((start, parsed[1], key, law, "law") for key in parsed[0])
            else:
                out.append(found[index])
            index += 1
        return out

    def extract_case_law(self, text: str) -> list[dict[str, Any]]:
        """
        Case-law citations: Brazilian súmulas, súmulas vinculantes and orientações jurisprudenciais ("Súmula 331 do
        TST", "OJ 394 da SBDI-1") and CNJ process numbers ("0001234-56.2023.5.02.0001"); Spanish judgments by number
        and year ("STS 1234/2020", "sentencia del Tribunal Constitucional 31/2010").

        :returns: One dict per citation, in order: `kind` (`sumula`, `sumula_vinculante`, `oj`, `processo`,
            `sentencia`), `number`, `court` (the court as written, upper case; for a process, the CNJ segment and
            tribunal, e.g. `TRT-2`; for a Spanish judgment `TS`, `TC`, `AN` or `TSJ`; None when not said), `text` and
            `span`.
        """
        original = unicodedata.normalize("NFC", text or "")
        out = []
        for match in _CASE_LAW_RE.finditer(_fold(original)):
            if match.group("es_number"):
                named = " ".join(match.group("es_court").lower().split())
                court = _SPANISH_COURTS.get(named) or next(
                    (code for word, code in (("supremo", "TS"), ("constitucional", "TC"), ("superior", "TSJ"),
                                             ("audiencia", "AN")) if word in named),
                    named.rsplit(" ", 1)[-1].upper(),
                )
                out.append({"kind": "sentencia", "number": match.group("es_number"), "court": court})
            elif match.group("process"):
                number = match.group("process")
                justice, tribunal = number.split(".")[2:4]
                court = {"5": f"TRT-{int(tribunal)}", "4": f"TRF-{int(tribunal)}"}.get(justice)
                if justice == "5" and tribunal == "00":
                    court = "TST"
                out.append({"kind": "processo", "number": number, "court": court})
            else:
                word = match.group("kind").lower()
                kind = "oj" if word.startswith(("oj", "orientacao")) else (
                    "sumula_vinculante" if "vinculante" in word else "sumula")
                court = (match.group("court") or "").upper().replace("SDI", "SBDI") or None
                out.append({"kind": kind, "number": match.group("number"), "court": court})
            out[-1].update(text=original[match.start() : match.end()], span=[match.start(), match.end()])
        return out

    def search_text(self, text: str) -> str:
        """
        `text` as a search should read it: without the numbers of what it cites outside the corpus, the norms the laws
        table lacks ("art. 1º da Lei 605/49" -> "art. da Lei") and case law ("Súmula 331 do TST" -> "Súmula do TST",
        a CNJ process number left out). Searched as written, such a number finds the article that bears it (CLT art.
        605, art. 331). `text` itself when it cites nothing of the kind.
        """
        original = unicodedata.normalize("NFC", text or "")
        folded = _fold(original)
        spans = [
            match.span(group)
            for match in _CASE_LAW_RE.finditer(folded)
            for group in ("es_number", "number", "process")
            if match.group(group)
        ]
        for cited in self.extract(original):
            if cited.get("law") and not cited.get("law_id"):
                spans += [found.span() for found in _CITED_NUMBER_RE.finditer(folded, *cited["span"])]
        return " ".join(blank_spans(original, spans).split()) if spans else text

    def without_outside(self, text: str) -> str:
        """
        `text` without what it cites outside the corpus, whole: the norms the laws table lacks with their articles
        ("Código Penal artículo 138", "art. 1º da Lei 605/49") and case law ("Súmula 331 do TST"). What a broader
        search should read: their words ("código", "súmula") would only find other norms' articles.
        """
        original = unicodedata.normalize("NFC", text or "")
        spans = [c["span"] for c in self.extract_case_law(original)]
        spans += [c["span"] for c in self.extract(original, colloquial=True) if c.get("law") and not c.get("law_id")]
        return " ".join(blank_spans(original, spans).split()) if spans else text

    def resolve_law(self, name: str) -> tuple[str | None, str | None]:
        """
        Resolve a law name as written ("ET", "del Estatuto de los Trabajadores", "Ley 31/1995", "Lei 8.213").

        :returns: (`law_id`, `law`): the id (None when unknown or ambiguous) and the short name (the norm as
            written when it is not in the table); (None, None) when `name` is not a recognised law.
        """
        original = _LEADING_ARTICLE_RE.sub("", unicodedata.normalize("NFC", name).strip(" \t.,;:"))
        match = self._law_name_re.fullmatch(_fold(original))
        law = self._interpret(match, original) if match else None
        return (law.law_id, law.law) if law else (None, None)

    def article_key(self, raw: str) -> str | None:
        """
        Normalized key of one article reference as written ("48", "art. 48.4", "5º-A", "disposición adicional
        primera" -> "48", "48", "5-a", "da1"); None when `raw` does not start with one.
        """
        folded = _fold(unicodedata.normalize("NFC", raw)).strip()
        head = _HEAD_RE.match(folded)
        if head and not head.group("bare"):
            kind, position = (head.group("disp") or "articulo").lower(), head.end()
        else:
            kind, position = "articulo", 0
        parsed = _parse_items(folded, position, kind, words=True)
        return parsed[0][0] if parsed else None

    # -- parsing -------------------------------------------------------------------------------------------------

    def _parse_group(
        self, folded: str, original: str, head: re.Match[str]
    ) -> tuple[int, int, list[str], _LawRef, str] | int | None:
        """
        One citation group from a head: its span, the article keys, the law (None fields when absent) and how the
        law is named (`REFERENCE_SCOPES`). None when the head starts no citation; the end of its numbers when it is a
        bare head ("y 1, 2 y 3") with no law after them: every later number of that list shares its end and so its
        missing law, and is not read again (reading each again made a long list quadratic: "§§ 1 e 1 e 1 ...").
        """
        bare = head.group("bare") is not None
        if head.group("dabbr") and not original[head.start("dabbr"):head.end("dabbr")].replace(".", "").isupper():
            return None  # "da 1" is Portuguese ("of the"); the abbreviation is written in capitals: "DA 1ª"
        abbreviation = (head.group("dletter") or head.group("dword") or "").lower()
        kind = (head.group("disp") or _DISPOSITION_KINDS.get(abbreviation) or "articulo").lower()
        parsed = _parse_items(folded, head.end(), kind, words=not bare)
        if not parsed:
            return None
        articles, end = parsed
        tail = self._tail_re.match(folded, end)
        law = self._interpret(tail, original) if tail else None
        if bare and (law is None or not (law.law_id or law.law)):
            return end  # "el 10 de mayo": a bare number needs a known law after it
        start = head.end() if bare else head.start()
        if tail and law:
            if law.law_id and self._approves(tail, law.law_id):
                # "disposición derogatoria única del Real Decreto Legislativo 8/2015", "artículo único del Real
                # Decreto 2064/1995": the decree's own provision, stored apart from the text it approves (`rd-dd`,
                # `rd-unico`), not the recast law's or the reglamento's; their articles keep their numbers
                articles = [f"{APPROVAL_PREFIX}{key}" if kind != "articulo" or key == "unico" else key
                            for key in articles]
            law, end = self._approved_by(folded, tail.end(), law)
            return start, end, articles, law, "law"
        if self_tail := _SELF_TAIL_RE.match(folded, end):
            if self_tail.group("adct") or self_tail.group("adct2"):
                articles = [f"{ADCT_PREFIX}{key}" for key in articles]
            constitution = self._adct_law()
            if constitution and self_tail.group("adct2") and not self_tail.group("adct2").startswith("deste"):
                # "do ADCT" names the Brazilian constitution's transitional act wherever it is written
                return start, self_tail.end(), articles, constitution, "law"
            return start, self_tail.end(), articles, _LawRef(None, None), "self"
        if anaphora := _ANAPHORA_TAIL_RE.match(folded, end):
            return start, anaphora.end(), articles, _LawRef(None, None), "anaphora"
        scope = "other" if _OTHER_NORM_TAIL_RE.match(folded, end) else "none"
        return start, end, articles, _LawRef(None, None), scope

    def _approves(self, tail: re.Match[str], law_id: str) -> bool:
        """
        Whether a law-reference match names the law by the decree that approves its text: a real decreto legislativo
        (it approves a texto refundido: "Real Decreto Legislativo 2/2015" reaches the ET), or a real decreto the law
        is not known by ("Real Decreto 2064/1995" approves the RGC; "Real Decreto 1561/1995" is the norm itself).
        """
        name = _numbered_name(tail) or ""
        if name.startswith("real decreto legislativo "):
            return True
        return name.startswith("real decreto ") and law_key(self._short_by_id.get(law_id, law_id)) != name

    def _approved_by(self, folded: str, position: int, law: _LawRef) -> tuple[_LawRef, int]:
        """
        `law` and `position`, or the known law of an "aprobado por <numbered norm>" clause right after `position`
        and the end of that clause.
        """
        clause = _APPROVED_BY_RE.match(folded, position)
        key = _numbered_key(clause) if clause else None
        law_id = self._lookup.get(key) if key else None
        if not law_id:
            return law, position
        return _LawRef(law_id, self._short_by_id.get(law_id, law_id)), clause.end()  # type: ignore[union-attr]

    def _interpret(self, match: re.Match[str], original: str) -> _LawRef | None:
        """
        The law of a law-reference match on the folded copy of `original`; None for an invalid numbered norm
        ("ley 30"). A numbered norm outside the table keeps its name as written in `original`, a norm of
        `ABSENT_NORMS` the name shown for it.
        """
        if match.group("numbered"):
            start, end = match.span("numbered")
            key = _numbered_key(_NUMBERED_RE.fullmatch(match.string, start, end))  # type: ignore[arg-type]
            if key is None:
                return None
            as_written = original[start:end]
        else:
            key = law_key(match.group("alias"))
            as_written = self._absent.get(key)
        law_id = self._lookup.get(key)
        if law_id and "constitu" in key and (year := _YEAR_AFTER_RE.match(match.string, match.end())):
            if year.group("year") != self._year_by_id.get(law_id, year.group("year")):
                # "la Constitución de 1812", "a Constituição de 1967": another constitution than the one held (a
                # constitution is replaced, not amended, under a new year), which the corpus does not hold
                return _LawRef(None, f"{original[match.start('alias'):match.end('alias')]} de {year.group('year')}")
        return _LawRef(law_id, self._short_by_id.get(law_id, law_id) if law_id else as_written)


def _parse_items(folded: str, position: int, kind: str, *, words: bool) -> tuple[list[str], int] | None:
    """A list of article numbers ("40, 41 y 42", "14 a 16", "primera y segunda") at `position`: keys and end."""
    keys: list[str] = []
    pending_range = False
    dotted = False
    while True:
        item = _parse_item(folded, position, kind, words=words)
        words = words and not folded[position : position + 1].isdigit()  # "art. 40 ou dos arts. 42": no "dos" (2)
        if item is None:
            break
        key, end, item_dotted = item
        if pending_range and keys:
            keys.extend(_expand_range(keys[-1], key))
        elif dotted and keys and key.isdigit() and keys[-1].isdigit() and int(key) < int(keys[-1]):
            pass  # "168.1 y 2": after a numbered apartado, a smaller bare number is another apartado
        else:
            keys.append(key)
        dotted = item_dotted or (dotted and key.isdigit())
        position = end
        separator = _SEPARATOR_RE.match(folded, position)
        if separator is None:
            break
        following = _parse_item(folded, separator.end(), kind, words=words)
        dash = separator.group("dash") is not None
        if following is None or (dash and not _ascends(keys[-1], following[0])):
            break
        pending_range = dash or separator.group("range") is not None
        position = separator.end()
    return (list(dict.fromkeys(keys)), position) if keys else None


def _parse_item(folded: str, position: int, kind: str, *, words: bool) -> tuple[str, int, bool] | None:
    """
    One article number or ordinal at `position`, subdivisions (".4", ", apartado 2") skipped: key, end and
    whether a dotted apartado (".4") followed the number.
    """
    number = _ITEM_NUMBER_RE.match(folded, position)
    if number:
        raw = number.group("n") + (f"-{number.group('letter')}" if number.group("letter") else "")
        raw += f" {number.group('suffix')}" if number.group("suffix") else ""
        end = number.end()
    elif words and (match := _ITEM_WORDS_RE.match(folded, position)):
        raw, end = _ordinal_words(match)
        if raw is None:
            return None
    else:
        return None
    subdivision = _SUBDIVISION_RE.match(folded, end)
    try:
        key = normalize_article_key(raw, kind, strict=True)
    except ValueError:
        return None
    return key, subdivision.end() if subdivision else end, bool(subdivision and subdivision.group("dotted"))


def _is_ordinal(word: str) -> bool:
    return ordinal_to_int(word) is not None or word.lower() in ("unico", "unica")


def _ordinal_words(match: re.Match[str]) -> tuple[str | None, int]:
    """
    An article number in words and where it ends: an ordinal in one or two words ("primera", "vigésima primera",
    "novena bis", "única") or a cardinal in up to five ("cuarenta y ocho", "cento e trinta e cinco").
    """
    words = list(_ITEM_WORD_RE.finditer(match.group(0)))
    first, second = words[0].group(0), words[1].group(0) if len(words) > 1 else None
    if second and (
        ordinal_to_int(f"{first} {second}") is not None
        or (_is_ordinal(first) and re.fullmatch(LATIN_SUFFIXES, second, re.IGNORECASE))
    ):
        return f"{first} {second}", match.start() + words[1].end()
    if _is_ordinal(first):
        return first, match.start() + words[0].end()
    cardinal = leading_cardinal([word.group(0).lower() for word in words])
    if cardinal is None:
        return None, match.end()
    end = match.start() + words[cardinal[1] - 1].end()
    lone = first.lower() if cardinal[1] == 1 else ""
    if lone in _INDEFINITE_WORDS or (lone == "dos" and not _AFTER_LONE_DOS_RE.match(match.string, end)):
        return None, match.end()
    return str(cardinal[0]), end


def _law_ref_pattern(names: list[str], originals: dict[str, list[str]], *, free_text: bool) -> str:
    """
    `(?P<numbered>...)|(?P<alias>...)` over the known law names (longest first), case-insensitive. With
    `free_text`, abbreviations written without lowercase letters (ET, CE, CF) only match as written and one-word
    names need their capital initial ("Estatuto", not "el estatuto e incompatibilidades"; "Constitución", not
    "la constitución de una sociedad").
    """
    alternatives = []
    for key in names:
        if free_text and not any(c.islower() for name in originals[key] for c in name):
            alternatives.append(f"(?-i:{'|'.join(re.escape(_fold(name)) for name in originals[key])})")
        elif free_text and " " not in key:
            alternatives.append(f"(?-i:{re.escape(key[0].upper())}){re.escape(key[1:])}")
        else:
            alternatives.append(r"\s+".join(re.escape(word) for word in key.split(" ")))
    aliases = "|".join(alternatives) or r"(?!)"
    return rf"(?<!\w)(?:(?P<numbered>{_NUMBERED_PATTERN})|(?P<alias>{aliases}))(?![\w/])"


def _is_year(key: str) -> bool:
    return key.isdigit() and 1900 <= int(key) <= 2100


def _ascends(low: str, high: str) -> bool:
    """Whether two article keys are numbers, the second the higher: "38-40" is a range, "38-2" is not."""
    return low.isdigit() and high.isdigit() and int(high) > int(low)


def _expand_range(low: str, high: str) -> list[str]:
    """Keys from just after `low` up to `high` for numeric ranges ("14" a "16" -> 15, 16); else just `high`."""
    if low.isdigit() and high.isdigit() and 0 < int(high) - int(low) <= MAX_RANGE_EXPANSION:
        return [str(n) for n in range(int(low) + 1, int(high) + 1)]
    return [high]
