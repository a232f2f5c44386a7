"""
Special regimes (`components/legal/data/special_regimes.yaml`): the parts of a statute that govern one group only,
and the groups a statute leaves out of its scope.
"""

import pytest

from components.legal.regimes import load_special_regimes
from tests.corpus_helpers import CORPUS
from tests.reference_fixtures import parent_blocks

CLT, RD1561, RD1620, LGSS = "DEL-5452-1943", "BOE-A-1995-21346", "BOE-A-2011-17975", "BOE-A-2015-11724"
ET, PRL = "BOE-A-2015-11430", "BOE-A-1995-24292"
FILES = [CORPUS / name for name in ("CLT.md", "CF88.md", f"{RD1561}.md", f"{RD1620}.md", f"{LGSS}.md", f"{ET}.md",
                                    f"{PRL}.md")]


@pytest.fixture(scope="module")
def articles():
    """One block per article of the laws the bundled table names, as the indexing pipeline parses them."""
    found = {}
    for block in parent_blocks(*FILES):
        found.setdefault((block.meta["law_id"], block.meta["article"]), block.meta)
    return found


def test_every_bundled_regime_is_a_real_part_of_its_law(articles):
    regimes = load_special_regimes()
    assert len(regimes) >= 30
    for regime in regimes.regimes:
        covered = [key for key, meta in articles.items() if regime.covers(meta)]
        assert covered, regime.group
        assert all(law_id == regime.law_id for law_id, _ in covered)
    # a general part of the law is in none: the question asking nothing about a group leaves the general rule
    outside = regimes.outside("fiz 2 horas a mais todo dia, quanto a mais tem que pagar por hora?")
    for key in [(CLT, "59"), (CLT, "73"), (CLT, "477"), ("CF88", "7"), (LGSS, "173"), (LGSS, "156")]:
        assert outside(articles[key]) is None, key


def test_every_replacement_puts_a_rule_of_the_regime_for_a_general_article_of_its_law(articles):
    regimes = load_special_regimes()
    pairs = [(regime, general, special) for regime in regimes.regimes for general, special in regime.replaces]
    assert len(pairs) >= 8
    for regime, general, special in pairs:
        assert regime.covers(articles[(regime.law_id, special)]), (regime.group, special)
        assert not any(r.covers(articles[(regime.law_id, general)]) for r in regimes.regimes), (regime.group, general)
    journalists = regimes.replacements("sou jornalista, quantas horas posso trabalhar por dia?")
    assert journalists == {(CLT, "58"): ("303", "jornalistas profissionais")}
    assert regimes.replacements("sou bancária", "e a hora extra?")[(CLT, "59")] == ("225", "bancários")
    assert regimes.replacements("meu patrão quer banco de horas") == {}  # no bank named
    assert regimes.replacements("quantas horas posso trabalhar por dia?") == {}


def test_a_block_of_a_regime_the_question_names_is_inside(articles):
    inside = load_special_regimes().inside("trabajo de interna cuidando a una señora, ¿cuántas horas puedo hacer?")
    assert inside(articles[(RD1620, "9")]) == "servicio del hogar familiar"
    assert inside(articles[(ET, "34")]) is None  # no regime
    assert inside(articles[(CLT, "241")]) is None  # a regime the question does not name
    outside = load_special_regimes().outside("trabajo de interna cuidando a una señora, ¿cuántas horas puedo hacer?")
    assert outside(articles[(RD1620, "9")]) is None and outside(articles[(CLT, "241")]) == "serviço ferroviário"
    # a whole-law regime is also named by naming the law
    assert load_special_regimes().inside("¿qué dice?", named_laws=[RD1620])(articles[(RD1620, "9")])


@pytest.mark.parametrize(
    "question",
    ["a gerente pode revistar as funcionárias?", "fui demitida sem justa causa, o que recebo?",
     "sou trabalhadora rural, tenho direito a creche?", "a empregada pode trabalhar no sábado?"],
)
def test_a_feminine_noun_or_participle_names_the_women_workers(articles, question):
    # a woman worker named by a feminine word is inside the CLT's chapter on women's work (art. 373-A, VI: searches)
    assert load_special_regimes().inside(question)(articles[(CLT, "373-a")]) == "proteção do trabalho da mulher"


