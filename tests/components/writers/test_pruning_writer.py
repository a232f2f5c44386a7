"""PruningDocumentWriter: writes and prunes a re-indexed law's stale chunks per owner (embedded store, OpenSearch)."""

from dataclasses import replace

import pytest
from haystack import Document
from haystack.document_stores.types import DuplicatePolicy

from components.converters.statute_converter import StatuteConverter
from components.document_stores.edge_document_store import EdgeDocumentStore
from components.document_stores.opensearch_index import (
    OPENSEARCH_ANALYZER,
    OPENSEARCH_INDEX_SETTINGS,
    OPENSEARCH_MAPPINGS,
)
from components.embedders.sparse_embedder import SparseDocumentEmbedder
from components.legal.access import tenant_meta
from components.preprocessors.article_parser import ArticleParser
from components.preprocessors.child_splitter import ChildSplitter
from components.preprocessors.semantic_parent_splitter import SemanticParentSplitter
from components.writers.pruning_writer import PruningDocumentWriter
from tests.corpus_helpers import RD_2720
from tests.fake_opensearch import FakeOpenSearchServer

RD_ID = "BOE-A-1999-346"
PUBLIC = tenant_meta(None)  # owner meta as the SDK stamps it: the local operator's public statutes
ACME = tenant_meta({"tenant_id": "acme"}, "tenant")  # a tenant's own copy of the same law


def _chunks(meta=None):
    """Parents and children of RD 2720/1998 (a real statute) with BM25 vectors, as the indexing pipeline makes them."""
    laws = StatuteConverter().run(sources=[RD_2720], meta=meta)["documents"]
    articles = ArticleParser().run(documents=laws)["documents"]
    parents = SemanticParentSplitter().run(documents=articles)["documents"]
    docs = ChildSplitter().run(documents=parents)["documents"]
    return SparseDocumentEmbedder().run(documents=docs)["documents"]


@pytest.fixture(scope="module")
def public():
    return _chunks(PUBLIC)


@pytest.fixture(scope="module")
def acme():
    return _chunks(ACME)


@pytest.fixture
def store(tmp_path):
    edge = EdgeDocumentStore(path=str(tmp_path / "store"), embedding_dim=2, return_embedding=True)
    yield edge
    edge.close()


def _ids(store, **meta):
    conditions = [{"field": f"meta.{key}", "operator": "==", "value": value} for key, value in meta.items()]
    docs = store.filter_documents({"operator": "AND", "conditions": conditions} if conditions else None)
    return {d.id for d in docs}


def test_init_defaults_and_validation(tmp_path):
    writer = PruningDocumentWriter(document_store=EdgeDocumentStore(path=str(tmp_path / "s")))
    assert (writer.policy, writer.prune_stale, writer.strip_embeddings) == (DuplicatePolicy.OVERWRITE, True, False)
    with pytest.raises(ValueError, match="document store"):
        PruningDocumentWriter(document_store=object())
    with pytest.raises(TypeError):
        PruningDocumentWriter(EdgeDocumentStore(path=str(tmp_path / "s")))  # keyword-only


def test_to_dict_from_dict_round_trip(tmp_path):
    writer = PruningDocumentWriter(document_store=EdgeDocumentStore(path=str(tmp_path / "s")),
                                   policy=DuplicatePolicy.SKIP, prune_stale=False, strip_embeddings=True)
    data = writer.to_dict()
    assert data["type"] == "components.writers.pruning_writer.PruningDocumentWriter"
    params = data["init_parameters"]
    assert (params["policy"], params["prune_stale"], params["strip_embeddings"]) == ("SKIP", False, True)
    assert params["document_store"]["type"].endswith("EdgeDocumentStore")
    restored = PruningDocumentWriter.from_dict(data)
    assert isinstance(restored.document_store, EdgeDocumentStore)
    assert restored.document_store.path == str(tmp_path / "s")
    assert restored.policy == DuplicatePolicy.SKIP and restored.to_dict() == data


