"""The lexical side of the scale-out backend: child chunks (the BM25 search unit) written to an OpenSearch index."""

import copy
from dataclasses import replace
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.components.writers import DocumentWriter
from haystack.document_stores.types import DuplicatePolicy

from components.legal.access import owner_condition, owner_key

logger = logging.getLogger(__name__)

OPENSEARCH_ANALYZER = "lexhay_spanish"

# Index settings used when lexhay creates the OpenSearch index (an existing index keeps its own): Spanish stop
# words, the Snowball Spanish stemmer (as the embedded store's BM25 vectors) and accent folding after stemming, so
# "días" / "dias" and "jubilación" / "jubilacion" meet on one term.
OPENSEARCH_INDEX_SETTINGS: dict[str, Any] = {
    "analysis": {
        "filter": {
            "lexhay_spanish_stop": {"type": "stop", "stopwords": "_spanish_"},
            "lexhay_spanish_stemmer": {"type": "stemmer", "language": "spanish"},
        },
        "analyzer": {
            OPENSEARCH_ANALYZER: {
                "type": "custom",
                "tokenizer": "standard",
                "filter": ["lowercase", "lexhay_spanish_stop", "lexhay_spanish_stemmer", "asciifolding"],
            }
        },
    }
}

# Meta fields are top-level fields in opensearch-haystack's layout. Strings are keywords (exact filters on law_id,
# article, collection, status, ...); `content` and `article_title` are full text for BM25 (the embedded BM25 vectors
# embed the article title too). No dense vector: the dense side stays on Qdrant.
OPENSEARCH_MAPPINGS: dict[str, Any] = {
    "properties": {
        "content": {"type": "text", "analyzer": OPENSEARCH_ANALYZER},
        "article_title": {
            "type": "text",
            "analyzer": OPENSEARCH_ANALYZER,
            "fields": {"keyword": {"type": "keyword", "ignore_above": 512}},
        },
        "rank": {"type": "integer"},
        "publication_date": {"type": "date", "ignore_malformed": True},
        "last_updated": {"type": "date", "ignore_malformed": True},
    },
    "dynamic_templates": [{"strings": {"match_mapping_type": "string", "mapping": {"type": "keyword"}}}],
}


