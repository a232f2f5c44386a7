import numpy as np
import pytest
from haystack import Document
from haystack.dataclasses import SparseEmbedding

from components.document_stores.edge_document_store import EdgeDocumentStore
from components.retrievers.hybrid_retriever import HIT_FIELDS, HybridRetriever
from components.embedders.sparse_embedder import SparseDocumentEmbedder, SparseTextEmbedder

# 4-d toy dense space: axis 0 vacations, 1 dismissal, 2 strike, 3 pensions
PASSAGES = [
    ("v-norm", "normativa", "Vacaciones anuales retribuidas de treinta días naturales.", [1, 0, 0, 0]),
    ("d-norm", "normativa", "El despido disciplinario se notificará por escrito al trabajador.", [0, 1, 0, 0]),
    ("h-norm", "normativa", "Se reconoce el derecho a la huelga de los trabajadores.", [0, 0, 1, 0]),
    ("j-norm", "normativa", "La pensión de jubilación contributiva exige un periodo de cotización.", [0, 0, 0, 1]),
    ("v-sent", "sentencias", "Sentencia sobre vacaciones no disfrutadas y su compensación.", [0.9, 0.1, 0, 0]),
    ("v-crit", "criterios", "Criterio técnico sobre el calendario de vacaciones.", [0.8, 0, 0.2, 0]),
]


@pytest.fixture
def store(tmp_path):
    docs = [
        Document(id=i, content=text, embedding=vec, meta={"collection": coll, "law_id": f"L-{i}", "article": "1", "lang": "es"})
        for i, coll, text, vec in PASSAGES
    ]
    docs = SparseDocumentEmbedder().run(documents=docs)["documents"]
    s = EdgeDocumentStore(path=str(tmp_path / "store"))
    s.write_documents(docs)
    yield s
    s.close()


def _sparse(text: str) -> SparseEmbedding:
    return SparseTextEmbedder().run(text=text)["sparse_embedding"]


def test_init_defaults_and_validation(store):
    r = HybridRetriever(document_store=store)
    assert r.top_k == 40 and r.mode == "hybrid"
    assert r.collections == {"normativa": 1.0, "sentencias": 0.8, "criterios": 0.9}
    with pytest.raises(ValueError, match="top_k"):
        HybridRetriever(document_store=store, top_k=0)
    with pytest.raises(ValueError, match="mode"):
        HybridRetriever(document_store=store, mode="fuzzy")
    with pytest.raises(ValueError, match="positive weights"):
        HybridRetriever(document_store=store, collections={"normativa": 0})
    assert r.coverage_pivot == 0.5
    for pivot in (0, -0.5, 1.5):
        with pytest.raises(ValueError, match="coverage_pivot"):
            HybridRetriever(document_store=store, coverage_pivot=pivot)


def test_to_dict_from_dict_round_trip(store):
    r = HybridRetriever(document_store=store, top_k=7, mode="sparse", collections={"normativa": 1.0}, prefetch_k=30,
                        coverage_pivot=0.4)
    data = r.to_dict()
    assert data["init_parameters"]["coverage_pivot"] == 0.4
    assert data["type"] == "components.retrievers.hybrid_retriever.HybridRetriever"
    assert data["init_parameters"]["document_store"]["type"] == "components.document_stores.edge_document_store.EdgeDocumentStore"
    restored = HybridRetriever.from_dict(data)
    assert restored.to_dict() == data
    assert isinstance(restored.document_store, EdgeDocumentStore)


@pytest.mark.parametrize("mode", ["hybrid", "dense", "sparse"])
def test_run_finds_the_vacation_passage(store, mode):
    docs = HybridRetriever(document_store=store, top_k=3).run(
        query_embedding=[1, 0, 0, 0], query_sparse_embedding=_sparse("vacaciones anuales"), mode=mode
    )["documents"]
    assert docs[0].id == "v-norm"
    assert all(d.score is not None for d in docs)
    assert [d.score for d in docs] == sorted((d.score for d in docs), reverse=True)


