"""
Fusion and re-scoring chosen by cross-validation (not a test).

For every labelled dev question the retrieval chain runs once per candidate configuration, all on the same query
vectors: the parent-level fusion (`rrf` with several dense weights, with the BM25 ranking's weight fixed or scaled
by its lexical coverage of the question at several pivots, min-max `score` fusion with several dense shares, dense
candidates alone) times the share of the fused score in `LegalReranker`'s relevance
(`retrieval_blend`: 1.0 = fused score only, 0.0 = the block's stored full-length cosine only), hierarchy /
recency / vigencia heuristics as deployed. Then, repeated `--repeats` times, each dev set is split at random in two
halves: the configuration with the best macro-average nDCG@5 over the dev sets on one half is scored on the other
half (and the other way round). The held-out figures are what a configuration chosen on data it is not judged on
achieves; they are printed next to every fixed configuration on the same held-out halves, together with how often
each configuration was chosen (a stable choice is picked in most splits).

`--adaptive` also selects one configuration per query class under the same cross-validation, the query-adaptive
weighting of issue 11: `colloquial` questions (the colloquial -> statutory equivalence table finds one of its
expressions: the user's words are not the statute's, so lexical matching is weak) vs the others (`legal`).

    cp -r /tmp/lx_retr_full /tmp/lx_cv   # the embedded store opens in one process only
    .venv/bin/python benchmarks/fusion_cv.py --store /tmp/lx_cv --repeats 200 --adaptive

`--own` adds the project's own labelled sets (`benchmarks/questions/*.jsonl`: held-out, named norms, the rounds asked
as a user would), each a set of the macro average.
"""

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipelines.settings import setup_environment  # noqa: E402

setup_environment()

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from components.legal.terms import load_equivalences  # noqa: E402
from pipelines.evaluation import (  # noqa: E402
    article_ranking,
    best_per_article,
    format_ci,
    format_paired,
    load_labelled,
    paired_bootstrap,
    per_query_scores,
)
from pipelines.sdk import LexHay  # noqa: E402

console = Console(width=200)

FUSIONS = (
    ("rrf dense x1.1", {"mode": "hybrid", "fusion": "rrf", "dense_weight": 1.1, "coverage_pivot": None}),
    ("rrf dense x1.1 coverage 0.4", {"mode": "hybrid", "fusion": "rrf", "dense_weight": 1.1, "coverage_pivot": 0.4}),
    ("rrf dense x1.1 coverage 0.5", {"mode": "hybrid", "fusion": "rrf", "dense_weight": 1.1, "coverage_pivot": 0.5}),
    ("rrf dense x1.1 coverage 0.6", {"mode": "hybrid", "fusion": "rrf", "dense_weight": 1.1, "coverage_pivot": 0.6}),
    ("rrf dense x2", {"mode": "hybrid", "fusion": "rrf", "dense_weight": 2.0, "coverage_pivot": None}),
    ("rrf dense x4", {"mode": "hybrid", "fusion": "rrf", "dense_weight": 4.0, "coverage_pivot": None}),
    ("score dense 0.5", {"mode": "hybrid", "fusion": "score", "dense_share": 0.5}),
    ("score dense 0.7", {"mode": "hybrid", "fusion": "score", "dense_share": 0.7}),
    ("score dense 0.9", {"mode": "hybrid", "fusion": "score", "dense_share": 0.9}),
    ("dense only", {"mode": "dense"}),
)
BLENDS = (1.0, 0.75, 0.5, 0.25, 0.0)
DEFAULT = "rrf dense x1.1 coverage 0.5 | blend 0.5"
PREVIOUS = "rrf dense x1.1 | blend 0.5"  # the default before the BM25 weight followed its coverage
CLASSES = ("colloquial", "legal")
TOP_K = 10
OWN_QUESTIONS = Path(__file__).resolve().parent / "questions"


def labelled_sets(eval_dir: Path, *, own: bool = False, limit: int | None = None) -> dict[str, list[dict]]:
    """The dev sets of `eval_dir` by name ("labor-es"), and with `own` the project's own sets; `limit` per set."""
    paths = sorted(eval_dir.glob("dev-*.jsonl")) + (sorted(OWN_QUESTIONS.glob("*.jsonl")) if own else [])
    return {path.stem.replace("dev-", ""): load_labelled(path)[:limit] for path in paths}


