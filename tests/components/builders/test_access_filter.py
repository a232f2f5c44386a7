import pytest
from haystack import Document

from components.builders.access_filter import AccessFilter, access_filter, check_access, tenant_meta
from components.document_stores.edge_document_store import EdgeDocumentStore

DOCS = [
    Document(id="statute", content="Artículo 38. Vacaciones anuales.", meta={"law_id": "ET"}),
    Document(id="global", content="Criterio público.", meta={"scope": "global"}),
    Document(id="acme-all", content="Política interna.", meta={"scope": "tenant", "tenant_id": "acme"}),
    Document(id="acme-case1", content="Escrito del caso 1.",
             meta={"scope": "tenant", "tenant_id": "acme", "case_id": "c1"}),
    Document(id="acme-case2", content="Escrito del caso 2.",
             meta={"scope": "tenant", "tenant_id": "acme", "case_id": "c2"}),
    Document(id="acme-labour", content="Nota del grupo laboral.",
             meta={"scope": "group", "tenant_id": "acme", "group_ids": ["laboral"]}),
    Document(id="acme-ana", content="Notas de Ana.", meta={"scope": "user", "tenant_id": "acme", "user_id": "ana"}),
    Document(id="beta-all", content="Documento de otro despacho.", meta={"scope": "tenant", "tenant_id": "beta"}),
    Document(id="beta-ana", content="Otra Ana, otro despacho.",
             meta={"scope": "user", "tenant_id": "beta", "user_id": "ana"}),
    Document(id="beta-labour", content="Grupo laboral de beta.",
             meta={"scope": "group", "tenant_id": "beta", "group_ids": ["laboral"]}),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    store = EdgeDocumentStore(path=str(tmp_path_factory.mktemp("acl") / "store"))
    store.write_documents(DOCS)
    yield store
    store.close()


def visible(store, access):
    return {d.id for d in store.filter_documents(access_filter(access))}


def test_anonymous_sees_global_only(store):
    assert visible(store, None) == {"statute", "global"}


def test_tenant_sees_its_tenant_documents_not_groups_or_users(store):
    assert visible(store, {"tenant_id": "acme"}) == {"statute", "global", "acme-all", "acme-case1", "acme-case2"}


def test_groups_and_user_widen_within_the_tenant_only(store):
    got = visible(store, {"tenant_id": "acme", "user_id": "ana", "group_ids": ["laboral"]})
    assert got == {"statute", "global", "acme-all", "acme-case1", "acme-case2", "acme-labour", "acme-ana"}
    assert not got & {"beta-all", "beta-ana", "beta-labour"}


def test_case_narrows_to_one_case(store):
    assert visible(store, {"tenant_id": "acme", "case_id": "c1"}) == {"statute", "global", "acme-case1"}


def test_user_filter_cannot_widen(store):
    widen = {"field": "meta.tenant_id", "operator": "==", "value": "beta"}
    combined = AccessFilter().run(tenant_id="acme", filters=widen)["filters"]
    assert {d.id for d in store.filter_documents(combined)} == set()
    everything = {"operator": "NOT", "conditions": [{"field": "meta.scope", "operator": "==", "value": "nope"}]}
    combined = AccessFilter().run(filters=everything)["filters"]
    assert {d.id for d in store.filter_documents(combined)} == {"statute", "global"}


def test_check_access_errors():
    with pytest.raises(ValueError, match="Unknown access key"):
        check_access({"tenant": "acme"})
    with pytest.raises(ValueError, match="need a tenant_id"):
        check_access({"user_id": "ana"})
    with pytest.raises(ValueError, match="group_ids"):
        check_access({"tenant_id": "acme", "group_ids": "laboral"})
    with pytest.raises(ValueError, match="non-empty string"):
        check_access({"tenant_id": "  "})
    assert check_access(None) == {}


def test_tenant_meta():
    assert tenant_meta(None) == {"scope": "global"}
    assert tenant_meta({"tenant_id": "acme"}) == {"scope": "tenant", "tenant_id": "acme"}
    assert tenant_meta({"tenant_id": "acme", "user_id": "ana"})["scope"] == "user"
    assert tenant_meta({"tenant_id": "acme", "group_ids": ["x"]}, scope="group")["group_ids"] == ["x"]
    with pytest.raises(ValueError, match="needs group_ids"):
        tenant_meta({"tenant_id": "acme"}, scope="group")
    with pytest.raises(ValueError, match="needs a tenant_id"):
        tenant_meta(None, scope="tenant")
    with pytest.raises(ValueError, match="scope must be"):
        tenant_meta({"tenant_id": "acme"}, scope="public")


def test_init_to_dict_from_dict():
    component = AccessFilter(default_tenant_id="acme")
    data = component.to_dict()
    assert data == {"type": "components.builders.access_filter.AccessFilter", "init_parameters": {"default_tenant_id": "acme"}}
    assert AccessFilter.from_dict(data).default_tenant_id == "acme"
    with pytest.raises(TypeError):
        AccessFilter("acme")  # keyword-only


def test_run_default_tenant_and_bad_filters(store):
    filters = AccessFilter(default_tenant_id="beta").run()["filters"]
    assert {d.id for d in store.filter_documents(filters)} == {"statute", "global", "beta-all"}
    with pytest.raises(ValueError, match="filter dict"):
        AccessFilter().run(filters="law_id=ET")
