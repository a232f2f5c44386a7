import pytest

from components.legal.citations import (
    adjacent_article,
    amended_by,
    amending_norms,
    asks_only_case_law,
    still_unknown,
    CitationGrammar,
    cited_articles,
    citation_condition,
    citation_filters,
    law_key,
    not_in_corpus,
    pinpoint,
    subdivisions,
    with_units_before,
)
from tests.linear_time import linear_time

ET = "BOE-A-2015-11430"
CE = "BOE-A-1978-31229"


@pytest.fixture(scope="module")
def grammar():
    return CitationGrammar()


def test_init_validation(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        CitationGrammar(laws_file=str(tmp_path / "missing.yaml"))
    with pytest.raises(ValueError, match="aliases"):
        CitationGrammar(aliases={"Estatuto": 3})


def test_extract_keeps_repeats_and_groups(grammar):
    found = grammar.extract("arts. 40 y 41 ET; art. 40 ET")
    assert [(c["law_id"], c["article"]) for c in found] == [(ET, "40"), (ET, "41"), (ET, "40")]
    assert found[0]["text"] == found[1]["text"] == "arts. 40 y 41 ET"
    assert "scope" not in found[0]


@pytest.mark.parametrize("text", ["art. 49.1.b ET", "art. 49.1.b) ET", "art. 49.1 b) ET", "artículo 49, apartado 1, letra b, ET"])
def test_apartado_and_letter_stay_inside_the_citation(grammar, text):
    # "49.1.b" (letter without a parenthesis) used to end the article at "49" and leave "ET" a law-only citation
    assert [(c["law_id"], c["article"]) for c in grammar.extract(text)] == [(ET, "49")]


@pytest.mark.parametrize("text", ["artículo 149.1.7.ª de la Constitución", "art. 149.1.17ª CE",
                                  "artículo 149, apartado 1, regla 7.ª, de la CE"])
def test_an_ordinal_rule_stays_inside_the_citation(grammar, text):
    # "149.1.7.ª" used to end the article at "149.1.7" and leave the constitution a law-only citation
    assert [(c["law_id"], c["article"]) for c in grammar.extract(text)] == [("BOE-A-1978-31229", "149")]


@pytest.mark.parametrize(("text", "expected"), [
    ('art. 10, II, "b", do ADCT', ("CF88", "adct-10")),
    ("art. 482, “e”, da CLT", ("DEL-5452-1943", "482")),
    ('art. 482, alínea "e", da CLT', ("DEL-5452-1943", "482")),
    ("art. 473, III e IV, da CLT", ("DEL-5452-1943", "473")),
])
def test_a_quoted_letter_or_a_pair_of_incisos_stays_inside_the_citation(grammar, text, expected):
    # the quotes ended the citation before the letter: the article lost its law ("art. 10" was read in the CLT)
    assert [(c["law_id"], c["article"]) for c in grammar.extract(text)] == [expected]


def test_resolve_law_and_article_key(grammar):
    assert grammar.resolve_law("ET") == (ET, "ET")
    assert grammar.resolve_law("del Estatuto de los Trabajadores") == (ET, "ET")
    assert grammar.resolve_law("la Constitución Española") == (CE, "CE")
    assert grammar.resolve_law("RD 1561/1995") == ("BOE-A-1995-21346", "RD 1561/1995")
    assert grammar.resolve_law("Lei 8.213") == (None, "Lei 8.213")
    assert grammar.resolve_law("vacaciones") == (None, None)
    assert grammar.article_key("art. 48.4") == "48"
    assert grammar.article_key("48") == "48"
    assert grammar.article_key("disposición adicional primera") == "da1"
    assert grammar.article_key("5º-A") == "5-a"
    assert grammar.article_key("vacaciones") is None
    assert law_key("Real Decreto 1561/1995") == law_key("RD 1561/1995") == "real decreto 1561/1995"
    assert law_key("Lei nº 8.213/91") == "lei 8213"


def test_reference_scopes(grammar):
    def scopes(text):
        return [(c["law"], c["article"], c["scope"]) for c in grammar.extract_references(text)]

    assert scopes("el artículo 48 de esta ley") == [(None, "48", "self")]
    assert scopes("art. 78 deste Ato das Disposições Constitucionais Transitórias") == [(None, "adct-78", "self")]
    assert scopes("el artículo 60 de dicha ley") == [(None, "60", "anaphora")]
    # the CF88's ADCT cites the 1967 constitution: not an article of the CF88
    assert scopes("art. 23 da Constituição de 1967") == [("Constituição de 1967", "23", "law")]
    assert scopes("artículo 99 del Reglamento General de Recaudación") == [(None, "99", "other")]
    assert scopes("el artículo 14 y el 38 del ET") == [("ET", "14", "law"), ("ET", "38", "law")]
    assert scopes("artículos 18 y 168.1 y 2 de la presente ley") == [(None, "18", "self"), (None, "168", "self")]
    assert scopes("apartado 3 de este artículo.\n4. El trabajador") == []  # no citation across a line break
    assert scopes(
        "artículo 166 del texto refundido de la Ley General de la Seguridad Social, aprobado por el Real Decreto "
        "Legislativo 1/1994"
    ) == [("LGSS1994", "166", "law")]


def test_a_recast_law_s_unnumbered_provisions_may_be_its_approving_decree_s():
    from components.legal.ids import decree_key, numbered_as

    assert [decree_key(key) for key in ("dd", "dd2", "unico", "da", "df", "df1", "38", "da1")] == [
        "rd-dd", "rd-dd2", "rd-unico", "rd-da", "rd-df", None, None, None]
    assert numbered_as("rd-dd", "dd") and numbered_as("dd", "dd") and not numbered_as("dd", "rd-dd")
    assert not numbered_as("rd-df1", "df1")
    # the fetch reads either: the recast law's own provision, else its decree's
    assert citation_condition({"law_id": "BOE-A-2015-11430", "article": "dd"}) == {"operator": "AND", "conditions": [
        {"field": "meta.law_id", "operator": "==", "value": "BOE-A-2015-11430"},
        {"field": "meta.article", "operator": "in", "value": ["dd", "rd-dd"]},
    ]}
    assert citation_condition({"law_id": None, "article": "dd"}) == {
        "field": "meta.article", "operator": "==", "value": "dd"}


def test_citation_condition_and_filters():
    law_article = {"law_id": ET, "article": "38"}
    assert citation_condition(law_article) == {"operator": "AND", "conditions": [
        {"field": "meta.law_id", "operator": "==", "value": ET},
        {"field": "meta.article", "operator": "==", "value": "38"},
    ]}
    assert citation_condition({"law_id": None, "article": "38"}) == {
        "field": "meta.article", "operator": "==", "value": "38"
    }
    assert citation_condition({"law_id": None, "article": None}) is None
    # law-only citations are no direct fetch; duplicates are merged
    assert citation_filters([law_article, law_article, {"law_id": CE, "article": None}]) == {
        "operator": "OR", "conditions": [citation_condition(law_article)]
    }
    assert citation_filters([]) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("es verdad que la constitucion dice que el sueldo tiene que dar para vivir?", [(CE, "constitucion")]),
        ("donde dice la constitucion que tenemos derecho a vacaciones", [(CE, "constitucion")]),
        ("segun la constitucion, tengo derecho a la huelga", [(CE, "constitucion")]),
        ("o que a constituição garante sobre licença?", [("CF88", "constituição")]),
        ("que diz a constituicao", [("CF88", "constituicao")]),
        ("el estatuto dice 30 días", [(ET, "estatuto")]),
        ("o que a clt fala sobre aviso prévio?", [("DEL-5452-1943", "clt")]),
        ("a clt e a constituição", [("DEL-5452-1943", "clt"), ("CF88", "constituição")]),
        ("según la lgss, cobro el paro", [("BOE-A-2015-11724", "lgss")]),
        ("la ce dice", []),  # two-letter abbreviations only as written
        # a common noun with its complement, a coordinated noun, an adjective: not a norm
        ("la constitución de una sociedad limitada", []),
        ("cómo es la constitucion del comite de empresa", []),
        ("la constitucion y funcionamiento del comite", []),
        ("el estatuto juridico del trabajador", []),
        ("o estatuto da empresa diz outra coisa", []),
        ("¿Qué regulará el estatuto e incompatibilidades de los miembros del Gobierno?", []),
    ],
)
def test_colloquial_names_in_questions(grammar, text, expected):
    found = grammar.extract(text, colloquial=True)
    assert [(c["law_id"], c["text"]) for c in found] == expected
    assert all(c["article"] is None for c in found)
    # statute text uses these words as common nouns: without `colloquial` a lowercase one-word name is no citation
    assert grammar.extract(text) == []


