import re

import pytest
from haystack import Document

from components.legal.ids import parent_id_for
from components.preprocessors.semantic_parent_splitter import SemanticParentSplitter
from tests.corpus_helpers import ET_2015, markdown_article


def _article(number: str) -> Document:
    return Document(
        id=f"art-{number}",
        content=markdown_article(ET_2015, number),
        meta={"law_id": "BOE-A-2015-11430", "article": number, "lang": "es", "law_short": "ET"},
    )


def test_init_defaults_and_validation():
    s = SemanticParentSplitter()
    assert (s.max_chars, s.overlap, s.min_chars, s.percentile, s.breakpoint_model) == (2000, 200, 300, 90.0, "lexical")
    for kwargs, match in [
        ({"max_chars": 100}, "max_chars"),
        ({"overlap": 1500}, "overlap"),
        ({"percentile": 100}, "percentile"),
        ({"breakpoint_model": "bert"}, "breakpoint_model"),
    ]:
        with pytest.raises(ValueError, match=match):
            SemanticParentSplitter(**kwargs)


def test_to_dict_from_dict_round_trip():
    s = SemanticParentSplitter(max_chars=1500, overlap=100, min_chars=200, percentile=85.0, breakpoint_model="none")
    restored = SemanticParentSplitter.from_dict(s.to_dict())
    assert restored.to_dict() == s.to_dict()
    assert s.to_dict()["type"] == "components.preprocessors.semantic_parent_splitter.SemanticParentSplitter"


def test_short_article_stays_one_block():
    doc = _article("4")  # short enough to stay whole
    assert len(doc.content) <= 2000
    blocks = SemanticParentSplitter(breakpoint_model="none").run(documents=[doc])["documents"]
    assert len(blocks) == 1
    block = blocks[0]
    assert block.content == doc.content.strip()
    expected = {"level": "parent", "part": 1, "parts": 1, "article_id": "art-4", "law_short": "ET"}
    assert {k: block.meta[k] for k in expected} == expected
    assert block.id == parent_id_for("BOE-A-2015-11430", "4", 1)


@pytest.mark.parametrize("model", ["lexical", "use-multilingual"])
def test_long_article_semantic_split_covers_text_within_bounds(model):
    doc = _article("48")  # suspension with job reservation: several thousand characters
    assert len(doc.content) > 6000
    splitter = SemanticParentSplitter(breakpoint_model=model)
    splitter.warm_up()
    blocks = splitter.run(documents=[doc])["documents"]
    assert len(blocks) >= 3
    assert [b.meta["part"] for b in blocks] == list(range(1, len(blocks) + 1))
    assert all(b.meta["parts"] == len(blocks) for b in blocks)
    assert all(len(b.content) <= 2000 for b in blocks)
    words = re.findall(r"\w+", doc.content)
    covered = set(re.findall(r"\w+", " ".join(b.content for b in blocks)))
    assert set(words) <= covered
    assert len({b.id for b in blocks}) == len(blocks)
    again = splitter.run(documents=[_article("48")])["documents"]
    assert [b.id for b in again] == [b.id for b in blocks]
    assert [b.content for b in again] == [b.content for b in blocks]


def test_safety_split_only_mode_respects_overlap():
    doc = _article("48")
    blocks = SemanticParentSplitter(breakpoint_model="none", overlap=200).run(documents=[doc])["documents"]
    assert len(blocks) >= 4
    assert all(len(b.content) <= 2000 for b in blocks)
    tail_words = blocks[0].content.split()[-3:]
    assert " ".join(tail_words) in blocks[1].content[:400]


def test_missing_meta_is_a_clear_error():
    with pytest.raises(ValueError, match="ArticleParser"):
        SemanticParentSplitter().run(documents=[Document(content="texto", meta={})])


def test_lexical_breakpoint_falls_at_the_topic_change():
    vacaciones = [
        "Las vacaciones anuales retribuidas serán de treinta días naturales.",
        "El calendario de vacaciones se fijará en cada empresa.",
        "El trabajador conocerá las fechas de sus vacaciones dos meses antes.",
        "Las vacaciones no disfrutadas por incapacidad temporal podrán disfrutarse después.",
    ]
    despido = [
        "El despido disciplinario deberá ser notificado por escrito al trabajador.",
        "La carta de despido hará figurar los hechos que lo motivan.",
        "El despido improcedente obliga a readmitir o a indemnizar al trabajador.",
        "La indemnización por despido improcedente será de treinta y tres días de salario.",
    ]
    text = " ".join(vacaciones + despido) * 1
    splitter = SemanticParentSplitter(max_chars=400, min_chars=100, percentile=80.0, overlap=0)
    distances = splitter._lexical_distances(vacaciones + despido, "es")
    assert int(distances.argmax()) == 3  # the gap between the last vacation and the first dismissal sentence
    doc = Document(id="a", content=text, meta={"law_id": "X", "article": "1", "lang": "es"})
    blocks = [b.content for b in splitter.run(documents=[doc])["documents"]]
    assert any("vacaciones" in b and "despido" not in b for b in blocks)
    assert any("despido" in b and "vacaciones" not in b for b in blocks)
