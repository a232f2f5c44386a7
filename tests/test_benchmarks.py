"""The benchmark scripts' own helpers that decide what a benchmark measures."""

import importlib.util
import json
from pathlib import Path

import yaml
from haystack import Document

from components.preprocessors.contextualizer import Contextualizer

ROOT = Path(__file__).resolve().parents[1]


def _bench(name: str):
    """A benchmark script loaded as a module (the scripts are not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_contextual_bench_switches_the_canonical_contextualizer_on():
    """The variant pipeline is the canonical one with its contextualizer on: same components and edges, contexts made."""
    bench = _bench("contextual_bench")
    canonical = yaml.safe_load((ROOT / "yaml" / "indexing.yaml").read_text(encoding="utf-8"))
    variant = bench.indexing_yaml(mode="breadcrumb", heading_style="full", sparse_fields=["article_title", "context"],
                                  dense_fields=["context"], include_parents=True)
    assert list(variant["components"]) == list(canonical["components"])
    assert variant["connections"] == canonical["connections"]
    spec = variant["components"]["contextualizer"]
    assert spec["init_parameters"]["enabled"] is True and canonical["components"]["contextualizer"]["init_parameters"][
        "enabled"] is False
    assert variant["components"]["dense_embedder"]["init_parameters"]["meta_fields_to_embed"] == ["context"]
    contextualizer = Contextualizer.from_dict(spec)
    parent = Document(id="p", content="Art. 482. Constituem justa causa...",
                      meta={"level": "parent", "law_short": "CLT", "article": "482", "article_label": "Art. 482",
                            "heading_path": ["TÍTULO IV: DO CONTRATO INDIVIDUAL DO TRABALHO", "CAPÍTULO V: DA RESCISÃO"]})
    child = Document(id="c", content="i) abandono de emprego;", meta={**parent.meta, "level": "child", "parent_id": "p"})
    out = contextualizer.run(documents=[parent, child])["documents"]
    assert all("CAPÍTULO V: DA RESCISÃO" in doc.meta["context"] for doc in out)


def test_the_projects_own_questions_label_articles_of_the_bundled_corpus():
    """Every label of the project's own question sets (the rounds asked as a user would, held-out, named norms,
    minors, transitional provisions, follow-ups) names an article the corpus holds."""
    from components.converters.statute_converter import StatuteConverter
    from components.preprocessors.article_parser import ArticleParser
    from pipelines.evaluation import article_key, load_labelled

    sets = sorted((ROOT / "benchmarks" / "questions").glob("*.jsonl"))
    assert [p.stem for p in sets] == [
        "asked-rounds", "cross-country", "holdout-labor-br-2", "holdout-labor-br", "holdout-labor-es-2",
        "holdout-labor-es", "minors-es", "named-norms", "transitional-es"]
    follow_ups = sorted((ROOT / "benchmarks" / "questions" / "follow-up").glob("*.jsonl"))
    assert [p.stem for p in follow_ups] == [
        "follow-up-country", "follow-up-go-on", "follow-up-holdout", "follow-up-new-topic", "follow-up-third-turn",
        "follow-up"]
    quotes = ROOT / "benchmarks" / "questions" / "quotes" / "quotes.jsonl"
    items = [item for path in [*sets, *follow_ups, quotes] for item in load_labelled(path)]
    assert len(items) == 866 and len({item["id"] for item in items}) == 866
    laws = {law for item in items for law, _ in item["relevant"]}
    files = [path for path in sorted((ROOT / "data" / "corpus").glob("*.md"))
             if path.stem in laws or path.stem == "CLT"]
    converted = StatuteConverter().run(sources=files)
    assert not converted["errors"]
    articles = ArticleParser().run(documents=converted["documents"])["documents"]
    held = {article_key(doc.meta["law_id"], doc.meta["article"]) for doc in articles}
    assert laws <= {law for law, _ in held}
    missing = sorted({key for item in items for key in item["relevant"]} - held)
    assert not missing, f"labels without an article in data/corpus: {missing}"
    # the quote benchmark's words are in the article each question labels
    text: dict = {}
    for doc in articles:
        key = article_key(doc.meta["law_id"], doc.meta["article"])
        text[key] = text.get(key, "") + " " + " ".join((doc.content or "").split()).lower()
    for line in quotes.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        (label,) = item["expected"]
        assert " ".join(item["quote"].split()).lower() in text[article_key(label["law"], label["article"])], item["id"]


def test_quote_bench_scores_the_cited_article_and_the_quoted_words():
    bench = _bench("quote_bench")
    item = {"relevant": {("BOE-A-2015-11430", "38")}, "quote": "treinta días  naturales"}
    reply = {"citations": [{"law_id": "BOE-A-2015-11724", "article": "147"}, {"law_id": "BOE-A-2015-11430",
                                                                             "article": "38"}],
             "answer": "«... En ningún caso la duración será inferior a Treinta días\nnaturales.» (ET, art. 38)"}
    assert bench.outcome(item, reply) == {"cited": 1.0, "first": 0.0, "quoted": 1.0}
    assert bench.outcome(item, {"citations": [], "answer": "treinta días"}) == {"cited": 0.0, "first": 0.0,
                                                                                 "quoted": 0.0}
    assert bench.language({"expected": [{"law": "DEL-5452-1943", "article": "59"}]}) == "pt"


def test_the_named_norm_questions_name_the_norm_of_their_labels():
    """
    Each named-norm question names, in the citation grammar's reading of a question, exactly the norms its labels
    belong to; some name them as people type ("la constitucion dice", "o que a clt fala").
    """
    from components.legal.citations import CitationGrammar
    from pipelines.evaluation import load_labelled

    grammar = CitationGrammar()
    for item in load_labelled(ROOT / "benchmarks" / "questions" / "named-norms.jsonl"):
        named = {c["law_id"] for c in grammar.extract(item["question"], colloquial=True) if c.get("law_id")}
        assert named == {law for law, _ in item["relevant"]}, item["question"]


def test_the_off_topic_questions_name_no_norm_and_balance_languages_and_kinds():
    """The gate benchmark's off-topic set: 20 Spanish and 20 Portuguese questions, half everyday, half other law."""
    from components.legal.citations import CitationGrammar
    from components.legal.legal_text import detect_query_language

    bench = _bench("gate_bench")
    items = bench.read_questions(bench.OFF_TOPIC)
    assert len({item["id"] for item in items}) == len(items) == 40
    grammar = CitationGrammar()
    counts: dict[tuple[str, str], int] = {}
    for item in items:
        assert "expected" not in item and item["kind"] in ("everyday", "other-law")
        assert not grammar.extract(item["question"], colloquial=True), item["question"]
        key = (detect_query_language(item["question"], default="es"), item["kind"])  # as the benchmark reads it
        counts[key] = counts.get(key, 0) + 1
    assert counts == {("es", "everyday"): 10, ("es", "other-law"): 10, ("pt", "everyday"): 10, ("pt", "other-law"): 10}


