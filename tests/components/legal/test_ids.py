import inspect
from pathlib import Path

import pytest
import yaml
from haystack import Document

from components.document_stores.opensearch_index import OPENSEARCH_MAPPINGS
from components.legal.ids import TEXT_META_FIELDS, first_per_article, is_transitional
from components.rankers.relevance_backends import CrossEncoderScorer, EmbeddingScorer
from components.retrievers.hybrid_retriever import LEXICAL_BM25_QUERY
from components.legal.legal_text import normalize_article_key


@pytest.mark.parametrize(
    ("raw", "kind"),
    [("Disposición transitoria undécima", "articulo"), ("única", "transitoria"), ("trigésima quinta", "transitoria"),
     ("novena bis", "transitoria")],
)
def test_a_disposicion_transitoria_is_transitional(raw, kind):
    assert is_transitional(normalize_article_key(raw, kind))


def test_transitional_keys_and_the_rest():
    # a repeated ordinal, the approving decree's
    assert all(is_transitional(k) for k in ("dt35-2", "rd-dt1"))
    # articles, the other dispositions, a preamble, no key; the ADCT's articles govern (art. 10: the FGTS fine)
    assert not any(is_transitional(k) for k in ("38", "59-a", "da1", "dd", "df2", "rd-unico", "preambulo", None, 38,
                                                "adct-10"))


def test_every_reader_of_a_blocks_text_reads_the_same_meta_fields():
    # the indexing embedders (the YAML cannot import the constant), the per-query relevance backends and the
    # OpenSearch BM25 request and mapping: an article told apart only by its section is told apart everywhere
    indexing = yaml.safe_load((Path(__file__).parents[3] / "yaml" / "indexing.yaml").read_text(encoding="utf-8"))
    for name in ("sparse_embedder", "dense_embedder"):
        fields = indexing["components"][name]["init_parameters"]["meta_fields_to_embed"]
        assert fields == [*TEXT_META_FIELDS, "context"], name
    assert TEXT_META_FIELDS == ("section_name", "article_title")
    for scorer in (CrossEncoderScorer, EmbeddingScorer):  # the per-query relevance backends embed a block the same way
        assert inspect.signature(scorer.__init__).parameters["meta_fields_to_embed"].default == TEXT_META_FIELDS
    match = LEXICAL_BM25_QUERY["query"]["bool"]["must"][0]["multi_match"]
    assert match["fields"] == ["content", *TEXT_META_FIELDS]
    assert all(OPENSEARCH_MAPPINGS["properties"][field]["type"] == "text" for field in TEXT_META_FIELDS)


def test_first_per_article_keeps_each_articles_first_block_in_order():
    blocks = [Document(content=c, meta={"law_id": law, "article": art}) for c, law, art in (
        ("ET 34, part 2", "ET", "34"), ("ET 37", "ET", "37"), ("ET 34, part 1", "ET", "34"), ("CLT 34", "CLT", "34"))]
    assert [d.content for d in first_per_article(blocks)] == ["ET 34, part 2", "ET 37", "CLT 34"]
    assert first_per_article([]) == []
