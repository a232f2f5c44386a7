"""
Questions about the corpus itself ("¿qué leyes tienes?", "quais leis você conhece?", "which laws do you have?"):
how to tell one, and the answer listing the norms a caller can read.

Such a question asks what the engine can answer from, not what a law says: searched like any question, it returns
whichever articles happen to mention "normas" or "leis". `asks_for_catalogue` reads it from its words alone,
strictly: the question must name laws, address the engine's holdings, and hold nothing else, so that "¿qué leyes
regulan las vacaciones?" or "¿qué leyes hay sobre el despido?" are still searched.
"""

import re
from collections.abc import Mapping
from typing import Any, Final

from components.legal.topics import fold

# the words that name norms (accent-folded)
_NORM_WORDS: Final[frozenset[str]] = frozenset({
    "ley", "leyes", "norma", "normas", "normativa", "normativas", "legislacion", "legislaciones", "texto", "textos",
    "estatuto", "estatutos", "codigo", "codigos", "documento", "documentos", "fuentes",
    "lei", "leis", "legislacao", "legislacoes",
    "law", "laws", "statute", "statutes", "legislation", "regulations", "acts", "codes", "documents",
})
# the words that ask about the engine's holdings
_HOLDING_WORDS: Final[frozenset[str]] = frozenset({
    "tienes", "tiene", "teneis", "tienen", "conoces", "conoce", "cubres", "cubre", "incluyes", "incluye", "abarcas",
    "abarca", "manejas", "contienes", "contiene", "dispones", "dispone", "sabes", "hay", "disponibles", "disponible",
    "consultar", "consulto", "preguntar", "preguntarte", "cargadas", "cargados", "indexadas", "indexados", "lista",
    "listado", "enumera", "dime", "muestrame", "ensename",
    "tem", "tens", "conhece", "conheces", "cobre", "cobres", "inclui", "ha", "disponiveis", "disponivel",
    "perguntar", "perguntarte", "carregadas", "carregados", "mostre", "liste", "listagem",
    "have", "know", "cover", "include", "includes", "available", "ask", "list", "contain", "contains", "support",
    "supported", "indexed", "loaded",
})
# the words such a question may also hold: interrogatives, articles, pronouns, greetings, courtesy
_FILLER_WORDS: Final[frozenset[str]] = frozenset({
    "que", "cuales", "cual", "quais", "qual", "which", "what", "sobre", "de", "del", "da", "das", "do", "dos", "la",
    "las", "los", "el", "en", "em", "no", "na", "nos", "nas", "con", "com", "a", "as", "o", "os", "y", "e", "aqui",
    "aca", "ai", "base", "datos", "dados", "corpus", "sistema", "tu", "tus", "su", "sus", "vuestra", "vuestras",
    "seu", "sua", "seus", "suas", "teu", "tua", "teus", "tuas", "your", "the", "does", "you", "i", "can", "me",
    "te", "se", "puedo", "puedes", "podemos", "pode", "posso", "podes", "hola", "buenas", "buenos", "dias", "tardes",
    "oi", "ola", "bom", "boa", "dia", "hi", "hello", "por", "favor", "please", "usted", "vos", "voce", "voces", "yo",
    "eu", "son", "sao", "are", "estan", "estao", "esta", "legales", "juridicos", "juridicas", "vigentes",
    "vigor", "todas", "todos", "all", "about", "on", "in", "there", "is", "of", "for", "para", "pra", "mi", "my",
})
_WORD_RE: Final[re.Pattern[str]] = re.compile(r"[a-z0-9]+")
_MAX_WORDS: Final[int] = 16

CATALOGUE_TEXTS: Final[dict[str, dict[str, str]]] = {
    "es": {
        "intro": "Respondo con el texto de estas normas:",
        "none": "No hay ninguna norma indexada que puedas consultar.",
        "repealed": " (derogada)",
        "other": "Otras normas",
        "hint": 'Pregunta con tus palabras ("¿cuántos días de vacaciones tengo?") o por un artículo ("¿qué dice '
                'el artículo 38 del ET?").',
    },
    "pt": {
        "intro": "Respondo com o texto destas normas:",
        "none": "Não há nenhuma norma indexada que você possa consultar.",
        "repealed": " (revogada)",
        "other": "Outras normas",
        "hint": 'Pergunte com suas palavras ("quantos dias de férias eu tenho?") ou por um artigo ("o que diz o art. '
                '130 da CLT?").',
    },
}
COUNTRY_NAMES: Final[dict[str, dict[str, str]]] = {
    "es": {"es": "España", "br": "Brasil", "pt": "Portugal"},
    "pt": {"es": "Espanha", "br": "Brasil", "pt": "Portugal"},
}


def asks_for_catalogue(question: str) -> bool:
    """
    Whether `question` asks which norms the engine holds, and nothing else: it names norms ("leyes", "leis",
    "laws"), asks about the engine's holdings ("tienes", "você conhece", "disponibles", "do you have"), and every
    other word is an interrogative, an article, a pronoun, a greeting or a courtesy. A question with any other
    content ("¿qué leyes regulan las vacaciones?", "¿tienes la ley 31/1995?") is not one.
    """
    words = _WORD_RE.findall(fold(question or ""))
    if not words or len(words) > _MAX_WORDS:
        return False
    return (
        any(word in _NORM_WORDS for word in words)
        and any(word in _HOLDING_WORDS for word in words)
        and all(word in _NORM_WORDS or word in _HOLDING_WORDS or word in _FILLER_WORDS for word in words)
    )


def catalogue_answer(norms: list[Mapping[str, Any]], language: str) -> str:
    """
    The answer listing `norms` (rows of `NormCatalogue`: `law_short`, `law_title`, `country`, `repealed`), grouped
    by country in the order given (`es`, `br`, then any other), in `language` (`es` or `pt`; others read `es`).
    """
    texts = CATALOGUE_TEXTS.get(language, CATALOGUE_TEXTS["es"])
    if not norms:
        return texts["none"]
    countries = COUNTRY_NAMES.get(language, COUNTRY_NAMES["es"])
    groups: dict[str, list[str]] = {}
    for norm in norms:
        country = str(norm.get("country") or "")
        title, short = str(norm.get("law_title") or "").strip(), str(norm.get("law_short") or "").strip()
        name = f"{short}: {title}" if short and title and short != title else (title or short or str(norm["law_id"]))
        repealed = texts["repealed"] if norm.get("repealed") else ""
        groups.setdefault(countries.get(country, texts["other"]), []).append(f"- {name}{repealed}")
    lines = [texts["intro"]]
    for country, rows in groups.items():
        lines += ["", f"{country}:", *rows]
    return "\n".join([*lines, "", texts["hint"]])
