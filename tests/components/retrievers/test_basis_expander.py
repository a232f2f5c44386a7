import pytest
from haystack import Document
from haystack.document_stores.types import DuplicatePolicy

from components.document_stores.edge_document_store import EdgeDocumentStore
from components.retrievers.basis_expander import BasisExpander
from tests.corpus_helpers import CORPUS
from tests.reference_fixtures import ET, DEFAULT_PATHS, block, parent_blocks

CLT = "DEL-5452-1943"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """The parent blocks of CF88, the CLT and the ET in an embedded store (no vectors: the expander reads by meta)."""
    store = EdgeDocumentStore(path=str(tmp_path_factory.mktemp("bases") / "store"))
    blocks = parent_blocks(CORPUS / "CF88.md", CORPUS / "CLT.md") + parent_blocks(*DEFAULT_PATHS)
    store.write_documents(list(blocks), policy=DuplicatePolicy.OVERWRITE)
    return store


def _ranking(store, *articles):
    return [block(store, law, article, score=1.0 - i / 10) for i, (law, article) in enumerate(articles)]


def _keys(documents):
    return [(d.meta["law_id"], d.meta["article"]) for d in documents]


def test_init_and_validation(tmp_path):
    store = EdgeDocumentStore(path=str(tmp_path / "s"))
    expander = BasisExpander(document_store=store)
    assert (expander.source_articles, expander.enabled, expander.bases_file) == (2, True, None)
    with pytest.raises(ValueError, match="source_articles"):
        BasisExpander(document_store=store, source_articles=0)
    with pytest.raises(ValueError, match="does not exist"):
        BasisExpander(document_store=store, bases_file=str(tmp_path / "none.yaml"))


def test_to_dict_from_dict(tmp_path):
    expander = BasisExpander(document_store=EdgeDocumentStore(path=str(tmp_path / "s")), source_articles=1)
    data = expander.to_dict()
    assert data["type"] == "components.retrievers.basis_expander.BasisExpander"
    assert data["init_parameters"]["source_articles"] == 1
    restored = BasisExpander.from_dict(data)
    assert (restored.source_articles, restored.enabled) == (1, True)
    assert restored.document_store.to_dict() == expander.document_store.to_dict()


def test_run_puts_the_constitutional_basis_right_after_its_article(store):
    """Overtime: art. 59 da CLT, then art. 7º da Constituição, in the block holding inciso XVI."""
    ranking = _ranking(store, (CLT, "59"), (CLT, "61"), (CLT, "241"))
    result = BasisExpander(document_store=store).run(documents=ranking)
    out = result["documents"]
    assert _keys(out) == [(CLT, "59"), ("CF88", "7"), (CLT, "61")]  # as long as the input
    assert result["bases"] == [f"CF88 7 inciso XVI <- {CLT} 59"]  # what the request trace records
    basis = out[1]
    assert "XVI - remuneração do serviço extraordinário" in basis.content
    assert basis.meta["expansion"] == "basis" and basis.meta["expanded_from"] == ranking[0].id
    assert basis.meta["basis_units"] == [["inciso", "XVI"]] and basis.meta["basis_of"] == "CLT, art. 59"
    assert ranking[1].score < basis.score < ranking[0].score
    # the ADCT's job security of the pregnant employee after art. 391-A
    out = BasisExpander(document_store=store).run(documents=_ranking(store, (CLT, "391-a"), (CLT, "487")))
    assert _keys(out["documents"]) == [(CLT, "391-a"), ("CF88", "adct-10")]
    assert out["documents"][1].meta["basis_units"] == [["inciso", "II"], ["letra", "b"]]
    assert out["documents"][1].meta["basis_of"] == "CLT, art. 391-A"  # as the statute writes it


