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
elsewhere. Queries run on copies compiled for latency (one request, all cores), one per query width
(`QUERY_WIDTHS`): a question is padded to the first width that holds it and run at that fixed shape; longer texts and
batches run on a copy with dynamic shapes. Indexing runs on a copy compiled for throughput, which also outputs the
token states that passage vectors are pooled from, and keeps one batch in flight per stream. Every copy is compiled
from the graph with its embedding lookup rewritten (`gather_before_scaling`), so that none holds a float copy of the
int8 token embedding table.

Where the CPU has int8 dot-product instructions (AMX-INT8, AVX512-VNNI, AVX-VNNI), which do twice the work of
bfloat16 ones per instruction, the encoder runs an int8 copy of that model instead: weights and activations of its
linear layers quantized by NNCF's post-training quantization (`quantize`: SmoothQuant, then per-channel weight and
per-tensor activation scales from the statistics of a fixed calibration set, `data/int8_calibration.jsonl`: statute
passages with the document prompt and questions with the query prompt), except the few layers whose inputs have
outlier channels a per-tensor scale cannot hold (`float_layers`). The copy lives in `<model folder>/openvino-int8/`
with its own marker (the float model's and the calibration set's sha256): `ensure_int8_model` quantizes when it is
missing or stale (`lexhay models install` does it once). Documents and queries are embedded by the same model, so a
store's vectors and its queries match; the benchmarks compare retrieval quality with either model.

Which backend the dense embedders use is `LEXHAY_DENSE_BACKEND`: `openvino` (the default when the `openvino`
package is installed and the model is a sentence-transformers folder), or `torch` (sentence-transformers). Which
OpenVINO model is `LEXHAY_DENSE_PRECISION`: `int8`, `float`, or unset (int8 where the CPU has int8 instructions and
the copy exists or `nncf` can make it; float otherwise).
"""

import hashlib
import json
import logging as logging_module
import shutil
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from haystack import logging

from components.embedders.late_chunking import PoolingHead, token_ranges
from components.utils.hardware import cpu_has_native_bf16, cpu_has_native_int8
from components.utils.models import install_lock

logger = logging.getLogger(__name__)

PRECISIONS = ("int8", "float")
OPENVINO_DIR = "openvino"
INT8_DIR = "openvino-int8"
OPENVINO_MARKER = "openvino.json"
MARKER_VERSION = 1
INT8_MARKER_VERSION = 2  # 2: outlier layers kept in float
# the texts whose activations set the int8 model's scales: prompt name and text per line
CALIBRATION_FILE = Path(__file__).parent / "data" / "int8_calibration.jsonl"
CALIBRATION_TOKENS = 512  # calibration texts are cut here: longer ones only slow the statistics down
# a linear layer whose input's largest channel exceeds the median channel by more than this stays float (see
# `float_layers`): 127 / 64 leaves the typical channel under 2 int8 levels
OUTLIER_FACTOR_LIMIT = 64
OUTLIER_SAMPLE_STEP = 8  # the outliers are measured on every 8th calibration text (float32 runs of the model)
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
# Token widths of the copies that embed one text (`OpenVINOEncoder.encode` of a question): a text is padded to the first
# width that holds it and run on a copy compiled for exactly that shape, where OpenVINO fuses the element-wise steps
# into their neighbours and picks its kernels once; a copy with dynamic shapes prepares each pass's shapes as it runs.
# Questions with the query prompt are rarely over 64 tokens; a longer text, and every batch, runs on the dynamic copy.
QUERY_WIDTHS = (32, 64)

_ENCODERS: dict[tuple[str, str], "OpenVINOEncoder"] = {}
_ENCODERS_LOCK = threading.Lock()
_INT8_FAILED: set[str] = set()  # model folders whose int8 model could not be made in this process
_CONVERT_LOCK = threading.RLock()  # ensure_int8_model converts first, under the same lock


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

    :raises ValueError: The env variable names another backend (the settings refuse it when read).
    """
    from pipelines.settings import current_settings  # noqa: PLC0415 - the one reader of LEXHAY_* variables

    return current_settings().dense_backend or ("openvino" if openvino_available() else "torch")


def nncf_available() -> bool:
    """Whether `nncf` (which makes the int8 model; running it needs only `openvino`) can be imported."""
    try:
        import nncf  # noqa: F401, PLC0415
    except ImportError:
        return False
    return True