def test_reindexing_a_law_without_an_article_prunes_exactly_its_chunks(store, public, acme):
    writer = PruningDocumentWriter(document_store=store)
    assert writer.run(documents=public) == {"documents_written": len(public), "pruned": 0}
    assert writer.run(documents=acme) == {"documents_written": len(acme), "pruned": 0}  # another owner's copy
    assert not {d.id for d in public} & {d.id for d in acme}  # owners never share ids
    assert writer.run(documents=public) == {"documents_written": len(public), "pruned": 0}  # idempotent
    removed = public[0].meta["article"]
    gone = {d.id for d in public if d.meta["article"] == removed}
    assert len(gone) >= 2  # the article's block and its child chunks
    shorter = [d for d in public if d.meta["article"] != removed]
    assert writer.run(documents=shorter) == {"documents_written": len(shorter), "pruned": len(gone)}
    assert _ids(store) == {d.id for d in shorter} | {d.id for d in acme}  # acme's copy of the article is untouched
    # and acme re-indexing its copy without another article prunes acme's chunks only
    other = acme[-1].meta["article"]
    acme_gone = {d.id for d in acme if d.meta["article"] == other}
    assert writer.run(documents=[d for d in acme if d.meta["article"] != other])["pruned"] == len(acme_gone)
    assert _ids(store, tenant_id="acme") == {d.id for d in acme} - acme_gone
    assert _ids(store) == {d.id for d in shorter} | ({d.id for d in acme} - acme_gone)


def test_a_forged_chunk_of_the_law_prunes_nothing_of_other_owners(store, public):
    writer = PruningDocumentWriter(document_store=store)
    writer.run(documents=public)
    forged = Document(id="acme-forged", content="Las vacaciones serán de dos días.",
                      meta={**public[0].meta, **ACME, "parent_id": None})
    assert writer.run(documents=[forged]) == {"documents_written": 1, "pruned": 0}
    assert _ids(store) == {d.id for d in public} | {"acme-forged"}


def test_remove_deletes_one_owners_chunks_of_a_law_and_nothing_else(store, public, acme):
    writer = PruningDocumentWriter(document_store=store)
    writer.run(documents=public)
    writer.run(documents=acme)
    other_law = Document(id="acme-other", content="Convenio.", meta={**ACME, "law_id": "ACME-1", "level": "parent"})
    writer.run(documents=[other_law])
    assert writer.remove([RD_ID], ACME) == len(acme)
    assert _ids(store) == {d.id for d in public} | {"acme-other"}
    assert writer.remove([RD_ID, "NO-SUCH-LAW"], ACME) == 0  # nothing of acme's left, nothing of anyone else's
    assert writer.remove([RD_ID, RD_ID], PUBLIC) == len(public)
    assert _ids(store) == {"acme-other"}
    with pytest.raises(ValueError, match="non-empty strings"):
        writer.remove([""], ACME)


def test_without_pruning_and_the_empty_and_bad_batches(store, public):
    writer = PruningDocumentWriter(document_store=store, prune_stale=False)
    writer.run(documents=public)
    assert writer.run(documents=public[:3]) == {"documents_written": 3, "pruned": 0}
    assert len(_ids(store)) == len(public)
    assert writer.run(documents=[]) == {"documents_written": 0, "pruned": 0}
    with pytest.raises(ValueError, match="list of Documents"):
        writer.run(documents=["not a document"])


def test_strip_embeddings_writes_text_and_meta_only(store, public):
    dense = [replace(d, embedding=[1.0, float(i)]) for i, d in enumerate(public[:4])]
    assert all(d.sparse_embedding is not None for d in dense)
    PruningDocumentWriter(document_store=store, strip_embeddings=True, prune_stale=False).run(documents=dense)
    stored = {d.id: d for d in store.filter_documents()}
    assert set(stored) == {d.id for d in dense}
    for doc in dense:
        assert stored[doc.id].content == doc.content and stored[doc.id].meta["law_id"] == RD_ID
        assert stored[doc.id].embedding is None and stored[doc.id].sparse_embedding is None
    assert dense[0].embedding == [1.0, 0.0]  # the caller's documents are left as they were
    PruningDocumentWriter(document_store=store, prune_stale=False).run(documents=dense[:1])
    assert store.filter_documents({"field": "id", "operator": "==", "value": dense[0].id})[0].embedding is not None


