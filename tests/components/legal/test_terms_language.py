"""The equivalence table and keyword extraction by language (Spanish top level, Portuguese under `pt:`)."""

import pytest

from components.legal.terms import (
    Equivalences,
    asks_for_definition,
    asks_for_full_text,
    extract_keywords,
    lexical_coverage,
    load_equivalences,
    split_concepts,
    split_questions,
)


@pytest.fixture(scope="module")
def table():
    return load_equivalences()


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("fui mandado embora grávida, tenho direito a alguma coisa?", ["mandado embora", "grávida"]),
        ("minha carteira assinada só depois da experiência?", ["carteira assinada", "experiência"]),
        ("faço hora extra todo dia e não recebo", ["hora extra"]),
        ("tenho férias vencidas, o patrão paga em dobro?", ["férias vencidas", "patrão"]),
        ("o 13º salário vem quando?", ["13º salário"]),
        ("fui demitido por justa causa sem aviso", ["fui demitido", "justa causa", "aviso"]),
    ],
)
def test_portuguese_questions_get_portuguese_equivalences(table, question, expected):
    matches = table.matches(question)
    assert [key for key, _ in matches] == expected
    assert table.language_of(question) == "pt"


def test_portuguese_terms_are_statutory(table):
    assert "dispensa" in table.terms("me mandaram embora ontem") and "rescisão" in table.terms("fui mandado embora")
    assert "sobrejornada" in table.terms("quanto vale a hora extra no domingo?")
    assert "gestante" in table.terms("estou grávida e fui dispensada, e agora?")


def test_the_statutes_own_word_for_holidays_adds_no_section_of_their_chapter(table):
    # "férias" is the CLT's own word: no entry of its own, so a question on holidays is not pulled towards the
    # chapter's section on holiday pay (art. 142) or on when they are granted
    assert table.matches("quantos dias de férias eu tenho?") == []
    assert not {"remuneração", "concessão"} & set(table.terms("qnts dias de ferias eu tenho"))
    assert [key for key, _ in table.matches("tenho férias vencidas, quanto recebo?")] == ["férias vencidas"]


def test_the_statutes_own_term_for_the_notice_adds_nothing_but_itself(table):
    # "aviso prévio" is the name of the CLT's chapter on notice: the shortening "aviso" finds it, and nothing pulls
    # the question towards the articles that say "rescisão" and "prazo" (art. 490) rather than the notice (art. 487)
    question = "quantos dias de aviso prévio eu tenho?"
    assert table.expand(question) == question
    assert table.expand("a empresa não me deu aviso, e agora?") == "a empresa não me deu aviso, e agora? aviso prévio"


def test_the_statutes_own_terms_for_permanent_incapacity_and_unions_add_no_article_s_words(table):
    # "incapacidad permanente" is the LGSS's own term: its grades (total, absoluta, gran invalidez) pulled every
    # question on it towards the article listing them (art. 194) rather than what it asks (amount, requirements, who
    # decides); "sindicato" is the LOLS's own word
    for question in ("¿qué requisitos hay para pedir la incapacidad permanente?",
                     "¿los delegados de personal tienen horas libres para sus cosas del sindicato?"):
        assert table.expand(question) == question, question
    # in Portuguese a union in a labour question is mostly what it agreed (the CLT's "convenção coletiva", art.
    # 611-A): that entry stays
    assert "convenção" in table.terms("o sindicato fechou um acordo com a empresa, isso vale?")
    # the older word still finds the statute's term, without the grades
    assert table.expand("me han dado la invalidez") == "me han dado la invalidez incapacidad permanente"
    assert "absoluta" not in table.terms("me quedó una invalidez, ¿cobro algo?")
    # a key holding the word stays ("horas sindicales": the representatives' paid hours)
    assert "crédito" in table.terms("¿cuántas horas sindicales tengo?")


@pytest.mark.parametrize(
    "question",
    [
        "¿me pagan la hora extra si trabajo el domingo?",  # "hora extra" is a Portuguese key only
        "me han despedido sin justa causa, ¿qué hago?",  # "justa causa" too
        "¿tengo que dar aviso antes de irme?",
    ],
)
def test_spanish_questions_never_get_portuguese_terms(table, question):
    assert table.language_of(question) == "es"
    assert table.matches(question) == table.matches(question, language="es")
    assert not {"sobrejornada", "dispensa", "aviso prévio"} & set(table.terms(question))


