import re

import pytest
from haystack import Document

from components.legal.answer_format import UNVERIFIED_MARK
from components.validators.citation_verifier import CitationVerifier
from components.document_stores.edge_document_store import EdgeDocumentStore
from tests.corpus_helpers import ET_2015, markdown_article

ET = "BOE-A-2015-11430"
ET_META = {"law_id": ET, "law_short": "ET", "law_title": "Estatuto de los Trabajadores", "rank": 2,
           "status": "in_force", "level": "parent"}


def _article(number, **extra):
    return Document(
        id=f"et{number}", content=markdown_article(ET_2015, number), meta={**ET_META, "article": number, **extra}
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = EdgeDocumentStore(path=str(tmp_path_factory.mktemp("verifier") / "store"))
    s.write_documents([_article("38"), _article("48"), _article("14")])
    yield s
    s.close()


ANSWER = (
    "Según el artículo 38 del Estatuto de los Trabajadores, las vacaciones no se sustituyen por dinero. "
    "Si estás de baja, el art. 48 ET regula la reincorporación, y el artículo 999 del Estatuto de los "
    "Trabajadores te da una semana más. Insisto: artículo 999 del Estatuto de los Trabajadores."
)


def test_init_and_validation(store):
    assert CitationVerifier().document_store is None
    assert CitationVerifier(document_store=store).document_store is store
    with pytest.raises(ValueError, match="filter_documents"):
        CitationVerifier(document_store=object())


def test_to_dict(store):
    data = CitationVerifier(document_store=store, aliases={"TRET": "ET"}).to_dict()
    assert data["type"] == "components.validators.citation_verifier.CitationVerifier"
    assert data["init_parameters"]["document_store"]["type"] == "components.document_stores.edge_document_store.EdgeDocumentStore"
    assert data["init_parameters"]["aliases"] == {"TRET": "ET"}


def test_from_dict(store):
    data = CitationVerifier(document_store=store, aliases={"TRET": "ET"}).to_dict()
    restored = CitationVerifier.from_dict(data)
    assert isinstance(restored.document_store, EdgeDocumentStore)
    assert restored.to_dict() == data


def test_run_flags_non_existent_and_out_of_context_articles(store):
    result = CitationVerifier(document_store=store).run(answer=ANSWER, context_documents=[_article("38")])
    assert [(c["law_id"], c["article"]) for c in result["verified_citations"]] == [(ET, "38")]
    assert [(c["article"], c["reason"]) for c in result["unverified_citations"]] == [
        ("48", "not_in_context"),  # exists in the index, but the model was not given it
        ("999", "not_in_index"),  # does not exist
    ]
    assert result["unverified_citations"][1]["text"] == "artículo 999 del Estatuto de los Trabajadores"
    answer = result["answer"]
    assert f"el art. 48 ET {UNVERIFIED_MARK} regula" in answer
    assert answer.count(f"artículo 999 del Estatuto de los Trabajadores {UNVERIFIED_MARK}") == 2
    assert f"artículo 38 del Estatuto de los Trabajadores {UNVERIFIED_MARK}" not in answer
    # idempotent: verifying the marked answer again adds no second mark
    again = CitationVerifier(document_store=store).run(answer=answer, context_documents=[_article("38")])
    assert again["answer"] == answer


def test_run_without_store_everything_missing_is_not_in_context():
    result = CitationVerifier().run(answer=ANSWER, context_documents=[_article("38")])
    assert {c["reason"] for c in result["unverified_citations"]} == {"not_in_context"}


def test_run_law_only_lawless_and_unknown_law_citations(store):
    verifier = CitationVerifier(document_store=store)
    context = [_article("38"), Document(content="...", meta={"law_id": "X", "law_short": "Ley 3/2023", "article": "5"})]
    answer = (
        "El Estatuto de los Trabajadores lo regula y el artículo 38 lo concreta. La Constitución también. "
        "Véase el artículo 5 de la Ley 3/2023 y el artículo 7 de la Ley 3/2023."
    )
    result = verifier.run(answer=answer, context_documents=context)
    verified = [(c["law"], c["article"]) for c in result["verified_citations"]]
    assert verified == [("ET", None), (None, "38"), ("Ley 3/2023", "5")]
    unverified = [(c["law"], c["article"], c["reason"]) for c in result["unverified_citations"]]
    assert unverified == [("CE", None, "not_in_index"), ("Ley 3/2023", "7", "not_in_context")]
    assert f"La Constitución {UNVERIFIED_MARK} también" in result["answer"]


def test_run_answer_without_citations(store):
    result = CitationVerifier(document_store=store).run(answer="Tienes 30 días naturales.", context_documents=[])
    assert result == {"answer": "Tienes 30 días naturales.", "unverified_citations": [], "verified_citations": []}


CLT_META = {"law_id": "DEL-5452-1943", "law_short": "CLT", "status": "in_force", "level": "parent", "lang": "pt"}
CLT_444 = Document(
    id="clt444",
    content="Art. 444.\n\nAs relações contratuais de trabalho podem ser objeto de livre estipulação das partes "
            "interessadas em tudo quanto não contravenha às disposições de proteção ao trabalho.\n\nParágrafo único. "
            "A livre estipulação a que se refere o caput deste artigo aplica-se às hipóteses previstas no art. 611-A "
            "desta Consolidação, com a mesma eficácia legal e preponderância sobre os instrumentos coletivos.",
    meta={**CLT_META, "article": "444"},
)


def test_a_cross_reference_inside_a_verbatim_quote_is_the_statutes_not_the_answers(store):
    """The extractive answer quotes art. 444, which cites art. 611-A: not a claim of the answer, not marked."""
    quoted = (
        "Estes são os trechos da legislação mais relevantes para a sua pergunta:\n\n"
        "- «As relações contratuais de trabalho podem ser objeto de livre estipulação das partes interessadas […] "
        "A livre estipulação a que se refere o caput deste artigo aplica-se às hipóteses previstas no art. 611-A "
        "desta Consolidação, com a mesma eficácia legal…» (CLT, art. 444)"
    )
    result = CitationVerifier(document_store=store).run(answer=quoted, context_documents=[CLT_444])
    assert result["answer"] == quoted and result["unverified_citations"] == []
    assert [(c["law_id"], c["article"]) for c in result["verified_citations"]] == [("DEL-5452-1943", "444")]
    # the same reference in the answer's own words, or in a quotation the context does not hold, is checked
    own = "Segundo o art. 611-A da CLT, o acordo coletivo prevalece sobre a lei."
    result = CitationVerifier().run(answer=own, context_documents=[CLT_444])
    assert [c["article"] for c in result["unverified_citations"]] == ["611-a"]
    assert "art. 611-A da CLT [citação não verificada], o acordo" in result["answer"]  # the mark in Portuguese
    forged = "- «O art. 611-A da CLT permite reduzir o intervalo para quinze minutos.» (CLT, art. 444)"
    result = CitationVerifier().run(answer=forged, context_documents=[CLT_444])
    assert [c["article"] for c in result["unverified_citations"]] == ["611-a"]
    assert UNVERIFIED_MARK not in result["answer"] and "[citação não verificada]" in result["answer"]


# ((law id, short name, article) of the block, its text, the extractive answer quoting it): the quote is not a substring of the block as a whole
QUOTED_STATUTES = {
    # the extractive answer drops the paragraph numbers it joins: each sentence is still the block's
    "numbered paragraphs joined": (
        ("BOE-A-1978-31229", "CE", "114"),
        "Artículo 114\n\n1. Si el Congreso niega su confianza al Gobierno, éste presentará su dimisión al Rey, "
        "procediéndose a continuación a la designación de Presidente del Gobierno, según lo dispuesto en el "
        "artículo 99.\n\n2. Si el Congreso adopta una moción de censura, el Gobierno presentará su dimisión al Rey.",
        "- «Si el Congreso niega su confianza al Gobierno, éste presentará su dimisión al Rey, procediéndose a "
        "continuación a la designación de Presidente del Gobierno, según lo dispuesto en el artículo 99. Si el "
        "Congreso adopta una moción de censura, el Gobierno presentará su dimisión al Rey.» (CE, art. 114)",
    ),
    # a statute that quotes: the quotation marks nest
    "a quote within the quote": (
        ("BOE-A-1985-16660", "LOLS", "preambulo"),
        "EXPOSICIÓN DE MOTIVOS\n\nUno de los principios jurídicos fundamentales es el contenido en el artículo 28, "
        "1, de la Constitución española de 1978, el cual reconoce el derecho a la libertad sindical de «todos a "
        "sindicarse libremente», y el artículo 7.º de la Constitución lo concreta.",
        "- «Uno de los principios jurídicos fundamentales es el contenido en el artículo 28, 1, de la Constitución "
        "española de 1978, el cual reconoce el derecho a la libertad sindical de «todos a sindicarse libremente», "
        "y el artículo 7.º de la Constitución lo concreta.» (LOLS, preámbulo)",
    ),
}


@pytest.mark.parametrize("case", list(QUOTED_STATUTES))
def test_the_statutes_cross_references_in_extractive_quotes_are_left_alone(case):
    (law_id, short, article), content, answer = QUOTED_STATUTES[case]
    block = Document(id=case, content=content,
                     meta={"law_id": law_id, "law_short": short, "article": article, "level": "parent"})
    result = CitationVerifier().run(answer=answer, context_documents=[block])
    assert result["answer"] == answer and result["unverified_citations"] == []


def test_a_norm_the_question_cites_and_the_corpus_lacks_may_be_named_not_cited(store):
    verifier = CitationVerifier(document_store=store)
    answer = ("El Código Penal no está en el corpus indexado. Del Estatuto de los Trabajadores, el artículo 38 fija "
              "las vacaciones; el artículo 234 del Código Penal no puedo citarlo.")
    result = verifier.run(answer=answer, context_documents=[_article("38")], unknown_norms=["Código Penal"])
    assert [(c["law"], c["article"]) for c in result["unverified_citations"]] == [("Código Penal", "234")]
    assert result["answer"].startswith("El Código Penal no está") and UNVERIFIED_MARK in result["answer"]
    # without the question's reading, the bare mention is marked too: no context block is from that norm
    marked = verifier.run(answer=answer, context_documents=[_article("38")])
    assert ("Código Penal", None) in [(c["law"], c["article"]) for c in marked["unverified_citations"]]


def test_the_notice_of_an_article_the_fetch_did_not_find_is_not_marked_but_a_claim_about_it_is(store):
    verifier = CitationVerifier(document_store=store)
    notice = "No encuentro en la normativa disponible: artículo 999 del ET. Lo que sigue son otros artículos."
    answer = f"{notice}\n\n- «El periodo de vacaciones anuales retribuidas...» (ET, art. 38)"
    result = verifier.run(answer=answer, context_documents=[_article("38")], missing_articles=["artículo 999 del ET"])
    assert result["answer"] == answer and result["unverified_citations"] == []
    marked = verifier.run(answer=answer, context_documents=[_article("38")])
    assert [(c["law"], c["article"]) for c in marked["unverified_citations"]] == [("ET", "999")]
    # a model writing what the missing article "says" is still caught
    claim = "El artículo 999 del ET establece un permiso retribuido de diez días."
    caught = verifier.run(answer=claim, context_documents=[_article("38")], missing_articles=["artículo 999 del ET"])
    assert [(c["law"], c["article"]) for c in caught["unverified_citations"]] == [("ET", "999")]


def test_a_disposition_of_the_decree_approving_a_texto_refundido_is_verified_as_quoted():
    # the extractive answer cites the decree's own disposition as "... del Real Decreto Legislativo 2/2015" (its key
    # `rd-dd`, apart from the recast's own dispositions): read back, it must be the block it came from
    decree_dd = Document(content="Queda derogado el texto refundido del Estatuto de los Trabajadores de 1995.",
                         meta={**ET_META, "article": "rd-dd", "article_label": "Disposición derogatoria única",
                               "law_title": "Real Decreto Legislativo 2/2015, de 23 de octubre"})
    answer = "«Queda derogado el texto.» (ET, disposición derogatoria única del Real Decreto Legislativo 2/2015)"
    result = CitationVerifier().run(answer=answer, context_documents=[decree_dd])
    assert [c["article"] for c in result["verified_citations"] if c["article"]] == ["rd-dd"]
    assert result["unverified_citations"] == [] and UNVERIFIED_MARK not in result["answer"]
    # named by the recast law's name it is still the decree's (a texto refundido repeals nothing: `decree_key`)
    named = CitationVerifier().run(answer="Véase la disposición derogatoria única del ET.",
                                   context_documents=[decree_dd])
    assert named["unverified_citations"] == []
    # a numbered disposition of the recast law is its own: not backed by the decree's
    other = CitationVerifier().run(answer="Véase la disposición final primera del ET.", context_documents=[decree_dd])
    assert [c["article"] for c in other["unverified_citations"]] == ["df1"]


def test_every_article_of_the_bundled_corpus_quoted_as_the_extractive_answer_cites_it_is_verified():
    # the label the answer writes must read back as the block it quotes: "(LGSS, art. único del Real Decreto
    # Legislativo 8/2015)" was read as the LGSS's own "unico" and our own quote marked unverified; a provision the
    # statute numbers as an earlier one ("[sic]", keyed "dt35-2") is verified by that number
    from components.converters.statute_converter import StatuteConverter
    from components.generators.extractive_answer import citation
    from components.preprocessors.article_parser import ArticleParser
    from tests.corpus_helpers import CORPUS

    articles = ArticleParser().run(documents=StatuteConverter().run(sources=[CORPUS])["documents"])["documents"]
    verifier = CitationVerifier()
    marked = []
    for article in articles:
        if re.fullmatch(r"\d+-\d+", str(article.meta["article"])):
            continue  # a block of several articles (ET 1995 "Artículos 93 a 97")
        label = citation(article, str(article.meta.get("lang") or "es"))
        result = verifier.run(answer=f"«Texto.» ({label})", context_documents=[article])
        if result["unverified_citations"]:
            marked.append(label)
    assert len(articles) > 2800 and marked == []


def test_the_law_an_out_of_scope_notice_names_is_neither_verified_nor_marked():
    # "benefícios do INSS (Lei 8.213/1991)": the notice says the corpus lacks that law; a model's article of it is
    # still marked, since no context block backs it
    notice = ("Sua pergunta parece tratar de benefícios do INSS (Lei 8.213/1991), cuja legislação não está no corpus "
              "indexado: o que segue é o mais próximo que ele contém e pode não respondê-la.")
    matters = ["benefícios do INSS (Lei 8.213/1991)"]
    told = CitationVerifier().run(answer=notice, context_documents=[], out_of_scope=matters)
    assert told["unverified_citations"] == [] and told["answer"] == notice
    assert [c["law"] for c in CitationVerifier().run(answer=notice, context_documents=[])["unverified_citations"]] == [
        "Lei 8.213/1991"]
    article = CitationVerifier().run(answer="O art. 60 da Lei 8.213/1991 diz...", context_documents=[],
                                     out_of_scope=matters)
    assert [c["article"] for c in article["unverified_citations"]] == ["60"]