def test_colloquial_reading_keeps_the_written_citations(grammar):
    text = "según la Constitución, art. 40 de la constitucion, y el Estatuto"
    assert [(c["law_id"], c["article"]) for c in grammar.extract(text, colloquial=True)] == [
        (CE, None), (CE, "40"), (ET, None)
    ]
    assert grammar.extract(text, colloquial=True) == grammar.extract(text)


def test_a_norm_the_corpus_lacks_keeps_its_name_and_fetches_nothing(grammar):
    def read(text):
        return [(c["law_id"], c["law"], c["article"]) for c in grammar.extract(text, colloquial=True)]

    assert read("art. 18 do CDC") == [(None, "Código de Defesa do Consumidor", "18")]
    assert read("el artículo 234 del Código Penal") == [(None, "Código Penal", "234")]
    assert read("según el EBEP") == [(None, "Estatuto Básico del Empleado Público", None)]
    # by the name people know it by, or its abbreviation after an article
    assert read("a lei maria da penha protege homens?") == [(None, "Lei Maria da Penha", None)]
    assert read("art. 9 da Lei de Greve") == [(None, "Lei de Greve", "9")]
    assert read("o Estatuto do Idoso") == [(None, "Estatuto da Pessoa Idosa", None)]
    assert read("¿qué dice la ley de igualdad?") == [(None, "Ley de Igualdad", None)]
    assert read("art. 1902 CC") == [(None, "Código Civil", "1902")]
    assert read("el artículo 138 del CP") == [(None, "Código Penal", "138")]
    # a norm the corpus holds is read as such, whatever popular name sits near it
    assert read("Ley de Prevención de Riesgos Laborales art. 14") == [("BOE-A-1995-24292", "LPRL", "14")]
    # the longer absent name keeps the held norm's shorter alias from matching inside it
    assert read("el Estatuto del Trabajo Autónomo") == [(None, "Estatuto del Trabajo Autónomo", None)]
    # its article is fetched by the norm's own `law_key` (a caller may have indexed it), never by its number alone
    assert citation_condition({"law_id": None, "law": "Código Penal", "article": "234"}) == {"operator": "AND",
        "conditions": [{"field": "meta.law_key", "operator": "==", "value": "codigo penal"},
                       {"field": "meta.article", "operator": "==", "value": "234"}]}
    assert citation_condition({"law_id": None, "law": "Ley 30/92", "article": "5"})["conditions"][0]["value"] == (
        "ley 30/1992")
    assert citation_condition({"law_id": None, "law": "Ley 30/1992", "article": None}) is None
    assert citation_condition({"law_id": None, "law": None, "article": "38"}) == {
        "field": "meta.article", "operator": "==", "value": "38"}
    # an alias of the deployment (or its laws table) holding the norm wins
    own = CitationGrammar(aliases={"CDC": "BR-CDC-1990"})
    assert [(c["law_id"], c["article"]) for c in own.extract("art. 18 do CDC")] == [("BR-CDC-1990", "18")]


