import json
from pathlib import Path

import pytest
from haystack.dataclasses import ChatMessage

from components.extractors.citation_detector import CitationDetector
from components.legal.citations import citation_filters, law_key, pinpoint

ET = "BOE-A-2015-11430"
CE = "BOE-A-1978-31229"
LGSS = "BOE-A-2015-11724"
LPRL = "BOE-A-1995-24292"


@pytest.fixture(scope="module")
def detector():
    return CitationDetector()


def _pairs(result):
    return [(c["law_id"], c["article"]) for c in result["citations"]]


def test_init_defaults_and_validation(tmp_path):
    detector = CitationDetector()
    assert detector.laws_file is None and detector.aliases is None
    with pytest.raises(ValueError, match="does not exist"):
        CitationDetector(laws_file=str(tmp_path / "missing.yaml"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("laws: [1, 2]\n", encoding="utf-8")
    with pytest.raises(ValueError, match="must hold a mapping"):
        CitationDetector(laws_file=str(bad))
    with pytest.raises(ValueError, match="aliases"):
        CitationDetector(aliases={"Estatuto": 3})


def test_to_dict(tmp_path):
    data = CitationDetector(aliases={"Lei 8.213": "L8213"}).to_dict()
    assert data == {
        "type": "components.extractors.citation_detector.CitationDetector",
        "init_parameters": {"laws_file": None, "aliases": {"Lei 8.213": "L8213"}},
    }


def test_from_dict():
    data = CitationDetector(aliases={"Lei 8.213": "L8213"}).to_dict()
    restored = CitationDetector.from_dict(data)
    assert restored.to_dict() == data
    assert _pairs(restored.run(query="o que diz a Lei 8.213 sobre o auxílio-doença?")) == [("L8213", None)]


def test_a_question_about_a_norm_as_a_whole_cites_its_first_article(detector):
    # the name and nothing else to search: the norm's object and scope, which its first article states
    for query, law_id in (("ET", ET), ("¿qué es la CLT?", "DEL-5452-1943"),
                          ("Real Decreto 1561/1995", "BOE-A-1995-21346"),
                          ("¿De qué trata la Ley de Prevención de Riesgos Laborales?", "BOE-A-1995-24292"),
                          ("o que a Constituição Federal regula?", "CF88")):
        result = detector.run(query=query)
        assert _pairs(result) == [(law_id, "1")], query
        assert result["citations"][0]["whole_norm"] is True and result["filters"] is not None
    # anything else to search, an article, or a norm the corpus lacks: as before
    assert _pairs(detector.run(query="¿qué dice la CLT sobre férias?")) == [("DEL-5452-1943", None)]
    assert _pairs(detector.run(query="¿qué dice el art. 38 ET?")) == [(ET, "38")]
    assert _pairs(detector.run(query="¿qué es la Lei 8.213?")) == [(None, None)]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("¿Qué dice el art. 38 ET?", [(ET, "38")]),
        ("art.38 ET", [(ET, "38")]),
        ("¿Qué establece el artículo 14 de la Constitución?", [(CE, "14")]),
        ("¿Y el 48.4 del Estatuto de los Trabajadores?", [(ET, "48")]),
        ("arts. 40 y 41 ET", [(ET, "40"), (ET, "41")]),
        ("artículos 40, 41 y 42 del Estatuto", [(ET, "40"), (ET, "41"), (ET, "42")]),
        ("artículos 14 a 16 de la CE", [(CE, "14"), (CE, "15"), (CE, "16")]),
        ("disposición adicional primera de la LGSS", [(LGSS, "da1")]),
        ("disposiciones transitorias primera y segunda del ET", [(ET, "dt1"), (ET, "dt2")]),
        ("art. 37.3.b) ET y art. 14 CE", [(ET, "37"), (CE, "14")]),
        ("artículo 48, apartado 4, del ET", [(ET, "48")]),
        ("art. 38 ET y 14 CE", [(ET, "38"), (CE, "14")]),
        ("artículo 15 de la Ley 31/1995", [(LPRL, "15")]),
        ("artículo 38 y siguientes del Estatuto", [(ET, "38")]),
        ("art. 2 bis ET1995", [("BOE-A-1995-7730", "2 bis")]),
        ("art. 38 et", [(ET, "38")]),
        ("art. 38 del E.T. y art. 14 de la C.E.", [(ET, "38"), (CE, "14")]),  # abbreviations written with dots
        ("art. 174 L.G.S.S.", [(LGSS, "174")]),
        ("¿Cuál es el órgano de gobierno del Poder Judicial según el artículo 122?", [(None, "122")]),
    ],
)
def test_run_spanish_forms(detector, query, expected):
    assert _pairs(detector.run(query=query)) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Art. 5º da CF", [("CF88", "5")]),
        ("O que diz o artigo 7º da Constituição?", [("CF88", "7")]),
        ("art. 7º, XXIX, da Constituição Federal", [("CF88", "7")]),
        ("Art. 5º, caput, da CF/88", [("CF88", "5")]),
        ("art. 5º-A da CF", [("CF88", "5-a")]),
        ("artigos 5º a 7º da Constituição", [("CF88", "5"), ("CF88", "6"), ("CF88", "7")]),
        ("art 7 inc XVII CF/88", [("CF88", "7")]),  # "inc" without its dot
        ("art 7 xvii cf", [("CF88", "7")]),  # the inciso without its comma, all in lower case
        ("art 7 XVII CF", [("CF88", "7")]),
        ("art. 482 da C.L.T.", [("DEL-5452-1943", "482")]),
    ],
)
def test_run_portuguese_forms(detector, query, expected):
    assert _pairs(detector.run(query=query)) == expected