def test_the_held_out_other_law_questions_name_no_norm_and_balance_languages():
    """The scope notice's held-out set: 15 Spanish, 15 Portuguese questions on branches of law the corpus lacks."""
    from components.legal.citations import CitationGrammar
    from components.legal.legal_text import detect_query_language
    from components.legal.matters import load_matters

    bench = _bench("gate_bench")
    items = bench.read_questions(bench.OTHER_LAW_HOLDOUT)
    assert len({item["id"] for item in items}) == len(items) == 30
    matters = {matter.id for matter in load_matters()}
    grammar = CitationGrammar()
    languages = [detect_query_language(item["question"], default="es") for item in items]
    assert languages.count("es") == languages.count("pt") == 15
    for item in items:
        assert item["kind"] == "other-law" and item["matter"] in matters, item
        assert not grammar.extract(item["question"], colloquial=True), item["question"]  # the checker would skip it


def test_gate_bench_auc_counts_pairs_and_ties():
    auc = _bench("gate_bench").auc
    assert auc([0.9, 0.8], [0.1, 0.2]) == 1.0
    assert auc([0.1], [0.9]) == 0.0
    assert auc([0.5, 0.9], [0.5]) == 0.75  # a tie counts half
    assert auc([], [0.3]) != auc([], [0.3])  # nan without one of the groups


