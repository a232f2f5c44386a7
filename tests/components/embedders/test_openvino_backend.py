# SPDX-License-Identifier: Apache-2.0
"""The OpenVINO backend's cache checks, backend and precision choice and batching (the conversion and quantization
themselves: test_dense_embedder.py)."""

import json
import multiprocessing
import time

import numpy as np
import pytest

from components.embedders import openvino_backend
from components.embedders.openvino_backend import (
    INT8_MARKER_VERSION,
    MARKER_VERSION,
    OPENVINO_MARKER,
    QUERY_WIDTHS,
    OpenVINOEncoder,
    _int8_source,
    _sha256,
    _source_fingerprint,
    dense_backend,
    dense_precision,
    ensure_int8_model,
    ensure_openvino_model,
    int8_dir,
    is_converted,
    is_quantized,
    openvino_dir,
)


def _write_ir(folder, marker, payload):
    folder.mkdir()
    (folder / "model.xml").write_text("<net/>")
    (folder / "model.bin").write_bytes(payload)
    files = {n: {"sha256": _sha256(folder / n), "size": (folder / n).stat().st_size} for n in ("model.xml", "model.bin")}
    (folder / OPENVINO_MARKER).write_text(json.dumps({**marker, "files": files}))


@pytest.fixture
def converted(tmp_path):
    """A model folder with source weights and a converted model whose marker matches."""
    (tmp_path / "modules.json").write_text("[]")
    (tmp_path / "model.safetensors").write_bytes(b"weights" * 10)
    _write_ir(openvino_dir(tmp_path), {"version": MARKER_VERSION, "source": _source_fingerprint(tmp_path)},
              bytes(range(256)))
    return tmp_path


@pytest.fixture
def quantized(converted):
    """`converted` with an int8 model made from its converted model and the packaged calibration set."""
    _write_ir(int8_dir(converted), {"version": INT8_MARKER_VERSION, "source": _int8_source(converted)}, b"int8" * 9)
    return converted


def test_a_matching_conversion_is_accepted(converted):
    assert is_converted(converted) and is_converted(converted, verify=True)


def test_a_corrupt_or_stale_conversion_is_rebuilt(converted):
    binary = openvino_dir(converted) / "model.bin"
    data = bytearray(binary.read_bytes())
    data[0] ^= 0xFF  # same size, different bytes: only the full check (install / verify) sees it
    binary.write_bytes(bytes(data))
    assert is_converted(converted) and not is_converted(converted, verify=True)
    binary.write_bytes(b"short")
    assert not is_converted(converted)
    (openvino_dir(converted) / "model.bin").unlink()
    assert not is_converted(converted)


def test_new_source_weights_make_the_conversion_stale(converted):
    (converted / "model.safetensors").write_bytes(b"other weights, other size")
    assert not is_converted(converted)
    assert not is_converted(converted.parent / "no-such-model")


def test_backend_choice(monkeypatch):
    monkeypatch.setenv("LEXHAY_DENSE_BACKEND", "torch")
    assert dense_backend() == "torch"
    monkeypatch.delenv("LEXHAY_DENSE_BACKEND")
    monkeypatch.setattr(openvino_backend, "openvino_available", lambda: False)
    assert dense_backend() == "torch"
    monkeypatch.setattr(openvino_backend, "openvino_available", lambda: True)
    assert dense_backend() == "openvino"


def test_a_matching_int8_model_is_accepted(quantized):
    assert is_quantized(quantized) and is_quantized(quantized, verify=True)
    assert not is_quantized(quantized.parent / "no-such-model")


def test_the_int8_model_is_stale_once_its_float_model_or_calibration_set_changes(quantized, tmp_path_factory,
                                                                                   monkeypatch):
    calibration = tmp_path_factory.mktemp("calibration") / "calibration.jsonl"
    calibration.write_bytes(openvino_backend.CALIBRATION_FILE.read_bytes() + b'{"prompt": "query", "text": "otra"}\n')
    monkeypatch.setattr(openvino_backend, "CALIBRATION_FILE", calibration)
    assert not is_quantized(quantized)  # other calibration texts: other scales
    monkeypatch.undo()
    assert is_quantized(quantized)
    float_marker = openvino_dir(quantized) / OPENVINO_MARKER
    marker = json.loads(float_marker.read_text())
    marker["files"]["model.bin"]["sha256"] = "0" * 64  # a re-converted float model
    float_marker.write_text(json.dumps(marker))
    assert not is_quantized(quantized)