@pytest.mark.parametrize(
    "question", ["o gerente pode revistar os funcionários?", "trabalho numa empresa contratada pela prefeitura"]
)
def test_a_masculine_noun_or_an_outsourcing_firm_names_no_woman(articles, question):
    assert load_special_regimes().outside(question)(articles[(CLT, "373-a")]) == "proteção do trabalho da mulher"


def test_a_block_of_a_regime_the_question_does_not_name_is_outside(articles):
    outside = load_special_regimes().outside("quanto é o adicional noturno? e a hora extra?")
    assert outside(articles[(CLT, "241")]) == "serviço ferroviário"
    assert outside(articles[(CLT, "381")]) == "proteção do trabalho da mulher"
    assert outside(articles[(CLT, "404")]) == "proteção do trabalho do menor"
    assert outside(articles[(CLT, "227")]) == "telefonia, telegrafia e radiotelegrafia"
    assert outside(articles[(CLT, "235-c")]) == "motorista profissional"
    assert outside(articles[("CF88", "39")]) == "servidores públicos"
    # a kind of contract of one article: the part-time regime's hours are not everyone's, nor intermittent work's pay
    weekly = load_special_regimes().outside("quantas horas posso trabalhar por semana?")
    assert weekly(articles[(CLT, "58-a")]) == "regime de tempo parcial"
    assert weekly(articles[(CLT, "452-a")]) == "trabalho intermitente"
    assert weekly(articles[(CLT, "58")]) is None and weekly(articles[(CLT, "443")]) is None
    spanish = load_special_regimes().outside("¿cuántas horas tienen que pasar entre una jornada y la siguiente?")
    assert spanish(articles[(RD1620, "9")]) == "servicio del hogar familiar"
    assert spanish(articles[(RD1561, "17")]) in {"jornadas especiales de trabajo", "transportes y trabajo en el mar"}
    assert spanish(articles[(LGSS, "251")]) == "sistema especial para empleados de hogar"
    assert spanish(articles[(LGSS, "316")]) == "trabajadores por cuenta propia o autónomos"
    assert spanish(articles[(LGSS, "248")]) == "trabajadores contratados a tiempo parcial"


def test_naming_the_group_brings_its_regime_in(articles):
    regimes = load_special_regimes()
    assert regimes.outside("sou ferroviário e fiz 2 horas a mais")(articles[(CLT, "241")]) is None
    assert regimes.outside("meu filho de 16 anos pode trabalhar de noite?")(articles[(CLT, "404")]) is None
    # the minimum working age asked for is the minors' rule (art. 403), a minor named or not
    for question in ("a partir de que idade posso trabalhar?", "com quantos anos posso começar a trabalhar?",
                     "qual a idade mínima para trabalhar?"):
        assert regimes.outside(question)(articles[(CLT, "403")]) is None, question
    assert regimes.outside("qual a idade mínima para ser Presidente?")(articles[(CLT, "403")]) is not None
    assert regimes.outside("estou grávida, posso ser demitida?")(articles[(CLT, "391-a")]) is None
    assert regimes.outside("trabajo de interna cuidando a una señora")(articles[(RD1620, "9")]) is None
    # words of the household group that name no household worker: one's own family, a party's internal structure,
    # international treaties, domestic violence; a family hiring a carer for its mother still names one
    for question in ("¿puedo reducir la jornada para cuidar a mi hijo?", "cuido a mi madre, ¿qué permisos tengo?",
                     "¿Cuál debe ser la estructura interna de los partidos políticos?",
                     "¿qué dicen los tratados internacionales sobre el trabajo?",
                     "soy víctima de violencia doméstica, ¿puedo cambiar de centro de trabajo?"):
        outside = regimes.outside(question)
        assert outside(articles[(RD1620, "9")]) == "servicio del hogar familiar", question
        assert outside(articles[(LGSS, "251")]) == "sistema especial para empleados de hogar", question
    assert regimes.outside("me contrataron para cuidar a su madre")(articles[(RD1620, "9")]) is None
    assert regimes.outside("soy autónoma y me he puesto mala")(articles[(LGSS, "316")]) is None
    # the group is named in the question or in the query made from it
    assert regimes.outside("e a hora extra?", "sou bancário")(articles[(CLT, "225")]) is None
    # "banco de horas" is no bank: the bank employees' regime stays outside, unless a bank is named beside it
    assert regimes.outside("meu patrão quer banco de horas")(articles[(CLT, "225")]) == "bancários"
    assert regimes.outside("trabalho numa agência do banco, tenho direito a 6 horas?")(articles[(CLT, "224")]) is None
    assert regimes.outside("no banco onde trabalho tem banco de horas")(articles[(CLT, "225")]) is None
    assert regimes.outside("tenho 16, posso fazer hora extra?")(articles[(CLT, "413")]) is None
    assert regimes.outside("trabalho meio período, quantas horas posso fazer?")(articles[(CLT, "58-a")]) is None
    assert regimes.outside("meu contrato é intermitente, quando me pagam?")(articles[(CLT, "452-a")]) is None


