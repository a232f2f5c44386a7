"""Article-level retrieval metrics over labelled question files (`{"id","question","expected":[{law,article}]}`)."""

import json
import math
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

Key = tuple[str, str]


def article_key(law: Any, article: Any) -> Key:
    """
    The comparison key of an article: law id as is, article key lowercased and trimmed, so a label written as the
    statute writes it ("59-A") matches the parser's key ("59-a").
    """
    return str(law), str(article).strip().lower()


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
            item["relevant"] = {article_key(e["law"], e["article"]) for e in expected}
            items.append(item)
    return items


def article_ranking(keys: Iterable[Key]) -> list[Key]:
    """
    Rank order of distinct (law_id, article) keys (several parts of one article count once, at the best); article
    keys compare case-insensitively (`article_key`).
    """
    seen: set[Key] = set()
    ranking = []
    for key in map(lambda pair: article_key(*pair), keys):
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


METRICS = ("hit@1", "hit@10", "nDCG@5", "MRR@10")


def per_query_scores(rankings: Sequence[Sequence[Key]], items: Sequence[dict[str, Any]]) -> dict[str, list[float]]:
    """Each item's hit@1, hit@10, nDCG@5 and MRR@10 (the inputs of `bootstrap_ci` / `paired_bootstrap`)."""
    if len(rankings) != len(items):
        raise ValueError("one ranking per labelled item is needed")
    pairs = list(zip(rankings, items))
    return {
        "hit@1": [hit_at(r, it["relevant"], 1) for r, it in pairs],
        "hit@10": [hit_at(r, it["relevant"], 10) for r, it in pairs],
        "nDCG@5": [ndcg_at(r, it["relevant"], 5) for r, it in pairs],
        "MRR@10": [mrr_at(r, it["relevant"], 10) for r, it in pairs],
    }


def bootstrap_ci(
    values: Sequence[float], *, resamples: int = 2000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """
    Percentile bootstrap interval of the mean of per-query `values` (questions resampled with replacement).

    :returns: `(low, high)`; `(nan, nan)` for no values.
    """
    import numpy as np  # noqa: PLC0415

    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, size=(resamples, data.size))].mean(axis=1)
    tail = (1 - confidence) / 2 * 100
    return float(np.percentile(means, tail)), float(np.percentile(means, 100 - tail))


def paired_bootstrap(
    a: Sequence[float], b: Sequence[float], *, resamples: int = 2000, confidence: float = 0.95, seed: int = 0
) -> dict[str, float]:
    """
    Paired bootstrap of the mean difference `a - b` over the same questions.

    :returns: `diff` (mean of a - b), `low` / `high` (its interval) and `p` (two-sided: twice the share of
        resampled differences on the other side of zero, at most 1). A change is called better only when `low > 0`.
    :raises ValueError: `a` and `b` differ in length.
    """
    import numpy as np  # noqa: PLC0415

    if len(a) != len(b):
        raise ValueError("paired_bootstrap needs two score lists over the same questions")
    diffs = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if diffs.size == 0:
        return {"diff": float("nan"), "low": float("nan"), "high": float("nan"), "p": float("nan")}
    rng = np.random.default_rng(seed)
    means = diffs[rng.integers(0, diffs.size, size=(resamples, diffs.size))].mean(axis=1)
    tail = (1 - confidence) / 2 * 100
    share = min((means <= 0).mean(), (means >= 0).mean())
    return {"diff": float(diffs.mean()), "low": float(np.percentile(means, tail)),
            "high": float(np.percentile(means, 100 - tail)), "p": float(min(1.0, 2 * share))}


def format_paired(diff: dict[str, float], digits: int = 3) -> str:
    """`+diff [+low, +high]` of a `paired_bootstrap` result."""
    return f"{diff['diff']:+.{digits}f} [{diff['low']:+.{digits}f}, {diff['high']:+.{digits}f}]"


