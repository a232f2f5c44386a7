import pytest
from haystack import Document

from components.rankers.legal_reranker import LegalReranker, hierarchy_score, recency_score, vigencia_score

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
    assert data["type"] == "components.rankers.legal_reranker.LegalReranker"
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
    # without a version date the publication date is a lower bound of it: neutral at least, full when itself recent
    assert recency_score({"publication_date": "1988-10-05"}, today) == 0.5
    assert recency_score({"publication_date": "2025-06-01"}, today) == 1.0
    assert recency_score({}, today) == 0.5
    assert recency_score({"last_updated": "2005-01-01", "publication_date": "2025-01-01"}, today) == 0.0
    assert vigencia_score(ET1995) == 0.0 and vigencia_score(ET2015) == 1.0


def test_a_constitution_without_a_version_date_is_not_judged_by_its_publication():
    """The Brazilian Constitution's text carries no consolidation date, only its 1988 publication; the CLT's says
    2025. Scored by the publication date, the CF88 lost 0.10 of recency to every CLT block, and a CLT article on a
    labour court's president outranked the Constitution's on who succeeds the President of the Republic."""
    succession = "Art. 79. Substituirá o Presidente, no caso de impedimento, e suceder-lhe-á, no de vaga, o Vice."
    cf88 = Document(id="cf88-79", content=succession, score=1.0,
                    meta={"law_id": "CF88", "rank": 1, "status": "in_force", "publication_date": "1988-10-05",
                          "article": "79"})
    clt = Document(id="clt-683", content="Art. 683. Na falta ou impedimento do Presidente da Junta ...", score=0.95,
                   meta={"law_id": "DEL-5452-1943", "rank": 2, "status": "in_force", "last_updated": "2025-02-09",
                         "publication_date": "1943-08-09", "article": "683"})
    out = LegalReranker(today="2026-11-21", jurisdiction_first=False).run(documents=[clt, cf88])["documents"]
    assert [d.id for d in out] == ["cf88-79", "clt-683"]
    assert out[0].score == pytest.approx(0.7 * 1.0 + 0.15 * 1.0 + 0.10 * 0.5 + 0.05)


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


def test_top_k_keeps_the_first_of_the_reranked_pool():
    """`top_k` cuts the re-ranked list; the pool to re-rank for it is `candidates_for(top_k)`, at least `top_n`."""
    docs = [Document(id=f"d{i}", content="x", meta=dict(ET2015), score=1.0 - i * 0.1) for i in range(5)]
    docs[0] = Document(id="old", content="x", meta=dict(ET1995), score=1.0)  # the repealed twin goes down
    reranker = LegalReranker(top_n=4, today="2026-11-21")
    whole = [d.id for d in reranker.run(documents=docs)["documents"]]
    assert whole[0] == "d1" and whole.index("old") > 0
    assert [d.id for d in reranker.run(documents=docs, top_k=2)["documents"]] == whole[:2]
    assert reranker.candidates_for(1) == 4 and reranker.candidates_for(9) == 9
    with pytest.raises(ValueError, match="top_k"):
        reranker.run(documents=docs, top_k=0)
    with pytest.raises(ValueError, match="top_k"):
        reranker.candidates_for(0)


# --- relevance backends --------------------------------------------------------------------------------------------

QUERY = "¿Cuántos días de vacaciones tengo?"


def _blocks():
    from tests.corpus_helpers import ET_2015, markdown_article

    return [
        Document(id="et-34", content=markdown_article(ET_2015, "34"), meta={**ET2015, "article": "34"}, score=0.50),
        Document(id="et-38", content=markdown_article(ET_2015, "38"), meta=dict(ET2015), score=0.45),
        Document(id="et-37", content=markdown_article(ET_2015, "37"), meta={**ET2015, "article": "37"}, score=0.40),
    ]


def test_init_backend_validation():
    from tests.scripted_llm import ScriptedChatGenerator

    with pytest.raises(ValueError, match="model"):
        LegalReranker(relevance="cross_encoder")
    with pytest.raises(ValueError, match="chat_generator"):
        LegalReranker(relevance="llm")
    with pytest.raises(ValueError, match="retrieval_blend"):
        LegalReranker(relevance="embedding", retrieval_blend=1.5)
    with pytest.raises(ValueError, match="cache_ttl"):
        LegalReranker(cache_ttl=0)
    r = LegalReranker(relevance="llm", chat_generator=ScriptedChatGenerator(), batch_size=4)
    assert r._scorer.batch_size == 4 and r._scorer.max_length == 384


def test_to_dict_from_dict_with_a_nested_chat_generator():
    from tests.scripted_llm import ScriptedChatGenerator

    r = LegalReranker(relevance="llm", chat_generator=ScriptedChatGenerator(replies=["[1]"]), batch_size=5,
                      use_logprobs=False, llm_timeout=20, cache_ttl=60, cache_size=100, retrieval_blend=0.2)
    data = r.to_dict()
    params = data["init_parameters"]
    assert params["chat_generator"]["type"] == "tests.scripted_llm.ScriptedChatGenerator"
    assert (params["relevance"], params["batch_size"], params["cache_ttl"], params["retrieval_blend"]) == (
        "llm", 5, 60, 0.2)
    restored = LegalReranker.from_dict(data)
    assert restored.chat_generator.replies == ["[1]"] and restored.to_dict() == data
    assert LegalReranker(relevance="embedding", model="embeddinggemma", max_length=256).to_dict()[
        "init_parameters"]["chat_generator"] is None