def test_a_corrupt_int8_model_is_rebuilt(quantized):
    binary = int8_dir(quantized) / "model.bin"
    binary.write_bytes(b"INT8" * 9)  # same size: only the full check sees it
    assert is_quantized(quantized) and not is_quantized(quantized, verify=True)
    binary.unlink()
    assert not is_quantized(quantized)


def test_the_float_model_missing_makes_the_int8_one_unusable(quantized):
    (openvino_dir(quantized) / "model.xml").unlink()
    assert not is_quantized(quantized)


def test_processes_that_find_no_int8_model_make_it_once(converted, monkeypatch):
    """A server and `lexhay index` started together on a model never quantized: one makes it, the other waits and
    takes it (without the lock both would quantize, and the second would remove the folder the first had made)."""
    calls = converted / "quantize-calls"

    def slow_quantize(model_path, progress=None):
        with calls.open("a") as log:
            log.write("x")
        time.sleep(0.5)
        _write_ir(int8_dir(model_path), {"version": INT8_MARKER_VERSION, "source": _int8_source(model_path)},
                  b"int8" * 9)

    monkeypatch.setattr(openvino_backend, "quantize", slow_quantize)
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=ensure_int8_model, args=(converted,)) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    assert [worker.exitcode for worker in workers] == [0, 0]
    assert calls.read_text() == "x" and is_quantized(converted, verify=True)


def test_a_made_model_is_used_without_a_lock_file(quantized):
    """A read-only models cache that holds both models: nothing is written to use them."""
    quantized.chmod(0o555)
    try:
        assert ensure_int8_model(quantized) == int8_dir(quantized)
        assert ensure_openvino_model(quantized) == openvino_dir(quantized)
    finally:
        quantized.chmod(0o755)
    assert not list(quantized.glob(".*.lock"))


def test_precision_choice(quantized, monkeypatch):
    monkeypatch.setenv("LEXHAY_DENSE_PRECISION", "FLOAT")
    assert dense_precision(quantized) == "float"
    monkeypatch.setenv("LEXHAY_DENSE_PRECISION", "int8")
    assert dense_precision() == "int8"
    monkeypatch.delenv("LEXHAY_DENSE_PRECISION")
    monkeypatch.setattr(openvino_backend, "cpu_has_native_int8", lambda: False)
    assert dense_precision(quantized) == "float"  # no int8 instructions: int8 would be slower, not faster
    monkeypatch.setattr(openvino_backend, "cpu_has_native_int8", lambda: True)
    monkeypatch.setattr(openvino_backend, "nncf_available", lambda: True)
    assert dense_precision(quantized.parent / "not-quantized-yet") == "int8"  # nncf makes it on first use
    monkeypatch.setattr(openvino_backend, "nncf_available", lambda: False)
    assert dense_precision(quantized) == "int8"  # made already: running it needs only openvino
    assert dense_precision(quantized.parent / "not-quantized-yet") == "float"


def test_an_unknown_precision_is_refused(monkeypatch):
    monkeypatch.setenv("LEXHAY_DENSE_PRECISION", "int4")
    with pytest.raises(ValueError, match="LEXHAY_DENSE_PRECISION"):
        dense_precision()


@pytest.fixture
def fake_encoders(monkeypatch):
    """OpenVINOEncoder with a constructor that records its weights and cannot make the int8 model."""
    made = []

    def init(self, model_path, *, weights="float"):
        if weights == "int8":
            raise RuntimeError("the int8 model needs nncf")
        made.append(weights)
        self.weights = weights

    monkeypatch.setattr(OpenVINOEncoder, "__init__", init)
    monkeypatch.setattr(openvino_backend, "_ENCODERS", {})
    monkeypatch.setattr(openvino_backend, "_INT8_FAILED", set())
    monkeypatch.setattr(openvino_backend, "dense_precision",
                        lambda path=None: openvino_backend.current_precision_setting() or "int8")
    return made


