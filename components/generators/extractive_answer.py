"""
The deterministic answer stage: quotes the most relevant sentences of the retrieved articles, with no LLM.

`ExtractiveAnswer` replaces the answer prompt + chat generator when no LLM is configured (or the call fails). Its
reply ends with the same `===META===` block an LLM is asked for, so `AnswerMetaParser` and everything after it handle
both paths identically.
"""

import math
import re
from collections import Counter
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.dataclasses import ChatMessage

from components.legal.answer_format import (
    ABSENT_UNIT_NOTES,
    AMBIGUOUS_ARTICLE_NOTES,
    GAP_MARK,
    LEFT_FOR_LENGTH_NOTES,
    META_DELIMITER,
    OUT_OF_SCOPE_NOTES,
    UNKNOWN_NORMS_NOTES,
    amending_norm_entries,
    amending_norm_notice,
    answer_language,
    article_body,
    basis_units,
    block_part,
    cited_as,
    left_out_notices,
    missing_articles_notice,
    neutralize,
    unit_label,
)
from components.legal.citations import (
    CitationGrammar,
    cited_articles,
    listed_spans,
    not_in_corpus,
    pinpoint,
    still_unknown,
    with_units_before,
)
from components.legal.conversation import previous_questions, read_with_previous
from components.legal.ids import REPEALED, SPECIAL_REGIME, cited_exactly
from components.legal.jurisdiction import country_readings, without_countries
from components.legal.legal_text import blank_spans, repealed_provision, split_sentences, unit_range
from components.legal.spelling import correct_spelling
from components.legal.terms import (
    asks_for_definition,
    asks_for_full_text,
    load_equivalences,
    split_concepts,
    stems,
)

logger = logging.getLogger(__name__)

EXTRACTIVE_INTRO = "Estos son los pasajes de la normativa más relevantes para tu pregunta:"
EXTRACTIVE_NO_MATCH_INTRO = (
    "No encuentro en los artículos recuperados ninguna frase que coincida con los términos de tu pregunta. "
    "Este es el comienzo del artículo mejor situado en la búsqueda:"
)
EXTRACTIVE_NO_MATCH_PASSAGE_INTRO = (
    "No encuentro en los artículos recuperados ninguna frase que coincida con los términos de tu pregunta. "
    "Este es un pasaje del artículo mejor situado en la búsqueda:"
)
EXTRACTIVE_NOTE = (
    "Nota: esta es una respuesta extractiva, generada sin modelo de lenguaje: reproduce literalmente fragmentos de "
    "los artículos citados, que conviene leer completos."
)
EXTRACTIVE_NOT_FOUND = (
    "No encuentro artículos en la normativa disponible que respondan a tu pregunta. Prueba a reformularla con "
    "otras palabras o a indicar la ley o el artículo que te interesa."
)
QUOTE_LINE = "- «{quote}» ({citation})"
REPEALED_CITATION_NOTE = "norma derogada"
META_BLOCK = f"{META_DELIMITER}\nUSED|{{used}}\nDROP|ninguno"
# the same texts for Portuguese questions (Brazilian law)
EXTRACTIVE_TEXTS_PT = {
    "intro": "Estes são os trechos da legislação mais relevantes para a sua pergunta:",
    "no_match": (
        "Não encontrei nos artigos recuperados nenhuma frase que coincida com os termos da sua pergunta. "
        "Este é o começo do artigo mais bem colocado na busca:"
    ),
    "no_match_passage": (
        "Não encontrei nos artigos recuperados nenhuma frase que coincida com os termos da sua pergunta. "
        "Este é um trecho do artigo mais bem colocado na busca:"
    ),
    "note": (
        "Observação: esta é uma resposta extrativa, gerada sem modelo de linguagem: reproduz literalmente trechos "
        "dos artigos citados, que convém ler na íntegra."
    ),
    "not_found": (
        "Não encontrei artigos na legislação disponível que respondam à sua pergunta. Tente reformulá-la com "
        "outras palavras ou indicar a lei ou o artigo que lhe interessa."
    ),
    "repealed": "norma revogada",
}
EXTRACTIVE_TEXTS = {
    "es": {
        "intro": EXTRACTIVE_INTRO,
        "no_match": EXTRACTIVE_NO_MATCH_INTRO,
        "no_match_passage": EXTRACTIVE_NO_MATCH_PASSAGE_INTRO,
        "note": EXTRACTIVE_NOTE,
        "not_found": EXTRACTIVE_NOT_FOUND,
        "repealed": REPEALED_CITATION_NOTE,
    },
    "pt": EXTRACTIVE_TEXTS_PT,
}
MAX_SENTENCE_CHARS = 500
MAX_UNIT_CHARS = 3000  # a cited subdivision is quoted whole up to this many characters (a longer one, its beginning)
MAX_LEAD_IN_DISTANCE = 12  # sentences between a list item and the lead-in it is quoted with, at most
ARTICLE_MIN_RATIO = 0.5  # a 2nd or 3rd article is quoted only when its best sentence scores at least this share

