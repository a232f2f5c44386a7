"""
The answer format: what the answer stage reads and writes around the LLM.

- the numbered context: `ANSWER_CONTEXT_TEMPLATES` (one per answer language) rendered over `context_block`s
  (header "ET > Artículo 38. Vacaciones anuales", repeal note, chapter path, summary, text), with `law_name` /
  `article_heading` / `article_body` naming a block the same way wherever it is cited or quoted;
- the reply's metadata block: `META_DELIMITER` ("===META===") followed by `USED|...`, `DROP|...`, `NEED|...`
  lines (`DELIMITER_RE`, `META_LINE_RE` accept the variants small models write);
- marks left in answer text: `UNVERIFIED_MARK` after a citation the index does not hold, `GAP_MARK` between
  non-adjacent quoted sentences.

The prompt builder, the compressor that budgets the prompt, the extractive answer, the META parser, the citation
verifier and the HTTP layer (which strips the META block from streamed replies) all import these from here.
"""

import re
import secrets
from typing import Any, Final

from haystack import Document

from components.legal.citations import amended_by
from components.legal.ids import (
    ADCT_PREFIX,
    APPROVAL_PREFIX,
    BASIS_EXPANSION,
    LEFT_OUT,
    PARTIALLY_REPEALED,
    REPEALED,
    SPECIAL_REGIME,
)
from components.legal.legal_text import detect_query_language, fold_accents, split_sentences, unit_range

META_DELIMITER: Final[str] = "===META==="
# "===META===", "=== META ===", "==META==", "**===META===**"
DELIMITER_RE: Final[re.Pattern[str]] = re.compile(r"^[ \t*_`]*={2,}[ \t]*META[ \t]*={2,}[ \t*_`]*$", re.I | re.M)
META_LINE_RE: Final[re.Pattern[str]] = re.compile(
    r"^[ \t*_`-]*(?P<key>USED|DROP|NEED)[ \t*_`]*[|:](?P<value>.*)$", re.IGNORECASE
)
# Retrieved text is data, never instructions: `AnswerPromptBuilder` sends the numbered context in the user turn
# between `<<ctx-…>>` / `<</ctx-…>>` delimiters drawn at random per request (`context_tag`), and every field of a
# block is `neutralize`d first, so no document can close the delimiter, forge a `[n]` fragment header or a `---`
# separator, write a META delimiter or a USED / DROP / NEED line.
CONTEXT_TAG_RE: Final[re.Pattern[str]] = re.compile(r"<</?ctx-[0-9a-f]+>>", re.IGNORECASE)
_ANGLES_RE: Final[re.Pattern[str]] = re.compile(r"<{2,}|>{2,}|[<>](?=/?ctx-)", re.IGNORECASE)
_EQUALS_RE: Final[re.Pattern[str]] = re.compile(r"[=\uff1d]{2,}")
_FORGED_META_RE: Final[re.Pattern[str]] = re.compile(r"\b(USED|DROP|NEED)([ \t*_`]*)[|:\uff5c\uff1a]", re.IGNORECASE)
_FORGED_HEADER_RE: Final[re.Pattern[str]] = re.compile(r"\[(\s*\d+(?:\s*[,;-]\s*\d+)*\s*)\]")
_SEPARATOR_RE: Final[re.Pattern[str]] = re.compile(r"^[ \t]*([-_*~])(?:[ \t]*\1){2,}[ \t]*$", re.MULTILINE)


def context_tag() -> str:
    """A fresh context delimiter name for one request: `ctx-` and 16 random hex digits."""
    return f"ctx-{secrets.token_hex(8)}"


