import sys

import pytest
from haystack import Document
from haystack.dataclasses import ByteStream, SparseEmbedding
from haystack_integrations.document_stores.qdrant.converters import convert_id

from components.document_stores.edge_converters import (
    DENSE_VECTOR_NAME,
    SPARSE_VECTOR_NAME,
    light_entry,
    point_id,
    to_document,
    to_point,
)

DOC = Document(
    id="BOE-A-2015-11430:38:0",
    content="Artículo 38. Vacaciones anuales. El periodo de vacaciones anuales retribuidas...",
    meta={"law_id": "BOE-A-2015-11430", "article": "38", "topics": ["vacaciones"]},
    embedding=[0.6, 0.8],
    sparse_embedding=SparseEmbedding(indices=[3, 7], values=[1.5, 0.5]),
    blob=ByteStream(data=b"%PDF", mime_type="application/pdf"),
)


def test_point_ids_are_qdrant_haystacks_in_the_dashed_form():
    assert point_id(DOC.id).replace("-", "") == convert_id(DOC.id)
    assert point_id(DOC.id) == point_id(DOC.id) != point_id("otro")


def test_a_document_round_trips_through_its_point():
    point = to_point(DOC, point_id(DOC.id))
    payload, vector = point.payload, point.vector
    assert payload["id"] == DOC.id and payload["meta"] == DOC.meta and payload["content"] == DOC.content
    assert vector[DENSE_VECTOR_NAME] == pytest.approx(DOC.embedding)  # stored as float32
    back = to_document(payload, {DENSE_VECTOR_NAME: DOC.embedding, SPARSE_VECTOR_NAME: DOC.sparse_embedding},
                       0.7, with_embedding=True)
    assert (back.id, back.content, back.meta, back.score, back.embedding) == (
        DOC.id, DOC.content, DOC.meta, 0.7, DOC.embedding
    )
    assert back.sparse_embedding.indices == [3, 7] and back.blob.data == b"%PDF"
    # without `with_embedding` the vectors stay out
    assert to_document(payload, {DENSE_VECTOR_NAME: DOC.embedding}).embedding is None


def test_a_meta_that_is_not_json_is_refused_with_the_document_named():
    bad = Document(id="x", content="t", meta={"when": object()})
    try:
        to_point(bad, point_id("x"))
    except ValueError as error:
        assert "'x'" in str(error) and "JSON" in str(error)
    else:
        raise AssertionError("a meta holding an object was stored")


def test_light_entries_hold_the_fields_asked_for_with_interned_strings():
    law = "".join(["BOE-A-", "2015-11430"])  # a string built at run time, not a literal
    doc_id, meta = light_entry({"id": "c1", "meta": {"law_id": law, "article": "38"}}, ("law_id", "parent_id"))
    assert doc_id == "c1" and meta == {"law_id": "BOE-A-2015-11430"}
    assert meta["law_id"] is sys.intern("BOE-A-2015-11430")