def test_run_weights_collections_and_dedups(store):
    r = HybridRetriever(document_store=store, top_k=10, mode="dense")
    docs = r.run(query_embedding=[1, 0, 0, 0], query_sparse_embedding=None)["documents"]
    ids = [d.id for d in docs]
    assert len(ids) == len(set(ids))
    by_id = {d.id: d for d in docs}
    assert {"v-norm", "v-sent", "v-crit"} <= set(by_id)
    # the sentencia is weighted 0.8: its score is 0.8 x its raw similarity
    raw = store.query_dense([1, 0, 0, 0], top_k=10, filters={"field": "meta.collection", "operator": "==", "value": "sentencias"})
    assert by_id["v-sent"].score == pytest.approx(0.8 * raw[0].score, rel=1e-5)
    only = r.run(query_embedding=[1, 0, 0, 0], collections=["criterios"])["documents"]
    assert [d.id for d in only] == ["v-crit"]


def test_run_applies_filters_and_rejects_bad_input(store):
    r = HybridRetriever(document_store=store, filters={"field": "meta.collection", "operator": "!=", "value": "criterios"})
    docs = r.run(
        query_embedding=[1, 0, 0, 0],
        query_sparse_embedding=_sparse("vacaciones"),
        filters={"field": "meta.law_id", "operator": "in", "value": ["L-v-norm", "L-v-crit", "L-d-norm"]},
    )["documents"]
    assert {d.id for d in docs} <= {"v-norm", "d-norm"}
    assert docs[0].id == "v-norm"
    with pytest.raises(ValueError, match="Unknown collection"):
        r.run(query_embedding=[1, 0, 0, 0], query_sparse_embedding=_sparse("x"), collections=["jurisprudencia"])
    with pytest.raises(ValueError, match="query_embedding"):
        r.run(query_sparse_embedding=_sparse("x"), mode="dense")
    with pytest.raises(ValueError, match="query_sparse_embedding"):
        r.run(query_embedding=[1, 0, 0, 0], mode="sparse")


def test_run_on_qdrant_server_store_in_memory_mode():
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

    qdrant = QdrantDocumentStore(location=":memory:", embedding_dim=4, use_sparse_embeddings=True, sparse_idf=True, similarity="cosine")
    docs = [
        Document(id=i, content=text, embedding=vec, meta={"collection": coll, "law_id": f"L-{i}", "article": "1"})
        for i, coll, text, vec in PASSAGES
    ]
    qdrant.write_documents(SparseDocumentEmbedder().run(documents=docs)["documents"])
    r = HybridRetriever(document_store=qdrant, top_k=3)
    hybrid = r.run(query_embedding=[0, 1, 0, 0], query_sparse_embedding=_sparse("despido disciplinario"))["documents"]
    assert hybrid[0].id == "d-norm"
    sparse = r.run(query_sparse_embedding=_sparse("huelga"), mode="sparse")["documents"]
    assert sparse[0].id == "h-norm"
    only_sent = r.run(query_embedding=[1, 0, 0, 0], query_sparse_embedding=_sparse("vacaciones"), collections=["sentencias"])["documents"]
    assert [d.id for d in only_sent] == ["v-sent"]

    # a parent BM25 alone found is judged on its meaning on a server too (its stored vector, read by a search)
    dense = [Document(id="v-norm", content="v", meta={"level": "parent"}, score=0.99)]
    bm25_only = [Document(id="h-norm", content="h", meta={"level": "parent"}, score=3.0)]
    fused = {d.id: d for d in r._fuse_by_parent(dense, bm25_only, [0.6, 0, 0.8, 0])}
    assert fused["h-norm"].meta["dense_score"] == pytest.approx(0.8, abs=1e-4)
    scored = {d.id: d for d in HybridRetriever(document_store=qdrant, fusion="score")._fuse_scores(
        dense, bm25_only, [0.6, 0, 0.8, 0])}
    assert scored["h-norm"].meta["dense_score"] == pytest.approx(0.8, abs=1e-4)