def test_the_follow_up_pairs_have_a_first_question_and_balance_languages():
    from components.legal.legal_text import detect_query_language

    from pipelines.evaluation import load_labelled

    bench = _bench("follow_up_bench")
    for path in sorted(bench.FOLLOW_UPS.parent.glob("*.jsonl")):
        pairs = load_labelled(path)
        # `first`: the question before the turn, or the conversation's questions before it (a third turn)
        earlier = [[pair["first"]] if isinstance(pair["first"], str) else pair["first"] for pair in pairs]
        assert all(all(q.strip() for q in questions) for questions in earlier)
        assert all(pair["question"].strip() and pair["expected"] for pair in pairs)
        languages = [detect_query_language(" ".join([*questions, pair["question"]]), default="es")
                     for questions, pair in zip(earlier, pairs)]
        assert languages.count("es") == languages.count("pt") == len(pairs) // 2, path.name


def test_follow_up_bench_counts_a_labelled_citation_and_a_labelled_first_one():
    from pipelines.evaluation import article_key

    cited = _bench("follow_up_bench").cited
    expected = {article_key("DEL-5452-1943", "391-A")}
    result = {"citations": [{"law_id": "CF88", "article": "adct-10"}, {"law_id": "DEL-5452-1943", "article": "391-a"}]}
    assert cited(result, expected) == (1.0, 0.0)
    assert cited({"citations": list(reversed(result["citations"]))}, expected) == (1.0, 1.0)
    assert cited({"citations": []}, expected) == (0.0, 0.0)


def test_follow_up_bench_pairs_a_follow_up_file_and_a_topic_switch_set(tmp_path):
    bench = _bench("follow_up_bench")
    follow_ups = bench.conversation_pairs(str(bench.FOLLOW_UPS), switch=False)
    assert len(follow_ups) == 20 and all(earlier == [pair["first"]] for earlier, pair in follow_ups)
    third_turns = bench.conversation_pairs(str(bench.FOLLOW_UPS.with_name("follow-up-third-turn.jsonl")), switch=False)
    assert len(third_turns) == 12 and all(len(earlier) == 2 for earlier, _ in third_turns)
    labelled = tmp_path / "set.jsonl"
    labelled.write_text("\n".join(
        f'{{"id": "q{i}", "question": "pregunta {i}", "expected": [{{"law": "ET", "article": "{i}"}}]}}'
        for i in range(3)) + "\n", encoding="utf-8")
    switches = bench.conversation_pairs(str(labelled), switch=True)
    # each question after the one before it; the first question of the set only opens the conversation
    assert [(earlier, pair["id"]) for earlier, pair in switches] == [(["pregunta 0"], "q1"), (["pregunta 1"], "q2")]


