"""ExtractiveAnswer for Portuguese questions over the CLT / CF88: Portuguese wording, Brazilian citations."""

from pathlib import Path

import pytest
from haystack import Document

from components.converters.statute_converter import StatuteConverter
from components.generators.extractive_answer import EXTRACTIVE_INTRO, EXTRACTIVE_TEXTS_PT, ExtractiveAnswer, citation
from components.preprocessors.article_parser import ArticleParser
from components.validators.answer_meta_parser import AnswerMetaParser

CORPUS = Path(__file__).resolve().parents[3] / "data" / "corpus"


@pytest.fixture(scope="module")
def br():
    laws = StatuteConverter().run(sources=[CORPUS / "CLT.md", CORPUS / "CF88.md"])["documents"]
    return {(d.meta["law_short"], d.meta["article"]): d for d in ArticleParser().run(documents=laws)["documents"]}


def test_portuguese_question_gets_a_portuguese_answer_with_clt_citations(br):
    documents = [br[("CLT", "477")], br[("CLT", "478")]]
    answer = ExtractiveAnswer().run(question="qual o prazo para pagar as verbas rescisórias?", documents=documents)
    text = answer["answer"]
    assert text.startswith(EXTRACTIVE_TEXTS_PT["intro"])
    assert EXTRACTIVE_INTRO not in text and "respuesta extractiva" not in text
    assert EXTRACTIVE_TEXTS_PT["note"] in text
    assert "verbas rescisórias no prazo e na forma estabelecidos neste artigo" in text and "(CLT, art. 477)" in text
    assert AnswerMetaParser().run(replies=answer["replies"], context_documents=documents)["used"][0] == 1


def test_cited_article_quoted_first_and_repealed_note_in_portuguese(br):
    documents = [br[("CF88", "7")], br[("CLT", "17")]]
    answer = ExtractiveAnswer().run(question="o que diz o art. 7º da Constituição sobre férias?", documents=documents)
    quotes = [line for line in answer["answer"].splitlines() if line.startswith("- «")]
    assert quotes[0].endswith("(CF88, art. 7º)") and "férias" in quotes[0]
    assert citation(br[("CLT", "17")], "pt") == "CLT, art. 17; norma revogada"
    assert citation(br[("CLT", "17")]) == "CLT, art. 17; norma derogada"


def test_no_documents_in_portuguese():
    text = ExtractiveAnswer().run(question="fui mandado embora grávida, tenho direito a alguma coisa?", documents=[])
    assert text["answer"].startswith(EXTRACTIVE_TEXTS_PT["not_found"])


def test_language_from_the_blocks_when_the_question_says_nothing(br):
    text = ExtractiveAnswer().run(question="CLT 59-A", documents=[br[("CLT", "59-a")]])["answer"]
    assert text.startswith(EXTRACTIVE_TEXTS_PT["intro"]) and "(CLT, art. 59-A)" in text


def _parts(document, at: str) -> list:
    """The article as the store keeps a long one: two parent blocks, the second opening at `at`."""
    head, tail = document.content.split(at, 1)
    meta = {**document.meta, "parts": 2}
    return [Document(content=head, meta={**meta, "part": 1}), Document(content=at + tail, meta={**meta, "part": 2})]


def test_a_cited_inciso_is_quoted_with_its_lead_in_across_the_article_s_parts(br):
    documents = [*_parts(br[("CF88", "7")], "XV - "), br[("CLT", "130")]]
    question = "o que diz o artigo 7º, inciso XVII, da Constituição?"
    answer = ExtractiveAnswer().run(question=question, documents=documents)
    quotes = [line for line in answer["answer"].splitlines() if line.startswith("- «")]
    assert quotes[0].startswith("- «São direitos dos trabalhadores urbanos e rurais")
    assert "[…] XVII - gozo de férias anuais remuneradas" in quotes[0]
    assert quotes[0].endswith("(CF88, art. 7º, inciso XVII)")
    assert not any("relação de emprego protegida" in quote for quote in quotes)  # inciso I is not what was asked
    assert "(CF88, art. 7º)" not in answer["answer"]  # one quote for the article, not one per part
    assert AnswerMetaParser().run(replies=answer["replies"], context_documents=documents)["used"][:2] == [1, 2]


@pytest.mark.parametrize("question", ["art. 477, § 8º, da CLT", "o que diz o § 8º do art. 477 da CLT?"])
def test_a_cited_paragraph_is_quoted_and_cited_as_such(br, question):
    answer = ExtractiveAnswer().run(question=question, documents=[br[("CLT", "477")]])["answer"]
    quote = next(line for line in answer.splitlines() if line.startswith("- «"))
    assert quote.startswith("- «§ 8º A inobservância do disposto no § 6º deste artigo")
    assert quote.endswith("(CLT, art. 477, § 8º)")


