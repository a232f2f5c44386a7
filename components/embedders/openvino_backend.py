# SPDX-License-Identifier: Apache-2.0
"""
OpenVINO inference backend for sentence-transformers dense models (EmbeddingGemma).

The whole sentence-transformers stack of a local model folder (transformer, mean pooling, the Dense projections
and Normalize listed in its `modules.json`) is exported once with `torch.export` (dynamic batch and sequence
dimensions) and converted with `openvino.convert_model`; the result is saved beside the weights in
`<model folder>/openvino/` (`model.xml` / `model.bin`) with a marker recording the sha256 of both files and of the
source weights. `ensure_openvino_model` converts when the folder is missing, incomplete or its checksums do not
match (`lexhay models install` calls it once per dense model); `OpenVINOEncoder` runs it with the model's own
tokenizer, prompts and token limit, in bfloat16 where the CPU computes it natively (AMX / AVX512-BF16), in float32
elsewhere.

Which backend the dense embedders use is `LEXHAY_DENSE_BACKEND`: `openvino` (the default when the `openvino`
package is installed and the model is a sentence-transformers folder), or `torch` (sentence-transformers).
"""

import hashlib
import json
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from haystack import logging

from components.utils.hardware import cpu_has_native_bf16

logger = logging.getLogger(__name__)

BACKEND_ENV = "LEXHAY_DENSE_BACKEND"
BACKENDS = ("openvino", "torch")
OPENVINO_DIR = "openvino"
OPENVINO_MARKER = "openvino.json"
MARKER_VERSION = 1
SOURCE_WEIGHTS = "model.safetensors"
MAX_EXPORT_TOKENS = 2048
# Most padding tokens a batch row may get. A padding position far from every real token has no unmasked key in a
# sliding-window attention (EmbeddingGemma: 512) and comes out NaN, which mean pooling (x * mask) carries into the
# row's vector; batches are cut so rows differ by at most this many tokens, and a NaN row is re-run alone.
MAX_PADDING = 64
# Batch widths are rounded up to a multiple of this many tokens: the compiled model then meets few distinct input
# shapes (OpenVINO prepares a shape it has not just run), and the masked padding leaves the pooled vector unchanged
# up to bfloat16 rounding (exact in float32).
PAD_MULTIPLE = 16

_ENCODERS: dict[str, "OpenVINOEncoder"] = {}
_ENCODERS_LOCK = threading.Lock()
_CONVERT_LOCK = threading.Lock()


def openvino_available() -> bool:
    """Whether the `openvino` package can be imported."""
    try:
        import openvino  # noqa: F401, PLC0415
    except ImportError:
        return False
    return True


def dense_backend() -> str:
    """
    The dense inference backend asked for: env `LEXHAY_DENSE_BACKEND` (`openvino` or `torch`), else `openvino`
    when the package is installed, else `torch`.

    :raises ValueError: The env variable names another backend.
    """
    from pipelines.settings import current_settings  # noqa: PLC0415 - the one reader of LEXHAY_* variables

    value = (current_settings().dense_backend or "").strip().lower()
    if value and value not in BACKENDS:
        raise ValueError(f"{BACKEND_ENV} must be one of {BACKENDS}, got {value!r}")
    if value:
        return value
    return "openvino" if openvino_available() else "torch"


def is_sentence_transformers_folder(path: str | Path) -> bool:
    """Whether `path` is a local sentence-transformers model folder (it has `modules.json`)."""
    return (Path(path) / "modules.json").is_file()


def openvino_dir(model_path: str | Path) -> Path:
    """Where the converted model of the sentence-transformers folder `model_path` lives."""
    return Path(model_path) / OPENVINO_DIR


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _source_fingerprint(model_path: Path) -> dict[str, Any]:
    """Size and mtime of the source weights: a converted model is stale once they change."""
    weights = model_path / SOURCE_WEIGHTS
    stat = weights.stat() if weights.is_file() else None
    return {"file": SOURCE_WEIGHTS, "size": stat.st_size if stat else None,
            "mtime": int(stat.st_mtime) if stat else None}