def test_run_with_the_llm_backend_follows_its_grades_and_caches_them():
    from tests.scripted_llm import ScriptedChatGenerator

    llm = ScriptedChatGenerator(replies=['{"scores": [3, 10, 5]}'])
    r = LegalReranker(relevance="llm", chat_generator=llm, batch_size=3, today="2026-11-21")
    r.warm_up()
    r.warm_up()
    assert llm.warm_ups == 1
    out = r.run(documents=_blocks(), query=QUERY)
    docs, stats = out["documents"], out["stats"]
    assert [d.id for d in docs] == ["et-38", "et-37", "et-34"]  # art. 38 (vacaciones) lifted from second place
    assert docs[0].meta["relevance_score"] == 1.0 and docs[0].meta["retrieval_score"] == 0.45
    assert docs[0].score == pytest.approx(0.7 * 1.0 + 0.15 * 0.8 + 0.10 + 0.05)
    assert docs[2].score == pytest.approx(0.7 * 0.3 + 0.15 * 0.8 + 0.10 + 0.05)
    assert stats["path"] == "llm" and (stats["scored"], stats["cache_hits"], stats["fallbacks"]) == (3, 0, 0)
    # the same question again: every score from the cache, no LLM call (the script has no reply left)
    again = r.run(documents=_blocks(), query=QUERY)
    assert [d.id for d in again["documents"]] == ["et-38", "et-37", "et-34"]
    assert (again["stats"]["cache_hits"], again["stats"]["scored"]) == (3, 0) and len(llm.calls) == 1
    assert "cache" not in again["stats"] and r._scores.stats()["entries"] == 3  # no process-wide stats out
    # another tenant's request (another cache partition) never gets, nor times, acme's entries
    from components.utils.ttl_cache import partitioned

    with partitioned("beta"):
        beta = r.run(documents=_blocks(), query=QUERY)["stats"]
    assert (beta["cache_hits"], beta["cache_misses"]) == (0, 3) and len(llm.calls) == 2
    # changed content is a different cache entry
    edited = _blocks()
    edited[0] = Document(id="et-34", content=edited[0].content + " Texto modificado.", meta=edited[0].meta, score=0.5)
    with pytest.raises(ValueError, match="query"):
        r.run(documents=edited)
    assert r.run(documents=edited, query=QUERY)["stats"]["cache_misses"] == 1


def test_run_llm_failures_fall_back_to_retrieval_relevance_and_are_reported():
    from tests.scripted_llm import ScriptedChatGenerator

    down = LegalReranker(relevance="llm", chat_generator=ScriptedChatGenerator(error="refused"), today="2026-11-21")
    out = down.run(documents=_blocks(), query=QUERY)
    baseline = LegalReranker(today="2026-11-21").run(documents=_blocks())["documents"]
    assert [d.id for d in out["documents"]] == [d.id for d in baseline] == ["et-34", "et-38", "et-37"]
    assert [d.score for d in out["documents"]] == pytest.approx([d.score for d in baseline])
    assert out["stats"]["path"] == "llm+fallback" and out["stats"]["fallbacks"] == 3
    assert down._scores.stats()["entries"] == 0  # failures are not cached: the next call tries the LLM again

    partial = ScriptedChatGenerator(replies=['{"scores": [2, 10]}', "no JSON"])
    out = LegalReranker(relevance="llm", chat_generator=partial, batch_size=2, today="2026-11-21").run(
        documents=_blocks(), query=QUERY)
    assert out["stats"]["path"] == "llm+fallback" and out["stats"]["fallbacks"] == 1
    by_id = {d.id: d for d in out["documents"]}
    assert "relevance_score" not in by_id["et-37"].meta  # kept its retrieval relevance 0.40 / 0.50
    assert by_id["et-37"].score == pytest.approx(0.7 * 0.8 + 0.15 * 0.8 + 0.10 + 0.05)


def test_score_cache_entries_expire():
    from components.utils.ttl_cache import TTLCache
    from tests.scripted_llm import ScriptedChatGenerator

    now = [0.0]
    llm = ScriptedChatGenerator(replies=['[1, 2, 3]', '[3, 2, 1]'])
    r = LegalReranker(relevance="llm", chat_generator=llm, batch_size=3)
    r._scores = TTLCache(max_entries=100, ttl=300, clock=lambda: now[0])
    first = r.run(documents=_blocks(), query=QUERY)["documents"]
    now[0] = 299.0
    assert r.run(documents=_blocks(), query=QUERY)["stats"]["cache_hits"] == 3
    now[0] = 301.0
    later = r.run(documents=_blocks(), query=QUERY)
    assert later["stats"]["cache_misses"] == 3 and len(llm.calls) == 2
    assert first[0].id == "et-37" and later["documents"][0].id == "et-34"


def test_run_with_a_cross_encoder_orders_by_its_scores(tmp_path):
    from tests.tiny_models import tiny_bert

    blocks = _blocks()
    model = tiny_bert(tmp_path / "ce", [b.content for b in blocks] + [QUERY], num_labels=1, seed=3)
    r = LegalReranker(relevance="cross_encoder", model=str(model), max_length=128, relevance_weight=1.0,
                      retrieval_blend=None,
                      hierarchy_weight=0.0, recency_weight=0.0, vigencia_weight=0.0)
    r.warm_up()
    out = r.run(documents=blocks, query=QUERY)
    raw = {d.id: d.meta["relevance_score"] for d in out["documents"]}
    assert [d.id for d in out["documents"]] == sorted(raw, key=raw.get, reverse=True)
    assert all(0 < s < 1 for s in raw.values())
    assert out["documents"][0].score == pytest.approx(1.0)  # relevance normalized by the best
    assert raw == pytest.approx(dict(zip([b.id for b in blocks], r._scorer.score(QUERY, blocks))))
    assert out["stats"]["path"] == "cross_encoder" and out["stats"]["scored"] == 3


def test_run_with_the_embedding_backend_caches_block_vectors(tmp_path):
    from tests.tiny_models import tiny_sentence_transformer

    blocks = _blocks()
    model = tiny_sentence_transformer(tmp_path / "st", [b.content for b in blocks] + [QUERY])
    r = LegalReranker(relevance="embedding", model=str(model), max_length=64)  # blend 0.5 by default
    r.warm_up()
    calls = []
    embed = r._scorer.embed_documents
    r._scorer.embed_documents = lambda docs: calls.append([d.id for d in docs]) or embed(docs)
    out = r.run(documents=blocks, query=QUERY)
    assert calls == [["et-34", "et-38", "et-37"]]
    raw = [out["documents"][i].meta["relevance_score"] for i in range(3)]
    assert all(0 <= s <= 1 for s in raw)
    # another question over the same blocks: scored again, block vectors from their cache
    out2 = r.run(documents=blocks, query="jornada máxima de trabajo")
    assert calls == [["et-34", "et-38", "et-37"]] and out2["stats"]["scored"] == 3
    # relevance = 0.5 * cosine / best cosine + 0.5 * retrieval / best retrieval
    best = max(d.meta["relevance_score"] for d in out2["documents"])
    for d in out2["documents"]:
        relevance = 0.5 * d.meta["relevance_score"] / best + 0.5 * d.meta["retrieval_score"] / 0.5
        assert d.score == pytest.approx(0.7 * relevance + 0.15 * 0.8 + 0.10 * recency_score(
            d.meta, __import__("datetime").date.today()) + 0.05)


