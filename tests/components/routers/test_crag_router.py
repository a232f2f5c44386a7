import pytest
from haystack import Document, Pipeline, component
from haystack.components.converters import OutputAdapter
from haystack.components.joiners import BranchJoiner

import components.routers.crag_router as crag_module
from components.routers.crag_router import REJECTED_MESSAGE, REJECTED_MESSAGES, CRAGRouter
from tests.linear_time import linear_time

# Scores as Qdrant's RRF (k=2, ranks from 0) returns them: 1/2 + 1/8, 1/2 + 1/29, 1/3 + 1/7, ...
RRF_SCORES = [0.625, 0.53448278, 0.47619051, 0.375, 0.29545456, 0.29166669]
QUESTION = "Me han despedido estando de baja médica en Madrid, ¿qué dice el art. 56 ET?"


RANGE = {"cosine_floor": 0.3, "cosine_ceiling": 0.8}  # the cosine range these score examples use


def _docs(scores, **meta):
    return [Document(content=f"doc {i}", score=score, meta=dict(meta)) for i, score in enumerate(scores)]


def test_init_defaults_and_validation():
    router = CRAGRouter()
    assert (router.accept_best, router.accept_mean_top_n, router.top_n, router.max_retries) == (0.5, 0.35, 5, 2)
    assert router.score_mode == "auto" and router.rejected_message is None
    for kwargs, message in [
        ({"accept_best": 1.5}, "accept_best"),
        ({"min_best": 0.6}, "min_best"),
        ({"top_n": 0}, "top_n"),
        ({"max_retries": -1}, "max_retries"),
        ({"score_mode": "softmax"}, "score_mode"),
        ({"cosine_floor": 0.9}, "cosine_floor"),
        ({"rrf_weights": [0.0]}, "rrf_weights"),
        ({"equivalences_file": "/nonexistent/eq.yaml"}, "not found"),
    ]:
        with pytest.raises(ValueError, match=message):
            CRAGRouter(**kwargs)


def test_to_dict():
    data = CRAGRouter(accept_best=0.6, score_mode="cosine", max_retries=1).to_dict()
    assert data["type"] == "components.routers.crag_router.CRAGRouter"
    assert data["init_parameters"]["accept_best"] == 0.6
    assert data["init_parameters"]["score_mode"] == "cosine"
    assert data["init_parameters"]["equivalences_file"] is None


def test_from_dict():
    data = CRAGRouter(accept_mean_top_n=0.4, rrf_weights=[1.0, 0.5]).to_dict()
    restored = CRAGRouter.from_dict(data)
    assert restored.to_dict() == data


def test_calibration_auto_infers_score_types():
    router = CRAGRouter(**RANGE)
    assert router.calibrate(_docs(RRF_SCORES))[:2] == pytest.approx([0.625, 0.53448278])  # rrf: score * k / 2
    weighted = _docs([s * 0.8 for s in RRF_SCORES])  # a `sentencias` collection, weight 0.8
    assert router._infer_score_type([d.score for d in weighted]) == "rrf"
    cosine = _docs([0.8031, 0.5517, 0.3012, 0.1234])  # float32-like dense scores
    assert router.calibrate(cosine) == pytest.approx([1.0, 0.5034, 0.0024, 0.0], abs=1e-4)
    assert router._infer_score_type([0.35, 0.3]) == "cosine"  # on the lattice, but no rank-0 hit
    assert router.calibrate(_docs([10.0, 30.0, 0.0])) == pytest.approx([0.5, 0.75, 0.0])  # bm25
    mixed = [*_docs([1.0], score_type="unit"), *_docs([0.5517, 0.5012, 0.4507])]  # exact hit + cosine
    assert router.calibrate(mixed) == pytest.approx([1.0, 0.5034, 0.4024, 0.3014], abs=1e-4)
    assert CRAGRouter(**RANGE, score_mode="cosine").calibrate(_docs(RRF_SCORES[:1])) == pytest.approx([0.65])
    assert router.calibrate([Document(content="no score")]) == [0.0]


def test_run_accept_rrf_set():
    docs = _docs(RRF_SCORES)
    result = CRAGRouter().run(query="vacaciones", documents=docs)
    assert result["route"] == "ACCEPT"
    assert result["accepted"] is docs
    assert "retry_query" not in result and "rejected" not in result
    assert result["retries"] == 0
    assert result["confidence"] == pytest.approx((0.625 + sum(RRF_SCORES[:5]) / 5) / 2, abs=1e-4)