# a list item's enumerator: "I - " (Brazilian incisos), "1.º", "2.ª", "3. ", "a) ", "b. "
_ITEM_RE = re.compile(
    r"^(?:(?P<roman>[IVXLC]+\s*[-–—])|(?P<ordinal>\d+\.?[ºª°])|(?P<number>\d+(?:\.\d+)*\.)|(?P<letter>[a-zñ][).]))\s"
)
# a leading enumeration marker, not worth quoting: "1. ", "2 bis. ", "a) ", "b. ", "1." before a capital ("1.El")
_ENUMERATOR_RE = re.compile(r"^(?:\d+(?:\.\d+)*(?:\s+bis)?\.(?:\s+|(?=[A-ZÁÉÍÓÚÑ]))|(?:[a-zñ]\)|[a-zñ]\.)\s+)")


def citation(document: Document, language: str = "es", units: list[tuple[str, str]] | None = None) -> str:
    """
    How a quote from the block is cited: "ET, art. 38"; "ET, disposición adicional primera"; "CLT, art. 477"; with
    the subdivision quoted (`units`), "CLT, art. 477, § 8º", in the statute's language.
    """
    meta = document.meta
    cited = cited_as(document, unit_label(units, str(meta.get("lang") or language)) if units else "")
    note = EXTRACTIVE_TEXTS.get(language, EXTRACTIVE_TEXTS["es"])["repealed"]
    return f"{cited}; {note}" if meta.get("status") == REPEALED else cited


def _clean(sentence: str, *, keep_enumerator: bool = False) -> str:
    text = sentence.strip() if keep_enumerator else _ENUMERATOR_RE.sub("", sentence).strip()
    return text if len(text) <= MAX_SENTENCE_CHARS else text[:MAX_SENTENCE_CHARS].rsplit(" ", 1)[0] + "…"


def _without_citations(text: str, citations: list[dict[str, Any]]) -> str:
    """`text` with each citation blanked, with the subdivision named before it ("§ 1º do art. 59 da CLT")."""
    return blank_spans(text, [with_units_before(text, c["span"]) for c in citations])


def _checked_citations(citations: Any, question: str) -> list[dict[str, Any]]:
    """
    `citations` as given, after checking they can be read: a list of dicts, each with a `span` (start, end) inside
    `question` and the `law_id` / `article` keys (None allowed) that `CitationGrammar.extract` gives.

    :raises ValueError: Anything else (a clear error rather than a quote chosen from garbage).
    """
    if not isinstance(citations, list):
        raise ValueError(f"citations must be a list of citation dicts, got {type(citations).__name__}")
    for citation in citations:
        span = citation.get("span") if isinstance(citation, dict) else None
        if not (
            isinstance(span, (list, tuple))
            and len(span) == 2
            and all(isinstance(p, int) for p in span)
            and 0 <= span[0] <= span[1] <= len(question)
            and {"law_id", "article"} <= citation.keys()
        ):
            raise ValueError(
                "each citation must be a dict with `law_id`, `article` and a `span` (start, end) inside the "
                f"question, got {citation!r}"
            )
    return citations


def _nonblank(values: list[str] | None) -> list[str]:
    """The non-blank strings of a notice's list, stripped."""
    return [value.strip() for value in values or [] if isinstance(value, str) and value.strip()]


def _key(document: Document) -> tuple[Any, Any]:
    return (document.meta.get("law_id"), document.meta.get("article"))


def _article(documents: list[Document], i: int) -> tuple[Any, ...]:
    """The article block `i` belongs to; a block of no known article stands alone."""
    key = _key(documents[i])
    return key if all(key) else ("block", i)


def _query_rank(document: Document, query: str) -> int | None:
    """The block's rank in the ranking of a search query that found it (`MultiQueryRetriever`), 0 = its best."""
    ranks = document.meta.get("query_ranks")
    rank = ranks.get(query) if isinstance(ranks, dict) else None
    return rank if isinstance(rank, int) else None


def _best_block(cited: dict[str, Any], documents: list[Document]) -> int | None:
    """
    The position of the best-ranked block of an article cited with no law ("o artigo 7º, inciso XVII"), whose law
    it is read in, a law in force before a repealed one (the corpus keeps repealed texts for questions that name
    them); None for a citation with a law, or an article no block has.
    """
    if cited.get("law_id") or cited.get("law") or not cited.get("article"):
        return None
    held = [i for i, d in enumerate(documents) if d.meta.get("article") == cited["article"]]
    return next((i for i in held if documents[i].meta.get("status") != REPEALED), held[0] if held else None)


def _lawless_choices(
    citations: list[dict[str, Any]], documents: list[Document], cited: set[tuple[str, str]]
) -> dict[str, int]:
    """
    Per article cited with no law (as the question writes it: "artículo 14"), the position of the best-ranked block
    of that number, whose law it is read in (`_best_block`); articles no block has are left out, and so are those
    read in a law the question names (`cited`, `cited_articles`: "o art. 3º da CLT e o art. 2º").
    """
    choices: dict[str, int] = {}
    for citation in citations:
        if any(article == citation.get("article") for _, article in cited):
            continue
        at = _best_block(citation, documents)
        if at is not None:
            choices.setdefault(str(citation.get("text") or citation["article"]), at)
    return choices


