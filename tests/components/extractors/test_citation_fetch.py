"""
The citation sets (Spanish and Portuguese forms) end to end without a model: detection -> direct fetch from a store
holding the whole parsed corpus (Spanish statutes, CF88 and the CLT) -> lexical-first gate. The cited article must
come first. `benchmarks/citation_bench.py` runs the same sets through `retrieve` and `ask` on a real store.
"""

import json
from pathlib import Path

import pytest
from haystack.document_stores.in_memory import InMemoryDocumentStore

from components.converters.statute_converter import StatuteConverter
from components.extractors.citation_detector import CitationDetector
from components.preprocessors.article_parser import ArticleParser
from components.routers.lexical_first_gate import LexicalFirstGate

CORPUS = Path(__file__).resolve().parents[3] / "data" / "corpus"
FIXTURES = Path(__file__).parent / "fixtures"
SETS = {
    lang: [json.loads(line) for line in (FIXTURES / f"citations_{lang}.jsonl").read_text(encoding="utf-8").splitlines()
           if line.strip()]
    for lang in ("es", "pt")
}
CASES = [case for cases in SETS.values() for case in cases]


@pytest.fixture(scope="module")
def store():
    laws = StatuteConverter().run(sources=[CORPUS])["documents"]
    store = InMemoryDocumentStore()
    store.write_documents(ArticleParser().run(documents=laws)["documents"])
    return store


@pytest.fixture(scope="module")
def detector():
    return CitationDetector()


@pytest.mark.parametrize("lang", sorted(SETS))
def test_each_citation_set_has_at_least_20_forms(lang):
    assert len(SETS[lang]) >= 20
    assert len({case["question"] for case in SETS[lang]}) == len(SETS[lang])


@pytest.mark.parametrize("case", CASES, ids=[case["question"][:40] for case in CASES])
def test_cited_article_is_fetched_first(store, detector, case):
    detected = detector.run(query=case["question"])
    assert detected["filters"] is not None
    fetched = store.filter_documents(detected["filters"])
    gate = LexicalFirstGate().run(citations=detected["citations"], documents=fetched)
    assert gate["skip_expansion"] is True
    first = gate["documents"][0]
    assert (first.meta["law_id"], first.meta["article"]) == (case["law_id"], case["article"])
    assert first.meta["lexical_match"] == "exact"


def test_article_without_law_in_a_portuguese_question(store, detector):
    # "§ 8º do art. 477": only the CLT has an article 477 in the corpus, so the fetch is exact
    detected = detector.run(query="qual a multa do § 8º do art. 477?")
    fetched = store.filter_documents(detected["filters"])
    gate = LexicalFirstGate().run(citations=detected["citations"], documents=fetched)
    assert [(d.meta["law_id"], d.meta["article"]) for d in gate["documents"]] == [("DEL-5452-1943", "477")]