def dense_precision(model_path: str | Path | None = None) -> str:
    """
    Which OpenVINO model embeds: env `LEXHAY_DENSE_PRECISION` (`int8` or `float`), else `int8` where the CPU has
    int8 dot-product instructions and the int8 model of `model_path` exists or `nncf` can make it, else `float`.

    :raises ValueError: The env variable names another precision (the settings refuse it when read).
    """
    value = current_precision_setting()
    if value:
        return value
    if not cpu_has_native_int8():
        return "float"
    # nncf first: the import check is free, while checking a made model hashes its files
    ready = nncf_available() or (model_path is not None and is_quantized(model_path))
    return "int8" if ready else "float"


def current_precision_setting() -> str:
    """`LEXHAY_DENSE_PRECISION` as set (the settings lower-case it and refuse other values; empty when unset)."""
    from pipelines.settings import current_settings  # noqa: PLC0415 - the one reader of LEXHAY_* variables

    return current_settings().dense_precision or ""


def is_sentence_transformers_folder(path: str | Path) -> bool:
    """Whether `path` is a local sentence-transformers model folder (it has `modules.json`)."""
    return (Path(path) / "modules.json").is_file()


def openvino_dir(model_path: str | Path) -> Path:
    """Where the converted model of the sentence-transformers folder `model_path` lives."""
    return Path(model_path) / OPENVINO_DIR


def int8_dir(model_path: str | Path) -> Path:
    """Where the int8 model of the sentence-transformers folder `model_path` lives."""
    return Path(model_path) / INT8_DIR


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
    marker = _read_json(openvino_dir(model_path) / OPENVINO_MARKER)
    if marker.get("version") != MARKER_VERSION or marker.get("source") != _source_fingerprint(Path(model_path)):
        return False
    return _files_match(openvino_dir(model_path), marker, verify=verify)


def is_quantized(model_path: str | Path, *, verify: bool = False) -> bool:
    """
    Whether `model_path` has a complete int8 model made from its current converted model and calibration set.

    :param model_path: The sentence-transformers model folder.
    :param verify: Re-hash the int8 `model.bin` too (and the converted model's, through `is_converted`).
    """
    if not is_converted(model_path, verify=verify):
        return False
    marker = _read_json(int8_dir(model_path) / OPENVINO_MARKER)
    if marker.get("version") != INT8_MARKER_VERSION or marker.get("source") != _int8_source(Path(model_path)):
        return False
    return _files_match(int8_dir(model_path), marker, verify=verify)


def _files_match(folder: Path, marker: dict[str, Any], *, verify: bool) -> bool:
    """Whether `model.xml` / `model.bin` of `folder` have the marker's sizes (and sha256: the xml always)."""
    for name in ("model.xml", "model.bin"):
        path, expected = folder / name, marker.get("files", {}).get(name, {})
        if not path.is_file() or path.stat().st_size != expected.get("size"):
            return False
        if (verify or name == "model.xml") and _sha256(path) != expected.get("sha256"):
            return False
    return True


def _int8_source(model_path: Path) -> dict[str, Any]:
    """What an int8 model is made from: the converted model's weights and the calibration set (sha256 of each)."""
    converted = _read_json(openvino_dir(model_path) / OPENVINO_MARKER).get("files", {}).get("model.bin", {})
    return {"model.bin": converted.get("sha256"), "calibration": _sha256(CALIBRATION_FILE)}


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
    target = _install(converted, openvino_dir(model_path),
                      {"version": MARKER_VERSION, "source": _source_fingerprint(model_path)})
    report(f"{model_path.name}: OpenVINO model ready in {target} ({time.perf_counter() - started:.0f} s)")
    return target


