# SPDX-License-Identifier: Apache-2.0
"""
The last stage before the answer prompt: fit the numbered context into a token budget.

`ContextCompressor` counts what `AnswerPromptBuilder` will render (the context between the user turn's
delimiters: intro line, block headers, notes, chapters and texts), drops the lowest-scored blocks first (never the
best one), then trims inside a block at sentence boundaries, keeping the sentences that carry the question's terms,
citations, numbers, dates and names first, in their original order.

Token counts: by default an estimate for the bundled Qwen2.5 tokenizer, characters per token per language
(`components.utils.chunking.CHARS_PER_TOKEN`, calibrated with the real tokenizer on the whole corpus with a ~5%
margin, benchmarks/README.md), so a full budget does not overflow the model's window. An exact count is
optional: a Hugging Face `tokenizer.json` (the `tokenizers` library) or a local GGUF (llama.cpp's tokenizer).
"""

import json
import math
import re
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from jinja2 import Template

from components.legal.answer_format import (
    ANSWER_CONTEXT_TEMPLATES,
    CONTEXT_BLOCK_TEMPLATES,
    CONTEXT_SEPARATOR,
    GAP_MARK,
    answer_language,
    article_body,
    context_block,
)
from components.legal.ids import WHOLE_TEXT, cited_exactly
from components.legal.legal_text import split_sentences
from components.legal.terms import asks_for_full_text, stems
from components.utils.chunking import CHARS_PER_TOKEN, DEFAULT_CHARS_PER_TOKEN

logger = logging.getLogger(__name__)
# `context_block` fields by `id(document)`, with the document (one run's layouts)
LaidOut = dict[int, tuple[Document, dict[str, str]]]

DEFAULT_TOKEN_BUDGET = 4000

_CITATION_RE = re.compile(
    r"\b(?:art(?:[íi]culo|igo)?s?\.?\s*\d+|(?:ley|lei|real\s+decreto(?:[\s-]+(?:ley|legislativo))?|decreto(?:-lei)?"
    r"|orden)\s+(?:org[áa]nica\s+|complementar\s+)?(?:n[.ºo°]+\s*)?\d+(?:[./]\d+)*|disposici[óo]n\s+"
    r"(?:adicional|transitoria|final|derogatoria)|constituci[óo]n|estatuto\s+de\s+los\s+trabajadores)",
    re.IGNORECASE,
)
_MONTHS = (
    "enero|febrero|marzo|abril|mayo|junio|julio|agosto|septiembre|setiembre|octubre|noviembre|diciembre|"
    "janeiro|fevereiro|março|maio|junho|julho|setembro|outubro|novembro|dezembro"
)
_DATE_RE = re.compile(
    rf"\b\d{{1,2}}\s+de\s+(?:{_MONTHS})\b|\b\d{{1,2}}[/.-]\d{{1,2}}[/.-]\d{{2,4}}\b|\b(?:1[89]|20)\d{{2}}\b",
    re.IGNORECASE,
)
_UPPER = "A-ZÁÉÍÓÚÑÇÂÊÔÃÕÜ"
_LOWER = "a-záéíóúñçâêôãõü"
# Two or more capitalized words ("Tesorería General de la Seguridad Social", "D. Juan García"): names of parties,
# bodies and institutions.
_CONNECTOR = r"(?:(?:de|del|da|do|dos|das|y|e)\s+(?:(?:la|los|las|el)\s+)?)?"
_NAME_RE = re.compile(rf"[{_UPPER}][{_LOWER}]+\.?(?:\s+{_CONNECTOR}[{_UPPER}][{_LOWER}]+)+")


class EstimateCounter:
    """Tokens estimated from characters per token, per language (`CHARS_PER_TOKEN`)."""

    name = "estimate"

    def __init__(self, chars_per_token: float | None = None) -> None:
        self.chars_per_token = chars_per_token

    def __call__(self, text: str, lang: str = "es") -> int:
        ratio = self.chars_per_token or CHARS_PER_TOKEN.get(lang, DEFAULT_CHARS_PER_TOKEN)
        return math.ceil(len(text) / ratio) if text else 0


class HFTokenizerCounter:
    """Exact counts with a Hugging Face `tokenizers` tokenizer (a `tokenizer.json` file or a folder holding one)."""

    name = "tokenizer"

    def __init__(self, path: str) -> None:
        from tokenizers import Tokenizer  # noqa: PLC0415 - only the exact counter needs it

        file = Path(path).expanduser()
        file = file / "tokenizer.json" if file.is_dir() else file
        self._tokenizer = Tokenizer.from_file(str(file))

    def __call__(self, text: str, lang: str = "es") -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids) if text else 0


