"""
BM25 sparse embedders built on Qdrant Edge's `Bm25` model (tokenizer, stopwords, Snowball stemmer, ASCII folding).

Token indices are hashes of the stemmed tokens, so they are the same in every process: a persisted index and a
query embedded later always agree. Document vectors hold BM25 term-frequency weights; the store's IDF modifier
(`EdgeDocumentStore(sparse_idf=True)`, or `QdrantDocumentStore(sparse_idf=True)` on a server) completes BM25.
"""

from dataclasses import replace
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.dataclasses import SparseEmbedding
from qdrant_edge import Bm25

from components.legal.legal_text import detect_query_language
from components.utils.bm25 import Bm25Models

logger = logging.getLogger(__name__)

# Measured on data/corpus: a 300-character child chunk holds about 27 tokens after stopword removal, a
# 2000-character parent block about 170; the context line and embedded meta fields bring children to about 40.
DEFAULT_AVG_LEN = 40.0


def _to_sparse_embedding(vector: Any) -> SparseEmbedding:
    return SparseEmbedding(indices=list(vector.indices), values=list(vector.values))


@component
class SparseDocumentEmbedder:
    """
    Computes BM25 sparse embeddings of Documents with Qdrant Edge's `Bm25` model.

    Each Document is tokenized in its own language (`meta["lang"]`: `es` -> Spanish, `pt` -> Portuguese; the
    `language` init parameter when missing or not supported by Qdrant): stopwords removed, Snowball-stemmed,
    accents folded. Values are BM25
    term-frequency weights; store them in a sparse vector with the IDF modifier. Query vectors come from
    `SparseTextEmbedder` with the same settings.

    ### Usage example

    ```python
    from haystack import Document
    from components.embedders.sparse_embedder import SparseDocumentEmbedder

    embedder = SparseDocumentEmbedder(language="spanish", meta_fields_to_embed=["article_title"])
    result = embedder.run([Document(content="Vacaciones anuales retribuidas", meta={"lang": "es"})])
    print(result["documents"][0].sparse_embedding)
    # SparseEmbedding(indices=[...], values=[...])
    ```
    """

    def __init__(
        self,
        *,
        language: str = "spanish",
        k: float = 1.2,
        b: float = 0.75,
        avg_len: float | None = DEFAULT_AVG_LEN,
        ascii_folding: bool = True,
        meta_fields_to_embed: list[str] | None = None,
        embedding_separator: str = "\n",
        language_meta_field: str = "lang",
    ) -> None:
        """
        Creates a SparseDocumentEmbedder.

        :param language: Language of Documents without `meta[language_meta_field]`: a Qdrant tokenizer language
            (`spanish`, `portuguese`, `english`, ...) or an ISO 639-1 code (`es`, `pt`, ...).
        :param k: BM25 term-frequency saturation.
        :param b: BM25 length normalization, between 0 (none) and 1 (full).
        :param avg_len: Average document length in tokens (after stopword removal). The default suits lexhay's
            child chunks (about 40 tokens); `None` uses Qdrant's default of 256, meant for long documents.
        :param ascii_folding: Whether to fold accents (`vacación` -> `vacacion`), so accented and unaccented
            spellings match.
        :param meta_fields_to_embed: Meta fields whose values are prepended to the content before embedding.
        :param embedding_separator: Separator between the embedded meta values and the content.
        :param language_meta_field: Meta field holding a Document's language.
        :raises ValueError: If the language or a BM25 parameter is invalid.
        """
        self.language = language
        self.k = k
        self.b = b
        self.avg_len = avg_len
        self.ascii_folding = ascii_folding
        self.meta_fields_to_embed = meta_fields_to_embed or []
        self.embedding_separator = embedding_separator
        self.language_meta_field = language_meta_field
        self._models: Bm25Models | None = None
        Bm25Models(k=k, b=b, avg_len=avg_len, ascii_folding=ascii_folding).get(language)  # validates early

    def to_dict(self) -> dict[str, Any]:
        """
        Serializes the component to a dictionary.

        :returns: Dictionary with serialized data.
        """
        return default_to_dict(
            self,
            language=self.language,
            k=self.k,
            b=self.b,
            avg_len=self.avg_len,
            ascii_folding=self.ascii_folding,
            meta_fields_to_embed=self.meta_fields_to_embed,
            embedding_separator=self.embedding_separator,
            language_meta_field=self.language_meta_field,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SparseDocumentEmbedder":
        """
        Deserializes the component from a dictionary.

        :param data: Dictionary to deserialize from.
        :returns: Deserialized component.
        """
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """Builds the BM25 model of the default language. Calling it again does nothing."""
        if self._models is None:
            self._models = Bm25Models(k=self.k, b=self.b, avg_len=self.avg_len, ascii_folding=self.ascii_folding)
            self._models.get(self.language)

    def _text_to_embed(self, document: Document) -> str:
        meta_values = []
        for key in self.meta_fields_to_embed:
            value = document.meta.get(key)
            if value is None:
                continue
            meta_values.append(" ".join(map(str, value)) if isinstance(value, list) else str(value))
        return self.embedding_separator.join([*meta_values, document.content or ""])

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """
        Adds a BM25 sparse embedding to each Document.

        :param documents: Documents to embed.
        :returns: A dictionary with `documents`: copies of the input Documents with `sparse_embedding` set.
        :raises TypeError: If `documents` is not a list of Documents.
        """
        if not isinstance(documents, list) or any(not isinstance(doc, Document) for doc in documents):
            raise TypeError(
                "SparseDocumentEmbedder expects a list of Documents as input. "
                "To embed a query string, use SparseTextEmbedder."
            )
        self.warm_up()
        assert self._models is not None
        embedded = []
        for document in documents:
            language = document.meta.get(self.language_meta_field) or self.language
            model = self._models.get(str(language), fallback=self.language)
            vector = model.embed_document(self._text_to_embed(document))
            embedded.append(replace(document, sparse_embedding=_to_sparse_embedding(vector)))
        return {"documents": embedded}


@component
class SparseTextEmbedder:
    """
    Computes the BM25 sparse embedding of a query with Qdrant Edge's `Bm25` model.

    Use the same settings as the `SparseDocumentEmbedder` that embedded the Documents. Every distinct query token
    gets weight 1.0; the store's IDF modifier weights the tokens.

    Each question is analysed in its own language (stopwords, stemmer), as the documents are: the `language` given
    to `run`, else the language detected from the question (Spanish or Portuguese, `detect_query_language`), else
    the init `language`. A Portuguese question is stemmed the way the Portuguese statutes were.

    ### Usage example

    ```python
    from components.embedders.sparse_embedder import SparseTextEmbedder

    embedder = SparseTextEmbedder(language="spanish")
    print(embedder.run(text="¿Cuántos días de vacaciones tengo?")["sparse_embedding"])
    # SparseEmbedding(indices=[...], values=[1.0, 1.0, 1.0])
    ```
    """

    def __init__(
        self,
        *,
        language: str = "spanish",
        k: float = 1.2,
        b: float = 0.75,
        avg_len: float | None = DEFAULT_AVG_LEN,
        ascii_folding: bool = True,
        detect_language: bool = True,
    ) -> None:
        """
        Creates a SparseTextEmbedder.

        :param language: Language of the queries whose language is neither given nor detected: a Qdrant tokenizer
            language (`spanish`, `portuguese`, ...) or an ISO 639-1 code (`es`, `pt`, ...).
        :param k: BM25 term-frequency saturation (kept equal to the document embedder's; queries weigh tokens 1.0).
        :param b: BM25 length normalization (kept equal to the document embedder's).
        :param avg_len: Average document length in tokens (kept equal to the document embedder's).
        :param ascii_folding: Whether to fold accents; must match the document embedder.
        :param detect_language: Whether to detect each question's language (Spanish / Portuguese) when `run` is not
            told it.
        :raises ValueError: If the language or a BM25 parameter is invalid.
        """
        self.language = language
        self.k = k
        self.b = b
        self.avg_len = avg_len
        self.ascii_folding = ascii_folding
        self.detect_language = detect_language
        self._model: Bm25 | None = None
        self._models: Bm25Models | None = None
        Bm25Models(k=k, b=b, avg_len=avg_len, ascii_folding=ascii_folding).get(language)  # validates early

    def to_dict(self) -> dict[str, Any]:
        """
        Serializes the component to a dictionary.

        :returns: Dictionary with serialized data.
        """
        return default_to_dict(
            self,
            language=self.language,
            k=self.k,
            b=self.b,
            avg_len=self.avg_len,
            ascii_folding=self.ascii_folding,
            detect_language=self.detect_language,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SparseTextEmbedder":
        """
        Deserializes the component from a dictionary.

        :param data: Dictionary to deserialize from.
        :returns: Deserialized component.
        """
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """Builds the BM25 model. Calling it again does nothing."""
        if self._model is None:
            self._models = Bm25Models(k=self.k, b=self.b, avg_len=self.avg_len, ascii_folding=self.ascii_folding)
            self._model = self._models.get(self.language)

    @component.output_types(sparse_embedding=SparseEmbedding)
    def run(self, text: str, language: str | None = None) -> dict[str, SparseEmbedding]:
        """
        Embeds a query.

        :param text: The query text.
        :param language: The query's language (`es`, `pt`, `spanish`, ...); None detects it (or uses the init
            `language` when detection is off or finds no evidence).
        :returns: A dictionary with `sparse_embedding`: the query's BM25 sparse embedding (empty if the query holds
            only stopwords).
        :raises TypeError: If `text` is not a string.
        :raises ValueError: If Qdrant has no tokenizer for the given `language`.
        """
        if not isinstance(text, str):
            raise TypeError(
                "SparseTextEmbedder expects a string as input. To embed Documents, use SparseDocumentEmbedder."
            )
        self.warm_up()
        assert self._model is not None and self._models is not None
        if language is None and self.detect_language:
            language = detect_query_language(text)
        model = self._models.get(language) if language else self._model
        return {"sparse_embedding": _to_sparse_embedding(model.embed_query(text))}
