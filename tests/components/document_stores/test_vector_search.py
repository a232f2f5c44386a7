import uuid

import pytest
from haystack import Document
from haystack.dataclasses import SparseEmbedding
from haystack.document_stores.in_memory import InMemoryDocumentStore

from components.document_stores.edge_converters import POINT_ID_NAMESPACE
from components.document_stores.edge_document_store import EdgeDocumentStore
from components.document_stores.vector_search import (
    best_passage_similarity,
    search_batch,
    search_dense,
    similarity_by_id,
    stored_vectors,
    supports_vector_search,
)
from components.embedders.sparse_embedder import SparseDocumentEmbedder, SparseTextEmbedder

# 4-d toy dense space: axis 0 holidays, 1 dismissal, 2 strike, 3 pensions
PASSAGES = [
    ("vacaciones", "Vacaciones anuales retribuidas de treinta días naturales.", [1, 0, 0, 0], "es"),
    ("despido", "El despido disciplinario se notificará por escrito al trabajador.", [0, 1, 0, 0], "es"),
    ("huelga", "Se reconoce el derecho a la huelga de los trabajadores.", [0, 0, 1, 0], "es"),
    ("ferias", "Férias anuais remuneradas de trinta dias corridos.", [0.9, 0, 0, 0.1], "pt"),
]
PORTUGUESE = {"field": "meta.lang", "operator": "==", "value": "pt"}


def _documents() -> list[Document]:
    docs = [Document(id=i, content=text, embedding=vec, meta={"lang": lang}) for i, text, vec, lang in PASSAGES]
    return SparseDocumentEmbedder().run(documents=docs)["documents"]


def _sparse(text: str) -> SparseEmbedding:
    return SparseTextEmbedder().run(text=text)["sparse_embedding"]


@pytest.fixture(params=["edge", "qdrant"])
def store(request, tmp_path):
    if request.param == "edge":
        store = EdgeDocumentStore(path=str(tmp_path / "store"))
    else:
        from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

        store = QdrantDocumentStore(
            location=":memory:", embedding_dim=4, use_sparse_embeddings=True, sparse_idf=True, similarity="cosine"
        )
    store.write_documents(_documents())
    yield store
    if request.param == "edge":
        store.close()


def _empty_store(kind: str, path):
    if kind == "edge":
        return EdgeDocumentStore(path=str(path))
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

    return QdrantDocumentStore(
        location=":memory:", embedding_dim=4, use_sparse_embeddings=True, sparse_idf=True, similarity="cosine"
    )


@pytest.mark.parametrize("kind", ["edge", "qdrant"])
def test_equal_scores_at_the_cut_go_in_point_id_order_on_both_stores(kind, tmp_path):
    """Identical passages (a repealed statute and the one that replaced it) rank alike whatever the write order."""
    text = "Vacaciones anuales retribuidas de treinta días naturales."
    twins = SparseDocumentEmbedder().run(documents=[
        Document(id=f"twin-{n:02d}", content=text, embedding=[1, 0, 0, 0]) for n in range(40)
    ])["documents"]
    expected = sorted((doc.id for doc in twins), key=lambda doc_id: str(uuid.uuid5(POINT_ID_NAMESPACE, doc_id)))[:5]
    requests = [
        {"mode": "dense", "embedding": [1, 0, 0, 0], "top_k": 5},
        {"mode": "sparse", "sparse_embedding": _sparse("vacaciones retribuidas"), "top_k": 5},
    ]
    for name, order in (("forward", twins), ("backward", twins[::-1])):
        store = _empty_store(kind, tmp_path / name)
        for doc in order:  # one write each: the engine holds them in the order written
            store.write_documents([doc])
        assert [[hit.id for hit in hits] for hits in search_batch(store, requests)] == [expected, expected]
        if kind == "edge":
            store.close()


def test_both_stores_are_supported_and_others_are_not(store):
    assert supports_vector_search(store)
    assert not supports_vector_search(InMemoryDocumentStore())
    assert not supports_vector_search(object())


def test_dense_search_ranks_by_cosine_and_applies_filters(store):
    hits = search_dense(store, [1, 0, 0, 0], top_k=2)
    assert [hit.id for hit in hits] == ["vacaciones", "ferias"]
    assert hits[0].score == pytest.approx(1.0, abs=1e-4) and hits[0].score > hits[1].score
    assert [hit.id for hit in search_dense(store, [1, 0, 0, 0], filters=PORTUGUESE, top_k=3)] == ["ferias"]