def neutralize(text: str) -> str:
    """
    Retrieved (untrusted) text made inert for the answer prompt: `<<` / `>>` runs (a context delimiter) become
    `‹‹` / `››`; `==` runs (a META delimiter) one `=`; `USED|`, `DROP:`, `NEED|` lose their separator
    (`USED -`);
    `[3]` (a fragment header or index) becomes `(3)`; a `---` line (the block separator) becomes `—`.
    """
    # Each pattern runs only on a text holding what every one of its matches holds (a plain substring test costs
    # next to nothing; the case-insensitive patterns scan a 2,000-character block in tens of microseconds, and
    # every block of every context is neutralized). `casefold` folds what `re.IGNORECASE` equates ("ſ" and "s").
    if "<" in text or ">" in text:
        text = _ANGLES_RE.sub(lambda m: m.group(0).replace("<", "‹").replace(">", "›"), text)
    if "=" in text or "\uff1d" in text:
        text = _EQUALS_RE.sub("=", text)
    folded = text.casefold()
    if "used" in folded or "drop" in folded or "need" in folded:
        text = _FORGED_META_RE.sub(lambda m: f"{m.group(1)}{m.group(2)} -", text)
    if "[" in text:
        text = _FORGED_HEADER_RE.sub(r"(\1)", text)
    return _SEPARATOR_RE.sub("—", text)


def one_line(text: str) -> str:
    """A field of retrieved (untrusted) text for one line of a context block: `neutralize`d, whitespace collapsed."""
    return " ".join(neutralize(text).split())


# a fragment index or range in a META line ("1", "2-4"), and the fragments an answer cites in its text: "[1]",
# "[2, 3]", "[1-3]"
_INDEX_RE: Final[re.Pattern[str]] = re.compile(r"(\d+)(?:\s*-\s*(\d+))?")
_CITED_INDEX_RE: Final[re.Pattern[str]] = re.compile(r"\[(\d+(?:\s*[,;-]\s*\d+)*)\]")
_MAX_INDEX_RANGE: Final[int] = 50  # a wider "1-999" is read as its two ends, not expanded


def split_meta(reply: str) -> tuple[str, list[str], bool]:
    """
    An answer reply split into (answer, metadata lines, whether the `===META===` delimiter was found); without the
    delimiter, trailing USED / DROP / NEED lines still count as metadata. The prompt's context delimiters
    (`<<ctx-…>>`) are never part of an answer, even when a model echoes them: they are removed first.
    """
    reply = CONTEXT_TAG_RE.sub("", reply)
    delimiters = list(DELIMITER_RE.finditer(reply))
    if delimiters:
        last = delimiters[-1]
        lines = [line for line in reply[last.end():].splitlines() if line.strip()]
        return reply[: last.start()].strip(), lines, True
    lines = reply.rstrip().splitlines()
    cut = len(lines)
    while cut > 0 and (not lines[cut - 1].strip() or META_LINE_RE.match(lines[cut - 1])):
        cut -= 1
    meta = [line for line in lines[cut:] if line.strip()]
    return ("\n".join(lines[:cut]).strip() if meta else reply.strip()), meta, False


def parse_indices(value: str) -> list[int]:
    """The fragment indices written in `value`: "1, 3" -> [1, 3]; "2-4" -> [2, 3, 4]."""
    numbers: list[int] = []
    for match in _INDEX_RE.finditer(value):
        low = int(match.group(1))
        high = int(match.group(2)) if match.group(2) else low
        numbers.extend(range(low, high + 1) if 0 <= high - low <= _MAX_INDEX_RANGE else (low, high))
    return numbers


def cited_indices(answer: str) -> list[int]:
    """Fragment indices the answer cites as [1], [2, 3] or [1-3], in order of first citation."""
    return list(dict.fromkeys(n for group in _CITED_INDEX_RE.findall(answer) for n in parse_indices(group)))


UNVERIFIED_MARK: Final[str] = "[cita no verificada]"
# the mark in the answer's language (`detect_query_language` of the answer; Spanish without evidence)
UNVERIFIED_MARKS: Final[dict[str, str]] = {"es": UNVERIFIED_MARK, "pt": "[citação não verificada]"}
GAP_MARK = " […] "