def test_parent_level_fusion_collapses_children_and_weights_lists(store):
    r = HybridRetriever(document_store=store, rrf_k=2, dense_weight=1.1, sparse_weight=1.0)

    def parent(pid):
        return Document(id=pid, content=pid, meta={"level": "parent"})

    def child(cid, pid):
        return Document(id=cid, content=cid, meta={"level": "child", "parent_id": pid})

    dense = [parent("P2"), parent("P1"), parent("P3")]
    sparse = [child("c1a", "P1"), child("c1b", "P1"), child("c3a", "P3"), parent("P1")]
    fused = r._fuse_by_parent(dense, sparse)
    scores = {}
    for doc in fused:
        key = doc.id if doc.meta["level"] == "parent" else doc.meta["parent_id"]
        scores.setdefault(key, doc.score)
        assert doc.score == scores[key]  # every chunk of a parent carries the parent's fused score
    # P1: dense rank 1, sparse rank 0 (its two children and itself count once, at the best rank)
    assert scores["P1"] == pytest.approx(1.1 / 4 + 1.0 / 3)
    assert scores["P2"] == pytest.approx(1.1 / 3)
    assert scores["P3"] == pytest.approx(1.1 / 5 + 1.0 / 4)
    assert {d.id for d in fused[:2]} == {"c1a", "P1"}  # the best chunk of each list for the top parent
    assert "c1b" not in {d.id for d in fused}
    assert len({d.id for d in fused}) == len(fused)  # P1 came from both lists: returned once
    limited = r._fuse_by_parent(dense, sparse, limit=3)
    assert [(d.id, d.score) for d in limited] == [(d.id, d.score) for d in fused[:3]]  # the same head, cut
    assert sorted(scores, key=scores.get, reverse=True) == ["P1", "P3", "P2"]


def test_parent_level_fusion_does_not_depend_on_the_order_of_equal_scores(store):
    """Two statutes with the same article text (a repealed one and the one in force) score equally in BM25, and a
    search returns them in the order its index holds them, which differs between two builds of the same store."""
    r = HybridRetriever(document_store=store, rrf_k=2)

    def child(cid, pid, score):
        return Document(id=cid, content=cid, meta={"level": "child", "parent_id": pid}, score=score)

    dense = [Document(id=p, content=p, meta={"level": "parent"}, score=s) for p, s in
             [("P3", 0.7), ("Pold", 0.6), ("Pnew", 0.6)]]
    sparse = [child("c-old", "Pold", 9.0), child("c-new", "Pnew", 9.0), child("c3", "P3", 4.0)]
    one = r._fuse_by_parent(dense, sparse)
    other = r._fuse_by_parent([dense[0], dense[2], dense[1]], [sparse[1], sparse[0], sparse[2]])
    assert [(d.id, d.score) for d in one] == [(d.id, d.score) for d in other]
    scores = {d.meta.get("parent_id", d.id): d.score for d in one}
    assert scores["Pold"] == scores["Pnew"] == pytest.approx(1.1 / 4 + 1.0 / 3)  # dense rank 2 and BM25 rank 1, both
    assert scores["P3"] == pytest.approx(1.1 / 3 + 1.0 / 5)  # the rank after the tied pair is 3
    assert [d.id for d in one[:2]] == ["Pnew", "c-new"]  # equal fused scores go in parent id order


def test_chunk_level_fusion_is_available(store):
    r = HybridRetriever(document_store=store, top_k=3, fuse_by_parent=False)
    docs = r.run(query_embedding=[1, 0, 0, 0], query_sparse_embedding=_sparse("vacaciones anuales"))["documents"]
    assert docs[0].id == "v-norm"
    with pytest.raises(ValueError, match="fusion weights"):
        HybridRetriever(document_store=store, dense_weight=0, sparse_weight=0)