def test_spanish_table_unchanged_and_explicit_language(table):
    assert table.matches("me dieron la BAJA MEDICA") == [("baja médica", table.table["baja médica"])]
    # "estoy de baja", the longer span, holds the same terms
    assert table.terms("estoy de BAJA MEDICA") == table.terms("me dieron la BAJA MEDICA")
    assert "pt" not in table.table  # the Portuguese section is not a Spanish entry
    assert table.matches("hora extra", language="pt")[0][0] == "hora extra"
    assert table.matches("carteira assinada", language="es") == []
    # read in Spanish, "hora extra" is the Spanish entry "horas extra" in the singular (below)
    assert table.matches("hora extra", language="es")[0][0] == "horas extra"


@pytest.mark.parametrize(
    ("text", "language", "key"),
    [
        ("a empresa ta atrasando meu salario ja faz 3 meses", "pt", "atrasando o salário"),
        ("até agora não assinaram minha carteira", "pt", "assinar a carteira"),
        ("me han pillado cobrando el paro", "es", "cobrar el paro"),  # longer than the one-word key "paro"
        ("me pagan la hora extra", "es", "horas extra"),
    ],
)
def test_keys_of_several_words_match_inflected_and_with_other_function_words(table, text, language, key):
    assert key in [k for k, _ in table.matches(text, language=language)]
    assert key not in text  # not as written: the match is the inflection-tolerant one


def test_no_two_keys_of_the_shipped_table_match_the_same_words(table):
    # a key of two content words or more matches its inflections: a second key with the same stems adds nothing,
    # and one with other terms would be shadowed by whichever the text writes exactly
    for language in table.by_language:
        seen: dict[tuple[int, ...], str] = {}
        for key, _, tokens in table._stemmed(language):  # the keys of two content words or more, as BM25 tokens
            assert tokens not in seen, f"{language}: {key!r} matches what {seen[tokens]!r} matches"
            seen[tokens] = key
        assert len(seen) > (100 if language == "es" else 50)


def test_inflection_tolerance_keeps_exact_keys_first_and_one_word_keys_as_written(table):
    # the exact key wins over another key that matches the same words inflected (the shipped table keeps one key of
    # such a pair: the other would add nothing)
    assert table.matches("fui mandada embora grávida", language="pt")[0][0] == "mandado embora"
    pair = Equivalences({"x": "y"}, by_language={"pt": {"mandado embora": "dispensa", "mandada embora": "gestante"}})
    assert pair.matches("fui mandada embora", language="pt") == [("mandada embora", "gestante")]
    assert pair.matches("ele foi mandado embora", language="pt") == [("mandado embora", "dispensa")]
    # one-word keys are not stemmed ("acordo" is not "acordei"); a key's words must be consecutive content words
    assert table.matches("acordei cedo hoje", language="pt") == []
    assert table.matches("assinaram o contrato e a carteira", language="pt") == []


@pytest.mark.parametrize(
    ("text", "key"),
    [("¿pueden expropiarme la casa?", "expropiar"), ("¿pueden detenerme sin motivo?", "detener"),
     ("quieren despedirla", "despedir"), ("¿pueden despedirnos a todos?", "despedir")],
)
def test_a_one_word_spanish_infinitive_matches_with_the_pronouns_written_onto_it(table, text, key):
    assert key in [k for k, _ in table.matches(text, language="es")]


def test_only_pronouns_and_only_infinitives_extend_a_one_word_key():
    table = Equivalences({"expropiar": "expropiación", "paro": "desempleo"})
    assert table.matches("expropiarlos", language="es") == [("expropiar", "expropiación")]
    assert table.matches("expropiaron", language="es") == []  # another inflection: as written only
    assert table.matches("parome", language="es") == []  # "paro" is no infinitive
    # Portuguese writes its pronouns with a hyphen, which a key already matches as written
    pt = Equivalences({"x": "y"}, by_language={"pt": {"demitir": "dispensa"}})
    assert pt.matches("demitirme", language="pt") == []
    # a key matches case- and accent-insensitively, its pronouns too: a table may write "Despedir" or "despedír"
    mixed = Equivalences({"Despedir": "despido", "expropiár": "expropiación"})
    assert mixed.matches("¿pueden despedirme?", language="es") == [("Despedir", "despido")]
    assert mixed.matches("van a expropiarnos", language="es") == [("expropiár", "expropiación")]