@component
class OpenSearchWriter:
    """
    Writes chunks to an OpenSearch index for BM25 search, without their vectors, and keeps the index in sync per law.

    The scale-out lexical backend: when `LEXHAY_OPENSEARCH_URL` is set, the indexing pipeline sends its child chunks
    here as well as to the Qdrant store (see `pipelines.loader.apply_settings`), and `HybridRetriever` takes its BM25
    side from this index. Dense and sparse vectors are dropped (OpenSearch scores BM25 from the text; storing sparse
    vectors is not supported by opensearch-haystack and would log a warning per chunk). Writing goes through Haystack's
    `DocumentWriter`; ids are the chunks' own, so re-indexing overwrites in place.

    With `prune_stale` (default), the chunks of each `law_id` in the batch that the index holds but the batch no longer
    has are deleted, as the SDK prunes the main store: a re-indexed law leaves no stale chunk behind. Pruning is per
    owner (the chunks' access meta, `components.legal.access.owner_key`): a tenant's copy of a law never deletes the
    public law's chunks nor another tenant's. One run must then carry all the chunks of each (law, owner) it
    touches (one file = one law, as the indexing pipeline runs).

    ### Usage example

    ```python
    from haystack_integrations.document_stores.opensearch import OpenSearchDocumentStore
    from components.writers.opensearch_writer import OPENSEARCH_INDEX_SETTINGS, OPENSEARCH_MAPPINGS, OpenSearchWriter

    store = OpenSearchDocumentStore(hosts=["http://localhost:9200"], index="lexhay",
                                    mappings=OPENSEARCH_MAPPINGS, settings=OPENSEARCH_INDEX_SETTINGS)
    OpenSearchWriter(document_store=store).run(documents=children)  # {"documents_written": 412, "pruned": 0}
    ```
    """

    def __init__(
        self, *, document_store: Any, policy: DuplicatePolicy = DuplicatePolicy.OVERWRITE, prune_stale: bool = True
    ) -> None:
        """
        Create an OpenSearchWriter.

        :param document_store: An opensearch-haystack `OpenSearchDocumentStore`.
        :param policy: Duplicate policy of the writes (`OVERWRITE` keeps re-indexing and migration idempotent).
        :param prune_stale: Delete the indexed chunks of each written law that the written batch no longer has.
        :raises ValueError: If `document_store` is not an `OpenSearchDocumentStore`.
        """
        from components.utils.extras import optional_import  # noqa: PLC0415

        with optional_import("opensearch", "OpenSearchWriter") as opensearch_import:
            from haystack_integrations.document_stores.opensearch import OpenSearchDocumentStore  # noqa: PLC0415
        opensearch_import.check()
        if not isinstance(document_store, OpenSearchDocumentStore):
            raise ValueError(
                f"document_store must be an opensearch-haystack OpenSearchDocumentStore, got {type(document_store)}"
            )
        self.document_store = document_store
        self.policy = policy
        self.prune_stale = prune_stale
        self._writer = DocumentWriter(document_store=document_store, policy=policy)

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(
            self, document_store=self.document_store, policy=self.policy.name, prune_stale=self.prune_stale
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "OpenSearchWriter":
        """Deserialize this component from a dictionary (a copy: OpenSearchDocumentStore.from_dict edits its input)."""
        data = copy.deepcopy(data)
        params = data.get("init_parameters", {})
        if isinstance(params.get("policy"), str):
            params = {**params, "policy": DuplicatePolicy[params["policy"]]}
        return default_from_dict(cls, {**data, "init_parameters": params})

    @component.output_types(documents_written=int, pruned=int)
    def run(self, documents: list[Document]) -> dict[str, int]:
        """
        Write the chunks (text and meta only) and prune the stale chunks of their laws.

        :param documents: Chunks to index for BM25, typically the child chunks.
        :returns: `documents_written`: chunks written; `pruned`: stale chunks deleted.
        """
        if not isinstance(documents, list) or any(not isinstance(d, Document) for d in documents):
            raise ValueError("documents must be a list of Documents")
        if not documents:
            return {"documents_written": 0, "pruned": 0}
        plain = [replace(d, embedding=None, sparse_embedding=None, score=None) for d in documents]
        written = self._writer.run(documents=plain)["documents_written"]
        pruned = self._prune(documents) if self.prune_stale else 0
        return {"documents_written": written, "pruned": pruned}

    def _prune(self, documents: list[Document]) -> int:
        """Delete, per (law, owner) of the batch, that owner's indexed chunks the batch no longer has."""
        keep: dict[tuple[str, str], set[str]] = {}
        owners: dict[tuple[str, str], dict[str, Any]] = {}
        for doc in documents:
            if doc.meta.get("law_id"):
                key = (doc.meta["law_id"], owner_key(doc.meta))
                keep.setdefault(key, set()).add(doc.id)
                owners.setdefault(key, doc.meta)
        stale: list[str] = []
        for (law_id, owner), ids in keep.items():
            # read through the owner's own condition, then check every candidate's owner again: a tenant's copy of
            # a law never prunes the public law or another owner's copy
            indexed = self.document_store.filter_documents({"operator": "AND", "conditions": [
                {"field": "meta.law_id", "operator": "==", "value": law_id}, owner_condition(owners[(law_id, owner)])]})
            stale.extend(d.id for d in indexed if d.id not in ids and owner_key(d.meta) == owner)
        if stale:
            self.document_store.delete_documents(stale)
            logger.info("Pruned {count} stale chunks from OpenSearch", count=len(stale))
        return len(stale)