def quantize(model_path: str | Path, progress: Callable[[str], None] | None = None) -> Path:
    """
    Make the int8 model of `model_path` from its converted model (converting first if needed) with NNCF.

    Every linear layer but those `float_layers` keeps in float gets int8 weights (per channel) and int8
    activations (per tensor), after SmoothQuant has moved part of the activations' outlier channels into the
    weights; the scales come from the model's activations on the calibration set (`CALIBRATION_FILE`, each text
    with its prompt, cut at `CALIBRATION_TOKENS` or the model's own limit). Written and marked like the converted
    model (`convert`), in `int8_dir(model_path)`.

    :returns: The folder holding the int8 `model.xml` / `model.bin`.
    :raises RuntimeError: `nncf` is not installed, `model_path` cannot be converted, or the quantization failed.
    """
    model_path = Path(model_path)
    try:
        import nncf  # noqa: PLC0415
    except ImportError as exc:
        raise RuntimeError("the int8 model needs nncf: pip install 'lexhay[openvino]'") from exc
    import openvino as ov  # noqa: PLC0415
    from transformers import AutoTokenizer  # noqa: PLC0415

    report = progress or (lambda message: logger.info("{message}", message=message))
    folder = ensure_openvino_model(model_path, progress=progress)
    started = time.perf_counter()
    report(f"{model_path.name}: quantizing to int8 (NNCF, calibrated on {CALIBRATION_FILE.name}, ~3 min, once)")
    tokenizer = AutoTokenizer.from_pretrained(str(model_path), local_files_only=True)
    prompts = model_prompts(model_path)
    limits = (_read_json(model_path / "sentence_bert_config.json").get("max_seq_length"),
              _read_json(model_path / "config.json").get("max_position_embeddings"), CALIBRATION_TOKENS)
    limit = min(int(n) for n in limits if n)
    samples = []
    for line in CALIBRATION_FILE.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        ids = tokenizer(prompts.get(item["prompt"], "") + item["text"], truncation=True, max_length=limit,
                        verbose=False)["input_ids"]
        samples.append([np.array([ids], dtype=np.int64), np.ones((1, len(ids)), dtype=np.int64)])
    core = ov.Core()
    level = nncf.nncf_logger.level
    nncf.set_log_level(logging_module.WARNING)  # not one INFO line per layer it leaves float
    try:
        kept = float_layers(core.read_model(str(folder / "model.xml")), samples[::OUTLIER_SAMPLE_STEP])
        report(f"{model_path.name}: {len(kept)} linear layers kept in float (outlier inputs, or after pooling)")
        quantized = nncf.quantize(core.read_model(str(folder / "model.xml")), nncf.Dataset(samples),
                                  model_type=nncf.ModelType.TRANSFORMER, subset_size=len(samples),
                                  ignored_scope=nncf.IgnoredScope(names=kept))
    except Exception as exc:  # noqa: BLE001 - any failure of NNCF or of the float runs: the caller decides
        raise RuntimeError(f"int8 quantization of {model_path.name} failed: {type(exc).__name__}: {exc}") from exc
    finally:
        nncf.set_log_level(level)
    target = _install(quantized, int8_dir(model_path),
                      {"version": INT8_MARKER_VERSION, "nncf": nncf.__version__, "source": _int8_source(model_path),
                       "float_layers": kept})
    report(f"{model_path.name}: int8 model ready in {target} ({time.perf_counter() - started:.0f} s)")
    return target


def float_layers(model: Any, samples: list[list[np.ndarray]]) -> list[str]:
    """
    The linear layers (MatMul nodes) of the OpenVINO `model` that `quantize` keeps in float.

    - A layer whose input has outlier channels: its activations are quantized with one scale per tensor, so when
      one channel's largest value is more than `OUTLIER_FACTOR_LIMIT` times the median channel's (on `samples`,
      float32), the typical channel is left fewer than 2 of int8's 127 levels. (In EmbeddingGemma these are the MLP
      down projections of a few layers, the first one's above all.)
    - A layer after pooling (a 2-D input: one row per text): it runs once per text, so int8 would save nothing.
    """
    import openvino as ov  # noqa: PLC0415

    layers = [op for op in model.get_ordered_ops() if op.get_type_name() == "MatMul"]
    kept = {op.get_friendly_name() for op in layers if op.input(0).get_partial_shape().rank.get_length() == 2}
    inputs = {op.get_friendly_name(): op.input_value(0) for op in layers}  # each layer's input, its producer's output
    source_of = {name: (out.get_node().get_friendly_name(), out.get_index()) for name, out in inputs.items()}
    sources: dict[tuple[str, int], int] = {}  # a producing output -> its index among the model's outputs
    for name, out in inputs.items():
        if name not in kept and source_of[name] not in sources:
            sources[source_of[name]] = len(model.outputs)
            model.add_outputs([out])
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    request = compiled.create_infer_request()
    factors = dict.fromkeys(sources, 0.0)
    for sample in samples:
        result = request.infer({0: sample[0], 1: sample[1]})
        for key, index in sources.items():
            values = np.abs(np.asarray(result[compiled.outputs[index]], dtype=np.float32))
            per_channel = values.reshape(-1, values.shape[-1]).max(axis=0)
            factors[key] = max(factors[key], float(per_channel.max() / max(float(np.median(per_channel)), 1e-12)))
    kept |= {name for name, key in source_of.items() if factors.get(key, 0.0) > OUTLIER_FACTOR_LIMIT}
    return sorted(kept)


