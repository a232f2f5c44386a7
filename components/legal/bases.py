"""
The constitutional basis of statute articles (`components/legal/data/bases.yaml`, `load_bases`): the constitution's
article and subdivision stating the right a statute article regulates ("art. 59 da CLT" -> "art. 7º, XVI, da CF").
"""

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Final

import yaml

from components.legal.citations import UNIT_KINDS
from components.legal.legal_text import UNIT_DEPTH

DEFAULT_BASES_FILE: Final[Path] = Path(__file__).resolve().parent / "data" / "bases.yaml"
Key = tuple[str, str]


@dataclass(frozen=True)
class Basis:
    """A constitutional basis: its law id, article key and subdivision (`UNIT_KINDS` pairs, outermost first)."""

    law_id: str
    article: str
    units: tuple[tuple[str, str], ...]


def _units(value: Any, where: str) -> tuple[tuple[str, str], ...]:
    kinds = [kind for kind in UNIT_KINDS if kind in UNIT_DEPTH]
    if not isinstance(value, list) or not value:
        raise ValueError(f"{where}: `units` must be a non-empty list of [kind, value] pairs, got {value!r}")
    units = []
    for unit in value:
        if not (isinstance(unit, list) and len(unit) == 2 and unit[0] in kinds and str(unit[1]).strip()):
            raise ValueError(f"{where}: a unit must be [kind, value] with kind one of {kinds}, got {unit!r}")
        units.append((str(unit[0]), str(unit[1]).strip()))
    return tuple(units)


def parse_bases(table: Any, source: str = "bases") -> dict[Key, tuple[Basis, ...]]:
    """
    The bases of a table laid out as `bases.yaml` is, by regulated article: `{(law_id, article_key): (Basis, ...)}`,
    article keys lower-cased as the parser stores them.

    :raises ValueError: A table not laid out so (the message says where).
    """
    if not isinstance(table, dict):
        raise ValueError(f"{source}: expected a mapping of basis law ids, got {type(table).__name__}")
    found: dict[Key, list[Basis]] = {}
    for law_id, articles in table.items():
        if not isinstance(articles, dict):
            raise ValueError(f"{source}: {law_id} must map article keys to lists of entries")
        for article, entries in articles.items():
            where = f"{source}: {law_id} art. {article}"
            if not isinstance(entries, list):
                raise ValueError(f"{where}: expected a list of entries, got {entries!r}")
            for entry in entries:
                if not isinstance(entry, dict) or not isinstance(entry.get("regulated_by"), dict):
                    raise ValueError(f"{where}: an entry needs `units` and `regulated_by: {{<law id>: [...]}}`")
                basis = Basis(str(law_id), str(article).strip().lower(), _units(entry.get("units"), where))
                for regulating_law, keys in entry["regulated_by"].items():
                    if not isinstance(keys, list) or not keys:
                        raise ValueError(f"{where}: `regulated_by` {regulating_law} must list article keys")
                    for key in keys:
                        found.setdefault((str(regulating_law), str(key).strip().lower()), []).append(basis)
    return {key: tuple(dict.fromkeys(bases)) for key, bases in found.items()}


@cache
def _load(path: str) -> dict[Key, tuple[Basis, ...]]:
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"bases file {path!r} does not exist")
    return parse_bases(yaml.safe_load(file.read_text(encoding="utf-8")) or {}, source=file.name)


def load_bases(path: str | Path | None = None) -> dict[Key, tuple[Basis, ...]]:
    """
    The constitutional bases by regulated article, from `path` or the bundled `bases.yaml` (read once per path).

    :raises ValueError: The file does not exist or is not laid out as `bases.yaml` is.
    """
    return _load(str(Path(path) if path else DEFAULT_BASES_FILE))