def test_a_one_word_noun_matches_in_the_plural_and_a_verb_does_not():
    table = Equivalences({"nómina": "recibo de salarios", "despedir": "despido", "finiquito": "liquidación"},
                         by_language={"pt": {"falta": "ausência", "folgar": "descanso", "férias": "férias"}})
    assert table.matches("no me dan nóminas", language="es") == [("nómina", "recibo de salarios")]
    assert table.matches("dos finiquitos distintos", language="es") == [("finiquito", "liquidación")]
    assert table.matches("quantas faltas eu posso ter", language="pt") == [("falta", "ausência")]
    assert table.matches("despidieres", language="es") == [] and table.matches("despedires", language="es") == []
    assert table.matches("folgares", language="pt") == []  # -ar: a verb, no plural
    assert table.matches("nominal", language="es") == []  # a whole word still
    assert table.matches("fériases", language="pt") == []  # a key ending in s takes no other


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("¿qué es un ERTE?", True),
        ("¿Qué son las pagas extraordinarias?", True),
        ("¿en qué consiste el finiquito?", True),
        ("¿y qué es el SMI?", True),
        ("o que é o FGTS?", True),
        ("O que significa justa causa?", True),
        ("¿Qué es lo que me tienen que pagar?", False),  # what is owed, not what a word means
        ("o que é que eu faço?", False),
        ("¿qué dice el artículo 38?", False),
        ("¿pueden expropiarme la casa?", False),
    ],
)
def test_asks_for_definition(question, expected):
    assert asks_for_definition(question) is expected


def test_sectioned_file_validation(tmp_path):
    path = tmp_path / "eq.yaml"
    path.write_text("vacaciones: vacaciones anuales\npt:\n  férias: férias anuais\n", encoding="utf-8")
    loaded = load_equivalences(str(path))
    assert loaded.table == {"vacaciones": "vacaciones anuales"}
    assert loaded.by_language["pt"] == {"férias": "férias anuais"}
    bad = tmp_path / "bad.yaml"
    bad.write_text("pt:\n  férias: 3\n", encoding="utf-8")
    with pytest.raises(ValueError, match="mapping"):
        load_equivalences(str(bad))
    assert Equivalences({"paro": "desempleo"}).matches("cobro el paro") == [("paro", "desempleo")]


def test_extract_keywords_uses_the_question_language():
    assert extract_keywords("meu chefe não quer me dar as férias") == ["chefe", "férias"]
    assert extract_keywords("¿Cuántos días de vacaciones tengo?") == ["días", "vacaciones"]
    assert extract_keywords("o que é isso", language="es") == ["isso"]
    # the article word and its number are no keywords, in either language
    assert extract_keywords("o que diz o artigo 477 sobre a rescisão?") == ["rescisão"]
    assert extract_keywords("¿qué dice el artículo 38 sobre vacaciones?") == ["vacaciones"]
    # the verb "to be" in the subjunctive and conditional ("e se for adoção?") is no subject of the question
    assert extract_keywords("e se for adoção?") == ["adoção"]
    assert extract_keywords("e se eu estiver grávida?") == ["grávida"]
    assert extract_keywords("¿y si fuera una adopción?") == ["adopción"]


def test_expand_appends_the_terms_the_text_does_not_already_hold(table):
    assert table.expand("  me han dado  la baja médica ") == "me han dado la baja médica incapacidad temporal prestación"
    # every term of the entry already in the text: nothing added
    assert table.expand("¿cobro la prestación por desempleo si estoy en el paro?") == (
        "¿cobro la prestación por desempleo si estoy en el paro?"
    )
    assert table.expand("fui mandado embora") == "fui mandado embora dispensa sem justa causa rescisão contrato"
    assert table.expand("me pagan la carteira assinada", "es") == "me pagan la carteira assinada"  # no Spanish entry
    assert table.expand("me pagan la hora extra", "pt").endswith("horas suplementares sobrejornada adicional hora extraordinária")
    matches = [("curro", "trabajo empleo")]
    assert table.expand("mi curro", matches=matches) == "mi curro trabajo empleo"  # the caller's matches
    # a deadline to sue is the statute's prescription / caducity of the action, in both languages
    assert "caducidad" in table.expand("¿cuánto tiempo tengo para reclamar el despido?")
    assert "prescrição" in table.expand("quanto tempo tenho para entrar com ação trabalhista?", "pt")
    assert "suspensión contrato nacimiento" in table.expand("¿cuánto dura el permiso por nacimiento?")