# the note of a constitutional basis (`BasisExpander`): which subdivision states the right, for which article
BASIS_NOTES: Final[dict[str, str]] = {
    "es": "[NOTA: fundamento constitucional ({units}) de {source}]",
    "pt": "[NOTA: fundamento constitucional ({units}) de {source}]",
}
# the note of a block of a special regime the question does not name (`LegalReranker`): whom it governs
SPECIAL_REGIME_NOTES: Final[dict[str, str]] = {
    "es": "[NOTA: régimen especial ({group}): rige solo para ese colectivo]",
    "pt": "[NOTA: regime especial ({group}): aplica-se só a esse grupo]",
}
# the note of a block of a law that leaves out of its scope a group the question names (`LegalReranker`): whose
# law governs the group (`rights`: "." and the `LEFT_OUT_CONSTITUTION_NOTES` sentence, when the table has one)
LEFT_OUT_CONTEXT_NOTES: Final[dict[str, str]] = {
    "es": "[NOTA: esta norma no rige directamente para {group} (su art. {article}); su norma propia, {own_law}, no "
          "está en el corpus{rights}]",
    "pt": "[NOTA: esta norma não rege diretamente {group} (seu art. {article}); a lei própria, {own_law}, não está "
          "no corpus{rights}]",
}
# the status note of a context block, in the block's language (`meta.lang`; Spanish for any other)
STATUS_NOTES: Final[dict[str, dict[str, str]]] = {
    "es": {
        "repealed": "[NOTA: Esta norma está derogada]",
        "repealed_by": "[NOTA: Esta norma está derogada por {derogated_by}]",
        "partially_repealed": "[NOTA: Esta norma está parcialmente derogada; comprueba la vigencia de este artículo]",
    },
    "pt": {
        "repealed": "[NOTA: Esta norma está revogada]",
        "repealed_by": "[NOTA: Esta norma está revogada por {derogated_by}]",
        "partially_repealed": "[NOTA: Esta norma está parcialmente revogada; verifique a vigência deste artigo]",
    },
}

# One numbered block of the context (`number`, `block`: a dict made by `context_block`); the context template below
# renders it for each block, and `ContextCompressor` renders it alone to count a block's tokens.
_BLOCK_TEMPLATE = """\
[{{ number }}] {{ block.header }}
{% if block.note %}{{ block.note }}
{% endif -%}
{% if block.chapter %}@chapter@ {{ block.chapter }}
{% endif -%}
{% if block.summary %}@summary@ {{ block.summary }}
{% endif -%}
@text@ {{ block.text }}"""
# What separates two blocks.
CONTEXT_SEPARATOR: Final[str] = "\n---\n"