def test_retrieval_relevance_blends_the_stored_dense_cosine():
    """Candidates carrying `dense_score` (stored full-length block vectors) are judged on it half and half."""
    from haystack import Document as Doc  # noqa: PLC0415

    weights = {"hierarchy_weight": 0.0, "recency_weight": 0.0, "vigencia_weight": 0.0, "relevance_weight": 1.0}
    docs = [Doc(id="a", content="a", score=1.0, meta={"dense_score": 0.40}),
            Doc(id="b", content="b", score=0.8, meta={"dense_score": 0.80})]
    result = LegalReranker(**weights).run(documents=docs)
    ranked = result["documents"]
    assert [d.id for d in ranked] == ["b", "a"] and result["stats"]["path"] == "retrieval+dense"
    assert ranked[0].score == pytest.approx(0.5 * 0.8 + 0.5 * 1.0)
    assert ranked[1].score == pytest.approx(0.5 * 1.0 + 0.5 * 0.5)
    fused_only = LegalReranker(retrieval_blend=1.0, **weights).run(documents=docs)["documents"]
    assert [d.id for d in fused_only] == ["a", "b"]
    plain = [Doc(id="a", content="a", score=1.0), Doc(id="b", content="b", score=0.8)]
    assert LegalReranker(**weights).run(documents=plain)["stats"]["path"] == "retrieval"


def test_retrieval_relevance_blends_a_blocks_best_passage_into_its_dense_similarity():
    """A block whose best passage is close to the question (`passage_score`) rises; half and half by default."""
    from haystack import Document as Doc  # noqa: PLC0415

    weights = {"hierarchy_weight": 0.0, "recency_weight": 0.0, "vigencia_weight": 0.0, "relevance_weight": 1.0}
    docs = [Doc(id="whole", content="a", score=1.0, meta={"dense_score": 0.60}),
            Doc(id="paragraph", content="b", score=1.0, meta={"dense_score": 0.50, "passage_score": 0.80})]
    ranked = LegalReranker(**weights).run(documents=docs)["documents"]
    assert [d.id for d in ranked] == ["paragraph", "whole"]
    assert ranked[0].score == pytest.approx(0.5 * 1.0 + 0.5 * 1.0)  # (0.5 * 0.5 + 0.5 * 0.8) = 0.65 is the best
    assert ranked[1].score == pytest.approx(0.5 * 1.0 + 0.5 * 0.60 / 0.65)
    blocks_only = LegalReranker(passage_share=0.0, **weights).run(documents=docs)["documents"]
    assert [d.id for d in blocks_only] == ["whole", "paragraph"]
    assert LegalReranker(passage_share=0.3).to_dict()["init_parameters"]["passage_share"] == 0.3
    assert LegalReranker.from_dict(LegalReranker(passage_share=0.3).to_dict()).passage_share == 0.3
    for share in (-0.1, 1.5):
        with pytest.raises(ValueError, match="passage_share"):
            LegalReranker(passage_share=share)


# --- jurisdiction first -------------------------------------------------------------------------------------------

ET_38 = {**ET2015, "country": "es", "lang": "es", "law_short": "ET"}
CLT_130 = {"law_id": "DEL-5452-1943", "law_short": "CLT", "rank": 2, "status": "in_force", "last_updated": "2025-06-01",
           "article": "130", "country": "br", "lang": "pt"}
CLT_134 = {**CLT_130, "article": "134"}


def _holiday_candidates() -> list[Document]:
    # the CLT's holiday articles are as close in meaning to a Spanish holiday question as the ET's
    return [
        Document(id="clt-130", content="Art. 130. Após cada período de 12 meses... férias.", meta=CLT_130, score=0.95),
        Document(id="et-38", content="Artículo 38. Vacaciones anuales.", meta=ET_38, score=0.90),
        Document(id="clt-134", content="Art. 134. As férias serão concedidas...", meta=CLT_134, score=0.85),
    ]


def test_jurisdiction_first_puts_the_questions_country_first_and_keeps_scores_monotone():
    reranker = LegalReranker(today="2026-01-01")
    out = reranker.run(documents=_holiday_candidates(), query="¿Cuántos días de vacaciones me corresponden al año?")
    assert [d.id for d in out["documents"]] == ["et-38", "clt-130", "clt-134"]
    assert out["stats"]["jurisdiction"] == {"language": "es", "source": "language"}
    scores = [d.score for d in out["documents"]]
    assert scores == sorted(scores, reverse=True) and scores[-1] > 0  # rescaled below, never removed

    out = reranker.run(documents=_holiday_candidates(), query="quantos dias de férias eu tenho por ano?")
    assert [d.id for d in out["documents"]][0] == "clt-130"
    assert out["stats"]["jurisdiction"] == {"language": "pt", "source": "language"}


def test_jurisdiction_first_follows_the_norm_or_country_the_question_names():
    reranker = LegalReranker(today="2026-01-01")
    spanish_about_clt = "¿Cuántos días de vacaciones da la CLT?"
    out = reranker.run(documents=list(reversed(_holiday_candidates())), query=spanish_about_clt)
    assert out["stats"]["jurisdiction"] == {"country": "br", "source": "law"}
    assert out["documents"][-1].id == "et-38"
    out = reranker.run(documents=_holiday_candidates(), query="¿Cuántos días de vacaciones hay en Brasil?")
    assert out["stats"]["jurisdiction"] == {"country": "br", "source": "country"}
    assert out["documents"][-1].id == "et-38"
    # a comparison names both: no preference, the relevance order stands
    out = reranker.run(documents=_holiday_candidates(), query="Compara las vacaciones en España y en Brasil")
    assert out["stats"]["jurisdiction"] is None
    assert [d.id for d in out["documents"]] == ["clt-130", "et-38", "clt-134"]


def test_a_question_about_two_countries_ranks_each_countrys_reading_with_that_country_first():
    reranker = LegalReranker(today="2026-01-01")
    question = "¿Cuántos días de vacaciones hay en España y en Brasil?"
    # the reading that names Spain alone (DecomposeQuery's `country_readings`): Spanish norms first
    spain = reranker.run(documents=_holiday_candidates(), query="¿Cuántos días de vacaciones hay en España y en ?",
                         question=question)
    assert spain["stats"]["jurisdiction"] == {"country": "es", "source": "country"}
    assert spain["documents"][0].id == "et-38"
    # the question itself names both: no preference
    both = reranker.run(documents=_holiday_candidates(), query=question, question=question)
    assert both["stats"]["jurisdiction"] is None and both["documents"][0].id == "clt-130"
    # a fragment's language is no country: the question's lack of one stands
    fragment = reranker.run(documents=_holiday_candidates(), query="vacaciones", question=question)
    assert fragment["stats"]["jurisdiction"] is None


