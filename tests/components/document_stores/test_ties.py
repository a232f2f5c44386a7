import pytest

from components.document_stores import ties
from components.document_stores.ties import TIE_MARGIN, settle_ties


def test_equal_scores_go_in_point_id_order_and_the_cut_keeps_top_k():
    hits = [(0.5, "c", "third"), (0.9, "z", "first"), (0.5, "a", "second"), (0.1, "b", "last")]
    assert [hit for _, _, hit in settle_ties(hits, top_k=3, depth=1)] == ["first", "second", "third"]
    # fewer hits than asked for: the search found them all, nothing is left to settle
    assert [hit for _, _, hit in settle_ties(hits, top_k=10, depth=TIE_MARGIN)] == ["first", "second", "third", "last"]


def test_a_tie_that_runs_to_the_end_of_what_was_fetched_asks_for_more():
    tied = [(0.5, f"{n:02d}", n) for n in range(5)]
    assert settle_ties([(0.9, "zz", "best"), *tied], top_k=3, depth=3) is None
    # the tie ends within what was fetched: settled
    assert settle_ties([(0.9, "zz", "best"), *tied, (0.1, "yy", "worse")], top_k=3, depth=4) is not None
    # the cut falls above the tie: settled whatever follows
    assert [h for _, _, h in settle_ties([(0.9, "zz", "best"), (0.8, "yy", 7), *tied], top_k=2, depth=5)] == ["best", 7]


def test_at_the_deepest_search_the_cut_keeps_what_was_fetched(monkeypatch):
    monkeypatch.setattr(ties, "TIE_MAX_DEPTH", 4)
    tied = [(0.5, f"{n:02d}", n) for n in range(6, 0, -1)]
    assert settle_ties(tied, top_k=2, depth=4) is not None
    assert [hit for _, _, hit in settle_ties(tied, top_k=2, depth=4)] == [1, 2]
    assert settle_ties(tied, top_k=2, depth=2) is None


@pytest.mark.parametrize("top_k", [1, 5])
def test_an_empty_search_is_settled(top_k):
    assert settle_ties([], top_k=top_k, depth=TIE_MARGIN) == []
