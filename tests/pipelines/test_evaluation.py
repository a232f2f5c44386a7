"""Article-level metrics of `pipelines.evaluation`: labels compare case-insensitively with the parser's keys."""

import json

import pytest
from haystack import Document

from pipelines.evaluation import (
    article_key,
    article_ranking,
    country_share,
    evaluate_mode,
    load_labelled,
    score_rankings,
)

CLT = "DEL-5452-1943"


@pytest.fixture
def labelled(tmp_path):
    path = tmp_path / "dev-br.jsonl"
    lines = [
        {"id": "q1", "question": "escala 12x36", "expected": [{"law": CLT, "article": "59-A"}]},
        {"id": "q2", "question": "aviso prévio",
         "expected": [{"law": CLT, "article": "487"}, {"law": "CF88", "article": "7"}]},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return load_labelled(path)


def test_article_key_lowercases_the_article_only():
    assert article_key(CLT, "59-A") == (CLT, "59-a")
    assert article_key("BOE-A-2015-11430", " 38 ") == ("BOE-A-2015-11430", "38")


def test_labels_match_lowercase_parser_keys(labelled):
    assert labelled[0]["relevant"] == {(CLT, "59-a")}
    ranking = article_ranking([(CLT, "59-a"), (CLT, "59-A"), (CLT, "59")])
    assert ranking == [(CLT, "59-a"), (CLT, "59")]  # one article, whatever the case
    scores = score_rankings([ranking, [(CLT, "488"), ("CF88", "7")]], labelled)
    assert scores["hit@1"] == 0.5 and scores["hit@10"] == 1.0


def test_evaluate_mode_on_documents(labelled):
    docs = {
        "escala 12x36": [Document(content="x", meta={"law_id": CLT, "article": "59-a"})],
        "aviso prévio": [Document(content="y", meta={"law_id": CLT, "article": "487"})],
    }
    per_query: dict = {}
    scores, latencies = evaluate_mode(lambda question: docs[question], {"br": labelled}, per_query)
    assert scores["br"]["hit@1"] == 1.0 and len(latencies) == 2
    assert per_query["br"]["hit@1"] == [1.0, 1.0]


def test_load_labelled_rejects_items_without_labels(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"id": "x", "question": "q", "expected": []}) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="expected"):
        load_labelled(path)


def test_country_share_and_law_country(labelled):
    docs = [
        Document(content="a", meta={"law_id": CLT, "article": "477", "country": "br"}),
        Document(content="b", meta={"law_id": CLT, "article": "477", "country": "br"}),  # same article: once
        Document(content="c", meta={"law_id": "BOE-A-2015-11430", "article": "49", "lang": "es"}),
        Document(content="d", meta={"law_id": "CF88", "article": "7", "lang": "pt"}),  # no country: its language's
    ]
    assert country_share(docs, "br") == pytest.approx(2 / 3)
    assert country_share(docs, "es", k=1) == 0.0 and country_share([], "br") == 0.0
    countries = {CLT: "br", "CF88": "br"}
    scores, _ = evaluate_mode(lambda question: docs, {"br": labelled}, law_country=countries.get)
    assert scores["br"]["country@5"] == pytest.approx(2 / 3)
    assert "country@5" not in evaluate_mode(lambda question: docs, {"br": labelled})[0]["br"]


def test_bootstrap_interval_brackets_the_mean_and_narrows_with_more_questions():
    from pipelines.evaluation import bootstrap_ci  # noqa: PLC0415

    few = [1.0, 0.0] * 10
    many = [1.0, 0.0] * 500
    low, high = bootstrap_ci(few)
    assert low < 0.5 < high and 0.0 <= low and high <= 1.0
    low_many, high_many = bootstrap_ci(many)
    assert (high_many - low_many) < (high - low) / 3
    assert bootstrap_ci([0.7] * 5) == (pytest.approx(0.7), pytest.approx(0.7))
    assert all(x != x for x in bootstrap_ci([]))  # nan for no questions


def test_paired_bootstrap_calls_a_difference_only_when_it_is_consistent():
    from pipelines.evaluation import format_ci, format_paired, paired_bootstrap  # noqa: PLC0415

    base = [0.0, 1.0, 0.5, 0.2] * 15
    better = [min(1.0, x + 0.3) for x in base]
    result = paired_bootstrap(better, base)
    assert result["diff"] > 0.2 and result["low"] > 0 and result["p"] < 0.01
    noisy = [x + (0.3 if i % 2 else -0.3) for i, x in enumerate(base)]  # same mean, opposite swings
    tie = paired_bootstrap(noisy, base)
    assert tie["low"] < 0 < tie["high"] and tie["p"] > 0.5
    with pytest.raises(ValueError, match="same questions"):
        paired_bootstrap([1.0], [1.0, 0.0])
    assert format_ci([1.0, 0.0] * 10).startswith("0.500 [")
    assert format_paired({"diff": 0.0375, "low": -0.01, "high": 0.08}) == "+0.037 [-0.010, +0.080]"
    assert format_paired({"diff": -0.2, "low": -0.31, "high": -0.1}, digits=2) == "-0.20 [-0.31, -0.10]"


def test_a_benchmark_asks_cold_and_compares_with_its_earlier_run(tmp_path):
    from pipelines.evaluation import cold_ask, paired_to_previous, rows_by_id  # noqa: PLC0415

    class Engine:
        def __init__(self):
            self.calls: list[str] = []

        def clear_caches(self):
            self.calls.append("clear")

        def ask(self, question, **kwargs):
            self.calls.append(f"ask {question} {kwargs}")
            return {"answer": question.upper()}

    engine = Engine()
    reply, ms = cold_ask(engine, "vacaciones", history=[])
    assert reply == {"answer": "VACACIONES"} and ms >= 0
    assert engine.calls == ["clear", "ask vacaciones {'history': []}"]  # caches emptied before the question

    earlier = tmp_path / "earlier.json"
    earlier.write_text(json.dumps([{"id": f"q{i}", "quoted": 0.0} for i in range(20)]))
    assert rows_by_id(None) == {} and rows_by_id(str(earlier))["q3"] == {"id": "q3", "quoted": 0.0}
    now = [{"id": f"q{i}", "quoted": 1.0} for i in range(20)] + [{"id": "new", "quoted": 0.0}]
    # only the rows both runs scored are paired: 20 questions, each 0 -> 1
    assert paired_to_previous(now, rows_by_id(earlier), "quoted") == "+1.000 [+1.000, +1.000]"
