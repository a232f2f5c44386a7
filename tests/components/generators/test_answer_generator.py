import pytest
from haystack import Document
from haystack.dataclasses import ChatMessage

from components.generators.answer_generator import (
    FALLBACK_FULL_TEXT,
    FALLBACK_NO_LLM,
    FALLBACK_NO_REPLY,
    FALLBACK_UNCITED,
    AnswerGenerator,
)
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
                                 ScriptedChatGenerator(replies=["   "]),
                                 # a small model's reply: the META block first, then an echo of its instructions
                                 ScriptedChatGenerator(replies=["===META===\nUSED|1\nDROP|ninguno\nSeguridad: …"])])
def test_run_falls_back_to_the_extractive_answer(llm):
    out = AnswerGenerator(chat_generator=llm).run(prompt=PROMPT, question=QUESTION, documents=CONTEXT)
    assert out["fallback"] is True
    assert out["fallback_reason"] == (FALLBACK_NO_LLM if llm is None else FALLBACK_NO_REPLY)
    text = out["replies"][0].text
    assert "(ET, art. 38)" in text and "treinta días naturales" in text and "===META===" in text


def test_a_question_asking_for_the_cited_article_s_text_is_answered_with_it_without_the_llm():
    llm = ScriptedChatGenerator(replies=[REPLY, REPLY])
    question = "transcribe el artículo 38 del ET"
    cited = [{"law": "ET", "law_id": "BOE-A-2015-11430", "article": "38", "span": (12, 32)}]
    out = AnswerGenerator(chat_generator=llm).run(prompt=PROMPT, question=question, documents=CONTEXT, citations=cited)
    assert llm.calls == [] and (out["fallback"], out["fallback_reason"]) == (True, FALLBACK_FULL_TEXT)
    text = out["replies"][0].text
    assert "1. El periodo de vacaciones anuales" in text and "final del año en que se hayan originado.»" in text
    # the model answers the same question without citations, or a question that does not ask for the text
    without = AnswerGenerator(chat_generator=llm).run(prompt=PROMPT, question=question, documents=CONTEXT)
    assert without["fallback"] is False
    assert AnswerGenerator(chat_generator=llm).run(prompt=PROMPT, question="¿qué dice el artículo 38 del ET?",
                                                   documents=CONTEXT, citations=cited)["fallback"] is False


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


# what a small local model wrote for "fui mandado embora grávida, tenho direito a quê?": a paraphrase of a block
# (with "empregador" for "empregada"), no META block, no [n], no article: nothing of it can be checked
UNCITED = ("O empregador deve, mediante atestado médico, notificar o seu empregador da data do início do afastamento "
           "do emprego.")


@pytest.mark.parametrize("reply", [
    REPLY,  # META block and [1]
    "Tienes 30 días naturales de vacaciones [1].",  # a fragment reference, no META block
    "Tienes 30 días naturales.\nUSED|1\nDROP|ninguno",  # META lines without the delimiter
    "El artículo 38 del Estatuto de los Trabajadores fija treinta días naturales.",  # the context's article
    "Según el artículo 38, son treinta días naturales.",  # the article, no law named
    "Los fragmentos no tratan de tu pregunta.\n===META===\nUSED|\nDROP|1",  # the format, every fragment dropped
])
def test_run_keeps_a_reply_that_cites_its_context(reply):
    out = AnswerGenerator(chat_generator=ScriptedChatGenerator(replies=[reply])).run(
        prompt=PROMPT, question=QUESTION, documents=CONTEXT)
    assert out["fallback"] is False and out["fallback_reason"] is None and out["replies"][0].text == reply


@pytest.mark.parametrize("reply", [
    UNCITED,
    "Tienes treinta días naturales de vacaciones al año.",  # may be right, but grounded in nothing shown
    "Tienes 30 días naturales [4].",  # a fragment the context does not have
    "El artículo 500 del Estatuto de los Trabajadores te da 40 días.",  # an article the context does not hold
    "Tienes 30 días (art. 38 de la LGSS).",  # the article number of the context, of another law
    "Tienes 30 días (art. 38 del Código Penal).",  # of a norm the corpus lacks, as the verifier reads it
])
def test_run_replaces_a_reply_that_cites_nothing_of_its_context(reply):
    out = AnswerGenerator(chat_generator=ScriptedChatGenerator(replies=[reply])).run(
        prompt=PROMPT, question=QUESTION, documents=CONTEXT)
    assert out["fallback"] is True and out["fallback_reason"] == FALLBACK_UNCITED
    text = out["replies"][0].text
    assert reply not in text and "(ET, art. 38)" in text and "treinta días naturales" in text


def test_run_keeps_any_reply_when_there_is_no_context():
    out = AnswerGenerator(chat_generator=ScriptedChatGenerator(replies=[UNCITED])).run(
        prompt=PROMPT, question=QUESTION, documents=[])
    assert out["fallback"] is False and out["replies"][0].text == UNCITED


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
            for piece in ("Tienes ", "30 días [1]."):
                streaming_callback(StreamingChunk(content=piece))
            return {"replies": [ChatMessage.from_assistant("Tienes 30 días [1].")]}

    pieces = []
    out = AnswerGenerator(chat_generator=Streaming()).run(
        prompt=PROMPT, question=QUESTION, documents=CONTEXT, streaming_callback=pieces.append)
    assert [p.content for p in pieces] == ["Tienes ", "30 días [1]."] and out["fallback"] is False
