"""
Package list of the lexhay wheel (metadata and dependencies are in pyproject.toml).

The code packages (`components`, `pipelines`) are found as usual. The repository's top-level `yaml/` (canonical
pipelines) and `hayhooks/` (pipeline wrappers) folders are shipped as the resource packages
`lexhay_resources.yaml` and `lexhay_resources.hayhooks` (see `lexhay_resources.resource_dir`): pyproject.toml
cannot both discover packages and map folders to other package names.
"""

from pathlib import Path

from setuptools import find_packages, setup

RESOURCE_DIRS = {"lexhay_resources.yaml": "yaml", "lexhay_resources.hayhooks": "hayhooks"}
WRAPPERS = sorted(
    f"lexhay_resources.hayhooks.{wrapper.parent.name}" for wrapper in Path("hayhooks").glob("*/pipeline_wrapper.py")
)

setup(
    packages=[
        *find_packages(include=["components*", "pipelines*", "lexhay_resources"]),
        "components.legal.data",  # the legal tables: a data-only folder, listed so setuptools ships it knowingly
        "components.embedders.data",  # the int8 model's calibration texts: likewise
        *RESOURCE_DIRS,
        *WRAPPERS,
    ],
    package_dir=RESOURCE_DIRS,
    package_data={
        "components.legal.data": ["*.yaml", "*.json", "*.txt"],
        "components.embedders.data": ["*.jsonl"],
        "lexhay_resources.yaml": ["*.yaml"],
        "lexhay_resources.hayhooks": ["README.md"],
    },
)
