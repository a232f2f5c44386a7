"""Reciprocal rank fusion of rankings, the one formula the retrievers that fuse rankings share."""

from collections.abc import Hashable, Sequence


def rrf_scores(
    rankings: Sequence[Sequence[Hashable]],
    *,
    k: float,
    weights: Sequence[float] | None = None,
    scores: Sequence[Sequence[float | None]] | None = None,
) -> dict[Hashable, float]:
    """
    Weighted reciprocal rank fusion: each key gets `weight / (k + rank)` from every ranking it is in (rank 1 first).

    `HybridRetriever` fuses its dense and BM25 rankings of parent blocks with it, `MultiQueryRetriever` the rankings
    of several queries. A small `k` makes the first ranks count most.

    With `scores`, keys a ranking scored equally share the rank of the first of them (competition ranking: 1, 2, 2,
    4). A search returns equal scores in the order its index happens to hold them, which differs between two builds
    of the same store (two statutes with the same article text, a repealed one and the one in force, score equally
    in BM25); a shared rank makes the fused score independent of that order.

    Usage example:
    ```python
    rrf_scores([["a", "b"], ["b", "c"]], k=2)  # {"a": 1/3, "b": 1/4 + 1/3, "c": 1/4}
    rrf_scores([["a", "b", "c"]], k=2, scores=[[0.9, 0.5, 0.5]])  # {"a": 1/3, "b": 1/4, "c": 1/4}
    ```

    :param rankings: Each ranking's keys, best first, each key once per ranking.
    :param k: The rank constant.
    :param weights: One weight per ranking; `None` = 1.0 each.
    :param scores: One score list per ranking, one score per key in its order (`None`: a key without a score,
        which shares no rank); `None`: every position is its own rank.
    :returns: The fused score of every key, in the order keys are first met (rankings in order).
    :raises ValueError: `weights` or `scores` does not have one entry per ranking, or a score list is not as long
        as its ranking.
    """
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError(f"rrf_scores needs one weight per ranking, got {len(weights)} for {len(rankings)}")
    if scores is not None and (
        len(scores) != len(rankings) or any(len(s) != len(r) for s, r in zip(scores, rankings, strict=True))
    ):
        raise ValueError("rrf_scores needs one score per key of each ranking")
    fused: dict[Hashable, float] = {}
    for position, (ranking, weight) in enumerate(zip(rankings, weights, strict=True)):
        ranks = _shared_ranks(scores[position]) if scores is not None else range(1, len(ranking) + 1)
        for rank, key in zip(ranks, ranking, strict=True):
            fused[key] = fused.get(key, 0.0) + weight / (k + rank)
    return fused


def _shared_ranks(scores: Sequence[float | None]) -> list[int]:
    """Competition ranks of scores listed best first: a score equal to the one before it takes that one's rank."""
    ranks: list[int] = []
    for position, score in enumerate(scores, start=1):
        tied = score is not None and position > 1 and scores[position - 2] == score
        ranks.append(ranks[-1] if tied else position)
    return ranks