def is_converted(model_path: str | Path, *, verify: bool = False) -> bool:
    """
    Whether `model_path` has a complete converted model matching its marker.

    :param model_path: The sentence-transformers model folder.
    :param verify: Re-hash `model.xml` and `model.bin` (sha256, ~1 s for EmbeddingGemma); otherwise the sizes and
        the xml's hash are checked and the source weights' size and mtime compared with the marker's.
    """
    folder = openvino_dir(model_path)
    try:
        marker = json.loads((folder / OPENVINO_MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if marker.get("version") != MARKER_VERSION or marker.get("source") != _source_fingerprint(Path(model_path)):
        return False
    for name in ("model.xml", "model.bin"):
        path, expected = folder / name, marker.get("files", {}).get(name, {})
        if not path.is_file() or path.stat().st_size != expected.get("size"):
            return False
        if (verify or name == "model.xml") and _sha256(path) != expected.get("sha256"):
            return False
    return True


def convert(model_path: str | Path, progress: Callable[[str], None] | None = None) -> Path:
    """
    Export the sentence-transformers model at `model_path` with `torch.export` and convert it to OpenVINO IR.

    The converted files are written to a temporary folder beside the target and moved into place with one rename,
    together with a marker holding their sha256; an existing (stale or corrupt) conversion is replaced.

    :returns: The folder holding `model.xml` / `model.bin`.
    :raises RuntimeError: `model_path` is not a sentence-transformers folder, or the export / conversion failed.
    """
    model_path = Path(model_path)
    if not is_sentence_transformers_folder(model_path):
        raise RuntimeError(f"{model_path} is not a sentence-transformers model folder (no modules.json)")
    report = progress or (lambda message: logger.info("{message}", message=message))
    import openvino as ov  # noqa: PLC0415
    import torch  # noqa: PLC0415
    from sentence_transformers import SentenceTransformer  # noqa: PLC0415

    started = time.perf_counter()
    report(f"{model_path.name}: exporting to OpenVINO (torch.export + openvino.convert_model, ~2 min, once)")
    model = SentenceTransformer(str(model_path), device="cpu", local_files_only=True,
                                model_kwargs={"dtype": torch.float32})

    class _Encoder(torch.nn.Module):
        """The sentence-transformers stack as a function of token ids and mask: the sentence embedding."""

        def __init__(self, stack: Any) -> None:
            super().__init__()
            self.stack = stack

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            return self.stack({"input_ids": input_ids, "attention_mask": attention_mask})["sentence_embedding"]

    wrapper = _Encoder(model).eval()
    sample = model.tokenizer(["title: none | text: uno dos tres", "task: search result | query: uno"],
                             padding=True, return_tensors="pt")
    positions = getattr(getattr(model[0], "auto_model", None), "config", None)
    limit = min(MAX_EXPORT_TOKENS, getattr(positions, "max_position_embeddings", None) or MAX_EXPORT_TOKENS)
    batch = torch.export.Dim("batch", min=1, max=4096)
    tokens = torch.export.Dim("tokens", min=2, max=limit)
    with torch.no_grad():
        try:
            exported = torch.export.export(
                wrapper, (sample["input_ids"], sample["attention_mask"]),
                dynamic_shapes=({0: batch, 1: tokens}, {0: batch, 1: tokens}),
            )
            converted = ov.convert_model(exported)
        except Exception as exc:  # noqa: BLE001 - any export failure: the converter's own tracing instead
            report(f"{model_path.name}: torch.export failed ({type(exc).__name__}); converting by tracing")
            converted = ov.convert_model(wrapper, example_input=(sample["input_ids"], sample["attention_mask"]))
    target = openvino_dir(model_path)
    staging = Path(tempfile.mkdtemp(prefix=".openvino-", dir=model_path))
    try:
        ov.save_model(converted, str(staging / "model.xml"), compress_to_fp16=False)
        files = {name: {"sha256": _sha256(staging / name), "size": (staging / name).stat().st_size}
                 for name in ("model.xml", "model.bin")}
        marker = {
            "version": MARKER_VERSION,
            "openvino": ov.__version__,
            "source": _source_fingerprint(model_path),
            "files": files,
            "converted_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        (staging / OPENVINO_MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
        staging.chmod(0o755)  # mkdtemp's 0700 would hide a shared models cache from other users
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    report(f"{model_path.name}: OpenVINO model ready in {target} ({time.perf_counter() - started:.0f} s)")
    return target


def ensure_openvino_model(
    model_path: str | Path, *, verify: bool = False, progress: Callable[[str], None] | None = None
) -> Path:
    """The converted model folder of `model_path`, converting it first when missing, stale or corrupt."""
    with _CONVERT_LOCK:
        if not is_converted(model_path, verify=verify):
            convert(model_path, progress)
    return openvino_dir(model_path)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


class OpenVINOEncoder:
    """
    Sentence embeddings from the converted model of a sentence-transformers folder.

    Texts are tokenized as sentence-transformers does (prompt prepended, truncated to the token limit), sorted by
    length so each batch is padded little, run through the compiled model (pooling, Dense and Normalize are part
    of it) and returned in the input order. One encoder per model folder is shared process-wide
    (`OpenVINOEncoder.shared`); calls are serialized.

    ### Usage example

    ```python
    encoder = OpenVINOEncoder.shared("/root/.cache/lexhay/models/embeddinggemma")
    vectors = encoder.encode(["¿Cuántos días de vacaciones tengo?"], prompt_name="query")
    ```
    """

    def __init__(self, model_path: str | Path) -> None:
        """
        Load (converting first if needed) the OpenVINO model of `model_path`.

        :raises RuntimeError: `model_path` is not a sentence-transformers folder or cannot be converted.
        """
        import openvino as ov  # noqa: PLC0415
        from transformers import AutoTokenizer  # noqa: PLC0415

        self.model_path = Path(model_path)
        folder = ensure_openvino_model(self.model_path)
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.model_path), local_files_only=True)
        settings = _read_json(self.model_path / "config_sentence_transformers.json")
        self.prompts: dict[str, str] = settings.get("prompts") or {}
        limit = _read_json(self.model_path / "sentence_bert_config.json").get("max_seq_length")
        self.max_seq_length = int(limit or MAX_EXPORT_TOKENS)
        self.precision = "bf16" if cpu_has_native_bf16() else "f32"
        core = ov.Core()
        config = {"INFERENCE_PRECISION_HINT": self.precision, "PERFORMANCE_HINT": "LATENCY"}
        self._compiled = core.compile_model(str(folder / "model.xml"), "CPU", config)
        self._request = self._compiled.create_infer_request()
        self.dimension = int(self._compiled.outputs[0].get_partial_shape()[-1].get_length())
        self._lock = threading.Lock()

    @classmethod
    def shared(cls, model_path: str | Path) -> "OpenVINOEncoder":
        """The process-wide encoder of `model_path` (loaded on first use)."""
        key = str(Path(model_path).resolve())
        with _ENCODERS_LOCK:
            if key not in _ENCODERS:
                _ENCODERS[key] = cls(key)
            return _ENCODERS[key]

    def count_tokens(self, texts: list[str]) -> list[int]:
        """Token counts of texts without special tokens."""
        return [len(ids) for ids in self.tokenizer(texts, add_special_tokens=False, verbose=False)["input_ids"]]

    def encode(
        self,
        texts: Sequence[str],
        *,
        prompt_name: str | None = None,
        max_length: int | None = None,
        batch_size: int = 16,
        progress_bar: bool = False,
    ) -> np.ndarray:
        """
        Embed `texts` (float32, one row per text, L2-normalized by the model's Normalize module).

        :param texts: The texts.
        :param prompt_name: A prompt of the model (`query`, `document`) prepended to each text.
        :param max_length: Token limit (prompt included); `None` = the model's own.
        :param batch_size: Texts per forward pass.
        :param progress_bar: Show a progress bar.
        """
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        prefix = self.prompts.get(prompt_name, "") if prompt_name else ""
        limit = min(max_length or self.max_seq_length, self.max_seq_length, MAX_EXPORT_TOKENS)
        encoded = self.tokenizer([prefix + t for t in texts], truncation=True, max_length=limit,
                                 verbose=False)["input_ids"]
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]), reverse=True)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        batches: list[list[int]] = []  # longest first; a new batch at `batch_size` rows or MAX_PADDING tokens
        for i in order:
            fits = batches and len(batches[-1]) < batch_size
            if fits and len(encoded[batches[-1][0]]) - len(encoded[i]) <= MAX_PADDING:
                batches[-1].append(i)
            else:
                batches.append([i])
        starts: Any = batches
        if progress_bar:
            from tqdm import tqdm  # noqa: PLC0415

            starts = tqdm(starts, desc="Embedding (OpenVINO)", unit="batch")
        for rows in starts:
            vectors = self._run([encoded[i] for i in rows])
            broken = [r for r in range(len(rows)) if not np.isfinite(vectors[r]).all()]
            for r in broken:  # never a NaN vector: the row alone, without padding
                vectors[r] = self._run([encoded[rows[r]]], multiple=1)[0]
            out[rows] = vectors
        return out

    def _run(self, rows: list[list[int]], multiple: int = PAD_MULTIPLE) -> np.ndarray:
        """One forward pass over token id rows, right-padded to the longest rounded up to `multiple` tokens."""
        pad = self.tokenizer.pad_token_id or 0
        width = -(-max(len(row) for row in rows) // multiple) * multiple
        ids = np.full((len(rows), width), pad, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for r, row in enumerate(rows):
            ids[r, : len(row)] = row
            mask[r, : len(row)] = 1
        with self._lock:
            result = self._request.infer({0: ids, 1: mask})
            return np.array(result[self._compiled.outputs[0]], dtype=np.float32)