def test_lexical_coverage_is_the_share_of_the_question_words_a_text_holds():
    article = "Las vacaciones anuales retribuidas no serán sustituibles por compensación económica."
    assert lexical_coverage("vacaciones anuales retribuidas", article) == 1.0
    assert lexical_coverage("¿me pueden pagar las vacaciones en vez de disfrutarlas?", article) == pytest.approx(1 / 3)
    assert lexical_coverage("mi jefe me grita", article) == 0.0
    assert lexical_coverage("¿y eso qué?", article) is None  # no content word
    # stems, folded accents, the question's stopwords: "férias vencidas" over "as férias ... vencido"
    clt = "Na cessação do contrato, a remuneração das férias cujo período aquisitivo tenha vencido será devida."
    assert lexical_coverage("o patrão paga as ferias vencidas?", clt, "pt") == pytest.approx(2 / 4)
    # the forms of "to be" are function words in both languages: only the content words count
    assert lexical_coverage("somos setenta, ¿son vacaciones retribuidas?", article) == pytest.approx(2 / 3)
    assert lexical_coverage("sou porteiro, são férias vencidas?", clt, "pt") == pytest.approx(2 / 3)


def test_split_questions_reads_each_question_of_a_message():
    two = "¿Cuántos días de vacaciones tengo al año? ¿Y me pueden obligar a trabajar los domingos?"
    assert split_questions(two) == ["¿Cuántos días de vacaciones tengo al año?",
                                    "¿Y me pueden obligar a trabajar los domingos?"]
    # the context before the first question mark is the first question's
    assert split_questions("trabajo de interna cuidando a una señora mayor, ¿tengo derecho a librar el fin de "
                           "semana? y cuantas horas tengo que descansar entre dia y dia?") == [
        "trabajo de interna cuidando a una señora mayor, ¿tengo derecho a librar el fin de semana?",
        "y cuantas horas tengo que descansar entre dia y dia?"]
    # a short part, or one pointing back at the one before, goes on from it: one question
    for one in ("tenho direito a algum adicional por isso? de quanto?", "posso faltar para doar sangue? quantas vezes?",
                "da pra fazer um acordo com o patrão? o que eu recebo nesse caso?", "Me han despedido. ¿Es legal?",
                "¿Es legal? me han despedido estando de baja", "ele pode fazer isso??", "¿cuántos días de vacaciones?"):
        assert split_questions(one) == [one]
    # "¿es legal?" first, too short alone: it goes with the question after it
    assert split_questions("¿Es legal? ¿Me pueden despedir estando de baja médica? ¿Cuánto tiempo tengo para "
                           "reclamar el despido?") == ["¿Es legal? ¿Me pueden despedir estando de baja médica?",
                                                     "¿Cuánto tiempo tengo para reclamar el despido?"]
    # each question is a concept of its own: searched on its own and quoted by its own best article
    assert split_concepts(two) == ["cuántos días de vacaciones tengo al año",
                                   "y me pueden obligar a trabajar los domingos"]


def test_split_concepts():
    assert split_concepts("¿Me corresponde paro o subsidio?") == ["me corresponde paro", "subsidio"]
    assert split_concepts("Diferencias entre ERTE, ERE y despido objetivo") == ["erte", "ere", "despido objetivo"]
    assert split_concepts("¿Cuál es la diferencia entre despido objetivo y disciplinario?") == [
        "despido objetivo", "despido disciplinario"]
    # a long "o" clause is one question, not two concepts
    assert len(split_concepts("¿Cuántos días de vacaciones tengo si trabajo a tiempo parcial o a turnos?")) == 1
    # Portuguese: "diferença", "e" / "ou" between the items; "o" is the article, never "or"
    assert split_concepts("qual a diferença entre aviso prévio indenizado e trabalhado?") == [
        "aviso prévio indenizado", "aviso trabalhado"]
    assert split_concepts("tenho direito a seguro-desemprego ou FGTS?") == ["tenho direito a seguro-desemprego", "fgts"]
    question = "quebrei um copo no restaurante e o patrão quer descontar do meu salário, pode?"
    assert split_concepts(question) == [question.lower().rstrip("?").strip()]


