"""Tests for components.legal.legal_text: sentence splitting, article keys, numerals, accents, language."""

from pathlib import Path

import pytest

from components.legal.legal_text import (
    blank_spans,
    adjacent_key,
    cardinal_to_int,
    leading_cardinal,
    detect_language,
    detect_query_language,
    repealed_provision,
    fold_accents,
    normalize_article_key,
    ordinal_to_int,
    roman_to_int,
    split_sentences,
    unit_marker,
    unit_range,
    unshout,
)
from tests.corpus_helpers import CE, ET_2015, markdown_article
from tests.linear_time import linear_time

CORPUS = Path(__file__).resolve().parents[3] / "data" / "corpus"


def _same_chars(text: str, sentences: list[str]) -> bool:
    """Every non-space character of `text` is kept, in order."""
    return "".join(text.split()) == "".join("".join(sentences).split())


# -- accents and numerals -------------------------------------------------------------------------------------


def test_fold_accents():
    assert fold_accents("Disposición transitoria única, año, ção") == "Disposicion transitoria unica, ano, cao"
    assert fold_accents("1.º y 2.ª") == "1.º y 2.ª"  # ordinal indicators are not letters with accents


@pytest.mark.parametrize(
    "word, value",
    [
        ("primero", 1), ("Primera", 1), ("tercer", 3), ("séptima", 7), ("décimo", 10), ("undécima", 11),
        ("duodécimo", 12), ("decimotercera", 13), ("décima tercera", 13), ("decimoctava", 18),
        ("decimonovena", 19), ("vigésima", 20), ("vigésimo primero", 21), ("vigesimoprimera", 21),
        ("vigesimoctava", 28), ("trigésima segunda", 32), ("cuadragésima cuarta", 44),
        ("quincuagésima novena", 59), ("sexagésima", 60), ("sexagésima primera", 61), ("primeira", 1),
    ],
)
def test_ordinal_to_int(word, value):
    assert ordinal_to_int(word) == value


@pytest.mark.parametrize("word", ["", "segundos", "decimal", "vigésimas primeras", "artículo"])
def test_ordinal_to_int_rejects_non_ordinals(word):
    assert ordinal_to_int(word) is None


@pytest.mark.parametrize(
    "word, value",
    [
        ("uno", 1), ("diez", 10), ("quince", 15), ("dieciséis", 16), ("veintitrés", 23), ("treinta y dos", 32),
        ("cien", 100), ("ciento treinta y cinco", 135), ("doscientos", 200), ("novecientos noventa y nueve", 999),
        ("dois", 2), ("dezesseis", 16), ("quatorze", 14), ("vinte e um", 21), ("cem", 100),
        ("cento e trinta e cinco", 135), ("quatrocentos e setenta e sete", 477), ("Quarenta-e-Quatro", 44),
    ],
)
def test_cardinal_to_int(word, value):
    assert cardinal_to_int(word) == value


@pytest.mark.parametrize(
    "word", ["", "treinta y diez", "ciento", "cento", "dos y tres", "uno dos", "vinte e dez", "mil"]
)
def test_cardinal_to_int_rejects_what_is_not_one_number(word):
    assert cardinal_to_int(word) is None


def test_leading_cardinal_takes_the_longest_number_and_counts_its_words():
    assert leading_cardinal(["cuarenta", "y", "ocho", "del", "estatuto"]) == (48, 3)
    assert leading_cardinal(["cento", "e", "trinta", "e", "cinco", "da", "clt"]) == (135, 5)
    assert leading_cardinal(["ciento", "diez"]) == (110, 2)
    assert leading_cardinal(["dos", "y", "tres"]) == (2, 1)  # a list of two articles, not one number
    assert leading_cardinal(["doscientos", "de", "la", "ley"]) == (200, 1)
    assert leading_cardinal(["ciento", "de"]) is None
    assert leading_cardinal(["estatuto"]) is None
    assert leading_cardinal([]) is None


@pytest.mark.parametrize(
    "key, step, expected",
    [
        ("38", 1, "39"), ("38", -1, "37"), ("1", -1, None), ("da1", 1, "da2"), ("dt13", -1, "dt12"),
        ("adct-10", 1, "adct-11"), ("38 bis", 1, "39"), ("38 bis", -1, "38"), ("59-a", 1, "60"), ("59-a", -1, "59"),
        ("unico", 1, None), ("da", 1, None), ("38", 2, None),
    ],
)
def test_adjacent_key_steps_by_number(key, step, expected):
    assert adjacent_key(key, step) == expected


