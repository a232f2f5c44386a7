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
