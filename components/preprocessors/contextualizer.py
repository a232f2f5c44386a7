# SPDX-License-Identifier: Apache-2.0
"""
Contextual retrieval at indexing: a short context line for each chunk, stored in `meta["context"]`, embedded with
the chunk by the sparse and dense embedders (`meta_fields_to_embed: [context]`), so a 300-character child that
says "el periodo ... será de treinta días" is also found as ET > Artículo 38. Vacaciones anuales.

Modes:

- `breadcrumb` (deterministic, free): law short name > heading path > article heading, e.g.
  "ET > Título I > Capítulo II > Sección 5.ª > Artículo 38. Vacaciones anuales".
- `llm`: the breadcrumb followed by one sentence an LLM writes to situate the child in its parent block
  (Anthropic's "contextual retrieval"). Sentences are cached on disk by a hash of the prompt version, the model and
  the texts, so re-indexing an unchanged corpus makes no LLM call. A chunk whose call fails (no LLM, timeout, empty
  or unusable reply) keeps the breadcrumb; those fallbacks are counted in `stats`.
- `none`: documents pass through unchanged.
"""

import hashlib
import json
import re
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.dataclasses import ChatMessage
from tqdm import tqdm

from components.generators.llm_backends import (
    chat_text,
    generator_to_dict,
    strip_fences,
    warm_up_generator,
    with_deserialized_generator,
)
from components.legal.answer_format import article_heading
from components.utils.chunking import CHARS_PER_TOKEN

logger = logging.getLogger(__name__)

MODES = ("none", "breadcrumb", "llm")
HEADING_STYLES = ("label", "full")
BREADCRUMB_SEPARATOR = " > "
DEFAULT_CACHE_PATH = "~/.cache/lexhay/contexts.jsonl"
# Bump when CONTEXT_SYSTEM_PROMPT / CONTEXT_USER_TEMPLATE change: cached sentences of other versions are not reused.
PROMPT_VERSION = "ctx-v1"
MIN_SENTENCE_CHARS = 15
# Generated chunks timed before the run's duration estimate is logged.
ESTIMATE_AFTER = 3

CONTEXT_SYSTEM_PROMPT = """\
Eres un documentalista jurídico. Recibes un artículo de una norma y un fragmento de ese artículo. Escribe una \
sola frase breve (como máximo 30 palabras), en el idioma del artículo, que sitúe el fragmento dentro del \
artículo para mejorar su búsqueda: qué regula el artículo y qué aspecto concreto trata el fragmento. Usa los \
términos jurídicos del texto. Responde solo con la frase: sin comillas, sin introducción y sin copiar el fragmento."""

# The parent comes first and the child last, so consecutive children of one parent share the prompt prefix that a
# llama.cpp server keeps in its KV cache.
CONTEXT_USER_TEMPLATE = """\
<articulo>
{heading}
{parent}
</articulo>

<fragmento>
{child}
</fragmento>"""

# "TÍTULO I. De la relación ...", "Sección 5.ª Tiempo de trabajo", "Capítulo IV: Das Funções ...", "CAPÍTULO PRIMERO."
_HEADING_LABEL = re.compile(
    r"^(?P<kind>t[íi]tulo|cap[íi]tulo|secci[óo]n|subsecci[óo]n|se[çc][ãa]o|subse[çc][ãa]o|libro|livro|parte)\s+"
    r"(?P<number>[IVXLCDM]+\b|\d+(?:\.?\s?[ºª])?|[^\s.:]+)",
    re.IGNORECASE,
)
_ROMAN = re.compile(r"^[IVXLCDM]+$")


def heading_label(heading: str) -> str:
    """
    The short label of a heading: "TÍTULO I. De la relación individual de trabajo" -> "Título I",
    "Sección 5.ª Tiempo de trabajo" -> "Sección 5.ª", "CAPÍTULO PRIMERO. Principios generales" -> "Capítulo primero".

    Headings that are not a numbered division ("Disposiciones transitorias") are returned whole.
    """
    text = " ".join(heading.split())
    match = _HEADING_LABEL.match(text)
    if not match:
        return text
    number = match.group("number")
    number = number if _ROMAN.match(number) or number[0].isdigit() else number.lower()
    return f"{match.group('kind').capitalize()} {number}"


