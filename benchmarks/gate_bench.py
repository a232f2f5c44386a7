#!/usr/bin/env python
"""
Answer-or-refuse benchmark (not a test): how the query pipeline's domain gate (`CRAGRouter`, REJECT when nothing
relevant was retrieved) splits the questions the corpus answers from the ones it does not.

Questions: the labelled sets of `--eval-dir` and `benchmarks/questions` (in domain: every one has a governing
article in the corpus), `benchmarks/questions/off-topic/off-topic.jsonl` (40 questions, Spanish and Portuguese:
`everyday` ones and `other-law` ones, legal questions about norms the corpus does not hold: traffic, tenancy, tax,
consumer, criminal law) and `benchmarks/questions/off-topic/other-law-holdout.jsonl` (30 more `other-law` ones,
15 per language, written before `ScopeChecker` was measured and never used to shape it: family, inheritance,
immigration, company and data-protection law besides those). For each question:

- `ask` without an LLM: its route (ACCEPT / REJECT), whether its answer carries the out-of-scope notice
  (`ScopeChecker`: the question is closer to a phrase of a branch of law the corpus lacks than to any block) and
  the margin it measured, and the latency, the caches cleared before each question;
- the signals a gate could read from the first retrieval (`retrieve(mode="full", top_k=10)`): `best`, the highest
  cosine of the question and a block's stored full-length vector (what `CRAGRouter` grades: `dense_score`),
  `mean5` (the five highest), and `z`, `best` standardized by the question's cosines to a fixed random sample of
  stored blocks (a per-question normalization: a question close to nothing has a low `best` and a low background
  alike).

Table 1: routes and out-of-scope notices per set, with 95% bootstrap intervals. Table 2: how well each signal
separates in-domain from off-topic questions (ROC AUC, per language) and, at the cosine the gate's REJECT floor
stands for, the share of in-domain questions kept and of off-topic ones refused; the scope margin against the
`other-law` questions, dev and held-out apart. The embedded store opens in one process only: run it on a
copy (`cp -r .lexhay /tmp/store`).

    .venv/bin/python benchmarks/gate_bench.py --store /tmp/store [--json records.json]
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

import numpy as np  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from components.legal.legal_text import detect_query_language  # noqa: E402
from pipelines.evaluation import cold_ask, format_ci, percentile  # noqa: E402
from pipelines.sdk import LexHay  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OFF_TOPIC = ROOT / "benchmarks" / "questions" / "off-topic" / "off-topic.jsonl"
OTHER_LAW_HOLDOUT = ROOT / "benchmarks" / "questions" / "off-topic" / "other-law-holdout.jsonl"
OUTSIDE_SETS = ("off-topic", "other-law-holdout")
BACKGROUND_BLOCKS = 1000
console = Console(width=200)


def read_questions(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def auc(positive: list[float], negative: list[float]) -> float:
    """P(a random in-domain question scores above a random off-topic one), ties counted half."""
    if not positive or not negative:
        return float("nan")
    p, n = np.asarray(positive)[:, None], np.asarray(negative)[None, :]
    return float((p > n).mean() + 0.5 * (p == n).mean())


def aucs_by_language(signal: str, inside: list[dict], outside: list[dict]) -> list[float]:
    """`auc` of the records' `signal`, in-domain (`inside`) vs `outside`: all records, then Spanish, then Portuguese."""
    return [
        auc([r[signal] for r in inside if lang in (None, r["language"])],
            [r[signal] for r in outside if lang in (None, r["language"])])
        for lang in (None, "es", "pt")
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", default=str(ROOT / ".lexhay"))
    parser.add_argument("--eval-dir", default=str(ROOT.parent / "shared" / "eval"))
    parser.add_argument("--sets", default="dev-*.jsonl", help="labelled files of --eval-dir (a glob)")
    parser.add_argument("--off-topic", default=str(OFF_TOPIC))
    parser.add_argument("--other-law-holdout", default=str(OTHER_LAW_HOLDOUT))
    parser.add_argument("--json", default=None, help="write the per-question records to this file")
    args = parser.parse_args()

    sets = {p.stem: read_questions(p) for p in sorted(Path(args.eval_dir).glob(args.sets))}
    sets.update({p.stem: read_questions(p) for p in sorted((ROOT / "benchmarks" / "questions").glob("*.jsonl"))})
    sets["off-topic"] = read_questions(Path(args.off_topic))
    sets["other-law-holdout"] = read_questions(Path(args.other_law_holdout))

    os.environ["LEXHAY_LLM"] = "none"  # the gate as every deployment has it: no LLM stage in front of it
    lex = LexHay(store_path=args.store)
    crag = lex.pipeline("query").get_component("crag")
    floor_cosine = crag.cosine_floor + crag.min_best * (crag.cosine_ceiling - crag.cosine_floor)
    retrieval = lex.pipeline("retrieval")
    embedder = retrieval.get_component("text_embedder")
    embedder.warm_up()
    store = retrieval.get_component("retriever").document_store
    parents = [d.id for d in store.filter_documents({"field": "meta.level", "operator": "==", "value": "parent"})]
    sample = random.Random(0).sample(parents, min(BACKGROUND_BLOCKS, len(parents)))
    background = np.asarray(
        [v for _, v in store.dense_vectors_by_id(sample, with_meta=False).values() if v is not None], dtype=np.float32
    )

    records = []
    for name, items in sets.items():
        for item in items:
            question = item["question"]
            result, ms = cold_ask(lex, question)
            scope = result["trace"]["scope"]
            cosines = sorted((d.meta.get("dense_score") or 0.0 for d in lex.retrieve(question, mode="full")),
                             reverse=True) or [0.0]
            query = np.asarray(embedder.run(text=question)["embedding"], dtype=np.float32)
            bg = background @ query
            records.append({
                "set": name, "id": item["id"], "kind": item.get("kind", "in-domain"),
                "language": detect_query_language(question, default="es") or "es", "route": result["route"],
                "ms": ms, "out_of_scope": bool(scope["out_of_scope"]), "scope_margin": scope["margin"],
                # higher = more in scope, as the gate signals: minus the margin; a question not checked (it cites a
                # norm) counts as in scope
                "in_scope": -scope["margin"] if scope["margin"] is not None else 1.0,
                "best": cosines[0], "mean5": float(np.mean(cosines[:5])),
                "z": float((cosines[0] - bg.mean()) / (bg.std() or 1.0)),
            })
    if args.json:
        Path(args.json).write_text(json.dumps(records, ensure_ascii=False, indent=1), encoding="utf-8")

    table = Table(title=f"ask without an LLM: routes (REJECT floor: best cosine {floor_cosine:.3f})")
    for col in ("set", "kind", "n", "ACCEPT share [95%]", "out-of-scope notice [95%]", "best cosine min / p10 / max",
                "ask p50 ms"):
        table.add_column(col)
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in records:
        key = (r["set"], r["kind"] if r["set"] not in OUTSIDE_SETS else f"{r['kind']} ({r['language']})")
        groups.setdefault(key, []).append(r)
    for (name, kind), rows in groups.items():
        best = [r["best"] for r in rows]
        table.add_row(name, kind, str(len(rows)), format_ci([float(r["route"] == "ACCEPT") for r in rows], 2),
                      format_ci([float(r["out_of_scope"]) for r in rows], 2),
                      f"{min(best):.3f} / {percentile(best, 10):.3f} / {max(best):.3f}",
                      f"{statistics.median(r['ms'] for r in rows):.0f}")
    console.print(table)

    table = Table(title="gate signals: in-domain vs off-topic")
    for col in ("signal", "AUC all", "AUC es", "AUC pt", "in-domain kept / off-topic refused at the floor"):
        table.add_column(col)
    inside = [r for r in records if r["set"] not in OUTSIDE_SETS]
    outside = [r for r in records if r["set"] == "off-topic"]
    for signal in ("best", "mean5", "z"):
        aucs = aucs_by_language(signal, inside, outside)
        at_floor = ""
        if signal == "best":
            kept = sum(r["best"] >= floor_cosine for r in inside) / len(inside)
            refused = sum(r["best"] < floor_cosine for r in outside) / len(outside)
            at_floor = f"{kept:.3f} / {refused:.3f}"
        table.add_row(signal, *(f"{a:.3f}" for a in aucs), at_floor)
    console.print(table)

    # the scope margin: a question's best matter phrase minus its nearest block (not measured when it cites a norm)
    table = Table(title="scope margin (ScopeChecker): in-domain vs other-law questions")
    for col in ("other-law set", "AUC all", "AUC es", "AUC pt", "in-domain noticed / other-law noticed"):
        table.add_column(col)
    for name in OUTSIDE_SETS:
        other = [r for r in records if r["set"] == name and r["kind"] == "other-law"]
        aucs = aucs_by_language("in_scope", inside, other)
        noticed = f"{sum(r['out_of_scope'] for r in inside)}/{len(inside)} / {sum(r['out_of_scope'] for r in other)}/" \
                  f"{len(other)}"
        table.add_row(name, *(f"{a:.3f}" for a in aucs), noticed)
    console.print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