def test_an_int8_model_chosen_by_the_cpu_falls_back_to_float_once(tmp_path, fake_encoders):
    first = OpenVINOEncoder.shared(tmp_path)
    assert first.weights == "float" and fake_encoders == ["float"]
    assert OpenVINOEncoder.shared(tmp_path) is first and fake_encoders == ["float"]  # not tried again
    assert str(tmp_path.resolve()) in openvino_backend._INT8_FAILED


def test_an_int8_model_asked_for_does_not_fall_back(tmp_path, fake_encoders, monkeypatch):
    monkeypatch.setenv("LEXHAY_DENSE_PRECISION", "int8")
    with pytest.raises(RuntimeError, match="nncf"):
        OpenVINOEncoder.shared(tmp_path)
    with pytest.raises(RuntimeError, match="nncf"):
        OpenVINOEncoder.shared(tmp_path, "int8")
    assert fake_encoders == []


def test_encoders_are_shared_per_folder_and_weights(tmp_path, fake_encoders, monkeypatch):
    monkeypatch.setenv("LEXHAY_DENSE_PRECISION", "float")
    a, b = OpenVINOEncoder.shared(tmp_path), OpenVINOEncoder.shared(tmp_path / "sub" / "..")
    assert a is b and fake_encoders == ["float"]


def test_unknown_weights_are_refused(tmp_path):
    with pytest.raises(ValueError, match="weights must be one of"):
        OpenVINOEncoder(tmp_path, weights="int4")


class _Tokenizer:
    """Whitespace 'tokenizer': one id per word."""

    pad_token_id = 0

    def __call__(self, texts, truncation=True, max_length=None, verbose=False):
        return {"input_ids": [[1 + len(w) for w in t.split()][:max_length] for t in texts]}


def test_batches_bound_the_padding_and_a_nan_row_is_run_alone():
    """Heavy right padding makes sliding-window attention rows NaN: batches are cut, and NaN rows re-run alone."""
    encoder = object.__new__(openvino_backend.OpenVINOEncoder)
    encoder.tokenizer, encoder.prompts, encoder.max_seq_length, encoder.dimension = _Tokenizer(), {}, 2048, 2
    calls, alone = [], []

    def run(rows, multiple=openvino_backend.PAD_MULTIPLE):
        calls.append([len(r) for r in rows])
        alone.append(multiple == 1)
        widths = [len(r) for r in rows]
        # a row padded by more than 2 tokens comes out NaN, as a far-padded row does in the real model
        return np.array([[np.nan, np.nan] if max(widths) - w > 2 else [w, 1.0] for w in widths], dtype=np.float32)

    encoder._run = run
    texts = ["a " * 100, "b " * 99, "c " * 30, "d " * 3, "e " * 1]
    vectors = encoder.encode(texts, batch_size=8)
    assert np.isfinite(vectors).all()
    assert vectors[:, 0].tolist() == [100, 99, 30, 3, 1]  # every row in its input position
    assert calls[0] == [100, 99]  # 30 is more than MAX_PADDING (64) shorter: another batch
    assert [1] in calls  # the row padded 1 -> 3 came out NaN and was run alone
    assert alone[calls.index([1])]  # ... at its own width, without rounding


class _Request:
    """Records the arrays of each forward pass; the 'vector' of a row is its id sum and its mask sum."""

    def __init__(self):
        self.inputs = []

    def infer(self, inputs):
        ids, mask = inputs[0], inputs[1]
        self.inputs.append((ids.copy(), mask.copy()))
        return {"out": np.stack([ids.sum(axis=1), mask.sum(axis=1)], axis=1)}