def test_query_text_is_not_searched_without_a_lexical_store(store):
    """The embedded default: BM25 from the store's sparse vectors; the query text only weighs the BM25 ranking."""
    r = HybridRetriever(document_store=store, top_k=3, coverage_pivot=None)
    assert "lexical_store" not in r.to_dict()["init_parameters"] and r.lexical_store is None
    kwargs = {"query_embedding": [0, 0, 1, 0], "query_sparse_embedding": _sparse("derecho a la huelga")}
    with_text = r.run(query="derecho a la huelga", **kwargs)["documents"]
    without = r.run(**kwargs)["documents"]
    assert [(d.id, d.score) for d in with_text] == [(d.id, d.score) for d in without]
    assert with_text[0].id == "h-norm"
    # with lexical coverage (the default), the same hits: the best one holds every content word, so BM25 weighs more
    covered = HybridRetriever(document_store=store, top_k=3).run(query="derecho a la huelga", **kwargs)["documents"]
    assert [d.id for d in covered] == [d.id for d in with_text]
    assert covered[0].score > with_text[0].score
    with pytest.raises(ValueError, match="query_sparse_embedding"):
        r.run(query="huelga", mode="sparse")  # the text alone is not enough for the store's BM25 vectors


def test_parent_level_fusion_records_each_parents_dense_similarity(store):
    r = HybridRetriever(document_store=store)
    dense = [Document(id="P1", content="p1", meta={"level": "parent"}, score=0.61),
             Document(id="P2", content="p2", meta={"level": "parent"}, score=0.42)]
    sparse = [Document(id="c3", content="c3", meta={"level": "child", "parent_id": "P3"}, score=7.0),
              Document(id="c1", content="c1", meta={"level": "child", "parent_id": "P1"}, score=5.0)]
    fused = {d.id: d for d in r._fuse_by_parent(dense, sparse)}
    assert fused["P1"].meta["dense_score"] == 0.61 and fused["c1"].meta["dense_score"] == 0.61
    assert fused["P2"].meta["dense_score"] == 0.42
    assert "dense_score" not in fused["c3"].meta  # found by BM25 only: no absolute signal
    assert "dense_score" not in dense[0].meta  # inputs untouched


def test_score_fusion_scores_every_candidate_on_both_signals(tmp_path):
    """`fusion="score"`: min-max normalized cosine and BM25 blended; a BM25-only parent gets its stored cosine."""
    s = EdgeDocumentStore(path=str(tmp_path / "fusion"))
    s.write_documents([
        Document(id="P1", content="p1", embedding=[1, 0, 0, 0], meta={"level": "parent"}),
        Document(id="P2", content="p2", embedding=[0.6, 0.8, 0, 0], meta={"level": "parent"}),
        Document(id="P3", content="p3", embedding=[0.8, 0.6, 0, 0], meta={"level": "parent"}),
    ])
    r = HybridRetriever(document_store=s, fusion="score", dense_share=0.5)
    dense = [Document(id="P1", content="p1", meta={"level": "parent"}, score=0.9),
             Document(id="P2", content="p2", meta={"level": "parent"}, score=0.5)]
    sparse = [Document(id="c3", content="c3", meta={"level": "child", "parent_id": "P3"}, score=8.0),
              Document(id="c2", content="c2", meta={"level": "child", "parent_id": "P2"}, score=4.0)]
    fused = r._fuse_scores(dense, sparse, [1, 0, 0, 0])
    by_id = {d.id: d for d in fused}
    # P3 was found by BM25 only: its cosine (0.8) is read from its stored vector
    assert by_id["c3"].meta["dense_score"] == pytest.approx(0.8)
    # cosines 0.9 / 0.5 / 0.8 -> 1, 0, 0.75; BM25 0 / 4 / 8 -> 0, 0.5, 1
    assert by_id["P1"].score == pytest.approx(0.5)
    assert by_id["c2"].score == by_id["P2"].score == pytest.approx(0.25)
    assert by_id["c3"].score == pytest.approx(0.875)
    assert [d.id for d in fused][0] == "c3"
    assert r._fuse_scores(dense, sparse, None)[0].id == "P1"  # no query vector: no stored cosine, BM25 share only
    s.close()


def test_score_fusion_through_run_and_validation(store):
    r = HybridRetriever(document_store=store, fusion="score", top_k=3)
    assert HybridRetriever.from_dict(r.to_dict()).fusion == "score"
    docs = r.run(query_embedding=[0, 1, 0, 0], query_sparse_embedding=_sparse("despido disciplinario"))["documents"]
    assert docs[0].id == "d-norm" and docs[0].meta["dense_score"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="fusion"):
        HybridRetriever(document_store=store, fusion="max")
    with pytest.raises(ValueError, match="dense_share"):
        HybridRetriever(document_store=store, dense_share=1.5)