CLT = "DEL-5452-1943"
PT_FIXTURES = Path(__file__).parent / "fixtures" / "citations_pt.jsonl"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("o que diz o art. 477 da CLT?", [(CLT, "477")]),
        ("§ 8º do art. 477 da CLT", [(CLT, "477")]),
        ("§ 8º do art. 477", [(None, "477")]),
        ("CLT 59-A", [(CLT, "59-a")]),
        ("CLT, art. 477 e 478", [(CLT, "477"), (CLT, "478")]),
        ("o art. 7o da Constituição Federal", [("CF88", "7")]),
        ("Consolidação das Leis do Trabalho, art. 58", [(CLT, "58")]),
        ("art. 10, II, b, do ADCT", [("CF88", "adct-10")]),
        # the transitional act named before the article, or right after it without "do"
        ("ADCT, art. 10, II, b", [("CF88", "adct-10")]),
        ("ADCT art. 8", [("CF88", "adct-8")]),
        ("art. 10 ADCT", [("CF88", "adct-10")]),
        ("ADCT, arts. 8 e 10", [("CF88", "adct-8"), ("CF88", "adct-10")]),
        ("art. 5º da CF e ADCT art. 10", [("CF88", "5"), ("CF88", "adct-10")]),
        ("a reforma da CLT 2017", [(CLT, None)]),  # a year after the law is not an article
        ("ET 38", [(ET, "38")]),
        ("la CE 1978", [(CE, None)]),
    ],
)
def test_run_brazilian_labour_forms(detector, query, expected):
    assert _pairs(detector.run(query=query)) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # each country's norms named in the other language: not the asker's own constitution
        ("o que a Constituição espanhola diz sobre greve?", [(CE, None)]),
        ("art. 28 da Constituição da Espanha", [(CE, "28")]),
        ("o que diz o Estatuto dos Trabalhadores sobre férias?", [(ET, None)]),
        ("art. 9 de la Constitución Federal de Brasil", [("CF88", "9")]),
        ("a Constituição brasileira, art. 7º", [("CF88", "7")]),
        ("Consolidación de las Leyes del Trabajo, art. 130", [(CLT, "130")]),
    ],
)
def test_run_a_norm_named_in_the_other_language(detector, query, expected):
    assert _pairs(detector.run(query=query)) == expected