def test_a_cited_paragraph_that_opens_lists_is_quoted_with_every_item(br):
    # CF88 art. 14, § 1º: voting is compulsory (I) and optional (II a-c: from 16); before, the quote ended at "II -
    # facultativos para:", without whom it is optional for
    answer = ExtractiveAnswer().run(question="art. 14, § 1º, da CF", documents=[br[("CF88", "14")]])["answer"]
    quote = next(line for line in answer.splitlines() if line.startswith("- «"))
    assert quote.startswith("- «§ 1º O alistamento eleitoral e o voto são: I - obrigatórios para os maiores de")
    listed = "II - facultativos para: a) os analfabetos; b) os maiores de setenta anos; c) os maiores de dezesseis"
    assert listed in quote
    assert "§ 2º" not in quote and quote.endswith("(CF88, art. 14, § 1º)")


def test_a_subdivision_the_article_lacks_quotes_the_article_as_usual(br):
    answer = ExtractiveAnswer().run(question="art. 477, § 99, da CLT", documents=[br[("CLT", "477")]])["answer"]
    quote = next(line for line in answer.splitlines() if line.startswith("- «"))
    assert quote.endswith("(CLT, art. 477)") and "§ 99" not in quote


def test_case_law_is_said_to_be_outside_the_corpus(br):
    question = "o que diz a Súmula 331 do TST sobre terceirização?"
    text = ExtractiveAnswer().run(question=question, documents=[br[("CLT", "455")]])["answer"]
    assert text.splitlines()[0] == "Não estão no corpus indexado, e o que segue não vem delas: Súmula 331 do TST."
    # what the detector found is what is said (here: nothing)
    text = ExtractiveAnswer().run(question=question, documents=[br[("CLT", "455")]], unknown_norms=[])["answer"]
    assert "corpus indexado" not in text.splitlines()[0] and "(CLT, art. 455)" in text


def test_a_cited_article_the_fetch_did_not_find_is_said_missing_before_the_nearest_one(br):
    answer = ExtractiveAnswer().run(question="o que diz o art. 1000 da CLT?", documents=[br[("CLT", "611-b")]],
                                    missing_articles=["art. 1000 da CLT"])["answer"]
    assert answer.splitlines()[0] == (
        "Não encontrei na legislação disponível: art. 1000 da CLT. O que segue são outros artigos.")


def _follow_up_quote(document, first: str, question: str) -> str:
    """The first quote of the extractive answer to `question` asked after `first`, from `document`."""
    from components.extractors.citation_detector import CitationDetector
    from haystack.dataclasses import ChatMessage

    citations = CitationDetector().run(query=question, history=[ChatMessage.from_user(first)])["citations"]
    answer = ExtractiveAnswer().run(question=question, documents=[document], citations=citations)["answer"]
    return next(line for line in answer.splitlines() if line.startswith("- «"))


def test_a_follow_up_s_subdivision_is_quoted_from_the_article_of_the_conversation(br):
    quote = _follow_up_quote(br[("CLT", "477")], "o que diz o art. 477 da CLT?", "e o parágrafo 8º?")
    assert quote.startswith("- «§ 8º A inobservância") and quote.endswith("(CLT, art. 477, § 8º)")


def test_an_article_cited_without_its_law_is_quoted_from_the_law_the_question_names(br):
    documents = [br[("CLT", "3")], br[("CF88", "2")], br[("CLT", "2")]]
    answer = ExtractiveAnswer().run(question="o que diz o art. 3º da CLT e o art. 2º?", documents=documents)["answer"]
    quotes = [line for line in answer.splitlines() if line.startswith("- «")]
    assert [quote.rsplit("(", 1)[1] for quote in quotes] == ["CLT, art. 3º)", "CLT, art. 2º)"]


def test_an_article_cited_with_no_law_is_quoted_from_the_law_the_gate_read_it_in(br):
    from components.extractors.citation_detector import CitationDetector
    from components.routers.lexical_first_gate import LexicalFirstGate

    question = "o que diz o artigo 7º, inciso XVII?"
    citations = CitationDetector().run(query=question)["citations"]
    fetched = [br[("CLT", "7")], br[("CF88", "7")]]
    gated = LexicalFirstGate().run(citations=citations, documents=fetched)["documents"]
    assert [d.meta["law_short"] for d in gated] == ["CF88", "CLT"]  # only the Constitution's has an inciso XVII
    answer = ExtractiveAnswer().run(question=question, documents=[*gated, br[("CLT", "130")]], citations=citations)
    text = answer["answer"]
    assert text.startswith(EXTRACTIVE_TEXTS_PT["intro"])  # not "no sentence matched": the cited article is quoted
    quote = next(line for line in text.splitlines() if line.startswith("- «"))
    assert "XVII - gozo de férias anuais remuneradas" in quote and quote.endswith("(CF88, art. 7º, inciso XVII)")


