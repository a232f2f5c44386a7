#!/usr/bin/env python
"""
Citation benchmark (not a test): does a question that cites an article get that article first?

The citation sets are the project's own (`tests/components/extractors/fixtures/citations_{es,pt}.jsonl`: Spanish and
Portuguese forms such as "art. 52.c) del Estatuto de los Trabajadores", "§ 8º do art. 477 da CLT", "CLT 59-A"),
each with the law and article it cites. On a store holding the corpus, every question runs through:

- `retrieve` in `full` mode (the chain with its citation stages) and in `hybrid` mode (the plain search, for
  comparison): is the first block's article the cited one?
- `ask` without an LLM (`LEXHAY_LLM=none`: the query pipeline's citation stage and lexical-first gate, then the
  extractive answer): is the first citation of the answer the cited article?
- for a question whose citation names a subdivision ("§ 8º do art. 477", "artículo 38.2"; `citations.pinpoint`):
  does that answer quote the subdivision's first sentence (read from the stored article, `legal_text.unit_range`)?

    cp -r /tmp/lx_full /tmp/lx_cite   # the embedded store opens in one process only
    .venv/bin/python benchmarks/citation_bench.py --store /tmp/lx_cite
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

from components.legal.answer_format import article_body  # noqa: E402
from components.legal.citations import CitationGrammar, pinpoint  # noqa: E402
from components.legal.legal_text import split_sentences, unit_range  # noqa: E402
from components.utils.hardware import cpu_summary  # noqa: E402
from pipelines.sdk import LexHay  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "components" / "extractors" / "fixtures"
console = Console(width=200)


def load_set(lang: str) -> list[dict]:
    path = FIXTURES / f"citations_{lang}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def first_is_cited(case: dict, law_id: str | None, article: str | None) -> bool:
    return (law_id, str(article or "").lower()) == (case["law_id"], case["article"].lower())


def unit_opening(lex: LexHay, case: dict, grammar: CitationGrammar) -> str | None:
    """The first words of the subdivision the case's citation names, as the stored article writes it; None if none."""
    found = [c for c in grammar.extract(case["question"], colloquial=True) if c.get("article")]
    units = pinpoint(case["question"], found[0]["span"]) if len(found) == 1 else []
    if not units:
        return None
    conditions = [{"field": "meta.law_id", "operator": "==", "value": case["law_id"]},
                  {"field": "meta.article", "operator": "==", "value": case["article"].lower()},
                  {"field": "meta.level", "operator": "==", "value": "parent"}]
    parts = sorted(lex.document_store.filter_documents({"operator": "AND", "conditions": conditions}),
                   key=lambda doc: doc.meta.get("part") or 0)
    sentences = [s for doc in parts for s in split_sentences(article_body(doc), lang=doc.meta.get("lang", "es"))]
    located = unit_range(sentences, units)
    if located is None:
        return None
    words = sentences[located[1]].split()
    return " ".join(words[1:9] if words and words[0].rstrip(".)").isalnum() else words[:8])  # after "2." / "b)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", required=True, help="an embedded store holding data/corpus (a copy: one process)")
    parser.add_argument("--embedder", default=None)
    parser.add_argument("--sets", default="es,pt")
    parser.add_argument("--misses", action="store_true", help="print every question whose first result is wrong")
    args = parser.parse_args()
    os.environ["LEXHAY_LLM"] = "none"  # the deterministic path: no LLM decides what comes first
    table = Table(title=f"Cited article first (store {args.store}; load {os.getloadavg()[0]:.1f}; {cpu_summary()})")
    columns = ("set", "questions", "retrieve full", "retrieve hybrid", "ask (no LLM)", "subdivision quoted", "full p50 ms")
    grammar = CitationGrammar()
    for column in columns:
        table.add_column(column, justify="left" if column == "set" else "right")
    with LexHay(store_path=args.store, embedder=args.embedder) as lex:
        lex.retrieve("warm up", top_k=1)
        for lang in args.sets.split(","):
            cases = load_set(lang)
            hits = {"full": 0, "hybrid": 0, "ask": 0}
            pinpointed = quoted = 0
            seconds = []
            for case in cases:
                started = time.perf_counter()
                full = lex.retrieve(case["question"], top_k=5, mode="full")
                seconds.append(time.perf_counter() - started)
                hybrid = lex.retrieve(case["question"], top_k=5, mode="hybrid")
                answer = lex.ask(case["question"])
                opening = unit_opening(lex, case, grammar)
                if opening is not None:
                    pinpointed += 1
                    quoted += " ".join(opening.split()) in " ".join(answer["answer"].split())
                    if args.misses and " ".join(opening.split()) not in " ".join(answer["answer"].split()):
                        console.print(f"[{lang}] subdivision not quoted: {case['question']!r} ({opening!r})")
                firsts = {
                    "full": (full[0].meta.get("law_id"), full[0].meta.get("article")) if full else (None, None),
                    "hybrid": (hybrid[0].meta.get("law_id"), hybrid[0].meta.get("article")) if hybrid else (None, None),
                    "ask": ((answer["citations"][0]["law_id"], answer["citations"][0]["article"])
                            if answer["citations"] else (None, None)),
                }
                for key, (law_id, article) in firsts.items():
                    ok = first_is_cited(case, law_id, article)
                    hits[key] += ok
                    if args.misses and not ok:
                        console.print(f"[{lang}] {key} miss: {case['question']!r} -> {law_id} {article}")
            n = len(cases)
            table.add_row(lang, str(n), f"{hits['full']}/{n}", f"{hits['hybrid']}/{n}", f"{hits['ask']}/{n}",
                          f"{quoted}/{pinpointed}", f"{1000 * statistics.median(seconds):.0f}")
    console.print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
