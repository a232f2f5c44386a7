#!/usr/bin/env python
"""
Multi-question benchmark (not a test): a message that asks two questions, does the answer answer both?

People write several questions in one message ("¿Cuántos días de vacaciones tengo? ¿Me pueden obligar a trabajar
los domingos?"). The messages here are pairs of the project's held-out labour questions (`benchmarks/questions/
holdout-labor-{es,br}{,-2}.jsonl`, never used to choose a default), two of the same language with no labelled article
in common, joined with a space, paired by a seeded shuffle (`pairs`). Each message goes through `ask` (without an LLM
by default); per message:

- `both`: the answer cites a labelled article of each question;
- `first` / `second`: of the first / second question;
- `citations`: how many articles the answer cites;

with 95% bootstrap intervals, `ask`'s p50 (caches emptied before each message), and `--compare OLD.json` for the
paired difference of `both` to a previous run.

    cp -r /tmp/lx_full /tmp/lx_multi   # the embedded store opens in one process only
    LEXHAY_LLM=none .venv/bin/python benchmarks/multi_question_bench.py --store /tmp/lx_multi --json /tmp/multi.json
"""

import argparse
import json
import os
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipelines.settings import setup_environment  # noqa: E402

setup_environment()

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from components.utils.hardware import cpu_summary  # noqa: E402
from pipelines.evaluation import (  # noqa: E402
    article_key,
    cold_ask,
    format_ci,
    load_labelled,
    paired_to_previous,
    rows_by_id,
)
from pipelines.sdk import LexHay  # noqa: E402

QUESTIONS = Path(__file__).resolve().parent / "questions"
SETS = {"es": ["holdout-labor-es", "holdout-labor-es-2"], "pt": ["holdout-labor-br", "holdout-labor-br-2"]}
METRICS = ("both", "first", "second")
console = Console(width=200)


def pairs(items: list[dict], *, seed: int = 7, limit: int = 20) -> list[tuple[dict, dict]]:
    """
    Up to `limit` pairs of single questions (one question mark, at the end) in a seeded shuffle, consecutive ones
    paired, a pair kept only when the two label no article in common.
    """
    single = [it for it in items if it["question"].count("?") == 1 and it["question"].rstrip().endswith("?")]
    random.Random(seed).shuffle(single)
    kept = [(a, b) for a, b in zip(single[0::2], single[1::2]) if not a["relevant"] & b["relevant"]]
    return kept[:limit]


def outcome(first: dict, second: dict, reply: dict) -> dict[str, float]:
    """`both`, `first`, `second` (1.0 or 0.0) and `citations` of one answer to the two questions."""
    cited = {article_key(c.get("law_id"), c.get("article")) for c in reply.get("citations") or []}
    one, two = bool(cited & first["relevant"]), bool(cited & second["relevant"])
    return {"both": float(one and two), "first": float(one), "second": float(two), "citations": float(len(cited))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", required=True, help="an embedded store holding data/corpus (a copy: one process)")
    parser.add_argument("--per-language", type=int, default=20, help="messages per language")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", default=None, help="write every message's outcome here")
    parser.add_argument("--compare", default=None, help="a previous run's --json: paired difference of `both`")
    args = parser.parse_args()

    messages = []
    for language, names in SETS.items():
        items = [it for name in names for it in load_labelled(QUESTIONS / f"{name}.jsonl")]
        for first, second in pairs(items, seed=args.seed, limit=args.per_language):
            messages.append((language, first, second))
    console.print(f"{cpu_summary()}; load {os.getloadavg()[0]:.1f}; {len(messages)} messages")
    rows, latencies = [], []
    with LexHay(store_path=args.store) as lex:
        for language, first, second in messages:
            message = f"{first['question'].strip()} {second['question'].strip()}"
            reply, ms = cold_ask(lex, message)
            latencies.append(ms)
            rows.append({"id": f"{first['id']}+{second['id']}", "language": language, "message": message,
                         **outcome(first, second, reply)})
    console.print(f"load at the end {os.getloadavg()[0]:.1f}")

    previous = rows_by_id(args.compare)
    table = Table(title="Two questions in one message, ask: share [95% interval]")
    for column in ("messages", "n", *METRICS, "citations", *(["both - before [95%]"] if previous else [])):
        table.add_column(column)
    for name in ("all", *SETS):
        members = [row for row in rows if name in ("all", row["language"])]
        cells = [format_ci([row[m] for row in members], 2) for m in METRICS]
        cells.append(f"{statistics.mean(row['citations'] for row in members):.1f}")
        if previous:
            cells.append(paired_to_previous(members, previous, "both"))
        table.add_row(name, str(len(members)), *cells)
    console.print(table)
    console.print(f"ask p50 {statistics.median(latencies):.1f} ms (caches emptied before each message)")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