def test_roman_to_int():
    assert [roman_to_int(n) for n in ("I", "IV", "IX", "XIV", "XXI", "XL")] == [1, 4, 9, 14, 21, 40]
    assert roman_to_int("IIII") is None
    assert roman_to_int("iv") is None
    assert roman_to_int("") is None


# -- article keys ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, kind, key",
    [
        ("38", "articulo", "38"),
        ("38.", "articulo", "38"),
        ("2 bis", "articulo", "2 bis"),
        ("4 ter", "articulo", "4 ter"),
        ("19 quinquies", "articulo", "19 quinquies"),
        ("primero", "articulo", "1"),
        ("Primera", "articulo", "1"),
        ("diez", "articulo", "10"),
        ("decimotercera", "articulo", "13"),
        ("único", "articulo", "unico"),
        ("única", "articulo", "unico"),
        ("93 a 97", "articulo", "93-97"),
        ("primera", "adicional", "da1"),
        ("vigésima segunda", "adicional", "da22"),
        ("vigesimoprimera", "adicional", "da21"),
        ("decimoquinta", "adicional", "da15"),
        ("novena bis", "adicional", "da9 bis"),
        ("vigésima ter", "adicional", "da20 ter"),
        ("única", "adicional", "da"),
        ("segunda", "transitoria", "dt2"),
        ("cuadragésima quinta", "transitoria", "dt45"),
        ("única", "derogatoria", "dd"),
        ("", "derogatoria", "dd"),
        ("primera", "derogatoria", "dd1"),
        ("primera", "final", "df1"),
        ("sexta bis", "final", "df6 bis"),
        ("", "final", "df"),
        ("1º", "articulo", "1"),
        ("1.º", "articulo", "1"),
        ("5º-A", "articulo", "5-a"),
        ("29-A.", "artigo", "29-a"),
        ("I", "anexo", "anexo1"),
        ("II", "anexo", "anexo2"),
        ("", "anexo", "anexo"),
        # a label in the raw text overrides the kind
        ("Artículo 38", "articulo", "38"),
        ("Art. 5º-A", "articulo", "5-a"),
        ("Disposición adicional primera", "articulo", "da1"),
        ("Disposición transitoria trigésima quinta [sic]", "articulo", "dt35"),
        ("Disposición derogatoria única", "articulo", "dd"),
    ],
)
def test_normalize_article_key(raw, kind, key):
    assert normalize_article_key(raw, kind) == key


def test_normalize_article_key_unknown_kind():
    with pytest.raises(ValueError, match="Unknown article kind"):
        normalize_article_key("1", "capitulo")


def test_normalize_article_key_unparseable():
    assert normalize_article_key("Preliminar X") == "preliminar x"
    with pytest.raises(ValueError, match="Cannot parse"):
        normalize_article_key("de la Ley", strict=True)


# -- sentences ------------------------------------------------------------------------------------------------


def test_split_sentences_reads_a_long_run_of_marks_in_linear_time():
    with linear_time():  # each start inside a run of dots with no space after it used to scan the run to its end
        assert split_sentences("Texto " + "." * 100_000 + "x fin.") == ["Texto " + "." * 100_000 + "x fin."]
        assert split_sentences("Uno... Dos?! Tres.") == ["Uno...", "Dos?!", "Tres."]


def test_split_sentences_basic_and_empty():
    assert split_sentences("") == []
    assert split_sentences("  \n\n ") == []
    assert split_sentences("Primera frase. Segunda frase. ¿Tercera? ¡Cuarta!") == [
        "Primera frase.", "Segunda frase.", "¿Tercera?", "¡Cuarta!"
    ]


@pytest.mark.parametrize(
    "text",
    [
        "Según el art. 38 del ET, las vacaciones son de treinta días.",
        "Lo dispuesto en los arts. 14 y 15 del Estatuto es aplicable.",
        "Publicado en el BOE núm. 46, de 22 de febrero de 1996.",
        "Véase el apdo. 2 y los apdos. 3 y 4 de la norma.",
        "Comparecen la Sra. García, el Sr. López y Dña. Elena Ruiz ante el Excmo. Sr. Ministro.",
        "Firmado por D. Juan Pérez y el Ilmo. Sr. Director General.",
        "Según la pág. 12 del cap. 3 de la obra citada.",
        "Conforme a la disp. adic. segunda y la disp. transit. primera.",
        "La empresa Ejemplo S.A. contrató a tres personas.",
        "Se incluyen libros, papeles, etc. y demás enseres.",
        "La cuantía asciende a 1.500,50 euros anuales.",
        "El apartado 3.1.b) del artículo 2.º será aplicable.",
        "El 1.º de mayo y el 2.ª convocatoria son casos distintos.",
        "La norma se publicó el 24.03.1995 en el diario oficial.",
        "Artículo 38. Vacaciones anuales.",
        "Disposición adicional primera. Comunicación del contenido de los contratos.",
        "CAPÍTULO II. Contenido del contrato de trabajo",
    ],
)
def test_split_sentences_keeps_one_sentence(text):
    assert split_sentences(text) == [text]