@pytest.mark.parametrize(
    "question",
    ["tengo 17 años, ¿puedo hacer horas extras?", "mi hijo de 16 años trabaja en un bar, ¿le pueden poner de noche?",
     "¿un menor de edad puede hacer horas extra?", "¿puedo trabajar con 15 años?",
     "¿desde qué edad puede trabajar una persona en España?", "¿con cuántos años se puede empezar a trabajar?"],
)
def test_a_minor_or_the_minimum_working_age_names_the_minors_article_of_the_et(articles, question):
    regimes = load_special_regimes()
    assert regimes.outside(question)(articles[(ET, "6")]) is None
    # for a minor, art. 6 (no overtime, no night work) displaces everyone's arts. 35 and 36
    spanish = {key: value for key, value in regimes.replacements(question).items() if key[0] == ET}
    assert spanish == {(ET, "35"): ("6", "trabajo de los menores"), (ET, "36"): ("6", "trabajo de los menores")}


@pytest.mark.parametrize(
    "question",
    ["¿cuántas horas extra puedo hacer al año?", "llevo 17 años en la empresa y me obligan a hacer horas extra",
     "¿puedo reducir la jornada para el cuidado de un menor de 12 años?", "trabajo de noche, ¿cobro un plus?"],
)
def test_an_adult_s_question_leaves_the_minors_article_after_the_general_rule(articles, question):
    regimes = load_special_regimes()
    assert regimes.outside(question)(articles[(ET, "6")]) == "trabajo de los menores"
    assert not any(law_id == ET for law_id, _ in regimes.replacements(question))
    assert regimes.outside(question)(articles[(ET, "35")]) is None  # the general rule stays where it is


def test_the_groups_the_prevention_law_protects_besides_everyone(articles):
    regimes = load_special_regimes()
    agency = "trabajo para una ETT en un almacén, ¿quién me tiene que dar la formación de prevención?"
    temporary = "trabajadores temporales y de empresas de trabajo temporal"
    assert regimes.outside(agency)(articles[(PRL, "28")]) is None
    # who trains an agency worker and watches their health: art. 28, before everyone's arts. 19 and 22
    assert regimes.replacements(agency) == {(PRL, "19"): ("28", temporary), (PRL, "22"): ("28", temporary)}
    assert regimes.outside(agency)(articles[(PRL, "19")]) is None  # the general rule stays in place
    sick = "vuelvo de una baja por incapacidad temporal, ¿me tienen que hacer un reconocimiento médico?"
    assert regimes.outside(sick)(articles[(PRL, "28")]) == temporary
    assert regimes.replacements(sick) == {}
    pregnant = "estoy embarazada y trabajo con productos químicos, ¿qué tiene que hacer la empresa?"
    assert regimes.outside(pregnant)(articles[(PRL, "26")]) is None
    assert regimes.outside(pregnant)(articles[(PRL, "27")]) == "protección de los menores"
    minor = "mi hijo tiene 17 años y empieza a trabajar en un taller, ¿qué tiene que hacer la empresa?"
    assert regimes.outside(minor)(articles[(PRL, "27")]) is None
    assert regimes.outside(minor)(articles[(PRL, "26")]) == "protección de la maternidad"
    everyone = "¿la empresa tiene que darme formación en prevención de riesgos?"
    assert [regimes.outside(everyone)(articles[(PRL, a)]) for a in ("16", "19", "22")] == [None, None, None]
    assert all(regimes.outside(everyone)(articles[(PRL, a)]) for a in ("26", "27", "28"))
    # breastfeeding is named however it is said; a worker's own condition names no listed group, so art. 25 (the
    # workers especially sensitive to a risk) is in none and keeps its place
    breastfeeding = "estoy dando el pecho a mi bebé, ¿qué tiene que hacer la empresa?"
    assert regimes.outside(breastfeeding)(articles[(PRL, "26")]) is None
    assert regimes.outside("tengo epilepsia, ¿me pueden poner en este puesto?")(articles[(PRL, "25")]) is None