def test_run_portuguese_citation_set_cites_the_expected_article_first(detector):
    cases = [json.loads(line) for line in PT_FIXTURES.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(cases) >= 20
    for case in cases:
        citations = detector.run(query=case["question"])["citations"]
        assert citations, case["question"]
        assert (citations[0]["law_id"], citations[0]["article"]) == (case["law_id"], case["article"]), case


def test_run_case_law(detector):
    query = "A Súmula 331 do TST e a Súmula Vinculante 13 do STF; processo 0001234-56.2023.5.02.0001"
    result = detector.run(query=query)
    assert [(c["kind"], c["number"], c["court"]) for c in result["case_law"]] == [
        ("sumula", "331", "TST"),
        ("sumula_vinculante", "13", "STF"),
        ("processo", "0001234-56.2023.5.02.0001", "TRT-2"),
    ]
    assert result["case_law"][0]["text"] == "Súmula 331 do TST"
    assert result["citations"] == [] and result["filters"] is None  # no statute article to fetch
    # the answer says that none of it is in the corpus
    assert result["unknown_norms"] == [
        "Súmula 331 do TST", "Súmula Vinculante 13 do STF", "0001234-56.2023.5.02.0001"]
    spanish = detector.run(query="¿qué dice la STS 1234/2020 del art. 18 del Código Civil?")
    assert spanish["unknown_norms"] == ["Código Civil", "STS 1234/2020"]
    assert detector.run(query="OJ 394 da SDI-1")["case_law"][0]["court"] == "SBDI-1"
    assert detector.run(query="processo 0001234-56.2023.5.00.0000")["case_law"][0]["court"] == "TST"


def test_run_law_only_citations(detector):
    query = "O que diz a Lei 8.213 sobre o auxílio-doença?"
    result = detector.run(query=query)
    assert result["has_citations"] is True
    start = query.index("Lei")
    assert result["citations"] == [
        {"law_id": None, "law": "Lei 8.213", "article": None, "text": "Lei 8.213", "span": [start, start + 9]}
    ]
    assert result["filters"] is None  # a whole law is not a direct fetch
    law_only = detector.run(query="¿Qué dice el Estatuto de los Trabajadores sobre las vacaciones?")
    assert _pairs(law_only) == [(ET, None)]
    assert _pairs(detector.run(query="¿Qué jornadas especiales regula el Real Decreto 1561/1995?")) == [
        ("BOE-A-1995-21346", None)]
    # a norm named as people type it, lowercase and without its accent
    assert _pairs(detector.run(query="es verdad que la constitucion dice que el sueldo tiene que dar para vivir?")) == [
        (CE, None)
    ]
    # a law cited with an article is not repeated as a law-only citation
    assert _pairs(detector.run(query="El ET regula en su art. 38 ET las vacaciones")) == [(ET, "38")]


@pytest.mark.parametrize(
    "query",
    [
        "¿Qué regulará el estatuto e incompatibilidades de los miembros del Gobierno?",  # lowercase common noun
        "la Constitución Federal de México",  # recognised but ambiguous -> no law
        "la constitución de una sociedad limitada",
        "la constitucion y funcionamiento del comite intercentros",
        "el 10 de mayo de 2020 me despidieron",  # a bare number needs a law after it
        "Cf. la doctrina del Supremo",
        "según la ley 30 días de vacaciones",  # "ley 30" has no year: not a Spanish norm number
        "",
    ],
)
def test_run_no_false_positives(detector, query):
    result = detector.run(query=query)
    assert result == {"citations": [], "filters": None, "has_citations": False, "case_law": [], "named_laws": [],
                      "unknown_norms": []}


def test_run_a_held_constitution_named_with_its_own_year_is_that_constitution(detector):
    for query, law in [("artículo 14 de la Constitución de 1978", "CE"), ("art. 5º da Constituição de 1988", "CF88"),
                       ("la CE 1978", "CE"), ("a reforma da CLT 2017", "CLT")]:  # a consolidated law keeps its name
        result = detector.run(query=query)
        assert [c["law"] for c in result["citations"]] == [law] and result["unknown_norms"] == []


@pytest.mark.parametrize(
    ("query", "unknown"),
    [
        ("¿qué dice el artículo 234 del Código Penal?", ["Código Penal"]),
        ("art. 18 do CDC: posso trocar?", ["Código de Defesa do Consumidor"]),
        ("¿qué dice el art. 5 de la Ley 30/1992?", ["Ley 30/1992"]),
        ("o que diz o Código de Defesa do Consumidor sobre produto com defeito?", ["Código de Defesa do Consumidor"]),
        ("el Estatuto de Autonomía de Cataluña", ["Estatuto de Autonomía"]),
        # another year than the held constitution's is another constitution
        ("artículo 14 de la Constitución de 1812", ["Constitución de 1812"]),
        ("art. 5º da Constituição de 1967", ["Constituição de 1967"]),
    ],
)
def test_run_an_article_of_a_norm_the_corpus_lacks_is_fetched_by_that_norm_only(detector, query, unknown):
    result = detector.run(query=query)
    assert result["unknown_norms"] == unknown and result["named_laws"] == []
    assert all(c["law_id"] is None and c["law"] == unknown[0] for c in result["citations"])
    # never the same-numbered articles of other norms: only that norm's, if a caller indexed it (its `law_key`)
    conditions = (result["filters"] or {}).get("conditions", [])
    assert all(c["conditions"][0] == {"field": "meta.law_key", "operator": "==", "value": law_key(unknown[0])}
               for c in conditions)
    assert bool(conditions) == any(c["article"] for c in result["citations"])


def test_run_keeps_fetching_the_held_norms_cited_beside_a_norm_the_corpus_lacks(detector):
    result = detector.run(query="art. 477 da CLT e art. 18 do CDC")
    assert result["unknown_norms"] == ["Código de Defesa do Consumidor"]
    assert result["named_laws"] == ["DEL-5452-1943"]
    assert result["filters"] == {"operator": "OR", "conditions": [{"operator": "AND", "conditions": [
        {"field": "meta.law_id", "operator": "==", "value": "DEL-5452-1943"},
        {"field": "meta.article", "operator": "==", "value": "477"}]}, {"operator": "AND", "conditions": [
        {"field": "meta.law_key", "operator": "==", "value": "codigo de defesa do consumidor"},
        {"field": "meta.article", "operator": "==", "value": "18"}]}]}
    # a bare article still reads every norm held; a table that holds the norm resolves it
    assert detector.run(query="¿qué dice el art. 38?")["filters"] == {
        "operator": "OR", "conditions": [{"field": "meta.article", "operator": "==", "value": "38"}]}
    own = CitationDetector(aliases={"Código Penal": "BOE-A-1995-25444"})
    cited = own.run(query="¿qué dice el artículo 234 del Código Penal?")
    assert cited["unknown_norms"] == [] and cited["citations"][0]["law_id"] == "BOE-A-1995-25444"


def test_run_citation_fields_and_filters(detector):
    query = "¿Qué dicen los arts. 40 y 41 ET? ¿Y el artículo 122?"  # another sentence: not read as the ET's
    result = detector.run(query=query)
    first, start = result["citations"][0], query.index("arts.")
    assert first == {
        "law_id": ET, "law": "ET", "article": "40", "text": "arts. 40 y 41 ET", "span": [start, start + 16]
    }
    assert result["filters"] == {
        "operator": "OR",
        "conditions": [
            {"operator": "AND", "conditions": [
                {"field": "meta.law_id", "operator": "==", "value": ET},
                {"field": "meta.article", "operator": "==", "value": "40"},
            ]},
            {"operator": "AND", "conditions": [
                {"field": "meta.law_id", "operator": "==", "value": ET},
                {"field": "meta.article", "operator": "==", "value": "41"},
            ]},
            {"field": "meta.article", "operator": "==", "value": "122"},
        ],
    }
    assert citation_filters([]) is None


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # an article joined to a cited article of a known law is that law's, with or without the word "artículo"
        ("¿Qué dicen los arts. 40 y 41 ET y el artículo 122?", [(ET, "40"), (ET, "41"), (ET, "122")]),
        ("artículo 14 CE en relación con el 9.2", [(CE, "14"), (CE, "9")]),
        ("art. 38 ET, 39 y 40?", [(ET, "38"), (ET, "39"), (ET, "40")]),
        ("art. 477 da CLT e o 478", [("DEL-5452-1943", "477"), ("DEL-5452-1943", "478")]),
        ("art. 59 da CLT c/c o 61", [("DEL-5452-1943", "59"), ("DEL-5452-1943", "61")]),
        # a number that is no article: a quantity, a date, a year, an ordinal before its noun
        ("art. 38 ET y 30 días", [(ET, "38")]),
        ("art. 38 ET y el 1 de mayo", [(ET, "38")]),
        ("art. 38 ET y el 2024", [(ET, "38")]),
        ("art. 7º da CF e o 13º salário", [("CF88", "7")]),
        # an article with its own law keeps it
        ("¿qué dicen el art. 38 ET y el 7 de la CLT?", [(ET, "38"), ("DEL-5452-1943", "7")]),
    ],
)
def test_an_article_after_a_cited_article_s_law_is_that_law_s(detector, query, expected):
    assert _pairs(detector.run(query=query)) == expected


