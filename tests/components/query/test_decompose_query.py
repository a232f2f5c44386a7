import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from haystack import Pipeline
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.dataclasses import ChatMessage, ChatRole

from components.query.decompose_query import (
    DECOMPOSE_SYSTEM_PROMPT,
    FOLLOWUP_SYSTEM_PROMPT,
    DecomposeQuery,
)
from components.legal.terms import load_equivalences
from components.generators.llm_backends import LocalLlamaChatGenerator, default_chat_generator
from components.utils.models import is_installed
from tests.scripted_llm import ScriptedChatGenerator

VACATIONS = "¿Cuántos días de vacaciones tengo?"
DISMISSALS = "¿Qué diferencia hay entre despido objetivo y disciplinario?"
SICK_LEAVE = "me han dado la baja médica"

PROMPTS_MD_PAIRS = {
    "baja de maternidad": "suspensión contrato nacimiento cuidado menor",
    "despido": "extinción contrato despido",
    "paro": "prestación desempleo",
    "baja médica": "incapacidad temporal prestación",
    "pensión": "jubilación prestación contributiva",
    "finiquito": "liquidación haberes extinción contrato",
}


def _history():
    return [
        ChatMessage.from_user("¿Cuántos días de vacaciones tengo?"),
        ChatMessage.from_assistant("Según el artículo 38 del Estatuto, " + "treinta días. " * 30),
        ChatMessage.from_user("¿Se pueden partir en varios periodos?"),
        ChatMessage.from_assistant("Sí, " + "por acuerdo con la empresa. " * 20),
        ChatMessage.from_user("¿Y quién fija las fechas?"),
        ChatMessage.from_assistant("Las fija el calendario pactado " + "con la representación. " * 15),
    ]


