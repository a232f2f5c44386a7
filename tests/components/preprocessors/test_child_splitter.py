import pytest
from haystack import Document

from components.preprocessors.child_splitter import ChildSplitter
from components.legal.ids import parent_id_for
from tests.corpus_helpers import ET_2015, markdown_article


def _parent(text: str, article: str = "38") -> Document:
    meta = {"law_id": "BOE-A-2015-11430", "article": article, "lang": "es", "level": "parent", "part": 1, "parts": 1}
    return Document(id=parent_id_for(meta["law_id"], article, 1), content=text, meta=meta)


def test_init_defaults_and_validation():
    splitter = ChildSplitter()
    assert (splitter.chunk_chars, splitter.overlap, splitter.include_parents) == (300, 50, True)
    with pytest.raises(ValueError, match="chunk_chars"):
        ChildSplitter(chunk_chars=10)
    with pytest.raises(ValueError, match="overlap"):
        ChildSplitter(chunk_chars=300, overlap=200)


def test_to_dict_from_dict_round_trip():
    splitter = ChildSplitter(chunk_chars=400, overlap=60, include_parents=False)
    data = splitter.to_dict()
    assert data == {
        "type": "components.preprocessors.child_splitter.ChildSplitter",
        "init_parameters": {"chunk_chars": 400, "overlap": 60, "include_parents": False},
    }
    restored = ChildSplitter.from_dict(data)
    assert (restored.chunk_chars, restored.overlap, restored.include_parents) == (400, 60, False)


def test_run_on_real_article_bounds_overlap_and_ids():
    text = markdown_article(ET_2015, "38")
    parent = _parent(text)
    docs = ChildSplitter().run(documents=[parent])["documents"]
    assert docs[0] is parent
    children = docs[1:]
    assert len(children) >= 3
    for i, child in enumerate(children):
        assert child.meta["level"] == "child"
        assert child.meta["parent_id"] == parent.id
        assert child.meta["chunk_index"] == i
        assert child.meta["article"] == "38"
        assert len(child.content) <= 300
    # consecutive chunks overlap: the next one starts with words that end the previous one
    first_words = children[1].content.split()[:2]
    assert " ".join(first_words) in children[0].content
    # every word of the article is in some chunk, in order
    joined = " ".join(c.content for c in children)
    for word in ("treinta", "días", "naturales", "calendario"):
        assert word in joined
    again = ChildSplitter().run(documents=[_parent(text)])["documents"]
    assert [d.id for d in again] == [d.id for d in docs]
    assert len({d.id for d in docs}) == len(docs)


def test_run_does_not_split_after_legal_abbreviations():
    text = ("Según el art. 38 del Estatuto, las vacaciones se disfrutarán conforme al apdo. 2. " * 2).strip()
    chunks = ChildSplitter(chunk_chars=120, overlap=0).chunk(text)
    assert all(not c.endswith("art.") for c in chunks)
    assert chunks[0].startswith("Según el art. 38 del Estatuto")


def test_run_rejects_non_parent_and_excludes_parents_on_request():
    with pytest.raises(ValueError, match="not a parent"):
        ChildSplitter().run(documents=[Document(content="x", meta={"level": "child"})])
    docs = ChildSplitter(include_parents=False).run(documents=[_parent("Texto breve del artículo.")])["documents"]
    assert [d.meta["level"] for d in docs] == ["child"]
    assert docs[0].content == "Texto breve del artículo."
