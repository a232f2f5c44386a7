import pytest

from components.document_stores.edge_document_store import EdgeDocumentStore
from components.retrievers.cited_block_expander import CitedBlockExpander
from tests.reference_fixtures import DEFAULT_PATHS, ET, RD, block, build_store


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return build_store(tmp_path_factory.mktemp("refs") / "store", *DEFAULT_PATHS)


def test_init_and_validation(tmp_path):
    store = EdgeDocumentStore(path=str(tmp_path / "s"))
    expander = CitedBlockExpander(document_store=store)
    assert (expander.max_refs_per_document, expander.score_factor, expander.max_documents) == (3, 0.8, 15)
    with pytest.raises(ValueError, match="score_factor"):
        CitedBlockExpander(document_store=store, score_factor=0)
    with pytest.raises(ValueError, match="max_documents"):
        CitedBlockExpander(document_store=store, max_documents=-1)
    with pytest.raises(TypeError):
        CitedBlockExpander(store)  # keyword-only


def test_to_dict_from_dict(tmp_path):
    expander = CitedBlockExpander(document_store=EdgeDocumentStore(path=str(tmp_path / "s")), max_documents=4, enabled=False)
    data = expander.to_dict()
    assert data["init_parameters"]["max_documents"] == 4 and data["init_parameters"]["enabled"] is False
    restored = CitedBlockExpander.from_dict(data)
    assert isinstance(restored.document_store, EdgeDocumentStore)
    assert (restored.max_documents, restored.enabled) == (4, False)


def test_run_follows_refs_upward_with_siblings_and_inherited_score(store):
    source = block(store, RD, "3", score=0.9)  # RD 2720/1998 (rank 4) art. 3 -> ET art. 15 (rank 2, 8 parts)
    result = CitedBlockExpander(document_store=store).run(documents=[source])
    added = {(d.meta["law_id"], d.meta["article"], d.meta["part"]): d for d in result["expanded"]}
    assert (ET, "15", 1) in added and added[(ET, "15", 1)].meta["expansion"] == "ref"
    assert added[(ET, "15", 1)].score == pytest.approx(0.72)
    assert added[(ET, "15", 1)].meta["expanded_from"] == source.id
    assert all((ET, "15", part) in added for part in range(2, 9))  # the cited article's siblings came along
    assert result["documents"][0].id == source.id and len(result["documents"]) == 1 + len(added)
    assert len(added) <= 15


def test_run_never_follows_refs_downward(store):
    et_15 = block(store, ET, "15", score=0.9)
    # give the law block a ref to a regulation block (rank 4 > 2): not followed
    rd = block(store, RD, "3")
    et_15.meta["refs"] = [rd.id]
    result = CitedBlockExpander(document_store=store).run(documents=[et_15])
    assert rd.id not in {d.id for d in result["expanded"]}
    assert {d.meta["expansion"] for d in result["expanded"]} == {"sibling"}  # ET 15 parts 2..8
    assert len(result["expanded"]) == 7


def test_run_caps_highest_parent_wins_and_filters(store):
    first, second = block(store, ET, "49", score=1.0), block(store, ET, "49", part=2, score=0.5)
    result = CitedBlockExpander(document_store=store, max_documents=4).run(documents=[second, first])
    assert len(result["expanded"]) == 4
    assert max(d.score for d in result["expanded"]) == pytest.approx(0.8)  # from the best source
    rd_only = {"field": "meta.law_id", "operator": "==", "value": RD}
    filtered = CitedBlockExpander(document_store=store).run(documents=[block(store, RD, "3")], filters=rd_only)
    assert all(d.meta["law_id"] == RD for d in filtered["expanded"])
    assert not any(d.meta["law_id"] == ET for d in filtered["documents"])


def test_run_disabled_and_missing_ids(store):
    source = block(store, RD, "3")
    assert CitedBlockExpander(document_store=store, enabled=False).run(documents=[source])["expanded"] == []
    assert CitedBlockExpander(document_store=store).run(documents=[source], enabled=False)["documents"] == [source]
    source.meta["refs"] = ["not-in-the-store"]
    expanded = CitedBlockExpander(document_store=store).run(documents=[source])["expanded"]
    assert [d.meta["expansion"] for d in expanded] == ["sibling"]  # RD art. 3 has 2 parts; the ref is skipped