def _leading_bases(documents: list[Document], bases: list[int]) -> list[int]:
    """
    The constitutional basis blocks of `bases` that open the ranking, above the article they are the basis of:
    `BasisExpander` puts the basis first for a question that names the constitution ("o que diz a constituição
    sobre hora extra?"), whose answer it is.
    """
    sources = {doc.id: i for i, doc in enumerate(documents)}
    leading = []
    for i in range(len(documents)):
        if i not in bases or sources.get(documents[i].meta.get("expanded_from"), -1) <= i:
            break
        leading.append(i)
    return leading


def _with_bases(order: list[int], documents: list[Document], bases: list[int]) -> list[int]:
    """
    `order` (block positions: each article is quoted at its first) with each constitutional basis block of `bases`
    (`BasisExpander`) right after the first block of the article it is the basis of, whether or not it shares words
    with the question; a basis whose article is not in `order` is left out: it is quoted with its article only.
    """
    sources = {doc.id: i for i, doc in enumerate(documents)}
    out = [i for i in order if i not in bases]
    for i in bases:
        source = sources.get(documents[i].meta.get("expanded_from"))
        key = _article(documents, source) if source is not None else None
        at = next((p for p, j in enumerate(out) if _article(documents, j) == key), None)
        if at is not None:
            out.insert(at + 1, i)
    return out


def _after_quoted(
    at: int, articles: dict[tuple[Any, ...], int], quoted: list[tuple[Any, ...]], bases: list[int]
) -> bool:
    """
    Whether the article at block `at` comes right after one of the `quoted` articles, other bases between them
    (a basis's place, `_with_bases`).
    """
    keys, order = list(articles), list(articles.values())
    previous = order.index(at) - 1
    while previous >= 0 and order[previous] in bases:
        previous -= 1
    return previous >= 0 and keys[previous] in quoted


def _article_sentences(
    key: tuple[Any, ...], documents: list[Document], sentences: dict[int, list[str]]
) -> tuple[list[int], list[int], list[str]]:
    """One article's blocks (its parts in order), the block of each of its sentences, and those sentences."""
    parts = sorted((i for i in sentences if _article(documents, i) == key), key=lambda i: (block_part(documents[i]), i))
    return parts, [i for i in parts for _ in sentences[i]], [sentence for i in parts for sentence in sentences[i]]


def _whole_article(
    key: tuple[Any, ...], documents: list[Document], sentences: dict[int, list[str]]
) -> tuple[list[int], str]:
    """
    One article's blocks and its whole text from them, parts in order, enumerators and long sentences as written; a
    part the context lacks (beyond the fetch's block limit) is marked as a gap, the last ones by `meta["parts"]`.
    """
    parts, _, _ = _article_sentences(key, documents, sentences)
    text, previous, seen = "", 0, set()
    for i in parts:
        part = block_part(documents[i])  # 0: the article whole, in one block
        if part in seen:
            continue  # the same part twice
        seen.add(part)
        body = " ".join(sentence.strip() for sentence in sentences[i])
        if part > previous + 1:
            text += (GAP_MARK if text else GAP_MARK.lstrip()) + body
        else:
            text += (" " if text else "") + body
        previous = part
    total = documents[parts[-1]].meta.get("parts") if parts else None
    if isinstance(total, int) and 0 < previous < total:
        text += GAP_MARK.rstrip()  # its last parts are missing
    return parts, text


def _with_lead_ins(sentences: list[str], positions: list[int]) -> list[int]:
    """
    `positions` plus the sentence introducing a chosen list item that comes without it: "b) El de las trabajadoras
    embarazadas, desde la fecha de inicio del embarazo ..." says what it says only after "Será también nulo el
    despido en los siguientes supuestos:". The lead-in is the nearest sentence before the item that ends with a
    colon and opens a list of the item's kind; none within `MAX_LEAD_IN_DISTANCE` sentences, none added.
    """
    chosen = set(positions)
    for position in positions:
        kind = _item_kind(sentences[position])
        if kind is None:
            continue
        for before in range(position - 1, max(-1, position - 1 - MAX_LEAD_IN_DISTANCE), -1):
            if before in chosen:
                break  # the quote already runs from a sentence before the item
            if (
                _clean(sentences[before], keep_enumerator=True).endswith(":")
                and _item_kind(sentences[before]) != kind
                and _item_kind(sentences[before + 1]) == kind  # it opens a list of that kind ("5." is no "a)")
            ):
                chosen.add(before)
                break
    return sorted(chosen)


def _every_part(documents: list[Document], parts: list[int]) -> bool:
    """Whether one article's blocks at `parts` hold all of it: the article whole, or each part `meta["parts"]` says."""
    held = {block_part(documents[i]) for i in parts}
    total = documents[parts[0]].meta.get("parts") if parts else None
    return 0 in held or (isinstance(total, int) and held >= set(range(1, total + 1)))


