"""
Late chunking: a vector for each passage of a text, pooled from the one forward pass that embeds the whole text.

A statute's block is embedded whole, so its vector says what the whole article is about. A question in the words
of one of its paragraphs ("¿quiénes intervendrán en el control y gestión de los centros sostenidos con fondos
públicos?", art. 27.7 of the Constitución, ten paragraphs on education) is close to that paragraph, much less to the
article's mean. Embedding each paragraph alone would cost a second pass over the corpus and lose what the paragraph
means in its article. Late chunking (Günther et al., "Late Chunking", 2024) pools instead the token states the
block's own pass already computed, over each passage's tokens, and applies the model's layers after pooling (the
Dense projections and Normalize of a sentence-transformers model): a vector per passage at no model cost, read in
the context of its article.

Only mean-pooling sentence-transformers models are supported (EmbeddingGemma is one); `PoolingHead.from_folder`
returns `None` for any other, and the embedder then stores no passage vectors.
"""

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

WORD = re.compile(r"\S+")
# how far before the previous passage's start the next one is looked for (passages may overlap)
OVERLAP_CHARS = 1000


def _squeezed(text: str) -> tuple[str, list[int]]:
    """`text` with every whitespace run replaced by one space, and the position in `text` of each kept character."""
    chars: list[str] = []
    where: list[int] = []
    for match in WORD.finditer(text):
        if chars:
            chars.append(" ")
            where.append(match.start())
        chars.extend(match.group())
        where.extend(range(match.start(), match.end()))
    return "".join(chars), where


def locate_passages(text: str, passages: Sequence[str]) -> list[tuple[int, int] | None]:
    """
    The character span of each passage in `text`, whitespace-insensitively (a chunker may join lines with spaces).

    Passages are looked for in order, each from a little before where the previous one started (they may
    overlap), then anywhere.

    :param text: The text the passages were cut from.
    :param passages: The passages, in their order in `text`.
    :returns: `(start, end)` in `text` for each passage, `None` for one that is not there (or is blank).
    """
    squeezed, where = _squeezed(text)
    spans: list[tuple[int, int] | None] = []
    cursor = 0
    for passage in passages:
        needle = _squeezed(passage)[0]
        if not needle:
            spans.append(None)
            continue
        at = squeezed.find(needle, max(0, cursor - OVERLAP_CHARS))
        if at < 0:
            at = squeezed.find(needle)
        if at < 0:
            spans.append(None)
            continue
        cursor = at
        spans.append((where[at], where[at + len(needle) - 1] + 1))
    return spans


def token_ranges(
    offsets: Sequence[Sequence[int]], spans: Sequence[tuple[int, int] | None]
) -> list[tuple[int, int] | None]:
    """
    The tokens `[first, last + 1)` that overlap each character span, from a fast tokenizer's offset mapping.

    Special tokens (offsets `(0, 0)`) never count. A span past the truncated text gets `None`.
    """
    ranges: list[tuple[int, int] | None] = []
    for span in spans:
        if span is None:
            ranges.append(None)
            continue
        start, end = span
        inside = [i for i, (a, b) in enumerate(offsets) if b > a and a < end and b > start]
        ranges.append((inside[0], inside[-1] + 1) if inside else None)
    return ranges