@pytest.mark.parametrize(
    ("text", "units"),
    [
        ("¿qué dice el artículo 38.2 del Estatuto de los Trabajadores?", [("apartado", "2")]),
        ("¿qué dice el apartado 4 del artículo 55 del ET?", [("apartado", "4")]),
        ("art. 49.1.b ET", [("apartado", "1"), ("letra", "b")]),
        ("art. 49.1 b) ET", [("apartado", "1"), ("letra", "b")]),
        ("artículo 49, apartado 1, letra b, ET", [("apartado", "1"), ("letra", "b")]),
        ("letra b) del artículo 49.1 del ET", [("apartado", "1"), ("letra", "b")]),
        ("art. 52.c) ET", [("letra", "c")]),
        # a letter after a space, without a parenthesis, at the end or before the law
        ("ET art 37.3 b", [("apartado", "3"), ("letra", "b")]),
        ("art. 49.1 b del ET", [("apartado", "1"), ("letra", "b")]),
        ("el 52 c del ET", [("letra", "c")]),
        ("art. 482 b CLT", [("letra", "b")]),
        ("art. 37.3.b bis ET", [("apartado", "3"), ("letra", "b bis")]),
        ("letra b bis del apartado 3 del artículo 37 del ET", [("apartado", "3"), ("letra", "b bis")]),
        ("art. 149.1.7.ª CE", [("apartado", "1"), ("regla", "7")]),
        ("¿qué dice el artículo 149.1.7ª de la Constitución?", [("apartado", "1"), ("regla", "7")]),
        ("artículo 149, apartado 1, regla 7.ª, de la CE", [("apartado", "1"), ("regla", "7")]),
        ("art. 477, § 8º, da CLT", [("paragrafo", "8")]),
        ('o que diz o art. 482, alínea "e", da CLT?', [("letra", "e")]),  # a letter in quotes, as lawyers write it
        ("art. 10, II, “b”, do ADCT", [("inciso", "II"), ("letra", "b")]),
        ("art. 473, III e IV, da CLT", []),  # two incisos: no one subdivision
        ("o que diz o § 8º do art. 477 da CLT?", [("paragrafo", "8")]),
        ("o que diz o artigo 7º, inciso XVII, da Constituição?", [("inciso", "XVII")]),
        ("art. 10, II, b, do ADCT", [("inciso", "II"), ("letra", "b")]),
        ("alínea b do inciso II do art. 10 do ADCT", [("inciso", "II"), ("letra", "b")]),
        ("parágrafo único do art. 7º da CF", [("paragrafo", "unico")]),
        ("Art. 5º, caput, da CF", [("caput", "")]),
        ("art. 477 da CLT", []),
        ("CLT 59-A", []),
        # the law named first, no article word: the first number is the article's
        ("CLT 611-B inciso XXX", [("inciso", "XXX")]),
        ("CLT 611-B, XXX", [("inciso", "XXX")]),
        ("CF 7º, XVII", [("inciso", "XVII")]),
        ("ET 38.2", [("apartado", "2")]),
        ("artículo 14 de la Constitución", []),
        # an inciso as people type it: no comma, lower case, after the word "inciso" in lower case
        ("art 7 XVII CF", [("inciso", "XVII")]),
        ("art 7 xvii cf", [("inciso", "XVII")]),
        ("art. 7, xvii, da CF", [("inciso", "XVII")]),
        ("art. 7, inciso xvii, da constituição", [("inciso", "XVII")]),
        ("art. 5 LXVII da CF", [("inciso", "LXVII")]),
        ("inciso lxvii do art. 5º da CF", [("inciso", "LXVII")]),
    ],
)
def test_pinpoint_reads_the_subdivision_a_citation_names(grammar, text, units):
    (found,) = grammar.extract(text, colloquial=True)
    assert pinpoint(text, found["span"]) == units


