"""
Branches of law the bundled corpus does not hold (`components/legal/data/matters.yaml`, `load_matters`).

The corpus holds the labour, social-security, workplace-safety and constitutional law of Spain and Brazil. A
citizen also asks about theft, rent, divorce or traffic fines; a search then returns the nearest articles it has
(the labour-offences fines for "¿qué pena tiene un hurto?"), and an answer quoting them reads as if they were the
law on the matter. `ScopeChecker` compares a question with the phrases of these matters; the answer stages word the
notice with each matter's `labels`.
"""

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Final

import yaml

DEFAULT_MATTERS_FILE: Final[Path] = Path(__file__).resolve().parent / "data" / "matters.yaml"
MATTER_LANGUAGES: Final[tuple[str, ...]] = ("es", "pt")


@dataclass(frozen=True)
class Matter:
    """One branch of law: its id, its label per language, and the phrases that describe it per language."""

    id: str
    labels: dict[str, str]
    phrases: dict[str, tuple[str, ...]]

    def prototypes(self) -> list[str]:
        """The texts embedded for this matter: "<Label>: <phrase>" for each phrase of each language."""
        return [
            f"{self.labels[language][:1].upper()}{self.labels[language][1:]}: {phrase}"
            for language in MATTER_LANGUAGES
            for phrase in self.phrases[language]
        ]


def load_matters(path: str | Path | None = None) -> tuple[Matter, ...]:
    """
    The matters of a matters file (default: the bundled `components/legal/data/matters.yaml`), in file order.

    :param path: A YAML file shaped like the bundled one.
    :raises ValueError: The file is not a mapping of ids to `label` and `phrases` with a non-empty text for every
        language in `MATTER_LANGUAGES`.
    """
    return _load(str(Path(path) if path is not None else DEFAULT_MATTERS_FILE))


@cache
def _load(path: str) -> tuple[Matter, ...]:
    data: Any = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not data:
        raise ValueError(f"{path}: expected a mapping of matter ids to their label and phrases")
    matters = []
    for matter_id, entry in data.items():
        labels = entry.get("label") if isinstance(entry, dict) else None
        phrases = entry.get("phrases") if isinstance(entry, dict) else None
        valid = (
            isinstance(labels, dict)
            and isinstance(phrases, dict)
            and all(isinstance(labels.get(lang), str) and labels[lang].strip() for lang in MATTER_LANGUAGES)
            and all(
                isinstance(phrases.get(lang), list)
                and phrases[lang]
                and all(isinstance(p, str) and p.strip() for p in phrases[lang])
                for lang in MATTER_LANGUAGES
            )
        )
        if not valid:
            raise ValueError(
                f"{path}: matter {matter_id!r} needs `label` and `phrases` (a non-empty list of texts) for each of "
                f"{list(MATTER_LANGUAGES)}"
            )
        matters.append(
            Matter(
                id=str(matter_id),
                labels={lang: labels[lang].strip() for lang in MATTER_LANGUAGES},
                phrases={lang: tuple(p.strip() for p in phrases[lang]) for lang in MATTER_LANGUAGES},
            )
        )
    return tuple(matters)