def test_jurisdiction_is_read_from_the_users_question_when_the_query_is_a_fragment_of_it():
    reranker = LegalReranker(today="2026-01-01")
    # "pagar" is a word of both languages; the follow-up it was made from tells which
    fragment = reranker.run(documents=_holiday_candidates(), query="pagar")
    assert fragment["stats"]["jurisdiction"] is None and fragment["documents"][0].id == "clt-130"
    out = reranker.run(documents=_holiday_candidates(), query="pagar",
                       question="¿y me las pueden pagar en vez de disfrutarlas?")
    assert [d.id for d in out["documents"]][0] == "et-38"
    assert out["stats"]["jurisdiction"] == {"language": "es", "source": "language"}
    blank = reranker.run(documents=_holiday_candidates(), query="pagar", question="  ")
    assert [d.id for d in blank["documents"]] == [d.id for d in fragment["documents"]]


def test_jurisdiction_first_off_or_without_a_query_keeps_the_relevance_order():
    for reranker, query in ((LegalReranker(today="2026-01-01", jurisdiction_first=False), "¿vacaciones?"),
                            (LegalReranker(today="2026-01-01"), None)):
        out = reranker.run(documents=_holiday_candidates(), query=query)
        assert [d.id for d in out["documents"]] == ["clt-130", "et-38", "clt-134"]
        assert out["stats"]["jurisdiction"] is None
    data = LegalReranker(jurisdiction_first=False).to_dict()
    assert data["init_parameters"]["jurisdiction_first"] is False
    assert LegalReranker.from_dict(data).jurisdiction_first is False


ET1995_BY_2015 = {**ET1995, "derogated_by": ET2015["law_id"], "article": "56", "country": "es", "lang": "es"}


def _dismissal_candidates() -> list[Document]:
    # the repealed ET 1995 twin scores best: its words are the 2015 recast's, the vigencia weight too small to matter
    return [
        Document(id="et95-56", content="Artículo 56. Despido improcedente (1995).", meta=ET1995_BY_2015, score=0.99),
        Document(id="et15-53", content="Artículo 53. Forma y efectos.", meta={**ET2015, "article": "53"}, score=0.60),
        Document(id="ce-35", content="Artículo 35. Derecho al trabajo.", meta=CE, score=0.40),
    ]


def test_superseded_last_puts_a_repealed_norm_after_the_others_when_its_successor_is_a_candidate():
    reranker = LegalReranker(today="2026-01-01")
    out = reranker.run(documents=_dismissal_candidates(), query="¿Qué indemnización me corresponde si me despiden?")
    assert [d.id for d in out["documents"]] == ["et15-53", "ce-35", "et95-56"]
    assert out["stats"]["superseded"] == ["et95-56"]
    scores = [d.score for d in out["documents"]]
    assert scores == sorted(scores, reverse=True) and scores[-1] > 0  # rescaled below, never removed
    # without a query too (the rule needs no question)
    assert [d.id for d in reranker.run(documents=_dismissal_candidates())["documents"]][-1] == "et95-56"


def test_superseded_last_keeps_a_repealed_norm_named_by_the_question_or_without_its_successor():
    reranker = LegalReranker(today="2026-01-01")
    named = "¿Qué decía el artículo 56 del Estatuto de los Trabajadores de 1995 sobre el despido?"
    out = reranker.run(documents=_dismissal_candidates(), query=named)
    assert out["documents"][0].id == "et95-56" and out["stats"]["superseded"] == []
    # the repealing norm is not among the candidates: the repealed text is the best there is
    alone = [d for d in _dismissal_candidates() if d.id != "et15-53"]
    out = reranker.run(documents=alone, query="¿Qué indemnización me corresponde si me despiden?")
    assert [d.id for d in out["documents"]] == ["et95-56", "ce-35"] and out["stats"]["superseded"] == []


def test_superseded_last_comes_before_the_jurisdiction_step_and_can_be_switched_off():
    clt = Document(id="clt-477", content="Art. 477. Rescisão do contrato.", meta=CLT_130, score=0.95)
    candidates = [*_dismissal_candidates(), clt]
    out = LegalReranker(today="2026-01-01").run(documents=candidates, query="¿Me pueden despedir sin indemnización?")
    # history of the question's own law, then another country's law
    assert [d.id for d in out["documents"]] == ["et15-53", "ce-35", "et95-56", "clt-477"]
    off = LegalReranker(today="2026-01-01", superseded_last=False, jurisdiction_first=False)
    out = off.run(documents=_dismissal_candidates(), query="¿Qué indemnización me corresponde si me despiden?")
    assert [d.id for d in out["documents"]] == ["et95-56", "et15-53", "ce-35"]
    assert out["stats"]["superseded"] == []
    data = off.to_dict()
    assert data["init_parameters"]["superseded_last"] is False
    assert LegalReranker.from_dict(data).to_dict() == data


def test_provisions_first_puts_a_preamble_after_the_norms_articles():
    lprl = {"law_id": "BOE-A-1995-24292", "law_short": "LPRL", "rank": 2, "status": "in_force", "country": "es",
            "lang": "es", "last_updated": "2025-01-01"}
    candidates = [
        Document(id="lprl-pre", content="Exposición de motivos ... la formación de los trabajadores ...",
                 meta={**lprl, "article": "preambulo"}, score=0.9),
        Document(id="lprl-19", content="Artículo 19. Formación de los trabajadores.", meta={**lprl, "article": "19"},
                 score=0.8),
        Document(id="lprl-14", content="Artículo 14. Derecho a la protección.", meta={**lprl, "article": "14"},
                 score=0.7),
    ]
    question = "¿Qué dice la Ley de Prevención de Riesgos Laborales sobre la formación?"
    out = LegalReranker(today="2026-01-01").run(documents=candidates, query=question)
    assert [d.id for d in out["documents"]] == ["lprl-19", "lprl-14", "lprl-pre"]  # after, never removed
    scores = [d.score for d in out["documents"]]
    assert scores == sorted(scores, reverse=True)
    off = LegalReranker(today="2026-01-01", provisions_first=False)
    assert off.run(documents=candidates, query=question)["documents"][0].id == "lprl-pre"
    data = off.to_dict()
    assert data["init_parameters"]["provisions_first"] is False and LegalReranker.from_dict(data).to_dict() == data


