import pytest
from haystack import Document
from haystack.dataclasses import ChatMessage

from components.generators.answer_generator import AnswerGenerator
from components.generators.extractive_answer import ExtractiveAnswer
from tests.corpus_helpers import ET_2015, markdown_article
from tests.scripted_llm import ScriptedChatGenerator

QUESTION = "¿Cuántos días de vacaciones tengo?"
CONTEXT = [
    Document(id="et38", content=markdown_article(ET_2015, "38"), score=0.9,
             meta={"law_id": "BOE-A-2015-11430", "law_short": "ET", "article": "38", "status": "in_force",
                   "article_title": "Vacaciones anuales.", "level": "parent"}),
]
PROMPT = [ChatMessage.from_system("Responde con citas."), ChatMessage.from_user(QUESTION)]
REPLY = "Tienes 30 días naturales (ET, art. 38) [1].\n===META===\nUSED|1\nDROP|ninguno"


def test_init_and_to_dict_from_dict_round_trip():
    generator = AnswerGenerator(chat_generator=ScriptedChatGenerator(replies=[REPLY]), timeout=30.0,
                                extractive=ExtractiveAnswer(max_articles=2))
    data = generator.to_dict()
    assert data["type"] == "components.generators.answer_generator.AnswerGenerator"
    assert data["init_parameters"]["timeout"] == 30.0
    assert data["init_parameters"]["chat_generator"]["type"] == "tests.scripted_llm.ScriptedChatGenerator"
    restored = AnswerGenerator.from_dict(data)
    assert isinstance(restored.chat_generator, ScriptedChatGenerator) and restored.timeout == 30.0
    assert restored.to_dict() == data
    with pytest.raises(TypeError):
        AnswerGenerator(None)  # keyword-only


def test_run_with_an_llm_returns_its_reply():
    llm = ScriptedChatGenerator(replies=[REPLY])
    out = AnswerGenerator(chat_generator=llm).run(prompt=PROMPT, question=QUESTION, documents=CONTEXT)
    assert out["fallback"] is False and out["replies"][0].text == REPLY
    assert llm.calls == [PROMPT]


@pytest.mark.parametrize("llm", [None, ScriptedChatGenerator(error="connection refused"),
                                 ScriptedChatGenerator(replies=["   "])])
def test_run_falls_back_to_the_extractive_answer(llm):
    out = AnswerGenerator(chat_generator=llm).run(prompt=PROMPT, question=QUESTION, documents=CONTEXT)
    assert out["fallback"] is True
    text = out["replies"][0].text
    assert "(ET, art. 38)" in text and "treinta días naturales" in text and "===META===" in text


def test_run_gives_the_extractive_fallback_the_citations_it_is_given():
    other = Document(id="et14", content=markdown_article(ET_2015, "14"), score=0.5,
                     meta={"law_id": "BOE-A-2015-11430", "law_short": "ET", "article": "14", "status": "in_force",
                           "article_title": "Periodo de prueba.", "level": "parent"})
    question = "¿Qué dice el artículo 14 del Estatuto?"
    cited = [{"law": "ET", "law_id": "BOE-A-2015-11430", "article": "14", "span": (13, 37)}]
    generator = AnswerGenerator(chat_generator=None)
    quotes = [
        [line for line in generator.run(prompt=PROMPT, question=question, documents=[*CONTEXT, other],
                                        citations=given)["replies"][0].text.splitlines() if line.startswith("- «")]
        for given in (cited, [])
    ]
    assert quotes[0][0].endswith("(ET, art. 14)")  # the cited article first
    assert quotes[1][0].endswith("(ET, art. 38)")  # nothing cited: the retrieval's best block first
    notice = generator.run(prompt=PROMPT, question="¿qué pena tiene un hurto?", documents=CONTEXT,
                           out_of_scope=["derecho penal"])["replies"][0].text
    assert notice.startswith("Tu pregunta parece tratar de derecho penal")
    unknown = generator.run(prompt=PROMPT, question="¿y la STS 1234/2020?", documents=CONTEXT,
                            unknown_norms=["STS 1234/2020"])["replies"][0].text
    assert unknown.startswith("No están en el corpus indexado, y lo que sigue no procede de ellas: STS 1234/2020.")


def test_run_timeout_falls_back():
    slow = ScriptedChatGenerator(replies=[REPLY], delay=2.0)
    out = AnswerGenerator(chat_generator=slow, timeout=0.2).run(prompt=PROMPT, question=QUESTION, documents=CONTEXT)
    assert out["fallback"] is True


def test_run_passes_the_streaming_callback_to_a_streaming_generator():
    from haystack import component
    from haystack.dataclasses import StreamingChunk

    @component
    class Streaming:
        @component.output_types(replies=list[ChatMessage])
        def run(self, messages: list[ChatMessage], streaming_callback=None):
            for piece in ("Tienes ", "30 días."):
                streaming_callback(StreamingChunk(content=piece))
            return {"replies": [ChatMessage.from_assistant("Tienes 30 días.")]}

    pieces = []
    out = AnswerGenerator(chat_generator=Streaming()).run(
        prompt=PROMPT, question=QUESTION, documents=CONTEXT, streaming_callback=pieces.append)
    assert [p.content for p in pieces] == ["Tienes ", "30 días."] and out["fallback"] is False