def test_init_defaults_and_validation(tmp_path):
    decomposer = DecomposeQuery()
    assert (decomposer.chat_generator, decomposer.max_queries, decomposer.equivalences_file, decomposer.timeout,
            decomposer.llm_on_first_question) == (None, 4, None, None, False)
    with pytest.raises(ValueError, match="max_queries"):
        DecomposeQuery(max_queries=0)
    with pytest.raises(ValueError, match="timeout"):
        DecomposeQuery(timeout=-1)
    with pytest.raises(ValueError, match="not found"):
        DecomposeQuery(equivalences_file=str(tmp_path / "missing.yaml"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("- paro\n- despido\n", encoding="utf-8")
    with pytest.raises(ValueError, match="mapping"):
        DecomposeQuery(equivalences_file=str(bad))


def test_to_dict_without_generator():
    assert DecomposeQuery(max_queries=3).to_dict() == {
        "type": "components.query.decompose_query.DecomposeQuery",
        "init_parameters": {"enabled": True, "chat_generator": None, "max_queries": 3, "equivalences_file": None,
                            "timeout": None, "llm_on_first_question": False, "llm_on_follow_up": False},
    }
    assert DecomposeQuery.from_dict(DecomposeQuery(max_queries=3).to_dict()).chat_generator is None


def test_to_dict_from_dict_with_nested_generators(monkeypatch):
    scripted = DecomposeQuery(chat_generator=ScriptedChatGenerator(replies=['["paro"]']), timeout=5.0,
                              llm_on_first_question=True, llm_on_follow_up=True)
    data = scripted.to_dict()
    assert data["init_parameters"]["llm_on_first_question"] is True
    assert data["init_parameters"]["llm_on_follow_up"] is True
    assert data["init_parameters"]["chat_generator"] == {
        "type": "tests.scripted_llm.ScriptedChatGenerator",
        "init_parameters": {"replies": ['["paro"]'], "error": None, "delay": 0.0},
    }
    restored = DecomposeQuery.from_dict(data)
    assert isinstance(restored.chat_generator, ScriptedChatGenerator)
    assert restored.to_dict() == data
    assert restored.llm_on_first_question is True and restored.llm_on_follow_up is True
    queries = restored.run(query="¿Y el paro?", carryover=["c1"])["queries"]
    assert queries[-1] == "paro" and queries[0].startswith("paro ")  # the LLM's query after the deterministic one

    local = DecomposeQuery(chat_generator=LocalLlamaChatGenerator(model="qwen2.5-coder-0.5b", timeout=30.0))
    restored_local = DecomposeQuery.from_dict(local.to_dict())
    assert isinstance(restored_local.chat_generator, LocalLlamaChatGenerator)
    assert restored_local.to_dict() == local.to_dict()

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    remote = DecomposeQuery(chat_generator=OpenAIChatGenerator(model="gpt-4o-mini"))
    assert isinstance(DecomposeQuery.from_dict(remote.to_dict()).chat_generator, OpenAIChatGenerator)


def test_pipeline_yaml_round_trip():
    pipeline = Pipeline()
    llm = ScriptedChatGenerator(replies=['["paro"]'])
    pipeline.add_component("decompose", DecomposeQuery(chat_generator=llm, llm_on_follow_up=True))
    loaded = Pipeline.loads(pipeline.dumps())
    result = loaded.run({"decompose": {"query": "¿Y el paro?", "carryover": ["c1"]}})
    assert result["decompose"]["queries"][-1] == "paro"


def test_warm_up_warms_the_nested_generator():
    llm = ScriptedChatGenerator()
    decomposer = DecomposeQuery(chat_generator=llm)
    decomposer.warm_up()
    decomposer.warm_up()
    assert llm.warm_ups == 2  # delegated every time; generators' own warm_up is idempotent
    DecomposeQuery().warm_up()


def test_first_question_is_not_sent_to_the_llm_by_default():
    llm = ScriptedChatGenerator(replies=['["vacaciones anuales retribuidas días disfrute"]'])
    result = DecomposeQuery(chat_generator=llm).run(query=VACATIONS)
    assert llm.calls == []
    assert result["queries"] == [VACATIONS]
    assert result["fallback"] is False
    assert result["trace"]["path"] == "deterministic" and result["trace"]["fallback_reason"] is None


@pytest.mark.parametrize(
    "question", ["Súmula 331 do TST", "¿Qué dice la Sentencia del Tribunal Supremo 1234/2020?", "STS 1234/2020"]
)
def test_a_first_question_only_about_case_law_searches_nothing(question):
    llm = ScriptedChatGenerator(replies=['["despido"]'])
    result = DecomposeQuery(chat_generator=llm, llm_on_first_question=True).run(query=question)
    assert result["queries"] == [] and result["trace"]["skip_retrieval"] is True
    assert result["trace"]["path"] == "outside_corpus" and result["fallback"] is False
    assert llm.calls == []  # nothing to ask the LLM about either


@pytest.mark.parametrize("question", ["¿Qué leyes tienes?", "quais leis você conhece?"])
def test_a_question_about_the_corpus_itself_searches_nothing(question):
    llm = ScriptedChatGenerator(replies=['["leyes"]'])
    result = DecomposeQuery(chat_generator=llm, llm_on_first_question=True).run(query=question)
    assert result["queries"] == [] and result["trace"]["skip_retrieval"] is True
    assert result["trace"]["path"] == "catalogue" and llm.calls == []  # NormCatalogue answers it
    # a question about what the laws say is searched
    assert DecomposeQuery().run(query="¿Qué leyes regulan las vacaciones?")["queries"] == [
        "¿Qué leyes regulan las vacaciones?"]


def test_a_norm_the_table_lacks_is_searched_without_its_numbers():
    # the caller may have indexed it; its numbers would find other norms' articles
    assert DecomposeQuery().run(query="Ley 36/2011 artículo 2")["queries"] == ["Ley artículo"]
    result = DecomposeQuery().run(query="¿Qué dice la Ley 36/2011 sobre el despido?")
    assert result["queries"] == ["¿Qué dice la Ley sobre el despido?"]
    # a follow-up is read with the conversation, never refused here
    follow_up = DecomposeQuery().run(query="¿y la Súmula 331 do TST?", carryover=["c1"])
    assert follow_up["trace"]["path"] != "outside_corpus"


def test_run_first_question_sends_system_and_user():
    llm = ScriptedChatGenerator(replies=['["vacaciones anuales retribuidas días disfrute"]'])
    result = DecomposeQuery(chat_generator=llm, llm_on_first_question=True).run(query=VACATIONS)
    # the question as written first, then the LLM's keyword queries
    assert result["queries"] == [VACATIONS, "vacaciones anuales retribuidas días disfrute"]
    assert result["fallback"] is False
    assert result["trace"]["path"] == "llm" and result["trace"]["mode"] == "first_question"
    (messages,) = llm.calls
    assert [m.role for m in messages] == [ChatRole.SYSTEM, ChatRole.USER]
    assert messages[0].text == DECOMPOSE_SYSTEM_PROMPT.format(max_queries=4)
    assert "array JSON" in messages[0].text and "número" in messages[0].text
    assert messages[1].text.startswith(f"Pregunta: {VACATIONS}")
    assert "- vacaciones -> vacaciones anuales retribuidas disfrute" in messages[1].text


def test_follow_up_is_not_sent_to_the_llm_by_default():
    llm = ScriptedChatGenerator(replies=['["sanción incumplimiento empresario vacaciones reclamación"]'])
    history = [ChatMessage.from_user("¿Cuántos días de vacaciones tengo al año?"),
               ChatMessage.from_assistant("Treinta días naturales (ET, art. 38).")]
    result = DecomposeQuery(chat_generator=llm).run(query="¿y me las pueden pagar en vez de disfrutarlas?",
                                                    history=history, carryover=["c1"])
    assert llm.calls == []
    assert result["queries"][0] == (
        "¿Cuántos días de vacaciones tengo al año? ¿y me las pueden pagar en vez de disfrutarlas?")
    assert result["fallback"] is False
    assert result["trace"]["mode"] == "follow_up" and result["trace"]["path"] == "deterministic"


def test_run_follow_up_sends_the_last_four_history_messages_truncated():
    llm = ScriptedChatGenerator(replies=['["sanción incumplimiento empresario vacaciones reclamación"]'])
    history = _history()
    decomposer = DecomposeQuery(chat_generator=llm, llm_on_follow_up=True)
    result = decomposer.run(query="¿Y si no me las pagan?", history=history, carryover=["c1", "c2"])
    # the deterministic query (the turn read with the conversation's last two questions: one word, "pagan", is no
    # query of its own), then the LLM's, at most 3
    assert result["queries"] == [
        "¿Se pueden partir en varios periodos? ¿Y quién fija las fechas? ¿Y si no me las pagan?",
        "sanción incumplimiento empresario vacaciones reclamación",
    ]
    assert result["trace"]["path"] == "llm"
    assert result["trace"]["mode"] == "follow_up" and result["trace"]["carryover"] == 2
    (messages,) = llm.calls
    assert len(messages) == 6
    assert messages[0].role == ChatRole.SYSTEM and messages[0].text == FOLLOWUP_SYSTEM_PROMPT.format(max_queries=3)
    for sent, original in zip(messages[1:5], history[-4:], strict=True):
        assert sent.role == original.role
        assert sent.text == original.text[:200] and len(sent.text) <= 200
    assert len(history[-3].text) > 200  # the truncation was exercised
    assert messages[5].role == ChatRole.USER and messages[5].text == "Pregunta: ¿Y si no me las pagan?"
    # a turn that asks nothing new by its words: the LLM's queries only add to the (no) deterministic ones
    nothing_new = DecomposeQuery(chat_generator=ScriptedChatGenerator(replies=['["vacaciones no disfrutadas"]']),
                                 llm_on_follow_up=True).run(query="¿Y si no me las dan?", history=history,
                                                            carryover=["c1"])
    assert nothing_new["queries"][0].endswith("¿Y quién fija las fechas? ¿Y si no me las dan?")  # read with them
    assert nothing_new["queries"][1:] == ["vacaciones no disfrutadas"]


def test_run_follow_up_empty_list_skips_retrieval():
    llm = ScriptedChatGenerator(replies=["[]"])
    # the carried-over blocks without the conversation: nothing to read the turn with, they answer it
    result = DecomposeQuery(chat_generator=llm, llm_on_follow_up=True).run(
        query="¿Puedes explicarlo mejor?", carryover=["c1"])
    assert result["queries"] == []
    assert result["fallback"] is False
    assert result["trace"]["skip_retrieval"] is True


def test_run_follow_up_returns_at_most_three():
    reply = json.dumps(["permiso matrimonio", "permiso mudanza", "permiso exámenes", "permiso lactancia"])
    result = DecomposeQuery(chat_generator=ScriptedChatGenerator(replies=[reply]), llm_on_follow_up=True).run(
        query="¿Y los demás permisos?", carryover=["c1"])
    # the deterministic query (the turn's keywords), then the LLM's, 3 in all
    assert len(result["queries"]) == 3 and result["queries"][1:] == ["permiso matrimonio", "permiso mudanza"]


def test_run_parses_fenced_json_and_cleans_queries():
    queries = ["vacaciones anuales artículo 38 disfrute", "Vacaciones anuales disfrute", "calendario vacaciones", "x"]
    reply = f"```json\n{json.dumps(queries, ensure_ascii=False)}\n```"
    result = DecomposeQuery(chat_generator=ScriptedChatGenerator(replies=[reply]), max_queries=3,
                            llm_on_follow_up=True).run(query="¿Y cuándo se disfrutan?", carryover=["c1"])
    # article numbers removed, duplicates (case-insensitive) dropped, capped at max_queries (after the
    # deterministic query)
    assert result["queries"][1:] == ["vacaciones anuales disfrute", "calendario vacaciones"]
    wrapped = DecomposeQuery(chat_generator=ScriptedChatGenerator(replies=['{"queries": ["prestación desempleo"]}']),
                             llm_on_follow_up=True)
    assert wrapped.run(query="¿Y el paro?", carryover=["c1"])["queries"][-1] == "prestación desempleo"
    # a first question (llm_on_first_question): the deterministic query stays first, within max_queries
    first = DecomposeQuery(chat_generator=ScriptedChatGenerator(replies=[reply]), max_queries=2,
                           llm_on_first_question=True).run(query=VACATIONS)
    assert first["queries"] == [VACATIONS, "vacaciones anuales disfrute"]


def test_run_invalid_json_uses_the_reply_text_as_one_query():
    llm = ScriptedChatGenerator(replies=["vacaciones anuales retribuidas días"])
    result = DecomposeQuery(chat_generator=llm, llm_on_follow_up=True).run(query="¿Y cuántas me quedan?",
                                                                         carryover=["c1"])
    assert result["queries"][-1] == "vacaciones anuales retribuidas días"
    assert result["fallback"] is False and result["trace"]["path"] == "llm_text"


@pytest.mark.parametrize(
    ("reply", "reason"),
    [('["vacaciones anuales', "malformed_json"), ("[]", "empty_reply"), ("[1, 2]", "empty_reply")],
)
def test_run_unusable_reply_falls_back(reply, reason):
    result = DecomposeQuery(chat_generator=ScriptedChatGenerator(replies=[reply]), llm_on_first_question=True).run(
        query=VACATIONS)
    assert result["fallback"] is True
    assert result["trace"]["fallback_reason"] == reason and result["trace"]["llm_reply"] == reply
    assert any("vacaciones" in q for q in result["queries"])


def test_fallback_without_llm_on_real_questions():
    decomposer = DecomposeQuery()
    vacations = decomposer.run(query=VACATIONS)
    assert vacations["fallback"] is False and vacations["trace"]["path"] == "deterministic"
    # one concept: the question as written, which the dense side embeds (BM25's statutory terms are added by the
    # retrieval chain's TermExpander, for every query)
    assert vacations["queries"] == [VACATIONS]
    assert decomposer.run(query=SICK_LEAVE)["queries"] == [SICK_LEAVE]

    # a comparison: the question first, then one query per compared concept
    dismissals = decomposer.run(query=DISMISSALS)["queries"]
    assert dismissals == [DISMISSALS, "despido objetivo", "despido disciplinario"]
    assert DecomposeQuery(max_queries=2).run(query=DISMISSALS)["queries"] == dismissals[:2]

    # a message asking two questions: the message, then each question on its own
    two = "¿Cuántos días de vacaciones tengo al año? ¿Y me pueden obligar a trabajar los domingos?"
    assert decomposer.run(query=two)["queries"] == [
        two, "cuántos días de vacaciones tengo al año", "y me pueden obligar a trabajar los domingos"]

    # whitespace normalised, nothing else: the question a plain retrieval would search
    assert decomposer.run(query="  ¿Qué dice el  art. 14 de la Constitución?")["queries"] == [
        "¿Qué dice el art. 14 de la Constitución?"
    ]


def test_a_question_about_two_countries_is_searched_once_per_country():
    question = "¿Cuántos días de vacaciones hay en España y en Brasil?"
    assert DecomposeQuery().run(query=question)["queries"] == [
        question, "¿Cuántos días de vacaciones hay en y en Brasil?", "¿Cuántos días de vacaciones hay en España y en ?"]
    # a comparison across countries is compared by country, not split at "y" into "en brasil"
    queries = DecomposeQuery().run(query="compara el despido en España y en Brasil")["queries"]
    assert "en brasil" not in queries and len(queries) == 3


def test_the_number_of_cited_case_law_is_not_searched():
    decomposer = DecomposeQuery()
    assert decomposer.run(query="o que diz a Súmula 331 do TST sobre terceirização?")["queries"] == [
        "o que diz a Súmula do TST sobre terceirização?"
    ]
    assert decomposer.run(query="processo 0001234-56.2023.5.02.0001, o que significa?")["queries"] == [
        "processo , o que significa?"
    ]
    assert decomposer.run(query="o que diz o art. 1º da Lei 605/49?")["queries"] == ["o que diz o art. da Lei ?"]
    # an article's number is the citation fetch's, and searched as written
    assert decomposer.run(query="o que diz o art. 331 da CLT?")["queries"] == ["o que diz o art. 331 da CLT?"]


def test_fallback_when_the_generator_raises_or_is_too_slow():
    down = DecomposeQuery(chat_generator=ScriptedChatGenerator(error="connection refused"),
                          llm_on_first_question=True).run(query=SICK_LEAVE)
    assert down["fallback"] is True and down["trace"]["fallback_reason"] == "llm_error"
    assert down["queries"] == [SICK_LEAVE]

    follow_up = DecomposeQuery(chat_generator=ScriptedChatGenerator(error="connection refused"),
                               llm_on_follow_up=True).run(query="¿Y con la baja médica?", carryover=["c1"])
    assert follow_up["fallback"] is True and follow_up["trace"]["fallback_reason"] == "llm_error"
    assert follow_up["queries"] == ["baja médica incapacidad temporal prestación"]

    slow = DecomposeQuery(chat_generator=ScriptedChatGenerator(replies=['["tarde"]'], delay=2.0), timeout=0.2,
                          llm_on_first_question=True)
    started = time.perf_counter()
    result = slow.run(query=DISMISSALS)
    assert time.perf_counter() - started < 1.5
    assert result["fallback"] is True and len(result["queries"]) == 3  # the question + its two concepts


def test_fallback_follow_up():
    decomposer = DecomposeQuery()
    nothing_new = decomposer.run(query="¿Puedes explicarlo mejor?", carryover=["c1"])
    assert nothing_new["queries"] == [] and nothing_new["trace"]["skip_retrieval"] is True
    (dismissal,) = decomposer.run(query="¿Y en caso de despido?", carryover=["c1"])["queries"]
    assert "despido" in dismissal and "extinción" in dismissal
    # Portuguese follow-ups: a thanks or "explain it better" asks nothing new; a new concept gets the CLT's terms
    for query in ("Pode explicar melhor?", "Valeu, obrigado!", "Entendi. Dá um exemplo?"):
        assert decomposer.run(query=query, carryover=["c1"])["queries"] == [], query
    (notice,) = decomposer.run(query="E se eu for mandado embora?", carryover=["c1"])["queries"]
    assert "dispensa" in notice and "rescisão" in notice


def test_a_conversation_turn_is_searched_as_written_and_read_with_the_question_before_it():
    from haystack.dataclasses import ChatMessage

    decomposer = DecomposeQuery()
    history = [ChatMessage.from_user("¿Cuántos días de vacaciones tengo al año?"),
               ChatMessage.from_assistant("Treinta días naturales (ET, art. 38).")]
    follow_up = "¿y me las pueden pagar en vez de disfrutarlas?"
    read_with_previous = "¿Cuántos días de vacaciones tengo al año? ¿y me las pueden pagar en vez de disfrutarlas?"
    # an OpenAI chat client's history alone: the turn's two readings, for the retriever to fuse, the conversation's
    # first (its best block wins a tie of the two rankings' first ranks)
    result = decomposer.run(query=follow_up, history=history)
    assert result["queries"] == [read_with_previous, follow_up] and result["trace"]["mode"] == "follow_up"
    assert decomposer.run(query="¿Cuánto dura el periodo de prueba?", history=history)["queries"] == [
        "¿Cuántos días de vacaciones tengo al año? ¿Cuánto dura el periodo de prueba?",
        "¿Cuánto dura el periodo de prueba?",
    ]
    # with the previous answer's blocks carried over: read with the question before it, then its keywords
    carried = decomposer.run(query=follow_up, history=history, carryover=["c1"])["queries"]
    assert carried[0] == read_with_previous and len(carried) > 1 and "pagar" in carried[1]
    # a third turn goes on from the last two user questions (the second may itself be a follow-up), no earlier one
    third = [ChatMessage.from_user("¿Qué es un ERTE?"), *history,
             ChatMessage.from_user("¿y si me despiden antes de disfrutarlas?"), ChatMessage.from_assistant("...")]
    both = ("¿Cuántos días de vacaciones tengo al año? ¿y si me despiden antes de disfrutarlas? "
            "¿me las tienen que pagar?")
    assert decomposer.run(query="¿me las tienen que pagar?", history=third, carryover=["c1"])["queries"][0] == both
    # one content word ("pagar") names no matter: read with the questions before it only, in either mode
    assert decomposer.run(query="¿me las tienen que pagar?", history=third)["queries"] == [both]
    assert decomposer.run(query="¿y si me despiden antes de disfrutarlas?", history=third)["queries"][1] == (
        "¿y si me despiden antes de disfrutarlas?")  # two ("despiden", "disfrutarlas"): both readings
    # nothing new: the previous question's matter is searched, with or without the carried-over blocks
    for carryover in (["c1"], None):
        assert decomposer.run(query="¿Puedes explicarlo mejor?", history=history, carryover=carryover)["queries"] == [
            "¿Cuántos días de vacaciones tengo al año? ¿Puedes explicarlo mejor?"]
    # a first question (no earlier user turn) is not a conversation turn
    first = decomposer.run(query=follow_up, history=[ChatMessage.from_assistant("Hola, ¿en qué te ayudo?")])
    assert first["queries"] == [follow_up] and first["trace"]["mode"] == "first_question"
    # carried-over blocks without the conversation: the keywords and their statutory terms
    alone = decomposer.run(query="¿y me las pueden pagar en vez de disfrutarlas?", carryover=["c1"])["queries"]
    assert alone and all("vacaciones" not in q for q in alone)


def test_a_turn_of_one_word_is_read_with_the_question_before_it_only():
    from haystack.dataclasses import ChatMessage

    decomposer = DecomposeQuery()
    history = [ChatMessage.from_user("¿Cuántos días de permiso tengo si nace mi hijo?"),
               ChatMessage.from_assistant("Dieciséis semanas (ET, art. 48).")]
    for carryover in (None, ["c1"]):
        assert decomposer.run(query="¿y si soy el padre?", history=history, carryover=carryover)["queries"] == [
            "¿Cuántos días de permiso tengo si nace mi hijo? ¿y si soy el padre?"]
    portuguese = [ChatMessage.from_user("quanto tempo dura a licença-maternidade?")]
    assert decomposer.run(query="e o pai?", history=portuguese)["queries"] == [
        "quanto tempo dura a licença-maternidade? e o pai?"]
    # a new question names at least two things: both readings, as before
    new = decomposer.run(query="¿y cuánto dura como máximo el periodo de prueba?", history=history)["queries"]
    assert new[1] == "¿y cuánto dura como máximo el periodo de prueba?" and len(new) == 2
    # one word and a country: the country rules (the turn as written, and read with the question before it)
    assert len(decomposer.run(query="¿y la huelga en Brasil?", history=history)["queries"]) == 2


def test_a_turn_naming_only_a_country_asks_the_question_before_it_of_that_country():
    from haystack.dataclasses import ChatMessage

    decomposer = DecomposeQuery()
    history = [ChatMessage.from_user("¿Cuántos días de vacaciones tengo en España?"),
               ChatMessage.from_assistant("Treinta días naturales (ET, art. 38).")]
    # one reading, the question before it without its country; the carried-over Spanish blocks do not answer it
    expected = ["¿Cuántos días de vacaciones tengo en ? ¿y en Brasil?"]
    assert decomposer.run(query="¿y en Brasil?", history=history)["queries"] == expected
    assert decomposer.run(query="¿y en Brasil?", history=history, carryover=["c1"])["queries"] == expected
    portuguese = [ChatMessage.from_user("quantos dias de férias eu tenho?")]
    assert decomposer.run(query="e na Espanha?", history=portuguese)["queries"] == [
        "quantos dias de férias eu tenho? e na Espanha?"]
    # a turn with something new besides the country is searched as any other turn
    new = decomposer.run(query="¿y en Brasil si estoy embarazada?", history=history)["queries"]
    assert new[1] == "¿y en Brasil si estoy embarazada?" and len(new) == 2


def test_follow_up_prompt_and_hints_speak_the_questions_language():
    llm = ScriptedChatGenerator(replies=['["dispensa sem justa causa aviso prévio"]'])
    DecomposeQuery(chat_generator=llm, llm_on_follow_up=True).run(query="E se eu for mandado embora?",
                                                                  carryover=["c1"])
    (messages,) = llm.calls
    assert "brasileña" in messages[0].text and "idioma de la pregunta" in messages[0].text
    assert "Equivalências aplicáveis" in messages[-1].text


def test_run_rejects_an_empty_query():
    with pytest.raises(ValueError, match="query"):
        DecomposeQuery().run(query="  ")


def test_equivalence_table():
    table = load_equivalences()
    for colloquial, legal in PROMPTS_MD_PAIRS.items():
        assert table.table[colloquial] == legal
    assert len(table.table) >= len(PROMPTS_MD_PAIRS) + 30
    for colloquial in ("horas extra", "nómina", "erte", "ere", "excedencia", "reducción de jornada", "autónomo",
                       "periodo de prueba", "acoso", "jubilación anticipada", "invalidez"):
        assert colloquial in table.table
    # longest match first, accent-insensitive
    maternity = ("baja de maternidad", PROMPTS_MD_PAIRS["baja de maternidad"])
    assert table.matches("¿Cuánto dura la baja de maternidad?") == [maternity]
    assert table.matches("me dieron la BAJA MEDICA") == [("baja médica", PROMPTS_MD_PAIRS["baja médica"])]
    assert table.terms("estoy de BAJA MEDICA") == PROMPTS_MD_PAIRS["baja médica"].split()  # "estoy de baja": the same
    assert table.matches("me pagan el sueldo") == [("sueldo", "salario retribución")]
    assert table.matches("parados") == []  # whole words only


def test_run_with_openai_chat_generator_against_a_local_http_server(monkeypatch):
    requests = []
    canned = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": "test-model",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": '```json\n["vacaciones anuales retribuidas días disfrute"]\n```'}}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 12, "total_tokens": 132},
    }

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's naming
            body = self.rfile.read(int(self.headers["Content-Length"]))
            requests.append((self.path, self.headers.get("Authorization"), json.loads(body)))
            payload = json.dumps(canned).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        for var in ("OPENAI_API_KEY", "LEXHAY_LLM"):
            monkeypatch.delenv(var, raising=False)
        monkeypatch.setenv("LEXHAY_LLM_API_KEY", "local-key")
        monkeypatch.setenv("LEXHAY_LLM_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}/v1")
        monkeypatch.setenv("LEXHAY_LLM_MODEL", "test-model")
        llm = default_chat_generator(timeout=10)
        assert isinstance(llm, OpenAIChatGenerator)
        result = DecomposeQuery(chat_generator=llm, llm_on_follow_up=True).run(query="¿Y si no me las dan?",
                                                                             carryover=["c1"])
    finally:
        server.shutdown()
        server.server_close()
    assert result["queries"] == ["vacaciones anuales retribuidas días disfrute"]
    assert result["fallback"] is False and result["trace"]["llm"] == "OpenAIChatGenerator"
    ((path, auth, body),) = requests
    assert path == "/v1/chat/completions" and auth == "Bearer local-key"
    assert body["model"] == "test-model"
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert "response_format" not in body