def test_the_first_source_wins_and_a_lower_basis_moves_up(store):
    # art. 58 (inciso XIII) is second, art. 59 (inciso XVI) first: one art. 7, the first source's subdivision
    out = BasisExpander(document_store=store).run(documents=_ranking(store, (CLT, "59"), (CLT, "58"), (CLT, "61")))
    assert _keys(out["documents"]) == [(CLT, "59"), ("CF88", "7"), (CLT, "58")]
    assert out["bases"] == [f"CF88 7 inciso XVI <- {CLT} 59"]
    assert out["documents"][1].meta["basis_units"] == [["inciso", "XVI"]]
    # the basis ranked lower: moved up, the ranking as long
    ranking = _ranking(store, (CLT, "392"), (CLT, "396"), (CLT, "473"), ("CF88", "7"))
    out = BasisExpander(document_store=store).run(documents=ranking)["documents"]
    assert _keys(out) == [(CLT, "392"), ("CF88", "7"), (CLT, "396"), (CLT, "473")]
    assert "XVIII - licença à gestante" in out[1].content


def test_a_basis_ranked_at_its_place_or_above_stays(store):
    ranking = _ranking(store, ("CF88", "7"), (CLT, "59"), (CLT, "61"))
    assert BasisExpander(document_store=store).run(documents=ranking)["documents"] == ranking


def test_only_the_first_articles_bring_their_basis(store):
    ranking = _ranking(store, (CLT, "61"), (CLT, "241"), (CLT, "59"))
    assert BasisExpander(document_store=store).run(documents=ranking) == {"documents": ranking, "bases": []}
    result = BasisExpander(document_store=store, source_articles=3).run(documents=ranking)
    assert _keys(result["documents"]) == [(CLT, "61"), (CLT, "241"), (CLT, "59")]  # the basis would be 4th: cut
    assert result["bases"] == []  # and is not said to be placed
    out = BasisExpander(document_store=store, source_articles=3).run(documents=ranking + [ranking[0]])["documents"]
    assert _keys(out)[3] == ("CF88", "7")


def test_named_laws_filters_and_flags(store):
    ranking = _ranking(store, (CLT, "59"), (CLT, "61"))
    expander = BasisExpander(document_store=store)
    # "o que diz a CLT sobre horas extras?" names the CLT only: no basis from another law
    assert expander.run(documents=ranking, named_laws=[CLT])["documents"] == ranking
    # naming the constitution too: its provision on the matter first
    both = expander.run(documents=ranking, named_laws=[CLT, "CF88"])["documents"]
    assert _keys(both)[:2] == [("CF88", "7"), (CLT, "59")]
    # the request's access filter: a basis it may not read is not added
    hidden = {"field": "meta.law_id", "operator": "!=", "value": "CF88"}
    assert expander.run(documents=ranking, filters=hidden)["documents"] == ranking
    assert expander.run(documents=ranking, enabled=False)["documents"] == ranking
    assert BasisExpander(document_store=store, enabled=False).run(documents=ranking)["documents"] == ranking
    assert expander.run(documents=[])["documents"] == []
    with pytest.raises(ValueError):
        expander.run(documents=ranking, named_laws="CF88")


def test_a_question_naming_the_constitution_gets_the_basis_of_any_article_first(store):
    """
    "o que diz a constituição sobre hora extra?": CF88 art. 7, XVI, via CLT art. 59 however low it ranks, before
    CF88 art. 36 (federal intervention: "convocação extraordinária ... vinte e quatro horas"), found by its words.
    """
    ranking = _ranking(store, ("CF88", "36"), (CLT, "241"), (CLT, "250"), (CLT, "59"), (CLT, "61"))
    result = BasisExpander(document_store=store).run(documents=ranking, named_laws=["CF88"])
    out = result["documents"]
    assert _keys(out) == [("CF88", "7"), ("CF88", "36"), (CLT, "241"), (CLT, "250"), (CLT, "59")]
    assert out[0].meta["expanded_from"] == ranking[3].id and out[0].meta["basis_units"] == [["inciso", "XVI"]]
    assert out[0].score > ranking[0].score  # its place's score, not its source's
    assert result["bases"] == [f"CF88 7 inciso XVI <- {CLT} 59"]
    # after the articles the question cites, which the re-ranker put first ("o art. 10, II, b, do ADCT ...")
    cited = [Document(id=d.id, content=d.content, meta={**d.meta, "lexical_match": "exact"}, score=d.score)
             for d in _ranking(store, ("CF88", "36"))]
    out = BasisExpander(document_store=store).run(documents=cited + ranking[1:], named_laws=["CF88"])["documents"]
    assert _keys(out)[:2] == [("CF88", "36"), ("CF88", "7")]
    # the constitution's article already ranked above its source on its own merits stays where it is
    own = _ranking(store, (CLT, "241"), ("CF88", "7"), (CLT, "59"))
    assert BasisExpander(document_store=store).run(documents=own, named_laws=["CF88"])["documents"] == own
    # without naming it, only the first two articles' bases: CLT 241 and 250 have none
    assert BasisExpander(document_store=store).run(documents=ranking[1:])["documents"] == ranking[1:]