def test_an_inciso_as_people_type_it_keeps_the_law_that_follows(grammar):
    def read(text):
        return [(c["law_id"], c["article"]) for c in grammar.extract(text, colloquial=True)]

    for text in ("art 7 XVII CF", "art 7 xvii cf", "art. 7, xvii, da CF", "art. 7, inciso xvii, da constituição"):
        assert read(text) == [("CF88", "7")], text
    # not an inciso: a lone lower-case letter, the initial of an abbreviation, a word made of Roman letters
    assert read("art. 7 i da CF") == [(None, "7"), ("CF88", None)]
    assert read("art. 174 L.G.S.S.") == [("BOE-A-2015-11724", "174")]
    assert read("art. 7 civil") == [(None, "7")]


def test_long_runs_of_spaces_commas_and_section_signs_are_read_in_linear_time(grammar):
    # whitespace on both sides of an optional comma, and a run of "§", were read in every possible split
    with linear_time():
        for text in ("art. 7" + " " * 100_000 + "x", "art. 7" + ", " * 50_000, "o que diz o art. 59 da" + " " * 100_000
                     + "CLT"):
            found = grammar.extract(text, colloquial=True)
            assert [c["article"] for c in found] == ["7" if text.startswith("art. 7") else "59"]
            assert pinpoint(text, found[0]["span"]) == []
        for text in ("artículo uno" + " " * 100_000 + "-" + " " * 100_000, "artículo " + "dos y " * 20_000):
            assert [c["article"] for c in grammar.extract(text, colloquial=True)][:1] == ["1" if "uno" in text else "2"]
        assert subdivisions("\u00a7" * 100_000) is None
        assert subdivisions("e o " + "\u00a7" * 1000 + " 2º?") == ([("paragrafo", "2")], [4, 1007])


def test_a_long_list_of_numbers_with_no_law_is_read_in_linear_time(grammar):
    # every "e" / "y" before a number may start a citation ("... y el 39 del ET"): each one read the rest of the
    # list again to find no law after it (an uploaded statute of 80,000 characters took over ten minutes)
    with linear_time():
        for text in ("art. 1, §§ " + "1 e " * 10_000 + "e " + "1 e " * 10_000, "el " + "1 y " * 20_000 + "fin"):
            found = grammar.extract_references(text)
            assert [r["article"] for r in found][:1] == (["1"] if text.startswith("art.") else [])