def test_run_retry_broadens_the_query():
    graded = _docs([0.4121, 0.3518, 0.3307])
    result = CRAGRouter(**RANGE).run(query=QUESTION, documents=graded, retries=0)
    assert result["route"] == "RETRY"
    assert result["retries"] == 1
    assert result["retry_documents"] == graded  # merged again with the retry's results
    assert "accepted" not in result and "rejected" not in result
    query = result["retry_query"]
    for specific in ("56", "ET", "Madrid", "art"):
        assert specific not in query.split()
    for legal in ("incapacidad", "temporal", "extinción", "contrato"):  # from components/legal/data/equivalences.yaml
        assert legal in query.split()
    assert query.startswith("despedido estando baja médica")


def test_broaden_query_trims_more_on_later_attempts_and_works_without_equivalences(monkeypatch, tmp_path):
    router = CRAGRouter()
    question = "¿Cuántos días de vacaciones tengo si trabajo a tiempo parcial en una empresa de limpieza?"
    # "vacaciones" comes with its statutory terms from the equivalence table
    assert router.broaden_query(question, 1) == (
        "días trabajo tiempo parcial empresa limpieza vacaciones anuales retribuidas disfrute"
    )
    assert router.broaden_query(question, 2) == "días trabajo tiempo parcial vacaciones anuales retribuidas disfrute"
    monkeypatch.setattr(crag_module, "DEFAULT_EQUIVALENCES_FILE", tmp_path / "missing.yaml")
    bare = CRAGRouter()
    assert bare.broaden_query("Me han despedido estando de baja médica", 1) == "despedido estando baja médica"


def test_broaden_query_leaves_out_what_the_question_cites_outside_the_corpus():
    router = CRAGRouter()
    # "código" alone found the social-security codes of occupations: nothing is left to search, so no retry
    assert router.broaden_query("Código Penal artículo 138") == ""
    assert router.broaden_query("Súmula 331 do TST") == ""
    assert router.broaden_query("¿Qué leyes tienes?") == ""  # about the corpus itself: NormCatalogue answers
    assert router.broaden_query("o que diz a Lei 605/49 sobre repouso semanal remunerado?") == (
        "repouso semanal remunerado")
    result = router.run(query="Código Penal artículo 138", documents=[])
    assert result["route"] == "REJECT" and result["retries"] == 0 and "retry_query" not in result


def test_broaden_query_leaves_out_the_specific_terms_in_linear_time():
    router = CRAGRouter()
    assert router.broaden_query("¿cuántos días de vacaciones da el art. 38 del ET en 2024?", 1).startswith("días")
    with linear_time():  # a long word without a digit: every start inside it used to scan it to its end
        assert router.broaden_query("x" * 100_000, 1) == "x" * 100_000


@pytest.mark.parametrize("message", ["", "  ", {}, {"es": ""}, {"es": 3}, ["texto"]])
def test_init_rejects_an_empty_or_malformed_message(message):
    with pytest.raises(ValueError, match="rejected_message"):
        CRAGRouter(rejected_message=message)


def test_reject_message_in_the_questions_language_or_as_configured():
    low = _docs([0.3512, 0.3021])
    router = CRAGRouter(**RANGE, max_retries=0)
    assert router.run(query=QUESTION, documents=low)["rejected"] == REJECTED_MESSAGES["es"] == REJECTED_MESSAGE
    portuguese = "qual é a melhor receita de bolo de cenoura com chocolate?"
    assert router.run(query=portuguese, documents=low)["rejected"] == REJECTED_MESSAGES["pt"]
    assert REJECTED_MESSAGES["pt"].startswith("O corpus indexado não cobre esta pergunta")
    # one configured text for every language; texts by language, Spanish for a language without one
    fixed = CRAGRouter(**RANGE, max_retries=0, rejected_message="Sin respuesta.")
    assert fixed.run(query=portuguese, documents=low)["rejected"] == "Sin respuesta."
    by_language = CRAGRouter(**RANGE, max_retries=0, rejected_message={"es": "No.", "pt": "Não."})
    assert by_language.run(query=portuguese, documents=low)["rejected"] == "Não."
    assert by_language.run(query="what is the capital of France?", documents=low)["rejected"] == "No."
    restored = CRAGRouter.from_dict(by_language.to_dict())
    assert restored.rejected_message == {"es": "No.", "pt": "Não."}