def test_the_basis_of_a_law_that_leaves_out_the_group_goes_first(store):
    """
    "sou empregada doméstica, tenho direito a férias?": the re-ranker marks the CLT's blocks (art. 7, a, leaves
    domestic employees out); CF88 art. 7, XVII (holidays, a right art. 7's parágrafo único gives them) goes first.
    """
    mark = {"group": "empregados domésticos", "article": "7", "own_law": "Lei Complementar nº 150/2015"}
    ranking = [
        Document(id=d.id, content=d.content, meta={**d.meta, "left_out": mark}, score=d.score)
        for d in _ranking(store, (CLT, "136"), (CLT, "129"), (CLT, "134"))
    ]
    result = BasisExpander(document_store=store).run(documents=ranking)
    assert _keys(result["documents"]) == [("CF88", "7"), (CLT, "136"), (CLT, "129")]
    assert result["documents"][0].meta["basis_units"] == [["inciso", "XVII"]]
    assert result["documents"][0].meta["expanded_from"] == ranking[1].id  # art. 129, holidays, regulates XVII
    # unmarked, the same basis follows its source
    plain = _ranking(store, (CLT, "136"), (CLT, "129"), (CLT, "134"))
    assert _keys(BasisExpander(document_store=store).run(documents=plain)["documents"]) == [
        (CLT, "136"), (CLT, "129"), ("CF88", "7")]


def test_articles_without_a_basis_pass_unchanged(store):
    """The ET has no listed basis (the CE states its labour rights as principles); blocks without meta neither."""
    ranking = [block(store, ET, "38", score=1.0), block(store, ET, "34", score=0.9), Document(content="x", score=0.5)]
    assert BasisExpander(document_store=store).run(documents=ranking)["documents"] == ranking


def test_a_table_naming_a_subdivision_the_text_lacks_adds_nothing(store, tmp_path, caplog):
    path = tmp_path / "bases.yaml"
    path.write_text("CF88:\n  '7':\n    - {units: [[inciso, XCIX]], regulated_by: {DEL-5452-1943: ['59']}}\n",
                    encoding="utf-8")
    ranking = _ranking(store, (CLT, "59"), (CLT, "61"))
    with caplog.at_level("WARNING"):
        assert BasisExpander(document_store=store, bases_file=str(path)).run(documents=ranking)["documents"] == ranking
    assert "no block of CF88 art. 7 holds" in caplog.text  # the table and the text disagree: said


def test_a_store_without_the_basis_article_adds_nothing_and_says_nothing(store, tmp_path, caplog):
    """A deployment that indexes the CLT alone (or a request that may not read the constitution): no basis."""
    clt_only = EdgeDocumentStore(path=str(tmp_path / "clt"))
    clt_only.write_documents(store.filter_documents({"field": "meta.law_id", "operator": "==", "value": CLT}))
    ranking = [Document(id=d.id, content=d.content, meta=d.meta, score=1.0) for d in clt_only.filter_documents(
        {"field": "meta.article", "operator": "==", "value": "59"})]
    assert ranking
    with caplog.at_level("WARNING"):
        result = BasisExpander(document_store=clt_only).run(documents=ranking)
    assert result == {"documents": ranking, "bases": []} and "no block" not in caplog.text