# Rendered by ChatPromptBuilder (Jinja2); each block is a dict made by `context_block`. One template per answer
# language (`answer_language`): the context's own words match the prompt's, so the model answers in one language.
_CONTEXT_TEMPLATE = (
    """\
@intro@

{% for block in blocks -%}
{% if not loop.first %}"""
    + CONTEXT_SEPARATOR
    + """{% endif -%}
{% set number = loop.index -%}
"""
    + _BLOCK_TEMPLATE
    + """
{%- else -%}
@empty@
{%- endfor %}
{%- if graph_context %}

---
@graph@
{{ graph_context }}
@graph_note@
{%- endif %}
{%- if unknown_norms %}

---
@unknown@ {{ unknown_norms | join("; ") }}
{%- endif %}
{%- if amending_norms %}

---
@amending@ {{ amending_norms | join("; ") }}
{%- endif %}
{%- if missing_articles %}

---
@missing@ {{ missing_articles | join("; ") }}
{%- endif %}
{%- if out_of_scope %}

---
@out_of_scope@ {{ out_of_scope | join("; ") }}
{%- endif %}"""
)
CONTEXT_LABELS: Final[dict[str, dict[str, str]]] = {
    "es": {
        "intro": "Fragmentos de normativa recuperados para esta consulta. Cada fragmento lleva su número entre "
        "corchetes: usa ese número en las líneas USED y DROP.",
        "chapter": "Capítulo:",
        "summary": "Resumen:",
        "text": "Texto:",
        "empty": "No se ha recuperado ningún fragmento de normativa para esta consulta.",
        "graph": "Relaciones entre normas (grafo legal):",
        "graph_note": "(Estas relaciones orientan la respuesta; no son fragmentos numerados: no las incluyas en USED "
        "ni DROP.)",
        "unknown": "Normas o jurisprudencia que cita la pregunta y que no están en el corpus indexado (dilo en la "
        "respuesta y no les atribuyas el contenido de ningún fragmento):",
        "amending": "Normas que cita la pregunta y que no están en el corpus como texto propio, pero que modificaron "
        "la norma de los fragmentos indicados entre paréntesis, cuyo texto consolidado ya recoge esos cambios (dilo "
        "en la respuesta):",
        "missing": "Artículos que cita la pregunta y que no se encuentran en la normativa disponible (dilo en la "
        "respuesta; ningún fragmento es ese artículo):",
        "out_of_scope": "La pregunta parece tratar de una materia cuya normativa no está en el corpus indexado (dilo "
        "al principio de la respuesta; los fragmentos son lo más cercano que contiene y pueden no responderla):",
    },
    "pt": {
        "intro": "Fragmentos de legislação recuperados para esta consulta. Cada fragmento traz o seu número entre "
        "colchetes: use esse número nas linhas USED e DROP.",
        "chapter": "Capítulo:",
        "summary": "Resumo:",
        "text": "Texto:",
        "empty": "Nenhum fragmento de legislação foi recuperado para esta consulta.",
        "graph": "Relações entre normas (grafo legal):",
        "graph_note": "(Estas relações orientam a resposta; não são fragmentos numerados: não as inclua em USED nem "
        "DROP.)",
        "unknown": "Normas ou jurisprudência citadas na pergunta que não estão no corpus indexado (diga isso na "
        "resposta e não lhes atribua o conteúdo de nenhum fragmento):",
        "amending": "Normas citadas na pergunta que não estão no corpus como texto próprio, mas que alteraram a "
        "norma dos fragmentos indicados entre parênteses, cujo texto consolidado já traz essas alterações (diga isso "
        "na resposta):",
        "missing": "Artigos citados na pergunta que não se encontram na legislação disponível (diga isso na "
        "resposta; nenhum fragmento é esse artigo):",
        "out_of_scope": "A pergunta parece tratar de uma matéria cuja legislação não está no corpus indexado (diga "
        "isso no início da resposta; os fragmentos são o mais próximo que ele contém e podem não respondê-la):",
    },
}
# The extractive answer's first line when the question cites norms the laws table does not hold
# (`components.legal.citations.unknown_norms`): what follows comes from other norms.
UNKNOWN_NORMS_NOTES: Final[dict[str, str]] = {
    "es": "No están en el corpus indexado, y lo que sigue no procede de ellas: {norms}.",
    "pt": "Não estão no corpus indexado, e o que segue não vem delas: {norms}.",
}
# The extractive answer's first line for a norm the question cites that the corpus lacks as a text of its own but
# whose changes a consolidated text among the answer's blocks carries (`components.legal.citations.amended_by`: "Lei
# 13.467/2017" and the CLT's notes "Redação dada pela Lei nº 13.467, de 2017"): the blocks hold its wording, not its
# own articles.
AMENDING_NORM_NOTES: Final[dict[str, str]] = {
    "es": "{norm} no está en el corpus como texto propio, pero el texto consolidado indexado ya recoge los cambios "
          "que introdujo, entre ellos en: {provisions}.",
    "pt": "{norm} não está no corpus como texto próprio, mas o texto consolidado indexado já traz as alterações que "
          "ela fez, entre elas em: {provisions}.",
}


def amending_norm_entries(norms: list[str], documents: list[Document]) -> tuple[list[str], dict[str, str]]:
    """
    `norms` the corpus lacks as texts of their own, split: those no document's legislative-history notes name as
    having changed it, and, for each of the others, the blocks it changed as the answer cites them ("CLT, art. 71;
    CLT, art. 134"), in the documents' order.
    """
    missing, amending = [], {}
    for norm in norms:
        changed = list(dict.fromkeys(cited_as(doc) for doc in amended_by(norm, documents)))
        if changed:
            amending[norm] = "; ".join(changed)
        else:
            missing.append(norm)
    return missing, amending


