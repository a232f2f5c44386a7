import pytest

from components.query.spelling_corrector import SpellingCorrector


@pytest.fixture(scope="module")
def corrector():
    corrector = SpellingCorrector()
    corrector.warm_up()
    return corrector


def test_init_validates_and_round_trips():
    with pytest.raises(ValueError):
        SpellingCorrector(min_gain=0)
    with pytest.raises(ValueError):
        SpellingCorrector(min_zipf=3.0, known_zipf=2.5)
    corrector = SpellingCorrector(enabled=False, known_zipf=3.0, min_gain=2.0)
    data = corrector.to_dict()
    assert data == {"type": "components.query.spelling_corrector.SpellingCorrector",
                    "init_parameters": {"enabled": False, "known_zipf": 3.0, "min_gain": 2.0, "min_zipf": 2.0}}
    restored = SpellingCorrector.from_dict(data)
    assert (restored.enabled, restored.known_zipf, restored.min_gain) == (False, 3.0, 2.0)


@pytest.mark.parametrize("question, expected", [
    ("kuantos dias de bacaciones tengo", "cuantos dias de vacaciones tengo"),
    ("cuanto me toca de indenisacion por despido inprocedente",
     "cuanto me toca de indemnización por despido improcedente"),
    ("Trabaio a noiti, tenho direito a adisional?", "Trabalho a noite, tenho direito a adicional?"),
    ("si me voy de la empresa xq no aguanto, ¿tengo paro?",
     "si me voy de la empresa porque no aguanto, ¿tengo paro?"),
])
def test_words_misspelled_as_they_sound_are_corrected(corrector, question, expected):
    result = corrector.run(query=question)
    assert result["query"] == expected and result["dense_query"] == expected
    assert result["corrections"] and all(c["from"] in question and c["to"] in expected for c in result["corrections"])


@pytest.mark.parametrize("question", [
    "cesion ilegal de trabajadores",  # "cesión" without its accent, not "sesión"
    "sou celetista e meu patrão não paga o FGTS",  # a rare word with no sound-alike; an acronym
    "¿Qué dice el art. 38 ET?",
    "LGSS art 205 y RD 295/2009",
    "¿Cuántos días de vacaciones tengo?",
])
def test_known_words_acronyms_and_questions_of_no_telling_language_are_left(corrector, question):
    assert corrector.run(query=question) == {"query": question, "dense_query": question, "corrections": []}


def test_a_question_of_no_telling_language_gets_only_the_shorthand_both_read_alike(corrector):
    # Spanish or Portuguese? ("despedio": neither's word) a word of one would change how the rest reads
    result = corrector.run(query="me an despedio sin abisar q ago")
    assert result["query"] == "me an despedio sin abisar que ago"
    assert result["corrections"] == [{"from": "q", "to": "que"}]
    assert corrector.run(query="tmb")["query"] == "tmb"  # "también" or "também": left as written


@pytest.mark.parametrize("question, expected", [
    ("qnts dias de ferias eu tenho", "quantos dias de ferias eu tenho"),
    ("posso faltar qdo meu filho fica doente?", "posso faltar quando meu filho fica doente?"),
    ("a firma nao assinou minha carteira ate hj", "a firma nao assinou minha carteira ate hoje"),
    ("stoy embarazada y me quieren echar", "estoy embarazada y me quieren echar"),
])
def test_shorthand_of_one_language_is_read_in_that_language(corrector, question, expected):
    assert corrector.run(query=question)["query"] == expected


@pytest.mark.parametrize("question", [
    "hj",  # Portuguese shorthand in a text of no telling language
    "o que diz o art. 7º, X da CF?",  # an inciso, not "por"
    "¿qué dice el artículo 54.2 d del ET?",  # a letter, not "de"
    "o código q1 da tabela",  # beside a digit: part of a code
])
def test_letters_of_a_citation_and_codes_are_not_shorthand(corrector, question):
    assert corrector.run(query=question)["query"] == question


def test_dense_text_is_handed_on_and_a_disabled_corrector_changes_nothing(corrector):
    hypothetical = "El trabajador tendrá derecho a vacaciones retribuidas."
    result = corrector.run(query="kuantos dias de bacaciones tengo", dense_text=hypothetical)
    assert result["query"] == "cuantos dias de vacaciones tengo" and result["dense_query"] == hypothetical
    off = SpellingCorrector(enabled=False).run(query="kuantos dias de bacaciones tengo")
    assert off["query"] == "kuantos dias de bacaciones tengo" and off["corrections"] == []
    with pytest.raises(ValueError, match="query"):
        corrector.run(query=None)