def test_store_returns_stored_dense_vectors_by_id(store):
    found = store.dense_vectors_by_id(["v-norm", "missing", "h-norm"])
    assert set(found) == {"v-norm", "h-norm"}
    meta, vector = found["h-norm"]
    assert meta["collection"] == "normativa" and vector == pytest.approx([0, 0, 1, 0])
    assert store.dense_vectors_by_id([]) == {}
    # the vectors alone (what a query-time lookup reads): same vectors, no payload read
    bare = store.dense_vectors_by_id(["v-norm", "missing", "h-norm", "h-norm"], with_meta=False)
    assert set(bare) == {"v-norm", "h-norm"}
    assert bare["h-norm"] == ({}, pytest.approx([0, 0, 1, 0]))
    assert bare["v-norm"][1] == pytest.approx([1, 0, 0, 0])


def test_an_empty_store_has_no_stored_vectors(tmp_path):
    empty = EdgeDocumentStore(path=str(tmp_path / "empty"))
    assert empty.dense_vectors_by_id(["v-norm"]) == {}
    empty.close()


def test_rrf_fusion_reads_the_stored_cosine_of_bm25_only_parents(store):
    r = HybridRetriever(document_store=store)
    dense = [Document(id="v-norm", content="v", meta={"level": "parent"}, score=0.99)]
    sparse = [Document(id="h-norm", content="h", meta={"level": "parent"}, score=3.0)]
    fused = {d.id: d for d in r._fuse_by_parent(dense, sparse, [0.6, 0, 0.8, 0])}
    assert fused["h-norm"].meta["dense_score"] == pytest.approx(0.8)  # from its stored vector [0, 0, 1, 0]
    assert fused["v-norm"].meta["dense_score"] == 0.99  # the dense search's own similarity is kept


@pytest.mark.parametrize(("top_k", "prefetch_k", "searched"), [(10, None, 50), (80, None, 80), (80, 120, 120)])
def test_each_fused_list_is_searched_to_max_top_k_50_unless_set(store, top_k, prefetch_k, searched):
    # a hit beyond both lists' top_k only reorders the fused tail: the searches go as deep as `top_k` (at least 50)
    requests = []
    original = store.query_batch

    def recording(batch, **kwargs):
        requests.extend(batch)
        return original(batch, **kwargs)

    store.query_batch = recording
    r = HybridRetriever(document_store=store, top_k=top_k, prefetch_k=prefetch_k, collections={"normativa": 1.0},
                        passage_scores=False)
    docs = r.run(query_embedding=[1, 0, 0, 0], query_sparse_embedding=_sparse("vacaciones anuales"))["documents"]
    assert docs[0].id == "v-norm"
    assert sorted(q["mode"] for q in requests) == ["dense", "sparse"]
    assert {q["top_k"] for q in requests} == {searched}


def test_chunks_for_blocks_covers_the_blocks_asked_for(tmp_path):
    # 6 parents, each with 3 children that match the query (the earlier parents' better): parent-level fusion returns at most one chunk per
    # list and block, so 2 x blocks chunks hold the blocks; a single list returns several children of one block
    docs = []
    for p in range(6):
        vec = [1.0, 0.1 * p, 0, 0]
        docs.append(Document(id=f"P{p}", content=f"Artículo {p}.", embedding=vec,
                             meta={"collection": "normativa", "level": "parent", "law_id": "L", "article": str(p)}))
        for c in range(3):
            docs.append(Document(id=f"P{p}-c{c}", content="vacaciones " * (6 - p) + f"parte {c}",
                                 meta={"collection": "normativa", "level": "child", "parent_id": f"P{p}",
                                       "law_id": "L", "article": str(p)}))
    s = EdgeDocumentStore(path=str(tmp_path / "store"))
    s.write_documents(SparseDocumentEmbedder().run(documents=docs)["documents"])
    r = HybridRetriever(document_store=s, collections={"normativa": 1.0})
    assert r.chunks_for_blocks(5) == 40 and r.chunks_for_blocks(30) == 60
    assert r.chunks_for_blocks(30, "sparse") == 120 and r.chunks_for_blocks(30, "dense") == 120
    assert HybridRetriever(document_store=s, fuse_by_parent=False).chunks_for_blocks(30) == 120
    with pytest.raises(ValueError, match="blocks"):
        r.chunks_for_blocks(0)

    def parents(hits):
        return {d.meta.get("parent_id", d.id) for d in hits}

    dense, sparse = [1.0, 0.2, 0, 0], _sparse("vacaciones")
    fused = r.run(query_embedding=dense, query_sparse_embedding=sparse, top_k=2 * 3)["documents"]
    assert len(parents(fused)) >= 3 and all(len([d for d in fused if d.meta.get("parent_id", d.id) == p]) <= 2
                                            for p in parents(fused))
    bm25 = r.run(query_sparse_embedding=sparse, top_k=2 * 3, mode="sparse")["documents"]
    assert len(parents(bm25)) < 3 <= len(parents(r.run(query_sparse_embedding=sparse, top_k=4 * 3, mode="sparse")["documents"]))
    s.close()