def format_ci(values: Sequence[float], digits: int = 3) -> str:
    """`mean [low, high]` of per-query values with the 95% bootstrap interval."""
    low, high = bootstrap_ci(values)
    mean = sum(values) / len(values) if values else float("nan")
    return f"{mean:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def cold_ask(lex: Any, question: str, **kwargs: Any) -> tuple[dict[str, Any], float]:
    """`lex.ask(question, **kwargs)` with every cache emptied first, as a new question pays it: (reply, ms)."""
    lex.clear_caches()
    started = time.perf_counter()
    reply = lex.ask(question, **kwargs)
    return reply, (time.perf_counter() - started) * 1000


def rows_by_id(path: str | Path | None) -> dict[str, dict[str, Any]]:
    """A benchmark's earlier `--json` rows (a list of dicts with an `id`), by id; `{}` without a path."""
    return {row["id"]: row for row in json.loads(Path(path).read_text())} if path else {}


def paired_to_previous(rows: Sequence[dict[str, Any]], previous: dict[str, dict[str, Any]], metric: str) -> str:
    """`format_paired` of `metric` over the `rows` an earlier run (`rows_by_id`) also scored: this run minus that."""
    shared = [row for row in rows if row["id"] in previous]
    return format_paired(
        paired_bootstrap([row[metric] for row in shared], [previous[row["id"]][metric] for row in shared])
    )


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in [0, 100]) of a non-empty sequence."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


LANGUAGE_COUNTRY = {"es": "es", "pt": "br"}
COUNTRY_METRIC = "country@5"


def meta_country(meta: dict[str, Any]) -> str | None:
    """A document's jurisdiction: `meta.country`, else its language's (`es` -> `es`, `pt` -> `br`)."""
    return meta.get("country") or LANGUAGE_COUNTRY.get(str(meta.get("lang") or ""))


def country_share(documents: Sequence[Any], country: str, k: int = 5) -> float:
    """Share of the first `k` distinct articles of `documents` that belong to `country`'s law (0 when none)."""
    seen: set[Key] = set()
    countries = []
    for doc in documents:
        key = article_key(doc.meta.get("law_id"), doc.meta.get("article"))
        if key not in seen:
            seen.add(key)
            countries.append(meta_country(doc.meta))
    top = countries[:k]
    return sum(1 for c in top if c == country) / len(top) if top else 0.0


def evaluate_mode(
    retrieve: Callable[[str], Sequence[Any]],
    datasets: dict[str, Sequence[dict[str, Any]]],
    per_query: dict[str, dict[str, list[float]]] | None = None,
    law_country: Callable[[str], str | None] | None = None,
) -> tuple[dict[str, dict[str, float]], list[float]]:
    """
    Run `retrieve(question) -> documents` over labelled datasets.

    :param per_query: When given, filled with each dataset's per-question metrics (`per_query_scores`), for
        bootstrap intervals and paired comparisons between modes.
    :param law_country: law id -> its country; when given, each dataset also gets `country@5`: the mean share of
        the top-5 articles that come from the jurisdiction of the question's labelled law (cross-jurisdiction
        behaviour: Portuguese questions should retrieve Brazilian law, Spanish ones Spanish law).
    :returns: metrics per dataset name, and every query's latency in ms.
    """
    scores, latencies = {}, []
    for name, items in datasets.items():
        rankings, shares = [], []
        for item in items:
            start = time.perf_counter()
            docs = retrieve(item["question"])
            latencies.append((time.perf_counter() - start) * 1000)
            rankings.append(article_ranking((d.meta.get("law_id"), d.meta.get("article")) for d in docs))
            country = law_country(item["expected"][0]["law"]) if law_country else None
            if country:
                shares.append(country_share(docs, country))
        scores[name] = score_rankings(rankings, items)
        if per_query is not None:
            per_query[name] = per_query_scores(rankings, items)
        if shares:
            scores[name][COUNTRY_METRIC] = sum(shares) / len(shares)
            if per_query is not None:
                per_query[name][COUNTRY_METRIC] = shares
    return scores, latencies


def store_law_country(document_store: Any) -> Callable[[str], str | None]:
    """law id -> country (`meta_country` of one of its documents in `document_store`), looked up once per law."""
    cache: dict[str, str | None] = {}

    def lookup(law_id: str) -> str | None:
        if law_id not in cache:
            docs = document_store.filter_documents({"field": "meta.law_id", "operator": "==", "value": law_id})
            cache[law_id] = meta_country(docs[0].meta) if docs else None
        return cache[law_id]

    return lookup