def breadcrumb(document: Document, heading_style: str = "label") -> str:
    """
    The deterministic context of a chunk: law short name > headings > article heading.

    "ET > Título I > Capítulo II > Sección 5.ª > Artículo 38. Vacaciones anuales" (`heading_style="label"`), or with
    the headings' full text (`"full"`: "... > CAPÍTULO II. Contenido del contrato de trabajo > ..."). Missing parts
    are left out; a document without law, headings or article gives "".

    :param document: A chunk carrying lexhay's meta (`law_short`, `heading_path`, `article_label` / `article`,
        `article_title`).
    :param heading_style: `label` or `full`.
    """
    meta = document.meta
    parts = [str(meta.get("law_short") or meta.get("law_title") or "").strip()]
    headings = [str(h) for h in meta.get("heading_path") or [] if str(h).strip()]
    parts.extend(heading_label(h) if heading_style == "label" else " ".join(h.split()) for h in headings)
    parts.append(article_heading(document))
    return BREADCRUMB_SEPARATOR.join(part for part in parts if part)


def _clean_sentence(reply: str, max_chars: int) -> str:
    """The reply as one line: fences, quotes and a leading label removed, cut at a word boundary."""
    text = " ".join(strip_fences(reply).split()).strip().strip("\"'«»“”").strip()
    text = re.sub(r"^(?:contexto|context|frase)\s*:\s*", "", text, flags=re.IGNORECASE)
    if len(text) > max_chars:
        cut = text[:max_chars].rsplit(" ", 1)[0].rstrip(",;:")
        text = cut if cut else text[:max_chars]
    return text


def _generator_name(generator: Any) -> str:
    """The model name of a chat generator, part of the cache key (two models never share cached sentences)."""
    return str(getattr(generator, "model", None) or type(generator).__name__)