def _with_items(sentences: list[str], positions: list[int]) -> list[int]:
    """
    `positions` plus the list items that follow the last chosen sentence when it introduces them ("Los Estatutos de
    autonomía deberán contener:" says nothing without its letters): the enumerated sentences after it, within
    `MAX_SENTENCE_CHARS` of text after the first. A lead-in followed by a chosen item already introduces that item.
    """
    if not positions or not _clean(sentences[positions[-1]]).endswith(":"):
        return positions
    lead = positions[-1]
    # the list is the items of one kind, other than the lead-in's own ("2. ... siguientes: a) ... b) ... 3. ...")
    list_kind = _item_kind(sentences[lead + 1]) if lead + 1 < len(sentences) else None
    if list_kind is None or list_kind == _item_kind(sentences[lead]):
        return positions
    items, added = [], 0
    for following in range(lead + 1, len(sentences)):
        size = len(_clean(sentences[following]))
        if _item_kind(sentences[following]) != list_kind or (items and added + size > MAX_SENTENCE_CHARS):
            break
        items.append(following)
        added += size
    return positions + items


def _item_kind(sentence: str) -> str | None:
    """The kind of list item `sentence` is ("roman", "ordinal", "number", "letter"), None for no item."""
    found = _ITEM_RE.match(sentence.strip())
    return found.lastgroup if found else None


def _quote(sentences: list[str], positions: list[int]) -> str:
    """
    The chosen sentences in their order in the article; a gap between non-adjacent ones is marked. Enumerators are
    left out ("2. ", "a) "), except on the items quoted right after the sentence introducing them ("deberán contener:
    a) La denominación ... b) La delimitación ...", an item's second paragraph between them) or after it and a gap
    ("Constituem justa causa ...: […] b) incontinência de conduta": the letter is the subdivision asked about). A
    repealed provision's bare marker ("(Revogado).") is left out when the quote has other sentences.
    """
    # a provision emptied by a later norm ("a) (revogado);" in the § 6º of CLT art. 477) says nothing the question
    # asked: left out (its place marked as a gap) unless the quote holds nothing else
    positions = [p for p in positions if not repealed_provision(sentences[p])] or positions
    parts, listing = [_clean(sentences[positions[0]])], False
    for previous, position in zip(positions, positions[1:]):
        adjacent = position == previous + 1
        kind = _item_kind(sentences[position])
        # after a gap, an item of the list the lead-in opens (not a later apartado: "4. No obstante ...")
        lead_list = _item_kind(sentences[previous + 1]) if previous + 1 < len(sentences) else None
        opened = parts[-1].endswith(":") and (adjacent or kind == lead_list)
        # a list stays open across an item's second paragraph: "d) ... Cuando el cumplimiento ... e) Para ..."
        listing = (adjacent and listing) or opened
        parts.append(
            (" " if adjacent else GAP_MARK) + _clean(sentences[position], keep_enumerator=listing and kind is not None)
        )
    return "".join(parts)