def run_grid(lex: LexHay, datasets: dict[str, list[dict]]) -> tuple[dict, dict, list[float]]:
    """Per configuration and dataset, the per-question metrics; per dataset, each question's class."""
    pipe = lex.pipeline("retrieval")
    text_emb, sparse_emb = pipe.get_component("text_embedder"), pipe.get_component("sparse_text_embedder")
    retriever, resolver = pipe.get_component("retriever"), pipe.get_component("parent_resolver")
    reranker = pipe.get_component("reranker")
    expander = pipe.get_component("term_expander")  # what `full` gives the BM25 side: the question + its terms
    defaults = {k: getattr(retriever, k) for k in ("fusion", "dense_weight", "dense_share", "coverage_pivot")}
    filters = lex._restricted(None, None)  # an anonymous caller: the global corpus
    equivalences = load_equivalences()
    results: dict[str, dict[str, list[list]]] = {}
    classes: dict[str, list[str]] = {}
    seconds = []
    for name, items in datasets.items():
        classes[name] = ["colloquial" if equivalences.matches(it["question"]) else "legal" for it in items]
        for item in items:
            started = time.perf_counter()
            question = item["question"]
            dense = text_emb.run(text=question)["embedding"]
            lexical = expander.run(query=question)["query"]
            sparse = sparse_emb.run(text=lexical)["sparse_embedding"]
            for fusion_name, fusion in FUSIONS:
                for key in ("fusion", "dense_weight", "dense_share", "coverage_pivot"):
                    setattr(retriever, key, fusion.get(key, defaults[key]))
                hits = retriever.run(query=lexical, query_embedding=dense, query_sparse_embedding=sparse,
                                     filters=filters, top_k=4 * 2 * TOP_K, mode=fusion["mode"])["documents"]
                parents = resolver.run(documents=hits, top_k=2 * TOP_K, filters=filters)["documents"]
                for blend in BLENDS:
                    reranker.retrieval_blend = blend
                    ranked = reranker.run(documents=parents, query=question)["documents"]
                    keys = [(d.meta.get("law_id"), d.meta.get("article")) for d in best_per_article(ranked, TOP_K)]
                    config = f"{fusion_name} | blend {blend:g}"
                    results.setdefault(config, {}).setdefault(name, []).append(article_ranking(keys))
            seconds.append(time.perf_counter() - started)
    for key, value in defaults.items():
        setattr(retriever, key, value)
    reranker.retrieval_blend = None
    scores = {
        config: {name: per_query_scores(rankings, datasets[name]) for name, rankings in per_set.items()}
        for config, per_set in results.items()
    }
    return scores, classes, seconds


def macro(scores: dict, config: str, indices: dict[str, list[int]], classes: dict | None = None,
          wanted: str | None = None) -> float:
    """Mean over dev sets of the mean nDCG@5 of `indices` (only questions of class `wanted` when given)."""
    means = []
    for name, idx in indices.items():
        picked = [i for i in idx if wanted is None or classes[name][i] == wanted]
        if picked:
            values = scores[config][name]["nDCG@5"]
            means.append(sum(values[i] for i in picked) / len(picked))
    return sum(means) / len(means) if means else 0.0


