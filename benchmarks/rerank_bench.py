#!/usr/bin/env python
"""
Re-ranking benchmark (not a test): article-level quality and re-ranking latency of each LegalReranker relevance
backend over the same hybrid top-20 parent blocks of every labelled dev question.

    cp -r .bench/final /tmp/rerank-store   # the embedded shard opens in one process at a time: use a copy
    .venv/bin/python benchmarks/rerank_bench.py --store /tmp/rerank-store \\
        [--backends retrieval,embedding,embedding:0.5] [--cross-encoder DIR] [--llm qwen2.5-coder-0.5b --llm-limit 10]

A backend is `name[:retrieval_blend[:max_length]]`, e.g. `embedding:0.5:512`. Latency is the reranker's own
`run` on 20 candidates with empty caches (`cold`: every block scored, block vectors embedded), and the same call
repeated (`cached`: the 5-minute score cache). `warm` is the embedding backend with its block vectors already
cached (the steady state of a deployment: blocks recur across questions) but no cached scores.
"""

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipelines.settings import setup_environment  # noqa: E402

setup_environment()

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from components.rankers.legal_reranker import LegalReranker  # noqa: E402
from pipelines.evaluation import article_ranking, load_labelled, percentile, score_rankings  # noqa: E402
from pipelines.sdk import LexHay  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
METRICS = ("hit@1", "hit@10", "nDCG@5", "MRR@10")
console = Console(width=240)


def parse_backend(spec: str) -> tuple[str, dict]:
    name, *rest = spec.split(":")
    params: dict = {"relevance": name}
    if rest and rest[0]:
        params["retrieval_blend"] = float(rest[0])
    if len(rest) > 1 and rest[1]:
        params["max_length"] = int(rest[1])
    return spec, params


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", default=str(ROOT / ".bench" / "final"))
    parser.add_argument("--eval-dir", default=str(ROOT.parent / "shared" / "eval"))
    parser.add_argument("--backends", default="retrieval,embedding,embedding:0.5")
    parser.add_argument("--cross-encoder", default=None, help="a local cross-encoder folder (adds cross_encoder)")
    parser.add_argument("--llm", default=None, help="local LLM registry name / GGUF path (adds llm)")
    parser.add_argument("--llm-limit", type=int, default=10, help="questions per dataset for the (slow) LLM")
    parser.add_argument("--limit", type=int, default=None, help="questions per dataset (all by default)")
    parser.add_argument("--top-n", type=int, default=20)
    parser.add_argument("--today", default="2026-06-01", help="fixed date for the recency signal")
    args = parser.parse_args()

    datasets = {
        p.stem.replace("dev-", ""): load_labelled(p)[: args.limit]
        for p in sorted(Path(args.eval_dir).glob("dev-*.jsonl"))
    }
    if not datasets:
        console.print(f"[red]No dev-*.jsonl in {args.eval_dir}[/red]")
        return 2
    lex = LexHay(store_path=args.store)
    lex.retrieve("warm up", mode="hybrid", top_k=args.top_n)
    started = time.perf_counter()
    candidates = {
        name: [lex.retrieve(item["question"], mode="hybrid", top_k=args.top_n) for item in items]
        for name, items in datasets.items()
    }
    console.print(f"hybrid top-{args.top_n} candidates of {sum(map(len, datasets.values()))} questions in "
                  f"{time.perf_counter() - started:.0f} s")
    text_embedder = lex.pipeline("retrieval").get_component("text_embedder")

    configs = [parse_backend(spec) for spec in args.backends.split(",") if spec]
    if args.cross_encoder:
        configs.append(("cross_encoder", {"relevance": "cross_encoder", "model": args.cross_encoder}))
    if args.llm:
        from components.generators.llm_backends import LocalLlamaChatGenerator  # noqa: PLC0415

        llm = LocalLlamaChatGenerator(model=args.llm, timeout=600)
        configs.append((f"llm ({args.llm})", {"relevance": "llm", "chat_generator": llm, "batch_size": 5}))

    rows = [("hybrid (no re-ranking)", {n: score_rankings(_rankings(c), datasets[n]) for n, c in candidates.items()},
             None, None, None)]
    for label, params in configs:
        reranker = LegalReranker(top_n=args.top_n, today=args.today, **params)
        reranker.warm_up()
        limit = args.llm_limit if params["relevance"] == "llm" else None
        if params["relevance"] == "llm":
            console.print(f"llm: the first {limit} questions of each dataset only")
        scores, cold, cached, warm, fallbacks = {}, [], [], [], 0
        for name, items in datasets.items():
            outputs = []
            for item, docs in list(zip(items, candidates[name], strict=True))[:limit]:
                question = item["question"]
                embedding = None
                if params["relevance"] == "embedding":
                    embedding = text_embedder.run(text=question)["embedding"]
                    # warm: block vectors cached, scores not (the steady state of a deployment)
                    reranker.run(documents=docs, query=question, query_embedding=embedding)
                    reranker._scores.clear()
                    t0 = time.perf_counter()
                    reranker.run(documents=docs, query=question, query_embedding=embedding)
                    warm.append((time.perf_counter() - t0) * 1000)
                reranker._scores.clear()
                reranker._vectors.clear()
                t0 = time.perf_counter()
                out = reranker.run(documents=docs, query=question, query_embedding=embedding)
                cold.append((time.perf_counter() - t0) * 1000)
                fallbacks += out["stats"]["fallbacks"]
                t0 = time.perf_counter()
                reranker.run(documents=docs, query=question, query_embedding=embedding)
                cached.append((time.perf_counter() - t0) * 1000)
                outputs.append(out["documents"])
            scores[name] = score_rankings(_rankings(outputs), items[: len(outputs)])
        console.print(f"{label}: cold p50 {percentile(cold, 50):.0f} ms", highlight=False)
        label = f"{label} ({fallbacks} fallbacks)" if fallbacks else label
        rows.append((label, scores, cold, warm, cached))

    table = Table(title=f"Re-ranking the hybrid top {args.top_n}: article-level quality, re-ranking latency (ms)")
    table.add_column("relevance backend")
    for name in datasets:
        for metric in METRICS:
            table.add_column(f"{name} {metric}", justify="right")
    for column in ("cold p50", "cold p95", "warm p50", "cached p50"):
        table.add_column(column, justify="right")
    for label, scores, cold, warm, cached in rows:
        cells = [f"{scores[n][m]:.3f}" for n in datasets for m in METRICS]
        pairs = ((cold, 50), (cold, 95), (warm, 50), (cached, 50))
        timing = [f"{percentile(v, q):.0f}" if v else "-" for v, q in pairs]
        table.add_row(label, *cells, *timing)
    console.print(table)
    return 0


def _rankings(outputs):
    return [article_ranking((d.meta.get("law_id"), d.meta.get("article")) for d in docs) for docs in outputs]


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