@pytest.mark.model
def test_run_with_the_real_local_llm():
    if not is_installed("qwen2.5-coder-0.5b"):
        pytest.skip("local LLM qwen2.5-coder-0.5b is not installed: run `make models-llm`")
    decomposer = DecomposeQuery(chat_generator=LocalLlamaChatGenerator(model="qwen2.5-coder-0.5b", timeout=240),
                                llm_on_first_question=True)
    decomposer.warm_up()
    decomposer.warm_up()
    result = decomposer.run(query=DISMISSALS)
    assert result["trace"]["path"] == "llm", result["trace"]  # the grammar makes the reply valid JSON
    queries = result["queries"]
    assert 1 <= len(queries) <= 4
    assert all(isinstance(q, str) and q.strip() for q in queries)


def test_run_disabled_returns_the_question_without_an_llm_call():
    llm = ScriptedChatGenerator(replies=['["paro"]'])
    result = DecomposeQuery(chat_generator=llm, enabled=False).run(query="  ¿Cobro el paro si me despiden? ")
    assert result == {"queries": ["¿Cobro el paro si me despiden?"], "fallback": False,
                      "trace": {"mode": "disabled", "path": "disabled", "queries": ["¿Cobro el paro si me despiden?"]}}
    assert DecomposeQuery(chat_generator=llm).run(query="¿paro?", enabled=False)["queries"] == ["¿paro?"]
    assert llm.calls == []