class PoolingHead:
    """
    The modules that follow mean pooling in a sentence-transformers folder (Dense projections, Normalize), in numpy.

    ### Usage example

    ```python
    head = PoolingHead.from_folder("/root/.cache/lexhay/models/embeddinggemma")
    vectors = head.passages(token_states, [(3, 40), (35, 80)])  # one row per token range
    ```
    """

    ACTIVATIONS = {
        "torch.nn.modules.linear.Identity": lambda x: x,
        "torch.nn.modules.activation.Tanh": np.tanh,
    }

    def __init__(self, layers: list[tuple[np.ndarray, np.ndarray | None, Any]], *, normalize: bool) -> None:
        """
        :param layers: `(weight [out, in], bias [out] or None, activation)` of each Dense module, in order.
        :param normalize: Whether the stack ends with Normalize (L2).
        """
        self.layers = layers
        self.normalize = normalize

    @classmethod
    def from_folder(cls, path: str | Path) -> "PoolingHead | None":
        """
        The head of the model at `path`, or `None` when it has no mean pooling or a module after it is not a Dense
        (identity or tanh activation) or Normalize module: late chunking cannot reproduce its pooled vectors.
        """
        folder = Path(path)
        try:
            modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
        if "Pooling" not in kinds:
            return None
        at = kinds.index("Pooling")
        pooling = modules[at]
        try:
            config = json.loads((folder / pooling.get("path", "") / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if "pooling_mode" in config:  # sentence-transformers >= 5.2 writes the mode by name
            if config["pooling_mode"] not in ("mean", "mean_tokens"):
                return None
        elif {k for k, v in config.items() if k.startswith("pooling_mode_") and v} != {"pooling_mode_mean_tokens"}:
            return None
        layers: list[tuple[np.ndarray, np.ndarray | None, Any]] = []
        normalize = False
        for module, kind in zip(modules[at + 1 :], kinds[at + 1 :], strict=True):
            if kind == "Normalize" and not normalize:
                normalize = True
                continue
            if kind != "Dense" or normalize:
                return None
            layer = _dense_layer(folder / module.get("path", ""))
            if layer is None or layer[2] is None:
                return None
            layers.append(layer)
        return cls(layers, normalize=normalize)

    def __call__(self, pooled: np.ndarray) -> np.ndarray:
        """Apply the head to mean-pooled token states (one row per text or passage)."""
        out = np.asarray(pooled, dtype=np.float32)
        for weight, bias, activation in self.layers:
            out = out @ weight.T
            if bias is not None:
                out = out + bias
            out = activation(out)
        if self.normalize:
            out = out / np.maximum(np.linalg.norm(out, axis=-1, keepdims=True), 1e-12)
        return out.astype(np.float32)

    def passages(self, states: np.ndarray, ranges: Sequence[tuple[int, int] | None]) -> list[np.ndarray | None]:
        """
        The vector of each token range of one text: its token states averaged, then the head.

        :param states: The text's token states `[tokens, hidden]` (the transformer's last layer, before pooling).
        :param ranges: Token ranges `[first, last + 1)`, `None` for a passage without tokens.
        :returns: One vector per range (`None` where the range is `None` or its states are not finite).
        """
        return self.apply([self.means(states, ranges)])[0]

    @staticmethod
    def means(states: np.ndarray, ranges: Sequence[tuple[int, int] | None]) -> list[np.ndarray | None]:
        """
        The token states of each range of one text averaged, before the head (`None` where the range is `None`).

        Pooling many texts' passages keeps these and applies the head once to them all (`apply`), instead of
        reading its weights again for every text.
        """
        return [None if r is None else np.asarray(states[r[0] : r[1]], dtype=np.float32).mean(axis=0)
                for r in ranges]

    def apply(self, means: Sequence[Sequence[np.ndarray | None]]) -> list[list[np.ndarray | None]]:
        """
        The head applied to the averaged states of several texts' passages (`means`), one product per layer for
        them all; the result has the same nesting (`None` where a mean is `None` or its vector is not finite).
        """
        rows = [mean for text in means for mean in text if mean is not None]
        vectors = iter(self(np.stack(rows)) if rows else ())
        out: list[list[np.ndarray | None]] = []
        for text in means:
            pooled: list[np.ndarray | None] = []
            for mean in text:
                vector = None if mean is None else next(vectors)
                pooled.append(vector if vector is not None and np.isfinite(vector).all() else None)
            out.append(pooled)
        return out


def _dense_layer(folder: Path) -> tuple[np.ndarray, np.ndarray | None, Any] | None:
    """A sentence-transformers Dense module's weight, bias and activation (`None` if it cannot be read)."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    activation = PoolingHead.ACTIVATIONS.get(config.get("activation_function", "torch.nn.modules.activation.Tanh"))
    weights: dict[str, np.ndarray]
    if (folder / "model.safetensors").exists():
        from safetensors.numpy import load_file  # noqa: PLC0415

        weights = load_file(str(folder / "model.safetensors"))
    elif (folder / "pytorch_model.bin").exists():
        import torch  # noqa: PLC0415

        state = torch.load(str(folder / "pytorch_model.bin"), map_location="cpu", weights_only=True)
        weights = {key: value.float().numpy() for key, value in state.items()}
    else:
        return None
    if "linear.weight" not in weights:
        return None
    bias = weights.get("linear.bias")
    return (weights["linear.weight"].astype(np.float32), None if bias is None else bias.astype(np.float32),
            activation)