def amending_norm_notice(norm: str, provisions: str, language: str) -> str:
    """The extractive answer's line for a norm whose changes the quoted consolidated text carries (neutralized)."""
    notes = AMENDING_NORM_NOTES.get(language, AMENDING_NORM_NOTES["es"])
    return neutralize(notes.format(norm=norm, provisions=provisions))
# The refusal's first line when the question cites case law (no index of statutes holds any): what it asked for is
# named, before the refusal.
UNKNOWN_NORMS_ONLY_NOTES: Final[dict[str, str]] = {
    "es": "No están en el corpus indexado: {norms}.",
    "pt": "Não estão no corpus indexado: {norms}.",
}


def unknown_norms_notice(norms: list[str], language: str) -> str:
    """The refusal's first line naming what the question cites that the corpus lacks (neutralized: it is as typed)."""
    notes = UNKNOWN_NORMS_ONLY_NOTES.get(language, UNKNOWN_NORMS_ONLY_NOTES["es"])
    return neutralize(notes.format(norms="; ".join(norms)))


# The extractive answer's first line when an article the question cites was not found (`LexicalFirstGate.missing`:
# a mistyped number, or an article the caller's filters leave out): what follows is another article.
MISSING_ARTICLES_NOTES: Final[dict[str, str]] = {
    "es": "No encuentro en la normativa disponible: {articles}. Lo que sigue son otros artículos.",
    "pt": "Não encontrei na legislação disponível: {articles}. O que segue são outros artigos.",
}


# The extractive answer's line when the question cites a subdivision its article does not have ("art. 7º, inciso
# CXX, da CF"): the article follows, not that subdivision
ABSENT_UNIT_NOTES: Final[dict[str, str]] = {
    "es": "No encuentro en el texto del artículo: {units}. Lo que sigue es el artículo.",
    "pt": "Não encontrei no texto do artigo: {units}. O que segue é o artigo.",
}


# The extractive answer's line when the question cites more articles than the answer holds (the citation fetch and the
# context budget bound them): how many it quotes, so the others are not taken for absent
LEFT_FOR_LENGTH_NOTES: Final[dict[str, str]] = {
    "es": "Tu pregunta cita {cited} artículos; por su extensión, esta respuesta reproduce {quoted}. Pregunta por los "
          "demás aparte.",
    "pt": "Sua pergunta cita {cited} artigos; pela extensão, esta resposta reproduz {quoted}. Pergunte pelos demais "
          "separadamente.",
}


# The extractive answer's first line when the question cites an article by its number alone and more than one norm of
# the corpus has it ("¿qué dice el artículo 14?"): which one is quoted, and how to ask for another.
AMBIGUOUS_ARTICLE_NOTES: Final[dict[str, str]] = {
    "es": "La pregunta no dice de qué norma es el {article}, y más de una del corpus lo tiene: cito {chosen}. "
          "Si es de otra, nómbrala en la pregunta.",
    "pt": "A pergunta não diz de que norma é o {article}, e mais de uma do corpus o tem: cito {chosen}. "
          "Se for de outra, nomeie-a na pergunta.",
}


def missing_articles_notice(articles: list[str], language: str) -> str:
    """
    The extractive answer's notice of the cited articles not found, as the answer writes it (neutralized); the
    citation verifier looks for this very text to leave it unmarked.
    """
    return neutralize(MISSING_ARTICLES_NOTES[language].format(articles="; ".join(articles)))