def test_split_sentences_etc_before_uppercase_ends_sentence():
    assert split_sentences("Todo ello, etc. Después vino otro.") == ["Todo ello, etc.", "Después vino otro."]


def test_split_sentences_numbered_paragraphs():
    text = (
        "1. El periodo de vacaciones no será inferior a treinta días naturales. La fecha se fijará de común acuerdo."
        "\n\n2. El calendario de vacaciones se fijará en cada empresa.\n\n«3. Texto citado.»"
    )
    assert split_sentences(text) == [
        "1. El periodo de vacaciones no será inferior a treinta días naturales.",
        "La fecha se fijará de común acuerdo.",
        "2. El calendario de vacaciones se fijará en cada empresa.",
        "«3. Texto citado.»",
    ]


def test_split_sentences_inline_enumeration():
    assert split_sentences("Son causas las siguientes: 1. El despido. 2. La dimisión.") == [
        "Son causas las siguientes: 1. El despido.",
        "2. La dimisión.",
    ]


def test_split_sentences_word_enumerators():
    text = "Uno. Se modifica el artículo 2.\nDos. Se suprime el artículo 3.\nPrimera. Entrada en vigor."
    assert split_sentences(text) == ["Uno. Se modifica el artículo 2.", "Dos. Se suprime el artículo 3.", "Primera. Entrada en vigor."]


def test_split_sentences_list_items_are_boundaries():
    text = "Son derechos:\na) la ocupación efectiva;\nb) la promoción\ny formación profesional;\nc) la no discriminación."
    assert split_sentences(text) == [
        "Son derechos:",
        "a) la ocupación efectiva;",
        "b) la promoción y formación profesional;",  # lowercase continuation of an unpunctuated line: soft wrap
        "c) la no discriminación.",
    ]


def test_split_sentences_soft_wrap_and_newlines():
    text = "Esta línea la cortó el PDF y\ncontinúa en la siguiente. Fin.\nNueva línea sin punto\nOtra línea"
    assert split_sentences(text) == [
        "Esta línea la cortó el PDF y continúa en la siguiente.",
        "Fin.",
        "Nueva línea sin punto",
        "Otra línea",
    ]


def test_split_sentences_quotes_and_omissions():
    assert split_sentences("El trabajador dijo: «No acepto.» La empresa respondió.") == [
        "El trabajador dijo: «No acepto.»",
        "La empresa respondió.",
    ]
    assert split_sentences("La norma (...) La regla sigue.") == ["La norma (...) La regla sigue."]


def test_split_sentences_portuguese():
    text = (
        "**Art. 5º** Todos são iguais perante a lei. O inciso IV do art. 5º, conforme a Lei nº 8.213, prevalece. "
        "Nos termos do § 2º do art. 14, inc. II, al. b, a lei dispõe.\n\n I - a soberania;\n\n II - a cidadania;"
        "\n\n **§ 1º** Será assegurada gratuidade.\n\n**Art. 10.** Compete à União legislar."
    )
    sentences = split_sentences(text, lang="pt")
    assert sentences == [
        "**Art. 5º** Todos são iguais perante a lei.",
        "O inciso IV do art. 5º, conforme a Lei nº 8.213, prevalece.",
        "Nos termos do § 2º do art. 14, inc. II, al. b, a lei dispõe.",
        "I - a soberania;",
        "II - a cidadania;",
        "**§ 1º** Será assegurada gratuidade.",
        "**Art. 10.** Compete à União legislar.",
    ]
    assert _same_chars(text, sentences)


def test_split_sentences_unknown_language_uses_all_abbreviations():
    assert split_sentences("Ver apdo. 3 y Ltda. Empresa.", lang="en") == ["Ver apdo. 3 y Ltda. Empresa."]


