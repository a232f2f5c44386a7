#!/usr/bin/env python
"""
LLM relevance benchmark (not a test): does a local LLM's judgement of each passage (`LEXHAY_RERANK=llm`,
`LLMPointwiseScorer`) put the right article first when it re-orders the head of the default `full` ranking?

For every labelled question, `full` ranks 20 articles (no LLM in retrieval); the model answers "does this passage
help answer the question? sí/no" for each of the first `--top-k` (the reranker's yes/no prompt, P(yes) from the
first token's logprobs). The head is then re-sorted by `(1 - w) * full score + w * P(yes)`, each over the head's
best, for w from 0 (full as it is) to 1 (the LLM alone); the rest of the ranking stays. Reported per dev set:
nDCG@5 and hit@1 at each w with the paired difference to `full` and its 95% bootstrap interval, and the nDCG@5 of
a w chosen by 2-fold cross-validation (w picked on one random half, scored on the other; 20 splits).

LLM scores are appended to `--scores` (JSON lines) as they are computed and reused by a later run, so an
interrupted run resumes and the table can be re-printed without the model (`--no-llm`).

    cp -r /tmp/store /tmp/llm-store   # the embedded store opens in one process only
    .venv/bin/python benchmarks/llm_relevance_bench.py --store /tmp/llm-store --llm qwen2.5-coder-1.5b \\
        --scores /tmp/llm15.jsonl ../shared/eval/dev-labor-es.jsonl ../shared/eval/dev-labor-br.jsonl
"""

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipelines.settings import setup_environment  # noqa: E402

setup_environment()

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from pipelines.evaluation import article_key, hit_at, load_labelled, ndcg_at, paired_bootstrap  # noqa: E402

WEIGHTS = tuple(round(0.1 * i, 1) for i in range(11))
SPLITS = 20
console = Console(width=200)


def reorder(row: dict, weight: float) -> list[tuple[str, str]]:
    """The row's article ranking with its LLM-scored head re-sorted by the blend of `weight`."""
    keys = [article_key(*key) for key in row["keys"]]
    head = list(range(min(len(row["llm"]), len(keys))))
    if not head:
        return keys
    best_score = max(row["scores"][i] for i in head) or 1.0
    judged = [p for p in row["llm"] if p is not None]
    best_llm = max(judged) if judged and max(judged) > 0 else 1.0

    def value(i: int) -> float:
        base = row["scores"][i] / best_score
        p = row["llm"][i]
        return base if p is None else (1 - weight) * base + weight * p / best_llm

    order = sorted(head, key=lambda i: -value(i)) + list(range(len(head), len(keys)))
    return [keys[i] for i in order]


def per_question(rows: list[dict], weight: float) -> tuple[list[float], list[float]]:
    """nDCG@5 and hit@1 of each row at `weight`."""
    ndcg, hit1 = [], []
    for row in rows:
        relevant = {article_key(*key) for key in row["relevant"]}
        ranking = reorder(row, weight)
        ndcg.append(ndcg_at(ranking, relevant, 5))
        hit1.append(hit_at(ranking, relevant, 1))
    return ndcg, hit1


