import json
import subprocess
import sys
from pathlib import Path

import pytest
from haystack import Document
from haystack.dataclasses import SparseEmbedding
from haystack.document_stores.errors import DocumentStoreError, DuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy
from haystack.errors import FilterError

from components.document_stores import edge_converters, edge_document_store, ties
from components.document_stores.edge_document_store import DEFAULT_PAYLOAD_INDEXES, EdgeDocumentStore
from components.embedders.sparse_embedder import SparseDocumentEmbedder, SparseTextEmbedder

REPO_ROOT = Path(__file__).resolve().parents[3]
DIM = 8
ET, LGSS, CE, LPRL, STS = "BOE-A-2015-11430", "BOE-A-2015-11724", "BOE-A-1978-31229", "BOE-A-1995-24292", "STS-2020-123"
LAWS = {
    ET: {"law_short": "ET", "rank": 2, "publication_date": "2015-10-24"},
    LGSS: {"law_short": "LGSS", "rank": 2, "publication_date": "2015-10-31"},
    CE: {"law_short": "CE", "rank": 1, "publication_date": "1978-12-29"},
    LPRL: {"law_short": "LPRL", "rank": 2, "publication_date": "1995-11-10"},
    STS: {"law_short": "STS", "rank": 5, "publication_date": "2020-03-05"},
}
# topic -> axis of the synthetic dense vectors
TOPICS = [
    "vacaciones", "jornada", "despido", "salario", "contratacion", "seguridad_social", "derechos", "prevencion"
]
PASSAGES = [
    ("et-38", ET, "38", "vacaciones", "Vacaciones anuales. El periodo de vacaciones anuales retribuidas, no "
     "sustituible por compensación económica, será el pactado en convenio colectivo. En ningún caso la duración "
     "será inferior a treinta días naturales."),
    ("et-34", ET, "34", "jornada", "Jornada. La duración máxima de la jornada ordinaria de trabajo será de cuarenta "
     "horas semanales de trabajo efectivo de promedio en cómputo anual."),
    ("et-37", ET, "37", "vacaciones", "Descanso semanal, fiestas y permisos. Los trabajadores tendrán derecho a un "
     "descanso mínimo semanal de día y medio ininterrumpido."),
    ("et-54", ET, "54", "despido", "Despido disciplinario. El contrato de trabajo podrá extinguirse por decisión del "
     "empresario, mediante despido basado en un incumplimiento grave y culpable del trabajador."),
    ("et-56", ET, "56", "despido", "Despido improcedente. Cuando el despido sea declarado improcedente, el empresario "
     "podrá optar entre la readmisión del trabajador o el abono de una indemnización de treinta y tres días de "
     "salario por año de servicio."),
    ("et-48", ET, "48", "vacaciones", "Suspensión con reserva de puesto de trabajo. El nacimiento suspenderá el "
     "contrato de trabajo durante dieciséis semanas."),
    ("et-26", ET, "26", "salario", "Del salario. Se considerará salario la totalidad de las percepciones económicas "
     "de los trabajadores, en dinero o en especie."),
    ("et-27", ET, "27", "salario", "Salario mínimo interprofesional. El Gobierno fijará, previa consulta con las "
     "organizaciones sindicales, el salario mínimo interprofesional."),
    ("et-14", ET, "14", "contratacion", "Periodo de prueba. Podrá concertarse por escrito un periodo de prueba, con "
     "sujeción a los límites de duración que se establezcan en los convenios colectivos."),
    ("et-15", ET, "15", "contratacion", "Duración del contrato de trabajo. El contrato de trabajo se presume "
     "concertado por tiempo indefinido."),
    ("lgss-262", LGSS, "262", "seguridad_social", "Prestación por desempleo. La protección por desempleo se "
     "estructura en un nivel contributivo y en un nivel asistencial."),
    ("lgss-169", LGSS, "169", "seguridad_social", "Incapacidad temporal. Tendrán la consideración de situaciones "
     "determinantes de incapacidad temporal las debidas a enfermedad común o profesional y a accidente."),
    ("lgss-205", LGSS, "205", "seguridad_social", "Jubilación contributiva. Tendrán derecho a la pensión de "
     "jubilación las personas que hayan cumplido la edad exigida."),
    ("lgss-156", LGSS, "156", "prevencion", "Concepto de accidente de trabajo. Se entiende por accidente de trabajo "
     "toda lesión corporal que el trabajador sufra con ocasión o por consecuencia del trabajo."),
    ("ce-35", CE, "35", "derechos", "Todos los españoles tienen el deber de trabajar y el derecho al trabajo, a la "
     "libre elección de profesión u oficio y a una remuneración suficiente."),
    ("ce-40", CE, "40", "vacaciones", "Los poderes públicos garantizarán el descanso necesario, mediante la "
     "limitación de la jornada laboral, las vacaciones periódicas retribuidas."),
    ("lprl-14", LPRL, "14", "prevencion", "Derecho a la protección frente a los riesgos laborales. Los trabajadores "
     "tienen derecho a una protección eficaz en materia de seguridad y salud en el trabajo."),
    ("lprl-19", LPRL, "19", "prevencion", "Formación de los trabajadores. El empresario deberá garantizar que cada "
     "trabajador reciba una formación teórica y práctica en materia preventiva."),
    ("sts-1", STS, "fj3", "vacaciones", "Las vacaciones no disfrutadas por coincidir con una incapacidad temporal "
     "deben poder disfrutarse en otro periodo."),
]


def topic_vector(topic: str, jitter: float = 0.0) -> list[float]:
    axis = TOPICS.index(topic)
    vector = [0.0] * DIM
    vector[axis] = 1.0
    vector[(axis + 1) % DIM] = jitter
    return vector


