"""Writes chunks to a document store and deletes, per law and owner, the chunks a re-indexed law no longer has."""

import copy
from dataclasses import replace
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.document_stores.types import DuplicatePolicy

from components.legal.access import owner_condition, owner_key

logger = logging.getLogger(__name__)

STORE_METHODS = ("write_documents", "filter_documents", "delete_documents", "to_dict")


@component
class PruningDocumentWriter:
    """
    Writes documents to any Haystack document store and keeps the store in sync per law: stale chunks are pruned.

    Haystack's `DocumentWriter` plus stale pruning, so that re-indexing a law is one pipeline run that leaves no
    chunk of its old version behind. Chunk ids are deterministic, so a re-indexed chunk overwrites itself (policy
    `OVERWRITE`); what the new version no longer has (a repealed article, a block split differently) is deleted
    here: for each `law_id` of the batch, the store's chunks of that law that the batch does not hold.

    Pruning never crosses owners (`components.legal.access`): the store is read through the batch's own owner
    condition (`owner_condition`) and every candidate's owner (`owner_key`) is checked again, so a tenant's copy of
    a law never deletes the public law's chunks nor another tenant's, and the public law re-indexed leaves every
    tenant's copy alone. One run must therefore carry all the chunks of each (law, owner) it writes: the indexing
    pipeline runs one file (one law) at a time.

    The same writer serves every backend: the embedded `EdgeDocumentStore`, qdrant-haystack's `QdrantDocumentStore`
    and, for the BM25 child chunks when `LEXHAY_OPENSEARCH_URL` is set, opensearch-haystack's
    `OpenSearchDocumentStore` (`strip_embeddings=True`: OpenSearch scores BM25 from the text, and opensearch-haystack
    does not store sparse vectors; the dense side stays on Qdrant).

    ### Usage example

    ```python
    from components.document_stores.edge_document_store import EdgeDocumentStore
    from components.writers.pruning_writer import PruningDocumentWriter

    writer = PruningDocumentWriter(document_store=EdgeDocumentStore(path="./.lexhay"))
    writer.run(documents=chunks)  # {"documents_written": ..., "pruned": ...}
    ```
    """

    def __init__(
        self,
        *,
        document_store: Any,
        policy: DuplicatePolicy = DuplicatePolicy.OVERWRITE,
        prune_stale: bool = True,
        strip_embeddings: bool = False,
    ) -> None:
        """
        Create a PruningDocumentWriter.

        :param document_store: Any Haystack document store (`write_documents`, `filter_documents`,
            `delete_documents`).
        :param policy: Duplicate policy of the writes (`OVERWRITE` keeps re-indexing and migration idempotent).
        :param prune_stale: Delete the stored chunks of each written (law, owner) that the batch no longer has.
            Off for writes that carry only part of a law (a migration's batches).
        :param strip_embeddings: Write text and meta only (dense and sparse vectors dropped), for a lexical store.
        :raises ValueError: If `document_store` is not a document store.
        """
        missing = [name for name in STORE_METHODS if not callable(getattr(document_store, name, None))]
        if missing:
            raise ValueError(
                f"document_store must be a Haystack document store; {type(document_store)} lacks {missing}"
            )
        self.document_store = document_store
        self.policy = policy
        self.prune_stale = prune_stale
        self.strip_embeddings = strip_embeddings

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(
            self,
            document_store=self.document_store,
            policy=self.policy.name,
            prune_stale=self.prune_stale,
            strip_embeddings=self.strip_embeddings,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "PruningDocumentWriter":
        """Deserialize this component from a dictionary (a copy: some stores' `from_dict` edit their input)."""
        data = copy.deepcopy(data)
        params = data.setdefault("init_parameters", {})
        if isinstance(params.get("policy"), str):
            params["policy"] = DuplicatePolicy[params["policy"]]
        return default_from_dict(cls, data)

    @component.output_types(documents_written=int, pruned=int)
    def run(self, documents: list[Document]) -> dict[str, int]:
        """
        Write the documents, then prune the stale chunks of their laws.

        :param documents: The chunks of one or more whole laws (each with `meta.law_id`; documents without one are
            written and take no part in pruning).
        :returns: `documents_written`: documents written; `pruned`: stale chunks deleted.
        :raises ValueError: If `documents` is not a list of Documents.
        """
        if not isinstance(documents, list) or any(not isinstance(d, Document) for d in documents):
            raise ValueError("documents must be a list of Documents")
        if not documents:
            return {"documents_written": 0, "pruned": 0}
        to_write = documents
        if self.strip_embeddings:
            to_write = [replace(d, embedding=None, sparse_embedding=None, score=None) for d in documents]
        written = self.document_store.write_documents(documents=to_write, policy=self.policy)
        pruned = self._prune(documents) if self.prune_stale else 0
        return {"documents_written": written, "pruned": pruned}

    def remove(self, law_ids: list[str], owner: dict[str, Any]) -> int:
        """
        Delete every chunk of these laws that `owner` holds (an owner withdrawing what it uploaded): the same
        owner-checked read as pruning, with nothing kept, so no other owner's copy of a law is touched.

        :param law_ids: The laws' `law_id`s.
        :param owner: The owner's access meta, as `tenant_meta` stamps it (`{"scope": "global"}`: the public laws).
        :returns: The number of chunks deleted.
        :raises ValueError: A law id that is not a non-empty string.
        """
        if any(not isinstance(law_id, str) or not law_id.strip() for law_id in law_ids):
            raise ValueError("law ids must be non-empty strings")
        stale = [doc_id for law_id in dict.fromkeys(law_ids) for doc_id in self._owned(law_id, owner, keep=set())]
        if stale:
            self.document_store.delete_documents(stale)
            logger.info("Removed {count} chunks of {laws} from {store}", count=len(stale), laws=law_ids,
                        store=type(self.document_store).__name__)
        return len(stale)

    def _owned(self, law_id: str, owner: dict[str, Any], keep: set[str]) -> list[str]:
        """The ids of `owner`'s stored chunks of `law_id` that are not in `keep`."""
        # read through the owner's own condition, then check every candidate's owner again: a tenant's copy of a law
        # never reaches the public law or another owner's copy
        stored = self.document_store.filter_documents({"operator": "AND", "conditions": [
            {"field": "meta.law_id", "operator": "==", "value": law_id}, owner_condition(owner)]})
        wanted = owner_key(owner)
        return [d.id for d in stored if d.id not in keep and owner_key(d.meta) == wanted]

    def _prune(self, documents: list[Document]) -> int:
        """Delete, per (law, owner) of the batch, that owner's stored chunks the batch no longer has."""
        keep: dict[tuple[str, str], set[str]] = {}
        owners: dict[tuple[str, str], dict[str, Any]] = {}
        for doc in documents:
            if doc.meta.get("law_id"):
                key = (doc.meta["law_id"], owner_key(doc.meta))
                keep.setdefault(key, set()).add(doc.id)
                owners.setdefault(key, doc.meta)
        stale = [doc_id for (law_id, owner), ids in keep.items()
                 for doc_id in self._owned(law_id, owners[(law_id, owner)], ids)]
        if stale:
            self.document_store.delete_documents(stale)
            logger.info("Pruned {count} stale chunks from {store}", count=len(stale),
                        store=type(self.document_store).__name__)
        return len(stale)
