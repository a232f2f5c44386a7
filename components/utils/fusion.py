"""Reciprocal rank fusion of rankings, the one formula the retrievers that fuse rankings share."""

from collections.abc import Hashable, Sequence


def rrf_scores(
    rankings: Sequence[Sequence[Hashable]], *, k: float, weights: Sequence[float] | None = None
) -> dict[Hashable, float]:
    """
    Weighted reciprocal rank fusion: each key gets `weight / (k + rank)` from every ranking it is in (rank 1 first).

    `HybridRetriever` fuses its dense and BM25 rankings of parent blocks with it, `MultiQueryRetriever` the rankings
    of several queries. A small `k` makes the first ranks count most.

    Usage example:
    ```python
    rrf_scores([["a", "b"], ["b", "c"]], k=2)  # {"a": 1/3, "b": 1/4 + 1/3, "c": 1/4}
    ```

    :param rankings: Each ranking's keys, best first, each key once per ranking.
    :param k: The rank constant.
    :param weights: One weight per ranking; `None` = 1.0 each.
    :returns: The fused score of every key, in the order keys are first met (rankings in order).
    :raises ValueError: `weights` does not have one weight per ranking.
    """
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError(f"rrf_scores needs one weight per ranking, got {len(weights)} for {len(rankings)}")
    scores: dict[Hashable, float] = {}
    for ranking, weight in zip(rankings, weights):
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
    return scores