def test_batch_widths_are_rounded_to_few_shapes_with_the_padding_masked():
    import threading

    encoder = object.__new__(openvino_backend.OpenVINOEncoder)
    encoder.tokenizer, encoder._request = _Tokenizer(), _Request()
    encoder._compiled, encoder._lock = type("Compiled", (), {"outputs": ["out"]})(), threading.Lock()
    vectors = encoder._run([[5] * 17, [7] * 3])
    (ids, mask), = encoder._request.inputs
    assert ids.shape == mask.shape == (2, 32)  # 17 tokens -> the next multiple of PAD_MULTIPLE (16)
    assert mask.sum(axis=1).tolist() == [17, 3] and (ids[mask == 0] == 0).all()  # padding: pad id, masked
    assert vectors.tolist() == [[85.0, 17.0], [21.0, 3.0]]
    encoder._run([[5] * 16])
    assert encoder._request.inputs[-1][0].shape == (1, 16)  # already a multiple: no padding
    encoder._run([[5] * 5], multiple=1)
    assert encoder._request.inputs[-1][0].shape == (1, 5)


def test_float_layers_keeps_the_layers_with_outlier_inputs_and_those_after_pooling():
    """A layer whose input has one channel far above the others, and a layer after pooling, stay float."""
    import openvino as ov
    from openvino import opset13 as ops

    tokens = ops.parameter([-1, -1, 4], np.float32, name="x")
    mask = ops.parameter([-1, -1], np.float32, name="mask")
    masked = ops.multiply(tokens, ops.unsqueeze(mask, ops.constant(np.array([2], dtype=np.int64))))
    first = ops.matmul(masked, ops.constant(np.full((4, 4), 0.25, dtype=np.float32)), False, False)
    first.set_friendly_name("first")  # mixes the channels evenly: its output has no outlier channel
    second = ops.matmul(ops.relu(first), ops.constant(np.eye(4, dtype=np.float32)), False, False)
    second.set_friendly_name("second")
    pooled = ops.reduce_mean(second, ops.constant(np.array([1], dtype=np.int64)), False)
    head = ops.matmul(pooled, ops.constant(np.eye(4, dtype=np.float32)), False, False)
    head.set_friendly_name("head")
    model = ov.Model([head], [tokens, mask])
    rng = np.random.default_rng(0)
    x = rng.uniform(0.5, 1.0, size=(1, 6, 4)).astype(np.float32)
    x[0, 2, 3] = 500.0  # one token's channel 3: 500x the typical channel's range
    samples = [[x, np.ones((1, 6), dtype=np.float32)]]
    assert openvino_backend.float_layers(model, samples) == ["first", "head"]
    x[0, 2, 3] = 20.0  # within OUTLIER_FACTOR_LIMIT: quantized
    model = ov.Model([head], [tokens, mask])
    assert openvino_backend.float_layers(model, samples) == ["head"]


def vectors_dimension(graph):
    return graph.outputs[0].get_partial_shape()[-1].get_length()


def test_the_converted_model_gives_its_token_states_and_passage_vectors(tiny_dense_model, monkeypatch):
    """Late chunking on the converted model: the pooling's input found, passages pooled from the same pass."""
    import openvino as ov  # noqa: PLC0415

    from components.embedders.late_chunking import locate_passages  # noqa: PLC0415

    encoder = OpenVINOEncoder(tiny_dense_model, weights="float")
    graph = ov.Core().read_model(str(openvino_dir(tiny_dense_model) / "model.xml"))
    states = openvino_backend.token_states_output(graph)
    assert states is not None and len(states.get_partial_shape()) == 3
    assert encoder._with_states is None  # compiled for passages only, on first use
    assert encoder._compiled is None and encoder.dimension == vectors_dimension(graph)  # the plain one too
    assert encoder.supports_passages() and encoder._with_states is not None
    texts = ["el contrato de los trabajador. las vacaciones de la empresa.", "el salario"]
    spans = [locate_passages(texts[0], ["el contrato de los trabajador.", "las vacaciones de la empresa."]), [None]]
    vectors, passages = encoder.encode_passages(texts, spans, prompt_name="document")
    assert vectors.shape == (2, encoder.dimension)
    assert encoder._compiled is None  # indexing runs the copy with token states alone
    plain = encoder.encode(texts, prompt_name="document")  # the plain model: the same vectors up to rounding
    compiled = encoder._compiled
    assert compiled is not None
    encoder.compile_for_queries()
    assert encoder._compiled is compiled  # compiled once
    assert list(encoder._queries) == [QUERY_WIDTHS[0]]  # and the copy for short questions, at warm-up
    assert all(float(a @ b) > 0.999 for a, b in zip(vectors, plain, strict=True))
    assert passages[1] == [None] and len(passages[0]) == 2
    assert all(abs(float(np.linalg.norm(p)) - 1.0) < 1e-5 for p in passages[0])
    assert float(passages[0][0] @ passages[0][1]) < 0.999
    with pytest.raises(ValueError, match="passage lists"):
        encoder.encode_passages(texts, spans[:1])
    encoder.head, encoder._states_checked = None, True
    with pytest.raises(RuntimeError, match="no mean-pooled token states"):
        encoder.encode_passages(texts, spans)