def test_custom_aliases_override_defaults():
    detector = CitationDetector(aliases={"Estatuto": None, "Lei 8.213": "L8213", "Ley de Empleo": "LE2023"})
    assert _pairs(detector.run(query="art. 38 del Estatuto")) == [(None, "38")]
    assert _pairs(detector.run(query="art. 57 da Lei nº 8.213/91")) == [("L8213", "57")]
    assert _pairs(detector.run(query="artículo 3 de la Ley de Empleo")) == [("LE2023", "3")]
    assert _pairs(detector.run(query="art. 38 ET")) == [(ET, "38")]


def _conversation(*questions):
    history = []
    for question in questions:
        history += [ChatMessage.from_user(question), ChatMessage.from_assistant("(LGSS, art. 1)")]
    return history


def test_a_follow_up_cites_the_law_and_article_the_conversation_is_about(detector):
    history = _conversation("¿qué dice el artículo 1 de la Ley 31/1995?")
    (cited,) = detector.run(query="¿y el artículo 15 de la misma ley?", history=history)["citations"]
    assert (cited["law_id"], cited["article"], cited["from_history"]) == ("BOE-A-1995-24292", "15", True)
    (bare,) = detector.run(query="¿y el artículo 2?", history=history)["citations"]
    assert (bare["law_id"], bare["article"]) == ("BOE-A-1995-24292", "2")
    # a law named now wins; a norm the corpus lacks stays unknown; the assistant's words are not the question's
    (named,) = detector.run(query="¿y el artículo 14 de la Constitución?", history=history)["citations"]
    assert (named["law_id"], named["article"], "from_history" in named) == ("BOE-A-1978-31229", "14", False)
    assert detector.run(query="¿y el art. 5 de la Ley 30/1992?", history=history)["unknown_norms"] == ["Ley 30/1992"]
    assert detector.run(query="¿y el artículo 2?", history=_conversation("¿cuántas vacaciones tengo?"))[
        "citations"][0]["law_id"] is None
    # without a conversation, as before: no law
    assert detector.run(query="¿y el artículo 15 de la misma ley?")["citations"][0]["law_id"] is None