@pytest.mark.parametrize(
    ("text", "language", "key", "term"),
    [
        # a pay cut is a substantial modification of working conditions (ET art. 41), unpaid wages a cause to quit
        ("¿pueden bajarme el sueldo sin mi permiso?", "es", "bajar el sueldo", "modificación"),
        ("¿puedo irme si no me pagan desde marzo?", "es", "no me pagan", "impago"),
        ("me echaron sin motivo ninguno", "es", "sin motivo", "improcedente"),
        ("¿me pueden cambiar de ciudad de trabajo?", "es", "cambiar de ciudad", "movilidad"),
        ("o patrão não paga o salário há dois meses", "pt", "não paga o salário", "rescindido"),
        ("trabalho com produtos químicos, tenho adicional?", "pt", "produtos químicos", "insalubridade"),
        ("meu patrão me xingou", "pt", "patrão", "empregador"),
        # insults and humiliation by the employer are its "ato lesivo da honra" (CLT art. 483, e), a cause to quit
        ("meu patrão me xingou", "pt", "xingou", "lesivo"),
        ("o gerente gritou comigo e me humilhou", "pt", "humilhou", "rigor"),
        ("mi jefe me insulta delante de todos", "es", "me insulta", "dignidad"),
        # a doctrinal name is searched in the statute's own words: CLT art. 483 never says "rescisão indireta"
        ("o que é rescisão indireta?", "pt", "rescisão indireta", "rescindido"),
        ("posso sair e receber tudo?", "pt", "sair e receber", "rescindido"),
        ("¿y si son gemelos?", "es", "gemelos", "múltiple"),
        # a birth in everyday words: the suspension of the contract (ET art. 48), the licences (CF88 art. 7, XIX)
        ("¿cuántos días de permiso tengo si nace mi hijo?", "es", "nace mi hijo", "suspensión"),
        ("meu filho nasceu ontem, quantos dias posso ficar em casa?", "pt", "meu filho nasceu", "licença-paternidade"),
        ("vou ser pai, quantos dias de licença eu tenho?", "pt", "vou ser pai", "licença-paternidade"),
        ("qual o intervalo interjornada mínimo?", "pt", "interjornada", "consecutivas"),
        ("as horas in itinere ainda são pagas?", "pt", "in itinere", "despendido"),
        ("o DSR é pago junto com o salário?", "pt", "dsr", "repouso"),
        ("¿me pueden quitar un plus?", "es", "plus", "complementos"),
        ("¿pueden leer mis correos del trabajo?", "es", "mis correos", "dispositivos"),
        ("¿mi jefe puede mirar mi email?", "es", "email", "intimidad"),
        ("¿me pueden obligar a trabajar un domingo?", "es", "trabajar un domingo", "descanso"),
        ("¿cuánto tiempo tengo para denunciar un despido?", "es", "denunciar el despido", "caducidad"),
        ("mi empresa no me da de alta", "es", "da de alta", "afiliación"),
        # absences in the CLT's words: "faltas ... ao serviço" (arts. 130, 131), "deixar de comparecer" (art. 473)
        ("o que acontece se eu faltar sem justificativa?", "pt", "faltar", "comparecer"),
        ("trabalho em casa de família como babá", "pt", "casa de família", "domésticos"),
        # fundamental rights in everyday words (CE arts. 17, 33)
        ("¿me pueden detener sin decirme por qué?", "es", "detener", "detención"),
        ("¿pueden quitarme mi casa para hacer una carretera?", "es", "quitarme mi casa", "utilidad"),
        ("o gerente manda ela levantar caixas pesadas", "pt", "caixas pesadas", "quilos"),
        # common misspellings
        ("qual o prazo para pagar a recisão?", "pt", "recisão", "rescisão"),
        ("posso fazer acordo de demição?", "pt", "demição", "demissão"),
        # how long one has to sue is the action's prescrição
        ("quanto tempo tenho para reclamar na justiça?", "pt", "tempo para reclamar", "prescrição"),
        ("posso reclamar na justiça depois de dois anos?", "pt", "reclamar na justiça", "prescrição"),
        ("mi jefe me manda whatsapps por la noche", "es", "whatsapp", "desconexión"),
        # the break of a long working day (ET art. 34.4) in the words of a lunch break
        ("¿cuánto tiempo de descanso tengo para comer?", "es", "descanso para comer", "continuada"),
        ("¿me tienen que dar tiempo para comer?", "es", "tiempo para comer", "continuada"),
        ("a partir de que idade posso trabalhar?", "pt", "idade posso trabalhar", "dezesseis"),
        ("com quantos anos posso trabalhar no Brasil?", "pt", "anos posso trabalhar", "aprendiz"),
        # clocking in and out: the daily record of working time (ET art. 34.9, CLT art. 74 § 2º)
        ("¿es obligatorio fichar en el trabajo?", "es", "fichar", "registro"),
        ("¿tengo derecho a ver mis fichajes?", "es", "fichaje", "registro"),
        ("mi empresa no tiene control horario", "es", "control horario", "registro"),
        ("meu chefe me obriga a bater ponto e voltar a trabalhar", "pt", "bater ponto", "anotação"),
        # getting married, in the verb (CLT art. 473, II); "caso" alone is also "case", so only after "quando"
        ("quantos dias de folga eu tenho quando caso?", "pt", "quando caso", "casamento"),
        ("casei ontem, quantos dias tenho?", "pt", "casei", "comparecer"),
        # what a dismissal pays and when (CLT art. 477), the notice an employee who quits owes (art. 487, § 2º)
        ("fui demitido, quando recebo minhas verbas?", "pt", "minhas verbas", "quitação"),
        ("posso pedir demissão e sair na hora?", "pt", "sair na hora", "antecedência"),
        # holidays in up to three periods (CLT art. 134, § 1º); the 12 x 36 working day in words (art. 59-A)
        ("minhas férias podem ser divididas?", "pt", "férias podem ser divididas", "três"),
        ("a empresa pode fracionar minhas férias?", "pt", "fracionar as férias", "períodos"),
        ("trabalho 12 horas e folgo 36, isso é permitido?", "pt", "folgo 36", "doze"),
        # sickness benefit in today's words reaches the CLT's 1943 ones (art. 476)
        ("estou de auxílio-doença, a empresa pode me demitir?", "pt", "auxílio-doença", "auxílio-enfermidade"),
        ("estou encostado no inss, posso ser mandado embora?", "pt", "encostado", "seguro-doença"),
        # the paid hours to look for a job during an objective dismissal's notice (ET art. 53.2)
        ("¿cuántas horas libres tengo para buscar empleo si me despiden?", "es", "horas libres para buscar empleo",
         "licencia"),
        ("¿me dan tiempo para buscar otro trabajo?", "es", "tiempo para buscar trabajo", "preaviso"),
        ("a empresa pode alterar minha folha de ponto?", "pt", "folha de ponto", "entrada"),
        # unpaid wages of a closed or bankrupt employer: the Fondo de Garantía Salarial (ET art. 33)
        ("la empresa ha cerrado y me debe tres nóminas, ¿quién me las paga?", "es", "la empresa ha cerrado",
         "garantía"),
        ("mi empresa está en concurso de acreedores, ¿cobraré lo que me deben?", "es", "concurso de acreedores",
         "insolvencia"),
        # taking the employer's goods: breach of good faith, a disciplinary dismissal (ET art. 54.2.d)
        ("me pillaron llevándome material de la empresa", "es", "llevarme material", "transgresión"),
        ("¿qué pasa si robo en el trabajo?", "es", "robar en el trabajo", "confianza"),
        ("¿me pueden echar por llegar tarde?", "es", "me pueden echar", "despido"),
        # coming late: lack of punctuality, a cause of disciplinary dismissal (ET art. 54.2.a)
        ("siempre llego tarde 10 minutos, ¿me pueden sancionar?", "es", "llegar tarde", "puntualidad"),
        # the deadline to sue, asked with "denunciar" (ET art. 59)
        ("¿cuánto tiempo tengo para denunciar que me han echado?", "es", "denunciar que me han echado",
         "caducidad"),
        ("¿cuántas semanas de permiso tiene el padre cuando nace un bebé?", "es", "nace un bebé", "progenitor"),
        # sick leave during the holidays: taken later (ET art. 38.3)
        ("me han cogido de baja durante las vacaciones, ¿las pierdo?", "es", "de baja durante las vacaciones",
         "coincida"),
        ("me puse enferma en vacaciones", "es", "enferma en vacaciones", "distinta"),
        # cameras at work (ET arts. 20.3, 20 bis), without reading the Cortes' "Cámaras" as cameras
        ("¿el empresario puede poner cámaras en el trabajo?", "es", "cámaras en el trabajo", "videovigilancia"),
        ("¿me pueden grabar en el trabajo? creo que me graban", "es", "me graban", "control"),
        # the retirement age (LGSS art. 205), lasting harm (LGSS arts. 193, 194), the claims' deadline (ET art. 59)
        ("¿a qué edad me puedo jubilar?", "es", "edad me puedo jubilar", "sesenta"),
        ("me han quedado secuelas de un accidente", "es", "secuelas", "permanente"),
        ("mi empresa me debe la liquidación desde hace un año, ¿prescribe?", "es", "prescribe", "prescripción"),
        # protection the employer must give (LPRL art. 17) and the representatives' paid hours (ET art. 68.e)
        ("hay mucho polvo, ¿la empresa tiene que darme protección?", "es", "darme protección", "individual"),
        ("¿nos tienen que dar mascarillas?", "es", "mascarillas", "individual"),
        ("¿cuántas horas sindicales tiene un delegado?", "es", "horas sindicales", "crédito"),
        ("me cambio de casa, ¿tengo un día libre?", "es", "me cambio de casa", "domicilio"),
        # a late salary: the CLT's deadline, the fifth working day of the next month (art. 459 § 1)
        ("a empresa atrasou meu salário, o que posso fazer?", "pt", "atrasando o salário", "quinto"),
        # a pay cut: only by a collective agreement (CF88 art. 7º, VI; CLT art. 468)
        ("o empregador pode reduzir meu salário?", "pt", "reduzir meu salário", "irredutibilidade"),
        ("a empresa diminuiu meu salário sem avisar", "pt", "diminuir meu salário", "acordo"),
        # Brazilian constitutional rights in everyday words (CF88 arts. 5º XXIV, 14 § 3º, 196, 203 V)
        ("o governo pode tomar minha terra?", "pt", "tomar minha terra", "desapropriação"),
        ("a prefeitura vai desapropriar minha casa", "pt", "desapropriar", "indenização"),
        ("quem pode ser presidente da república?", "pt", "ser presidente da república", "elegibilidade"),
        ("o SUS é obrigado a me atender?", "pt", "sus", "universal"),
        ("o posto de saúde pode cobrar pelo atendimento?", "pt", "posto de saúde", "universal"),
        # a flood is the statute's force majeure (CLT art. 501); a night club is the 1967 text's "buates" (art. 405)
        ("a empresa fechou por causa de uma enchente, tenho direito a indenização?", "pt", "enchente", "força"),
        ("menor de 18 anos pode trabalhar de garçom numa boate?", "pt", "boate", "buates"),
        ("quem paga a aposentadoria de quem nunca contribuiu?", "pt", "nunca contribuiu", "independentemente"),
        # one re-election only (CF88 art. 14, § 5º): the stemmer does not join "reeleger" to "reeleitos"
        ("o presidente pode se reeleger quantas vezes?", "pt", "reeleger", "reeleitos"),
        ("existe reeleição para governador?", "pt", "reeleição", "único"),
        # an absence without a justification: a disciplinary cause of dismissal (ET art. 54.2.a)
        ("me han echado por faltar dos días sin justificar, ¿pueden?", "es", "días sin justificar", "injustificadas"),
        ("¿cuántas faltas injustificadas hacen falta para un despido?", "es", "faltas injustificadas", "asistencia"),
        # searching a worker's bag (CLT art. 373-A, VI) and age as a reason to dismiss (CF88 art. 7º, XXX)
        ("a gerente fica revistando minha bolsa, ela pode?", "pt", "revistar minha bolsa", "revistas"),
        ("a empresa pode me demitir por eu ser velho?", "pt", "ser velho", "idade"),
        ("não me contrataram por causa da minha idade", "pt", "por causa da idade", "discriminação"),
    ],
)
def test_everyday_wording_of_common_conflicts_gets_the_statute_terms(table, text, language, key, term):
    matches = table.matches(text, language=language)
    assert key in [k for k, _ in matches]
    assert term in table.terms(text, language=language)


