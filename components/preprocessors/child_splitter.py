"""Parent blocks -> small child chunks (the precise search unit) that point back to their parent."""

import hashlib
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging

from components.utils.chunking import pack_sentences
from components.legal.legal_text import split_sentences

logger = logging.getLogger(__name__)


@component
class ChildSplitter:
    """
    Splits parent blocks into ~`chunk_chars` child chunks with `overlap` characters of overlap.

    Chunks are packed from whole sentences (legal-aware splitter: "art.", "núm.", "1.º" do not end a
    sentence); a sentence longer than a chunk is cut at whitespace. Each child carries the parent's meta plus
    `level="child"`, `parent_id`, `chunk_index`, and a deterministic id derived from its parent id and index,
    so re-indexing overwrites instead of duplicating. The parents are passed through in `documents` too
    (first), unless `include_parents=False`, so one writer stores both granularities.

    ### Usage example

    ```python
    from components.preprocessors.child_splitter import ChildSplitter

    splitter = ChildSplitter(chunk_chars=300, overlap=50)
    result = splitter.run(documents=parent_blocks)
    children = [d for d in result["documents"] if d.meta["level"] == "child"]
    ```
    """

    def __init__(self, *, chunk_chars: int = 300, overlap: int = 50, include_parents: bool = True) -> None:
        """
        Create a ChildSplitter.

        :param chunk_chars: Target maximum length of a child chunk, in characters.
        :param overlap: Characters of the previous chunk repeated at the start of the next one.
        :param include_parents: Also output the parent blocks (before their children).
        """
        if chunk_chars < 50:
            raise ValueError(f"chunk_chars must be >= 50, got {chunk_chars}")
        if not 0 <= overlap < chunk_chars // 2:
            raise ValueError(f"overlap must be in [0, chunk_chars/2), got {overlap}")
        self.chunk_chars = chunk_chars
        self.overlap = overlap
        self.include_parents = include_parents

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(
            self, chunk_chars=self.chunk_chars, overlap=self.overlap, include_parents=self.include_parents
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ChildSplitter":
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """
        Split parent blocks into child chunks.

        :param documents: Parent blocks (meta `level="parent"`, as produced by `SemanticParentSplitter`).
        :returns: `documents`: for each parent, the parent (if `include_parents`) followed by its children.
        """
        out: list[Document] = []
        for parent in documents:
            if parent.meta.get("level") != "parent":
                raise ValueError(f"Document {parent.id} is not a parent block (meta level != 'parent')")
            if self.include_parents:
                out.append(parent)
            chunks = self.chunk(parent.content or "", lang=parent.meta.get("lang", "es"))
            for index, chunk in enumerate(chunks):
                meta = {**parent.meta, "level": "child", "parent_id": parent.id, "chunk_index": index}
                child_id = hashlib.sha256(f"{parent.id}|child|{index}".encode()).hexdigest()
                out.append(Document(id=child_id, content=chunk, meta=meta))
        return {"documents": out}

    def chunk(self, text: str, lang: str = "es") -> list[str]:
        """Pack sentences of `text` into chunks of at most `chunk_chars` with `overlap` carried over."""
        return pack_sentences(split_sentences(text, lang=lang), self.chunk_chars, self.overlap)