def test_split_sentences_preserves_every_character_of_real_statutes():
    for name in ("BOE-A-2015-11430.md", "CF88.md"):
        text = (CORPUS / name).read_text(encoding="utf-8")[:60000]
        sentences = split_sentences(text, lang="pt" if name == "CF88.md" else "es")
        assert len(sentences) > 200
        assert all(s and s == s.strip() for s in sentences)
        assert _same_chars(text, sentences)


def test_split_sentences_real_article():
    text = (CORPUS / "BOE-A-2015-11430.md").read_text(encoding="utf-8")
    start = text.index("##### Artículo 38.")
    article = text[start : text.index("##### Artículo 39.")].replace("##### ", "")
    sentences = split_sentences(article)
    assert sentences[0] == "Artículo 38. Vacaciones anuales."
    assert sentences[1].startswith("1. El periodo de vacaciones anuales retribuidas")
    assert sentences[2] == "En ningún caso la duración será inferior a treinta días naturales."
    assert _same_chars(article, sentences)


# -- language -------------------------------------------------------------------------------------------------


def test_detect_language():
    assert detect_language((CORPUS / "CF88.md").read_text(encoding="utf-8")) == "pt"
    assert detect_language((CORPUS / "BOE-A-1999-346.md").read_text(encoding="utf-8")) == "es"
    assert detect_language("The quick brown fox jumps over the lazy dog.", default="es") == "es"


@pytest.mark.parametrize(
    "question, language",
    [
        ("fui mandado embora grávida, tenho direito a alguma coisa?", "pt"),
        ("to quase 2 anos sem tirar ferias pq o patrao nunca libera", "pt"),
        ("o que diz o art. 477 da CLT?", "pt"),
        ("¿Cuántos días de vacaciones tengo?", "es"),
        ("me han despedido estando de baja, ¿es legal?", "es"),
        ("pacto de no competencia sin compensacion", "es"),
        # a conversation's short turns, and a refused question, are answered in their language
        ("explica melhor", "pt"),
        ("explícamelo mejor", "es"),
        ("quem ganhou a copa?", "pt"),
        ("gracias", "es"),
        # a greeting gets its refusal in its language
        ("olá, tudo bem?", "pt"),
        ("oi", "pt"),
        ("buenas tardes", "es"),
        ("ajuda", "pt"),
        # words neither list holds tell by their endings: "-ción(es)" / "-sión" against "-ção" / "-são", unaccented
        ("kuantos dias d bacaciones tngo", "es"),
        ("rescisao indireta", "pt"),
        ("pensao por morte", "pt"),
        # "é" (is), and the accented "-ário" / "-ório" Spanish writes unaccented ("obligatorio", "salario")
        ("votar é obrigatório no Brasil?", "pt"),
        ("a casa é asilo inviolável?", "pt"),
        ("horário de trabalho", "pt"),
        ("¿es obligatorio el horario?", "es"),
    ],
)
def test_detect_query_language(question, language):
    assert detect_query_language(question) == language


def test_detect_query_language_takes_an_english_question_for_neither():
    # "do" is a Portuguese word: the English ones outnumber it
    assert detect_query_language("How many days of paid holiday do I get in Spain?") is None
    assert detect_query_language("Can my boss fire me for being late?", default="es") == "es"
    # a Spanish citation inside an English frame is still Spanish
    assert detect_query_language("What does artículo 14 de la Constitución say?") == "es"


def test_detect_query_language_without_evidence_returns_default():
    assert detect_query_language("art. 38 ET") is None
    assert detect_query_language("CLT 59-A", default="es") == "es"
    assert detect_query_language("") is None
    # a disposition's abbreviation in capitals is no Portuguese "da": "DA 7ª LGSS" was answered in Portuguese
    assert detect_query_language("DA 7ª LGSS") is None and detect_query_language("D.A. única ET") is None
    assert detect_query_language("a primeira parcela da gratificação") == "pt"
    # case law tells its country: "Súmula 85 TST" was refused in Spanish
    assert detect_query_language("Súmula 85 TST") == "pt" and detect_query_language("STS 1234/2020") == "es"


def test_detect_query_language_weighs_words_both_languages_write_at_half():
    from components.legal.legal_text import detect_query_language

    # Spanish "o" (or) and "da" (gives) are Portuguese articles / contractions too: they no longer outvote Spanish
    assert detect_query_language("contrato para obra o servicio determinado") == "es"
    assert detect_query_language("¿me da derecho a paro?") == "es"
    assert detect_query_language("cuantos dias de vacaciones me tocan") == "es"
    # ... and still carry a short Portuguese question when nothing else speaks
    assert detect_query_language("o que diz o art. 477 da CLT?") == "pt"
    assert detect_query_language("ha algum prazo?") == "pt"
    assert detect_query_language("me ha despedido mi jefe") == "es"
    assert detect_query_language("CLT 59-A") is None