def _install(model: Any, target: Path, marker: dict[str, Any]) -> Path:
    """
    Save the OpenVINO `model` as `target` (`model.xml` / `model.bin` and a marker: `marker` with their sha256 and
    sizes): written to a temporary folder beside it and moved into place with one rename, replacing what was there.
    """
    import openvino as ov  # noqa: PLC0415

    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        ov.save_model(model, str(staging / "model.xml"), compress_to_fp16=False)
        files = {name: {"sha256": _sha256(staging / name), "size": (staging / name).stat().st_size}
                 for name in ("model.xml", "model.bin")}
        marker = {**marker, "openvino": ov.__version__, "files": files,
                  "converted_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        (staging / OPENVINO_MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
        staging.chmod(0o755)  # mkdtemp's 0700 would hide a shared models cache from other users
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def ensure_openvino_model(
    model_path: str | Path, *, verify: bool = False, progress: Callable[[str], None] | None = None
) -> Path:
    """The converted model folder of `model_path`, converting it first when missing, stale or corrupt."""
    return _made(openvino_dir(model_path), lambda: is_converted(model_path, verify=verify),
                 lambda: convert(model_path, progress))


def ensure_int8_model(
    model_path: str | Path, *, verify: bool = False, progress: Callable[[str], None] | None = None
) -> Path:
    """The int8 model folder of `model_path`, quantizing it first when missing, stale or corrupt (see `quantize`)."""
    # its lock is taken before the float model's (quantize converts first), never after
    return _made(int8_dir(model_path), lambda: is_quantized(model_path, verify=verify),
                 lambda: quantize(model_path, progress))


def _made(target: Path, ready: Callable[[], bool], make: Callable[[], Any]) -> Path:
    """
    `target`, made first by `make` unless `ready()`. Threads of this process take turns; processes take the lock
    of the processes that would write `target`, so a server and `lexhay index` started together on a model not yet
    made make it once, and neither removes the folder while the other moves its copy into place. The file lock is
    taken only when `target` must be made, so a read-only models cache that holds the made model needs no lock file.
    """
    with _CONVERT_LOCK:
        if not ready():
            with install_lock(target.parent / f".{target.name}.lock"):
                if not ready():  # another process may have just made it
                    make()
    return target


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def model_prompts(model_path: Path) -> dict[str, str]:
    """The prompts (`query`, `document`, ...) a sentence-transformers folder prepends to texts."""
    return _read_json(model_path / "config_sentence_transformers.json").get("prompts") or {}


def _length_batches(encoded: Sequence[Sequence[int]], batch_size: int) -> list[list[int]]:
    """Row indices in batches, longest first; a new batch at `batch_size` rows or MAX_PADDING tokens of padding."""
    batches: list[list[int]] = []
    for i in sorted(range(len(encoded)), key=lambda i: len(encoded[i]), reverse=True):
        fits = batches and len(batches[-1]) < batch_size
        if fits and len(encoded[batches[-1][0]]) - len(encoded[i]) <= MAX_PADDING:
            batches[-1].append(i)
        else:
            batches.append([i])
    return batches


def gather_before_scaling(model: Any) -> bool:
    """
    Rewrite `model`'s int8 embedding lookup to scale the rows it looks up instead of the whole table.

    The int8 model stores the token embedding table as int8 rows with a float scale each, looked up as
    `Gather(Convert(table) * scales, ids)`. OpenVINO's CPU plugin folds `Convert(table) * scales` at compile time into
    a float32 copy of the whole table (262,144 x 768 floats for EmbeddingGemma, 0.8 GB), held by every compiled copy
    of the model. `Convert(Gather(table, ids)) * Gather(scales, ids)` computes the same values for the rows looked up,
    and the table stays int8. A graph without such a lookup (the float model: a float table) is left unchanged.

    :param model: An `openvino.Model`, rewritten in place.
    :returns: Whether a lookup was rewritten.
    """
    from openvino import opset13 as ops  # noqa: PLC0415

    rewritten = False
    for gather in model.get_ordered_ops():
        if gather.get_type_name() != "Gather" or gather.get_batch_dims() != 0:
            continue
        scaled, ids, axis = (gather.input_value(i) for i in range(3))
        if scaled.get_node().get_type_name() != "Multiply" or not _is_constant(axis, [0]):
            continue
        convert, scales = scaled.get_node().input_value(0), scaled.get_node().input_value(1)
        if convert.get_node().get_type_name() != "Convert" or scales.get_node().get_type_name() != "Constant":
            continue
        table = convert.get_node().input_value(0)
        int8 = table.get_element_type().get_type_name() in ("i8", "u8")
        if table.get_node().get_type_name() != "Constant" or not int8 or len(table.get_shape()) != 2:
            continue
        rows, scale_shape = table.get_shape()[0], list(scales.get_shape())
        if len(scale_shape) == 2 and scale_shape[0] == rows and scale_shape[1] in (1, table.get_shape()[1]):
            row_scales = ops.gather(scales, ids, axis).output(0)  # one scale per row (or per element): looked up too
        elif len(scale_shape) < 2 or scale_shape[0] == 1:
            row_scales = scales  # one scale for every row (or per column): broadcast as before
        else:
            continue
        looked_up = ops.convert(ops.gather(table, ids, axis), convert.get_element_type())
        replacement = ops.multiply(looked_up, row_scales)
        replacement.set_friendly_name(gather.get_friendly_name())
        gather.output(0).replace(replacement.output(0))
        rewritten = True
    return rewritten


def _is_constant(value: Any, expected: list[int]) -> bool:
    """Whether the graph value `value` is a Constant holding `expected`."""
    node = value.get_node()
    return node.get_type_name() == "Constant" and node.get_data().reshape(-1).tolist() == expected


def token_states_output(model: Any) -> Any | None:
    """
    The output of a converted sentence-transformers model that holds its token states before mean pooling, or
    `None`: the input `x` of the pooling's masked sum `ReduceSum(x * mask)`, where `mask` comes from the
    `attention_mask` input through shape and type conversions.
    """
    passthrough = {"Convert", "Unsqueeze", "Broadcast", "Reshape"}

    def from_mask(node: Any) -> bool:
        while node.get_type_name() in passthrough:
            node = node.input_value(0).get_node()
        return node.get_type_name() == "Parameter" and "attention_mask" in node.get_friendly_name()

    for op in model.get_ordered_ops():
        if op.get_type_name() != "ReduceSum":
            continue
        product = op.input_value(0).get_node()
        if product.get_type_name() != "Multiply":
            continue
        left, right = product.input_value(0), product.input_value(1)
        if from_mask(right.get_node()) and len(left.get_partial_shape()) == 3:
            return left
        if from_mask(left.get_node()) and len(right.get_partial_shape()) == 3:
            return right
    return None


class OpenVINOEncoder:
    """
    Sentence embeddings from the converted (float) or int8 model of a sentence-transformers folder.

    Texts are tokenized as sentence-transformers does (prompt prepended, truncated to the token limit), sorted by
    length so each batch is padded little, run through the compiled model (pooling, Dense and Normalize are part
    of it) and returned in the input order. One text of up to `QUERY_WIDTHS[-1]` tokens (a question) runs on the copy
    compiled for the first query width that holds it. One encoder per model folder and weights is shared process-wide
    (`OpenVINOEncoder.shared`, which picks the weights by `dense_precision`); calls are serialized.

    ### Usage example

    ```python
    encoder = OpenVINOEncoder.shared("/root/.cache/lexhay/models/embeddinggemma")
    vectors = encoder.encode(["¿Cuántos días de vacaciones tengo?"], prompt_name="query")
    ```
    """

    def __init__(self, model_path: str | Path, *, weights: str = "float") -> None:
        """
        Load (converting or quantizing first if needed) the OpenVINO model of `model_path`.

        :param model_path: The sentence-transformers model folder.
        :param weights: `float` (the converted model) or `int8` (its quantized copy, see `quantize`).
        :raises ValueError: `weights` is neither.
        :raises RuntimeError: `model_path` is not a sentence-transformers folder or cannot be converted, or the int8
            model cannot be made.
        """
        import openvino as ov  # noqa: PLC0415
        from transformers import AutoTokenizer  # noqa: PLC0415

        if weights not in PRECISIONS:
            raise ValueError(f"weights must be one of {PRECISIONS}, got {weights!r}")
        self.model_path = Path(model_path)
        self.weights = weights
        folder = ensure_int8_model(self.model_path) if weights == "int8" else ensure_openvino_model(self.model_path)
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.model_path), local_files_only=True)
        self.prompts = model_prompts(self.model_path)
        limit = _read_json(self.model_path / "sentence_bert_config.json").get("max_seq_length")
        self.max_seq_length = int(limit or MAX_EXPORT_TOKENS)
        self.precision = "bf16" if cpu_has_native_bf16() else "f32"
        config = {"INFERENCE_PRECISION_HINT": self.precision, "PERFORMANCE_HINT": "LATENCY"}
        self.dimension = int(ov.Core().read_model(str(folder / "model.xml")).outputs[0].get_partial_shape()[-1]
                             .get_length())
        # the plain model (dynamic shapes) and the query copies (one per `QUERY_WIDTHS` width), each compiled on first
        # use (`compile_for_queries` compiles the first width's): an indexing process runs only the copy with token
        # states (`supports_passages`), and each compiled copy holds its own weights
        self._compiled: Any = None
        self._request: Any = None
        self._queries: dict[int, tuple[Any, Any]] = {}
        self._lock = threading.Lock()
        self._xml, self._config = folder / "model.xml", config
        self.head: PoolingHead | None = None
        self._with_states: tuple[Any, Any] | None = None  # compiled on first use, see `supports_passages`
        self._states_checked = False

    @classmethod
    def shared(cls, model_path: str | Path, weights: str | None = None) -> "OpenVINOEncoder":
        """
        The process-wide encoder of `model_path` with `weights` (loaded on first use).

        :param model_path: The sentence-transformers model folder.
        :param weights: `float` or `int8`; `None`: `dense_precision(model_path)`, and the float model when that
            chose int8 by itself (no `LEXHAY_DENSE_PRECISION`) and the int8 model cannot be made (logged once).
        """
        path = str(Path(model_path).resolve())
        automatic = weights is None and not current_precision_setting()
        chosen = weights or ("float" if automatic and path in _INT8_FAILED else dense_precision(path))
        try:
            return cls._loaded(path, chosen)
        except RuntimeError as exc:
            if not (automatic and chosen == "int8"):
                raise
            logger.warning("int8 model of {path} unavailable ({error}); using the float model", path=path,
                           error=str(exc))
            _INT8_FAILED.add(path)  # not tried again by every embedder of this process
            return cls._loaded(path, "float")

    @classmethod
    def _loaded(cls, path: str, weights: str) -> "OpenVINOEncoder":
        with _ENCODERS_LOCK:
            if (path, weights) not in _ENCODERS:
                _ENCODERS[path, weights] = cls(path, weights=weights)
            return _ENCODERS[path, weights]

    def compile_for_queries(self) -> None:
        """
        Compiles the copy that embeds a question of up to `QUERY_WIDTHS[0]` tokens (once; later calls return at once).

        `encode` compiles each copy on first use; a query embedder calls this at warm-up so that its first question
        does not wait for it (a longer question compiles the next width's copy when it comes).
        """
        with self._lock:
            self._query_copy(QUERY_WIDTHS[0])

    def _graph(self) -> Any:
        """This encoder's model graph, read from its IR, its embedding lookup rewritten (`gather_before_scaling`)."""
        import openvino as ov  # noqa: PLC0415

        model = ov.Core().read_model(str(self._xml))
        gather_before_scaling(model)
        return model

    def _plain(self) -> tuple[Any, Any]:
        """The compiled plain model and its infer request, compiled now if not yet (the caller holds `_lock`)."""
        if self._compiled is None:
            import openvino as ov  # noqa: PLC0415

            compiled = ov.Core().compile_model(self._graph(), "CPU", self._config)
            self._compiled, self._request = compiled, compiled.create_infer_request()
        return self._compiled, self._request

    def _query_copy(self, width: int) -> tuple[Any, Any]:
        """
        The copy compiled for one text of exactly `width` tokens and its infer request, compiled now if not yet (the
        caller holds `_lock`).
        """
        if width not in self._queries:
            import openvino as ov  # noqa: PLC0415

            model = self._graph()
            model.reshape({model.inputs[0]: [1, width], model.inputs[1]: [1, width]})
            compiled = ov.Core().compile_model(model, "CPU", self._config)
            self._queries[width] = (compiled, compiled.create_infer_request())
        return self._queries[width]

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
        encoded, _ = self._tokenized(texts, prompt_name, max_length)
        ids = encoded["input_ids"]
        if len(ids) == 1 and len(ids[0]) <= QUERY_WIDTHS[-1]:
            vector = self._run_query(ids[0])
            if np.isfinite(vector).all():  # else run as any row: a NaN row is run again alone, unpadded
                return vector[None, :]
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, vector, _ in self._passes(ids, batch_size, progress_bar, desc="Embedding (OpenVINO)"):
            out[i] = vector
        return out

    def _tokenized(
        self, texts: Sequence[str], prompt_name: str | None, max_length: int | None, *, offsets: bool = False
    ) -> tuple[Any, int]:
        """The texts tokenized as sentence-transformers does (prompt prepended, truncated), and the prompt's length."""
        prefix = self.prompts.get(prompt_name, "") if prompt_name else ""
        limit = min(max_length or self.max_seq_length, self.max_seq_length, MAX_EXPORT_TOKENS)
        extra = {"return_offsets_mapping": True} if offsets else {}
        encoded = self.tokenizer([prefix + t for t in texts], truncation=True, max_length=limit, verbose=False, **extra)
        return encoded, len(prefix)

    def _passes(
        self, ids: list[list[int]], batch_size: int, progress_bar: bool, *, desc: str, states: bool = False
    ) -> Iterator[tuple[int, np.ndarray, np.ndarray | None]]:
        """
        Each row's vector (and with `states` its token states, padding cut), from batches of rows of like length
        (`_length_batches`); never a NaN vector: such a row is run again alone, without padding. Without `states`
        the batches run one after another on the plain model; with them, on the model with token states, several
        at a time (`_state_batches`), and the rows come in the order their batches finish.
        """
        batches: Any = _length_batches(ids, batch_size)
        if progress_bar:
            from tqdm import tqdm  # noqa: PLC0415

            batches = tqdm(batches, desc=desc, unit="batch")
        if states:
            results: Iterator[tuple[list[int], np.ndarray, np.ndarray | None]] = self._state_batches(ids, batches)
        else:
            results = ((rows, self._run([ids[i] for i in rows]), None) for rows in batches)
        for rows, vectors, tokens in results:
            for r, i in enumerate(rows):
                vector, row_states = vectors[r], None if tokens is None else tokens[r]
                if not np.isfinite(vector).all():
                    if states:
                        alone, alone_states = self._run([ids[i]], multiple=1, states=True)
                        vector, row_states = alone[0], alone_states[0]
                    else:
                        vector = self._run([ids[i]], multiple=1)[0]
                yield i, vector, None if row_states is None else row_states[: len(ids[i])]

    def _state_batches(
        self, ids: list[list[int]], batches: Iterable[list[int]]
    ) -> Iterator[tuple[list[int], np.ndarray, np.ndarray]]:
        """
        Each batch's rows, vectors and token states from the model with token states, as the batches finish.

        That model is compiled for throughput (`supports_passages`): one stream per group of cores, each running its
        own batch on its own threads. That keeps the cores busier than one batch split over all of them, where the
        small operations between two matrix products wait for the slowest thread; the vectors are the same. The
        batches go through a queue of as many infer requests as the model has streams, made for this call, so two
        calls never share a request.
        """
        import openvino as ov  # noqa: PLC0415

        compiled, _ = self._with_states or (None, None)
        if compiled is None:
            raise RuntimeError("token states asked for, but the model with them is not compiled")
        queue = ov.AsyncInferQueue(compiled, max(1, int(compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))))
        finished: deque[tuple[list[int], np.ndarray, np.ndarray]] = deque()

        def collect(request: Any, rows: list[int]) -> None:  # on OpenVINO's thread: copied out before reuse
            finished.append((rows, np.array(request.get_output_tensor(0).data, dtype=np.float32),
                             np.array(request.get_output_tensor(1).data, dtype=np.float32)))

        queue.set_callback(collect)
        for rows in batches:
            ids_array, mask = self._padded([ids[i] for i in rows], PAD_MULTIPLE)
            queue.start_async({0: ids_array, 1: mask}, rows)  # waits while every request is busy
            while finished:
                yield finished.popleft()
        queue.wait_all()
        while finished:
            yield finished.popleft()

    def supports_passages(self) -> bool:
        """
        Whether `encode_passages` can pool passage vectors: a mean-pooling model whose token states were found.

        The first call reads the graph and, when it has them, compiles a second copy of the model that also outputs
        its token states (kept for `encode_passages`); later calls only answer. Queries and `encode` keep the plain
        model, so a process that only answers questions never compiles it, and never copies token states out of a
        pass.
        """
        with self._lock:
            if not self._states_checked:
                import openvino as ov  # noqa: PLC0415

                core = ov.Core()
                model = self._graph()
                states = token_states_output(model)
                head = PoolingHead.from_folder(self.model_path) if states is not None else None
                if head is not None:
                    model.add_outputs([states])
                    # throughput: indexing runs several batches at once (`_state_batches`)
                    compiled = core.compile_model(model, "CPU", {**self._config, "PERFORMANCE_HINT": "THROUGHPUT"})
                    self._with_states, self.head = (compiled, compiled.create_infer_request()), head
                self._states_checked = True
        return self.head is not None

    def encode_passages(
        self,
        texts: Sequence[str],
        passages: Sequence[Sequence[tuple[int, int] | None]],
        *,
        prompt_name: str | None = None,
        max_length: int | None = None,
        batch_size: int = 16,
        progress_bar: bool = False,
    ) -> tuple[np.ndarray, list[list[np.ndarray | None]]]:
        """
        Embed `texts` as `encode` does, and each text's passages from the same pass (late chunking).

        :param texts: The texts.
        :param passages: For each text, the character spans of its passages in it (`None` for one not there).
        :param prompt_name: A prompt of the model prepended to each text (the spans are shifted past it).
        :param max_length: Token limit (prompt included); a passage past it gets no vector.
        :param batch_size: Texts per forward pass.
        :param progress_bar: Show a progress bar.
        :returns: The texts' vectors, and for each text one vector per passage (`None` where there is none).
        :raises RuntimeError: The model has no token states to pool (`supports_passages()` is false).
        """
        if not self.supports_passages() or self.head is None:
            raise RuntimeError(f"{self.model_path.name}: no mean-pooled token states to pool passage vectors from")
        if len(passages) != len(texts):
            raise ValueError(f"{len(texts)} texts but {len(passages)} passage lists")
        encoded, shift = self._tokenized(texts, prompt_name, max_length, offsets=True)
        ranges = [
            token_ranges(offsets, [None if s is None else (s[0] + shift, s[1] + shift) for s in spans])
            for offsets, spans in zip(encoded["offset_mapping"], passages, strict=True)
        ]
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        means: list[list[np.ndarray | None]] = [[] for _ in texts]
        passes = self._passes(encoded["input_ids"], batch_size, progress_bar, states=True,
                              desc="Embedding (OpenVINO, with passages)")
        for i, vector, states in passes:
            vectors[i] = vector
            means[i] = self.head.means(states, ranges[i])
        # the head (two 768 x 3072 projections for EmbeddingGemma) once for every passage, after the model's passes:
        # per text, it would read its weights again for a handful of rows, on the cores the passes run on
        return vectors, self.head.apply(means)

    def _run(self, rows: list[list[int]], multiple: int = PAD_MULTIPLE, states: bool = False) -> Any:
        """
        One forward pass over token id rows, right-padded to the longest rounded up to `multiple` tokens: the
        vectors, or with `states` the vectors and the token states `[rows, tokens, hidden]`.
        """
        ids, mask = self._padded(rows, multiple)
        with self._lock:
            if not states:
                plain, request = self._plain()
                result = request.infer({0: ids, 1: mask})
                return np.array(result[plain.outputs[0]], dtype=np.float32)
            compiled, request = self._with_states or (None, None)
            if compiled is None:
                raise RuntimeError("token states asked for, but the model with them is not compiled")
            result = request.infer({0: ids, 1: mask})
            return (np.array(result[compiled.outputs[0]], dtype=np.float32),
                    np.array(result[compiled.outputs[1]], dtype=np.float32))

    def _run_query(self, row: list[int]) -> np.ndarray:
        """The vector of one token id row on the copy of the first query width that holds it, padded to that width."""
        width = next(w for w in QUERY_WIDTHS if w >= len(row))
        ids, mask = self._padded([row], width)
        with self._lock:
            compiled, request = self._query_copy(width)
            result = request.infer({0: ids, 1: mask})
            return np.array(result[compiled.outputs[0]], dtype=np.float32)[0]

    def _padded(self, rows: list[list[int]], multiple: int) -> tuple[np.ndarray, np.ndarray]:
        """Token id rows right-padded with the pad id to the longest rounded up to `multiple`, and their mask."""
        pad = self.tokenizer.pad_token_id or 0
        width = -(-max(len(row) for row in rows) // multiple) * multiple
        ids = np.full((len(rows), width), pad, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for r, row in enumerate(rows):
            ids[r, : len(row)] = row
            mask[r, : len(row)] = 1
        return ids, mask
