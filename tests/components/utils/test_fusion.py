import pytest

from components.utils.fusion import rrf_scores


def test_rrf_scores_sum_weighted_reciprocal_ranks_in_first_met_order():
    scores = rrf_scores([["a", "b"], ["b", "c"]], k=2)
    assert scores == pytest.approx({"a": 1 / 3, "b": 1 / 4 + 1 / 3, "c": 1 / 4})
    assert list(scores) == ["a", "b", "c"]
    weighted = rrf_scores([["a", "b"], ["b", "c"]], k=2, weights=[1.1, 0.5])
    assert weighted == pytest.approx({"a": 1.1 / 3, "b": 1.1 / 4 + 0.5 / 3, "c": 0.5 / 4})
    # a key both rankings hold beats one a single ranking puts first
    assert max(scores, key=scores.get) == "b"
    assert rrf_scores([], k=2) == {} and rrf_scores([[]], k=60) == {}


def test_rrf_scores_need_one_weight_per_ranking():
    with pytest.raises(ValueError, match="one weight per ranking"):
        rrf_scores([["a"], ["b"]], k=2, weights=[1.0])


def test_rrf_scores_give_equal_scores_a_shared_rank_whatever_their_order():
    ranking, tied = ["a", "b", "c", "d"], [0.9, 0.5, 0.5, 0.1]
    scores = rrf_scores([ranking], k=2, scores=[tied])
    assert scores == pytest.approx({"a": 1 / 3, "b": 1 / 4, "c": 1 / 4, "d": 1 / 6})  # ranks 1, 2, 2, 4
    # the tied keys returned the other way round fuse to the same scores
    swapped = rrf_scores([["a", "c", "b", "d"]], k=2, scores=[tied])
    assert swapped == pytest.approx(scores)
    # without scores (or where a score is missing) every position keeps its own rank
    assert rrf_scores([ranking], k=2)["c"] == pytest.approx(1 / 5)
    assert rrf_scores([["a", "b"]], k=2, scores=[[None, None]]) == pytest.approx({"a": 1 / 3, "b": 1 / 4})
    # only neighbours share: an equal score further down is another rank
    assert rrf_scores([["a", "b", "c"]], k=2, scores=[[0.5, 0.7, 0.5]])["c"] == pytest.approx(1 / 5)


def test_rrf_scores_need_one_score_per_key():
    with pytest.raises(ValueError, match="one score per key"):
        rrf_scores([["a", "b"]], k=2, scores=[[0.5]])
    with pytest.raises(ValueError, match="one score per key"):
        rrf_scores([["a"], ["b"]], k=2, scores=[[0.5]])
