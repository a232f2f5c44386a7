import pytest
from haystack import Document

from components.builders.access_filter import AccessFilter
from components.legal.access import NO_CASE, access_filter, check_access, owner_key, tenant_meta
from components.document_stores.edge_document_store import EdgeDocumentStore

DOCS = [
    Document(id="statute", content="Artículo 38. Vacaciones anuales.", meta={"law_id": "ET"}),
    Document(id="global", content="Criterio público.", meta={"scope": "global"}),
    Document(id="acme-all", content="Política interna.",
             meta={"scope": "tenant", "tenant_id": "acme", "case_id": NO_CASE}),
    Document(id="acme-case1", content="Escrito del caso 1.",
             meta={"scope": "tenant", "tenant_id": "acme", "case_id": "c1"}),
    Document(id="acme-case2", content="Escrito del caso 2.",
             meta={"scope": "tenant", "tenant_id": "acme", "case_id": "c2"}),
    Document(id="acme-labour", content="Nota del grupo laboral.",
             meta={"scope": "group", "tenant_id": "acme", "group_ids": ["laboral"], "case_id": NO_CASE}),
    Document(id="acme-ana", content="Notas de Ana.",
             meta={"scope": "user", "tenant_id": "acme", "user_id": "ana", "case_id": NO_CASE}),
    Document(id="beta-all", content="Documento de otro despacho.",
             meta={"scope": "tenant", "tenant_id": "beta", "case_id": NO_CASE}),
    Document(id="beta-ana", content="Otra Ana, otro despacho.",
             meta={"scope": "user", "tenant_id": "beta", "user_id": "ana", "case_id": NO_CASE}),
    Document(id="beta-labour", content="Grupo laboral de beta.",
             meta={"scope": "group", "tenant_id": "beta", "group_ids": ["laboral"], "case_id": NO_CASE}),
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
    # a private document without a case carries NO_CASE: "no case" is a value every store can filter on
    assert tenant_meta({"tenant_id": "acme"}) == {"scope": "tenant", "tenant_id": "acme", "case_id": NO_CASE}
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


def test_case_documents_are_a_boundary_for_non_admins(store):
    reader = {"tenant_id": "acme", "roles": ["reader"]}
    # a reader with no case sees its tenant's documents without a case, never a case's
    assert visible(store, reader) == {"statute", "global", "acme-all"}
    assert visible(store, {**reader, "case_ids": ["c1"]}) == {"statute", "global", "acme-all", "acme-case1"}
    assert visible(store, {**reader, "case_ids": ["*"]}) == {"statute", "global", "acme-all", "acme-case1",
                                                              "acme-case2"}
    assert visible(store, {**reader, "case_ids": ["c1"], "case_id": "c1"}) == {"statute", "global", "acme-case1"}
    with pytest.raises(ValueError, match="not one of the principal's cases"):
        access_filter({**reader, "case_ids": ["c1"], "case_id": "c2"})
    # an admin (and the local operator, who names no roles) reads every case of its tenant unless it lists some
    admin = {"tenant_id": "acme", "roles": ["admin"]}
    assert visible(store, admin) == visible(store, {"tenant_id": "acme"})
    assert visible(store, {**admin, "case_ids": []}) == {"statute", "global", "acme-all"}
    filters = AccessFilter().run(tenant_id="acme", case_ids=["c2"], roles=["reader"])["filters"]
    assert {d.id for d in store.filter_documents(filters)} == {"statute", "global", "acme-all", "acme-case2"}


def test_only_admins_write_global_and_writers_stay_in_their_scope():
    from components.legal.access import AccessDenied

    writer = {"tenant_id": "acme", "roles": ["writer"]}
    with pytest.raises(AccessDenied, match="only an admin"):
        tenant_meta(writer, scope="global")
    with pytest.raises(AccessDenied, match="writer or admin"):
        tenant_meta({"tenant_id": "acme", "roles": ["reader"]})
    with pytest.raises(AccessDenied, match="one of them"):
        tenant_meta({**writer, "case_ids": ["c1"]})
    assert tenant_meta({**writer, "case_ids": ["c1"], "case_id": "c1"}) == {"scope": "tenant", "tenant_id": "acme",
                                                                            "case_id": "c1"}
    assert tenant_meta(writer) == {"scope": "tenant", "tenant_id": "acme", "case_id": NO_CASE}  # never roles
    assert tenant_meta({"tenant_id": "acme", "roles": ["admin"]}, scope="global") == {"scope": "global"}
    assert tenant_meta({"tenant_id": "acme"}, scope="global") == {"scope": "global"}  # the local operator
    with pytest.raises(ValueError, match="Unknown role"):
        check_access({"tenant_id": "acme", "roles": ["root"]})


def test_owner_condition_selects_exactly_one_owner(store):
    from components.legal.access import owner_condition

    ids = {d.id for d in store.filter_documents(owner_condition({"scope": "tenant", "tenant_id": "acme"}))}
    assert ids == {"acme-all", "acme-case1", "acme-case2"}  # a pre-filter: callers check owner_key per document
    ids = {d.id for d in store.filter_documents(owner_condition({"scope": "tenant", "tenant_id": "acme",
                                                                 "case_id": "c1"}))}
    assert ids == {"acme-case1"}
    assert {d.id for d in store.filter_documents(owner_condition({"scope": "global"}))} == {"statute", "global"}


def test_deep_or_huge_filters_are_value_errors_not_recursion_errors():
    from components.legal.access import MAX_FILTER_LIST, check_filters

    deep: dict = {"field": "meta.law_id", "operator": "==", "value": "ET"}
    for _ in range(5000):
        deep = {"operator": "NOT", "conditions": [deep]}
    with pytest.raises(ValueError, match="nested deeper"):
        check_filters(deep)
    with pytest.raises(ValueError, match="value list"):
        check_filters({"field": "meta.law_id", "operator": "in", "value": ["x"] * (MAX_FILTER_LIST + 1)})
    wide = {"operator": "OR", "conditions": [{"field": "meta.law_id", "operator": "==", "value": str(i)}
                                             for i in range(10_000)]}
    with pytest.raises(ValueError, match="more than"):
        check_filters(wide)
    assert check_filters({"operator": "AND", "conditions": [{"field": "meta.law_id", "operator": "==",
                                                             "value": "ET"}]})


PRINCIPALS = [
    None,
    {"tenant_id": "acme"},
    {"tenant_id": "acme", "roles": ["reader"]},
    {"tenant_id": "acme", "roles": ["reader"], "case_ids": ["c1", "c2"]},
    {"tenant_id": "acme", "roles": ["reader"], "case_ids": ["c1"], "case_id": "c1"},
    {"tenant_id": "acme", "user_id": "ana", "group_ids": ["laboral"], "roles": ["reader"], "case_ids": ["*"]},
    {"tenant_id": "acme", "roles": ["admin"], "case_ids": []},
]


@pytest.mark.parametrize("access", PRINCIPALS)
def test_every_access_filter_translates_for_a_qdrant_server(access):
    from haystack_integrations.document_stores.qdrant.filters import convert_filters_to_qdrant

    # qdrant-haystack refuses `== None`: the case boundary must be written with values only
    assert convert_filters_to_qdrant(access_filter(access)) is not None


def test_no_case_is_reserved_and_one_owner_with_or_without_the_marker():
    with pytest.raises(ValueError, match="reserved"):
        check_access({"tenant_id": "acme", "case_id": NO_CASE})
    with pytest.raises(ValueError, match="reserved"):
        check_access({"tenant_id": "acme", "case_ids": ["c1", NO_CASE]})
    # deterministic ids stay those of documents indexed before the marker existed
    assert owner_key({"scope": "tenant", "tenant_id": "acme", "case_id": NO_CASE}) == owner_key(
        {"scope": "tenant", "tenant_id": "acme"})
    assert owner_key({"scope": "tenant", "tenant_id": "acme", "case_id": "c1"}) != owner_key(
        {"scope": "tenant", "tenant_id": "acme"})
