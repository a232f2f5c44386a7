"""Paths of the bundled corpus and small real statute excerpts for tests."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "data" / "corpus"
ET_2015 = CORPUS / "BOE-A-2015-11430.md"
RD_2720 = CORPUS / "BOE-A-1999-346.md"
CE = CORPUS / "BOE-A-1978-31229.md"


def markdown_article(path: Path, number: str) -> str:
    """Raw text of `##### Artículo <number>.` (the Constitution's without the dot) up to the next heading, from a
    bundled statute (test data)."""
    text = path.read_text(encoding="utf-8")
    match = re.search(rf"^##### Artículo {re.escape(number)}(?:\.|$)(.*?)(?=^#)", text, flags=re.S | re.M)
    assert match, f"article {number} not found in {path.name}"
    return f"Artículo {number}.{match.group(1)}".strip()

