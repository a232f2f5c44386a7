from components.legal.jurisdiction import (
    COUNTRY_LANGUAGE,
    LANGUAGE_COUNTRY,
    countries_named,
    country_readings,
    question_jurisdiction,
    without_countries,
)

LAW_COUNTRY = {"DEL-5452-1943": "br", "CF88": "br", "BOE-A-2015-11430": "es", "BOE-A-1978-31229": "es"}.get


def test_countries_named_reads_names_and_demonyms_in_both_languages():
    assert countries_named("¿Qué dice la ley brasileña sobre el despido?") == {"br"}
    assert countries_named("como funciona o aviso prévio no BRASIL") == {"br"}
    assert countries_named("a lei espanhola sobre férias") == {"es"}
    assert countries_named("las vacaciones en España") == {"es"}
    assert countries_named("How many days of paid holiday do I get in Spain?") == {"es"}
    assert countries_named("Spanish labour law on overtime") == {"es"}
    assert countries_named("¿cuántos días de vacaciones tengo?") == set()
    assert countries_named("") == set()


def test_question_jurisdiction_precedence_law_then_country_then_language():
    # the norm named wins over the language and over a country named
    assert question_jurisdiction("¿Qué dice la CLT de las vacaciones en España?",
                                 cited_law_ids=["DEL-5452-1943"], law_country=LAW_COUNTRY) == {
        "country": "br", "source": "law"}
    assert question_jurisdiction("o que a lei espanhola diz sobre férias?") == {"country": "es", "source": "country"}
    assert question_jurisdiction("¿cuántos días de vacaciones tengo?") == {"language": "es", "source": "language"}
    assert question_jurisdiction("fui mandado embora grávida, tenho direito a quê?") == {
        "language": "pt", "source": "language"}


def test_question_jurisdiction_gives_none_for_comparisons_and_unknown_language():
    assert question_jurisdiction("ET y CLT", cited_law_ids=["BOE-A-2015-11430", "DEL-5452-1943"],
                                 law_country=LAW_COUNTRY) is None
    assert question_jurisdiction("vacaciones en España o en Brasil?") is None
    assert question_jurisdiction("12x36") is None  # no evidence of either language
    # a cited law of unknown country falls through to the next source
    assert question_jurisdiction("¿qué dice la Ley 8.213?", cited_law_ids=["LEI-8213"]) == {
        "language": "es", "source": "language"}


def test_language_and_country_tables_agree():
    for language, country in LANGUAGE_COUNTRY.items():
        assert COUNTRY_LANGUAGE[country] == language


def test_in_jurisdiction_reads_the_country_or_the_language_the_jurisdiction_names():
    from components.legal.jurisdiction import in_jurisdiction

    clt = {"country": "br", "lang": "pt"}
    portugal = {"country": "pt", "lang": "pt"}
    et = {"country": "es", "lang": "es"}
    by_language = question_jurisdiction("tenho direito a férias?")
    assert in_jurisdiction(clt, by_language) and in_jurisdiction(portugal, by_language)  # any law written in it
    assert in_jurisdiction(et, by_language) is False
    by_country = question_jurisdiction("como são as férias no Brasil?")
    assert in_jurisdiction(clt, by_country) and in_jurisdiction(portugal, by_country) is False
    assert in_jurisdiction({}, by_country) is None  # the meta does not say: left where it is


def test_country_readings_read_a_question_once_per_country_it_names():
    assert country_readings("¿Cuántos días de vacaciones hay en España y en Brasil?") == [
        "¿Cuántos días de vacaciones hay en y en Brasil?",  # br first (sorted), Spain left out
        "¿Cuántos días de vacaciones hay en España y en ?",
    ]
    readings = country_readings("a lei brasileira e a espanhola sobre horas extras")
    assert [countries_named(reading) for reading in readings] == [{"br"}, {"es"}]
    assert country_readings("¿Cuántos días de vacaciones hay en España?") == []
    assert country_readings("") == []


def test_without_countries_leaves_out_the_names_of_countries():
    assert without_countries("¿y en Brasil?") == "¿y en ?"
    assert without_countries("e na Espanha, pela lei espanhola?") == "e na , pela lei ?"
    assert without_countries("¿y en Brasil y España?", ["es"]) == "¿y en Brasil y ?"
    assert without_countries("¿cuántos días de vacaciones tengo?") == "¿cuántos días de vacaciones tengo?"
