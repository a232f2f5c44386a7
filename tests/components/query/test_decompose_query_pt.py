"""DecomposeQuery's deterministic fallback on Portuguese questions: Portuguese stopwords, Portuguese equivalences."""

from components.query.decompose_query import DECOMPOSE_SYSTEM_PROMPT, DecomposeQuery, clean_query


def test_portuguese_first_question_is_searched_as_written():
    question = "fui mandado embora, tenho direito a alguma coisa?"
    queries = DecomposeQuery(chat_generator=None).run(query=question)
    assert queries["trace"]["path"] == "deterministic" and queries["trace"]["equivalences"] == ["mandado embora"]
    assert queries["queries"] == [question]


def test_portuguese_follow_up_fallback_drops_portuguese_stopwords():
    (query,) = DecomposeQuery(chat_generator=None).run(
        query="e se eu for mandado embora, tenho direito a alguma coisa?", carryover=["c1"]
    )["queries"]
    words = set(query.split())
    assert {"dispensa", "rescisão"} <= words
    assert not {"tenho", "alguma", "coisa", "a", "eu"} & words


def test_spanish_follow_up_fallback_never_gets_portuguese_terms():
    (query,) = DecomposeQuery(chat_generator=None).run(query="¿Y las horas extra del domingo?", carryover=["c1"])["queries"]
    assert "extraordinarias" in query
    assert "sobrejornada" not in query and "suplementares" not in query


def test_portuguese_article_references_are_cleaned_and_the_llm_is_told_the_language():
    assert clean_query("o art. 7º da CF e o artigo 59-A da CLT sobre férias") == "o da CF e o da CLT sobre férias"
    assert "portugués" in DECOMPOSE_SYSTEM_PROMPT and "CLT" in DECOMPOSE_SYSTEM_PROMPT