def test_named_laws_are_searched_within_when_no_hit_is_from_them(store):
    # the strike passage is the last of the statutes for this query: top_k=2 leaves it out
    r = HybridRetriever(document_store=store, top_k=2, collections={"normativa": 1.0})
    query = {"query_embedding": [1, 0.2, 0.02, 0.1], "query_sparse_embedding": _sparse("vacaciones")}
    plain = r.run(**query)["documents"]
    assert [d.id for d in plain] == ["v-norm", "d-norm"]
    named = r.run(**query, named_laws=["L-h-norm"])["documents"]
    # its lists are fused and merged like a collection's: its best chunk is first of its own list
    assert [d.id for d in named] == ["v-norm", "h-norm"]
    assert named[1].score > plain[1].score
    # a named norm already among the hits changes nothing
    assert [d.id for d in r.run(**query, named_laws=["L-v-norm"])["documents"]] == [d.id for d in plain]
    # the caller's filters still apply to the named search
    outside = {"field": "meta.law_id", "operator": "!=", "value": "L-h-norm"}
    assert "h-norm" not in {d.id for d in r.run(**query, named_laws=["L-h-norm"], filters=outside)["documents"]}
    with pytest.raises(ValueError, match="named_laws"):
        r.run(**query, named_laws="L-h-norm")


def test_a_named_norm_past_the_blocks_kept_downstream_is_searched_within(store):
    # 4 fused chunks = 2 parent blocks kept by the resolver (chunks_for_blocks: 2 a block); the strike passage is
    # the 4th hit: among the chunks, but past the 2 blocks the resolver keeps, so it counts as absent
    r = HybridRetriever(document_store=store, collections={"normativa": 1.0})
    query = {"query_embedding": [1, 0.2, 0.02, 0.1], "query_sparse_embedding": _sparse("vacaciones"), "top_k": 4}
    plain = r.run(**query)["documents"]
    assert [d.id for d in plain] == ["v-norm", "d-norm", "j-norm", "h-norm"]
    named = r.run(**query, named_laws=["L-h-norm"])["documents"]
    assert [d.id for d in named][:2] == ["v-norm", "h-norm"]
    # a named norm within the kept blocks changes nothing
    assert [d.id for d in r.run(**query, named_laws=["L-d-norm"])["documents"]] == [d.id for d in plain]


