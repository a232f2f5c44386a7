#!/usr/bin/env python
"""
Quote benchmark (not a test): does the answer without an LLM quote the words that answer the question?

Without an LLM, `ask` answers by quoting sentences of the articles it retrieved (`ExtractiveAnswer`). Retrieval
benchmarks score the articles; this one scores the quote. Each question of `benchmarks/questions/quotes/quotes.jsonl`
(the project's own: Spanish and Brazilian, labour and constitutional, most of them colloquial) names the article that
answers it (`expected`) and words of that article that state the answer (`quote`: "treinta días naturales" for
"¿Cuántos días de vacaciones me corresponden al año?"). Per question:

- `cited`: the answer cites the expected article;
- `first`: its first citation is the expected article;
- `quoted`: the answer holds the `quote` words (case and whitespace aside): the sentence a reader needs is there.

Rates come with 95% bootstrap intervals, per language and per half of the set (`half`: the first half was looked at
while a change was being tried, the second was written afterwards and only measured), with `ask`'s p50 latency.
`--json` keeps every question's outcome; `--compare OLD.json` adds the paired difference to a previous run's.

    cp -r /tmp/lx_full /tmp/lx_quote   # the embedded store opens in one process only
    LEXHAY_LLM=none .venv/bin/python benchmarks/quote_bench.py --store /tmp/lx_quote --json /tmp/quotes.json
"""

import argparse
import json
import os
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

ROOT = Path(__file__).resolve().parents[1]
QUOTES = ROOT / "benchmarks" / "questions" / "quotes" / "quotes.jsonl"
METRICS = ("cited", "first", "quoted")
console = Console(width=200)


def _words(text: str) -> str:
    return " ".join(text.split()).lower()


def outcome(item: dict, reply: dict) -> dict[str, float]:
    """`cited`, `first` and `quoted` (1.0 or 0.0) of one answer."""
    cited = [article_key(c.get("law_id"), c.get("article")) for c in reply.get("citations") or []]
    return {
        "cited": float(any(key in item["relevant"] for key in cited)),
        "first": float(bool(cited) and cited[0] in item["relevant"]),
        "quoted": float(_words(item["quote"]) in _words(reply.get("answer") or "")),
    }


def language(item: dict) -> str:
    return "pt" if any(e["law"] in ("CF88", "DEL-5452-1943") for e in item["expected"]) else "es"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", required=True, help="an embedded store holding data/corpus (a copy: one process)")
    parser.add_argument("--questions", default=str(QUOTES))
    parser.add_argument("--json", default=None, help="write every question's outcome here")
    parser.add_argument("--compare", default=None, help="a previous run's --json: paired differences")
    args = parser.parse_args()
    if os.environ.get("LEXHAY_LLM", "").lower() != "none":
        console.print("[yellow]LEXHAY_LLM is not 'none': an LLM answers, and its wording is not the quote's[/yellow]")

    items = load_labelled(args.questions)  # each item keeps its `quote` and `half`
    for item in items:
        item.setdefault("half", "all")
    console.print(f"{cpu_summary()}; load {os.getloadavg()[0]:.1f}; {len(items)} questions")
    rows, latencies = [], []
    with LexHay(store_path=args.store) as lex:
        lex.ask(items[0]["question"])  # warm up
        for item in items:
            reply, ms = cold_ask(lex, item["question"])
            latencies.append(ms)
            rows.append({"id": item["id"], **outcome(item, reply), "answer": reply.get("answer")})
    console.print(f"load at the end {os.getloadavg()[0]:.1f}")

    previous = rows_by_id(args.compare)
    table = Table(title="Quotes of the answer without an LLM: share [95% interval]")
    for column in ("questions", "n", *METRICS, *(["quoted - before [95%]"] if previous else [])):
        table.add_column(column)
    groups = {"all": items}
    for key, name in ((language, "lang"), (lambda it: it["half"], "half")):
        for value in sorted({key(it) for it in items}):
            groups[f"{name} {value}"] = [it for it in items if key(it) == value]
    by_id = {row["id"]: row for row in rows}
    for name, members in groups.items():
        cells = [format_ci([by_id[it["id"]][m] for it in members], 2) for m in METRICS]
        if previous:
            cells.append(paired_to_previous([by_id[it["id"]] for it in members], previous, "quoted"))
        table.add_row(name, str(len(members)), *cells)
    console.print(table)
    console.print(f"ask p50 {statistics.median(latencies):.1f} ms (caches emptied before each question)")
    if previous:
        for row in rows:
            before = previous.get(row["id"])
            if before is not None and before["quoted"] != row["quoted"]:
                console.print(f"  {row['id']}: quoted {before['quoted']:.0f} -> {row['quoted']:.0f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