def test_a_disposition_of_a_texto_refundido_s_approving_decree_is_the_decree_s(grammar):
    def read(text):
        return [(c["law_id"], c["article"]) for c in grammar.extract(text)]

    assert read("disposición derogatoria única del Real Decreto Legislativo 8/2015") == [
        ("BOE-A-2015-11724", "rd-dd")]
    assert read("la disposición final primera del Real Decreto Legislativo 2/2015") == [(ET, "rd-df1")]
    assert read("artículo único del Real Decreto Legislativo 2/2015") == [(ET, "rd-unico")]
    # a real decreto that approves a reglamento known by another name (the RGC)
    assert read("artículo único del Real Decreto 2064/1995") == [("BOE-A-1996-1579", "rd-unico")]
    assert read("artículo 20 del Real Decreto 2064/1995") == [("BOE-A-1996-1579", "20")]
    # the recast law's own dispositions, its articles, and a real decreto that is itself the norm: as before
    assert read("disposición derogatoria única de la LGSS") == [("BOE-A-2015-11724", "dd")]
    assert read("artículo 5 del Real Decreto Legislativo 2/2015") == [(ET, "5")]
    assert read("disposición adicional primera del Real Decreto 1561/1995") == [("BOE-A-1995-21346", "da1")]
    assert read("disposición transitoria séptima del texto refundido de la Ley General de la Seguridad Social, "
                "aprobado por el Real Decreto Legislativo 8/2015") == [("BOE-A-2015-11724", "dt7")]


def test_with_units_before_widens_a_citation_to_the_subdivision_named_first(grammar):
    text = "o que diz o § 1º do art. 59 da CLT?"
    (found,) = grammar.extract(text)
    assert with_units_before(text, found["span"]) == (12, 34)
    assert text[12:34] == "§ 1º do art. 59 da CLT"
    text = "alínea b do inciso II do art. 10 do ADCT"
    (found,) = grammar.extract(text)
    assert with_units_before(text, found["span"])[0] == 0
    text = "art. 59, § 1º, da CLT"  # named after: inside the citation already
    (found,) = grammar.extract(text)
    assert with_units_before(text, found["span"]) == tuple(found["span"])


def test_pinpoint_ignores_subdivisions_of_other_citations(grammar):
    text = "el § 2º do art. 3º e o art. 477 da CLT"
    found = grammar.extract(text)
    assert [pinpoint(text, c["span"]) for c in found] == [[("paragrafo", "2")], []]


def test_spanish_judgments_are_case_law(grammar):
    text = "¿qué dicen la STS 1234/2020 y la sentencia del Tribunal Constitucional 31/2010?"
    found = grammar.extract_case_law(text)
    assert [(c["kind"], c["number"], c["court"], c["text"]) for c in found] == [
        ("sentencia", "1234/2020", "TS", "STS 1234/2020"),
        ("sentencia", "31/2010", "TC", "sentencia del Tribunal Constitucional 31/2010"),
    ]
    assert grammar.extract_case_law("la Ley 3/2012 y el Real Decreto 1234/2020") == []


def test_search_text_leaves_out_the_numbers_of_what_the_corpus_lacks(grammar):
    assert grammar.search_text("Súmula nº 331 do TST e OJ 394 da SBDI-1") == "Súmula nº do TST e OJ da SBDI-1"
    assert grammar.search_text("según la STS 1234/2020, ¿es nulo?") == "según la STS , ¿es nulo?"
    assert grammar.search_text("o que diz o art. 1º da Lei 605/49?") == "o que diz o art. da Lei ?"
    # the corpus's own norms keep their numbers; a text citing nothing is returned as it is
    held = "art. 331 da CLT e art. 2 del RD 1561/1995"
    assert grammar.search_text(held) == held
    assert grammar.search_text("  ¿cuántos  días?") == "  ¿cuántos  días?"


def test_not_in_corpus_lists_unknown_norms_then_case_law(grammar):
    text = "o art. 18 do CDC e a Súmula 331 do TST"
    assert not_in_corpus(grammar.extract(text), grammar.extract_case_law(text)) == [
        "Código de Defesa do Consumidor",
        "Súmula 331 do TST",
    ]
    assert not_in_corpus([], []) == []