# The extractive answer's first line when the question is about a branch of law whose statutes the corpus does not
# hold (`ScopeChecker`): the passages that follow are the nearest it has, not that matter's law.
OUT_OF_SCOPE_NOTES: Final[dict[str, str]] = {
    "es": "Tu pregunta parece tratar de {matters}, cuya normativa no está en el corpus indexado: lo que sigue es lo "
    "más cercano que contiene y puede no responderla.",
    "pt": "Sua pergunta parece tratar de {matters}, cuja legislação não está no corpus indexado: o que segue é o "
    "mais próximo que ele contém e pode não respondê-la.",
}
# The extractive answer's line when the question names a group that a law of the quotes leaves out of its scope
# (`LegalReranker`'s `meta["left_out"]`): that law's quotes may not hold for the group, whose own law the corpus lacks.
LEFT_OUT_NOTES: Final[dict[str, str]] = {
    "es": "{law}, art. {article}: esta norma no rige directamente para {group}, que la pregunta menciona; su norma "
          "propia es {own_law}, que no está en el corpus indexado. Lo que sigue de esa norma puede no aplicarse.",
    "pt": "{law}, art. {article}: esta norma não rege diretamente {group}, que a pergunta menciona; a lei própria é "
          "{own_law}, que não está no corpus indexado. O que segue dessa norma pode não se aplicar.",
}
# ... followed, when the table says where the constitution states the group's rights, by
LEFT_OUT_CONSTITUTION_NOTES: Final[dict[str, str]] = {
    "es": " Sus derechos en la Constitución: {constitution}.",
    "pt": " Seus direitos na Constituição: {constitution}.",
}
ANSWER_LANGUAGES: Final[tuple[str, ...]] = tuple(CONTEXT_LABELS)


def _left_out_fields(meta: dict[str, Any]) -> dict[str, str] | None:
    """
    The `group`, `article`, `own_law` and `constitution` ("" when absent) of a block's left-out mark, each on one
    line; None without the first three.
    """
    mark = meta.get(LEFT_OUT)
    if not isinstance(mark, dict) or not all(isinstance(mark.get(k), str) for k in ("group", "article", "own_law")):
        return None
    constitution = mark.get("constitution")
    return {key: one_line(mark[key]) for key in ("group", "article", "own_law")} | {
        "constitution": one_line(constitution) if isinstance(constitution, str) else ""}


def left_out_notices(documents: list[Document], language: str) -> list[str]:
    """
    The extractive answer's lines (neutralized) for the laws among `documents` that leave out a group the question
    names, one per law and group, in the order of their first block; the citation verifier reads the same lines to
    leave them unmarked.
    """
    template = LEFT_OUT_NOTES.get(language, LEFT_OUT_NOTES["es"])
    rights = LEFT_OUT_CONSTITUTION_NOTES.get(language, LEFT_OUT_CONSTITUTION_NOTES["es"])
    lines: dict[tuple[str, str], str] = {}
    for document in documents:
        fields = _left_out_fields(document.meta)
        if fields is None:
            continue
        law = one_line(str(document.meta.get("law_short") or document.meta.get("law_id") or ""))
        line = template.format(law=law, **fields) + (rights.format(**fields) if fields["constitution"] else "")
        lines.setdefault((law, fields["group"]), neutralize(line))
    return list(lines.values())


def _labelled(template: str, labels: dict[str, str]) -> str:
    for name, label in labels.items():
        template = template.replace(f"@{name}@", label)
    return template


ANSWER_CONTEXT_TEMPLATES: Final[dict[str, str]] = {
    language: _labelled(_CONTEXT_TEMPLATE, labels) for language, labels in CONTEXT_LABELS.items()
}
CONTEXT_BLOCK_TEMPLATES: Final[dict[str, str]] = {
    language: _labelled(_BLOCK_TEMPLATE, labels) for language, labels in CONTEXT_LABELS.items()
}


def answer_language(question: str, documents: list[Document]) -> str:
    """
    The language of the answer (`ANSWER_LANGUAGES`): the question's (`detect_query_language`), else the language
    of the best-ranked block (`documents` best first), else Spanish.

    A question with no word of either language is a citation ("art. 14 CE") or an acronym ("FGTS"): the block
    ranked first is the article it cites or names, and the answer quotes it first. The language most blocks are
    written in said Portuguese for "art. 14 CE" when the candidates after CE art. 14 were Brazilian.
    """
    language = detect_query_language(question)
    if language not in ANSWER_LANGUAGES:
        language = next((doc.meta["lang"] for doc in documents if doc.meta.get("lang") in ANSWER_LANGUAGES), "es")
    return language


def law_name(document: Document) -> str:
    """The short name of a block's law ("ET"), else its title, else its id."""
    meta = document.meta
    return str(meta.get("law_short") or meta.get("law_title") or meta.get("law_id") or "Norma")