def test_permanent_first_puts_a_transitional_provision_after_its_law_s_rule():
    lgss = {"law_id": "BOE-A-2015-11724", "law_short": "LGSS", "rank": 2, "status": "in_force", "country": "es",
            "lang": "es", "last_updated": "2025-01-01"}
    et = {**ET2015, "country": "es", "lang": "es"}

    def block(doc_id, meta, article, score):
        return Document(id=doc_id, content=f"{article} ...", meta={**meta, "article": article}, score=score)

    candidates = [
        block("lgss-dt8", lgss, "dt8", 0.95),  # "Normas transitorias sobre base reguladora de la pensión de jubilación"
        block("et-dt9", et, "dt9", 0.92),
        block("lgss-209", lgss, "209", 0.90),  # the rule: base reguladora de la pensión de jubilación
        block("et-86", et, "86", 0.85),
        block("lgss-210", lgss, "210", 0.80),
        block("lgss-dt40", lgss, "dt40", 0.75),  # no article of its law below it: stays
        block("ce-dt1", {**CE, "country": "es", "lang": "es"}, "dt1", 0.70),  # no article of its law: stays
    ]
    question = "¿Cómo se calcula la base reguladora de la pensión de jubilación?"
    out = LegalReranker(today="2026-01-01", jurisdiction_first=False).run(documents=candidates, query=question)
    # each right after the next permanent provision of its own law, the others in their order
    assert [d.id for d in out["documents"]] == ["lgss-209", "lgss-dt8", "et-86", "et-dt9", "lgss-210", "lgss-dt40",
                                                "ce-dt1"]
    assert out["stats"]["transitional"] == ["lgss-dt8", "et-dt9"]
    scores = [d.score for d in out["documents"]]
    assert scores == sorted(scores, reverse=True)
    # a question that cites the transitional provision gets it first
    cited = LegalReranker(today="2026-01-01").run(
        documents=candidates, query="¿qué dice la disposición transitoria octava de la LGSS?",
        cited=[_cited("lgss-dt8", {**lgss, "article": "dt8"})])
    assert cited["documents"][0].id == "lgss-dt8"
    off = LegalReranker(today="2026-01-01", jurisdiction_first=False, permanent_first=False)
    assert off.run(documents=candidates, query=question)["documents"][0].id == "lgss-dt8"
    data = off.to_dict()
    assert data["init_parameters"]["permanent_first"] is False and LegalReranker.from_dict(data).to_dict() == data