def test_run_reject_at_max_retries():
    result = CRAGRouter(**RANGE, max_retries=2).run(query=QUESTION, documents=_docs([0.3512, 0.3021]), retries=2)
    assert result == {"rejected": REJECTED_MESSAGE, "route": "REJECT", "retries": 2, "confidence": 0.0779}
    empty = CRAGRouter(**RANGE, max_retries=0).run(query=QUESTION, documents=[])
    assert empty["route"] == "REJECT" and empty["confidence"] == 0.0


def test_run_low_confidence_accept_at_max_retries_above_min_best():
    docs = _docs([0.6013, 0.3512, 0.3107, 0.3034, 0.3021])  # cosine: best 0.60, mean 0.15 -> no ACCEPT yet
    router = CRAGRouter(**RANGE, min_best=0.3)
    assert router.run(query=QUESTION, documents=docs, retries=1)["route"] == "RETRY"
    final = router.run(query=QUESTION, documents=docs, retries=2)
    assert final["route"] == "ACCEPT" and final["accepted"] is docs
    assert final["confidence"] < 0.5


def test_run_nothing_to_broaden_is_final():
    # only specific terms: no broader rewrite exists, so retrying would repeat the same search
    result = CRAGRouter().run(query="art. 38 ET", documents=_docs([0.2]), retries=0)
    assert result["route"] == "REJECT" and result["retries"] == 0


@component
class _ScriptedRetriever:
    """Returns weak documents for the first `weak_calls` queries, then strong ones."""

    def __init__(self, weak_calls: int) -> None:
        self.weak_calls = weak_calls
        self.queries: list[str] = []

    @component.output_types(documents=list[Document], query=str)
    def run(self, query: str) -> dict:
        self.queries.append(query)
        score = 0.1 if len(self.queries) <= self.weak_calls else 0.9
        return {"documents": _docs([score], score_type="unit"), "query": query}


@pytest.mark.parametrize(("weak_calls", "route", "searches"), [(1, "ACCEPT", 2), (5, "REJECT", 3)])
def test_run_in_a_pipeline_loop(weak_calls, route, searches):
    pipeline = Pipeline(max_runs_per_component=5)
    pipeline.add_component("query", BranchJoiner(str))
    pipeline.add_component("retriever", _ScriptedRetriever(weak_calls))
    pipeline.add_component("crag", CRAGRouter(max_retries=2))
    pipeline.add_component("counter", OutputAdapter(template="{{ retries }}", output_type=int))
    pipeline.connect("query.value", "retriever.query")
    pipeline.connect("retriever.documents", "crag.documents")
    pipeline.connect("retriever.query", "crag.query")
    pipeline.connect("crag.retry_query", "query.value")
    pipeline.connect("crag.retries", "counter.retries")
    pipeline.connect("counter.output", "crag.retries")
    result = pipeline.run({"query": {"value": QUESTION}}, include_outputs_from={"crag"})["crag"]
    assert result["route"] == route
    assert len(pipeline.get_component("retriever").queries) == searches
    assert result["retries"] == searches - 1


def test_run_disabled_accepts_any_set():
    weak = _docs([0.05, 0.02])
    assert CRAGRouter().run(query=QUESTION, documents=weak)["route"] != "ACCEPT"
    for router, override in ((CRAGRouter(enabled=False), None), (CRAGRouter(), False)):
        result = router.run(query=QUESTION, documents=weak, retries=1, enabled=override)
        assert result == {"accepted": weak, "route": "ACCEPT", "retries": 1, "confidence": 1.0}
    assert CRAGRouter.from_dict(CRAGRouter(enabled=False).to_dict()).enabled is False