def test_a_cited_letter_is_quoted_with_its_letter_after_the_lead_in(br):
    quote = _follow_up_quote(br[("CLT", "482")], "o que diz o art. 482 da CLT?", "e a alínea b?")
    assert quote.startswith("- «Constituem justa causa para rescisão do contrato de trabalho pelo empregador: […] b) ")
    assert quote.endswith("(CLT, art. 482, alínea b)")


def test_a_turn_naming_only_a_country_is_answered_from_what_was_found_for_it(br):
    # "¿y en Brasil?" has no word of its own to match: the best block answers it, under the usual intro
    answer = ExtractiveAnswer().run(question="e no Brasil?", documents=[br[("CLT", "130")], br[("CLT", "134")]])
    text = answer["answer"]
    assert text.startswith(EXTRACTIVE_TEXTS_PT["intro"]) and not text.startswith(EXTRACTIVE_TEXTS_PT["no_match"])
    assert "(CLT, art. 130)" in text
    # a question whose words match nothing is still told so
    unmatched = ExtractiveAnswer().run(question="e o xadrez no Brasil?", documents=[br[("CLT", "130")]])["answer"]
    assert unmatched.startswith(EXTRACTIVE_TEXTS_PT["no_match"])


def test_an_article_opening_with_a_list_is_quoted_with_its_items_when_no_word_matched(br):
    # "explica melhor" after "o que diz o art. 482 da CLT?": no word of the turn is in the article, which is a list
    quote = _follow_up_quote(br[("CLT", "482")], "o que diz o art. 482 da CLT?", "explica melhor")
    assert quote.startswith("- «Constituem justa causa para rescisão do contrato de trabalho pelo empregador: a) ato")
    assert "b) incontinência de conduta" in quote and "c) negociação habitual" in quote  # not the first item alone


def test_a_law_that_leaves_out_the_group_the_question_names_is_said_first_and_its_quote_left_unmarked(br):
    """The CLT leaves domestic employees out (art. 7, a): the answer says so, and names their own law, before quoting."""
    from components.validators.citation_verifier import CitationVerifier

    mark = {"group": "empregados domésticos", "article": "7", "own_law": "Lei Complementar nº 150/2015"}
    holidays = br[("CLT", "129")]
    marked = Document(id=holidays.id, content=holidays.content, meta={**holidays.meta, "left_out": mark})
    question = "sou empregada doméstica, tenho direito a férias?"
    answer = ExtractiveAnswer().run(question=question, documents=[br[("CF88", "7")], marked])["answer"]
    assert answer.splitlines()[0] == (
        "CLT, art. 7: esta norma não rege diretamente empregados domésticos, que a pergunta menciona; a lei própria é "
        "Lei Complementar nº 150/2015, que não está no corpus indexado. O que segue dessa norma pode não se aplicar.")
    assert "(CLT, art. 129)" in answer
    # the notice's own citations (CLT art. 7, not among the quoted blocks; a law the corpus lacks) are not marked
    context = [br[("CF88", "7")], marked]
    verified = CitationVerifier().run(answer=answer, context_documents=context)
    assert verified["answer"] == answer and verified["unverified_citations"] == []
    unmarked = [br[("CF88", "7")], holidays]  # the same text against blocks without the mark: it is checked
    assert CitationVerifier().run(answer=answer, context_documents=unmarked)["unverified_citations"]
    # without the mark, no notice
    plain = ExtractiveAnswer().run(question=question, documents=[br[("CF88", "7")], holidays])["answer"]
    assert "não rege diretamente" not in plain


def test_a_norm_whose_changes_the_consolidated_text_carries_is_not_said_absent(br):
    # the CLT's art. 71 holds the wording the Lei 13.467/2017 gave its § 4º ("Redação dada pela Lei nº 13.467, de
    # 2017"): the law is not in the corpus as a text of its own, but its change is
    question = "a Lei 13.467/2017 mudou o intervalo para almoço?"
    text = ExtractiveAnswer().run(question=question, documents=[br[("CLT", "71")], br[("CF88", "7")]],
                                  unknown_norms=["Lei 13.467/2017"])["answer"]
    first = text.splitlines()[0]
    assert first == ("Lei 13.467/2017 não está no corpus como texto próprio, mas o texto consolidado indexado já traz "
                     "as alterações que ela fez, entre elas em: CLT, art. 71.")
    assert "não estão no corpus indexado" not in text.lower() and "(CLT, art. 71" in text
    # a norm no quoted block's notes name is still said absent; one only pointed at ("Vide") too
    text = ExtractiveAnswer().run(question="a Lei 8.036/1990 fala do intervalo?", documents=[br[("CLT", "71")]],
                                  unknown_norms=["Lei 8.036/1990"])["answer"]
    assert text.splitlines()[0] == "Não estão no corpus indexado, e o que segue não vem delas: Lei 8.036/1990."