def test_batch_answers_each_request_in_order(store):
    dense, sparse, hybrid = search_batch(
        store,
        [
            {"mode": "dense", "embedding": [0, 0, 1, 0], "top_k": 1},
            {"mode": "sparse", "sparse_embedding": _sparse("despido disciplinario"), "top_k": 1},
            {
                "mode": "hybrid",
                "embedding": [0, 1, 0, 0],
                "sparse_embedding": _sparse("despido"),
                "filters": {"field": "meta.lang", "operator": "==", "value": "es"},
                "top_k": 3,
            },
        ],
    )
    assert [hit.id for hit in dense] == ["huelga"]
    assert [hit.id for hit in sparse] == ["despido"]
    assert hybrid[0].id == "despido" and "ferias" not in {hit.id for hit in hybrid}


def test_similarity_by_id_scores_exactly_the_named_blocks_on_both_stores(store):
    # the stored vectors, whatever the nearest neighbours are: "despido" is orthogonal to the query, "ferias" close
    scores = similarity_by_id(store, [1, 0, 0, 0], ["despido", "ferias", "missing", "ferias"])
    assert set(scores) == {"despido", "ferias"}
    assert scores["despido"] == pytest.approx(0.0, abs=1e-4)
    assert scores["ferias"] == pytest.approx(0.9 / (0.9**2 + 0.1**2) ** 0.5, abs=1e-4)
    # a block the filters exclude gets no score; no ids, no search
    assert set(similarity_by_id(store, [1, 0, 0, 0], ["despido", "ferias"], filters=PORTUGUESE)) == {"ferias"}
    assert similarity_by_id(store, [1, 0, 0, 0], []) == {}


def test_best_passage_similarity_reads_each_blocks_children_on_both_stores(store):
    # two blocks' child chunks with passage vectors; "huelga" (a block without children) gets no score
    children = [
        Document(id=f"{parent}-{n}", content=f"{parent} {n}", embedding=vector,
                 meta={"level": "child", "parent_id": parent, "lang": lang})
        for parent, n, vector, lang in [
            ("vacaciones", 0, [1, 0, 0, 0], "es"), ("vacaciones", 1, [0, 1, 0, 0], "es"),
            ("ferias", 0, [0, 0.6, 0, 0.8], "pt"),
        ]
    ]
    store.write_documents(SparseDocumentEmbedder().run(documents=children)["documents"])
    scores = best_passage_similarity(store, [0, 1, 0, 0], ["vacaciones", "ferias", "huelga", "vacaciones"])
    assert scores == pytest.approx({"vacaciones": 1.0, "ferias": 0.6}, abs=1e-4)  # the best child of each
    assert best_passage_similarity(store, [0, 1, 0, 0], ["vacaciones", "ferias"], filters=PORTUGUESE) == \
        pytest.approx({"ferias": 0.6}, abs=1e-4)
    assert best_passage_similarity(store, [0, 1, 0, 0], []) == {}
    # the parents themselves are never counted as passages, whatever their vectors
    assert best_passage_similarity(store, [0, 0, 1, 0], ["huelga"]) == {}


def test_stored_vectors_reads_meta_and_vector_on_both_stores(store):
    found = stored_vectors(store, ["ferias", "missing", "huelga", "ferias"])
    assert set(found) == {"ferias", "huelga"}
    meta, vector = found["ferias"]
    norm = (0.9**2 + 0.1**2) ** 0.5  # both stores keep cosine vectors normalized
    assert meta["lang"] == "pt" and vector == pytest.approx([0.9 / norm, 0, 0, 0.1 / norm], abs=1e-6)
    assert found["huelga"][1] == pytest.approx([0, 0, 1, 0], abs=1e-6)
    assert stored_vectors(store, []) == {}


def test_stored_vectors_on_a_store_without_vector_search():
    # any Haystack store answers through its filters; a document without a vector reads as None
    memory = InMemoryDocumentStore()
    memory.write_documents([Document(id="a", content="x", embedding=[1.0, 0.0], meta={"embedding_hash": "h"}),
                            Document(id="b", content="y")])
    assert stored_vectors(memory, ["a", "b", "c"]) == {"a": ({"embedding_hash": "h"}, [1.0, 0.0]), "b": ({}, None)}


def test_malformed_requests_are_refused(store):
    with pytest.raises(ValueError):
        search_batch(store, [{"mode": "semantic", "embedding": [1, 0, 0, 0]}])
    with pytest.raises(ValueError):
        search_batch(store, [{"mode": "hybrid", "embedding": [1, 0, 0, 0]}])


def test_a_store_without_vector_search_is_a_type_error():
    with pytest.raises(TypeError, match="EdgeDocumentStore or a qdrant-haystack QdrantDocumentStore"):
        search_dense(InMemoryDocumentStore(), [1, 0, 0, 0])