class LlamaTokenizerCounter:
    """Exact counts with the tokenizer of a local GGUF, through llama.cpp's `/tokenize` on the loopback listener."""

    name = "llama"

    def __init__(self, model: str) -> None:
        from components.generators.llm_backends import LocalLlamaChatGenerator  # noqa: PLC0415

        generator = LocalLlamaChatGenerator(model=model, n_threads=1)
        generator.warm_up()
        loaded = getattr(generator, "_loaded", None)
        address = getattr(getattr(loaded, "server", None), "listening_address", None)
        if not address:
            raise RuntimeError(f"The llama.cpp server of {model!r} has no HTTP listener to tokenize with.")
        self._url = f"{str(address).rstrip('/')}/tokenize"

    def __call__(self, text: str, lang: str = "es") -> int:
        if not text:
            return 0
        request = urllib.request.Request(
            self._url, data=json.dumps({"content": text}).encode(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - loopback URL built above
            return len(json.loads(response.read())["tokens"])


def make_counter(tokenizer: str | None, chars_per_token: float | None) -> Callable[[str, str], int]:
    """
    The token counter: the estimate (`tokenizer=None`), a `tokenizer.json` / folder, or a GGUF (path or registry
    name of a local LLM).

    :raises ValueError: `tokenizer` is neither.
    """
    if tokenizer is None:
        return EstimateCounter(chars_per_token)
    path = Path(tokenizer).expanduser()
    if path.suffix == ".json" or (path.is_dir() and (path / "tokenizer.json").is_file()):
        return HFTokenizerCounter(tokenizer)
    from components.utils.models import REGISTRY  # noqa: PLC0415

    if path.suffix == ".gguf" or tokenizer in REGISTRY:
        return LlamaTokenizerCounter(tokenizer)
    raise ValueError(
        f"`tokenizer` must be a tokenizer.json file, a folder holding one, a GGUF file or a local LLM name "
        f"({', '.join(sorted(REGISTRY))}); got {tokenizer!r}."
    )


def _lang(document: Document) -> str:
    return str(document.meta.get("lang") or "es")


def _signals(sentence: str) -> int:
    """How many kinds of must-keep facts a sentence carries: citation, number, date, name."""
    number = bool(re.search(r"\d", sentence)) or any(stem.isdigit() for stem in stems(sentence))
    return sum(
        (
            bool(_CITATION_RE.search(sentence)),
            number,
            bool(_DATE_RE.search(sentence)),
            bool(_NAME_RE.search(sentence[1:])),  # a capital at the start of a sentence is no name
        )
    )


@component
class ContextCompressor:
    """
    Fits the retrieved blocks into a token budget before `AnswerPromptBuilder`, keeping citations and facts.

    The budget covers the context message the prompt builder renders (`ANSWER_CONTEXT_TEMPLATES`, in the answer's
    language: intro line, and for every block its `[n] Law > Artículo N. Title` header, derogation note, chapter,
    summary and text). When the blocks do not fit:

    1. The lowest-scored blocks are dropped first, never the best one. Ties (the blocks of the articles a question
       cites) drop an article's later blocks before another article's first: every cited article keeps a block.
    2. The block at the edge of the budget (and the best block when it alone exceeds it) is trimmed instead of
       dropped when at least `min_trimmed_tokens` of its text fit: its sentences (`legal_text.split_sentences`)
       are ranked by the question's terms they contain, then by the citations, numbers, dates and names they
       carry, then the first sentence; as many as fit are kept, in their original order, gaps marked "[…]".

    A question that asks for the text of the articles it cites ("transcribe el artículo 38", `asks_for_full_text`;
    "el artículo 48 del ET completo", read with the citations: their blocks carry `meta["whole_text"]`, set by
    `LexicalFirstGate`) keeps their blocks (`cited_exactly`) whole, the budget stretched to hold them: the answer
    quotes them as written without calling the model (`AnswerGenerator`).

    Kept blocks stay in their input order with their ids and meta; a trimmed block gets `meta["compressed"] =
    True` and `meta["original_length"]` (characters). The header line of a block ("Artículo 38. Vacaciones
    anuales.") is kept. `stats` reports tokens before and after, the dropped and trimmed ids.

    Usage example:

    ```python
    from components.builders.answer_prompt import AnswerPromptBuilder
    from components.builders.context_compressor import ContextCompressor

    compressed = ContextCompressor(token_budget=4000).run(documents=blocks, query="¿Cuántos días de vacaciones?")
    compressed["stats"]  # {'tokens_before': 9120, 'tokens_after': 3985, 'dropped_ids': [...], ...}
    prompt = AnswerPromptBuilder().run(question="¿Cuántos días de vacaciones?", documents=compressed["documents"])
    ```
    """

    def __init__(
        self,
        *,
        token_budget: int = DEFAULT_TOKEN_BUDGET,
        tokenizer: str | None = None,
        chars_per_token: float | None = None,
        min_trimmed_tokens: int = 60,
        enabled: bool = True,
    ) -> None:
        """
        Create a ContextCompressor.

        :param token_budget: Tokens allowed to the rendered context message.
        :param tokenizer: `None` = the calibrated estimate; or an exact tokenizer: a `tokenizer.json` file (or a
            folder holding one), a GGUF file, or a local LLM name (`qwen2.5-coder-1.5b`, counted by llama.cpp).
        :param chars_per_token: Characters per token of the estimate for every language; `None` = the calibrated
            per-language values of `CHARS_PER_TOKEN`.
        :param min_trimmed_tokens: Least text tokens a trimmed block keeps; a block that would keep fewer is
            dropped instead (except the best block, which is always kept).
        :param enabled: Feature flag: when `False`, documents pass through unchanged (overridable per run).
        :raises ValueError: `token_budget` < 100, `chars_per_token` <= 0 or `min_trimmed_tokens` < 1.
        """
        if token_budget < 100:
            raise ValueError(f"`token_budget` must be >= 100 tokens, got {token_budget}.")
        if chars_per_token is not None and chars_per_token <= 0:
            raise ValueError(f"`chars_per_token` must be None or > 0, got {chars_per_token}.")
        if min_trimmed_tokens < 1:
            raise ValueError(f"`min_trimmed_tokens` must be >= 1, got {min_trimmed_tokens}.")
        self.token_budget = token_budget
        self.tokenizer = tokenizer
        self.chars_per_token = chars_per_token
        self.min_trimmed_tokens = min_trimmed_tokens
        self.enabled = enabled
        self._counter: Callable[[str, str], int] | None = None
        self._templates = {language: Template(text) for language, text in ANSWER_CONTEXT_TEMPLATES.items()}
        self._block_templates = {language: Template(text) for language, text in CONTEXT_BLOCK_TEMPLATES.items()}
        if tokenizer is None:
            self._counter = EstimateCounter(chars_per_token)

    def to_dict(self) -> dict[str, Any]:
        """
        Serializes the component to a dictionary.

        :returns: Dictionary with serialized data.
        """
        return default_to_dict(
            self,
            token_budget=self.token_budget,
            tokenizer=self.tokenizer,
            chars_per_token=self.chars_per_token,
            min_trimmed_tokens=self.min_trimmed_tokens,
            enabled=self.enabled,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ContextCompressor":
        """
        Deserializes the component from a dictionary.

        :param data: Dictionary to deserialize from.
        :returns: Deserialized component.
        """
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """
        Loads the exact tokenizer, if one is configured; idempotent.

        :raises ValueError: `tokenizer` names nothing usable.
        :raises RuntimeError: The GGUF cannot be loaded.
        """
        if self._counter is None:
            self._counter = make_counter(self.tokenizer, self.chars_per_token)

    def count_tokens(self, text: str, lang: str = "es") -> int:
        """Tokens of `text` with the configured counter."""
        self.warm_up()
        assert self._counter is not None
        return self._counter(text, lang)

    def render(self, documents: list[Document], fields: LaidOut | None = None, language: str = "es") -> str:
        """
        The context message `AnswerPromptBuilder` renders for these blocks (what the budget counts).

        :param fields: `context_block` of documents already laid out, by `id(document)` (computed when missing).
        :param language: The answer's language (`answer_language`): the template whose words are counted.
        """
        fields = {} if fields is None else fields
        template = self._templates.get(language, self._templates["es"])
        return template.render(blocks=[_fields(doc, fields) for doc in documents])

    @component.output_types(documents=list[Document], stats=dict[str, Any])
    def run(
        self,
        documents: list[Document],
        query: str | None = None,
        token_budget: int | None = None,
        enabled: bool | None = None,
    ) -> dict[str, Any]:
        """
        Fits the blocks into the budget.

        :param documents: The context blocks (parent blocks), in the order the prompt will number them; `score`
            decides what is dropped first. Blocks without text are left out (the prompt builder ignores them).
        :param query: The user's question: its terms decide which sentences a trimmed block keeps.
        :param token_budget: Overrides `token_budget` for this run.
        :param enabled: Overrides the `enabled` flag for this run.
        :returns: A dictionary with:
            - `documents`: the kept blocks, in input order (trimmed ones with `meta["compressed"]`).
            - `stats`: `enabled`, `token_budget`, `counter`, `language` (the answer's, whose words are counted),
              `tokens_before`, `tokens_after`, `documents_in`, `documents_out`, `dropped_ids`, `trimmed_ids`.
        :raises TypeError: `documents` is not a list of Documents.
        :raises ValueError: `token_budget` < 100.
        """
        if not isinstance(documents, list) or any(not isinstance(doc, Document) for doc in documents):
            raise TypeError("ContextCompressor expects `documents` to be a list of Documents.")
        budget = self.token_budget if token_budget is None else token_budget
        if budget < 100:
            raise ValueError(f"`token_budget` must be >= 100 tokens, got {budget}.")
        active = self.enabled if enabled is None else enabled
        self.warm_up()
        stats: dict[str, Any] = {
            "enabled": active,
            "token_budget": budget,
            "counter": getattr(self._counter, "name", type(self._counter).__name__),
            "documents_in": len(documents),
            "dropped_ids": [],
            "trimmed_ids": [],
        }
        blocks: list[Document] = []  # the blocks the prompt renders: those with text
        empty: list[Document] = []
        for doc in documents:
            (blocks if (doc.content or "").strip() else empty).append(doc)
        language = answer_language(query or "", blocks)  # read from the blocks the prompt renders, as its builder
        stats["language"] = language
        if not active:
            tokens = self._count_context(blocks, language=language)
            return {"documents": documents, "stats": {**stats, "tokens_before": tokens, "tokens_after": tokens,
                                                      "documents_out": len(documents)}}
        stats["dropped_ids"] = [doc.id for doc in empty]
        intro = self.count_tokens(self.render([], language=language).split("\n\n")[0] + "\n\n")
        fields: LaidOut = {}  # each block laid out once per run (neutralizing its text is not free)
        costs = [
            self._block_tokens(doc, number, fields=fields, language=language) for number, doc in enumerate(blocks, 1)
        ]
        stats["tokens_before"] = intro + sum(costs)
        # "transcribe el artículo 38": the answer quotes the cited articles whole, without a model (AnswerGenerator),
        # so the budget stretches to hold their blocks untrimmed
        whole = {i for i, doc in enumerate(blocks) if cited_exactly(doc.meta)}
        asked = any(blocks[i].meta.get(WHOLE_TEXT) for i in whole) or asks_for_full_text(query or "")
        whole = whole if asked else set()
        if whole:
            budget = stats["token_budget"] = max(budget, intro + sum(costs[i] for i in whole))
        kept = self._fit(blocks, costs, budget - intro, query or "", stats, fields, language, first=whole)
        stats["tokens_after"] = self._count_context(kept, fields, language)
        stats["documents_out"] = len(kept)
        if stats["dropped_ids"] or stats["trimmed_ids"]:
            logger.debug(
                "ContextCompressor: {before} -> {after} tokens, {dropped} block(s) dropped, {trimmed} trimmed",
                before=stats["tokens_before"],
                after=stats["tokens_after"],
                dropped=len(stats["dropped_ids"]),
                trimmed=len(stats["trimmed_ids"]),
            )
        return {"documents": kept, "stats": stats}

    def _count_context(
        self, blocks: list[Document], fields: LaidOut | None = None, language: str = "es"
    ) -> int:
        """Tokens of the context rendered for `blocks` (blocks with text), 0 for none."""
        return self.count_tokens(self.render(blocks, fields, language)) if blocks else 0

    def _block_tokens(
        self,
        document: Document,
        number: int,
        text: str | None = None,
        fields: LaidOut | None = None,
        language: str = "es",
    ) -> int:
        """Tokens of one block as the context renders it (`CONTEXT_BLOCK_TEMPLATES`) with its separator."""
        block = _fields(document, {} if fields is None else fields)
        if text is not None:  # a copy: the run's layout of the block stays as it is
            block = {**block, "text": text}
        template = self._block_templates.get(language, self._block_templates["es"])
        return self.count_tokens(template.render(block=block, number=number) + CONTEXT_SEPARATOR, _lang(document))

    def _fit(
        self,
        blocks: list[Document],
        costs: list[int],
        budget: int,
        query: str,
        stats: dict[str, Any],
        fields: LaidOut,
        language: str = "es",
        first: set[int] | None = None,
    ) -> list[Document]:
        """
        Drops the lowest-scored blocks, trims the one at the budget's edge; input order kept. The blocks at `first`
        are kept before any other.
        """
        if sum(costs) <= budget:
            return blocks
        # among blocks of equal score (the cited articles' blocks, all fetched at 1.0), each article's first block
        # before any article's second: "arts. 34, 37 y 38 ET" keeps art. 38 when arts. 34 and 37 fill the budget
        seen: Counter[tuple[Any, Any]] = Counter()
        nth = []
        for doc in blocks:
            article = (doc.meta.get("law_id"), doc.meta.get("article"))
            nth.append(seen[article])
            seen[article] += 1
        order = sorted(
            range(len(blocks)),
            key=lambda i: (
                i not in (first or ()), -(blocks[i].score if blocks[i].score is not None else float("-inf")), nth[i], i
            ),
        )
        kept: dict[int, Document] = {}
        used = 0
        for rank, i in enumerate(order):
            doc = blocks[i]
            if used + costs[i] <= budget:
                kept[i] = doc
                used += costs[i]
                continue
            header = self._block_tokens(doc, i + 1, text="", fields=fields, language=language)
            room = budget - used - header
            if room >= self.min_trimmed_tokens or rank == 0:
                trimmed = self._trim(doc, max(room, 1), query, language)
                kept[i] = trimmed
                used += self._block_tokens(trimmed, i + 1, fields=fields, language=language)
                stats["trimmed_ids"].append(doc.id)
            else:
                stats["dropped_ids"].append(doc.id)
        return [kept[i] for i in sorted(kept)]

    def _trim(self, document: Document, room: int, query: str, language: str = "es") -> Document:
        """
        The block with only the sentences that fit in `room` text tokens, most useful first; the question's terms
        are read with the stopwords of its `language`, the block's sentences with those of the block's.
        """
        lang = _lang(document)
        content = document.content or ""
        body = article_body(document)
        heading = content.strip().partition("\n")[0].strip() if body != content.strip() else ""
        sentences = split_sentences(body, lang=lang) or [body]
        query_stems = stems(query, language)
        ranked = sorted(
            range(len(sentences)),
            key=lambda i: (
                -len(query_stems & stems(sentences[i], lang)),
                -_signals(sentences[i]),
                i != 0,
                i,
            ),
        )
        chosen: list[int] = []
        used = 0
        for i in ranked:
            cost = self.count_tokens(sentences[i], lang) + 2  # separator / gap mark
            if used + cost <= room:
                chosen.append(i)
                used += cost
        if not chosen:  # not even one sentence fits: the best one, cut at a word boundary
            best = sentences[ranked[0]]
            ratio = self._counter.chars_per_token if isinstance(self._counter, EstimateCounter) else None
            chars = int(room * (ratio or CHARS_PER_TOKEN.get(lang, DEFAULT_CHARS_PER_TOKEN)))
            cut = best[:chars].rsplit(" ", 1)[0] if len(best) > chars else best
            text = f"{cut}…" if cut != best else cut
            while len(text) > 1 and self.count_tokens(text, lang) > room:
                text = text[: int(len(text) * 0.9)].rstrip() + "…"
        else:
            text = _join(body, sentences, sorted(chosen))
        new_content = f"{heading}\n\n{text}" if heading else text
        meta = {**document.meta, "compressed": True, "original_length": len(content)}
        return replace(document, content=new_content, meta=meta)


def _fields(document: Document, laid_out: LaidOut) -> dict[str, str]:
    """
    `context_block(document)`, computed once per document object and kept in `laid_out` (one run's), with the
    document itself: a kept object's `id` cannot be reused by another during the run.
    """
    key = id(document)
    if key not in laid_out:
        laid_out[key] = (document, context_block(document))
    return laid_out[key][1]


def _join(body: str, sentences: list[str], positions: list[int]) -> str:
    """Kept sentences in order: the original whitespace between neighbours, `GAP_MARK` where some were left out."""
    spans: list[tuple[int, int] | None] = []
    cursor = 0
    for sentence in sentences:
        start = body.find(sentence, cursor)
        if start < 0:
            spans.append(None)
            continue
        spans.append((start, start + len(sentence)))
        cursor = start + len(sentence)
    parts = [sentences[positions[0]]]
    if positions[0] != 0:
        parts.insert(0, GAP_MARK.lstrip())
    for previous, position in zip(positions, positions[1:]):
        if position == previous + 1:
            before, after = spans[previous], spans[position]
            gap = body[before[1] : after[0]] if before and after else " "
            parts.append((gap if gap.strip() == "" else " ") + sentences[position])
        else:
            parts.append(GAP_MARK + sentences[position])
    if positions[-1] != len(sentences) - 1:
        parts.append(GAP_MARK.rstrip())
    return "".join(parts)