def test_fold_accents_matches_nfd_without_combining_marks_and_bounds_its_table():
    import random
    import unicodedata

    from components.legal import legal_text

    def reference(text):
        decomposed = unicodedata.normalize("NFD", text)
        return unicodedata.normalize("NFC", "".join(ch for ch in decomposed if not unicodedata.combining(ch)))

    rng = random.Random(7)
    samples = ["Disposición adicional", "ção", "ñandú", "1.º y 2.ª", "§ 4º", "e\u0301", "a\u20dd", "\u3099か", "Ǆ", "ﬁ"]
    samples += ["".join(chr(rng.randrange(0x20, 0x30000)) for _ in range(40)) for _ in range(500)]
    assert [fold_accents(text) for text in samples] == [reference(text) for text in samples]
    assert fold_accents("Articulo 38") == "Articulo 38"
    assert all(code < 0x3000 for code in legal_text._DROP_COMBINING_MARKS)  # a caller cannot grow it without bound


# -- subdivisions of an article ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "marker"),
    [
        ("2. El periodo o periodos de su disfrute se fijará de común acuerdo", ("apartado", "2")),
        ("b) Por las causas consignadas válidamente en el contrato", ("letra", "b")),
        ("b bis) Dos días por el fallecimiento del cónyuge", ("letra", "b bis")),  # ET art. 37.3, since 2023
        ("§ 8º A inobservância do disposto no § 6º deste artigo", ("paragrafo", "8")),
        ("§ 10. O disposto neste artigo", ("paragrafo", "10")),
        ("Parágrafo único. São assegurados à categoria dos trabalhadores domésticos", ("paragrafo", "unico")),
        ("XVII - gozo de férias anuais remuneradas", ("inciso", "XVII")),
        ("1.El trabajador tendrá derecho:", ("apartado", "1")),  # a BOE text without the space
        ("1.500 euros al mes", None),
        ("El despido se considerará procedente", None),
        ("Irredutibilidade do salário", None),
    ],
)
def test_unit_marker(sentence, marker):
    assert unit_marker(sentence) == marker


CF88_ART_7 = [
    "São direitos dos trabalhadores urbanos e rurais, além de outros que visem à melhoria de sua condição social:",
    "I - relação de emprego protegida contra despedida arbitrária ou sem justa causa;",
    "XVI - remuneração do serviço extraordinário superior, no mínimo, em cinqüenta por cento à do normal;",
    "XVII - gozo de férias anuais remuneradas com, pelo menos, um terço a mais do que o salário normal;",
    "XVIII - licença à gestante, sem prejuízo do emprego e do salário, com a duração de cento e vinte dias;",
    "Parágrafo único. São assegurados à categoria dos trabalhadores domésticos os direitos previstos.",
]
ADCT_ART_10 = [
    "Até que seja promulgada a lei complementar a que se refere o art. 7º, I, da Constituição:",
    "I - fica limitada a proteção nele referida ao aumento, para quatro vezes, da porcentagem prevista;",
    "II - fica vedada a dispensa arbitrária ou sem justa causa:",
    "a) do empregado eleito para cargo de direção de comissões internas de prevenção de acidentes;",
    "b) da empregada gestante, desde a confirmação da gravidez até cinco meses após o parto.",
    "§ 1º Até que a lei venha a disciplinar o disposto no art. 7º, XIX, da Constituição, o prazo será de 5 dias",
]


def test_unit_range_finds_a_brazilian_inciso_and_alinea_with_their_lead_in():
    assert unit_range(CF88_ART_7, [("inciso", "XVII")]) == (0, 3, 4)
    assert unit_range(CF88_ART_7, [("paragrafo", "unico")]) == (None, 5, 6)
    assert unit_range(CF88_ART_7, [("caput", "")]) == (None, 0, 1)
    # the inciso runs over its alíneas, up to the next paragraph; the alínea is introduced by its inciso
    assert unit_range(ADCT_ART_10, [("inciso", "II")]) == (0, 2, 5)
    assert unit_range(ADCT_ART_10, [("inciso", "II"), ("letra", "b")]) == (2, 4, 5)
    assert unit_range(ADCT_ART_10, [("letra", "b")]) == (2, 4, 5)
    assert unit_range(ADCT_ART_10, [("paragrafo", "1")]) == (None, 5, 6)
    assert unit_range(ADCT_ART_10, [("inciso", "III")]) is None
    assert unit_range(ADCT_ART_10, [("paragrafo", "2")]) is None
    assert unit_range(ADCT_ART_10, []) is None


