#!/usr/bin/env python
"""
Misspelled-question benchmark (not a test): what `SpellingCorrector` (the first stage of the retrieval chain) does
to `full` retrieval on the labelled sets as written and on the same questions misspelled as people misspell.

Each labelled set of `--eval-dir` (`dev-*.jsonl`) and `benchmarks/questions` (the held-out and named-norms sets) is
run twice through `retrieve_articles(mode="full")`, the corrector on and off, as written and misspelled. The
misspelled copy (`misspell`, seeded) changes each lower-case word of four letters or more, with probability
`--rate`, by one sound-alike error of Spanish and Portuguese spelling: b/v, c/s/z, qu/k, c/k, a dropped initial h,
ll/y, g/j, ç/ss, lh/li, "-ción" as "-sion", or its accents dropped. Table: nDCG@5 and hit@1 with 95% bootstrap
intervals, and the paired difference on - off. The embedded store opens in one process only: run it on a copy.

    .venv/bin/python benchmarks/spelling_bench.py --store /tmp/store [--rate 0.35] [--seed 7]
"""

import argparse
import random
import re
import sys
import unicodedata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipelines.settings import setup_environment  # noqa: E402

setup_environment()

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from pipelines.evaluation import (  # noqa: E402
    article_ranking,
    format_ci,
    format_paired,
    load_labelled,
    paired_bootstrap,
    per_query_scores,
)
from pipelines.sdk import LexHay  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OWN_SETS = ("holdout-labor-es.jsonl", "holdout-labor-br.jsonl", "named-norms.jsonl")
# (pattern, replacement): one sound-alike error each; None drops the word's accents
ERRORS = (
    (r"v", "b"), (r"b", "v"), (r"c(?=[ei])", "s"), (r"z", "s"), (r"s(?=[aeiou])", "z"), (r"qu(?=[ei])", "k"),
    (r"c(?=[aou])", "k"), (r"^h", ""), (r"ll", "y"), (r"g(?=[ei])", "j"), (r"ç", "ss"), (r"lh", "li"),
    (r"ción$", "sion"), (r"[áéíóúãõâêô]", None),
)
_WORD_RE = re.compile(r"[^\W\d_]+")
console = Console(width=200)


def misspell(question: str, rng: random.Random, rate: float) -> str:
    """`question` with some lower-case words of four letters or more misspelled by one sound-alike error each."""

    def one(match: re.Match[str]) -> str:
        word = match.group(0)
        if len(word) < 4 or not word.islower() or rng.random() > rate:
            return word
        options = [(pattern, replacement) for pattern, replacement in ERRORS if re.search(pattern, word)]
        if not options:
            return word
        pattern, replacement = rng.choice(options)
        if replacement is None:
            return "".join(c for c in unicodedata.normalize("NFD", word) if unicodedata.category(c) != "Mn")
        return re.sub(pattern, replacement, word, count=1)

    return _WORD_RE.sub(one, question)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", required=True)
    parser.add_argument("--eval-dir", default=str(ROOT.parent / "shared" / "eval"))
    parser.add_argument("--rate", type=float, default=0.35, help="share of eligible words misspelled")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    paths = sorted(Path(args.eval_dir).glob("dev-*.jsonl")) + [ROOT / "benchmarks" / "questions" / n for n in OWN_SETS]
    lex = LexHay(store_path=args.store)
    lex.preload_hits()
    corrector = lex.pipeline("retrieval").get_component("spelling_corrector")
    rng = random.Random(args.seed)
    table = Table(title=f"full nDCG@5 / hit@1, SpellingCorrector off and on (misspelled: rate {args.rate}, "
                        f"seed {args.seed})")
    for column in ("set", "questions", "n", "changed", "off nDCG@5", "on nDCG@5", "on - off", "off hit@1", "on hit@1"):
        table.add_column(column)
    for path in paths:
        items = load_labelled(path)
        written = [item["question"] for item in items]
        misspelled = [misspell(q, rng, args.rate) for q in written]
        for kind, questions in (("as written", written), ("misspelled", misspelled)):
            scores = {}
            for enabled in (False, True):
                corrector.enabled = enabled
                lex.clear_caches(query_embeddings=False)  # the request cache would answer the second pass
                rankings = [
                    article_ranking((d.meta.get("law_id"), d.meta.get("article"))
                                    for d in lex.retrieve_articles(q, top_k=10, mode="full"))
                    for q in questions
                ]
                scores[enabled] = per_query_scores(rankings, items)
            corrector.enabled = True
            changed = sum(bool(corrector.run(query=q)["corrections"]) for q in questions)
            diff = paired_bootstrap(scores[True]["nDCG@5"], scores[False]["nDCG@5"])
            table.add_row(
                path.stem, kind, str(len(items)), str(changed), format_ci(scores[False]["nDCG@5"]),
                format_ci(scores[True]["nDCG@5"]), format_paired(diff),
                format_ci(scores[False]["hit@1"], 2), format_ci(scores[True]["hit@1"], 2),
            )
            console.print(f"{path.stem} {kind}: done", style="dim")
    console.print(table)
    lex.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