def test_the_bm25_weight_follows_the_share_of_the_question_its_best_hit_holds(store):
    r = HybridRetriever(document_store=store)  # sparse_weight 1.0 at coverage 0.5

    def hit(text, lang="es"):
        return [Document(id="c", content=text, meta={"level": "child", "parent_id": "P", "lang": lang})]

    statute = hit("Se reconoce el derecho a la huelga de los trabajadores para la defensa de sus intereses.")
    assert r.lexical_weight("¿Se reconoce el derecho a la huelga?", statute) == pytest.approx(2.0)  # all 3 words
    assert r.lexical_weight("mi jefe me amenaza si hago huelga", statute) == pytest.approx(2 * 1 / 3)  # huelga
    assert r.lexical_weight("mi jefe me grita", statute) == 0.0  # nothing in common: BM25 counts for nothing
    # Portuguese read with Portuguese stopwords, accents folded: "férias" / "ferias", "concedidas" / "concedida"
    clt = hit("As férias serão concedidas por ato do empregador, em um só período.", "pt")
    assert r.lexical_weight("como as ferias podem ser concedidas?", clt) == pytest.approx(2.0)
    # no content word, no query text, no hit, or coverage off: the init weight
    assert r.lexical_weight("¿y eso?", statute) == 1.0
    assert r.lexical_weight(None, statute) == 1.0 and r.lexical_weight("huelga", []) == 1.0
    assert HybridRetriever(document_store=store, coverage_pivot=None).lexical_weight("mi jefe", statute) == 1.0


def test_a_bm25_ranking_that_misses_the_question_cannot_outvote_the_dense_one(store):
    """A colloquial question: BM25's best hit shares one word of four; the dense side's first block stays first."""
    r = HybridRetriever(document_store=store, rrf_k=2, dense_weight=1.1, sparse_weight=1.0)
    dense = [Document(id=p, content=p, meta={"level": "parent"}, score=score)
             for p, score in (("P1", 0.6), ("P3", 0.55), ("P2", 0.5))]
    sparse = [Document(id="c2", content="El calendario de la jornada de la empresa.",
                       meta={"level": "child", "parent_id": "P2"}, score=9.0),
              Document(id="c4", content="La jornada.", meta={"level": "child", "parent_id": "P4"}, score=3.0)]
    question = "el patrón no me deja coger días en la empresa"
    weight = r.lexical_weight(question, sparse)
    assert weight == pytest.approx(2 * 1 / 5)  # empresa, of patron / deja / coger / dias / empresa
    fixed = r._fuse_by_parent(dense, sparse)
    scaled = r._fuse_by_parent(dense, sparse, sparse_weight=weight)
    assert fixed[0].meta.get("parent_id", fixed[0].id) == "P2"  # at full weight BM25's noise decides
    assert scaled[0].id == "P1"


@pytest.mark.parametrize("mode", ["hybrid", "dense", "sparse"])
def test_light_hits_rank_the_same_chunks_without_their_content(store, mode):
    query = {"query_embedding": [1, 0.2, 0.02, 0.1], "query_sparse_embedding": _sparse("vacaciones despido"),
             "mode": mode, "named_laws": ["L-h-norm"]}
    whole = HybridRetriever(document_store=store, top_k=4).run(**query)["documents"]
    light = HybridRetriever(document_store=store, top_k=4, light_hits=True).run(**query)["documents"]
    assert len(whole) > 1 and [(d.id, d.score) for d in light] == [(d.id, d.score) for d in whole]
    assert all(d.content is None for d in light) and all(d.content for d in whole)
    for hit, doc in zip(light, whole):  # the meta fusion reads, and the dense similarity when the dense side has one
        assert hit.meta == {key: value for key, value in doc.meta.items() if key in ("law_id", "dense_score")}


def test_light_hits_weigh_bm25_by_the_content_of_its_best_hit(store):
    question = "¿se reconoce el derecho a la huelga de los trabajadores?"
    request = {"mode": "sparse", "sparse_embedding": _sparse(question), "top_k": 3}
    hits = store.query_batch([request], meta_fields=["level", "parent_id", "law_id"])[0]
    assert hits[0].id == "h-norm" and hits[0].content is None
    # all three content words in the strike passage, read from the store: as with the whole hit
    assert HybridRetriever(document_store=store, light_hits=True).lexical_weight(question, hits) == pytest.approx(2.0)


