import pytest

from components.legal.catalogue import asks_for_catalogue, catalogue_answer


@pytest.mark.parametrize("question", [
    "¿Qué leyes tienes?",
    "¿Qué normas puedo consultar aquí?",
    "Hola, ¿cuáles son las leyes que conoces?",
    "dime qué normativa hay en tu base de datos",
    "lista de leyes",
    "quais leis você conhece?",
    "Oi! Quais normas estão disponíveis?",
    "What laws do you have?",
    "which statutes are available?",
])
def test_a_question_about_the_corpus_alone_asks_for_the_catalogue(question):
    assert asks_for_catalogue(question)


@pytest.mark.parametrize("question", [
    "¿Qué leyes regulan las vacaciones?",  # a question about the law, searched
    "¿Qué leyes hay sobre el despido?",
    "¿Tienes la Ley 31/1995?",  # a named norm: searched, then fetched or said missing
    "¿Qué dice la ley?",  # no word about the engine's holdings
    "¿Cuáles son las fuentes del derecho?",
    "quais leis protegem a gestante?",
    "¿tengo vacaciones?",  # asks about the engine's words but names no norm
    "",
    "leyes " * 20 + "tienes",  # too long to be only that
])
def test_any_other_question_does_not(question):
    assert not asks_for_catalogue(question)


NORMS = [
    {"law_id": "BOE-A-1978-31229", "law_short": "CE", "law_title": "Constitución Española", "country": "es",
     "repealed": False},
    {"law_id": "BOE-A-1995-7730", "law_short": "ET1995", "law_title": "Real Decreto Legislativo 1/1995",
     "country": "es", "repealed": True},
    {"law_id": "CF88", "law_short": "CF88", "law_title": "Constituição da República Federativa do Brasil",
     "country": "br", "repealed": False},
    {"law_id": "acme-reglamento", "law_short": None, "law_title": "Reglamento interno de Acme", "country": None,
     "repealed": False},
]


def test_the_answer_lists_the_norms_by_country_in_the_question_language():
    answer = catalogue_answer(NORMS, "es")
    lines = answer.splitlines()
    assert lines[0] == "Respondo con el texto de estas normas:"
    assert lines[2:5] == [
        "España:", "- CE: Constitución Española", "- ET1995: Real Decreto Legislativo 1/1995 (derogada)"]
    assert lines[6:8] == ["Brasil:", "- CF88: Constituição da República Federativa do Brasil"]
    assert lines[9:11] == ["Otras normas:", "- Reglamento interno de Acme"]  # no short name: its title alone
    assert lines[-1].startswith("Pregunta con tus palabras")
    portuguese = catalogue_answer(NORMS, "pt")
    assert "Espanha:" in portuguese and "(revogada)" in portuguese and "Outras normas:" in portuguese
    assert catalogue_answer([], "pt") == "Não há nenhuma norma indexada que você possa consultar."
    assert catalogue_answer(NORMS[:1], "en").startswith("Respondo con")  # no English texts: Spanish