# --- ablation specs: `base[+stage...]` -------------------------------------------------------------------------

BASES = ("sparse", "dense", "hybrid", "full")
HEURISTIC_WEIGHTS = {"hierarchy_weight": 0.15, "recency_weight": 0.10, "vigencia_weight": 0.05}
RERANK_CANDIDATES = 20


def parse_mode(spec: str) -> dict[str, Any]:
    """
    Parse an ablation mode: a retrieval base (`sparse`, `dense`, `hybrid`, `full`) and stages added in order.

    Stages: `rerank=<backend>` (LegalReranker relevance backend on the top 20: `retrieval`, `embedding`,
    `cross_encoder`, `llm`; relevance only), `legal` (the hierarchy / recency / vigencia heuristics blended in,
    0.15 / 0.10 / 0.05), `refs` (CitedBlockExpander: cited blocks and siblings at 0.8 x their source's score).
    Examples: `hybrid`, `hybrid+rerank=embedding`, `hybrid+rerank=embedding+legal`, `full+refs`.

    :raises ValueError: An unknown base or stage, or a stage given twice.
    """
    from components.rankers.legal_reranker import RELEVANCE_BACKENDS  # noqa: PLC0415

    base, *stages = [part.strip() for part in spec.strip().split("+")]
    if base not in BASES:
        raise ValueError(f"mode {spec!r}: the base must be one of {BASES}")
    parsed: dict[str, Any] = {"spec": spec.strip(), "base": base, "rerank": None, "legal": False, "refs": False}
    for stage in stages:
        name, _, value = stage.partition("=")
        if name == "rerank":
            backend = value or "retrieval"
            if backend not in RELEVANCE_BACKENDS or parsed["rerank"]:
                raise ValueError(f"mode {spec!r}: rerank takes one of {RELEVANCE_BACKENDS}, once")
            parsed["rerank"] = backend
        elif name in ("legal", "refs") and not value and not parsed[name]:
            parsed[name] = True
        else:
            raise ValueError(f"mode {spec!r}: unknown or repeated stage {stage!r} (rerank=<backend>, legal, refs)")
    return parsed


def best_per_article(documents: Iterable[Any], top_k: int) -> list[Any]:
    """The best-scored block of each (law_id, article), best first, at most `top_k`."""
    from components.legal.ids import first_per_article  # noqa: PLC0415

    return first_per_article(sorted(documents, key=lambda d: d.score or 0.0, reverse=True))[:top_k]


def mode_retriever(lex: Any, spec: str, top_k: int = 10) -> Callable[[str], list[Any]]:
    """
    A `question -> article-level documents` function for an ablation mode (see `parse_mode`), built from the
    engine's own retrieval pipeline and components.
    """
    from components.rankers.legal_reranker import LegalReranker  # noqa: PLC0415
    from components.retrievers.cited_block_expander import CitedBlockExpander  # noqa: PLC0415

    mode = parse_mode(spec)
    stages = mode["rerank"] or mode["legal"] or mode["refs"]
    if not stages:
        return lambda question: lex.retrieve_articles(question, top_k=top_k, mode=mode["base"])
    reranker = None
    if mode["rerank"] or mode["legal"]:
        weights = HEURISTIC_WEIGHTS if mode["legal"] else dict.fromkeys(HEURISTIC_WEIGHTS, 0.0)
        relevance_weight = 0.70 if mode["legal"] else 1.0
        reranker = LegalReranker(top_n=RERANK_CANDIDATES, relevance=mode["rerank"] or "retrieval",
                                 relevance_weight=relevance_weight, **weights)
        reranker.warm_up()
    store = lex.pipeline("retrieval").get_component("parent_resolver").document_store
    expander = CitedBlockExpander(document_store=store) if mode["refs"] else None

    def retrieve(question: str) -> list[Any]:
        documents = lex.retrieve(question, top_k=max(RERANK_CANDIDATES, 2 * top_k), mode=mode["base"])
        if reranker is not None:
            documents = reranker.run(query=question, documents=documents)["documents"]
        if expander is not None:
            documents = expander.run(documents=documents)["documents"]
        return best_per_article(documents, top_k)

    return retrieve
