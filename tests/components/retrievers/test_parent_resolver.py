import pytest
from haystack import Document

from components.document_stores.edge_document_store import EdgeDocumentStore
from components.retrievers.parent_resolver import ParentResolver


@pytest.fixture
def store(tmp_path):
    s = EdgeDocumentStore(path=str(tmp_path / "store"))
    s.write_documents(
        [
            Document(id="p38", content="Artículo 38. Vacaciones anuales. ...", meta={"level": "parent", "article": "38"}),
            Document(id="p14", content="Artículo 14. Periodo de prueba. ...", meta={"level": "parent", "article": "14"}),
            Document(id="p15", content="Artículo 15. Duración del contrato. ...", meta={"level": "parent", "article": "15"}),
        ]
    )
    yield s
    s.close()


def _child(cid, parent, score):
    return Document(id=cid, content="...", meta={"level": "child", "parent_id": parent}, score=score)


def test_init_and_validation(store):
    assert ParentResolver(document_store=store).top_k == 10
    with pytest.raises(ValueError, match="top_k"):
        ParentResolver(document_store=store, top_k=0)


def test_to_dict_from_dict_round_trip(store):
    resolver = ParentResolver(document_store=store, top_k=5)
    data = resolver.to_dict()
    assert data["init_parameters"]["top_k"] == 5
    restored = ParentResolver.from_dict(data)
    assert restored.to_dict() == data


def test_run_groups_children_keeps_best_score_and_order(store):
    hits = [
        _child("c1", "p14", 0.9),
        _child("c2", "p38", 0.5),
        _child("c3", "p38", 0.95),
        Document(id="p15", content="Artículo 15. Duración del contrato. ...", meta={"level": "parent", "article": "15"}, score=0.7),
    ]
    docs = ParentResolver(document_store=store).run(documents=hits)["documents"]
    assert [d.id for d in docs] == ["p38", "p14", "p15"]
    assert [d.score for d in docs] == [0.95, 0.9, 0.7]
    assert docs[0].content.startswith("Artículo 38")
    assert docs[0].meta["matched_chunk_ids"] == ["c2", "c3"]
    top1 = ParentResolver(document_store=store).run(documents=hits, top_k=1)["documents"]
    assert [d.id for d in top1] == ["p38"]


def test_run_skips_missing_parents(store):
    docs = ParentResolver(document_store=store).run(documents=[_child("c9", "gone", 0.4), _child("c1", "p14", 0.3)])["documents"]
    assert [d.id for d in docs] == ["p14"]


def test_run_keeps_the_best_dense_similarity_of_a_parents_hits(store):
    hits = [_child("c1", "p38", 0.9), _child("c2", "p38", 0.5), _child("c3", "p14", 0.4)]
    hits[0].meta["dense_score"], hits[1].meta["dense_score"] = 0.41, 0.57
    docs = {d.id: d for d in ParentResolver(document_store=store).run(documents=hits)["documents"]}
    assert docs["p38"].meta["dense_score"] == 0.57
    assert "dense_score" not in docs["p14"].meta


def test_run_keeps_the_best_passage_similarity_of_a_parents_hits(store):
    hits = [_child("c1", "p38", 0.9), _child("c2", "p38", 0.5), _child("c3", "p14", 0.4)]
    hits[0].meta["passage_score"], hits[1].meta["passage_score"] = 0.62, 0.48
    hits[2].meta["dense_score"] = 0.3
    docs = {d.id: d for d in ParentResolver(document_store=store).run(documents=hits)["documents"]}
    assert docs["p38"].meta["passage_score"] == 0.62 and "dense_score" not in docs["p38"].meta
    assert "passage_score" not in docs["p14"].meta and docs["p14"].meta["dense_score"] == 0.3


def test_run_reads_parents_through_the_access_filter(tmp_path):
    from components.legal.access import access_filter

    store = EdgeDocumentStore(path=str(tmp_path / "acl"))
    store.write_documents([
        Document(id="public", content="Artículo 1.", meta={"level": "parent", "article": "1"}),
        Document(id="acme", content="Cláusula reservada de acme.",
                 meta={"level": "parent", "article": "1", "scope": "tenant", "tenant_id": "acme"}),
    ])
    hits = [_child("c-public", "public", 0.9), _child("c-acme", "acme", 0.8)]  # e.g. a forged or stale child hit
    resolver = ParentResolver(document_store=store)
    beta = resolver.run(documents=hits, filters=access_filter({"tenant_id": "beta"}))["documents"]
    assert [d.id for d in beta] == ["public"]
    acme = resolver.run(documents=hits, filters=access_filter({"tenant_id": "acme"}))["documents"]
    assert [d.id for d in acme] == ["public", "acme"]
    store.close()


def test_run_reads_the_block_of_a_light_parent_hit(store):
    """A light hit (id, score, the meta fusion reads; no content) of a parent block: the block is read whole."""
    hits = [Document(id="p15", meta={"level": "parent", "dense_score": 0.6}, score=0.8), _child("c1", "p38", 0.5)]
    docs = ParentResolver(document_store=store).run(documents=hits)["documents"]
    assert [d.id for d in docs] == ["p15", "p38"]
    assert docs[0].content.startswith("Artículo 15") and docs[0].meta["article"] == "15"
    assert docs[0].meta["dense_score"] == 0.6 and docs[0].score == 0.8