def cited_as(document: Document, units: str = "") -> str:
    """
    How a block is cited: "ET, art. 38", "CLT, art. 391-A"; with a subdivision's label (`unit_label`), "CLT, art.
    477, § 8º"; the law's name alone for a block of no article.
    """
    article = article_citation(document.meta)
    if article and units:
        article = f"{article}, {units}"
    return f"{law_name(document)}, {article}" if article else law_name(document)


def numbered_apart(meta: dict[str, Any]) -> str:
    """
    Where a provision numbered apart from the body stands, since its number repeats the body's: "do ADCT" for the
    Brazilian Constitution's transitional act (key `adct-10`; CF88 art. 10 is another article), "del Real Decreto
    Legislativo 2/2015" for the decree that approves a texto refundido (key `rd-dd`); "" for the body's own.
    """
    key = str(meta.get("article") or "")
    if key.startswith(ADCT_PREFIX):
        return "do ADCT"
    if key.startswith(APPROVAL_PREFIX):
        # the law's title is the approving decree's: "Real Decreto Legislativo 2/2015, de 23 de octubre, por el que ..."
        decree = str(meta.get("law_title") or "").split(",", 1)[0].strip()
        return f"del {decree}" if decree else ""
    return ""


def article_citation(meta: dict[str, Any]) -> str:
    """
    An article as a citation names it, spelled as the statute writes it: "art. 38", "art. 391-A" (the store's key is
    "391-a"), "disposición adicional primera", "art. 10 do ADCT" (`numbered_apart`); "art. <key>" without a label,
    "" without an article.
    """
    label = str(meta.get("article_label") or "")
    if fold_accents(label).lower().startswith("articulo "):
        cited = f"art. {label.split(None, 1)[1]}"
    elif label:
        cited = label[0].lower() + label[1:]
    else:
        cited = f"art. {meta['article']}" if meta.get("article") else ""
    where = numbered_apart(meta) if cited else ""
    return f"{cited} {where}" if where else cited



# A subdivision of an article as a citation names it, in the statute's language: "apartado 2", "regla 7", "letra b)";
# "§ 8º", "parágrafo único", "inciso XVII", "alínea b", "caput"
UNIT_LABELS: Final[dict[str, dict[str, str]]] = {
    "es": {"apartado": "apartado {}", "regla": "regla {}", "paragrafo": "párrafo {}", "inciso": "inciso {}",
           "letra": "letra {}", "caput": "párrafo inicial"},
    "pt": {"apartado": "item {}", "regla": "regra {}", "paragrafo": "§ {}", "inciso": "inciso {}", "letra": "alínea {}",
           "caput": "caput"},
}


def unit_label(units: list[tuple[str, str]], language: str) -> str:
    """
    The subdivision `units` names (`components.legal.citations.pinpoint`), as a citation writes it after the
    article: "apartado 2"; "§ 8º", "parágrafo único", "inciso II, alínea b".
    """
    labels = UNIT_LABELS.get(language, UNIT_LABELS["es"])
    out = []
    for kind, value in units:
        if kind == "paragrafo" and value == "unico":
            out.append("parágrafo único" if language == "pt" else "párrafo único")
        elif kind == "paragrafo" and language == "pt":
            out.append(f"§ {value}º" if value.isdigit() and int(value) < 10 else f"§ {value}")
        elif kind in labels:
            out.append(labels[kind].format(value))
    return ", ".join(out)


def article_heading(document: Document, *, located: bool = False) -> str:
    """
    The block's article label and title: "Artículo 38. Vacaciones anuales" ("Artículo 38" without a title).

    `located`: a provision numbered apart says where it stands ("Art. 10 do ADCT"), as the answer must cite it.
    """
    meta = document.meta
    label = str(meta.get("article_label") or (f"Artículo {meta['article']}" if meta.get("article") else ""))
    where = numbered_apart(meta) if located and label else ""
    label = f"{label} {where}" if where else label
    title = str(meta.get("article_title") or "").strip().rstrip(".")
    return f"{label}. {title}" if label and title else label or title