def test_a_collective_agreement_reads_as_neither_a_termination_nor_one_article(table):
    """"acordo coletivo" is the CLT's own term: matched whole, so "acordo" (a termination by mutual agreement, art.
    484-A) never reads it, and expanded with its synonym alone, not with art. 611-A's words: an agreement's duration
    (art. 614) or which instrument prevails (art. 620) is no question on the agreement prevailing over the law."""
    text = "o acordo coletivo da categoria vale por quantos anos?"
    assert [key for key, _ in table.matches(text, language="pt")] == ["acordo coletivo"]
    terms = table.terms(text, language="pt")
    assert "convenção" in terms
    assert not {"prevalência", "extinção", "comum"} & set(terms)
    # "acordo" alone is still the termination by mutual agreement
    assert "extinção" in table.terms("posso fazer um acordo para sair da empresa?", language="pt")


@pytest.mark.parametrize(
    "question, ends, expected",
    [
        ("dame el texto completo del artículo 38 del ET", [], True),
        ("transcreva o art. 7º da CF na íntegra", [], True),
        ("¿qué dice literalmente el artículo 14?", [], True),
        ("o inteiro teor do art. 482 da CLT", [], True),
        ("el artículo 38 del ET completo", [21], True),
        ("o art. 7º da CF, inteiro", [15], True),
        ("art. 12 ET: contrato a tiempo completo", [10], False),
        ("¿qué dice el artículo 38 del ET?", [31], False),
        ("jornada completa según el art. 34", [], False),
    ],
)
def test_asks_for_full_text(question, ends, expected):
    assert asks_for_full_text(question, ends) is expected