def test_absolute_mode_grades_the_dense_similarity_not_the_relative_scores():
    # re-ranked scores look strong for any set; the dense similarity tells an off-topic set apart (EmbeddingGemma)
    off_topic = [Document(content=f"doc {i}", score=s, meta={"dense_score": c})
                 for i, (s, c) in enumerate([(0.98, 0.21), (0.91, 0.18), (0.88, 0.15)])]
    in_domain = [Document(content=f"doc {i}", score=s, meta={"dense_score": c})
                 for i, (s, c) in enumerate([(0.98, 0.58), (0.91, 0.52), (0.88, 0.47)])]
    router = CRAGRouter(max_retries=0)
    assert router.calibrate(in_domain) == pytest.approx([0.95, 0.8, 0.675])
    assert router.run(query=QUESTION, documents=in_domain)["route"] == "ACCEPT"
    assert router.run(query=QUESTION, documents=off_topic)["route"] == "REJECT"
    # a cited article fetched directly keeps its unit score; a block without a dense score counts 0
    cited = Document(content="art. 38", score=1.0, meta={"score_type": "unit"})
    bm25_only = Document(content="bm25 hit", score=0.99)
    assert router.calibrate([cited, bm25_only, *off_topic[:1]]) == pytest.approx([1.0, 0.0, 0.025])
    assert CRAGRouter(absolute_field=None).calibrate(off_topic)[0] > 0.9  # the relative scores, as before
    assert CRAGRouter.from_dict(CRAGRouter(absolute_field=None).to_dict()).absolute_field is None


def test_carried_over_blocks_are_graded_on_their_own_similarity_never_their_fixed_score():
    router = CRAGRouter(max_retries=0)
    carried = [Document(content=f"labour block {i}", score=0.5, meta={"score_type": "unit", "carried_over": True})
               for i in range(3)]
    # three carried-over ids alone (no similarity known) vouch for nothing: an off-topic question is REJECTed
    assert router.calibrate(carried) == [0.0, 0.0, 0.0]
    assert router.run(query="¿Cuál es la receta de la paella?", documents=carried)["route"] == "REJECT"
    off_topic = [Document(id=d.id, content=d.content, score=0.5, meta={**d.meta, "dense_score": 0.12})
                 for d in carried]
    assert router.run(query="¿Cuál es la receta de la paella?", documents=off_topic)["route"] == "REJECT"
    # relevant to the new question: graded on that similarity, ACCEPT as any retrieved block would be
    follow_up = [Document(id=d.id, content=d.content, score=0.5, meta={**d.meta, "dense_score": 0.55})
                 for d in carried]
    assert router.calibrate(follow_up) == pytest.approx([0.875] * 3)
    assert router.run(query="¿Y si estoy de baja?", documents=follow_up)["route"] == "ACCEPT"
    # the same in every score mode, and when the previous round's set is merged back in
    assert CRAGRouter(score_mode="unit").calibrate(carried) == [0.0, 0.0, 0.0]
    retried = router.run(query="paella", documents=[], carried=carried)
    assert retried["route"] == "REJECT"


def test_a_turn_that_asks_nothing_new_is_answered_from_its_carried_over_blocks():
    router = CRAGRouter(max_retries=0)
    carried = [Document(content=f"labour block {i}", score=0.5, meta={"score_type": "unit", "carried_over": True,
                                                                        "dense_score": 0.05}) for i in range(3)]
    # nothing was searched for "explica melhor": its words are close to no block, the blocks are what it is about
    assert router.calibrate(carried, goes_on=True) == [0.5, 0.5, 0.5]
    for turn in ("explica melhor", "¿Puedes explicarlo mejor?", "resúmelo"):
        assert router.run(query=turn, documents=carried)["route"] == "ACCEPT"
    # a question with words of its own is graded on its similarity, and so is the set once anything was retrieved
    assert router.run(query="¿Cuál es la receta de la paella?", documents=carried)["route"] == "REJECT"
    retrieved = Document(content="receta", score=0.1, meta={"dense_score": 0.05})
    assert router.run(query="explica melhor", documents=[*carried, retrieved])["route"] == "REJECT"


def test_a_block_both_carried_and_retrieved_counts_as_retrieved():
    carried = Document(id="b1", content="x", score=0.5, meta={"carried_over": True, "score_type": "unit"})
    retrieved = Document(id="b1", content="x", score=0.3, meta={"dense_score": 0.55})
    merged = crag_module._merge([carried], [retrieved])
    assert len(merged) == 1 and "carried_over" not in merged[0].meta and merged[0].meta["dense_score"] == 0.55