def test_an_article_number_said_in_words_is_cited_and_fetched_as_in_digits(detector):
    spoken = detector.run(query="¿qué dice el artículo cuarenta y ocho del Estatuto de los Trabajadores?")
    assert _pairs(spoken) == [(ET, "48")]
    assert spoken["filters"] == detector.run(query="¿qué dice el artículo 48 del Estatuto de los Trabajadores?")[
        "filters"]
    assert _pairs(detector.run(query="o que diz o artigo quatrocentos e setenta e sete da CLT?")) == [
        ("DEL-5452-1943", "477")]
    history = _conversation("¿qué dice el artículo catorce de la Constitución?")
    (cited,) = detector.run(query="¿y el artículo quince?", history=history)["citations"]
    assert (cited["law_id"], cited["article"]) == (CE, "15")


def test_the_next_or_previous_article_is_of_the_article_the_conversation_is_about(detector):
    history = _conversation("¿qué dice el artículo 38 del ET?")
    (cited,) = detector.run(query="¿y el siguiente?", history=history)["citations"]
    assert (cited["law_id"], cited["article"], cited["text"], cited["from_history"]) == (ET, "39", "siguiente", True)
    # step after step: each turn reads the one before it
    history = _conversation("¿qué dice el artículo 38 del ET?", "¿y el siguiente?", "¿y el siguiente?")
    assert _pairs(detector.run(query="¿y el artículo anterior?", history=history)) == [(ET, "39")]
    assert _pairs(detector.run(query="e o próximo artigo?", history=_conversation("o que diz o art. 7º da CF?"))) == [
        ("CF88", "8")]
    # no article in the conversation, or none before the first: nothing to cite
    assert detector.run(query="¿y el siguiente?", history=_conversation("¿cuántas vacaciones tengo?"))[
        "citations"] == []
    assert detector.run(query="¿y el anterior?", history=_conversation("art. 1 de la Constitución"))["citations"] == []
    assert detector.run(query="¿y el siguiente?")["citations"] == []


