"""DecomposeQuery's deterministic fallback on Portuguese questions: Portuguese stopwords, Portuguese equivalences."""

from components.query.decompose_query import DECOMPOSE_SYSTEM_PROMPT, DecomposeQuery, clean_query


def test_portuguese_fallback_adds_clt_terms_and_drops_portuguese_stopwords():
    queries = DecomposeQuery(chat_generator=None).run(query="fui mandado embora, tenho direito a alguma coisa?")
    assert queries["fallback"] is True
    words = queries["queries"][0].split()
    assert {"dispensa", "rescisão"} <= set(words)
    assert not {"tenho", "alguma", "coisa", "a"} & set(words)


def test_spanish_fallback_never_gets_portuguese_terms():
    query = DecomposeQuery(chat_generator=None).run(query="¿Me pagan la hora extra del domingo?")["queries"][0]
    assert "sobrejornada" not in query and "suplementares" not in query


def test_portuguese_article_references_are_cleaned_and_the_llm_is_told_the_language():
    assert clean_query("o art. 7º da CF e o artigo 59-A da CLT sobre férias") == "o da CF e o da CLT sobre férias"
    assert "portugués" in DECOMPOSE_SYSTEM_PROMPT and "CLT" in DECOMPOSE_SYSTEM_PROMPT