def test_llm_relevance_bench_resorts_the_judged_head_only():
    """The head the LLM judged is re-sorted by the blend; w 0 keeps full's order, the tail never moves, an unjudged
    passage keeps its full score; cross-validation picks w 0 when the LLM only ever moves the right article down."""
    bench = _bench("llm_relevance_bench")
    row = {"keys": [["ET", "56"], ["ET", "59"], ["ET", "52"], ["LGSS", "268"]], "scores": [1.0, 0.9, 0.5, 0.4],
           "llm": [0.1, 0.9, None], "relevant": [["ET", "56"]]}
    assert bench.reorder(row, 0.0) == [("ET", "56"), ("ET", "59"), ("ET", "52"), ("LGSS", "268")]
    # w 0.5: 56 -> 0.5 + 0.5 * 0.1 / 0.9 = 0.556, 59 -> 0.45 + 0.5 = 0.95, 52 (unjudged) -> 0.5
    assert bench.reorder(row, 0.5) == [("ET", "59"), ("ET", "56"), ("ET", "52"), ("LGSS", "268")]
    assert bench.reorder(row, 1.0)[:2] == [("ET", "59"), ("ET", "52")] and bench.reorder(row, 1.0)[3] == (
        "LGSS", "268")
    ndcg, hit1 = bench.per_question([row], 0.5)
    assert hit1 == [0.0] and 0 < ndcg[0] < 1
    mean, chosen = bench.cross_validated([row, dict(row), dict(row), dict(row)])
    assert set(chosen) == {0.0} and mean == 1.0


def test_spelling_bench_misspells_by_sound_alike_errors_only():
    import random

    bench = _bench("spelling_bench")
    question = "¿Cuántas vacaciones tiene el trabajador según el art. 38 ET?"
    first, again = (bench.misspell(question, random.Random(3), rate=1.0) for _ in range(2))
    assert first == again != question  # seeded
    assert "art. 38 ET?" in first and first.startswith("¿Cuántas")  # capitals, short words and digits kept
    words, misspelled = question.split(), first.split()
    assert len(words) == len(misspelled)
    for word, changed in zip(words, misspelled):
        if word != changed:  # one error each: at most two letters apart, in length at most one
            assert abs(len(word) - len(changed)) <= 1 and word.islower(), (word, changed)
    assert bench.misspell(question, random.Random(3), rate=0.0) == question


def test_multi_question_bench_pairs_single_questions_without_a_common_label_and_scores_both():
    bench = _bench("multi_question_bench")
    items = [{"id": f"q{i}", "question": f"¿pregunta número {i}?", "relevant": {("ET", str(i % 3))}} for i in range(8)]
    items.append({"id": "two", "question": "¿una? ¿y otra?", "relevant": {("ET", "9")}})
    pairs = bench.pairs(items, seed=1, limit=10)
    assert pairs == bench.pairs(items, seed=1, limit=10)  # seeded
    assert all(a["relevant"].isdisjoint(b["relevant"]) and "two" not in (a["id"], b["id"]) for a, b in pairs)
    assert len(bench.pairs(items, seed=1, limit=1)) <= 1
    first, second = {"relevant": {("ET", "38")}}, {"relevant": {("ET", "37")}}
    reply = {"citations": [{"law_id": "ET", "article": "38"}, {"law_id": "LGSS", "article": "147"}]}
    assert bench.outcome(first, second, reply) == {"both": 0.0, "first": 1.0, "second": 0.0, "citations": 2.0}
    reply["citations"].append({"law_id": "ET", "article": "37"})
    assert bench.outcome(first, second, reply)["both"] == 1.0


def test_fusion_cv_reads_the_dev_sets_and_with_own_the_projects_sets_too(tmp_path):
    bench = _bench("fusion_cv")
    row = {"id": "q1", "question": "¿cuántos días de vacaciones tengo?",
           "expected": [{"law": "BOE-A-2015-11430", "article": "38"}]}
    for name in ("dev-labor-es", "dev-constitucion", "other"):
        (tmp_path / f"{name}.jsonl").write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    assert list(bench.labelled_sets(tmp_path)) == ["constitucion", "labor-es"]
    with_own = bench.labelled_sets(tmp_path, own=True, limit=2)
    assert list(with_own)[:2] == ["constitucion", "labor-es"] and "asked-rounds" in with_own
    assert "holdout-labor-br" in with_own and all(len(items) <= 2 for items in with_own.values())
    assert with_own["labor-es"][0]["relevant"] == {("BOE-A-2015-11430", "38")}