def test_a_woman_s_or_a_minor_s_own_limit_displaces_everyone_s_in_the_clt(articles):
    regimes = load_special_regimes()
    # the weight a woman may lift (art. 390: 20 kg), not everyone's 60 (art. 198)
    assert regimes.replacements("a mulher pode carregar quanto peso no trabalho?")[(CLT, "198")] == (
        "390", "proteção do trabalho da mulher")
    assert (CLT, "198") not in regimes.replacements("quantos quilos um trabalhador pode carregar?")
    # a minor: no overtime but as art. 413 allows, no night work (art. 404)
    minor = regimes.replacements("tenho 16 anos, posso fazer hora extra e trabalhar de noite?")
    assert minor[(CLT, "59")] == ("413", "proteção do trabalho do menor")
    assert minor[(CLT, "73")] == ("404", "proteção do trabalho do menor")


def test_going_to_work_by_bus_names_no_driver(articles):
    regimes = load_special_regimes()
    commute = "a empresa busca a gente de ônibus numa cidade longe, o tempo da viagem conta como hora trabalhada?"
    assert regimes.outside(commute)(articles[(CLT, "235-c")]) == "motorista profissional"
    assert regimes.replacements(commute) == {}
    for driver in ("sou motorista de ônibus, quantas horas posso dirigir?", "dirijo ônibus 10 horas por dia"):
        assert regimes.outside(driver)(articles[(CLT, "235-c")]) is None, driver
    # and in Spain: a train or a bus to work names no crew of the special working days' transport section
    by_train = regimes.outside("voy en tren al trabajo y tardo dos horas, ¿ese tiempo cuenta como jornada?")
    assert by_train(articles[(RD1561, "10")]) in {"jornadas especiales de trabajo", "transportes y trabajo en el mar"}
    for crew in ("soy conductor de autobús, ¿cuántas horas puedo conducir?", "soy maquinista de tren",
                 "trabajo en una empresa de transportes, ¿cuánto descanso entre turnos?"):
        assert regimes.outside(crew)(articles[(RD1561, "10")]) is None, crew
    # nor does the company's bus, or the pay for getting to work
    for commute in ("el transporte de la empresa tarda una hora, ¿cuenta como jornada?",
                    "¿me tienen que pagar el plus de transporte en vacaciones?",
                    "¿la empresa me paga el abono transporte?"):
        assert regimes.outside(commute)(articles[(RD1561, "10")]) is not None, commute


def test_a_whole_law_regime_is_named_by_the_law_or_by_any_of_its_groups(articles):
    regimes = load_special_regimes()
    general = articles[(RD1561, "1")]  # the RD 1561/1995's general provisions: in the whole-law regime only
    assert regimes.outside("¿cuál es la jornada máxima?")(general) == "jornadas especiales de trabajo"
    assert regimes.outside("¿cuál es la jornada máxima?", named_laws=[RD1561])(general) is None
    assert regimes.outside("soy camionero, ¿cuál es mi jornada?")(general) is None
    # a section of the law needs its own group named as well: a lorry driver is not a farm worker
    assert regimes.outside("soy camionero, ¿cuál es mi jornada?")(articles[(RD1561, "10")]) is None
    assert regimes.outside("soy camionero, ¿cuál es mi jornada?")(articles[(RD1561, "5")]) == "trabajo en el campo"