# ---------------------------------------------------------------- OpenSearch (in-process fake server)


@pytest.fixture
def server(monkeypatch):
    pytest.importorskip("haystack_integrations.document_stores.opensearch")
    return FakeOpenSearchServer().install(monkeypatch)


def _opensearch(index="lexhay"):
    from haystack_integrations.document_stores.opensearch import OpenSearchDocumentStore

    return OpenSearchDocumentStore(hosts=["http://localhost:9200"], index=index, mappings=OPENSEARCH_MAPPINGS,
                                   settings=OPENSEARCH_INDEX_SETTINGS)


def test_opensearch_round_trip(server):
    writer = PruningDocumentWriter(document_store=_opensearch("idx"), strip_embeddings=True)
    data = writer.to_dict()
    assert data["init_parameters"]["document_store"]["init_parameters"]["index"] == "idx"
    restored = PruningDocumentWriter.from_dict(data)
    assert restored.strip_embeddings is True and restored.to_dict() == data


def test_opensearch_creates_the_spanish_index_writes_children_without_vectors_and_prunes(server, public):
    children = [d for d in public if d.meta["level"] == "child"]
    other = Document(id="other-law-chunk", content="Otra norma", meta={"law_id": "BOE-A-2015-11430", "level": "child"})
    writer = PruningDocumentWriter(document_store=_opensearch(), strip_embeddings=True)
    assert writer.run(documents=[*children, other]) == {"documents_written": len(children) + 1, "pruned": 0}
    (_, _, body), = [r for r in server.requests if r[0] == "indices.create"]
    analyzer = body["settings"]["analysis"]["analyzer"][OPENSEARCH_ANALYZER]
    assert analyzer["filter"][-1] == "asciifolding" and "lowercase" in analyzer["filter"]
    assert body["mappings"]["properties"]["content"]["analyzer"] == OPENSEARCH_ANALYZER
    (_, _, actions), = [r for r in server.requests if r[0] == "bulk"]
    assert {a["_op_type"] for a in actions} == {"index"}  # OVERWRITE: re-indexing replaces by id
    source = actions[0]["_source"]
    assert "sparse_embedding" not in source and source["embedding"] is None
    assert source["law_id"] == RD_ID and source["level"] == "child" and source["parent_id"]  # meta flattened
    assert writer.run(documents=children)["pruned"] == 0  # another law is never pruned
    assert writer.run(documents=children[:-3])["pruned"] == 3  # the law re-indexed with three chunks fewer
    assert {d.id for d in _opensearch().filter_documents()} == {d.id for d in children[:-3]} | {"other-law-chunk"}


def test_opensearch_remove_deletes_one_owners_copy(server, public, acme):
    writer = PruningDocumentWriter(document_store=_opensearch(), strip_embeddings=True)
    children = {name: [d for d in docs if d.meta["level"] == "child"] for name, docs in (("public", public),
                                                                                          ("acme", acme))}
    writer.run(documents=children["public"])
    writer.run(documents=children["acme"])
    assert writer.remove([RD_ID], ACME) == len(children["acme"])
    assert {d.id for d in _opensearch().filter_documents()} == {d.id for d in children["public"]}


def test_qdrant_server_store_remove_deletes_one_owners_copy(public, acme):
    """The scale-out store (qdrant-haystack, in qdrant-client's local mode, which speaks the server's API)."""
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

    store = QdrantDocumentStore(location=":memory:", embedding_dim=2, similarity="cosine", progress_bar=False)
    writer = PruningDocumentWriter(document_store=store)
    writer.run(documents=[replace(d, embedding=[1.0, 0.5], sparse_embedding=None) for d in public + acme])
    assert writer.remove([RD_ID], ACME) == len(acme)
    assert {d.id for d in store.filter_documents()} == {d.id for d in public}
    assert writer.remove([RD_ID], PUBLIC) == len(public) and store.count_documents() == 0