def article_body(document: Document) -> str:
    """A block's text without its leading heading line ("Artículo 38. Vacaciones anuales."), already in the header."""
    content = (document.content or "").strip()
    label = fold_accents(str(document.meta.get("article_label") or "")).lower()
    first, _, rest = content.partition("\n")
    if label and rest.strip() and fold_accents(first).lower().startswith(label):
        return rest.strip()
    return content


def block_part(document: Document) -> int:
    """Which part of its article a block is (`meta["part"]`, a long article is stored in parts); 0 when whole."""
    part = document.meta.get("part")
    return part if isinstance(part, int) else 0


def holds_subdivision(blocks: list[Document], units: list[tuple[str, str]]) -> bool:
    """
    Whether an article, its blocks (any order; parts are read in order), has the subdivision `units` names
    (`components.legal.citations.pinpoint`: "inciso XVII" -> `[("inciso", "XVII")]`).
    """
    parts = sorted(blocks, key=block_part)
    sentences = [s for doc in parts for s in split_sentences(article_body(doc), lang=doc.meta.get("lang", "es"))]
    return bool(units) and unit_range(sentences, units) is not None


def basis_units(meta: dict[str, Any]) -> list[tuple[str, str]]:
    """
    The subdivision a constitutional basis block stands for (`BasisExpander`: `meta["basis_units"]` of a block whose
    `meta["expansion"]` is `BASIS_EXPANSION`), as `(kind, value)` pairs; [] for any other block or malformed meta.
    """
    units = meta.get("basis_units") if meta.get("expansion") == BASIS_EXPANSION else None
    if not isinstance(units, list):
        return []
    pairs = [(str(unit[0]), str(unit[1])) for unit in units if isinstance(unit, (list, tuple)) and len(unit) == 2]
    return pairs if len(pairs) == len(units) else []


def _note(meta: dict[str, Any]) -> str:
    language = str(meta.get("lang") or "")
    notes = STATUS_NOTES.get(language, STATUS_NOTES["es"])
    status = meta.get("status")
    if status == REPEALED:
        derogated_by = meta.get("derogated_by")
        return notes["repealed_by"].format(derogated_by=derogated_by) if derogated_by else notes["repealed"]
    note = notes["partially_repealed"] if status == PARTIALLY_REPEALED else ""
    pairs = basis_units(meta)
    if pairs and meta.get("basis_of"):
        basis = BASIS_NOTES.get(language, BASIS_NOTES["es"]).format(
            units=unit_label(pairs, language if language in UNIT_LABELS else "es"),
            source=one_line(str(meta["basis_of"])),
        )
        note = f"{note} {basis}".strip()
    left_out = _left_out_fields(meta)
    if left_out:
        rights = LEFT_OUT_CONSTITUTION_NOTES.get(language, LEFT_OUT_CONSTITUTION_NOTES["es"]).format(**left_out)
        left = LEFT_OUT_CONTEXT_NOTES.get(language, LEFT_OUT_CONTEXT_NOTES["es"]).format(
            **left_out, rights=f".{rights.rstrip('.')}" if left_out["constitution"] else "")
        note = f"{note} {left}".strip()
    group = meta.get(SPECIAL_REGIME)
    if isinstance(group, str) and group.strip():
        special = SPECIAL_REGIME_NOTES.get(language, SPECIAL_REGIME_NOTES["es"])
        note = f"{note} {special.format(group=one_line(group))}".strip()
    return note


def context_block(document: Document) -> dict[str, str]:
    """
    The fields of one numbered context block, as `CONTEXT_BLOCK_TEMPLATES` lay them out; every field that comes
    from the document (text, titles, chapter path, summary) is `neutralize`d (an uploaded file sets them all).
    """
    meta = document.meta
    heading = article_heading(document, located=True)  # the LLM cites what the header names
    header = f"{law_name(document)} > {heading}" if heading else law_name(document)
    return {
        "header": one_line(header),
        "note": _note(meta),
        "chapter": one_line(" > ".join(str(h) for h in meta.get("heading_path") or [])),
        "summary": neutralize(str(meta.get("summary") or "").strip()),
        "text": neutralize(article_body(document)),
    }
