# SPDX-License-Identifier: Apache-2.0
"""The OpenVINO backend's cache checks and backend choice and batching (the conversion itself: test_dense_embedder.py)."""

import json

import numpy as np
import pytest

from components.embedders import openvino_backend
from components.embedders.openvino_backend import (
    MARKER_VERSION,
    OPENVINO_MARKER,
    _sha256,
    _source_fingerprint,
    dense_backend,
    is_converted,
    openvino_dir,
)


@pytest.fixture
def converted(tmp_path):
    """A model folder with source weights and a converted model whose marker matches."""
    (tmp_path / "modules.json").write_text("[]")
    (tmp_path / "model.safetensors").write_bytes(b"weights" * 10)
    folder = openvino_dir(tmp_path)
    folder.mkdir()
    (folder / "model.xml").write_text("<net/>")
    (folder / "model.bin").write_bytes(bytes(range(256)))
    files = {n: {"sha256": _sha256(folder / n), "size": (folder / n).stat().st_size} for n in ("model.xml", "model.bin")}
    marker = {"version": MARKER_VERSION, "source": _source_fingerprint(tmp_path), "files": files}
    (folder / OPENVINO_MARKER).write_text(json.dumps(marker))
    return tmp_path


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