def test_a_follow_up_naming_a_subdivision_means_the_article_the_conversation_is_about(detector):
    history = _conversation("o que diz o art. 477 da CLT?", "e as verbas rescisórias?")
    result = detector.run(query="e o parágrafo 8º?", history=history)
    (cited,) = result["citations"]
    assert (cited["law_id"], cited["article"], cited["units"], cited["text"]) == (
        "DEL-5452-1943", "477", [("paragrafo", "8")], "parágrafo 8º")
    assert result["filters"] == {"operator": "OR", "conditions": [{"operator": "AND", "conditions": [
        {"field": "meta.law_id", "operator": "==", "value": "DEL-5452-1943"},
        {"field": "meta.article", "operator": "==", "value": "477"}]}]}
    assert detector.run(query="e o parágrafo 8º?")["citations"] == []  # no conversation: no article


def test_a_number_right_after_a_subdivision_follow_up_is_the_next_subdivision(detector):
    # "¿y el 5?" after "¿y el apartado 4?" of ET art. 48: apartado 5 of art. 48, not ET art. 5
    history = _conversation("¿qué dice el artículo 48 del ET?", "¿y el apartado 4?")
    (cited,) = detector.run(query="¿y el 5?", history=history)["citations"]
    assert (cited["law_id"], cited["article"], cited["units"], cited["text"]) == (ET, "48", [("apartado", "5")], "5")
    (paragraph,) = detector.run(query="e o 2?", history=_conversation("o que diz o art. 477 da CLT?", "e o § 1º?"))[
        "citations"]
    assert (paragraph["article"], paragraph["units"]) == ("477", [("paragrafo", "2")])
    # after a question naming the article itself, a number is an article; after an alínea, too
    assert detector.run(query="¿y el 5?", history=_conversation("¿qué dice el artículo 48 del ET?"))["citations"][0][
        "article"] == "5"
    after_letter = _conversation("o que diz o art. 482 da CLT?", "e a alínea e?")
    assert detector.run(query="e o 483?", history=after_letter)["citations"][0]["article"] == "483"



def test_a_letter_alone_after_a_letter_is_the_same_article_s_letter(detector):
    def read(*turns):
        *before, last = turns
        return [(c["law_id"], c["article"], c.get("units") or pinpoint(last, c["span"]))
                for c in detector.run(query=last, history=_conversation(*before))["citations"]]

    # "¿y la c?" after "ET art 49.1 b": letter c of the same apartado, then letters on from there
    assert read("ET art 49.1 b", "¿y la c?") == [(ET, "49", [("apartado", "1"), ("letra", "c")])]
    assert read("ET art 49.1 b", "¿y la c?", "¿y la d?") == [(ET, "49", [("apartado", "1"), ("letra", "d")])]
    assert read("art. 482 da CLT", "e a alínea e?", "e a f?") == [("DEL-5452-1943", "482", [("letra", "f")])]
    # a letter named before a number alone: that article of the conversation's law, and its letters after it
    assert read("ET art 49.1 b", "¿y la letra d del 52?") == [(ET, "52", [("letra", "d")])]
    assert read("ET art 49.1 b", "¿y la letra d del 52?", "¿y la c?") == [(ET, "52", [("letra", "c")])]
    # a subdivision after an article named by its number alone is that article's ("¿y el 48?", not ET 38)
    assert read("art. 38 ET", "¿y el 48?", "¿y el apartado 4?") == [(ET, "48", [("apartado", "4")])]
    # after an article named with no letter, "¿y la c?" names no letter
    assert read("¿qué dice el artículo 14 de la Constitución?", "¿y la c?")[0][2] in (None, [])


