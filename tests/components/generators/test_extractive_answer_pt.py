"""ExtractiveAnswer for Portuguese questions over the CLT / CF88: Portuguese wording, Brazilian citations."""

from pathlib import Path

import pytest

from components.converters.statute_converter import StatuteConverter
from components.generators.extractive_answer import EXTRACTIVE_INTRO, EXTRACTIVE_TEXTS_PT, ExtractiveAnswer, citation
from components.preprocessors.article_parser import ArticleParser
from components.validators.answer_meta_parser import AnswerMetaParser

CORPUS = Path(__file__).resolve().parents[3] / "data" / "corpus"


@pytest.fixture(scope="module")
def br():
    laws = StatuteConverter().run(sources=[CORPUS / "CLT.md", CORPUS / "CF88.md"])["documents"]
    return {(d.meta["law_short"], d.meta["article"]): d for d in ArticleParser().run(documents=laws)["documents"]}


def test_portuguese_question_gets_a_portuguese_answer_with_clt_citations(br):
    documents = [br[("CLT", "477")], br[("CLT", "478")]]
    answer = ExtractiveAnswer().run(question="qual o prazo para pagar as verbas rescisórias?", documents=documents)
    text = answer["answer"]
    assert text.startswith(EXTRACTIVE_TEXTS_PT["intro"])
    assert EXTRACTIVE_INTRO not in text and "respuesta extractiva" not in text
    assert EXTRACTIVE_TEXTS_PT["note"] in text
    assert "verbas rescisórias no prazo e na forma estabelecidos neste artigo" in text and "(CLT, art. 477)" in text
    assert AnswerMetaParser().run(replies=answer["replies"], context_documents=documents)["used"][0] == 1


def test_cited_article_quoted_first_and_repealed_note_in_portuguese(br):
    documents = [br[("CF88", "7")], br[("CLT", "17")]]
    answer = ExtractiveAnswer().run(question="o que diz o art. 7º da Constituição sobre férias?", documents=documents)
    quotes = [line for line in answer["answer"].splitlines() if line.startswith("- «")]
    assert quotes[0].endswith("(CF88, art. 7º)") and "férias" in quotes[0]
    assert citation(br[("CLT", "17")], "pt") == "CLT, art. 17; norma revogada"
    assert citation(br[("CLT", "17")]) == "CLT, art. 17; norma derogada"


def test_no_documents_in_portuguese():
    text = ExtractiveAnswer().run(question="fui mandado embora grávida, tenho direito a alguma coisa?", documents=[])
    assert text["answer"].startswith(EXTRACTIVE_TEXTS_PT["not_found"])


def test_language_from_the_blocks_when_the_question_says_nothing(br):
    text = ExtractiveAnswer().run(question="CLT 59-A", documents=[br[("CLT", "59-a")]])["answer"]
    assert text.startswith(EXTRACTIVE_TEXTS_PT["intro"]) and "(CLT, art. 59-A)" in text
