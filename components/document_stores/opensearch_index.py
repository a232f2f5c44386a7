"""
The OpenSearch index lexhay creates for its BM25 child chunks: analyzer and mappings.

The loader (`pipelines.loader`) passes these to every `OpenSearchDocumentStore` it builds, for the indexing
pipeline's writer and the retriever's lexical side alike, so both read and write one index layout. An existing
index keeps its own settings.
"""

from typing import Any

OPENSEARCH_ANALYZER = "lexhay_spanish"

# Spanish stop words, the Snowball Spanish stemmer (as the embedded store's BM25 vectors) and accent folding after
# stemming, so "días" / "dias" and "jubilación" / "jubilacion" meet on one term.
OPENSEARCH_INDEX_SETTINGS: dict[str, Any] = {
    "analysis": {
        "filter": {
            "lexhay_spanish_stop": {"type": "stop", "stopwords": "_spanish_"},
            "lexhay_spanish_stemmer": {"type": "stemmer", "language": "spanish"},
        },
        "analyzer": {
            OPENSEARCH_ANALYZER: {
                "type": "custom",
                "tokenizer": "standard",
                "filter": ["lowercase", "lexhay_spanish_stop", "lexhay_spanish_stemmer", "asciifolding"],
            }
        },
    }
}

# Meta fields are top-level fields in opensearch-haystack's layout. Strings are keywords (exact filters on law_id,
# article, collection, status, ...); `content`, `article_title` and `section_name` are full text for BM25 (the
# embedded BM25 vectors embed the title and the section's name too). No dense vector: the dense side stays on Qdrant.
# An index made before `section_name` was mapped holds it as a keyword: re-create the index to search it.
OPENSEARCH_MAPPINGS: dict[str, Any] = {
    "properties": {
        "content": {"type": "text", "analyzer": OPENSEARCH_ANALYZER},
        "article_title": {
            "type": "text",
            "analyzer": OPENSEARCH_ANALYZER,
            "fields": {"keyword": {"type": "keyword", "ignore_above": 512}},
        },
        "section_name": {"type": "text", "analyzer": OPENSEARCH_ANALYZER},
        "rank": {"type": "integer"},
        "publication_date": {"type": "date", "ignore_malformed": True},
        "last_updated": {"type": "date", "ignore_malformed": True},
    },
    "dynamic_templates": [{"strings": {"match_mapping_type": "string", "mapping": {"type": "keyword"}}}],
}
