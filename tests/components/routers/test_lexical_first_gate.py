import pytest
from haystack import Document

from components.extractors.citation_detector import CitationDetector
from components.document_stores.edge_document_store import EdgeDocumentStore
from components.routers.lexical_first_gate import LexicalFirstGate
from tests.corpus_helpers import ET_2015, markdown_article

ET = "BOE-A-2015-11430"
CE = "BOE-A-1978-31229"


def _doc(doc_id, law_id, law_short, article, level="parent", content="..."):
    return Document(
        id=doc_id, content=content, meta={"law_id": law_id, "law_short": law_short, "article": article, "level": level}
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = EdgeDocumentStore(path=str(tmp_path_factory.mktemp("gate") / "store"))
    s.write_documents(
        [
            _doc("et38", ET, "ET", "38", content=markdown_article(ET_2015, "38")),
            _doc("et38c0", ET, "ET", "38", level="child", content="El periodo de vacaciones anuales retribuidas"),
            _doc("et14", ET, "ET", "14", content=markdown_article(ET_2015, "14")),
            _doc("ce14", CE, "CE", "14", content="Artículo 14. Los españoles son iguales ante la ley..."),
            _doc("ce15", CE, "CE", "15", content="Artículo 15. Todos tienen derecho a la vida..."),
            _doc("et15", ET, "ET", "15", content=markdown_article(ET_2015, "15")),
            _doc("ce122", CE, "CE", "122", content="Artículo 122. ... Consejo General del Poder Judicial ..."),
        ]
    )
    yield s
    s.close()


def _fetch(store, query):
    detected = CitationDetector().run(query=query)
    fetched = store.filter_documents(detected["filters"]) if detected["filters"] else []
    return detected["citations"], fetched


def test_init_and_validation():
    assert LexicalFirstGate().min_results == 3
    with pytest.raises(ValueError, match="min_results"):
        LexicalFirstGate(min_results=0)


def test_to_dict():
    assert LexicalFirstGate(min_results=2).to_dict() == {
        "type": "components.routers.lexical_first_gate.LexicalFirstGate",
        "init_parameters": {"min_results": 2, "enabled": True},
    }


def test_from_dict():
    data = LexicalFirstGate(min_results=4).to_dict()
    assert LexicalFirstGate.from_dict(data).min_results == 4


def test_run_exact_hit_skips_expansion(store):
    citations, fetched = _fetch(store, "¿Cuántos días de vacaciones dice el art. 38 ET?")
    result = LexicalFirstGate().run(citations=citations, documents=fetched)
    assert result["skip_expansion"] is True
    assert result["reason"] == "exact article hit: ET art. 38"
    assert sorted(d.id for d in result["documents"]) == ["et38", "et38c0"]
    assert all(d.score == 1.0 for d in result["documents"])
    assert all(d.meta["score_type"] == "unit" and d.meta["lexical_match"] == "exact" for d in result["documents"])
    assert fetched[0].score is None  # inputs are not modified
    assert not any("whole_text" in d.meta for d in result["documents"])


def test_run_marks_the_exact_hits_whose_whole_wording_is_asked(store):
    citations, fetched = _fetch(store, "el artículo 38 del ET completo, y el 14 de la CE")
    result = LexicalFirstGate().run(citations=citations, documents=fetched)
    assert {d.id for d in result["documents"]} == {"et38", "et38c0", "ce14"}
    assert all(d.meta["whole_text"] is True for d in result["documents"])
    assert not any("whole_text" in d.meta for d in fetched)  # inputs are not modified


def test_run_lawless_citation_unique_in_one_law_is_exact(store):
    citations, fetched = _fetch(store, "¿Qué órgano gobierna el Poder Judicial según el artículo 122?")
    result = LexicalFirstGate().run(citations=citations, documents=fetched)
    assert result["skip_expansion"] is True
    assert [(d.id, d.score) for d in result["documents"]] == [("ce122", 1.0)]


def test_run_ambiguous_lawless_citation_is_weak(store):
    citations, fetched = _fetch(store, "¿Qué dice el artículo 14?")
    result = LexicalFirstGate().run(citations=citations, documents=fetched)
    assert result["skip_expansion"] is False
    assert result["reason"].startswith("weak direct fetch: 2 cited articles")
    assert sorted((d.id, d.score, d.meta["lexical_match"]) for d in result["documents"]) == [
        ("ce14", 0.5, "article"),
        ("et14", 0.5, "article"),
    ]


def test_run_enough_results_without_exact_hit(store):
    citations, fetched = _fetch(store, "¿Qué dicen los artículos 14 y 15?")
    result = LexicalFirstGate(min_results=3).run(citations=citations, documents=fetched)
    assert result["skip_expansion"] is True
    assert result["reason"] == "4 cited articles fetched (min_results 3)"


def test_run_missing_article_and_no_citations(store):
    citations, fetched = _fetch(store, "art. 999 ET")
    result = LexicalFirstGate().run(citations=citations, documents=fetched)
    assert result == {
        "skip_expansion": False,
        "documents": [],
        "reason": "weak direct fetch: 0 cited articles, no exact hit (min_results 3)",
        "missing": ["art. 999 ET"],  # for the answer to say so, not quote a namesake as if it were the one asked
    }
    law_only = CitationDetector().run(query="¿Qué dice el Estatuto de los Trabajadores del despido?")["citations"]
    result = LexicalFirstGate().run(citations=law_only, documents=[_doc("x", ET, "ET", "1")])
    assert result == {
        "skip_expansion": False, "documents": [], "reason": "no article cited in the query", "missing": []}
    # a question about the whole norm reads its first article; a norm without one is not "missing" it
    whole = CitationDetector().run(query="¿Qué es el Estatuto de los Trabajadores?")["citations"]
    assert whole[0]["article"] == "1" and LexicalFirstGate().run(citations=whole, documents=[])["missing"] == []


def test_run_reports_each_cited_article_the_fetch_did_not_find(store):
    citations, fetched = _fetch(store, "¿qué dicen los arts. 38 y 999 del ET y el artículo 14 de la Constitución?")
    result = LexicalFirstGate().run(citations=citations, documents=fetched)
    assert result["skip_expansion"] and result["missing"] == ["ET, art. 999"]  # one of a list: named apart
    citations, fetched = _fetch(store, "¿y según el artículo 777?")  # no law: no law holds it
    assert LexicalFirstGate().run(citations=citations, documents=fetched)["missing"] == ["artículo 777"]
    citations, fetched = _fetch(store, "según el artículo 122")
    assert LexicalFirstGate().run(citations=citations, documents=fetched)["missing"] == []
    # a norm the corpus lacks is the detector's `unknown_norms`, not a missing article
    citations, fetched = _fetch(store, "¿qué dice el artículo 234 del Código Penal?")
    assert LexicalFirstGate().run(citations=citations, documents=fetched)["missing"] == []


def test_run_drops_documents_matching_no_citation():
    citations = [{"law_id": ET, "law": "ET", "article": "38"}]
    fetched = [_doc("a", ET, "ET", "39"), _doc("b", ET, "ET", "38")]
    result = LexicalFirstGate().run(citations=citations, documents=fetched)
    assert [d.id for d in result["documents"]] == ["b"]


def test_run_disabled_never_skips_but_keeps_the_cited_documents(store):
    citations, fetched = _fetch(store, "¿Cuántos días de vacaciones dice el art. 38 ET?")
    for gate, override in ((LexicalFirstGate(enabled=False), None), (LexicalFirstGate(), False)):
        result = gate.run(citations=citations, documents=fetched, enabled=override)
        assert result["skip_expansion"] is False
        assert result["reason"] == "lexical-first gating disabled: expansion runs"
        assert sorted(d.id for d in result["documents"]) == ["et38", "et38c0"]


def test_run_keeps_the_order_the_question_cites_the_articles():
    clt = "DEL-5452-1943"
    citations = CitationDetector().run(query="o que dizem os arts. 391 e 391-A da CLT?")["citations"]
    assert [c["article"] for c in citations][:2] == ["391", "391-a"]
    fetched = [_doc("a391a", clt, "CLT", "391-a"), _doc("x", clt, "CLT", "392"), _doc("a391", clt, "CLT", "391")]
    result = LexicalFirstGate().run(citations=citations, documents=fetched)
    assert [d.id for d in result["documents"]] == ["a391", "a391a"]
    reversed_citations = list(reversed(citations))
    result = LexicalFirstGate().run(citations=reversed_citations, documents=fetched)
    assert [d.id for d in result["documents"]] == ["a391a", "a391"]


def test_run_a_law_less_article_is_exact_in_a_law_the_question_names(store):
    # art. 14 is in the ET and in the CE; the question names the ET with its other citation, in another sentence
    # (joined to it, "el artículo 38 del ET y el artículo 14", it is read as the ET's)
    citations, fetched = _fetch(store, "¿qué dice el artículo 38 del ET? ¿y el artículo 14?")
    result = LexicalFirstGate().run(citations=citations, documents=fetched)
    matches = [(d.meta["law_short"], d.meta["article"], d.meta["lexical_match"]) for d in result["documents"]]
    assert list(dict.fromkeys(matches)) == [("ET", "38", "exact"), ("ET", "14", "exact"), ("CE", "14", "article")]
    citations, fetched = _fetch(store, "¿qué dice el artículo 14?")  # no law named: an article match in both
    result = LexicalFirstGate().run(citations=citations, documents=fetched)
    assert {d.meta["lexical_match"] for d in result["documents"]} == {"article"}


def _article(law_id, law_short, article, country, content):
    lang = "pt" if country == "br" else "es"
    meta = {"law_id": law_id, "law_short": law_short, "article": article, "level": "parent", "country": country,
            "lang": lang}
    return Document(id=f"{law_short}{article}", content=content, meta=meta)


CF88_7 = (
    "Art. 7º São direitos dos trabalhadores urbanos e rurais, além de outros que visem à melhoria de sua condição"
    " social:\n\nI - relação de emprego protegida contra despedida arbitrária;\n\nXVII - gozo de férias anuais"
    " remuneradas com, pelo menos, um terço a mais do que o salário normal;"
)
CLT_7 = "Art. 7º Os preceitos constantes da presente Consolidação não se aplicam:\n\na) aos empregados domésticos;"
ARTICLES_7 = [
    _article("CF88", "CF88", "7", "br", CF88_7),
    _article("DEL-5452-1943", "CLT", "7", "br", CLT_7),
    _article(CE, "CE", "7", "es", "Artículo 7. Los sindicatos de trabajadores y las asociaciones empresariales..."),
]


def test_run_a_law_less_article_is_exact_in_the_only_law_of_the_question_s_jurisdiction():
    gate = LexicalFirstGate()
    citations = CitationDetector().run(query="¿qué dice el artículo 7?")["citations"]
    assert citations[0]["jurisdiction"] == {"language": "es", "source": "language"}
    result = gate.run(citations=citations, documents=ARTICLES_7)
    assert result["reason"] == "exact article hit: CE art. 7"
    # the Brazilian articles 7 are not what a Spanish question without a law asks about: dropped, not article matches
    assert [(d.id, d.meta["lexical_match"]) for d in result["documents"]] == [("CE7", "exact")]
    # two Brazilian laws have an article 7: the Portuguese question alone does not tell which; the CE's is dropped
    citations = CitationDetector().run(query="o que diz o artigo 7º?")["citations"]
    result = gate.run(citations=citations, documents=ARTICLES_7)
    assert [(d.id, d.meta["lexical_match"]) for d in result["documents"]] == [("CF887", "article"), ("CLT7", "article")]
    # no jurisdiction, or none of the fetched laws in it: every article 7 stays an article match
    english = gate.run(citations=[{**citations[0], "jurisdiction": None}], documents=ARTICLES_7)
    assert [d.meta["lexical_match"] for d in english["documents"]] == ["article"] * 3
    french = gate.run(citations=[{**citations[0], "jurisdiction": {"country": "fr", "source": "country"}}],
                      documents=ARTICLES_7)
    assert len(french["documents"]) == 3


def test_run_an_article_of_an_unknown_norm_named_alone_fetches_nothing_of_other_laws():
    for query in ("ley 36/2011 artículo 2", "En la Ley 36/2011, ¿qué dice el artículo 2?"):
        detected = CitationDetector().run(query=query)
        assert [(c["law_id"], c["law"].lower(), c["article"]) for c in detected["citations"]] == [
            (None, "ley 36/2011", "2")]
        assert [n.lower() for n in detected["unknown_norms"]] == ["ley 36/2011"]
        assert detected["filters"] == {"operator": "OR", "conditions": [{"operator": "AND", "conditions": [
            {"field": "meta.law_key", "operator": "==", "value": "ley 36/2011"},
            {"field": "meta.article", "operator": "==", "value": "2"}]}]}  # that norm's article 2 only
    # beside a known law, an article with no law is still fetched (the gate reads it as the known law's)
    detected = CitationDetector().run(query="Según la Ley 36/2011 y el ET, ¿qué dice el artículo 2?")
    assert detected["filters"] == {"operator": "OR", "conditions": [
        {"field": "meta.article", "operator": "==", "value": "2"}]}


def test_run_a_law_less_article_is_exact_in_the_only_law_whose_article_has_the_cited_subdivision():
    citations = CitationDetector().run(query="o que diz o artigo 7º, inciso XVII?")["citations"]
    assert citations[0]["units"] == [("inciso", "XVII")]
    result = LexicalFirstGate().run(citations=citations, documents=ARTICLES_7)
    assert result["skip_expansion"] is True and result["reason"] == "exact article hit: CF88 art. 7"
    assert [d.id for d in result["documents"] if d.meta["lexical_match"] == "exact"] == ["CF887"]
    # a subdivision no article of that number has tells nothing: left as it was
    citations = CitationDetector().run(query="o que diz o artigo 7º, inciso XC?")["citations"]
    result = LexicalFirstGate().run(citations=citations, documents=ARTICLES_7)
    assert {d.meta["lexical_match"] for d in result["documents"]} == {"article"}


def test_run_a_law_less_article_is_exact_in_the_only_law_in_force_that_has_it():
    # the corpus keeps the repealed Estatuto de 1995 beside the one in force: "el artículo 4" alone is the in-force one
    repealed = Document(id="ET19954", content="Artículo 4. Derechos laborales (texto de 1995)...", meta={
        "law_id": "BOE-A-1995-7730", "law_short": "ET1995", "article": "4", "level": "parent", "country": "es",
        "lang": "es", "status": "repealed"})
    in_force = Document(id="ET4", content="Artículo 4. Derechos laborales...", meta={
        "law_id": ET, "law_short": "ET", "article": "4", "level": "parent", "country": "es", "lang": "es",
        "status": "in_force"})
    citations = CitationDetector().run(query="¿qué dice el artículo 4?")["citations"]
    result = LexicalFirstGate().run(citations=citations, documents=[repealed, in_force])
    assert result["reason"] == "exact article hit: ET art. 4"
    assert [(d.id, d.meta["lexical_match"]) for d in result["documents"]] == [("ET4", "exact"), ("ET19954", "article")]
    # the repealed text alone: it is the one read
    result = LexicalFirstGate().run(citations=citations, documents=[repealed])
    assert result["reason"] == "exact article hit: ET1995 art. 4"


def test_run_a_recast_law_s_derogatory_disposition_is_its_approving_decree_s(tmp_path):
    # the ET (a texto refundido) has no "disposición derogatoria" of its own: the decree that approves it has one,
    # stored under the ET as `rd-dd`; the LISOS has its own (`dd`), which is the one quoted
    store = EdgeDocumentStore(path=str(tmp_path / "store"))
    lisos = "BOE-A-2000-15060"
    store.write_documents([
        _doc("etrddd", ET, "ET", "rd-dd", content="Quedan derogadas cuantas disposiciones ..."),
        _doc("etrdunico", ET, "ET", "rd-unico", content="Se aprueba el texto refundido ..."),
        _doc("lisosdd", lisos, "LISOS", "dd", content="Quedan derogadas ... la presente Ley."),
        _doc("lisosrddd", lisos, "LISOS", "rd-unico", content="Se aprueba el texto refundido ..."),
    ])
    for query, expected in (
        ("disposición derogatoria única del ET", [("ET", "rd-dd")]),
        ("artículo único del ET", [("ET", "rd-unico")]),
        ("disposición derogatoria única de la LISOS", [("LISOS", "dd")]),
    ):
        citations, fetched = _fetch(store, query)
        result = LexicalFirstGate().run(citations=citations, documents=fetched)
        assert [(d.meta["law_short"], d.meta["article"]) for d in result["documents"]] == expected, query
        assert {d.meta["lexical_match"] for d in result["documents"]} == {"exact"}
        assert result["missing"] == [], query  # not "No encuentro en la normativa disponible: ..."
    citations, fetched = _fetch(store, "disposición adicional primera del ET")  # numbered: the ET's own only
    assert LexicalFirstGate().run(citations=citations, documents=fetched)["missing"] == [
        "disposición adicional primera del ET"]
