"""Whether a question is about a branch of law the corpus does not hold (criminal law, tenancy, traffic...)."""

import hashlib
import threading
from typing import Any

import numpy as np

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.core.serialization import component_to_dict
from haystack.dataclasses import ChatMessage

from components.document_stores.vector_search import search_dense
from components.legal.answer_format import answer_language
from components.legal.conversation import previous_questions, read_with_previous
from components.legal.jurisdiction import without_countries
from components.legal.matters import Matter, load_matters
from components.legal.terms import asks_nothing_new
from components.utils.nested import nested_init_parameters, warm_up_nested

logger = logging.getLogger(__name__)

NESTED = ("text_embedder", "document_embedder")
# The matters' phrase vectors, process-wide: every pipeline loaded in a process (one per worker, per test) embeds
# the same phrases with the same model. Keyed by what determines them (each phrase's `embedding_hash`: model, token
# limit, text); a handful of entries, one per model and matters file.
_PROTOTYPES: dict[str, np.ndarray] = {}
_PROTOTYPES_LOCK = threading.Lock()


@component
class ScopeChecker:
    """
    Tells when a question is about a branch of law the corpus does not hold, so the answer can say so.

    The corpus holds labour, social-security, workplace-safety and constitutional law. Asked "¿qué pena tiene un
    hurto?" or "o inquilino parou de pagar o aluguel", the search still returns its nearest articles (the fines of
    the labour-offences statute, the CLT's dismissal rules), and the gate answers from them: their similarity to
    such a question lies in the range of real labour questions, so no floor on it can tell them apart. What tells
    them apart is what the question is closer to. A question is out of scope when its vector is closer to a phrase
    describing a matter the corpus lacks (`components/legal/data/matters.yaml`, embedded as documents with the
    same dense model: "Derecho penal: robo", "Locação de imóveis: despejo") than to the nearest block of the store
    the caller can read (one dense search with the question's vector and the caller's `filters`), by more than
    `margin`. A deployment that indexes the Código Penal therefore gets no notice for criminal questions: its own
    blocks are then the closest.

    A question that cites or names a norm (`citations`) is about that norm and is not checked (a norm the corpus
    lacks has its own notice, `CitationDetector.unknown_norms`); nor is one when the store holds no block the
    caller can read. A follow-up that asks nothing of its own ("¿y en Brasil?", "ok, obrigado. pode explicar
    melhor?": `terms.asks_nothing_new`, countries left out) is checked as the questions before it read with it:
    alone, its vector is near whatever matter names the country or none; without a question before it, it is about
    nothing and not checked.

    `out_of_scope` holds the label of the closest such matter in the answer's language (`answer_language`: the
    question's, else the nearest block's), which the answer prompt and the extractive answer put in their notice
    ("derecho penal"); `margin` reports the difference measured (None when not checked). Stores: the embedded one and a
    Qdrant server with cosine similarity (`components.document_stores.vector_search`).

    ### Usage example

    ```python
    from components.embedders.dense_embedder import DenseDocumentEmbedder, DenseTextEmbedder
    from components.validators.scope_checker import ScopeChecker

    checker = ScopeChecker(document_store=store, text_embedder=DenseTextEmbedder(),
                           document_embedder=DenseDocumentEmbedder())
    checker.warm_up()
    result = checker.run(query="o inquilino parou de pagar o aluguel, quanto tempo demora o despejo?")
    result["out_of_scope"]  # ["locação de imóveis"]
    ```
    """

    def __init__(
        self,
        *,
        document_store: Any,
        text_embedder: Any,
        document_embedder: Any,
        margin: float = 0.0,
        matters_path: str | None = None,
        enabled: bool = True,
    ) -> None:
        """
        Create a ScopeChecker.

        :param document_store: The store the answers come from (`EdgeDocumentStore`, or qdrant-haystack's
            `QdrantDocumentStore`), searched for the block nearest to the question.
        :param text_embedder: Embeds the question: a `DenseTextEmbedder` of the store's dense model (the retrieval
            chain embeds the same question with the same model, so the vector comes from the query embedding cache
            to one of them).
        :param document_embedder: Embeds the matters' phrases, once at warm-up: a `DenseDocumentEmbedder` of the
            same model (its document prompt, as the stored blocks were embedded).
        :param margin: How much closer to a matter's phrase than to the best retrieved block a question must be.
            0: closer, the one threshold that needs no fitting.
        :param matters_path: A matters YAML file (default: the bundled `components/legal/data/matters.yaml`).
        :param enabled: Off: nothing is checked (per request: `run(enabled=...)`).
        :raises ValueError: The matters file cannot be read as matters.
        """
        self.document_store = document_store
        self.text_embedder = text_embedder
        self.document_embedder = document_embedder
        self.margin = float(margin)
        self.matters_path = matters_path
        self.enabled = enabled
        self._matters: tuple[Matter, ...] = load_matters(matters_path)
        self._owners: list[int] = [i for i, matter in enumerate(self._matters) for _ in matter.prototypes()]
        self._prototypes: np.ndarray | None = None

    def to_dict(self) -> dict[str, Any]:
        """
        Serializes the component to a dictionary.

        :returns: Dictionary with serialized data.
        """
        return default_to_dict(
            self,
            document_store=self.document_store,
            text_embedder=component_to_dict(self.text_embedder, "text_embedder"),
            document_embedder=component_to_dict(self.document_embedder, "document_embedder"),
            margin=self.margin,
            matters_path=self.matters_path,
            enabled=self.enabled,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ScopeChecker":
        """
        Deserializes the component from a dictionary (nested embedders through Haystack's allowlist).

        :param data: Dictionary to deserialize from.
        :returns: Deserialized component.
        """
        return default_from_dict(cls, nested_init_parameters(data, NESTED))

    def warm_up(self) -> None:
        """Load the dense model and embed the matters' phrases (once per process and model; idempotent)."""
        if self._prototypes is not None:
            return
        warm_up_nested(self, NESTED)
        documents = [Document(content=text) for matter in self._matters for text in matter.prototypes()]
        hashed = getattr(self.document_embedder, "embedding_hash", None)
        key = hashlib.blake2b("\x00".join(map(hashed, documents)).encode()).hexdigest() if callable(hashed) else None
        with _PROTOTYPES_LOCK:
            cached = _PROTOTYPES.get(key) if key is not None else None
            if cached is None:
                embedded = self.document_embedder.run(documents=documents)["documents"]
                vectors = np.asarray([doc.embedding for doc in embedded], dtype=np.float32)
                cached = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
                if key is not None:
                    _PROTOTYPES[key] = cached
        self._prototypes = cached

    @component.output_types(out_of_scope=list[str], margin=float | None)
    def run(
        self,
        query: str,
        filters: dict[str, Any] | None = None,
        citations: list[dict[str, Any]] | None = None,
        enabled: bool | None = None,
        history: list[ChatMessage] | None = None,
    ) -> dict[str, Any]:
        """
        Check one question.

        :param query: The user's question.
        :param filters: The caller's filters (the access filter): the nearest block is one the caller can read.
        :param citations: The question's citations (`CitationDetector.citations`): any citation skips the check.
        :param enabled: Overrides the init `enabled` for this run.
        :param history: The conversation before `query`: a turn that asks nothing of its own is checked read with
            the questions before it (`components.legal.conversation`).
        :returns: `out_of_scope`: the label of the matter the question is about, in the answer's language, or `[]`;
            `margin`: its phrase's cosine minus the nearest block's (None when not checked).
        :raises ValueError: `query` is empty.
        """
        if not isinstance(query, str) or not query.strip():
            raise ValueError("ScopeChecker needs a non-empty `query` string.")
        if not (self.enabled if enabled is None else enabled) or citations:
            return {"out_of_scope": [], "margin": None}
        if asks_nothing_new(without_countries(query)):
            previous = previous_questions(history)
            if previous is None:
                return {"out_of_scope": [], "margin": None}
            query = read_with_previous(query, previous)
        self.warm_up()
        assert self._prototypes is not None
        embedding = self.text_embedder.run(text=query)["embedding"]
        # the block nearest to the question among those the caller can read (its `score`: the cosine)
        hits = search_dense(self.document_store, embedding, filters=filters, top_k=1)
        nearest = hits[0] if hits else None
        if nearest is None or nearest.score is None:
            return {"out_of_scope": [], "margin": None}
        vector = np.asarray(embedding, dtype=np.float32)
        vector /= np.linalg.norm(vector) or 1.0
        similarities = self._prototypes @ vector
        best = int(np.argmax(similarities))
        margin = float(similarities[best]) - float(nearest.score)
        if margin <= self.margin:
            return {"out_of_scope": [], "margin": margin}
        matter = self._matters[self._owners[best]]
        label = matter.labels[answer_language(query, [nearest])]
        logger.debug("ScopeChecker: {matter} (margin {margin:.3f})", matter=matter.id, margin=margin)
        return {"out_of_scope": [label], "margin": margin}