def test_unit_range_on_a_spanish_article_keeps_the_apartado_s_unnumbered_paragraphs():
    sentences = split_sentences(markdown_article(ET_2015, "38").split("\n", 1)[1])
    lead, start, end = unit_range(sentences, [("apartado", "2")])
    assert lead is None and sentences[start].startswith("2. El periodo o periodos de su disfrute")
    assert any("la jurisdicción social fijará la fecha" in s for s in sentences[start:end])
    assert sentences[end].startswith("3. El calendario de vacaciones")
    sentences = split_sentences(markdown_article(ET_2015, "49").split("\n", 1)[1])
    lead, start, end = unit_range(sentences, [("apartado", "1"), ("letra", "b")])
    assert sentences[lead] == "1. El contrato de trabajo se extinguirá:"
    assert sentences[start].startswith("b) Por las causas consignadas válidamente en el contrato") and end == start + 1


def test_unit_range_reads_ordinal_items_as_rules_inside_their_apartado():
    # CE art. 149.1 lists its matters as "1.ª", "2.ª"...: not apartados 1, 2 ("149.2" was read as "2.ª Nacionalidad")
    sentences = split_sentences(markdown_article(CE, "149").split("\n", 1)[1])
    assert unit_marker("7.ª Legislación laboral; sin perjuicio de su ejecución") == ("regla", "7")
    assert unit_marker("1.º La infracción grave del artículo 22.3 se sancionará") == ("regla", "1")
    lead, start, end = unit_range(sentences, [("apartado", "1"), ("regla", "7")])
    assert sentences[lead].startswith("1. El Estado tiene competencia exclusiva sobre las siguientes materias:")
    assert sentences[start].startswith("7.ª Legislación laboral") and end == start + 1
    _, start, _ = unit_range(sentences, [("apartado", "2")])
    assert sentences[start].startswith("2. Sin perjuicio de las competencias que podrán asumir")
    assert unit_range(sentences, [("apartado", "1"), ("regla", "40")]) is None


def test_blank_spans_replaces_each_span_by_one_space_and_a_shared_span_once():
    question = "¿qué dicen los arts. 40 y 41 ET sobre la movilidad geográfica?"
    # the two citations of the list share one span: blanked once, nothing after it lost
    assert blank_spans(question, [[15, 31], [15, 31]]) == "¿qué dicen los   sobre la movilidad geográfica?"
    assert blank_spans("a b c d", [(6, 7), (0, 1), (2, 5)]) == " " * 5  # in any order
    assert blank_spans("abcdef", [(1, 4), (2, 5)]) == "a f"  # overlapping spans: one
    assert blank_spans("sin citas", []) == "sin citas"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("QUANTO TEMPO TENHO PARA ENTRAR NA JUSTIÇA?", "quanto tempo tenho para entrar na justiça?"),
        ("¿CUÁNTOS DÍAS DE VACACIONES TENGO? gracias", "¿cuántos días de vacaciones tengo? gracias"),
        ("CLT art. 477", "CLT art. 477"),  # capitals are a part of it
        ("¿qué dice el ET sobre la LGSS?", "¿qué dice el ET sobre la LGSS?"),
        ("ART. 38 ET", "ART. 38 ET"),  # too short to tell
        ("1234 5678 ???", "1234 5678 ???"),
    ],
)
def test_unshout_reads_a_text_typed_in_capitals_in_lower_case(text, expected):
    assert unshout(text) == expected


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("§ 7º (Revogado).", "revogado"),
        ("a) (revogado);", "revogado"),
        ("XII - (VETADO)", "vetado"),
        ("4. (Suprimido).", "suprimido"),
        ("2. (Derogado)", "derogado"),
        ("(Sin contenido)", "sin contenido"),
        ("Parágrafo único. (Revogada)", "revogada"),
        ("§ 6º A entrega ... até dez dias (revogado o prazo anterior).", None),
        ("a) Por mutuo acuerdo de las partes.", None),
    ],
)
def test_repealed_provision_reads_a_provision_that_is_only_its_repeal_marker(text, kind):
    assert repealed_provision(text) == kind