def make_corpus() -> list[Document]:
    documents = []
    for position, (doc_id, law_id, article, topic, text) in enumerate(PASSAGES):
        meta = {
            "law_id": law_id,
            "article": article,
            "collection": "sentencias" if law_id == STS else "normativa",
            "level": "child",
            "parent_id": f"{doc_id}-parent",
            "status": "in_force",
            "lang": "es",
            "topics": [topic, "laboral"],
            **LAWS[law_id],
        }
        documents.append(
            Document(id=doc_id, content=text, meta=meta, embedding=topic_vector(topic, 0.05 * (position % 4)))
        )
    documents = SparseDocumentEmbedder().run(documents)["documents"]
    # a parent block, stored without vectors
    documents.append(
        Document(id="et-38-parent", content=PASSAGES[0][4], meta={"law_id": ET, "article": "38", "level": "parent"})
    )
    return documents


@pytest.fixture(scope="module")
def corpus() -> list[Document]:
    return make_corpus()


# Creating a payload index costs ~0.15 s of fsyncs on an empty shard: stores the tests modify skip them.
NO_INDEXES: dict[str, str] = {}


def new_store(path: Path, **kwargs) -> EdgeDocumentStore:
    return EdgeDocumentStore(path=str(path), payload_indexes=NO_INDEXES, **kwargs)


@pytest.fixture(scope="module")
def store(tmp_path_factory, corpus) -> EdgeDocumentStore:
    """The corpus in a store with the default payload indexes, shared by the tests that only read."""
    document_store = EdgeDocumentStore(path=str(tmp_path_factory.mktemp("shared") / "store"))
    document_store.write_documents(corpus)
    yield document_store
    document_store.close()


@pytest.fixture
def fresh_store(tmp_path, corpus) -> EdgeDocumentStore:
    """The corpus in a store of its own, for the tests that modify it."""
    document_store = new_store(tmp_path / "store")
    document_store.write_documents(corpus)
    yield document_store
    document_store.close()


def sparse(text: str) -> SparseEmbedding:
    return SparseTextEmbedder().run(text=text)["sparse_embedding"]


def ids(documents: list[Document]) -> set[str]:
    return {doc.id for doc in documents}


