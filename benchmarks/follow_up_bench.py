#!/usr/bin/env python
"""
Follow-up benchmark (not a test): does a follow-up question ("¿y me las pueden pagar?") get the article it is about
when the conversation and the previous answer's blocks come with it?

The set is the project's own (`benchmarks/questions/follow-up/follow-up.jsonl`: 10 Spanish and 10 Portuguese pairs
of a first question and an elliptical follow-up, the follow-up labelled with the article that answers it). For each
pair, `ask` runs the first question, then the follow-up twice, in alternating order:

- `alone`: the follow-up as a new conversation;
- `follow-up`: with the conversation (`history`: the first question and its answer) and the previous answer's
  blocks (`previous_chunk_ids`, the carryover), as the SDK, the CLI and the HTTP API send them.

Reported per language and overall: how often the answer cites a labelled article (`cites`), how often its first
citation is labelled (`first`), the REJECT share, with 95% bootstrap intervals, and the paired difference follow-up
minus alone; `ask` p50. Without an LLM (the default here, `--llm` to choose one) the follow-up is searched as
written and the carried blocks are merged with what it retrieves, graded by their own similarity to it.

    .venv/bin/python benchmarks/follow_up_bench.py --store /tmp/store   # a copy: the store opens in one process
"""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipelines.settings import setup_environment  # noqa: E402

setup_environment()

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from components.legal.legal_text import detect_query_language  # noqa: E402
from pipelines.evaluation import article_key, format_ci, load_labelled, paired_bootstrap  # noqa: E402
from pipelines.sdk import LexHay  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FOLLOW_UPS = ROOT / "benchmarks" / "questions" / "follow-up" / "follow-up.jsonl"
MODES = ("alone", "follow-up")
console = Console(width=200)


def cited(result: dict, relevant: set[tuple[str, str]]) -> tuple[float, float]:
    """
    (a labelled article among the answer's citations, the first citation labelled), 1.0 or 0.0 each; `relevant`:
    the follow-up's labels as `load_labelled` reads them (`article_key`s).
    """
    keys = [article_key(c["law_id"], c["article"]) for c in result["citations"]]
    return float(any(k in relevant for k in keys)), float(bool(keys) and keys[0] in relevant)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", default=str(ROOT / ".lexhay"))
    parser.add_argument("--pairs", default=str(FOLLOW_UPS))
    parser.add_argument("--llm", default="none", help="LEXHAY_LLM for the run (default: none, the extractive path)")
    parser.add_argument("--json", default=None, help="write the per-pair records to this file")
    args = parser.parse_args()
    os.environ["LEXHAY_LLM"] = args.llm

    pairs = load_labelled(args.pairs)  # each with `first`, the question the follow-up goes on from
    lex = LexHay(store_path=args.store)
    records = []
    for index, pair in enumerate(pairs):
        lex.clear_caches()
        first = lex.ask(pair["first"])
        history = [{"role": "user", "content": pair["first"]}, {"role": "assistant", "content": first["answer"]}]
        record = {"id": pair["id"], "language": detect_query_language(pair["question"], default="es") or "es"}
        for mode in MODES if index % 2 == 0 else MODES[::-1]:
            lex.clear_caches()
            kwargs = {"history": history, "previous_chunk_ids": first["context_chunk_ids"]} if mode != "alone" else {}
            started = time.perf_counter()
            result = lex.ask(pair["question"], **kwargs)
            record[f"{mode} ms"] = (time.perf_counter() - started) * 1000
            record[f"{mode} cites"], record[f"{mode} first"] = cited(result, pair["relevant"])
            record[f"{mode} rejected"] = float(result["route"] == "REJECT")
            record[f"{mode} citations"] = [[c["law_short"], c["article"]] for c in result["citations"]]
        records.append(record)
    if args.json:
        Path(args.json).write_text(json.dumps(records, ensure_ascii=False, indent=1), encoding="utf-8")

    table = Table(title=f"Follow-up questions, ask (LEXHAY_LLM={args.llm}): share [95% interval]")
    for column in ("pairs", "metric", *MODES, "follow-up - alone [95%]"):
        table.add_column(column)
    for language in ("es", "pt", None):
        rows = [r for r in records if language in (None, r["language"])]
        if not rows:
            continue
        for metric in ("cites", "first", "rejected"):
            values = {mode: [r[f"{mode} {metric}"] for r in rows] for mode in MODES}
            diff = paired_bootstrap(values["follow-up"], values["alone"])
            table.add_row(f"{language or 'all'} ({len(rows)})", metric, *(format_ci(values[m], 2) for m in MODES),
                          f"{diff['diff']:+.2f} [{diff['low']:+.2f}, {diff['high']:+.2f}]")
    console.print(table)
    console.print("ask p50 ms: " + ", ".join(
        f"{mode} {statistics.median(r[f'{mode} ms'] for r in records):.0f}" for mode in MODES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