@component
class ExtractiveAnswer:
    """
    Answers without an LLM by quoting the sentences of the best 1-3 retrieved articles (and of every article the
    question cites) that share most terms with the question, each quote followed by its citation "(ET, art. 38)".

    Sentences (`split_sentences`) are scored by the accent-folded stems they share with the question, each stem
    weighted by its rarity among all the candidate sentences (a term found in one sentence counts more than one
    found in all of them). The articles the question cites are quoted first, all of them, then the retrieval's best
    in-force block (its rank is the engine's relevance judgement; word overlap alone misreads colloquial questions),
    then, for a question comparing concepts ("diferencia entre despido objetivo y disciplinario", `split_concepts`)
    or countries ("vacaciones en España y en Brasil", `country_readings`), the best block of each concept's or
    country's own search (`meta["query_ranks"]`, `MultiQueryRetriever`), then up to `max_articles` in
    all of the blocks whose best sentence scores at least half as much as the best-scoring one.
    Each article is quoted once, whatever the number of its blocks (a long article is stored in parts): its
    `max_sentences` best sentences across its blocks, in text order (an article sharing no term: its opening
    sentences). When no sentence shares a term with the question, the beginning of the first block is quoted.
    A question asking for the whole wording of what it cites ("dame el texto completo del artículo 38", "transcreva o
    art. 7º na íntegra", `asks_for_full_text`) gets the cited articles whole, as written, and nothing else.
    A citation that names a subdivision ("art. 477, § 8º, da CLT", "artículo 38.2 del ET", "inciso XVII do art. 7º")
    gets that subdivision quoted whole (up to `MAX_UNIT_CHARS`; after the sentence that introduces an inciso or a
    letter), across the article's parts, and cited as such: "(CLT, art. 477, § 8º)". So does the constitutional
    basis of a quoted article (`BasisExpander`: `meta["basis_units"]`), quoted right after it: "(CF88, art. 7º, XVI)".

    The reply ends with the `===META===` block `AnswerMetaParser` reads: `USED|<the quoted blocks>` and `DROP|ninguno`
    (with no documents: `USED|` and `DROP|ninguno`, which parses as valid metadata with nothing used).

    The answer's own words (introduction, note, "norma derogada") are Portuguese for a Portuguese question
    (`answer_language`, as for the answer prompt: without evidence, the language most retrieved blocks are written
    in).

    Usage example:

    ```python
    from components.generators.extractive_answer import ExtractiveAnswer
    from components.validators.answer_meta_parser import AnswerMetaParser

    reply = ExtractiveAnswer().run(question="¿Cuántos días de vacaciones tengo?", documents=[art_38, art_14])
    reply["answer"]
    # Estos son los pasajes de la normativa más relevantes para tu pregunta:
    # - «El periodo de vacaciones anuales retribuidas, ... En ningún caso la duración será inferior a treinta
    #   días naturales.» (ET, art. 38)
    # ...
    # ===META===
    # USED|1
    # DROP|ninguno
    AnswerMetaParser().run(replies=reply["replies"], context_documents=[art_38, art_14])["used"]  # [1]
    ```
    """

    def __init__(self, *, max_articles: int = 3, max_sentences: int = 2) -> None:
        """
        Create an ExtractiveAnswer.

        :param max_articles: Most articles quoted (one quote each, from any of its blocks), unless the question cites
            more: every cited article is quoted.
        :param max_sentences: Most sentences quoted from each article (a subdivision the question cites is quoted
            whole).
        :raises ValueError: A parameter is < 1.
        """
        if max_articles < 1 or max_sentences < 1:
            raise ValueError(
                f"`max_articles` and `max_sentences` must be >= 1, got {max_articles} and {max_sentences}."
            )
        self.max_articles = max_articles
        self.max_sentences = max_sentences
        self._citations = CitationGrammar()

    def to_dict(self) -> dict[str, Any]:
        """
        Serializes the component to a dictionary.

        :returns: Dictionary with serialized data.
        """
        return default_to_dict(self, max_articles=self.max_articles, max_sentences=self.max_sentences)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ExtractiveAnswer":
        """
        Deserializes the component from a dictionary.

        :param data: Dictionary to deserialize from.
        :returns: Deserialized component.
        """
        return default_from_dict(cls, data)

    @component.output_types(replies=list[ChatMessage], answer=str)
    def run(
        self,
        question: str,
        documents: list[Document],
        citations: list[dict[str, Any]] | None = None,
        out_of_scope: list[str] | None = None,
        unknown_norms: list[str] | None = None,
        missing_articles: list[str] | None = None,
        history: list[ChatMessage] | None = None,
    ) -> dict[str, Any]:
        """
        Answers from the documents alone.

        :param question: The user's question.
        :param documents: The retrieved parent blocks, best first, numbered from 1 in this order (as given to
            `AnswerMetaParser` as `context_documents`).
        :param citations: The question's citations as `CitationDetector` found them (`law_id`, `law`, `article`,
            `span` in `question`), so the pipeline reads the question with the citation grammar once; `None`
            (nothing connected) reads them from `question` here.
        :param out_of_scope: The branch of law the question is about when the corpus does not hold its statutes
            (`ScopeChecker.out_of_scope`): said on the first line, before the nearest passages.
        :param unknown_norms: What the question cites that the corpus does not hold, norms and case law
            (`CitationDetector.unknown_norms`): said first; `None` (nothing connected) reads it from the question.
        :param missing_articles: The articles the question cites that the direct fetch did not find
            (`LexicalFirstGate.missing`): said first, so the nearest article does not pass for the one asked about.
        :param history: The conversation before `question`: a turn's sentences are matched with it read with the
            questions before it (`components.legal.conversation`), as `DecomposeQuery` searched it ("¿y si soy el
            padre?" after a question on the birth permit: the sentences on birth, not every one with "padre").
        :returns: A dictionary with:
            - `replies`: one assistant message holding `answer` (a drop-in for a chat generator's output).
            - `answer`: the quotes with their citations, the extractive-answer note and the `===META===` block.
        """
        asked = question
        language = answer_language(question, documents)
        texts = EXTRACTIVE_TEXTS[language]
        if citations is None:
            found_citations = self._citations.extract(question)
        else:
            found_citations = _checked_citations(citations, question)
        # norms and case law the question cites that the corpus lacks: said first, so no quote passes for theirs
        if unknown_norms is None:
            unknown_norms = not_in_corpus(found_citations, self._citations.extract_case_law(question))
        missing = still_unknown(_nonblank(unknown_norms), documents)  # an indexed norm the laws table lacks is here
        # a norm whose changes a quoted consolidated text carries ("Lei 13.467/2017", the CLT's notes) is not absent
        missing, amending = amending_norm_entries(missing, documents)
        notice = [neutralize(UNKNOWN_NORMS_NOTES[language].format(norms="; ".join(missing))), ""] if missing else []
        for norm, provisions in amending.items():
            notice += [amending_norm_notice(norm, provisions, language), ""]
        if absent := _nonblank(missing_articles):
            notice += [missing_articles_notice(absent, language), ""]
        # a matter whose statutes the corpus lacks: the quotes are the nearest it has, not that matter's law
        matters = _nonblank(out_of_scope)
        if matters:
            notice += [neutralize(OUT_OF_SCOPE_NOTES[language].format(matters=" / ".join(matters))), ""]
        # a group the question names that a quoted law leaves out of its scope (CLT art. 7, a: domestic employees)
        for line in left_out_notices(documents, language):
            notice += [line, ""]
        # an article cited by its number alone: the best-ranked law's, said when other laws' articles of that number
        # are here too and the fetch did not read it in that one law (`LexicalFirstGate`'s exact hits): "¿qué dice
        # el artículo 14?" is CE, ET, LOLS ... art. 14
        cited = cited_articles(found_citations)
        lawless = _lawless_choices(found_citations, documents, cited)
        for written, at in lawless.items():
            number = documents[at].meta.get("article")
            laws = {d.meta.get("law_id") for d in documents if d.meta.get("article") == number}
            if not cited_exactly(documents[at].meta) and len(laws) > 1:
                chosen = citation(documents[at], language)
                notice += [neutralize(AMBIGUOUS_ARTICLE_NOTES[language].format(article=written, chosen=chosen)), ""]
        # each block split by its own language's abbreviations ("Dec. Legislativo", "Proc." end no Portuguese sentence)
        sentences = {
            i: split_sentences(article_body(doc), lang=doc.meta.get("lang", "es")) for i, doc in enumerate(documents)
        }
        sentences = {i: found for i, found in sentences.items() if found}
        if not sentences:
            answer = "\n".join([*notice, texts["not_found"], META_BLOCK.format(used="")])
            logger.debug("ExtractiveAnswer: no documents with text")
            return {"replies": [ChatMessage.from_assistant(answer, meta={"model": "extractive"})], "answer": answer}

        # only the best-ranked blocks are candidates (retrieval already ordered them); within those, blocks are
        # quoted in retrieval order, in-force norms before repealed ones, when their best sentence matches well
        # (a constitutional basis, `BasisExpander`, is quoted with its article below: it takes no candidate's place)
        # nor does a block of a special regime the question does not name (`LegalReranker`: CLT art. 241 on the
        # railway's overtime, for anyone's overtime), unless there is nothing else
        bases = [i for i in sorted(sentences) if basis_units(documents[i].meta)]
        special = {i for i in sentences if documents[i].meta.get(SPECIAL_REGIME)}
        pool = {
            i: found for i, found in sentences.items()
            if i not in bases and i not in special and i - sum(1 for b in bases if b < i) < 2 * self.max_articles
        } or {i: found for i, found in sentences.items() if i not in bases} or sentences
        # an article the question cites is quoted first; the citation's own words ("Real Decreto 2720/1998", "§ 1º do
        # art. 59") are left out of the sentence scoring, they would favour any block that merely names the law or
        # has a paragraph of that number
        previous = previous_questions(history)
        if previous:
            # the earlier questions read without their citations too: "¿y el 39?" after "¿qué dice el artículo 38
            # del ET?" would otherwise favour every block that mentions an article 38
            previous = _without_citations(previous, self._citations.extract(previous))
        pinned, absent_units = self._pinned(question, found_citations, documents, sentences, language, previous)
        # a subdivision the cited article does not have ("art. 7º, inciso CXX, da CF"): said, before the article
        if absent_units:
            notice += [neutralize(ABSENT_UNIT_NOTES[language].format(units="; ".join(absent_units))), ""]
        question = _without_citations(question, found_citations)
        # its words misspelled as they sound read as the words they sound like, as the retrieval read them: a
        # sentence on "vacaciones" matches "bacaciones"
        question = correct_spelling(question)[0]
        # a conversation's turn is matched as it was searched: read with the questions before it
        reading = read_with_previous(question, previous)
        scores = self._scores(reading, pool, language)
        best = {i: max(doc_scores) for i, doc_scores in scores.items()}
        top = max(best.values())
        if top <= 0 and not asks_for_definition(question):
            # no sentence has a word of the question ("¿pueden expropiarme la casa?"): the statute's words for its
            # expressions, which the retrieval also searched (`TermExpander`), pick the sentences ("privado de sus
            # bienes ... utilidad pública"); what a question asking what something is ("¿qué es un ERTE?") wants is
            # the opening of the best article, where the statute says what it is, not sentences that mention it
            statutory = load_equivalences().terms(reading, language=language)
            if statutory:
                scores = self._scores(" ".join(statutory), pool, language)
                best = {i: max(doc_scores) for i, doc_scores in scores.items()}
                top = max(best.values())
        matching = [i for i in sorted(best) if top > 0 and best[i] >= ARTICLE_MIN_RATIO * top]
        in_force = [i for i in matching if documents[i].meta.get("status") != REPEALED]
        # and so is one cited with no law that the fetch found in one law only (`LexicalFirstGate`'s exact hits)
        # and one cited by its number alone, in the law it is read in (above)
        chosen_keys = {_key(documents[at]) for at in lawless.values()}
        first = [
            i for i in sorted(sentences)
            if _key(documents[i]) in cited or _key(documents[i]) in chosen_keys
            or cited_exactly(documents[i].meta)
        ]
        # the retrieval's best block is quoted whatever its word overlap: its rank weighs meaning, BM25 and the legal
        # rules, while shared words say little about a colloquial question ("se ha muerto mi abuela" shares
        # "muerte" with the survivors' pensions, nothing with the leave article); the overlap picks the others
        lead = [i for i in sorted(pool) if documents[i].meta.get("status") != REPEALED][:1] or [min(pool)]
        # one quote per article (a long article is several blocks, and every cited article must fit), each article
        # at its first block in this order, which stays among the blocks used: the answer's citations follow them
        # a question comparing concepts ("despido objetivo y disciplinario") was also searched once per concept
        # (DecomposeQuery): each concept's best block answers its half, whatever its word overlap
        # a question about two countries' law was searched once per country (`country_readings`): likewise
        concepts = (country_readings(question) or split_concepts(question)) if not found_citations else []
        halves = [
            i for i in sorted(sentences)
            if documents[i].meta.get("status") != REPEALED
            and any(_query_rank(documents[i], concept) == 0 for concept in concepts)
        ] if len(concepts) > 1 else []
        # a turn with no word of its own to match ("¿y en Brasil?": the question before it, of another country's
        # law) is answered by what retrieval found for it, not told that none of its words matched
        wordless = not stems(without_countries(question), language)
        # a basis ranked above its article answers a question naming the constitution: after the cited articles
        leading = _leading_bases(documents, bases)
        ordered = first + leading + (lead if top > 0 or wordless else []) + halves + (in_force or matching)
        ordered = _with_bases(ordered, documents, [i for i in bases if i not in leading])
        articles: dict[tuple[Any, ...], int] = {}
        for i in ordered:
            articles.setdefault(_article(documents, i), i)
        # "dame el texto completo del artículo 38", "transcreva o art. 7º na íntegra": the cited articles, whole
        whole = bool(first) and asks_for_full_text(asked, [int(c["span"][1]) for c in found_citations])
        plans: list[tuple[list[int], str, list[tuple[str, str]]]] = []
        if whole:
            intro = texts["intro"]
            for key in dict.fromkeys(_article(documents, i) for i in first):
                blocks, text = _whole_article(key, documents, sentences)
                plans.append((blocks, text, []))
        elif articles:
            intro = texts["intro"]
            # a constitutional basis comes on top of the `max_articles`, right after its article
            # every article the question cites is quoted, however many ("arts. 34 a 38 ET"); `max_articles` in all
            # when it cites fewer
            cited_count = len({_article(documents, i) for i in first})
            quoted_articles = [key for key, at in articles.items() if at not in bases][
                : max(self.max_articles, cited_count)
            ]
            for key, at in articles.items():
                basis = at in bases and (at in leading or _after_quoted(at, articles, quoted_articles, bases))
                if key not in quoted_articles and not basis:
                    continue
                blocks, article_sentences, positions, units = pinned.get(key) or self._plan(
                    key, documents, sentences, scores, reading, language
                )
                plans.append((list(dict.fromkeys([at, *blocks])), _quote(article_sentences, positions), units))
        else:
            intro, block = texts["no_match"], min(sentences)
            # the beginning of that article when the context holds it (a long article is several blocks, and the
            # best-ranked may be a later one); else the best-ranked block
            block = next((i for i in sorted(sentences) if _article(documents, i) == _article(documents, block)
                          and block_part(documents[i]) <= 1), block)
            if block_part(documents[block]) > 1:  # not the article's beginning: not said to be
                intro = texts["no_match_passage"]
            opening = list(range(min(self.max_sentences, len(sentences[block]))))
            plans = [([block], _quote(sentences[block], opening), [])]

        # more articles cited than the fetch and the budget let through: say how many are quoted
        quoted_cited = sum(1 for blocks, _, _ in plans if blocks[0] in first)
        if len(cited) > quoted_cited + len(absent or []):
            notice += [LEFT_FOR_LENGTH_NOTES[language].format(cited=len(cited), quoted=quoted_cited), ""]
        quotes, quoted = [], set()
        for blocks, quote, units in plans:
            quoted |= set(blocks)
            # quoted text and citation come from the (untrusted) document: never a forged META block or header
            quotes.append(
                QUOTE_LINE.format(
                    quote=neutralize(quote), citation=neutralize(citation(documents[blocks[0]], language, units))
                )
            )
        used = ",".join(str(i + 1) for i in sorted(quoted))
        answer = "\n".join([*notice, intro, "", *quotes, "", texts["note"], META_BLOCK.format(used=used)])
        logger.debug("ExtractiveAnswer: quoted blocks {used}", used=used)
        return {"replies": [ChatMessage.from_assistant(answer, meta={"model": "extractive"})], "answer": answer}

    def _plan(
        self,
        key: tuple[Any, ...],
        documents: list[Document],
        sentences: dict[int, list[str]],
        scores: dict[int, list[float]],
        question: str,
        language: str,
    ) -> tuple[list[int], list[str], list[int], list[tuple[str, str]]]:
        """
        What to quote of one article: its blocks' sentences (parts in order), the `max_sentences` best of them
        (`_best_positions`), the blocks they come from (the first quoted first) and no subdivision.
        """
        parts, owners, article_sentences = _article_sentences(key, documents, sentences)
        for i in parts:
            if i not in scores:  # a block beyond the candidate pool: a cited article, or another part of one
                scores[i] = self._scores(question, {i: sentences[i]}, language)[i]
        flat = [score for i in parts for score in scores[i]]
        best = self._best_positions(flat)
        if not any(score > 0 for score in flat) and _clean(article_sentences[0]).endswith(":"):
            best = [0]  # nothing matched, and the article opens with a list: its lead-in, then its items (below)
        positions = _with_items(article_sentences, _with_lead_ins(article_sentences, best))
        return list(dict.fromkeys(owners[p] for p in positions)), article_sentences, positions, []

    def _pinned(
        self,
        question: str,
        citations: list[dict[str, Any]],
        documents: list[Document],
        sentences: dict[int, list[str]],
        language: str = "es",
        previous: str | None = None,
    ) -> tuple[dict[tuple[Any, Any], tuple[list[int], list[str], list[int], list[tuple[str, str]]]], list[str]]:
        """
        The articles whose citation names a subdivision found in their text: per (law_id, article), the blocks the
        quote comes from (the one opening the unit first), the article's sentences (its parts in order), the
        positions to quote (the introducing sentence, then the unit whole, up to `MAX_UNIT_CHARS`) and the
        subdivision.
        Then the constitutional bases (`BasisExpander`) that no citation pinned: the introducing sentence, then the
        unit's `max_sentences` that share most with the question, read with `previous` (the questions before it) in
        a conversation (none shares a word: its first, which states the right).

        Also the subdivisions cited that their article does not have, as the answer cites them ("CLT, art. 477, §
        99"): the article's every part is in the context (a part it lacks may hold the subdivision), none holds it,
        and no other citation pinned that article.
        """
        listed = listed_spans(citations)
        wanted: list[tuple[tuple[Any, Any], list[tuple[str, str]], bool]] = []  # (article, subdivision, a basis?)
        for cited in citations:
            best = _best_block(cited, documents)
            key = (cited.get("law_id") if best is None else documents[best].meta.get("law_id"), cited.get("article"))
            if not all(key) or tuple(cited["span"]) in listed:  # "arts. 40 y 41": no one unit
                continue
            # a follow-up's subdivision comes with its citation ("e o parágrafo 8º?" after "art. 477 da CLT")
            units = [(str(kind), str(value)) for kind, value in cited.get("units") or pinpoint(question, cited["span"])]
            wanted.append((key, units, False))
        # a constitutional basis: the subdivision stating the right
        wanted += [(_key(doc), basis_units(doc.meta), True) for i, doc in enumerate(documents) if i in sentences]
        pinned: dict[tuple[Any, Any], tuple[list[int], list[str], list[int], list[tuple[str, str]]]] = {}
        absent: list[tuple[tuple[Any, Any], str]] = []
        for key, units, basis in wanted:
            if key in pinned or not units:
                continue
            parts, owners, article_sentences = _article_sentences(key, documents, sentences)
            found = unit_range(article_sentences, units)
            if found is None:
                if not basis and parts and _every_part(documents, parts):
                    cited = documents[parts[0]]
                    absent.append((key, cited_as(cited, unit_label(units, str(cited.meta.get("lang") or language)))))
                continue
            lead, start, end = found
            if basis:
                unit_scores = self._scores(read_with_previous(question, previous), {0: article_sentences[start:end]},
                                           language)[0]
                chosen = [start + p for p in (self._best_positions(unit_scores) if any(unit_scores) else [0])]
            else:
                # the subdivision cited, whole ("art. 37.3 ET" is every permit it lists, not the first); a longer
                # one from its beginning, as far as `MAX_UNIT_CHARS` goes
                chosen, size = [start], len(_clean(article_sentences[start]))
                for position in range(start + 1, end):
                    size += len(_clean(article_sentences[position]))
                    if size > MAX_UNIT_CHARS:
                        break
                    chosen.append(position)
            positions = ([lead] if lead is not None else []) + chosen
            if not basis:
                positions = _with_items(article_sentences, positions)
            blocks = list(dict.fromkeys([owners[start], *(owners[p] for p in positions)]))
            pinned[key] = (blocks, article_sentences, positions, units)
        return pinned, list(dict.fromkeys(label for key, label in absent if key not in pinned))

    @staticmethod
    def _scores(question: str, sentences: dict[int, list[str]], language: str = "es") -> dict[int, list[float]]:
        """Per block, each sentence's score: the summed rarity weight of the question stems it contains."""
        wanted = stems(question, language)
        found = {i: [stems(s, language) & wanted for s in doc_sentences] for i, doc_sentences in sentences.items()}
        frequency = Counter(stem for doc_found in found.values() for stem_set in doc_found for stem in stem_set)
        total = sum(len(doc_sentences) for doc_sentences in sentences.values())
        weight = {stem: math.log(1 + total / count) for stem, count in frequency.items()}
        # fsum: the exact sum whatever the sets' (per-process, hash-seeded) order, so equal sentences tie exactly
        return {i: [math.fsum(weight[s] for s in stem_set) for stem_set in doc_found] for i, doc_found in found.items()}

    def _best_positions(self, scores: list[float]) -> list[int]:
        """The positions of the best-scoring sentences (ties: the earlier), in text order."""
        ranked = sorted((p for p, score in enumerate(scores) if score > 0), key=lambda p: (-scores[p], p))
        if not ranked:  # a cited article sharing no word with the question: its opening sentences
            return list(range(min(self.max_sentences, len(scores))))
        return sorted(ranked[: self.max_sentences])
