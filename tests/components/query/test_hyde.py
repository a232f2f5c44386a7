import pytest
from haystack.dataclasses import ChatRole

from components.query.hyde import HYDE_SYSTEM_PROMPT, HYDE_SYSTEM_PROMPT_PT, HyDE
from components.generators.llm_backends import LocalLlamaChatGenerator
from tests.scripted_llm import ScriptedChatGenerator

PASSAGE = (
    "El periodo de vacaciones anuales retribuidas, no sustituible por compensación económica, será el pactado en "
    "convenio colectivo o contrato individual. En ningún caso la duración será inferior a treinta días naturales. "
    "El calendario de vacaciones se fijará en cada empresa."
)


def test_init_defaults_and_validation(tmp_path):
    hyde = HyDE()
    assert (hyde.chat_generator, hyde.equivalences_file, hyde.timeout) == (None, None, None)
    with pytest.raises(ValueError, match="timeout"):
        HyDE(timeout=0)
    with pytest.raises(ValueError, match="not found"):
        HyDE(equivalences_file=str(tmp_path / "missing.yaml"))


def test_to_dict_from_dict_round_trip():
    hyde = HyDE(chat_generator=ScriptedChatGenerator(replies=[PASSAGE]), timeout=20.0)
    data = hyde.to_dict()
    assert data == {
        "type": "components.query.hyde.HyDE",
        "init_parameters": {
            "enabled": True,
            "chat_generator": {"type": "tests.scripted_llm.ScriptedChatGenerator",
                               "init_parameters": {"replies": [PASSAGE], "error": None, "delay": 0.0}},
            "equivalences_file": None,
            "timeout": 20.0,
        },
    }
    restored = HyDE.from_dict(data)
    assert isinstance(restored.chat_generator, ScriptedChatGenerator)
    assert restored.to_dict() == data
    local = HyDE(chat_generator=LocalLlamaChatGenerator(model="qwen2.5-coder-0.5b"))
    assert HyDE.from_dict(local.to_dict()).to_dict() == local.to_dict()
    assert HyDE.from_dict(HyDE().to_dict()).chat_generator is None


def test_warm_up_warms_the_nested_generator():
    llm = ScriptedChatGenerator()
    HyDE(chat_generator=llm).warm_up()
    assert llm.warm_ups == 1
    HyDE().warm_up()


def test_run_with_llm_sends_the_prompt_and_cleans_the_passage():
    llm = ScriptedChatGenerator(replies=[f"```\nArtículo 38. {PASSAGE}\n```"])
    result = HyDE(chat_generator=llm).run(query="me han dado la baja médica y tenía vacaciones")
    assert result == {"hypothetical_document": PASSAGE, "fallback": False}
    (messages,) = llm.calls
    assert [m.role for m in messages] == [ChatRole.SYSTEM, ChatRole.USER]
    assert messages[0].text == HYDE_SYSTEM_PROMPT
    assert "Estatuto de los Trabajadores" in messages[0].text and "3 y 5 frases" in messages[0].text
    user = messages[1].text
    assert user.startswith("Pregunta: me han dado la baja médica y tenía vacaciones")
    assert "- baja médica -> incapacidad temporal prestación" in user
    assert "- vacaciones -> vacaciones anuales retribuidas disfrute" in user


def test_a_portuguese_question_gets_a_brazilian_article_to_write():
    passage = "O empregado dispensado sem justa causa durante o aviso prévio terá direito à estabilidade provisória."
    llm = ScriptedChatGenerator(replies=[passage])
    result = HyDE(chat_generator=llm).run(query="fui mandada embora grávida, tenho direito a quê?")
    assert result == {"hypothetical_document": passage, "fallback": False}
    (messages,) = llm.calls
    assert messages[0].text == HYDE_SYSTEM_PROMPT_PT
    assert "CLT" in messages[0].text and "em português" in messages[0].text
    user = messages[1].text
    assert user.startswith("Pergunta: fui mandada embora grávida")
    assert "Equivalências aplicáveis" in user and "- mandado embora -> dispensa sem justa causa" in user
    # without an LLM: the question and the Portuguese table's statutory terms
    fallback = HyDE().run(query="fui mandada embora grávida")["hypothetical_document"]
    assert fallback.startswith("fui mandada embora grávida dispensa sem justa causa") and "gestante" in fallback


@pytest.mark.parametrize(
    "llm",
    [ScriptedChatGenerator(error="connection refused"), ScriptedChatGenerator(replies=["No lo sé."]),
     ScriptedChatGenerator(replies=[PASSAGE], delay=2.0)],
    ids=["raises", "too-short", "too-slow"],
)
def test_run_falls_back_when_the_llm_fails(llm):
    result = HyDE(chat_generator=llm, timeout=0.3).run(query="me han dado la baja médica")
    assert result == {"hypothetical_document": "me han dado la baja médica incapacidad temporal prestación",
                      "fallback": True}


def test_run_without_llm_expands_with_the_equivalences():
    hyde = HyDE()
    assert hyde.run(query="¿Cuántos días de vacaciones tengo?") == {
        "hypothetical_document": "¿Cuántos días de vacaciones tengo? vacaciones anuales retribuidas disfrute",
        "fallback": True,
    }
    # nothing to add: the question itself
    assert hyde.run(query="  ¿Qué es la jornada?  ")["hypothetical_document"] == "¿Qué es la jornada?"
    with pytest.raises(ValueError, match="query"):
        hyde.run(query="")


def test_run_disabled_writes_nothing_and_calls_no_llm():
    llm = ScriptedChatGenerator(replies=[PASSAGE])
    assert HyDE(chat_generator=llm, enabled=False).run(query="¿Me pueden despedir?") == {
        "hypothetical_document": None, "fallback": False}
    assert HyDE(chat_generator=llm).run(query="¿Me pueden despedir?", enabled=False)["hypothetical_document"] is None
    assert llm.calls == []
