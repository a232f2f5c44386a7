"""The table of known norms (`components/legal/data/laws.yaml`): law ids, short names, known derogations."""

from pathlib import Path
from typing import Any, Final

import yaml

DEFAULT_LAWS_FILE: Final[Path] = Path(__file__).resolve().parent / "data" / "laws.yaml"


def load_laws_table(laws_file: str | Path | None = None) -> dict[str, dict[str, Any]]:
    """
    The table of known norms (`laws: {<law_id>: {law_short: ..., ...}}`), from `laws_file` or the bundled one.

    :raises ValueError: If the file does not exist or is not such a table.
    """
    laws_path = Path(laws_file) if laws_file else DEFAULT_LAWS_FILE
    if not laws_path.is_file():
        raise ValueError(f"laws_file {str(laws_path)!r} does not exist")
    table = yaml.safe_load(laws_path.read_text(encoding="utf-8")) or {}
    if not isinstance(table, dict) or not isinstance(table.get("laws", {}), dict):
        raise ValueError(f"laws_file {str(laws_path)!r} must hold a mapping 'laws: {{<law_id>: {{...}}}}'")
    return {str(k): dict(v or {}) for k, v in table.get("laws", {}).items()}


def developed_laws(table: dict[str, dict[str, Any]]) -> dict[str, tuple[str, ...]]:
    """
    Each regulation's `develops` of a laws table (`load_laws_table`): law id -> the law ids of the laws it develops.

    :raises ValueError: A `develops` that is not a list of law ids.
    """
    found: dict[str, tuple[str, ...]] = {}
    for law_id, facts in table.items():
        develops = facts.get("develops")
        if develops is None:
            continue
        if not isinstance(develops, list) or not develops or not all(isinstance(x, str) and x for x in develops):
            raise ValueError(f"laws table: {law_id}: `develops` must be a non-empty list of law ids, got {develops!r}")
        found[law_id] = tuple(develops)
    return found
