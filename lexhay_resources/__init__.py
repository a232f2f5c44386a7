"""
The resource folders lexhay ships beside its code: the canonical pipelines and the hayhooks pipeline wrappers.

In the repository they are the top-level folders `yaml/` and `hayhooks/`. A built wheel carries them inside this
package as `lexhay_resources/yaml/` and `lexhay_resources/hayhooks/` (`setup.py` maps the folders), so an installed
lexhay finds them with `importlib.resources` wherever site-packages is; a source checkout or an editable install
finds them beside this package.

Usage example:

```python
from lexhay_resources import resource_dir

resource_dir("yaml") / "query.yaml"       # the canonical query pipeline
resource_dir("hayhooks") / "ask"          # the `ask` pipeline wrapper's folder
```
"""

from importlib.resources import files
from pathlib import Path

RESOURCE_FOLDERS = ("yaml", "hayhooks")


def resource_dir(name: str) -> Path:
    """
    The folder of the shipped resource `name` (`yaml` or `hayhooks`).

    :param name: One of `RESOURCE_FOLDERS`.
    :returns: The folder inside the installed package (wheel install), else the repository's top-level folder.
    :raises ValueError: `name` is not a shipped resource folder.
    :raises FileNotFoundError: Neither location holds the folder (a broken install).
    """
    if name not in RESOURCE_FOLDERS:
        raise ValueError(f"unknown resource folder {name!r}; shipped: {', '.join(RESOURCE_FOLDERS)}")
    packaged = files(__name__) / name
    if isinstance(packaged, Path) and packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parents[1] / name  # a source checkout or an editable install
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"lexhay's {name}/ folder is missing: neither {packaged} nor {checkout} exists")
