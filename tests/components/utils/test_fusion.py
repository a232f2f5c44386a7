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
