import pytest
from haystack import Document

from components.document_stores.edge_document_store import EdgeDocumentStore
from components.legal.access import access_filter
from components.retrievers.norm_catalogue import NormCatalogue

CE, ET1995, CLT = "BOE-A-1978-31229", "BOE-A-1995-7730", "DEL-5452-1943"


def _block(law_id, article, short, title, country, status="in_force", level="parent", **owner):
    return Document(
        id=f"{law_id}-{article}-{level}-{owner.get('tenant_id', 'public')}",
        content=f"Artículo {article}.",
        meta={"law_id": law_id, "article": article, "law_short": short, "law_title": title, "country": country,
              "status": status, "level": level, "scope": owner.pop("scope", "global"), **owner},
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    store = EdgeDocumentStore(path=tmp_path_factory.mktemp("catalogue") / "store")
    store.write_documents([
        _block(CE, "14", "CE", "Constitución Española", "es"),
        _block(CE, "15", "CE", "Constitución Española", "es"),
        _block(CE, "14", "CE", "Constitución Española", "es", level="child"),
        _block(ET1995, "38", "ET1995", "Estatuto de los Trabajadores de 1995", "es", status="repealed"),
        _block(CLT, "129", "CLT", "Consolidação das Leis do Trabalho", "br"),
        _block(CLT, "130", "CLT", "Consolidação das Leis do Trabalho", "br", status="repealed"),  # one article only
        # two tenants' uploads: each lists its own only
        _block("acme-reglamento", "1", None, "Reglamento interno de Acme", None, tenant_id="acme", scope="tenant"),
        _block("Lei 605/1949", "1", "Lei 605/1949", "Lei nº 605, de 5 de janeiro de 1949", "br", tenant_id="beta",
               scope="tenant"),
    ])
    yield store
    store.close()


def test_init_validates_and_round_trips(store):
    with pytest.raises(ValueError, match="max_norms"):
        NormCatalogue(document_store=store, max_norms=0)
    with pytest.raises(ValueError, match="get_metadata_field_unique_values"):
        NormCatalogue(document_store=object())
    catalogue = NormCatalogue(document_store=store, max_norms=50)
    data = catalogue.to_dict()
    assert data["type"] == "components.retrievers.norm_catalogue.NormCatalogue"
    assert data["init_parameters"]["max_norms"] == 50
    assert data["init_parameters"]["document_store"]["type"].endswith("EdgeDocumentStore")
    restored = NormCatalogue.from_dict(data)
    assert restored.max_norms == 50 and isinstance(restored.document_store, EdgeDocumentStore)


def test_a_catalogue_question_lists_the_norms_the_caller_can_read(store):
    catalogue = NormCatalogue(document_store=store)
    public = catalogue.run(query="¿Qué leyes tienes?", filters=access_filter(None))
    assert [(n["law_short"], n["country"], n["repealed"]) for n in public["norms"]] == [
        ("CE", "es", False), ("ET1995", "es", True), ("CLT", "br", False),  # CLT: one repealed article, in force
    ]
    assert public["norms"][0] == {"law_id": CE, "law_short": "CE", "law_title": "Constitución Española",
                                  "country": "es", "repealed": False}
    assert public["answer"].splitlines()[:5] == [
        "Respondo con el texto de estas normas:", "", "España:", "- CE: Constitución Española",
        "- ET1995: Estatuto de los Trabajadores de 1995 (derogada)",
    ]
    # a tenant sees its own uploads beside the public statutes, never another tenant's
    acme = catalogue.run(query="quais leis você conhece?", filters=access_filter({"tenant_id": "acme"}))
    assert [n["law_id"] for n in acme["norms"]] == [CE, ET1995, CLT, "acme-reglamento"]
    assert acme["answer"].startswith("Respondo com o texto destas normas:")
    assert "Outras normas:\n- Reglamento interno de Acme" in acme["answer"]
    assert "605" not in acme["answer"]
    beta = catalogue.run(query="quais leis você conhece?", filters=access_filter({"tenant_id": "beta"}))
    assert [n["law_id"] for n in beta["norms"]] == [CE, ET1995, CLT, "Lei 605/1949"]  # Brazil's, by short name
    assert "Acme" not in beta["answer"]


def test_any_other_question_lists_nothing(store):
    result = NormCatalogue(document_store=store).run(query="¿Qué leyes regulan las vacaciones?")
    assert result == {"norms": [], "answer": None}
    with pytest.raises(ValueError, match="query"):
        NormCatalogue(document_store=store).run(query=None)


def test_an_empty_store_says_it_holds_nothing(tmp_path):
    store = EdgeDocumentStore(path=tmp_path / "empty")
    result = NormCatalogue(document_store=store).run(query="¿qué normas hay disponibles?")
    assert result == {"norms": [], "answer": "No hay ninguna norma indexada que puedas consultar."}
    store.close()


def test_a_qdrant_server_store_lists_the_same_norms(store):
    # qdrant-haystack's QdrantDocumentStore (local mode here) has the same method: the same rows, tenant by tenant
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

    qdrant = QdrantDocumentStore(location=":memory:", embedding_dim=4, similarity="cosine", progress_bar=False)
    qdrant.write_documents(store.filter_documents())
    edge, server = NormCatalogue(document_store=store), NormCatalogue(document_store=qdrant)
    for access in (None, {"tenant_id": "acme"}, {"tenant_id": "beta"}):
        filters = access_filter(access)
        expected = edge.run(query="¿Qué leyes tienes?", filters=filters)
        assert server.run(query="¿Qué leyes tienes?", filters=filters) == expected
        assert len(expected["norms"]) == 3 + (access is not None)
