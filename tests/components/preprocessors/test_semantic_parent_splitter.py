import re

import pytest
from haystack import Document

from components.legal.ids import parent_id_for
from components.legal.legal_text import split_sentences
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
    assert s.overlap_unit == "sentence"
    for kwargs, match in [
        ({"overlap_unit": "token"}, "overlap_unit"),
        ({"max_chars": 100}, "max_chars"),
        ({"overlap": 1500}, "overlap"),
        ({"percentile": 100}, "percentile"),
        ({"breakpoint_model": "bert"}, "breakpoint_model"),
    ]:
        with pytest.raises(ValueError, match=match):
            SemanticParentSplitter(**kwargs)


def test_to_dict_from_dict_round_trip():
    s = SemanticParentSplitter(max_chars=1500, overlap=100, min_chars=200, percentile=85.0, breakpoint_model="none",
                               overlap_unit="word")
    assert s.to_dict()["init_parameters"]["overlap_unit"] == "word"
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


@pytest.mark.parametrize("number", ["48", "37", "34"])
def test_every_block_starts_where_a_sentence_starts(number):
    """A block is what a reader sees and quotes: the overlap repeats whole sentences, never the tail of one."""
    doc = _article(number)
    sentences = set(split_sentences(doc.content))
    blocks = SemanticParentSplitter(breakpoint_model="none").run(documents=[doc])["documents"]
    assert len(blocks) >= 2
    assert all(split_sentences(b.content)[0] in sentences for b in blocks)
    assert all(len(b.content) <= 2000 for b in blocks)
    for previous, block in zip(blocks, blocks[1:]):  # what is repeated is the previous block's last sentences
        before, after = split_sentences(previous.content), split_sentences(block.content)
        repeated = next((k for k in range(1, len(before)) if before[-k:] == after[:k]), 0)
        assert len("\n".join(after[:repeated])) <= 200
        assert repeated or after[0] not in before
    # word overlap (the old behaviour) starts later blocks inside a sentence
    words = SemanticParentSplitter(breakpoint_model="none", overlap_unit="word").run(documents=[doc])["documents"]
    assert any(split_sentences(b.content)[0] not in sentences for b in words[1:])


def test_a_portuguese_article_is_split_with_portuguese_abbreviations():
    text = "Art. 999. " + " ".join(
        f"O valor {n} é fixado pelo Dec. Legislativo nº {n}, de 1990, e atualizado todo ano pelo órgão competente."
        for n in range(1, 13)
    )
    doc = Document(id="clt-999", content=text, meta={"law_id": "DEL-5452-1943", "article": "999", "lang": "pt"})
    blocks = SemanticParentSplitter(max_chars=400, overlap=100, min_chars=0, breakpoint_model="none").run(
        documents=[doc])["documents"]
    assert len(blocks) >= 3
    assert not any(b.content.startswith("Legislativo") for b in blocks)  # "Dec." ends no Portuguese sentence
    assert all(b.content.startswith(("Art. 999.", "O valor")) for b in blocks)


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
