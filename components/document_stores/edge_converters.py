"""
Haystack Documents to Qdrant Edge points and back, for `EdgeDocumentStore`.

A point's payload has the layout of qdrant-haystack's `QdrantDocumentStore` (`{"id", "content", "meta"}`, and `blob`
when the Document has one) and its id is the uuid5 of the Document id in qdrant-haystack's namespace, so the same
Documents get the same points, and the same filters, on a Qdrant server.
"""

import functools
import sys
import uuid
from typing import Any

from haystack.dataclasses import ByteStream, Document, SparseEmbedding
from qdrant_edge import PayloadSelector, Point, SparseVector

DENSE_VECTOR_NAME = "dense"
SPARSE_VECTOR_NAME = "bm25"

# Same namespace as qdrant-haystack's `convert_id`, so a Document gets the same point id on a Qdrant server.
POINT_ID_NAMESPACE = uuid.UUID("3896d314-1e95-4a3a-b45a-945f9f0b541d")


# a query converts the same ids again and again (its parents, its BM25-only blocks), query after query
@functools.lru_cache(maxsize=1 << 13)
def point_id(document_id: str) -> str:
    """
    The point id of a Document id: its uuid5 in qdrant-haystack's namespace, in the dashed form.

    Usage example:
    ```python
    point_id("BOE-A-2015-11430:38")  # the same string in every process and every store
    ```
    """
    return str(uuid.uuid5(POINT_ID_NAMESPACE, document_id))


def to_point(document: Document, pid: str) -> Point:
    """
    The point of `document` with point id `pid`: its dense and sparse vectors, and its id, content, meta and blob as
    payload.

    :raises ValueError: The meta holds a value that is not JSON.
    """
    payload: dict[str, Any] = {"id": document.id, "content": document.content, "meta": document.meta}
    if document.blob is not None:
        payload["blob"] = document.blob.to_dict()
    vector: dict[str, Any] = {}
    if document.embedding is not None:
        vector[DENSE_VECTOR_NAME] = list(document.embedding)
    if document.sparse_embedding is not None:
        vector[SPARSE_VECTOR_NAME] = SparseVector(
            list(document.sparse_embedding.indices), list(document.sparse_embedding.values)
        )
    try:
        return Point(pid, vector, payload)
    except TypeError as error:
        raise ValueError(
            f"Document '{document.id}' cannot be stored: its meta must hold only JSON values "
            f"(str, int, float, bool, None, lists and dicts of them). {error}"
        ) from error


def to_document(
    payload: dict[str, Any], vector: Any = None, score: float | None = None, *, with_embedding: bool = False
) -> Document:
    """The Document of a point's payload (and, `with_embedding`, of its named vectors), with `score`."""
    embedding = sparse_embedding = None
    if with_embedding and vector:
        embedding = vector.get(DENSE_VECTOR_NAME)
        sparse = vector.get(SPARSE_VECTOR_NAME)
        if sparse is not None:
            sparse_embedding = SparseEmbedding(indices=list(sparse.indices), values=list(sparse.values))
    blob = payload.get("blob")
    return Document(
        id=payload["id"],
        content=payload.get("content"),
        blob=ByteStream.from_dict(blob) if blob else None,
        meta=payload.get("meta") or {},
        score=score,
        embedding=embedding,
        sparse_embedding=sparse_embedding,
    )


def light_selector(fields: tuple[str, ...]) -> PayloadSelector:
    """The payload keys a light hit of `fields` is read with: the document id and those meta fields."""
    return PayloadSelector.Include(["id", *(f"meta.{name}" for name in fields)])


def light_entry(payload: dict[str, Any], fields: tuple[str, ...]) -> tuple[str, dict[str, Any]]:
    """
    A light hit from a payload read with `light_selector`: the document id and the fields it has. String values are
    interned: a block's children share its parent id, a law's chunks its law id.
    """
    meta = payload.get("meta") or {}
    return payload["id"], {name: _interned(meta[name]) for name in fields if name in meta}


def _interned(value: Any) -> Any:
    return sys.intern(value) if isinstance(value, str) else value
