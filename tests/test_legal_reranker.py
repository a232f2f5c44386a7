import pytest
from haystack import Document

from components.legal_reranker import LegalReranker, hierarchy_score, recency_score, vigencia_score

ET2015 = {"law_id": "BOE-A-2015-11430", "rank": 2, "status": "in_force", "last_updated": "2025-12-30", "article": "38"}
ET1995 = {"law_id": "BOE-A-1995-7730", "rank": 2, "status": "repealed", "last_updated": "2015-10-24", "article": "38"}
CE = {"law_id": "BOE-A-1978-31229", "rank": 1, "status": "in_force", "last_updated": "2024-02-17", "article": "40"}


def test_init_defaults_and_validation():
    r = LegalReranker()
    assert (r.top_n, r.relevance, r.relevance_weight, r.hierarchy_weight, r.recency_weight, r.vigencia_weight) == (
        20, "retrieval", 0.70, 0.15, 0.10, 0.05)
    with pytest.raises(ValueError, match="top_n"):
        LegalReranker(top_n=0)
    with pytest.raises(ValueError, match="relevance"):
        LegalReranker(relevance="oracle")
    with pytest.raises(ValueError, match="weights"):
        LegalReranker(relevance_weight=-1)
    with pytest.raises(ValueError):
        LegalReranker(today="ayer")


def test_to_dict_from_dict_round_trip():
    r = LegalReranker(top_n=5, hierarchy_weight=0.0, today="2026-01-01")
    data = r.to_dict()
    assert data["type"] == "components.legal_reranker.LegalReranker"
    assert data["init_parameters"]["today"] == "2026-01-01"
    assert LegalReranker.from_dict(data).to_dict() == data


def test_signals_are_normalized():
    import datetime as dt

    today = dt.date(2026, 11, 21)
    assert hierarchy_score(CE) == 1.0 and hierarchy_score(ET2015) == 0.8 and hierarchy_score({}) == 0.2
    assert recency_score(ET2015, today) == 1.0
    assert recency_score({"last_updated": "2005-01-01"}, today) == 0.0
    assert 0.0 < recency_score(ET1995, today) < 1.0
    assert recency_score({"last_updated": "not a date"}, today) == 0.5
    assert vigencia_score(ET1995) == 0.0 and vigencia_score(ET2015) == 1.0


def test_run_ranks_the_in_force_version_above_its_repealed_twin():
    docs = [
        Document(id="et95-38", content="Vacaciones anuales (1995).", meta=ET1995, score=0.50),
        Document(id="et15-38", content="Vacaciones anuales (2015).", meta=ET2015, score=0.48),
        Document(id="ce-40", content="Política de empleo.", meta=CE, score=0.20),
    ]
    out = LegalReranker(today="2026-11-21").run(documents=docs)["documents"]
    assert [d.id for d in out] == ["et15-38", "et95-38", "ce-40"]
    assert out[0].meta["retrieval_score"] == 0.48
    assert out[0].score == pytest.approx(0.7 * 0.48 / 0.50 + 0.15 * 0.8 + 0.10 * 1.0 + 0.05 * 1.0)
    assert len(out) == 3  # penalized, not removed


def test_run_reranks_only_the_head_and_keeps_scores_monotone():
    docs = [Document(id=f"d{i}", content="x", meta=dict(ET2015), score=1.0 - i * 0.1) for i in range(5)]
    docs[1] = Document(id="old", content="x", meta=dict(ET1995), score=0.9)
    out = LegalReranker(top_n=2, today="2026-11-21").run(documents=docs)["documents"]
    assert [d.id for d in out] == ["d0", "old", "d2", "d3", "d4"]
    scores = [d.score for d in out]
    assert scores == sorted(scores, reverse=True)
    assert LegalReranker().run(documents=[])["documents"] == []