def cross_validated(rows: list[dict], seed: int = 0) -> tuple[float, list[float]]:
    """Mean out-of-fold nDCG@5 of a weight chosen on the other half, over `SPLITS` random splits; the weights."""
    means, chosen = [], []
    for split in range(SPLITS):
        order = list(range(len(rows)))
        random.Random(seed + split).shuffle(order)
        halves = (order[: len(order) // 2], order[len(order) // 2 :])
        total = 0.0
        for train, test in (halves, halves[::-1]):
            weight = max(WEIGHTS, key=lambda w: (sum(per_question([rows[i] for i in train], w)[0]), -w))
            chosen.append(weight)
            total += sum(per_question([rows[i] for i in test], weight)[0])
        means.append(total / len(rows))
    return sum(means) / len(means), chosen


def score_questions(args: argparse.Namespace, done: set[tuple[str, str]]) -> None:
    """Runs `full` and the LLM on every question not yet in the scores file, appending a row each."""
    from components.generators.llm_backends import LocalLlamaChatGenerator  # noqa: PLC0415
    from components.rankers.relevance_backends import LLMPointwiseScorer  # noqa: PLC0415
    from pipelines.sdk import LexHay  # noqa: PLC0415

    lex = LexHay(store_path=args.store)
    generator = LocalLlamaChatGenerator(model=args.llm, n_threads=args.threads, timeout=600)
    scorer = LLMPointwiseScorer(chat_generator=generator, batch_size=1, use_logprobs=True, timeout=600)
    for path in args.sets:
        name = Path(path).stem
        for item in load_labelled(path):
            if (name, item["id"]) in done:
                continue
            docs = lex.retrieve_articles(item["question"], top_k=20, mode="full")
            started = time.perf_counter()
            judged = scorer.score(item["question"], docs[: args.top_k])
            row = {"set": name, "qid": item["id"], "relevant": sorted(map(list, item["relevant"])),
                   "keys": [[d.meta.get("law_id"), str(d.meta.get("article"))] for d in docs],
                   "scores": [d.score for d in docs], "llm": judged,
                   "llm_s": round(time.perf_counter() - started, 1)}
            with open(args.scores, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            console.print(f"{name} {item['id']}: {row['llm_s']} s", highlight=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sets", nargs="+", help="labelled question files (JSON lines)")
    parser.add_argument("--store", default=None, help="the store (a copy: it opens in one process)")
    parser.add_argument("--llm", default="qwen2.5-coder-1.5b", help="local LLM registry name or GGUF path")
    parser.add_argument("--threads", type=int, default=2, help="llama.cpp threads")
    parser.add_argument("--top-k", type=int, default=5, help="leading articles the LLM judges")
    parser.add_argument("--scores", required=True, help="JSON-lines file of LLM scores (appended, reused)")
    parser.add_argument("--no-llm", action="store_true", help="only print the table of the scores file")
    args = parser.parse_args()

    scores_path = Path(args.scores)
    rows = [json.loads(line) for line in scores_path.read_text(encoding="utf-8").splitlines()] \
        if scores_path.exists() else []
    if not args.no_llm:
        if not args.store:
            parser.error("--store is needed to score questions (or --no-llm)")
        score_questions(args, {(row["set"], row["qid"]) for row in rows})
        rows = [json.loads(line) for line in scores_path.read_text(encoding="utf-8").splitlines()]

    wanted = [Path(path).stem for path in args.sets]
    table = Table(title="full's head re-sorted by (1 - w) full + w LLM P(yes): nDCG@5 (d to full [95%]), hit@1")
    table.add_column("w")
    by_set = {name: [row for row in rows if row["set"] == name] for name in wanted}
    for name, set_rows in by_set.items():
        table.add_column(f"{name} ({len(set_rows)})", justify="right")
    baseline = {name: per_question(set_rows, 0.0) for name, set_rows in by_set.items()}
    for weight in WEIGHTS:
        cells = []
        for name, set_rows in by_set.items():
            ndcg, hit1 = per_question(set_rows, weight)
            if not set_rows:
                cells.append("-")
                continue
            mean = sum(ndcg) / len(ndcg)
            if weight == 0.0:
                cells.append(f"{mean:.3f}, {sum(hit1) / len(hit1):.2f}")
                continue
            d = paired_bootstrap(ndcg, baseline[name][0])
            cells.append(f"{mean:.3f} ({d['diff']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]), "
                         f"{sum(hit1) / len(hit1):.2f}")
        table.add_row("0 (full)" if weight == 0.0 else f"{weight:g}", *cells)
    cells = []
    for set_rows in by_set.values():
        if not set_rows:
            cells.append("-")
            continue
        mean, chosen = cross_validated(set_rows)
        common = max(set(chosen), key=chosen.count)
        cells.append(f"{mean:.3f} (w {common:g} in {chosen.count(common)}/{len(chosen)} folds)")
    table.add_row("w by 2-fold CV", *cells)
    console.print(table)
    seconds = [row["llm_s"] for row in rows if row["set"] in by_set]
    if seconds:
        console.print(f"LLM time per question (top {len(rows[0]['llm'])}): median "
                      f"{sorted(seconds)[len(seconds) // 2]:.1f} s", highlight=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