def test_preload_hits_fills_the_store_table_for_light_hits_only(store):
    query = {"query_embedding": [1, 0.2, 0.02, 0.1], "query_sparse_embedding": _sparse("vacaciones despido")}
    assert HybridRetriever(document_store=store).preload_hits() == 0  # whole hits read no table
    light = HybridRetriever(document_store=store, top_k=4, light_hits=True)
    before = light.run(**query)["documents"]
    store._open().forget()  # what the run put in the table
    assert light.preload_hits(max_points=len(PASSAGES) - 1) == 0  # a store too large for it
    assert light.preload_hits() == len(PASSAGES) and light.preload_hits() == 0
    assert len(store._open().keys[HIT_FIELDS]) == len(PASSAGES)
    after = light.run(**query)["documents"]
    assert [(d.id, d.score, d.meta) for d in after] == [(d.id, d.score, d.meta) for d in before]


def test_light_hits_round_trip(store):
    data = HybridRetriever(document_store=store, light_hits=True).to_dict()
    assert data["init_parameters"]["light_hits"] is True
    assert HybridRetriever.from_dict(data).light_hits is True
    assert HybridRetriever(document_store=store).light_hits is False


@pytest.fixture
def passage_store(tmp_path):
    """Two blocks whose own vectors lean to vacations, and the child chunks of one carrying passage vectors."""
    docs = [
        Document(id="A", content="Artículo 27. Educación. Control y gestión de los centros.",
                 embedding=[0.9, 0.1, 0.3, 0],
                 meta={"collection": "normativa", "level": "parent", "law_id": "CE", "article": "27", "lang": "es"}),
        Document(id="B", content="Artículo 38. Vacaciones anuales.", embedding=[1, 0, 0, 0],
                 meta={"collection": "normativa", "level": "parent", "law_id": "ET", "article": "38", "lang": "es"}),
        Document(id="A0", content="Artículo 27. Educación.", embedding=[1, 0, 0, 0],
                 meta={"collection": "normativa", "level": "child", "parent_id": "A", "law_id": "CE", "lang": "es"}),
        Document(id="A1", content="Control y gestión de los centros.", embedding=[0, 0, 1, 0],
                 meta={"collection": "normativa", "level": "child", "parent_id": "A", "law_id": "CE", "lang": "es"}),
        Document(id="B0", content="Vacaciones anuales.", embedding=None,
                 meta={"collection": "normativa", "level": "child", "parent_id": "B", "law_id": "ET", "lang": "es"}),
    ]
    docs = SparseDocumentEmbedder().run(documents=docs)["documents"]
    s = EdgeDocumentStore(path=str(tmp_path / "passages"))
    s.write_documents(docs)
    yield s
    s.close()


def test_dense_search_ranks_blocks_and_records_each_blocks_best_passage(passage_store):
    r = HybridRetriever(document_store=passage_store, collections={"normativa": 1.0})
    query = [0, 0, 1, 0]  # the words of block A's second passage
    dense = r.run(query_embedding=query, mode="dense")["documents"]
    assert [d.id for d in dense] == ["A", "B"]  # never a child chunk, though A1 is the nearest vector
    assert dense[0].meta["passage_score"] == pytest.approx(1.0)  # A1
    assert "passage_score" not in dense[1].meta  # B's child has no passage vector
    hybrid = r.run(query_embedding=query, query_sparse_embedding=_sparse("control gestión centros"))["documents"]
    by_id = {d.id: d for d in hybrid}
    assert by_id["A1"].meta["passage_score"] == pytest.approx(1.0)  # the BM25 child carries its block's best
    assert by_id["A1"].meta["dense_score"] == pytest.approx(0.3 / np.linalg.norm([0.9, 0.1, 0.3]), abs=1e-4)
    off = HybridRetriever(document_store=passage_store, collections={"normativa": 1.0}, passage_scores=False)
    assert all("passage_score" not in d.meta for d in off.run(query_embedding=query, mode="dense")["documents"])
    assert off.to_dict()["init_parameters"]["passage_scores"] is False
    assert HybridRetriever.from_dict(off.to_dict()).passage_scores is False
    # the run input overrides the init parameter either way, for that query only
    assert all("passage_score" not in d.meta
               for d in r.run(query_embedding=query, mode="dense", passage_scores=False)["documents"])
    assert off.run(query_embedding=query, mode="dense", passage_scores=True)["documents"][0].meta[
        "passage_score"] == pytest.approx(1.0)
    assert "passage_score" in r.run(query_embedding=query, mode="dense")["documents"][0].meta