class ContextCache:
    """
    LLM context sentences on disk: a JSON-lines file of `{"key": ..., "context": ...}`, appended as they are made.

    An interrupted run keeps what it generated; a corrupt line is skipped with a warning.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        self._entries: dict[str, str] | None = None

    @staticmethod
    def key(*, model: str, heading: str, parent: str, child: str) -> str:
        """Hash of everything the sentence depends on: prompt version, model name and the texts."""
        joined = "\x1f".join([PROMPT_VERSION, model, heading, parent, child])
        return hashlib.sha256(joined.encode("utf-8")).hexdigest()

    def _load(self) -> dict[str, str]:
        if self._entries is None:
            self._entries = {}
            if self.path.is_file():
                with self.path.open(encoding="utf-8") as fh:
                    for number, line in enumerate(fh, start=1):
                        try:
                            entry = json.loads(line)
                            self._entries[str(entry["key"])] = str(entry["context"])
                        except (ValueError, KeyError, TypeError):
                            logger.warning(
                                "Context cache {path}:{line} is not valid; skipped", path=self.path, line=number
                            )
        return self._entries

    def get(self, key: str) -> str | None:
        """The cached sentence of `key`, or `None`."""
        return self._load().get(key)

    def put(self, key: str, context: str) -> None:
        """Stores a sentence (in memory and appended to the file)."""
        entries = self._load()
        if entries.get(key) == context:
            return
        entries[key] = context
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"key": key, "context": context}, ensure_ascii=False) + "\n")

    def __len__(self) -> int:
        return len(self._load())


@component
class Contextualizer:
    """
    Adds a short context line to each chunk at indexing time, in `meta["context"]`.

    Place it after `ChildSplitter` and before the embedders, and add `context` to their `meta_fields_to_embed`:
    the BM25 and dense vectors are then computed on `context + chunk`, while the stored content stays the chunk.

    - `breadcrumb` mode: "ET > Título I > Capítulo II > Sección 5.ª > Artículo 38. Vacaciones anuales" for every
      chunk (see `breadcrumb`); no model needed.
    - `llm` mode: children get the breadcrumb plus one sentence, written by the chat generator from the parent
      block and the child, that situates the child in its article. Parent blocks get the breadcrumb (they are the
      article). Sentences are cached in `cache_path` (JSON lines), keyed by a hash of the prompt version, the model
      name and the texts: re-indexing costs nothing. A child whose call fails gets the breadcrumb (counted in
      `stats["llm_fallbacks"]`). Before a long run the number of chunks to generate is logged, and after the first
      few an estimate of the remaining time at the measured speed; a progress bar follows the run.
    - `none` (or `enabled=False`): documents pass through unchanged.

    Usage example:

    ```python
    from components.preprocessors.child_splitter import ChildSplitter
    from components.preprocessors.contextualizer import Contextualizer

    chunks = ChildSplitter().run(documents=parent_blocks)["documents"]
    result = Contextualizer(mode="breadcrumb").run(documents=chunks)
    result["documents"][1].meta["context"]
    # 'ET > Título I > Capítulo II > Sección 5.ª > Artículo 38. Vacaciones anuales'
    result["stats"]                          # {'mode': 'breadcrumb', 'contextualized': ..., 'llm_fallbacks': 0, ...}
    ```
    """

    def __init__(  # noqa: PLR0913 - every setting is a documented init parameter
        self,
        *,
        mode: str = "breadcrumb",
        chat_generator: Any | None = None,
        heading_style: str = "label",
        include_parents: bool = True,
        cache_path: str | None = None,
        max_context_chars: int = 300,
        max_tokens: int = 80,
        timeout: float | None = None,
        progress_bar: bool = True,
        enabled: bool = True,
    ) -> None:
        """
        Create a Contextualizer.

        :param mode: `none`, `breadcrumb` or `llm`.
        :param chat_generator: The Haystack chat generator of the `llm` mode; with `None` that mode gives every
            chunk its breadcrumb (and counts the fallbacks).
        :param heading_style: How headings appear in the breadcrumb: `label` ("Título I > Capítulo II") or `full`
            ("TÍTULO I. De la relación individual de trabajo > ...").
        :param include_parents: Also give parent blocks (and any chunk that is not a child) their breadcrumb.
        :param cache_path: JSON-lines file of generated sentences; `None` = `~/.cache/lexhay/contexts.jsonl`.
        :param max_context_chars: Longest LLM sentence kept (cut at a word boundary).
        :param max_tokens: Token limit of one LLM reply.
        :param timeout: Seconds allowed to one LLM call, whatever the generator; `None` = the generator's own.
        :param progress_bar: Show a progress bar during LLM generation.
        :param enabled: Feature flag: when `False`, documents pass through unchanged (overridable per run).
        :raises ValueError: An unknown `mode` or `heading_style`, `max_context_chars` < 40, `max_tokens` < 8 or
            `timeout` <= 0.
        """
        if mode not in MODES:
            raise ValueError(f"`mode` must be one of {MODES}, got {mode!r}.")
        if heading_style not in HEADING_STYLES:
            raise ValueError(f"`heading_style` must be one of {HEADING_STYLES}, got {heading_style!r}.")
        if max_context_chars < 40:
            raise ValueError(f"`max_context_chars` must be >= 40, got {max_context_chars}.")
        if max_tokens < 8:
            raise ValueError(f"`max_tokens` must be >= 8, got {max_tokens}.")
        if timeout is not None and timeout <= 0:
            raise ValueError(f"`timeout` must be None or a positive number of seconds, got {timeout}.")
        self.mode = mode
        self.chat_generator = chat_generator
        self.heading_style = heading_style
        self.include_parents = include_parents
        self.cache_path = cache_path
        self.max_context_chars = max_context_chars
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.progress_bar = progress_bar
        self.enabled = enabled
        self._cache = ContextCache(cache_path or DEFAULT_CACHE_PATH)

    def to_dict(self) -> dict[str, Any]:
        """
        Serializes the component to a dictionary.

        :returns: Dictionary with serialized data.
        """
        return default_to_dict(
            self,
            mode=self.mode,
            chat_generator=generator_to_dict(self.chat_generator),
            heading_style=self.heading_style,
            include_parents=self.include_parents,
            cache_path=self.cache_path,
            max_context_chars=self.max_context_chars,
            max_tokens=self.max_tokens,
            timeout=self.timeout,
            progress_bar=self.progress_bar,
            enabled=self.enabled,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Contextualizer":
        """
        Deserializes the component from a dictionary.

        :param data: Dictionary to deserialize from.
        :returns: Deserialized component.
        """
        return default_from_dict(cls, with_deserialized_generator(data))

    def warm_up(self) -> None:
        """
        Warms up the chat generator of the `llm` mode (loads a local model); idempotent.

        :raises RuntimeError: The generator cannot start. `run` never raises for that: it falls back.
        """
        if self.mode == "llm":
            warm_up_generator(self.chat_generator)

    def pending(self, documents: list[Document]) -> dict[str, int]:
        """
        What an `llm` run over `documents` would do: children to contextualize, how many are cached, how many
        need an LLM call.

        :param documents: Parent blocks and their children, as `ChildSplitter` outputs them.
        :returns: `{"children": ..., "cached": ..., "to_generate": ...}`.
        """
        parents = {doc.id: doc for doc in documents if doc.meta.get("level") != "child"}
        model = _generator_name(self.chat_generator)
        children = cached = 0
        for doc in documents:
            parent = parents.get(doc.meta.get("parent_id")) if doc.meta.get("level") == "child" else None
            if parent is None:
                continue
            children += 1
            cached += self._cache.get(self._key(doc, parent, model)) is not None
        return {"children": children, "cached": cached, "to_generate": children - cached}

    @component.output_types(documents=list[Document], stats=dict[str, Any])
    def run(
        self, documents: list[Document], enabled: bool | None = None, mode: str | None = None
    ) -> dict[str, Any]:
        """
        Adds `meta["context"]` to the chunks.

        :param documents: Chunks (parent blocks and children from `ChildSplitter`). A child's parent is found
            among `documents` by `meta["parent_id"]`; a child whose parent is not there gets its breadcrumb.
        :param enabled: Overrides the `enabled` flag for this run.
        :param mode: Overrides `mode` for this run.
        :returns: A dictionary with:
            - `documents`: the chunks, with `meta["context"]` where a context was made (content unchanged).
            - `stats`: `mode`, `documents`, `contextualized`, `llm_generated`, `llm_cached`, `llm_fallbacks`
              (children that got the breadcrumb instead of an LLM sentence), `seconds`.
        :raises TypeError: `documents` is not a list of Documents.
        :raises ValueError: An unknown `mode`.
        """
        if not isinstance(documents, list) or any(not isinstance(doc, Document) for doc in documents):
            raise TypeError("Contextualizer expects `documents` to be a list of Documents.")
        mode = self.mode if mode is None else mode
        if mode not in MODES:
            raise ValueError(f"`mode` must be one of {MODES}, got {mode!r}.")
        started = time.perf_counter()
        active = self.enabled if enabled is None else enabled
        stats: dict[str, Any] = {
            "mode": mode if active else "none",
            "documents": len(documents),
            "contextualized": 0,
            "llm_generated": 0,
            "llm_cached": 0,
            "llm_fallbacks": 0,
            "seconds": 0.0,
        }
        if not active or mode == "none":
            return {"documents": documents, "stats": stats}

        contexts: dict[int, str] = {}
        llm_children: list[tuple[int, Document, Document]] = []
        parents = {doc.id: doc for doc in documents if doc.meta.get("level") != "child"}
        for position, doc in enumerate(documents):
            is_child = doc.meta.get("level") == "child"
            if not is_child and not self.include_parents:
                continue
            contexts[position] = breadcrumb(doc, self.heading_style)
            parent = parents.get(doc.meta.get("parent_id")) if is_child else None
            if mode == "llm" and is_child and parent is not None:
                llm_children.append((position, doc, parent))
        if llm_children:
            self._add_llm_sentences(llm_children, contexts, stats)

        out = []
        for position, doc in enumerate(documents):
            context = contexts.get(position)
            if context:
                stats["contextualized"] += 1
                doc = replace(doc, meta={**doc.meta, "context": context})
            out.append(doc)
        stats["seconds"] = round(time.perf_counter() - started, 3)
        if stats["llm_fallbacks"]:
            logger.warning(
                "Contextualizer: {count} chunk(s) got the breadcrumb because the LLM gave no usable sentence",
                count=stats["llm_fallbacks"],
            )
        return {"documents": out, "stats": stats}

    def _key(self, child: Document, parent: Document, model: str) -> str:
        return ContextCache.key(
            model=model, heading=breadcrumb(parent, "full"), parent=parent.content or "", child=child.content or ""
        )

    def _add_llm_sentences(
        self, children: list[tuple[int, Document, Document]], contexts: dict[int, str], stats: dict[str, Any]
    ) -> None:
        """Appends the cached or generated sentence to each child's breadcrumb; counts cache hits and fallbacks."""
        model = _generator_name(self.chat_generator)
        todo = []
        for position, child, parent in children:
            key = self._key(child, parent, model)
            sentence = self._cache.get(key)
            if sentence is not None:
                contexts[position] = self._join(contexts[position], sentence)
                stats["llm_cached"] += 1
            else:
                todo.append((position, child, parent, key))
        if not todo:
            return
        if self.chat_generator is None:
            logger.warning(
                "Contextualizer: llm mode without a chat generator; {count} chunk(s) get their breadcrumb",
                count=len(todo),
            )
            stats["llm_fallbacks"] += len(todo)
            return
        logger.info(
            "Contextualizer: {todo} chunk(s) to contextualize with {model} ({cached} cached)",
            todo=len(todo),
            model=model,
            cached=stats["llm_cached"],
        )
        self.warm_up()
        started = time.perf_counter()
        tokens = 0
        bar = tqdm(total=len(todo), desc="Contextualizing", unit="chunk", disable=not self.progress_bar)
        try:
            for done, (position, child, parent, key) in enumerate(todo, start=1):
                sentence, used = self._generate(child, parent)
                tokens += used
                if sentence is None:
                    stats["llm_fallbacks"] += 1
                else:
                    self._cache.put(key, sentence)
                    contexts[position] = self._join(contexts[position], sentence)
                    stats["llm_generated"] += 1
                bar.update(1)
                if done == ESTIMATE_AFTER and len(todo) > ESTIMATE_AFTER:
                    elapsed = time.perf_counter() - started
                    logger.info(
                        "Contextualizer: ~{eta:.0f} s left for {left} chunk(s) at the measured {per:.2f} s/chunk "
                        "(~{speed:.1f} generated tokens/s)",
                        eta=elapsed / done * (len(todo) - done),
                        left=len(todo) - done,
                        per=elapsed / done,
                        speed=tokens / elapsed if elapsed else 0.0,
                    )
        finally:
            bar.close()

    def _generate(self, child: Document, parent: Document) -> tuple[str | None, int]:
        """One LLM sentence for a child (or `None`) and the number of tokens generated."""
        messages = [
            ChatMessage.from_system(CONTEXT_SYSTEM_PROMPT),
            ChatMessage.from_user(
                CONTEXT_USER_TEMPLATE.format(
                    heading=breadcrumb(parent, "full"),
                    parent=(parent.content or "").strip(),
                    child=(child.content or "").strip(),
                )
            ),
        ]
        generation_kwargs = {"max_tokens": self.max_tokens, "temperature": 0.0}
        reply = chat_text(self.chat_generator, messages, generation_kwargs=generation_kwargs, timeout=self.timeout)
        if reply is None:
            return None, 0
        used = max(1, round(len(reply) / CHARS_PER_TOKEN["es"]))  # Qwen's measured chars/token (no usage here)
        sentence = _clean_sentence(reply, self.max_context_chars)
        if len(sentence) < MIN_SENTENCE_CHARS:
            logger.warning("Contextualizer: unusable LLM reply {reply!r}", reply=reply[:200])
            return None, used
        return sentence, used

    @staticmethod
    def _join(crumb: str, sentence: str) -> str:
        if not crumb:
            return sentence
        return f"{crumb}. {sentence}"