def test_subdivisions_named_without_an_article():
    assert subdivisions("e o parágrafo 8º?") == ([("paragrafo", "8")], [4, 16])
    assert subdivisions("¿y el apartado 2?") == ([("apartado", "2")], [6, 16])
    assert subdivisions("e o inciso II, alínea b?") == ([("inciso", "II"), ("letra", "b")], [4, 23])
    assert subdivisions("e as férias vencidas?") is None


def test_pinpoint_of_a_list_names_no_one_subdivision(grammar):
    for text in ("¿qué dicen los artículos 38.1 y 38.3 del ET?", "arts. 168.1 y 2 LGSS"):
        (found,) = grammar.extract(text)
        assert pinpoint(text, found["span"]) == []
    text = "artículo 4.2 del RD 2720/1998"  # the norm's number is no second item
    assert pinpoint(text, grammar.extract(text)[0]["span"]) == [("apartado", "2")]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("CLT, art. 477, §§ 6º e 8º", ("DEL-5452-1943", "477")),
        ("art. 477, §§ 6º, 8º e 9º da CLT", ("DEL-5452-1943", "477")),
        ("art. 477, § 6º e § 8º, da CLT", ("DEL-5452-1943", "477")),
        ("art. 7º, incisos XIII e XIV, da CF", ("CF88", "7")),
        ("artículo 37, apartados 3 y 4, del ET", ("BOE-A-2015-11430", "37")),
        ("art. 49, letras a y b, del ET", ("BOE-A-2015-11430", "49")),
        ("art. 482, alíneas a e b, da CLT", ("DEL-5452-1943", "482")),
        ("artículo 49.1.b) y c) del ET", ("BOE-A-2015-11430", "49")),
    ],
)
def test_a_list_of_subdivisions_is_one_citation_of_its_article(grammar, text, expected):
    # "§§ 6º e 8º" was read as art. 477 and art. 8 of the CLT, "apartados 3 y 4, del ET" as ET arts. 37 and 4, and
    # "49.1.b) y c) del ET" lost its law: each names one article, and no one subdivision of it
    found = grammar.extract(text, colloquial=True)
    assert [(c["law_id"], c["article"]) for c in found] == [expected]
    assert pinpoint(text, found[0]["span"]) == []


def test_a_statute_s_list_of_subdivisions_adds_no_article():
    text = "lo dispuesto en el artículo 17, apartados 2 y 3, de la Ley del Estatuto de los Trabajadores."
    refs = CitationGrammar().extract_references(text)
    assert [(r["law"], r["article"]) for r in refs] == [("ET", "17")]
    text = "nos termos do art. 6º, caput e § 1º, da Lei nº 5.107, de 13 de setembro de 1966;"
    assert [(r["law"], r["article"]) for r in CitationGrammar().extract_references(text)] == [("Lei nº 5.107", "6")]


def test_cited_articles_puts_a_law_less_article_under_the_laws_the_question_names(grammar):
    clt = "DEL-5452-1943"
    assert cited_articles(grammar.extract("o art. 3º da CLT e o art. 2º")) == {(clt, "3"), (clt, "2")}
    assert cited_articles(grammar.extract("según el artículo 122")) == set()  # no law named: fetched from any
    # an article of a norm the corpus lacks stays out
    assert cited_articles(grammar.extract("el artículo 38 del ET y el artículo 5 de la Ley 30/1992")) == {(ET, "38")}