def test_laws_first_puts_a_regulation_after_the_law_it_develops_unless_it_is_the_named_group_s_own_law(tmp_path):
    es = {"country": "es", "lang": "es", "status": "in_force", "last_updated": "2025-01-01"}
    rd2720 = {**es, "law_id": "BOE-A-1999-346", "rank": 4}  # develops ET art. 15 (laws.yaml)
    rd1620 = {**es, "law_id": "BOE-A-2011-17975", "rank": 4}  # household service: develops the ET, special law
    rgc = {**es, "law_id": "BOE-A-1996-1579", "rank": 4}  # the contributions regulation: develops the LGSS
    et = {**es, "law_id": "BOE-A-2015-11430", "rank": 2}
    lols = {**es, "law_id": "BOE-A-1985-16660", "rank": 1}

    def block(doc_id, meta, article, score):
        return Document(id=doc_id, content=f"{article} ...", meta={**meta, "article": article}, score=score)

    candidates = [
        block("rd2720-3", rd2720, "3", 0.95),
        block("lols-10", lols, "10", 0.93),  # a law, but not the one RD 2720/1998 develops
        block("et-15", et, "15", 0.90),
        block("rd1620-9", rd1620, "9", 0.85),
        block("et-34", et, "34", 0.80),
        block("rgc-26", rgc, "26", 0.70),  # no block of the LGSS below: stays
    ]
    question = "¿Qué contratos de duración determinada se pueden celebrar?"
    # relevance alone (no hierarchy / recency prior), the rule's own move
    fixed = {"today": "2026-01-01", "hierarchy_weight": 0.0, "recency_weight": 0.0, "jurisdiction_first": False,
             "special_regimes_last": False}
    reranker = LegalReranker(**fixed)
    out = reranker.run(documents=candidates, query=question)
    assert [d.id for d in out["documents"]] == ["lols-10", "et-15", "rd2720-3", "et-34", "rd1620-9", "rgc-26"]
    assert out["stats"]["regulations"] == ["rd2720-3", "rd1620-9"]
    scores = [d.score for d in out["documents"]]
    assert scores == sorted(scores, reverse=True)
    # the household service's regulation is the special law of a group the question names: it stays
    interna = reranker.run(documents=candidates, query="trabajo de interna, ¿me pueden hacer un contrato temporal?")
    assert [d.id for d in interna["documents"]] == ["lols-10", "et-15", "rd2720-3", "rd1620-9", "et-34", "rgc-26"]
    assert interna["stats"]["regulations"] == ["rd2720-3"]
    # a question that names the regulation gets it first
    named = reranker.run(documents=candidates, query=question, named_laws=["BOE-A-1999-346"])
    assert named["documents"][0].id == "rd2720-3"
    # a regulation the table of known norms does not list keeps its place
    table = tmp_path / "laws.yaml"
    table.write_text("laws:\n  BOE-A-1996-1579: {develops: [BOE-A-2015-11724]}\n", encoding="utf-8")
    unlisted = LegalReranker(**fixed, laws_file=str(table))
    assert unlisted.run(documents=candidates, query=question)["documents"][0].id == "rd2720-3"
    assert LegalReranker.from_dict(unlisted.to_dict()).to_dict() == unlisted.to_dict()
    table.write_text("laws:\n  BOE-A-1996-1579: {develops: BOE-A-2015-11724}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="develops"):
        LegalReranker(laws_file=str(table))
    off = LegalReranker(**fixed, laws_first=False)
    assert off.run(documents=candidates, query=question)["documents"][0].id == "rd2720-3"
    data = off.to_dict()
    assert data["init_parameters"]["laws_first"] is False and LegalReranker.from_dict(data).to_dict() == data


def _cited(doc_id: str, meta: dict, match: str = "exact") -> Document:
    # as LexicalFirstGate hands them on: fixed score, `lexical_match`
    return Document(id=doc_id, content="...", meta={**meta, "lexical_match": match, "score_type": "unit"}, score=1.0)


def test_cited_articles_come_first_in_the_order_cited_and_the_list_keeps_its_length():
    reranker = LegalReranker(today="2026-01-01")
    clt_477 = {**CLT_130, "article": "477"}
    clt_477a = {**CLT_130, "article": "477-a"}
    candidates = [
        Document(id="clt-477a", content="Art. 477-A. As dispensas...", meta=clt_477a, score=0.95),
        Document(id="clt-130", content="Art. 130. ... férias.", meta=CLT_130, score=0.90),
        Document(id="clt-477", content="Art. 477. Na extinção do contrato...", meta=clt_477, score=0.60),
    ]
    plain = reranker.run(documents=candidates, query="o que diz o art. 477 da CLT?")
    assert plain["documents"][0].id == "clt-477a" and plain["stats"]["cited"] == []  # the search's neighbour wins
    cited = [_cited("clt-477", clt_477), _cited("clt-134", CLT_134), _cited("et-38", ET_38, match="article")]
    out = reranker.run(documents=candidates, query="o que diz o art. 477 da CLT?", cited=cited)
    ids = [d.id for d in out["documents"]]
    # exact hits first, in the order given (one found by the search, one not), an article-only match left out,
    # no duplicate, as many documents as came in
    assert ids == ["clt-477", "clt-134", "clt-477a"]
    assert out["stats"]["cited"] == ["clt-477", "clt-134"]
    assert out["documents"][0].meta["lexical_match"] == "exact"
    scores = [d.score for d in out["documents"]]
    assert scores == sorted(scores, reverse=True) and scores[-1] > 0


def test_cited_articles_without_candidates_or_exact_hits():
    reranker = LegalReranker(today="2026-01-01")
    only = reranker.run(documents=[], query="art. 38 ET", cited=[_cited("et-38", ET_38)])
    assert [d.id for d in only["documents"]] == ["et-38"] and only["stats"]["cited"] == ["et-38"]
    partial = reranker.run(documents=_holiday_candidates(), query="¿vacaciones según el artículo 38?",
                           cited=[_cited("et-38", ET_38, match="article")])
    assert partial["stats"]["cited"] == []  # an ambiguous article number decides nothing by itself
    assert [d.id for d in partial["documents"]] == [
        d.id for d in reranker.run(documents=_holiday_candidates(), query="¿vacaciones según el artículo 38?")[
            "documents"]
    ]


# --- named norms first --------------------------------------------------------------------------------------------

CE_40 = {**CE, "country": "es", "lang": "es", "law_short": "CE"}


def _constitution_candidates() -> list[Document]:
    # the labour statutes say more about holidays, in more words, than the Constitution's one clause
    return [
        Document(id="et-38", content="Artículo 38. Vacaciones anuales.", meta=ET_38, score=0.95),
        Document(id="clt-130", content="Art. 130. ... férias.", meta=CLT_130, score=0.90),
        Document(id="ce-40", content="Artículo 40. ... vacaciones periódicas retribuidas.", meta=CE_40, score=0.70),
        Document(id="ce-35", content="Artículo 35. Derecho al trabajo.", meta={**CE_40, "article": "35"}, score=0.50),
    ]


def test_named_first_puts_the_blocks_of_the_norms_the_question_names_first():
    reranker = LegalReranker(today="2026-01-01")
    out = reranker.run(documents=_constitution_candidates(), query="¿Qué dice la Constitución sobre las vacaciones?")
    # the named norm's blocks in their order, then the question's country, then the other country's
    assert [d.id for d in out["documents"]] == ["ce-40", "ce-35", "et-38", "clt-130"]
    assert out["stats"]["named"] == [CE["law_id"]]
    scores = [d.score for d in out["documents"]]
    assert scores == sorted(scores, reverse=True) and scores[-1] > 0  # rescaled below, never removed
    # named as people type it: lowercase, no accent
    typed = reranker.run(documents=_constitution_candidates(), query="donde dice la constitucion que tengo vacaciones")
    assert [d.id for d in typed["documents"]][:2] == ["ce-40", "ce-35"] and typed["stats"]["named"] == [CE["law_id"]]
    # an article the question cites still comes before its norm's other blocks
    cited = reranker.run(documents=_constitution_candidates(), query="¿Qué dice el artículo 35 de la Constitución?",
                         cited=[_cited("ce-35", {**CE_40, "article": "35"})])
    assert [d.id for d in cited["documents"]][:2] == ["ce-35", "ce-40"]


def test_named_laws_given_by_the_citation_detector_are_used_instead_of_reading_the_query():
    reranker = LegalReranker(today="2026-01-01")
    # the detector's reading (here: the Constitution) wins over a query that names nothing
    given = reranker.run(documents=_constitution_candidates(), query="¿Cuántos días de vacaciones tengo?",
                         named_laws=[CE["law_id"]])
    assert [d.id for d in given["documents"]][:2] == ["ce-40", "ce-35"] and given["stats"]["named"] == [CE["law_id"]]
    # an empty list says the question names no norm: the query is not read again
    none = reranker.run(documents=_constitution_candidates(), query="¿Qué dice la Constitución sobre las vacaciones?",
                        named_laws=[])
    assert [d.id for d in none["documents"]][0] == "et-38" and none["stats"]["named"] == []
    with pytest.raises(ValueError, match="named_laws must be a list of law ids"):
        reranker.run(documents=_constitution_candidates(), query="q", named_laws="CF88")
    with pytest.raises(ValueError, match="named_laws must be a list of law ids"):
        reranker.run(documents=_constitution_candidates(), query="q", named_laws=[""])


def test_named_first_moves_nothing_without_a_named_norm_or_when_switched_off():
    reranker = LegalReranker(today="2026-01-01")
    unnamed = reranker.run(documents=_constitution_candidates(), query="¿Cuántos días de vacaciones tengo?")
    assert [d.id for d in unnamed["documents"]][0] == "et-38" and unnamed["stats"]["named"] == []
    # the named norm has no block among the candidates: the order stands
    no_block = reranker.run(documents=_constitution_candidates(), query="¿Qué dice la LPRL sobre las vacaciones?")
    assert [d.id for d in no_block["documents"]][0] == "et-38" and no_block["stats"]["named"] == []
    off = LegalReranker(today="2026-01-01", named_first=False)
    out = off.run(documents=_constitution_candidates(), query="¿Qué dice la Constitución sobre las vacaciones?")
    assert [d.id for d in out["documents"]][0] == "et-38" and out["stats"]["named"] == []
    data = off.to_dict()
    assert data["init_parameters"]["named_first"] is False
    assert LegalReranker.from_dict(data).to_dict() == data


CLT_META = {"law_id": "DEL-5452-1943", "rank": 2, "status": "in_force", "last_updated": "2025-01-01", "country": "br",
            "lang": "pt"}
RAILWAY = ["TÍTULO III: DAS NORMAS ESPECIAIS DE TUTELA DO TRABALHO",
           "CAPÍTULO I: DAS DISPOSIÇÕES ESPECIAIS SOBRE DURAÇÃO E CONDIÇÕES DE TRABALHO",
           "SEÇÃO V: DO SERVIÇO FERROVIÁRIO"]
WORKING_DAY = ["TÍTULO II: DAS NORMAS GERAIS DE TUTELA DO TRABALHO", "CAPÍTULO II: DA DURAÇÃO DO TRABALHO"]


def _overtime_candidates():
    """The railway's overtime article ahead of the general rule, as relevance alone ranks them (real texts)."""
    return [
        Document(id="clt-241", content="Art. 241. As horas excedentes das do horário normal de oito horas serão pagas "
                 "como serviço extraordinário ...", score=0.92,
                 meta={**CLT_META, "article": "241", "heading_path": RAILWAY}),
        Document(id="clt-59", content="Art. 59. A duração diária do trabalho poderá ser acrescida de horas extras ...",
                 score=0.90, meta={**CLT_META, "article": "59", "heading_path": WORKING_DAY}),
        Document(id="clt-61", content="Art. 61. Ocorrendo necessidade imperiosa, poderá a duração do trabalho "
                 "exceder do limite legal ...", score=0.70,
                 meta={**CLT_META, "article": "61", "heading_path": WORKING_DAY}),
    ]


def test_special_regimes_last_puts_a_group_s_own_rule_after_the_general_rule():
    reranker = LegalReranker(today="2026-01-01")
    out = reranker.run(documents=_overtime_candidates(), query="fiz 2 horas a mais, quanto tem que pagar?")
    assert [d.id for d in out["documents"]] == ["clt-59", "clt-61", "clt-241"]
    assert out["stats"]["special"] == ["DEL-5452-1943 241 (serviço ferroviário)"]
    moved = out["documents"][-1]
    assert moved.meta["special_regime"] == "serviço ferroviário"
    assert "special_regime" not in out["documents"][0].meta
    assert "special_regime" not in _overtime_candidates()[0].meta  # the caller's documents are not changed
    scores = [d.score for d in out["documents"]]
    assert scores == sorted(scores, reverse=True) and scores[-1] > 0  # rescaled below, never removed


def test_special_regimes_last_keeps_a_regime_the_question_names_or_cites():
    reranker = LegalReranker(today="2026-01-01")
    named = reranker.run(documents=_overtime_candidates(), query="sou ferroviário, quanto vale a hora extra?")
    assert named["documents"][0].id == "clt-241" and named["stats"]["special"] == []
    # named in the user's question a decomposed query came from
    from_question = reranker.run(
        documents=_overtime_candidates(), query="hora extra", question="sou maquinista de trem: e a hora extra?"
    )
    assert from_question["documents"][0].id == "clt-241"
    # an article the question cites comes first whatever its regime
    cited = _overtime_candidates()[0]
    out = reranker.run(
        documents=_overtime_candidates(), query="o que diz o art. 241 da CLT?",
        cited=[Document(id=cited.id, content=cited.content, meta={**cited.meta, "lexical_match": "exact"})],
    )
    assert out["documents"][0].id == "clt-241"


def test_special_regimes_last_can_be_switched_off_and_read_from_a_custom_table(tmp_path):
    off = LegalReranker(today="2026-01-01", special_regimes_last=False)
    out = off.run(documents=_overtime_candidates(), query="fiz 2 horas a mais, quanto tem que pagar?")
    assert [d.id for d in out["documents"]] == ["clt-241", "clt-59", "clt-61"] and out["stats"]["special"] == []
    table = tmp_path / "regimes.yaml"
    table.write_text("DEL-5452-1943:\n  - {group: prorrogação, articles: ['61'], named_by: [imperiosa]}\n",
                     encoding="utf-8")
    custom = LegalReranker(today="2026-01-01", regimes_file=str(table))
    out = custom.run(documents=_overtime_candidates(), query="fiz 2 horas a mais, quanto tem que pagar?")
    assert [d.id for d in out["documents"]] == ["clt-241", "clt-59", "clt-61"]
    assert out["stats"]["special"] == ["DEL-5452-1943 61 (prorrogação)"]
    data = custom.to_dict()
    assert data["init_parameters"]["regimes_file"] == str(table)
    assert data["init_parameters"]["special_regimes_last"] is True
    assert LegalReranker.from_dict(data).to_dict() == data
    with pytest.raises(ValueError, match="does not exist"):
        LegalReranker(regimes_file=str(tmp_path / "none.yaml"))


def test_a_special_regime_in_force_comes_before_a_repealed_norm():
    """Each rule puts its blocks after the others: law in force for some, then history."""
    household = {"law_id": "BOE-A-2011-17975", "rank": 3, "status": "in_force", "last_updated": "2023-01-01",
                 "article": "9", "heading_path": ["CAPÍTULO II. Contenido de la relación laboral"]}
    docs = [
        Document(id="et95-38", content="Vacaciones (1995).", meta={**ET1995_BY_2015, "article": "38"}, score=0.99),
        Document(id="rd1620-9", content="Vacaciones del empleado de hogar.", meta=household, score=0.95),
        Document(id="et15-38", content="Vacaciones (2015).", meta=ET2015, score=0.90),
    ]
    out = LegalReranker(today="2026-01-01").run(documents=docs, query="¿cuántos días de vacaciones tengo?")
    assert [d.id for d in out["documents"]] == ["et15-38", "rd1620-9", "et95-38"]
    assert out["stats"]["special"] == ["BOE-A-2011-17975 9 (servicio del hogar familiar)"]
    named = LegalReranker(today="2026-01-01").run(documents=docs, query="soy interna, ¿cuántos días de vacaciones?")
    assert [d.id for d in named["documents"]] == ["rd1620-9", "et15-38", "et95-38"]


def _household_holiday_candidates():
    """CLT articles on holidays and the article that leaves domestic employees out of the CLT (real texts)."""
    cf88 = {"law_id": "CF88", "rank": 1, "status": "in_force", "last_updated": "2025-01-01", "country": "br",
            "lang": "pt", "article": "7", "heading_path": ["TÍTULO II: DOS DIREITOS E GARANTIAS FUNDAMENTAIS"]}
    return [
        Document(id="clt-136", content="Art. 136. A época da concessão das férias será a que melhor consulte os "
                 "interesses do empregador.", score=0.9, meta={**CLT_META, "article": "136", "law_short": "CLT"}),
        Document(id="clt-7", content="Art. 7º Os preceitos constantes da presente Consolidação ... não se aplicam: "
                 "a) aos empregados domésticos ...", score=0.8, meta={**CLT_META, "article": "7", "law_short": "CLT"}),
        Document(id="cf88-7", content="Art. 7º São direitos dos trabalhadores urbanos e rurais ... XVII - gozo de "
                 "férias anuais remuneradas ...", score=0.7, meta=cf88),
    ]


def test_a_law_that_leaves_out_the_group_the_question_names_is_marked_in_place():
    reranker = LegalReranker(today="2026-01-01")
    out = reranker.run(documents=_household_holiday_candidates(),
                       query="sou empregada doméstica, tenho direito a férias?")
    assert [d.id for d in out["documents"]] == ["clt-136", "clt-7", "cf88-7"]  # nothing moves
    assert out["stats"]["left_out"] == ["DEL-5452-1943 (empregados domésticos)"]
    mark = out["documents"][0].meta["left_out"]
    assert mark["group"] == "empregados domésticos" and mark["article"] == "7" and "150/2015" in mark["own_law"]
    # the article that leaves the group out is not marked, nor another law's block
    assert "left_out" not in out["documents"][1].meta and "left_out" not in out["documents"][2].meta
    assert "left_out" not in _household_holiday_candidates()[0].meta  # the caller's documents are not changed


@pytest.mark.parametrize("query", [
    "tenho direito a férias?",  # no group
    "sofri violência doméstica, posso faltar ao trabalho?",  # "doméstica" naming no domestic employee
    "soy empleada doméstica, ¿tengo vacaciones?",  # another jurisdiction's question: the CLT is not its law anyway
])
def test_no_mark_without_the_group_in_the_law_s_jurisdiction(query):
    out = LegalReranker(today="2026-01-01").run(documents=_household_holiday_candidates(), query=query)
    assert out["stats"]["left_out"] == []
    assert not any("left_out" in d.meta for d in out["documents"])


def _journalist_candidates():
    """Everyone's eight hours ahead of the journalists' five, as relevance alone ranks them (real texts)."""
    journalists = ["TÍTULO III: DAS NORMAS ESPECIAIS DE TUTELA DO TRABALHO",
                   "CAPÍTULO I: DAS DISPOSIÇÕES ESPECIAIS SOBRE DURAÇÃO E CONDIÇÕES DE TRABALHO",
                   "SEÇÃO XI: DOS JORNALISTAS PROFISSIONAIS"]
    return [
        Document(id="clt-58", content="Art. 58. A duração normal do trabalho, para os empregados em qualquer atividade "
                 "privada, não excederá de 8 (oito) horas diárias ...", score=0.9,
                 meta={**CLT_META, "article": "58", "heading_path": WORKING_DAY}),
        Document(id="clt-302", content="Art. 302. Os dispositivos da presente Seção se aplicam aos que nas empresas "
                 "jornalísticas prestem serviços como jornalistas ...", score=0.8,
                 meta={**CLT_META, "article": "302", "heading_path": journalists}),
        Document(id="clt-303", content="Art. 303. A duração normal do trabalho dos empregados compreendidos nesta "
                 "Seção não deverá exceder de 5 (cinco) horas ...", score=0.7,
                 meta={**CLT_META, "article": "303", "heading_path": journalists}),
    ]


def test_a_named_group_s_rule_goes_right_before_the_general_rule_it_displaces():
    reranker = LegalReranker(today="2026-01-01")
    asked = "sou jornalista, quantas horas posso trabalhar por dia?"
    out = reranker.run(documents=_journalist_candidates(), query=asked)
    assert [d.id for d in out["documents"]] == ["clt-303", "clt-58", "clt-302"]
    assert out["stats"]["special_first"] == ["DEL-5452-1943 303 before 58 (jornalistas profissionais)"]
    scores = [d.score for d in out["documents"]]
    assert scores == sorted(scores, reverse=True)
    # the group not named: the journalists' articles are a special regime, after the general rule
    plain = reranker.run(documents=_journalist_candidates(), query="quantas horas posso trabalhar por dia?")
    assert [d.id for d in plain["documents"]] == ["clt-58", "clt-302", "clt-303"]
    assert plain["stats"]["special_first"] == []
    # the regime's rule already ranked above the general rule stays where it is; switched off, nothing moves
    five = _journalist_candidates()[2]
    ahead = [Document(id=five.id, content=five.content, meta=five.meta, score=0.95), *_journalist_candidates()[:2]]
    kept = reranker.run(documents=ahead, query=asked)
    assert kept["documents"][0].id == "clt-303" and kept["stats"]["special_first"] == []
    off = LegalReranker(today="2026-01-01", special_regimes_last=False).run(
        documents=_journalist_candidates(), query=asked)
    assert [d.id for d in off["documents"]] == ["clt-58", "clt-302", "clt-303"]


def _night_work_candidates():
    """Everyone's night-work article ahead of the minors' article, as relevance alone ranks them (real texts)."""
    et = {**ET2015, "country": "es", "lang": "es", "heading_path": ["TÍTULO I: De la relación individual de trabajo"]}
    return [
        Document(id="et-36", content="Artículo 36. Trabajo nocturno, trabajo a turnos y ritmo de trabajo. 1. A "
                 "efectos de lo dispuesto en esta ley, se considera trabajo nocturno el realizado entre las diez de la "
                 "noche y las seis de la mañana ...", score=0.9, meta={**et, "article": "36"}),
        Document(id="et-6", content="Artículo 6. Trabajo de los menores. ... 2. Los trabajadores menores de dieciocho "
                 "años no podrán realizar trabajos nocturnos ...", score=0.85, meta={**et, "article": "6"}),
        Document(id="et-11", content="Artículo 11. Contratos formativos ...", score=0.6, meta={**et, "article": "11"}),
    ]


def test_for_a_minor_the_et_s_minors_article_goes_before_everyone_s_night_work_and_after_it_for_an_adult():
    reranker = LegalReranker(today="2026-01-01")
    minor = reranker.run(documents=_night_work_candidates(), query="tengo 16 años, ¿me pueden poner el turno de noche?")
    assert [d.id for d in minor["documents"]] == ["et-6", "et-36", "et-11"]
    assert minor["stats"]["special_first"] == ["BOE-A-2015-11430 6 before 36 (trabajo de los menores)"]
    adult = reranker.run(documents=_night_work_candidates(), query="trabajo de noche, ¿cuántas horas puedo hacer?")
    assert [d.id for d in adult["documents"]] == ["et-36", "et-11", "et-6"]
    assert adult["stats"]["special"] == ["BOE-A-2015-11430 6 (trabajo de los menores)"]
    # seniority is no age: "llevo 17 años" names no minor
    senior = reranker.run(documents=_night_work_candidates(), query="llevo 17 años en la empresa y trabajo de noche")
    assert [d.id for d in senior["documents"]][0] == "et-36" and senior["stats"]["special_first"] == []