@pytest.mark.parametrize("text", [
    "- a list\n",
    "CLT: []\n",
    "CLT:\n  - {heading: X, named_by: [x]}\n",
    "CLT:\n  - {group: g, heading: X}\n",
    "CLT:\n  - {group: g, heading: X, named_by: []}\n",
    "CLT:\n  - {group: g, heading: X, articles: ['1'], named_by: [x]}\n",
    "CLT:\n  - {group: g, articles: [], named_by: [x]}\n",
    "CLT:\n  - {group: g, heading: X, named_by: [x], words: [y]}\n",
    "CLT:\n  - {group: g, heading: X, named_by: [x], unless: []}\n",
    # a left-out group: its article and its own law, no heading, words, a constitution that says something
    "CLT:\n  - {group: g, excluded_by: '7', named_by: [x]}\n",
    "CLT:\n  - {group: g, own_law: L, named_by: [x]}\n",
    "CLT:\n  - {group: g, excluded_by: '', own_law: L, named_by: [x]}\n",
    "CLT:\n  - {group: g, excluded_by: '7', own_law: L, heading: X, named_by: [x]}\n",
    "CLT:\n  - {group: g, excluded_by: '7', own_law: L}\n",
    "CLT:\n  - {group: g, excluded_by: '7', own_law: L, constitution: '', named_by: [x]}\n",
    "CLT:\n  - {group: g, heading: X, constitution: C, named_by: [x]}\n",  # only a left-out group has one
    # replacements: general article -> the regime's, both named
    "CLT:\n  - {group: g, heading: X, named_by: [x], replaces: {}}\n",
    "CLT:\n  - {group: g, heading: X, named_by: [x], replaces: ['58']}\n",
    "CLT:\n  - {group: g, heading: X, named_by: [x], replaces: {'58': ''}}\n",
    "CLT:\n  - {group: g, excluded_by: '7', own_law: L, named_by: [x], replaces: {'58': '303'}}\n",
])
def test_a_malformed_regimes_file_is_a_clear_error(tmp_path, text):
    path = tmp_path / "regimes.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match="regimes"):
        load_special_regimes(path)


def test_a_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        load_special_regimes(tmp_path / "none.yaml")


def test_a_custom_file_with_an_article_regime(tmp_path):
    path = tmp_path / "regimes.yaml"
    path.write_text("BOE-A-2015-11430:\n  - {group: menores, articles: ['6'], named_by: [menor, '17 años']}\n",
                    encoding="utf-8")
    regimes = load_special_regimes(path)
    et6 = {"law_id": "BOE-A-2015-11430", "article": "6", "heading_path": []}
    assert regimes.outside("¿puedo hacer horas extra?")(et6) == "menores"
    assert regimes.outside("mi hijo tiene 17 AÑOS")(et6) is None
    assert regimes.outside("¿puedo hacer horas extra?")({**et6, "article": "35"}) is None


def test_every_bundled_left_out_group_is_left_out_by_a_real_article_of_its_law(articles):
    groups = load_special_regimes().left_out
    assert {(g.law_id, g.group) for g in groups} >= {(CLT, "empregados domésticos"), (ET, "funcionarios públicos")}
    for group in groups:
        meta = articles[(group.law_id, group.article)]
        assert meta["law_id"] == group.law_id and group.own_law, group.group
    household = load_special_regimes().leaving_out("sou doméstica")[CLT]
    assert household.note() == {"group": "empregados domésticos", "article": "7", "own_law": household.own_law,
                                "constitution": household.constitution}
    assert "150/2015" in household.own_law and "parágrafo único" in household.constitution


@pytest.mark.parametrize(("text", "law_id", "group"), [
    ("sou empregada doméstica, tenho direito a férias?", CLT, "empregados domésticos"),
    ("trabalho de babá numa casa de família", CLT, "empregados domésticos"),
    ("sou trabalhador rural, tenho direito a hora extra?", CLT, "trabalhadores rurais"),
    ("sou servidor público federal, posso ser demitido?", CLT, "servidores públicos"),
    ("soy funcionaria de un ayuntamiento", ET, "funcionarios públicos"),
    ("soy autónoma, ¿tengo vacaciones?", ET, "trabajadores autónomos"),
])
def test_naming_a_left_out_group(text, law_id, group):
    found = load_special_regimes().leaving_out(text)
    assert found[law_id].group == group


@pytest.mark.parametrize(("text", "law_id"), [
    ("sofri violência doméstica, posso faltar?", CLT),
    ("tenho um funcionário que sumiu faz 40 dias", CLT),  # an employee, in everyday Portuguese
    ("sou empregado público da Caixa, celetista", CLT),
    ("os direitos dos trabalhadores urbanos e rurais", CLT),
    ("¿Qué controla el Estado en las Comunidades Autónomas?", ET),
    ("soy falso autónomo, ¿qué puedo reclamar?", ET),  # an employee in law: the Estatuto governs
    ("¿cuántos días de vacaciones tengo?", ET),
])
def test_words_that_name_no_group_the_law_leaves_out(text, law_id):
    # (the words are read whatever the language: the re-ranker marks a law's blocks for its jurisdiction only)
    assert law_id not in load_special_regimes().leaving_out(text)