@pytest.mark.parametrize(("first", "follow_up", "law_id", "article"), [
    ("¿qué dice el artículo 40 del ET?", "¿y el 41?", ET, "41"),
    ("¿qué dice el artículo 40 del ET?", "¿Y qué dice el 20 bis?", ET, "20 bis"),
    ("o que diz o art. 482 da CLT?", "e o 483?", "DEL-5452-1943", "483"),
    ("o que diz o art. 59 da CLT?", "E o 59-A?", "DEL-5452-1943", "59-a"),
])
def test_a_follow_up_naming_an_article_by_its_number_alone_means_the_conversations_law(
    detector, first, follow_up, law_id, article
):
    (cited,) = detector.run(query=follow_up, history=_conversation(first))["citations"]
    assert (cited["law_id"], cited["article"], cited["from_history"]) == (law_id, article, True)
    assert follow_up[cited["span"][0]:cited["span"][1]] == cited["text"]


def test_a_number_is_an_article_only_as_the_whole_follow_up(detector):
    history = _conversation("¿qué dice el artículo 40 del ET?")
    # a subdivision written after the number stays in the citation's text, for the answer to quote it
    (cited,) = detector.run(query="¿y el 38.2?", history=history)["citations"]
    assert (cited["article"], cited["text"]) == ("38", "38.2")
    for question in ("¿y el 2024?", "¿y si trabajo el 41% de la jornada?", "tengo 41 años, ¿y el paro?"):
        assert detector.run(query=question, history=history)["citations"] == []
    assert detector.run(query="¿y el 41?")["citations"] == []  # no conversation: no law, no article


def test_an_article_cited_with_no_law_carries_what_tells_its_law():
    detector = CitationDetector()
    lawless = detector.run(query="o que diz o artigo 7º, inciso XVII?")["citations"][0]
    assert lawless["law_id"] is None and lawless["article"] == "7"
    assert lawless["jurisdiction"] == {"language": "pt", "source": "language"}
    assert lawless["units"] == [("inciso", "XVII")]
    spanish = detector.run(query="¿qué dice el artículo 14 de la Constitución española y el 15?")["citations"]
    assert "jurisdiction" not in spanish[0] and "units" not in spanish[0]  # its law is named
    # a list names no one subdivision; a question in no telling language has no jurisdiction
    listed = detector.run(query="¿qué dicen los artículos 38.1 y 38.3?")["citations"]
    assert all("units" not in c for c in listed)
    assert "jurisdiction" not in detector.run(query="art. 477")["citations"][0]


def test_a_turn_that_asks_nothing_new_cites_the_articles_the_conversation_is_about(detector):
    from haystack.dataclasses import ChatMessage

    history = [ChatMessage.from_user("¿qué dice el artículo 38 del ET?"), ChatMessage.from_assistant("(ET, art. 38)"),
               ChatMessage.from_user("¿y el 39?"), ChatMessage.from_assistant("(ET, art. 39)")]
    for turn in ("resúmelo", "¿me lo explicas mejor?", "ok, gracias"):
        (cited,) = detector.run(query=turn, history=history)["citations"]
        assert (cited["law"], cited["article"], cited["from_history"]) == ("ET", "39", True)  # "¿y el 39?" as read
    paragraph = [ChatMessage.from_user("o que diz o art. 477 da CLT?"), ChatMessage.from_user("e o parágrafo 8º?")]
    (cited,) = detector.run(query="explica melhor", history=paragraph)["citations"]
    assert (cited["article"], cited["units"]) == ("477", [("paragrafo", "8")])
    # a turn with words of its own, or no conversation citing any article: nothing carried
    assert detector.run(query="¿y si me despiden?", history=history)["citations"] == []
    assert detector.run(query="resúmelo", history=_conversation("¿cuántas vacaciones tengo?"))["citations"] == []
    assert detector.run(query="resúmelo")["citations"] == []


@pytest.mark.parametrize(
    ("query", "whole"),
    [
        ("transcribe el artículo 38 del ET", True),
        ("el artículo 48 del ET completo", True),  # "completo" right after the citation
        ("quero o art. 7º da CF inteiro", True),
        ("¿qué dice el artículo 48 del ET?", False),
        ("¿el artículo 48 del ET regula el permiso completo?", False),  # "completo" said of something else
    ],
)
def test_run_marks_the_citations_whose_whole_wording_is_asked(detector, query, whole):
    citations = detector.run(query=query)["citations"]
    assert citations and all(c.get("article") for c in citations)
    assert [bool(c.get("whole_text")) for c in citations] == [whole] * len(citations)