@pytest.mark.parametrize(
    "term, misread, misread_language, meant, meant_language",
    [
        # a dismissed employee serving the notice asks about its reduced hours (CLT art. 488), not about owing it
        ("antecedência", "fui demitido e estou cumprindo aviso, posso sair mais cedo?", "pt",
         "pedi demissão, posso sair no mesmo dia?", "pt"),
        # "echar" is also putting in hours and putting the blame on someone: neither is a dismissal
        ("despido", "trabajo a tiempo parcial, ¿me pueden hacer echar horas extras?", "es",
         "me echaron del trabajo sin avisar", "es"),
        ("despido", "me echaron la culpa de un error, ¿me pueden sancionar?", "es",
         "me echaron del trabajo sin avisar", "es"),
        # the Cortes' Cámaras are no cameras
        ("videovigilancia", "¿pueden las Cámaras reunirse en sesión conjunta?", "es",
         "¿el empresario puede poner cámaras en el trabajo?", "es"),
        # "sus" is a Spanish possessive: the Portuguese entry never reaches a Spanish question
        ("saúde", "¿pueden los trabajadores elegir a sus representantes?", "es",
         "o SUS é obrigado a me atender?", "pt"),
        # a broken leg is no bankruptcy, a doctor's prescription no claims' deadline, a CIPA candidacy no election
        ("garantía", "se me quebró la pierna en el trabajo", "es", "la empresa quebró y no me pagan", "es"),
        ("prescripción", "el médico me ha prescrito reposo, ¿me pueden despedir?", "es",
         "me deben la liquidación desde hace un año, ¿prescribe?", "es"),
        ("elegibilidade", "quero ser candidato a cipeiro, tenho estabilidade?", "pt",
         "posso me candidatar a vereador?", "pt"),
        # "revista" is also the appeal, "sin justificar" also a dismissal without a cause
        ("intimidade", "cabe recurso de revista contra a decisão do TRT?", "pt",
         "a empresa pode revistar meus pertences?", "pt"),
        ("asistencia", "la empresa me ha despedido sin justificar nada", "es",
         "me han echado por faltar dos días sin justificar, ¿pueden?", "es"),
    ],
)
def test_a_word_with_a_second_meaning_keeps_it(table, term, misread, misread_language, meant, meant_language):
    assert term not in table.terms(misread, language=misread_language)
    assert term in table.terms(meant, language=meant_language)


def test_the_chambers_of_the_cortes_are_not_cameras(table):
    assert table.matches("¿cuántos diputados tienen las Cámaras?", language="es") == []