def test_a_provision_numbered_as_an_earlier_one_is_cited_by_that_number():
    """The LGSS has two "disposición transitoria trigésima quinta": the parser keys the second "dt35-2"."""
    from components.legal.citations import cites_block
    from components.legal.ids import numbered_as, repeated_key

    assert repeated_key("dt35", 2) == "dt35-2"
    assert numbered_as("dt35-2", "dt35") and numbered_as("dt35", "dt35")
    assert not numbered_as("dt35-2", "dt3") and not numbered_as("59-a", "59") and not numbered_as("dt35-1", "dt35")
    assert not numbered_as("adct-10", "10")
    citation = {"law_id": "BOE-A-2015-11724", "law": "LGSS", "article": "dt35"}
    assert cites_block(citation, {"law_id": "BOE-A-2015-11724", "article": "dt35-2"})
    assert not cites_block(citation, {"law_id": "BOE-A-2015-11724", "article": "dt36"})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ley 36/2011 artículo 2", [(None, "ley 36/2011", "2")]),
        ("Ley 36/2011, arts. 2 y 3", [(None, "Ley 36/2011", "2"), (None, "Ley 36/2011", "3")]),
        ("Lei 13.467/2017, art. 2º", [(None, "Lei 13.467/2017", "2")]),
        # a sentence or a line between the law and the article: the article is the text's own (drafting convention)
        ("la Ley 36/2011. Artículo 2.", [(None, "Ley 36/2011", None), (None, None, "2")]),
        ("Ley 36/2011\nArtículo 2", [(None, "Ley 36/2011", None), (None, None, "2")]),
        # an unknown law followed by a bare number is not read as its article (only a known law's name is)
        ("Ley 36/2011 2", [(None, "Ley 36/2011", None)]),
    ],
)
def test_extract_an_unknown_law_named_before_its_article(grammar, text, expected):
    assert [(c["law_id"], c["law"], c["article"]) for c in grammar.extract(text)] == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("DA 1ª ET", [("ET", "da1")]),
        ("D.A. 1.ª del ET", [("ET", "da1")]),
        ("DT 4ª LGSS", [("LGSS", "dt4")]),
        ("la DF 2ª del ET", [("ET", "df2")]),
        ("DD única ET", [("ET", "dd")]),
        ("DA 1ª y 2ª ET", [("ET", "da1"), ("ET", "da2")]),
        ("Disp. Adic. 1ª ET", [("ET", "da1")]),
        ("disp. trans. cuarta de la LGSS", [("LGSS", "dt4")]),
        # Portuguese "da" (of the) before a number is no disposition: the abbreviation is written in capitals
        ("os Tribunais Regionais do Trabalho da 1ª e 2ª Regiões", []),
        ("o art. 3 da CLT", [("CLT", "3")]),
    ],
)
def test_extract_abbreviated_disposition_labels(grammar, text, expected):
    assert [(c["law"], c["article"]) for c in grammar.extract(text)] == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ET, arts. 38-40", [("ET", "38"), ("ET", "39"), ("ET", "40")]),
        ("arts. 14 – 16 CE", [("CE", "14"), ("CE", "15"), ("CE", "16")]),
        ("art. 59-A e 59-B da CLT", [("CLT", "59-a"), ("CLT", "59-b")]),  # a letter after the dash: one article
        ("art. 38-2 ET", [(None, "38"), ("ET", None)]),  # not ascending: no range is read
    ],
)
def test_extract_a_dash_between_two_article_numbers_is_a_range(grammar, text, expected):
    assert [(c["law"], c["article"]) for c in grammar.extract(text)] == expected


def test_asks_only_case_law_still_unknown_and_without_outside(grammar):
    def case_law_only(question):
        return asks_only_case_law(question, grammar.extract(question, colloquial=True),
                                  grammar.extract_case_law(question))

    assert case_law_only("Súmula 331 do TST") and case_law_only("¿Qué dice la STS 1234/2020?")
    assert not case_law_only("o que diz a Súmula 331 do TST sobre terceirização?")  # something else to search
    assert not case_law_only("Súmula 331 do TST e o art. 2º da CLT")  # a norm cited beside it
    assert not case_law_only("Ley 36/2011 artículo 2")  # a norm the table lacks: the caller may have indexed it
    assert not case_law_only("¿cuántos días de vacaciones tengo?")

    class Doc:
        def __init__(self, law_short):
            self.meta = {"law_short": law_short}

    unknown = ["Lei 605/49", "Código Penal", "Súmula 331 do TST"]
    assert still_unknown(unknown, [Doc("Lei 605/1949"), Doc("CLT")]) == ["Código Penal", "Súmula 331 do TST"]
    assert still_unknown(unknown, []) == unknown
    assert grammar.without_outside("Código Penal artículo 138 y despido") == "y despido"
    assert grammar.without_outside("Súmula 331 do TST: terceirização") == ": terceirização"
    assert grammar.without_outside("art. 38 ET") == "art. 38 ET"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("¿qué dice el artículo cuarenta y ocho del Estatuto de los Trabajadores?", [("ET", "48")]),
        ("artículo ciento treinta y cinco de la Constitución", [("CE", "135")]),
        ("o que diz o artigo quatrocentos e setenta e sete da CLT?", [("CLT", "477")]),
        ("artigo cento e vinte da CLT", [("CLT", "120")]),
        ("artigo dez da CLT", [("CLT", "10")]),
        ("artículos dos y tres de la Constitución", [("CE", "2"), ("CE", "3")]),
        ("artículos cuarenta y ocho y cincuenta ET", [("ET", "48"), ("ET", "50")]),
        ("artículos cuarenta a cuarenta y dos del ET", [("ET", "40"), ("ET", "41"), ("ET", "42")]),
        ("artículo dos de la Constitución", [("CE", "2")]),
        ("artículo vigésimo primero de la Constitución", [("CE", "21")]),
    ],
)
def test_an_article_number_said_in_words_is_read_as_its_number(grammar, text, expected):
    assert [(c["law"], c["article"]) for c in grammar.extract(text)] == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        # Portuguese "dos" is "of the", not Spanish "two"
        ("qual é o artigo dos direitos sociais da CF?", [("CF88", None)]),
        ("art. 40 ou dos arts. 42 da CF", [(None, "40"), ("CF88", "42")]),
        # after a number in digits, a list goes on in digits: "y única" is not "and article único"
        ("artículo 7.1 y única para toda su vida", [(None, "7")]),
        ("art. 577 ou segundo as subdivisões", [(None, "577")]),
        # an indefinite article is not an article number
        ("el artículo un poco raro de la Constitución", [("CE", None)]),
        ("el artículo dice que tengo dos días", []),
    ],
)
def test_words_that_only_look_like_a_number_are_not_one(grammar, text, expected):
    assert [(c["law"], c["article"]) for c in grammar.extract(text)] == expected