def _lookup_model(table, scales):
    """A graph that looks up rows of an int8 (or float) table scaled as the int8 model does: Gather(table * scales)."""
    import openvino as ov  # noqa: PLC0415
    from openvino import opset13 as ops  # noqa: PLC0415

    ids = ops.parameter([-1, -1], np.int64, name="input_ids")
    weights = ops.constant(table)
    if table.dtype != np.float32:
        weights = ops.convert(weights, "f32")
    looked_up = ops.gather(ops.multiply(weights, ops.constant(scales)), ids, ops.constant(np.array(0)))
    return ov.Model([ops.multiply(looked_up, ops.constant(np.float32(3.0)))], [ids])


def _run_graph(model, ids):
    import openvino as ov  # noqa: PLC0415

    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    return np.array(compiled.create_infer_request().infer({0: ids})[compiled.outputs[0]])


@pytest.mark.parametrize("scales", [np.linspace(0.01, 0.5, 50, dtype=np.float32).reshape(50, 1), np.float32(0.25)],
                         ids=["per row", "one for all"])
def test_gather_before_scaling_looks_up_int8_rows_and_gives_the_same_values(scales):
    """The int8 table is looked up before it is scaled: same values, and no float table left in the graph."""
    rng = np.random.default_rng(0)
    table = rng.integers(-127, 128, size=(50, 8), dtype=np.int8)
    ids = np.array([[3, 49, 0, 3], [7, 7, 1, 2]], dtype=np.int64)
    model = _lookup_model(table, scales)
    before = _run_graph(model, ids)
    assert openvino_backend.gather_before_scaling(model)
    after = _run_graph(model, ids)
    assert np.array_equal(before, after)
    row_scales = np.asarray(scales)[ids] if np.ndim(scales) else scales
    assert np.allclose(after, table[ids].astype(np.float32) * row_scales * 3)
    table_inputs = [op for op in model.get_ordered_ops() for value in op.input_values()
                    if value.get_partial_shape().is_static and list(value.get_shape()) == [50, 8]]
    assert [op.get_type_name() for op in table_inputs] == ["Gather"]  # the int8 table feeds the lookup alone
    assert table_inputs[0].input_value(0).get_element_type().get_type_name() == "i8"
    assert not openvino_backend.gather_before_scaling(model)  # nothing left to rewrite


def test_gather_before_scaling_leaves_a_float_table_alone():
    table = np.arange(400, dtype=np.float32).reshape(50, 8)
    model = _lookup_model(table, np.float32(0.5))
    ops_before = [op.get_type_name() for op in model.get_ordered_ops()]
    assert not openvino_backend.gather_before_scaling(model)
    assert [op.get_type_name() for op in model.get_ordered_ops()] == ops_before


