import pytest

from components.document_stores.edge_document_store import EdgeDocumentStore
from components.retrievers.sibling_expander import SiblingExpander, join_overlapping
from tests.reference_fixtures import DEFAULT_PATHS, ET, RD, block, build_store


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return build_store(tmp_path_factory.mktemp("siblings") / "store", *DEFAULT_PATHS)


def test_init_and_validation(tmp_path):
    store = EdgeDocumentStore(path=str(tmp_path / "s"))
    expander = SiblingExpander(document_store=store)
    assert (expander.window, expander.max_documents, expander.merge_adjacent) == (1, 12, True)
    with pytest.raises(ValueError, match="window"):
        SiblingExpander(document_store=store, window=-1)
    with pytest.raises(ValueError, match="score_factor"):
        SiblingExpander(document_store=store, score_factor=1.5)


def test_to_dict_from_dict(tmp_path):
    expander = SiblingExpander(document_store=EdgeDocumentStore(path=str(tmp_path / "s")), window=2)
    data = expander.to_dict()
    assert data["init_parameters"]["window"] == 2
    assert SiblingExpander.from_dict(data).window == 2


def test_join_overlapping():
    assert join_overlapping("uno dos tres cuatro cinco seis siete", "cuatro cinco seis siete ocho") == (
        "uno dos tres cuatro cinco seis siete ocho"
    )
    assert join_overlapping("Primera parte.", "Segunda parte.") == "Primera parte.\nSegunda parte."


def test_run_adds_previous_and_next_blocks_in_document_order(store):
    source = block(store, ET, "38", score=1.0)  # one part; art. 37 before it, art. 39 after it
    result = SiblingExpander(document_store=store, merge_adjacent=False).run(documents=[source])
    keys = [(d.meta["article"], d.meta.get("expansion")) for d in result["documents"]]
    assert keys[0] == ("38", None)
    previous = [d for d in result["documents"] if d.meta.get("expansion") == "window"]
    assert {(d.meta["article"], d.meta["part"]) for d in previous} == {
        ("37", block(store, ET, "37").meta["parts"]), ("39", 1)
    }
    assert all(d.score == pytest.approx(0.8) for d in previous)


def test_run_merges_adjacent_parts_of_one_article(store):
    parts = [block(store, ET, "49", part=p, score=1.0 - p / 10) for p in (1, 2, 3)]
    result = SiblingExpander(document_store=store, window=0).run(documents=parts)
    (merged,) = result["documents"]
    assert merged.meta["merged_parts"] == [1, 2, 3]
    assert merged.meta["merged_ids"] == [p.id for p in parts]
    assert merged.id == parts[0].id and merged.score == pytest.approx(0.9)
    assert merged.content.startswith(parts[0].content.strip()[:50])
    assert len(merged.content) < sum(len(p.content) for p in parts) + 3  # overlap written once (or newline-joined)


def test_run_cap_filters_and_flags(store):
    sources = [block(store, ET, str(n), score=1.0 - n / 100) for n in (20, 30, 40, 50)]
    result = SiblingExpander(document_store=store, max_documents=3, merge_adjacent=False).run(documents=sources)
    assert len(result["documents"]) == 4 + 3
    only_rd = {"field": "meta.law_id", "operator": "==", "value": RD}
    assert SiblingExpander(document_store=store).run(documents=sources, filters=only_rd)["documents"] == sources
    assert SiblingExpander(document_store=store, enabled=False).run(documents=sources)["documents"] == sources