def cross_validate(scores: dict, classes: dict, repeats: int, seed: int, adaptive: bool) -> dict:
    """Held-out per-question nDCG@5 (summed over repeats) of the CV choice, and how often each config won."""
    rng = random.Random(seed)
    configs = list(scores)
    names = list(next(iter(scores.values())))
    held = {"cv": {n: [] for n in names}, "cv adaptive": {n: [] for n in names}}
    held.update({c: {n: [] for n in names} for c in configs})
    chosen: dict[str, int] = {}
    chosen_by_class: dict[str, dict[str, int]] = {cls: {} for cls in CLASSES}
    for _ in range(repeats):
        halves = {}
        for name in names:
            order = list(range(len(classes[name])))
            rng.shuffle(order)
            halves[name] = (order[: len(order) // 2], order[len(order) // 2:])
        for train_side in (0, 1):
            train = {n: h[train_side] for n, h in halves.items()}
            test = {n: h[1 - train_side] for n, h in halves.items()}
            best = max(configs, key=lambda c: macro(scores, c, train))
            chosen[best] = chosen.get(best, 0) + 1
            per_class = {}
            for cls in CLASSES:
                per_class[cls] = max(configs, key=lambda c, k=cls: macro(scores, c, train, classes, k))
                chosen_by_class[cls][per_class[cls]] = chosen_by_class[cls].get(per_class[cls], 0) + 1
            for name, idx in test.items():
                held["cv"][name].append(statistics.mean(scores[best][name]["nDCG@5"][i] for i in idx))
                held["cv adaptive"][name].append(statistics.mean(
                    scores[per_class[classes[name][i]]][name]["nDCG@5"][i] for i in idx))
                for config in configs:
                    held[config][name].append(statistics.mean(scores[config][name]["nDCG@5"][i] for i in idx))
    if not adaptive:
        held.pop("cv adaptive")
    return {"held": held, "chosen": chosen, "chosen_by_class": chosen_by_class}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", required=True, help="a copy of a store holding the whole data/corpus")
    parser.add_argument("--eval-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "eval"))
    parser.add_argument("--repeats", type=int, default=200, help="random 2-fold splits")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--adaptive", action="store_true", help="also choose one config per query class")
    parser.add_argument("--limit", type=int, default=None, help="first N questions of each set (a smoke run)")
    parser.add_argument("--json", default=None, help="write the held-out macro nDCG@5 of every configuration here")
    parser.add_argument("--own", action="store_true",
                        help="also the project's own labelled sets (benchmarks/questions/*.jsonl), one set each")
    args = parser.parse_args()

    datasets = labelled_sets(Path(args.eval_dir), own=args.own, limit=args.limit)
    if not datasets:
        console.print(f"[red]No dev-*.jsonl in {args.eval_dir}[/red]")
        return 2
    lex = LexHay(store_path=args.store)
    lex.retrieve("warm up")
    scores, classes, seconds = run_grid(lex, datasets)
    console.print(f"{sum(len(v) for v in datasets.values())} questions x {len(scores)} configurations in "
                  f"{sum(seconds):.0f} s; colloquial questions: "
                  + ", ".join(f"{n} {c.count('colloquial')}" for n, c in classes.items()))

    full = Table(title="Whole dev sets (in-sample: for reference only): nDCG@5 [95% interval], hit@1; "
                       f"paired difference to the default ({DEFAULT})")
    full.add_column("configuration")
    for name in datasets:
        full.add_column(name, justify="right")
    for config in scores:
        cells = []
        for name in datasets:
            values = scores[config][name]["nDCG@5"]
            hit1 = statistics.mean(scores[config][name]["hit@1"])
            diff = paired_bootstrap(values, scores[DEFAULT][name]["nDCG@5"])
            delta = "" if config == DEFAULT else " d " + format_paired(diff)
            cells.append(f"{format_ci(values)} {hit1:.2f}{delta}")
        full.add_row(config, *cells)
    console.print(full)

    cv = cross_validate(scores, classes, args.repeats, args.seed, args.adaptive)
    held = Table(title=f"Held-out nDCG@5 over {args.repeats} random 2-fold splits (mean, 2.5-97.5 percentile of "
                       "the half-set means): the CV choice vs fixed configurations on the same halves")
    held.add_column("configuration")
    for name in datasets:
        held.add_column(name, justify="right")
    held.add_column("macro", justify="right")
    # each configuration's held-out macro nDCG@5: the table's order and last column, the summary line, --json
    macros = {config: statistics.mean(statistics.mean(cv["held"][config][n]) for n in datasets)
              for config in cv["held"]}
    ranked = sorted(cv["held"], key=lambda c: -macros[c])
    named = [c for c in ("cv", "cv adaptive", DEFAULT, PREVIOUS) if c in cv["held"] and c not in ranked[:12]]
    for config in ranked[:12] + named:
        cells = []
        for name in datasets:
            values = sorted(cv["held"][config][name])
            low, high = values[int(0.025 * len(values))], values[int(0.975 * len(values)) - 1]
            cells.append(f"{statistics.mean(values):.3f} [{low:.3f}, {high:.3f}]")
        held.add_row(config, *cells, f"{macros[config]:.3f}")
    console.print(held)
    total = 2 * args.repeats
    console.print("chosen on the training half: " + ", ".join(
        f"{c} {n / total:.0%}" for c, n in sorted(cv["chosen"].items(), key=lambda kv: -kv[1])))
    if args.adaptive:
        for cls, counts in cv["chosen_by_class"].items():
            console.print(f"chosen for '{cls}' questions: " + ", ".join(
                f"{c} {n / total:.0%}" for c, n in sorted(counts.items(), key=lambda kv: -kv[1])[:5]))
    console.print("held-out macro nDCG@5: " + ", ".join(
        f"{c} {macros[c]:.4f}" for c in ("cv", "cv adaptive", DEFAULT, PREVIOUS) if c in macros))
    if args.json:
        Path(args.json).write_text(json.dumps({"sets": list(datasets), "held_out_macro": macros,
                                               "chosen": cv["chosen"]}, indent=1), encoding="utf-8")
    console.print(f"per question, all configurations: p50 {statistics.median(seconds) * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
