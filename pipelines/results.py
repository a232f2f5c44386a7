"""
Result rows: how a retrieved `Document` is shown to callers, in one place for the CLI, the HTTP API and the SDK.

- `document_row`: the full block (`id`, `score`, `content`, `meta`): the HTTP `/retrieve/run` results.
- `article_row`: the article-level summary (`law_id`, `article`, `score`, `chunk_id`, `title`, `law_short`): the
  CLI's batch JSONL contract (the quality harness reads it) and its tables.
"""

from typing import Any

from haystack import Document


def document_row(doc: Document) -> dict[str, Any]:
    """A retrieved parent block as JSON: id, score, content, meta."""
    return {"id": doc.id, "score": None if doc.score is None else float(doc.score), "content": doc.content,
            "meta": dict(doc.meta)}


def article_row(doc: Document) -> dict[str, Any]:
    """An article-level result: law_id, article, score (6 decimals), chunk_id, title, law_short."""
    return {
        "law_id": doc.meta.get("law_id"),
        "article": doc.meta.get("article"),
        "score": round(float(doc.score or 0.0), 6),
        "chunk_id": doc.id,
        "title": doc.meta.get("article_title") or "",
        "law_short": doc.meta.get("law_short") or "",
    }
