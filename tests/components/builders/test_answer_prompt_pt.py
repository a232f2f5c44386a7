"""AnswerPromptBuilder in Portuguese for Portuguese questions (Brazilian law), Spanish otherwise."""

from haystack import Document

from components.builders.answer_prompt import (
    ANSWER_FORMAT_INSTRUCTIONS,
    ANSWER_FORMAT_INSTRUCTIONS_PT,
    ANSWER_SYSTEM_PROMPT,
    ANSWER_SYSTEM_PROMPT_PT,
    AnswerPromptBuilder,
)
from components.legal.answer_format import answer_language

CLT_477 = Document(
    content="Art. 477.\n\nNa extinção do contrato de trabalho, o empregador deverá ... no prazo de dez dias.",
    meta={"law_id": "DEL-5452-1943", "law_short": "CLT", "article": "477", "article_label": "Art. 477",
          "heading_path": ["TÍTULO IV: DO CONTRATO INDIVIDUAL DO TRABALHO"], "lang": "pt", "status": "in_force"},
)
ET_38 = Document(
    content="Artículo 38. Vacaciones anuales.\n\n1. El periodo de vacaciones anuales retribuidas ...",
    meta={"law_id": "BOE-A-2015-11430", "law_short": "ET", "article": "38", "article_label": "Artículo 38",
          "lang": "es", "status": "in_force"},
)


def test_portuguese_question_gets_the_portuguese_prompt():
    prompt = AnswerPromptBuilder().run(question="sai da empresa e não me pagaram a rescisão, e agora?",
                                       documents=[CLT_477])["prompt"]
    assert prompt[0].text == ANSWER_SYSTEM_PROMPT_PT and "Direito do Trabalho brasileiro" in prompt[0].text
    assert prompt[1].text.startswith(ANSWER_FORMAT_INSTRUCTIONS_PT) and "(CLT, art. 477)" in prompt[1].text
    assert "USED|nenhum" in ANSWER_FORMAT_INSTRUCTIONS_PT  # a "none" word the META parser accepts
    assert "[1] CLT" in prompt[-1].text


def test_spanish_question_keeps_the_spanish_prompt_even_over_brazilian_blocks():
    prompt = AnswerPromptBuilder().run(question="¿Cuántos días de vacaciones tengo?", documents=[CLT_477, ET_38])
    assert prompt["prompt"][0].text == ANSWER_SYSTEM_PROMPT
    assert prompt["prompt"][1].text.startswith(ANSWER_FORMAT_INSTRUCTIONS)


def test_language_from_the_blocks_when_the_question_says_nothing_and_custom_prompt_wins():
    assert answer_language("CLT 59-A", [CLT_477]) == "pt"
    assert answer_language("art. 38 ET", [ET_38]) == "es"
    assert answer_language("art. 38", []) == "es"
    # the best-ranked block, not the language most blocks are in: the cited article, the acronym's law
    assert answer_language("art. 38 ET", [ET_38, CLT_477, CLT_477]) == "es"
    assert answer_language("FGTS", [CLT_477, ET_38, ET_38]) == "pt"
    custom = AnswerPromptBuilder(system_prompt="Sistema propio").run(question="CLT 477", documents=[CLT_477])
    assert custom["prompt"][0].text == "Sistema propio"
    assert custom["prompt"][1].text.startswith(ANSWER_FORMAT_INSTRUCTIONS_PT)


def test_the_context_speaks_the_prompts_language():
    pt = AnswerPromptBuilder().run(question="Qual o prazo para pagar a rescisão?", documents=[CLT_477])["prompt"][-1]
    assert "Fragmentos de legislação recuperados para esta consulta" in pt.text and "Resumen" not in pt.text
    assert "Pergunta:" in pt.text and "normativa" not in pt.text
    empty = AnswerPromptBuilder().run(question="Qual o prazo para pagar a rescisão?", documents=[])["prompt"][-1]
    assert "Nenhum fragmento de legislação foi recuperado" in empty.text
    es = AnswerPromptBuilder().run(question="¿Cuántos días de vacaciones tengo?", documents=[ET_38])["prompt"][-1]
    assert "Fragmentos de normativa recuperados para esta consulta" in es.text
