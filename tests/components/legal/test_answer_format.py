from components.legal.answer_format import article_citation


def test_article_citation_spells_the_article_as_the_statute_writes_it():
    assert article_citation({"article": "38", "article_label": "Artículo 38"}) == "art. 38"
    assert article_citation({"article": "2 bis", "article_label": "Artículo 2 bis"}) == "art. 2 bis"
    # the store keys lettered articles in lower case ("391-a"); the statute writes "Art. 391-A"
    assert article_citation({"article": "391-a", "article_label": "Art. 391-A"}) == "art. 391-A"
    assert article_citation({"article": "da1", "article_label": "Disposición adicional primera"}) == (
        "disposición adicional primera")
    assert article_citation({"article": "7"}) == "art. 7"  # no label: the key
    assert article_citation({}) == ""