def test_a_question_runs_on_the_copy_of_the_first_width_that_holds_it(tiny_dense_model, monkeypatch):
    """One text runs on the copy compiled for its width (the same vector as the plain model's); others do not."""
    encoder = OpenVINOEncoder(tiny_dense_model, weights="float")
    short, longer, too_long = "vacaciones", "el salario de la empresa " * 2, "el salario de la empresa " * 4
    lengths = [len(ids) for ids in encoder._tokenized([short, longer, too_long], "query", None)[0]["input_ids"]]
    widths = (lengths[0] + 1, lengths[1] + 1)  # the tiny model's positions end early: widths that fit it
    monkeypatch.setattr(openvino_backend, "QUERY_WIDTHS", widths)
    assert lengths[0] < widths[0] < lengths[1] < widths[1] < lengths[2]
    vector = encoder.encode([short], prompt_name="query")
    assert list(encoder._queries) == [widths[0]] and encoder._compiled is None  # the plain model not needed
    both = encoder.encode([short, longer], prompt_name="query")  # a batch: the plain model
    assert encoder._compiled is not None and list(encoder._queries) == [widths[0]]
    assert float(vector[0] @ both[0]) > 0.999
    assert float(encoder.encode([longer], prompt_name="query")[0] @ both[1]) > 0.999
    assert list(encoder._queries) == list(widths)
    encoder.encode([too_long], prompt_name="query")  # past the widest copy: the plain model, no new copy
    assert list(encoder._queries) == list(widths)
    monkeypatch.setattr(encoder, "_run_query", lambda row: np.full(encoder.dimension, np.nan, dtype=np.float32))
    again = encoder.encode([short], prompt_name="query")  # a NaN from the copy: run as any row, alone
    assert np.isfinite(again).all() and float(again[0] @ vector[0]) > 0.999


def test_passes_with_token_states_run_several_batches_at_once_and_keep_each_row_its_own(tiny_dense_model):
    """Indexing's batches go through a queue of one request per stream; each text still gets its own vector."""
    encoder = OpenVINOEncoder(tiny_dense_model, weights="float")
    assert encoder.supports_passages()
    compiled, _ = encoder._with_states
    assert compiled.get_property("PERFORMANCE_HINT") == "THROUGHPUT"
    words = ["contrato", "vacaciones", "salario", "despido", "jornada", "huelga", "convenio", "permiso"]
    texts = [" ".join(words[(i * j) % len(words)] for j in range(3 + i)) for i in range(21)]
    spans = [[(0, len(text) // 2)] for text in texts]
    vectors, passages = encoder.encode_passages(texts, spans, prompt_name="document", batch_size=2)
    plain = encoder.encode(texts, prompt_name="document", batch_size=1)  # one at a time, on the plain model
    nearest = (vectors @ plain.T).argmax(axis=1)  # no row took another's vector
    assert nearest.tolist() == list(range(len(texts)))
    assert all(float(a @ b) > 0.999 for a, b in zip(vectors, plain, strict=True))
    alone = [encoder.encode_passages([text], [span], prompt_name="document") for text, span in zip(texts, spans)]
    for row, (vector, pooled) in enumerate(alone):
        assert float(vector[0] @ vectors[row]) > 0.999
        assert float(pooled[0][0] @ passages[row][0]) > 0.999


def test_two_indexing_calls_at_once_each_get_their_own_rows(tiny_dense_model):
    """Two threads pooling passages at the same time (two uploads of one server) each get their own vectors."""
    from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

    encoder = OpenVINOEncoder(tiny_dense_model, weights="float")
    words = ["contrato", "vacaciones", "salario", "despido", "jornada", "huelga", "convenio", "permiso"]
    # the tiny model's vector depends on a text's length: row i of the two calls differ in length
    calls = [[" ".join(words[(i * j) % len(words)] for j in range(length(i))) for i in range(12)]
             for length in (lambda i: 2 + i, lambda i: 13 - i)]
    spans = [[(0, len(text) // 2)] for text in calls[0]]
    alone = [encoder.encode_passages(texts, spans, prompt_name="document", batch_size=2) for texts in calls]
    with ThreadPoolExecutor(max_workers=2) as pool:
        together = list(pool.map(lambda texts: encoder.encode_passages(texts, spans, prompt_name="document",
                                                                      batch_size=2), calls))
    for (vectors, passages), (again, passages_again) in zip(alone, together, strict=True):
        np.testing.assert_allclose(again, vectors, atol=1e-6)
        for first, second in zip(passages, passages_again, strict=True):
            np.testing.assert_allclose(second[0], first[0], atol=1e-6)
    assert float(np.abs(alone[0][0] - alone[1][0]).max()) > 1e-3  # the two calls embed different texts