def run_python(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout


# ---------------------------------------------------------------------- init and serialization


def test_init_defaults(tmp_path, monkeypatch):
    monkeypatch.delenv("LEXHAY_STORE", raising=False)
    monkeypatch.chdir(tmp_path)
    store = EdgeDocumentStore()
    assert store.path is None
    assert store.embedding_dim is None
    assert (store.similarity, store.sparse_idf, store.payload_indexes) == ("cosine", True, None)
    assert (store.hnsw_m, store.hnsw_ef_construct, store.rrf_k, store.write_batch_size) == (16, 100, 2, 256)
    assert store.return_embedding is False
    assert store.resolved_path == tmp_path / ".lexhay"
    assert not (tmp_path / ".lexhay").exists()  # opened lazily


def test_init_path_from_env(tmp_path, monkeypatch):
    monkeypatch.setenv("LEXHAY_STORE", str(tmp_path / "from-env"))
    store = EdgeDocumentStore(payload_indexes=NO_INDEXES)
    store.write_documents([Document(id="a", content="texto")])
    assert store.resolved_path == tmp_path / "from-env"
    assert (tmp_path / "from-env" / "shard").is_dir()
    assert (tmp_path / "from-env" / "edge_store.json").is_file()
    assert store.to_dict()["init_parameters"]["path"] is None
    store.close()


def test_init_invalid_parameters():
    with pytest.raises(ValueError, match="similarity"):
        EdgeDocumentStore(similarity="manhattan")
    with pytest.raises(ValueError, match="payload index type"):
        EdgeDocumentStore(payload_indexes={"meta.law_id": "string"})
    with pytest.raises(ValueError, match="embedding_dim"):
        EdgeDocumentStore(embedding_dim=0)
    with pytest.raises(ValueError, match="write_batch_size"):
        EdgeDocumentStore(write_batch_size=0)


def test_to_dict():
    store = EdgeDocumentStore(path="./data/store", embedding_dim=768, rrf_k=60)
    assert store.to_dict() == {
        "type": "components.document_stores.edge_document_store.EdgeDocumentStore",
        "init_parameters": {
            "path": "./data/store",
            "embedding_dim": 768,
            "similarity": "cosine",
            "sparse_idf": True,
            "payload_indexes": None,
            "hnsw_m": 16,
            "hnsw_ef_construct": 100,
            "rrf_k": 60,
            "write_batch_size": 256,
            "return_embedding": False,
        },
    }


def test_from_dict():
    original = EdgeDocumentStore(
        path="./x", similarity="dot_product", payload_indexes={"meta.law_id": "keyword"}, return_embedding=True
    )
    store = EdgeDocumentStore.from_dict(original.to_dict())
    assert store.to_dict() == original.to_dict()
    assert (store.path, store.similarity, store.payload_indexes) == ("./x", "dot_product", {"meta.law_id": "keyword"})


# ---------------------------------------------------------------------- write / count / filter / delete


def test_write_count_and_payload_indexes(store, corpus):
    assert store.count_documents() == len(corpus)
    schema = store._open().shard.info().payload_schema
    assert set(DEFAULT_PAYLOAD_INDEXES) <= set(schema)
    assert schema["meta.law_id"].points == len(corpus)
    assert schema["meta.publication_date"].points == len(PASSAGES)  # ISO dates parse into the datetime index


def test_write_documents_roundtrip_content_and_meta(store, corpus):
    stored = {doc.id: doc for doc in store.filter_documents()}
    for doc in corpus:
        assert stored[doc.id].content == doc.content
        assert stored[doc.id].meta == doc.meta
        assert stored[doc.id].embedding is None  # return_embedding=False
        assert stored[doc.id].sparse_embedding is None


def test_return_embedding(tmp_path, corpus):
    store = new_store(tmp_path / "s", return_embedding=True)
    store.write_documents(corpus[:2] + corpus[-1:])
    first, second, parent = store.get_documents_by_id([corpus[0].id, corpus[1].id, corpus[-1].id])
    assert first.embedding == pytest.approx(corpus[0].embedding)  # unit vectors stay unchanged by cosine normalization
    assert first.sparse_embedding.indices == corpus[0].sparse_embedding.indices
    assert second.sparse_embedding.values == pytest.approx(corpus[1].sparse_embedding.values)
    assert parent.embedding is None and parent.sparse_embedding is None
    store.close()


@pytest.mark.parametrize("policy", [DuplicatePolicy.NONE, DuplicatePolicy.FAIL])
def test_write_duplicate_fails(fresh_store, policy):
    new = Document(id="new", content="nuevo")
    with pytest.raises(DuplicateDocumentError, match="et-38"):
        fresh_store.write_documents([new, Document(id="et-38", content="otro")], policy=policy)
    assert fresh_store.get_documents_by_id(["new"]) == []  # nothing written
    with pytest.raises(DuplicateDocumentError, match="more than once"):
        fresh_store.write_documents([new, Document(id="new", content="otra vez")], policy=policy)


def test_write_duplicate_skip(fresh_store, corpus):
    written = fresh_store.write_documents(
        [Document(id="et-38", content="otro"), Document(id="new", content="nuevo"), Document(id="new", content="2")],
        policy=DuplicatePolicy.SKIP,
    )
    assert written == 1
    assert fresh_store.count_documents() == len(corpus) + 1
    assert fresh_store.get_documents_by_id(["et-38", "new"])[0].content == corpus[0].content
    assert fresh_store.get_documents_by_id(["new"])[0].content == "nuevo"


def test_write_duplicate_overwrite(fresh_store, corpus):
    written = fresh_store.write_documents(
        [Document(id="et-38", content="reemplazado", meta={"law_id": "X"}), Document(id="new", content="nuevo")],
        policy=DuplicatePolicy.OVERWRITE,
    )
    assert written == 2
    assert fresh_store.count_documents() == len(corpus) + 1
    replaced = fresh_store.get_documents_by_id(["et-38"])[0]
    assert (replaced.content, replaced.meta) == ("reemplazado", {"law_id": "X"})
    # the replaced point has no vectors anymore
    assert "et-38" not in ids(fresh_store.query_dense(topic_vector("vacaciones"), top_k=20))


def test_write_rejects_invalid_input(tmp_path):
    store = new_store(tmp_path / "s")
    with pytest.raises(ValueError, match="list of Documents"):
        store.write_documents("not documents")
    with pytest.raises(ValueError, match="JSON"):
        store.write_documents([Document(id="x", content="c", meta={"when": object()})])
    store.write_documents([Document(id="a", content="a", embedding=[1.0, 0.0])])
    with pytest.raises(ValueError, match="2-dimensional"):
        store.write_documents([Document(id="b", content="b", embedding=[1.0, 0.0, 0.0])])
    store.close()


def test_embedding_dim_is_inferred_and_persisted(tmp_path):
    path = tmp_path / "s"
    store = new_store(path)
    store.write_documents([Document(id="parent", content="sin vectores")])  # no dense vector yet
    assert json.loads((path / "edge_store.json").read_text())["embedding_dim"] is None
    store.write_documents([Document(id="child", content="con vector", embedding=[0.0, 1.0, 0.0])])
    assert json.loads((path / "edge_store.json").read_text())["embedding_dim"] == 3
    store.close()
    with pytest.raises(ValueError, match="3-dimensional"):
        new_store(path, embedding_dim=4).count_documents()
    with pytest.raises(ValueError, match="similarity"):
        new_store(path, similarity="l2").count_documents()


def test_delete_documents(fresh_store, corpus):
    fresh_store.delete_documents(["et-38", "et-34", "does-not-exist"])
    assert fresh_store.count_documents() == len(corpus) - 2
    assert fresh_store.get_documents_by_id(["et-38", "et-34", "et-37"])[0].id == "et-37"


def test_delete_and_count_by_filter(fresh_store, corpus):
    law_filter = {"field": "meta.law_id", "operator": "==", "value": CE}
    assert fresh_store.count_documents_by_filter(law_filter) == 2
    assert fresh_store.delete_by_filter(law_filter) == 2
    assert fresh_store.count_documents() == len(corpus) - 2
    with pytest.raises(FilterError):
        fresh_store.delete_by_filter({})


def test_get_documents_by_id_keeps_order_and_skips_missing(store):
    found = store.get_documents_by_id(["lgss-262", "missing", "et-38", "lgss-262", "et-38-parent"])
    assert [doc.id for doc in found] == ["lgss-262", "et-38", "et-38-parent"]
    assert store.get_documents_by_id([]) == []


# ---------------------------------------------------------------------- filters

FILTER_CASES = [
    ({"field": "meta.law_id", "operator": "==", "value": CE}, {"ce-35", "ce-40"}),
    ({"field": "meta.law_short", "operator": "in", "value": ["CE", "LPRL"]}, {"ce-35", "ce-40", "lprl-14", "lprl-19"}),
    ({"field": "meta.rank", "operator": "<", "value": 2}, {"ce-35", "ce-40"}),
    ({"field": "meta.rank", "operator": ">=", "value": 5}, {"sts-1"}),
    ({"field": "meta.rank", "operator": "in", "value": [1, 5]}, {"ce-35", "ce-40", "sts-1"}),
    ({"field": "meta.rank", "operator": "==", "value": 5.0}, {"sts-1"}),
    (
        {"field": "meta.publication_date", "operator": ">", "value": "2015-10-25"},
        {p[0] for p in PASSAGES if p[1] in (LGSS, STS)},
    ),
    (
        {
            "operator": "AND",
            "conditions": [
                {"field": "meta.publication_date", "operator": ">=", "value": "1995-01-01T00:00:00"},
                {"field": "meta.publication_date", "operator": "<", "value": "2015-10-30"},
            ],
        },
        {p[0] for p in PASSAGES if p[1] in (ET, LPRL)},
    ),
    ({"field": "meta.topics", "operator": "==", "value": "despido"}, {"et-54", "et-56"}),
    ({"field": "meta.topics", "operator": "in", "value": ["jornada", "salario"]}, {"et-34", "et-26", "et-27"}),
    ({"field": "meta.level", "operator": "!=", "value": "child"}, {"et-38-parent"}),
    ({"field": "meta.level", "operator": "not in", "value": ["child"]}, {"et-38-parent"}),
    ({"field": "meta.collection", "operator": "==", "value": None}, {"et-38-parent"}),
    ({"field": "id", "operator": "==", "value": "et-15"}, {"et-15"}),
    ({"field": "id", "operator": "in", "value": ["et-15", "ce-35", "nope"]}, {"et-15", "ce-35"}),
    ({"field": "content", "operator": "==", "value": PASSAGES[1][4]}, {"et-34"}),
    (
        {
            "operator": "AND",
            "conditions": [
                {"field": "meta.collection", "operator": "==", "value": "normativa"},
                {
                    "operator": "OR",
                    "conditions": [
                        {"field": "meta.article", "operator": "==", "value": "38"},
                        {"field": "meta.law_short", "operator": "==", "value": "LPRL"},
                    ],
                },
            ],
        },
        {"et-38", "lprl-14", "lprl-19"},
    ),
    (
        {
            "operator": "NOT",
            "conditions": [
                {"field": "meta.law_id", "operator": "==", "value": ET},
                {"field": "meta.level", "operator": "==", "value": "child"},
            ],
        },
        {p[0] for p in PASSAGES if p[1] != ET} | {"et-38-parent"},
    ),
    (
        {
            "operator": "AND",
            "conditions": [
                {"field": "meta.law_id", "operator": "not in", "value": [ET, LGSS]},
                {"operator": "NOT", "conditions": [{"field": "meta.rank", "operator": "<=", "value": 1}]},
                {"field": "id", "operator": "!=", "value": "lprl-19"},
            ],
        },
        {"lprl-14", "sts-1"},
    ),
]


@pytest.mark.parametrize("filters, expected", FILTER_CASES)
def test_filter_documents(store, filters, expected):
    assert ids(store.filter_documents(filters)) == expected
    assert store.count_documents_by_filter(filters) == len(expected)


def test_filter_documents_bool_values(tmp_path):
    store = new_store(tmp_path / "s")
    store.write_documents(
        [
            Document(id="t", content="t", meta={"vigente": True, "n": 1}),
            Document(id="f", content="f", meta={"vigente": False, "n": 0}),
        ]
    )
    assert ids(store.filter_documents({"field": "meta.vigente", "operator": "==", "value": True})) == {"t"}
    assert ids(store.filter_documents({"field": "meta.vigente", "operator": "in", "value": [False]})) == {"f"}
    assert ids(store.filter_documents({"field": "meta.n", "operator": "==", "value": 1})) == {"t"}
    store.close()


def test_filter_documents_pages_through_all_results(tmp_path):
    store = new_store(tmp_path / "s")
    store.write_documents([Document(id=str(i), content=f"doc {i}", meta={"group": i % 2}) for i in range(2500)])
    assert len(store.filter_documents()) == 2500
    assert len(store.filter_documents({"field": "meta.group", "operator": "==", "value": 1})) == 1250
    store.close()


@pytest.mark.parametrize(
    "filters, message",
    [
        ({"field": "meta.law_id", "operator": "~=", "value": "x"}, "Unknown filter operator"),
        ({"field": "meta.law_id", "value": "x"}, "no 'operator'"),
        ({"field": "meta.law_id", "operator": "=="}, "needs 'field', 'operator' and 'value'"),
        ({"operator": "AND"}, "non-empty list of 'conditions'"),
        ({"operator": "OR", "conditions": []}, "non-empty list of 'conditions'"),
        ({"field": "meta.rank", "operator": "in", "value": 2}, "needs a list value"),
        ({"field": "meta.article", "operator": ">", "value": "38 bis"}, "ISO 8601"),
        ({"field": "meta.topics", "operator": "==", "value": ["a"]}, "Unsupported value"),
        ({"field": "id", "operator": ">", "value": "a"}, "Filter on 'id'"),
        ({"operator": "AND", "conditions": ["meta.law_id"]}, "must be a dictionary"),
    ],
)
def test_filter_documents_invalid_filters(store, filters, message):
    with pytest.raises(FilterError, match=message):
        store.filter_documents(filters)


# ---------------------------------------------------------------------- queries


def test_query_sparse(store):
    hits = store.query_sparse(sparse("vacaciones anuales retribuidas de treinta días"), top_k=3)
    assert hits[0].id == "et-38"
    assert hits[0].score > hits[-1].score > 0
    filtered = store.query_sparse(sparse("vacaciones"), filters={"field": "meta.law_id", "operator": "==", "value": CE})
    assert [doc.id for doc in filtered] == ["ce-40"]
    assert "et-38-parent" not in ids(store.query_sparse(sparse("vacaciones anuales"), top_k=30))
    assert store.query_sparse(sparse("de la y")) == []  # stopwords only


def test_query_dense(store):
    hits = store.query_dense(topic_vector("salario"), top_k=2)
    assert ids(hits) == {"et-26", "et-27"}
    assert hits[0].score == pytest.approx(1.0, abs=0.01)  # cosine similarity of nearly parallel vectors
    hits = store.query_dense(topic_vector("vacaciones"), filters={"field": "meta.rank", "operator": "==", "value": 1})
    assert [doc.id for doc in hits][0] == "ce-40"
    assert "et-38-parent" not in ids(store.query_dense(topic_vector("vacaciones"), top_k=30))


def test_query_hybrid(store):
    query = "indemnización por despido improcedente"
    hits = store.query_hybrid(topic_vector("despido"), sparse(query), top_k=3)
    assert hits[0].id == "et-56"
    assert hits[0].score > hits[1].score
    # the filter applies to both the dense and the sparse candidates
    hits = store.query_hybrid(
        topic_vector("despido"), sparse(query), filters={"field": "meta.law_id", "operator": "==", "value": LGSS}
    )
    assert hits and all(doc.meta["law_id"] == LGSS for doc in hits)


def test_query_hybrid_fuses_dense_and_sparse(store):
    # the dense side points at "salario", the sparse side at the vacation article: both appear in the fused list
    query = sparse("vacaciones anuales treinta días")
    hits = store.query_hybrid(topic_vector("salario"), query, top_k=4, prefetch_k=2)
    assert {"et-38", "et-26", "et-27"} <= ids(hits)


def test_query_batch(store):
    requests = [
        {"mode": "sparse", "sparse_embedding": sparse("desempleo contributivo asistencial"), "top_k": 1},
        {"mode": "dense", "embedding": topic_vector("prevencion"), "top_k": 3,
         "filters": {"field": "meta.law_short", "operator": "==", "value": "LPRL"}},
        {"mode": "hybrid", "embedding": topic_vector("jornada"), "sparse_embedding": sparse("jornada cuarenta horas"),
         "top_k": 1},
        {"mode": "sparse", "sparse_embedding": SparseEmbedding([], [])},
    ]
    results = store.query_batch(requests)
    assert [[doc.id for doc in result] for result in results] == [["lgss-262"], ["lprl-14", "lprl-19"], ["et-34"], []]
    assert store.query_batch([]) == []


def test_query_batch_matches_single_queries(store):
    embedding, sparse_embedding = topic_vector("vacaciones"), sparse("vacaciones retribuidas")
    batched = store.query_batch(
        [
            {"mode": "hybrid", "embedding": embedding, "sparse_embedding": sparse_embedding, "top_k": 5,
             "filters": {"field": "meta.collection", "operator": "==", "value": collection}}
            for collection in ("normativa", "sentencias")
        ]
    )
    for collection, result in zip(("normativa", "sentencias"), batched, strict=True):
        single = store.query_hybrid(
            embedding, sparse_embedding, top_k=5,
            filters={"field": "meta.collection", "operator": "==", "value": collection},
        )
        assert [(d.id, d.score) for d in result] == [(d.id, d.score) for d in single]
    assert [doc.id for doc in batched[1]] == ["sts-1"]


def twins(count: int) -> list[Document]:
    """`count` documents with the same text and vector (as repealed and current statutes share passages)."""
    text = "Las vacaciones anuales retribuidas no serán sustituibles por compensación económica."
    documents = [
        Document(id=f"twin-{n:02d}", content=text, meta={"level": "child"}, embedding=topic_vector("vacaciones"))
        for n in range(count)
    ]
    return SparseDocumentEmbedder().run(documents)["documents"]


@pytest.mark.parametrize("count", [8, 40])  # a tie that ends within the first search, one that runs past it
def test_equal_scores_rank_alike_whatever_the_write_history(tmp_path, count):
    documents = twins(count)
    stores = [new_store(tmp_path / "forward"), new_store(tmp_path / "backward")]
    for document in documents:  # one write each: the points land in the segments in the order written
        stores[0].write_documents([document])
    for document in reversed(documents):
        stores[1].write_documents([document])
    requests = [
        {"mode": "dense", "embedding": topic_vector("vacaciones"), "top_k": 5},
        {"mode": "sparse", "sparse_embedding": sparse("vacaciones compensación"), "top_k": 5},
    ]
    by_point_id = sorted((edge_converters.point_id(d.id), d.id) for d in documents)
    first_five = [doc_id for _, doc_id in by_point_id[:5]]
    for store in stores:
        for meta_fields in (None, ["level"]):
            results = store.query_batch(requests, meta_fields=meta_fields)
            assert [[d.id for d in result] for result in results] == [first_five] * len(requests)
    for store in stores:
        store.close()


def test_a_tie_past_the_deepest_search_is_cut_there(tmp_path, monkeypatch):
    monkeypatch.setattr(ties, "TIE_MAX_DEPTH", 32)
    store = new_store(tmp_path / "store")
    store.write_documents(twins(60))
    asked: list[int] = []
    build = EdgeDocumentStore._build_query_request

    def counted(self, entry, position, request, *, extra=0):
        asked.append(extra)
        return build(self, entry, position, request, extra=extra)

    monkeypatch.setattr(EdgeDocumentStore, "_build_query_request", counted)
    hits = store.query_batch([{"mode": "dense", "embedding": topic_vector("vacaciones"), "top_k": 5}])[0]
    assert asked == [16, 32]  # 5 + 16 hits all tied, then 5 + 32: as deep as it goes
    assert len(hits) == 5 and {hit.score for hit in hits} == {hits[0].score}
    assert [hit.id for hit in hits] == sorted((hit.id for hit in hits), key=edge_converters.point_id)
    store.close()


LIGHT_REQUESTS = [
    {"mode": "dense", "embedding": topic_vector("vacaciones"), "top_k": 5},
    {"mode": "sparse", "sparse_embedding": sparse("vacaciones jornada despido"), "top_k": 5,
     "filters": {"field": "meta.collection", "operator": "==", "value": "normativa"}},
    {"mode": "hybrid", "embedding": topic_vector("jornada"), "sparse_embedding": sparse("jornada horas"), "top_k": 3},
]


def test_query_batch_light_hits_are_the_same_hits_without_payload(store):
    whole = store.query_batch(LIGHT_REQUESTS)
    light = store.query_batch(LIGHT_REQUESTS, meta_fields=["parent_id", "law_id"])
    assert all(whole) and [[(d.id, d.score) for d in r] for r in light] == [[(d.id, d.score) for d in r] for r in whole]
    for hit, doc in zip((d for r in light for d in r), (d for r in whole for d in r)):
        assert hit.content is None and hit.embedding is None
        assert hit.meta == {"parent_id": doc.meta["parent_id"], "law_id": doc.meta["law_id"]}
    # a field set of its own, and a field a document lacks is left out
    assert store.query_batch(LIGHT_REQUESTS[:1], meta_fields=["article", "repeal_date"])[0][0].meta == {"article": "38"}


def test_query_batch_light_hits_follow_writes_and_deletes(fresh_store, corpus):
    request = [{"mode": "dense", "embedding": topic_vector("vacaciones"), "top_k": 1}]
    assert fresh_store.query_batch(request, meta_fields=["law_id"])[0][0].meta == {"law_id": ET}
    moved = corpus[0]  # et-38, now filed under another law
    def filed_under(law_id: str) -> Document:
        return Document(id=moved.id, content=moved.content, meta={**moved.meta, "law_id": law_id},
                        embedding=moved.embedding)

    fresh_store.write_documents([filed_under("OTRA")], policy=DuplicatePolicy.OVERWRITE)
    assert fresh_store.query_batch(request, meta_fields=["law_id"])[0][0].meta == {"law_id": "OTRA"}
    fresh_store.delete_documents([moved.id])
    assert moved.id not in ids(fresh_store.query_batch(request, meta_fields=["law_id"])[0])
    fresh_store.write_documents([moved], policy=DuplicatePolicy.OVERWRITE)
    fresh_store.delete_by_filter({"field": "meta.law_id", "operator": "==", "value": ET})
    fresh_store.write_documents([filed_under("TERCERA")])
    assert fresh_store.query_batch(request, meta_fields=["law_id"])[0][0].meta == {"law_id": "TERCERA"}


def test_light_hits_under_concurrent_searches_and_writes(fresh_store, corpus):
    """Searches in threads while a document is rewritten: no error, and once the writes stop, its last meta."""
    import threading

    moved, errors, stop = corpus[0], [], threading.Event()
    request = [{"mode": "dense", "embedding": topic_vector("vacaciones"), "top_k": 3}]

    def search() -> None:
        while not stop.is_set():
            try:
                fresh_store.query_batch(request, meta_fields=["law_id"])
                fresh_store.query_batch(request, meta_fields=["article", "law_id"])
            except Exception as error:  # noqa: BLE001 - any error fails the test below
                errors.append(error)

    threads = [threading.Thread(target=search) for _ in range(3)]
    for thread in threads:
        thread.start()
    for n in range(30):
        rewritten = Document(id=moved.id, content=moved.content, meta={**moved.meta, "law_id": f"L{n}"},
                             embedding=moved.embedding)
        fresh_store.write_documents([rewritten], policy=DuplicatePolicy.OVERWRITE)
    stop.set()
    for thread in threads:
        thread.join()
    assert not errors
    hits = {d.id: d for d in fresh_store.query_batch(request, meta_fields=["law_id"])[0]}
    assert hits[moved.id].meta == {"law_id": "L29"}


class _CountingShard:
    """The shard, with its `retrieve` calls counted (the reads of points the light-hit table lacks)."""

    def __init__(self, shard) -> None:
        self.shard, self.retrieved = shard, 0

    def retrieve(self, *args, **kwargs):
        self.retrieved += 1
        return self.shard.retrieve(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.shard, name)


def test_whole_hits_read_the_payload_of_the_hits_kept_only(fresh_store, monkeypatch):
    """A search fetches hits past `top_k` to settle ties; only the `top_k` it keeps are read, in one call."""
    entry = fresh_store._open()
    read: list[list[str]] = []
    retrieve = entry.shard.retrieve

    class Reading(_CountingShard):
        def retrieve(self, ids, *args, **kwargs):
            read.append(list(ids))
            return retrieve(ids, *args, **kwargs)

    monkeypatch.setattr(entry, "shard", Reading(entry.shard))
    results = fresh_store.query_batch([
        {"mode": "dense", "embedding": topic_vector("vacaciones"), "top_k": 1},
        {"mode": "sparse", "sparse_embedding": sparse("despido improcedente"), "top_k": 2},
    ])
    assert [[doc.id for doc in hits] for hits in results] == [["et-38"], ["et-56", "et-54"]]
    assert all(doc.content and doc.meta["law_id"] == ET for hits in results for doc in hits)
    assert len(read) == 1 and len(read[0]) == 3


def test_preload_light_hits_fills_the_table_once(fresh_store, corpus, monkeypatch):
    entry = fresh_store._open()
    assert fresh_store.preload_light_hits(["law_id"], max_points=len(corpus) - 1) == 0  # too large: nothing
    assert not entry.keys.get(("law_id",))
    assert fresh_store.preload_light_hits(["law_id"]) == len(corpus)
    assert fresh_store.preload_light_hits(["law_id"]) == 0  # already filled
    assert {key for key, _ in entry.keys[("law_id",)].values()} == {doc.id for doc in corpus}
    # every hit is in the table: no point is read, and the hits are those of whole Documents
    whole = fresh_store.query_batch(LIGHT_REQUESTS)
    counting = _CountingShard(entry.shard)
    monkeypatch.setattr(entry, "shard", counting)
    light = fresh_store.query_batch(LIGHT_REQUESTS, meta_fields=["law_id"])
    assert counting.retrieved == 0 and all(light)
    assert [[(d.id, d.score, d.meta) for d in r] for r in light] == [
        [(d.id, d.score, {"law_id": d.meta["law_id"]}) for d in r] for r in whole
    ]
    # writes keep it current: a rewritten document is read again once
    moved = corpus[0]
    rewritten = Document(id=moved.id, content=moved.content, meta={**moved.meta, "law_id": "OTRA"},
                         embedding=moved.embedding)
    fresh_store.write_documents([rewritten], policy=DuplicatePolicy.OVERWRITE)
    request = [{"mode": "dense", "embedding": topic_vector("vacaciones"), "top_k": 1}]
    assert fresh_store.query_batch(request, meta_fields=["law_id"])[0][0].meta == {"law_id": "OTRA"}
    assert counting.retrieved == 1
    # a delete by filter empties the tables: the next preload fills them again
    fresh_store.delete_by_filter({"field": "meta.law_id", "operator": "==", "value": "OTRA"})
    assert fresh_store.preload_light_hits(["law_id"]) == len(corpus) - 1


def test_preload_overtaken_by_an_emptying_is_not_marked_done(fresh_store, corpus, monkeypatch):
    """A delete by filter between two pages of the scroll empties what the preload read: it must run again."""
    from components.document_stores import edge_document_store

    entry = fresh_store._open()
    shard, pages = entry.shard, []

    class EmptiedAfterFirstPage:
        def scroll(self, request):
            if len(pages) == 1:
                entry.forget()  # what delete_by_filter does, after the first page was stored
            found = shard.scroll(request)
            pages.append(len(found[0]))
            return found

        def __getattr__(self, name):
            return getattr(shard, name)

    monkeypatch.setattr(edge_document_store, "_SCROLL_PAGE_SIZE", 3)
    monkeypatch.setattr(entry, "shard", EmptiedAfterFirstPage())
    assert fresh_store.preload_light_hits(["law_id"]) == len(corpus) and len(pages) > 1
    assert ("law_id",) not in entry.preloaded
    assert len(entry.keys[("law_id",)]) == len(corpus) - pages[0]  # the first page's points are gone
    assert fresh_store.preload_light_hits(["law_id"]) == pages[0]  # filled again, the missing points only
    assert ("law_id",) in entry.preloaded and len(entry.keys[("law_id",)]) == len(corpus)


def test_dense_similarities_read_scores_alone(store):
    embedding = topic_vector("prevencion")
    wanted = ["lprl-14", "et-38", "lgss-156", "et-38-parent", "no-such-id"]
    searched = {d.id: d.score for d in store.query_dense(
        embedding, top_k=10, filters={"field": "id", "operator": "in", "value": wanted})}
    similarities = store.dense_similarities(embedding, wanted)
    assert set(similarities) == {"lprl-14", "et-38", "lgss-156"}  # the parent has no vector, the last id no point
    assert similarities == pytest.approx(searched)
    assert similarities["lprl-14"] > similarities["et-38"]
    within = store.dense_similarities(
        embedding, wanted, filters={"field": "meta.law_id", "operator": "==", "value": ET}
    )
    assert set(within) == {"et-38"}
    assert store.dense_similarities(embedding, []) == {}
    with pytest.raises(ValueError, match="8-dimensional"):
        store.dense_similarities([1.0, 0.0], wanted)


def test_query_invalid_requests(store):
    with pytest.raises(ValueError, match="mode"):
        store.query_batch([{"mode": "bm25", "sparse_embedding": sparse("x")}])
    with pytest.raises(ValueError, match="unknown keys"):
        store.query_batch([{"mode": "dense", "embedding": topic_vector("jornada"), "k": 3}])
    with pytest.raises(ValueError, match="needs 'embedding'"):
        store.query_batch([{"mode": "hybrid", "sparse_embedding": sparse("x")}])
    with pytest.raises(ValueError, match="8-dimensional"):
        store.query_dense([1.0, 0.0])
    with pytest.raises(ValueError, match="top_k"):
        store.query_dense(topic_vector("jornada"), top_k=0)
    with pytest.raises(FilterError):
        store.query_dense(topic_vector("jornada"), filters={"field": "meta.rank", "operator": "between", "value": 1})


def test_queries_on_a_store_without_dense_vectors(tmp_path, corpus):
    store = new_store(tmp_path / "s")
    store.write_documents([corpus[-1]])  # the parent: no vectors at all
    assert store.query_dense(topic_vector("vacaciones")) == []
    assert store.query_sparse(sparse("vacaciones")) == []
    assert store.query_hybrid(topic_vector("vacaciones"), sparse("vacaciones")) == []
    store.close()


# ---------------------------------------------------------------------- sharing and persistence


def test_two_instances_share_one_shard(tmp_path, corpus):
    first = new_store(tmp_path / "store")
    # a different spelling of the same path, deserialized as in a pipeline loaded from YAML
    second = EdgeDocumentStore.from_dict(new_store(tmp_path / "other" / ".." / "store").to_dict())
    first.write_documents(corpus[:3])
    assert second.count_documents() == 3
    assert first._open().shard is second._open().shard
    second.write_documents(corpus[3:5])
    first.close()
    assert second.count_documents() == 5  # still open for the other instance
    assert first.count_documents() == 5  # a closed instance reopens on use
    first.close()
    second.close()


def test_store_open_elsewhere_raises_a_clear_error(tmp_path, monkeypatch):
    holder = new_store(tmp_path / "store")
    holder.count_documents()
    monkeypatch.setattr(edge_document_store, "_OPEN_SHARDS", {})  # as if the shard were open in another process
    with pytest.raises(DocumentStoreError, match="only one process"):
        new_store(tmp_path / "store").count_documents()
    monkeypatch.undo()
    holder.close()


def test_persistence_across_processes(tmp_path, corpus):
    path = tmp_path / "store"
    store = new_store(path)
    store.write_documents(corpus)
    store.close()

    reader = (
        "import json\n"
        "from components.document_stores.edge_document_store import EdgeDocumentStore\n"
        "from components.embedders.sparse_embedder import SparseTextEmbedder\n"
        f"store = EdgeDocumentStore(path={str(path)!r}, payload_indexes={{}})\n"
        "query = SparseTextEmbedder().run(text='indemnización despido improcedente')['sparse_embedding']\n"
        f"hits = store.query_hybrid({topic_vector('despido')!r}, query, top_k=1)\n"
        "from haystack import Document\n"
        "store.write_documents([Document(id='from-subprocess', content='escrito en otro proceso')])\n"
        "print(json.dumps({'count': store.count_documents(), 'top': hits[0].id}))\n"
    )
    assert json.loads(run_python(reader)) == {"count": len(corpus) + 1, "top": "et-56"}

    reopened = new_store(path)
    assert reopened.count_documents() == len(corpus) + 1
    assert reopened.get_documents_by_id(["from-subprocess"])[0].content == "escrito en otro proceso"
    reopened.write_documents([Document(id="dense-again", content="x", embedding=topic_vector("jornada"))])
    assert reopened.query_dense(topic_vector("jornada"), top_k=1)[0].id in {"dense-again", "et-34"}
    reopened.close()


# ---------------------------------------------------------------------- scale-out path (Qdrant server API)


def test_same_vectors_and_payload_work_on_qdrant_document_store(store, corpus):
    from haystack_integrations.components.retrievers.qdrant import QdrantHybridRetriever
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

    qdrant = QdrantDocumentStore(
        location=":memory:", use_sparse_embeddings=True, sparse_idf=True, embedding_dim=DIM, similarity="cosine"
    )
    assert qdrant.write_documents(corpus) == len(corpus)
    retriever = QdrantHybridRetriever(document_store=qdrant, top_k=3)
    query = sparse("indemnización por despido improcedente")
    filters = {"field": "meta.law_id", "operator": "==", "value": ET}

    server_hits = retriever.run(query_embedding=topic_vector("despido"), query_sparse_embedding=query, filters=filters)
    edge_hits = store.query_hybrid(topic_vector("despido"), query, filters=filters, top_k=3)
    assert server_hits["documents"][0].id == edge_hits[0].id == "et-56"
    assert all(doc.meta["law_id"] == ET for doc in server_hits["documents"])
    assert [doc.id for doc in server_hits["documents"]] == [doc.id for doc in edge_hits]

    server_sparse = qdrant._query_by_sparse(query, filters=filters, top_k=3)
    edge_sparse = store.query_sparse(query, filters=filters, top_k=3)
    assert [doc.id for doc in server_sparse] == [doc.id for doc in edge_sparse]
    assert [doc.score for doc in server_sparse] == pytest.approx([doc.score for doc in edge_sparse], rel=1e-4)
    assert ids(qdrant.filter_documents(filters)) == ids(store.filter_documents(filters))


def test_get_metadata_field_unique_values_by_index_and_by_scroll(tmp_path):
    store = EdgeDocumentStore(path=tmp_path / "unique")
    store.write_documents([
        Document(id="a", content="a", meta={"law_id": ET, "law_title": "Estatuto", "topics": ["jornada", "salario"],
                                           "level": "parent"}),
        Document(id="b", content="b", meta={"law_id": ET, "law_title": "Estatuto", "topics": ["salario"],
                                           "level": "child"}),
        Document(id="c", content="c", meta={"law_id": CE, "law_title": "Constitución", "level": "parent"}),
        Document(id="d", content="d", meta={"law_id": LGSS, "law_title": "Ley General", "level": "parent"}),
    ])
    # an indexed keyword field is counted by the index (facet), any other by a scroll: the same answer either way
    assert store.get_metadata_field_unique_values("law_id") == ([CE, ET, LGSS], 3)
    assert store.get_metadata_field_unique_values("meta.law_title") == (["Constitución", "Estatuto", "Ley General"], 3)
    assert store.get_metadata_field_unique_values("law_id", search_term="2015") == ([ET, LGSS], 2)
    assert store.get_metadata_field_unique_values("law_title", from_=1, size=1) == (["Estatuto"], 3)
    children = {"field": "meta.level", "operator": "==", "value": "child"}
    assert store.get_metadata_field_unique_values("law_title", filters=children) == (["Estatuto"], 1)
    assert store.get_metadata_field_unique_values("topics") == (["jornada", "salario"], 2)  # each item of a list
    assert store.get_metadata_field_unique_values("absent") == ([], 0)
    for bad in ({"metadata_field": ""}, {"metadata_field": "law_id", "size": 0}, {"metadata_field": "law_id",
                                                                                  "from_": -1}):
        with pytest.raises(ValueError):
            store.get_metadata_field_unique_values(**bad)
    store.close()
