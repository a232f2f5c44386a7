"""Article-level retrieval metrics over labelled question files (`{"id","question","expected":[{law,article}]}`)."""

import json
import math
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

Key = tuple[str, str]


def load_labelled(path: str | Path) -> list[dict[str, Any]]:
    """Read a labelled JSONL file; every line needs `id`, `question` and a non-empty `expected` list."""
    items = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            item = json.loads(line)
            expected = item.get("expected")
            if not item.get("question") or not expected:
                raise ValueError(f"{path}:{n}: needs 'question' and a non-empty 'expected' list")
            item["relevant"] = {(str(e["law"]), str(e["article"])) for e in expected}
            items.append(item)
    return items


def article_ranking(keys: Iterable[Key]) -> list[Key]:
    """Rank order of distinct (law_id, article) keys (several parts of one article count once, at the best)."""
    seen: set[Key] = set()
    ranking = []
    for key in keys:
        if key not in seen:
            seen.add(key)
            ranking.append(key)
    return ranking


def hit_at(ranking: Sequence[Key], relevant: set[Key], k: int) -> float:
    return 1.0 if any(key in relevant for key in ranking[:k]) else 0.0


def mrr_at(ranking: Sequence[Key], relevant: set[Key], k: int) -> float:
    for i, key in enumerate(ranking[:k], start=1):
        if key in relevant:
            return 1.0 / i
    return 0.0


def ndcg_at(ranking: Sequence[Key], relevant: set[Key], k: int) -> float:
    dcg = sum(1.0 / math.log2(i + 1) for i, key in enumerate(ranking[:k], start=1) if key in relevant)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(relevant), k) + 1))
    return dcg / ideal if ideal else 0.0


def score_rankings(rankings: Sequence[Sequence[Key]], items: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Mean hit@1, hit@10, nDCG@5, MRR@10 of rankings aligned with labelled items."""
    if len(rankings) != len(items):
        raise ValueError("one ranking per labelled item is needed")
    n = max(len(items), 1)
    return {
        "hit@1": sum(hit_at(r, it["relevant"], 1) for r, it in zip(rankings, items)) / n,
        "hit@10": sum(hit_at(r, it["relevant"], 10) for r, it in zip(rankings, items)) / n,
        "nDCG@5": sum(ndcg_at(r, it["relevant"], 5) for r, it in zip(rankings, items)) / n,
        "MRR@10": sum(mrr_at(r, it["relevant"], 10) for r, it in zip(rankings, items)) / n,
    }


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in [0, 100]) of a non-empty sequence."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def evaluate_mode(
    retrieve: Callable[[str], Sequence[Any]], datasets: dict[str, Sequence[dict[str, Any]]]
) -> tuple[dict[str, dict[str, float]], list[float]]:
    """
    Run `retrieve(question) -> documents` over labelled datasets.

    :returns: metrics per dataset name, and every query's latency in ms.
    """
    scores, latencies = {}, []
    for name, items in datasets.items():
        rankings = []
        for item in items:
            start = time.perf_counter()
            docs = retrieve(item["question"])
            latencies.append((time.perf_counter() - start) * 1000)
            rankings.append(article_ranking((d.meta.get("law_id"), d.meta.get("article")) for d in docs))
        scores[name] = score_rankings(rankings, items)
    return scores, latencies
