#!/usr/bin/env python
"""
Conversation benchmark (not a test): does a turn of a conversation get the article it is about, whether it goes on
from the previous question ("¿y me las pueden pagar?") or asks a new one ("¿cuánto dura el periodo de prueba?")?

Two kinds of pairs, each a first question and a turn labelled with the article that answers it:
- follow-ups (`--pairs`, default `benchmarks/questions/follow-up/follow-up.jsonl`: 10 Spanish and 10 Portuguese
  pairs of a first question and an elliptical follow-up; `follow-up-holdout.jsonl` holds 20 more;
  `follow-up-third-turn.jsonl` 12 third turns, whose `first` lists the two questions before them, the second
  itself a follow-up; `follow-up-country.jsonl` 8 turns that ask the question before them of the other country's
  law, "¿y en Brasil?", "e na Espanha?"; `follow-up-new-topic.jsonl` 10 turns that open as a follow-up does, "¿y
  ...?", "e ...?", but ask a new question: the cost of reading a turn with the one before it);
- topic switches (`--switch FILE`, repeatable, a labelled question set such as `../shared/eval/dev-labor-es.jsonl`):
  each question of the file asked after the question before it, a new question in the same conversation.

For each pair, `ask` runs the first question, then the turn in each mode, in alternating order:
- `alone`: the turn as a new conversation;
- `carryover`: with the conversation (`history`: the first question and its answer) and the previous answer's
  blocks (`previous_chunk_ids`), as the SDK, the CLI and the HTTP API send them;
- `history`: with the conversation only, as a plain OpenAI-compatible chat client sends it;
- `carryover+llm` (with `--follow-up-llm MODEL`): `carryover`, with `DecomposeQuery` asking that local model for
  the turn's queries (`llm_on_follow_up`); the answer is written as in the other modes (`--llm`).

Reported per set and language: how often the answer cites a labelled article (`cites`), how often its first
citation is labelled (`first`), the REJECT share, with 95% bootstrap intervals, and the paired differences of each
conversation mode to `alone`; `ask` p50.

    .venv/bin/python benchmarks/follow_up_bench.py --store /tmp/store   # a copy: the store opens in one process
    .venv/bin/python benchmarks/follow_up_bench.py --store /tmp/store --switch ../shared/eval/dev-labor-es.jsonl
    .venv/bin/python benchmarks/follow_up_bench.py --store /tmp/store --follow-up-llm qwen2.5-coder-1.5b
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

from components.generators.llm_backends import LocalLlamaChatGenerator  # noqa: E402
from components.legal.legal_text import detect_query_language  # noqa: E402
from pipelines.evaluation import article_key, format_ci, load_labelled, paired_bootstrap  # noqa: E402
from pipelines.sdk import LexHay  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FOLLOW_UPS = ROOT / "benchmarks" / "questions" / "follow-up" / "follow-up.jsonl"
MODES = ("alone", "carryover", "history")
console = Console(width=200)


def cited(result: dict, relevant: set[tuple[str, str]]) -> tuple[float, float]:
    """
    (a labelled article among the answer's citations, the first citation labelled), 1.0 or 0.0 each; `relevant`:
    the follow-up's labels as `load_labelled` reads them (`article_key`s).
    """
    keys = [article_key(c["law_id"], c["article"]) for c in result["citations"]]
    return float(any(k in relevant for k in keys)), float(bool(keys) and keys[0] in relevant)


def conversation_pairs(path: str, *, switch: bool) -> list[tuple[list[str], dict]]:
    """(earlier questions, labelled turn) pairs: a follow-up file's `first` (a question, or the list of the
    conversation's questions before the turn) and `question`, or, for a topic switch, each question of a labelled
    set after the question before it."""
    items = load_labelled(path)
    if not switch:
        return [([item["first"]] if isinstance(item["first"], str) else list(item["first"]), item) for item in items]
    return [([items[i - 1]["question"]], items[i]) for i in range(1, len(items))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", default=str(ROOT / ".lexhay"))
    parser.add_argument("--pairs", default=str(FOLLOW_UPS), help="a follow-up pairs file ('' for none)")
    parser.add_argument("--switch", action="append", default=[],
                        help="a labelled question set whose questions are asked one after another (repeatable)")
    parser.add_argument("--llm", default="none", help="LEXHAY_LLM for the run (default: none, the extractive path)")
    parser.add_argument("--follow-up-llm", default=None,
                        help="a local model (registry name or GGUF path) DecomposeQuery asks about each turn, "
                             "as another mode")
    parser.add_argument("--json", default=None, help="write the per-pair records to this file")
    args = parser.parse_args()
    os.environ["LEXHAY_LLM"] = args.llm

    sets = ([(Path(args.pairs).stem, conversation_pairs(args.pairs, switch=False))] if args.pairs else []) + [
        (f"switch {Path(path).stem}", conversation_pairs(path, switch=True)) for path in args.switch
    ]
    lex = LexHay(store_path=args.store)
    decompose = lex.pipeline("query").get_component("decompose")
    deployed = (decompose.chat_generator, decompose.llm_on_follow_up)
    follow_up_llm = None
    modes = MODES
    if args.follow_up_llm:
        follow_up_llm = LocalLlamaChatGenerator(model=args.follow_up_llm)
        follow_up_llm.warm_up()
        modes = (*MODES, "carryover+llm")
    records = []
    for name, pairs in sets:
        for index, (earlier, pair) in enumerate(pairs):
            # the conversation before the turn, each question asked as the SDK sends a turn (history + carryover)
            history: list[dict[str, str]] = []
            first: dict = {"context_chunk_ids": []}
            for question in earlier:
                lex.clear_caches()
                first = lex.ask(question, history=history, previous_chunk_ids=first["context_chunk_ids"])
                history = [*history, {"role": "user", "content": question},
                           {"role": "assistant", "content": first["answer"]}]
            language = detect_query_language(pair["question"], default="es") or "es"
            record = {"set": name, "id": pair["id"], "language": language}
            for mode in modes if index % 2 == 0 else modes[::-1]:
                lex.clear_caches()
                kwargs = {
                    "alone": {},
                    "history": {"history": history},
                }.get(mode, {"history": history, "previous_chunk_ids": first["context_chunk_ids"]})
                decompose.chat_generator, decompose.llm_on_follow_up = (
                    (follow_up_llm, True) if mode == "carryover+llm" else deployed
                )
                started = time.perf_counter()
                result = lex.ask(pair["question"], **kwargs)
                record[f"{mode} ms"] = (time.perf_counter() - started) * 1000
                record[f"{mode} cites"], record[f"{mode} first"] = cited(result, pair["relevant"])
                record[f"{mode} rejected"] = float(result["route"] == "REJECT")
                record[f"{mode} citations"] = [[c["law_short"], c["article"]] for c in result["citations"]]
                record[f"{mode} queries"] = result["trace"].get("queries")
            decompose.chat_generator, decompose.llm_on_follow_up = deployed
            records.append(record)
    if args.json:
        Path(args.json).write_text(json.dumps(records, ensure_ascii=False, indent=1), encoding="utf-8")

    table = Table(title=f"Conversation turns, ask (LEXHAY_LLM={args.llm}): share [95% interval]")
    comparisons = [(mode, "alone") for mode in modes if mode != "alone"]
    for column in ("pairs", "metric", *modes, *(f"{a} - {b} [95%]" for a, b in comparisons)):
        table.add_column(column)
    for name, _ in sets:
        for language in ("es", "pt", None):
            rows = [r for r in records if r["set"] == name and language in (None, r["language"])]
            if not rows or (language is None and len({r["language"] for r in rows}) == 1):
                continue
            for metric in ("cites", "first", "rejected"):
                values = {mode: [r[f"{mode} {metric}"] for r in rows] for mode in modes}
                diffs = [paired_bootstrap(values[a], values[b]) for a, b in comparisons]
                table.add_row(f"{name} {language or 'all'} ({len(rows)})", metric,
                              *(format_ci(values[m], 2) for m in modes),
                              *(f"{d['diff']:+.2f} [{d['low']:+.2f}, {d['high']:+.2f}]" for d in diffs))
    console.print(table)
    console.print("ask p50 ms: " + ", ".join(
        f"{mode} {statistics.median(r[f'{mode} ms'] for r in records):.0f}" for mode in modes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
