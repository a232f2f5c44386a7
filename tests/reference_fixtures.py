"""Real corpus parent blocks with references, and a store + graph holding them (tests of the expansion stages)."""

from functools import lru_cache
from pathlib import Path

from haystack import Document
from haystack.document_stores.types import DuplicatePolicy

from components.preprocessors.article_parser import ArticleParser
from components.document_stores.edge_document_store import EdgeDocumentStore
from components.writers.graph_writer import GraphWriter
from components.extractors.reference_extractor import ReferenceExtractor
from components.legal.ids import parent_id_for
from components.preprocessors.semantic_parent_splitter import SemanticParentSplitter
from tests.corpus_helpers import CORPUS, ET_2015, RD_2720

ET = "BOE-A-2015-11430"
ET1995 = "BOE-A-1995-7730"
RD = "BOE-A-1999-346"
LGSS = "BOE-A-2015-11724"
ET_1995_FILE = CORPUS / f"{ET1995}.md"


@lru_cache(maxsize=4)
def parent_blocks(*paths: Path) -> tuple[Document, ...]:
    """Parent blocks of statute files (converter -> article parser -> parent splitter), no embeddings."""
    from components.converters.statute_converter import StatuteConverter

    laws = StatuteConverter().run(sources=[str(p) for p in paths])["documents"]
    articles = ArticleParser().run(documents=laws)["documents"]
    return tuple(SemanticParentSplitter().run(documents=articles)["documents"])


@lru_cache(maxsize=4)
def extracted(*paths: Path) -> dict:
    """`ReferenceExtractor` output for the parent blocks of `paths`."""
    return ReferenceExtractor().run(documents=list(parent_blocks(*paths)))


def build_store(path: Path, *paths: Path) -> EdgeDocumentStore:
    """An Edge store with the referenced parent blocks of `paths` and its NetworkX graph (`graph.json` beside it)."""
    result = extracted(*paths)
    store = EdgeDocumentStore(path=str(path))
    store.write_documents(result["documents"], policy=DuplicatePolicy.OVERWRITE)
    GraphWriter(document_store=store).run(nodes=result["nodes"], edges=result["edges"])
    return store


def block(store: EdgeDocumentStore, law_id: str, article: str, part: int = 1, score: float = 1.0) -> Document:
    """One stored parent block, with a score."""
    (doc,) = store.get_documents_by_id([parent_id_for(law_id, article, part)])
    return Document(id=doc.id, content=doc.content, meta=doc.meta, score=score)


DEFAULT_PATHS = (ET_2015, RD_2720)