@pytest.mark.parametrize(
    "text, step, reference",
    [
        ("¿y el siguiente?", 1, "siguiente"),
        ("¿Y qué dice el artículo anterior?", -1, "artículo anterior"),
        ("e o próximo artigo?", 1, "próximo artigo"),
        ("o artigo seguinte", 1, "artigo seguinte"),
        ("¿y el art. siguiente?", 1, "art. siguiente"),
        ("e o anterior?", -1, "anterior"),
    ],
)
def test_a_follow_up_naming_the_next_or_previous_article(text, step, reference):
    found_step, span = adjacent_article(text)
    assert (found_step, text[span[0]:span[1]]) == (step, reference)


@pytest.mark.parametrize(
    "text", ["el siguiente mes tengo vacaciones?", "¿y el anterior jefe?", "siguiente", "¿qué dice el art. 38?", ""]
)
def test_other_questions_name_no_adjacent_article(text):
    assert adjacent_article(text) is None


def test_amending_norms_are_the_norms_a_history_note_says_changed_a_provision():
    notes = ["Redação dada pela Lei nº 13.467, de 2017", "Vide Lei nº 605, de 1949", "Vigência",
             "Incluído pelo Decreto-lei nº 229, de 28.2.1967", "Parágrafo incluído pela Medida Provisória nº 2.164-41",
             "Revogado pela Lei Complementar nº 150, de 2015", "Redação dada pela Lei nº 13.467, de 2017"]
    assert amending_norms(notes) == ["lei 13467", "decreto-lei 229", "medida provisoria 2164", "lei complementar 150"]
    assert amending_norms(["Vide ADI 5766", "Regulamento"]) == []
    assert amending_norms(["Restabelecido com nova redação dada pela Lei nº 5.442, de 24.5.1968"]) == ["lei 5442"]

    class Doc:
        def __init__(self, notes):
            self.meta = {"law_short": "CLT", "amendments": notes}

    changed, other, plain = Doc(notes[:1]), Doc(["Redação dada pela Lei nº 6.514, de 1977"]), Doc(None)
    # as a question cites it: with or without the year, the "nº", the thousands point
    for norm in ("Lei 13.467/2017", "lei nº 13467", "Lei nº 13.467/17"):
        assert amended_by(norm, [changed, other, plain]) == [changed]
    assert amended_by("Lei 605/1949", [changed, other, plain]) == []  # only pointed at ("Vide")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("art. 37.3 b ET", [(ET, "37")]),  # the letter kept the law in the citation: not "art. 37.3" and "ET" apart
        ("arts. 38 y 39 ET", [(ET, "38"), (ET, "39")]),  # "y", "a", "o", "e" are words, not letters
        ("art. 3 a 5 ET", [(ET, "3"), (ET, "4"), (ET, "5")]),
        ("art. 5 o 6 de la CE", [(CE, "5"), (CE, "6")]),
    ],
)
def test_a_spaced_letter_is_read_only_where_it_cannot_be_a_word(grammar, text, expected):
    assert [(c["law_id"], c["article"]) for c in grammar.extract(text)] == expected
