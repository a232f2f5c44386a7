"""
Result rows: how a retrieved `Document` is shown to callers, in one place for the CLI, the HTTP API and the SDK.

- `document_row`: the full block (`id`, `score`, `content`, `meta`): the HTTP `/retrieve/run` results.
- `article_row`: the article-level summary (`law_id`, `article`, `score`, `chunk_id`, `title`, `law_short`,
  `label`): the CLI's batch JSONL contract (the quality harness reads it) and its tables.
- `QueryResult` (with `Citation`): what `LexHay.ask` returns, declared once for the SDK, the CLI (`lexhay ask
  --json` writes it as is), the HTTP `/ask/run` response and the OpenAI-compatible chat (its `lexhay` field).
"""

from typing import Any, TypedDict

from haystack import Document

from components.legal.answer_format import article_citation


class Citation(TypedDict):
    """One cited article of an answer: the first block of it that the answer used."""

    law_id: str | None
    article: str | None
    title: str  # the article's title, "" when it has none
    chunk_id: str  # the id of the cited block (a parent block)
    law_short: str | None  # the law's short name (ET, CF88, ...), when known
    label: str  # the article as a citation names it, spelled as the statute writes it: "art. 38", "art. 391-A"


class QueryResult(TypedDict):
    """
    The answer to one question (`LexHay.ask`); the keys are a public contract of the SDK, the CLI and HTTP.

    - `answer`: the answer text; citations the verifier could not check are marked in it.
    - `citations`: the articles the answer used, one `Citation` per article, in context order (an LLM answer without
      a META block or `[n]` references: the context articles its text cites, as the verifier checked them).
    - `context_chunk_ids`: ids of the blocks the answer was given; send them back as `previous_chunk_ids` for a
      follow-up question (carryover).
    - `need`: what the answer said it was missing (the META block's `NEED` requests, parsed).
    - `route`: `ACCEPT`, or `REJECT` when the question was refused (off topic, nothing relevant retrieved): then
      `answer` says why and `citations`, `context_chunk_ids`, `need` and `unverified_citations` are empty.
    - `fallbacks`: per LLM stage (`decompose`, `hyde`, `topic`, `answer`), what ran instead of the LLM, or None.
    - `unverified_citations`: citations of the answer the verifier could not match to the context (each with its
      `text` and `reason`).
    - `flags`: the feature flags this request ran with (`pipelines.flags`).
    - `trace`: the request's trace (`pipelines.tracing`) with the answer-level keys (`pipelines.sdk.ASK_TRACE_KEYS`).
    """

    answer: str
    citations: list[Citation]
    context_chunk_ids: list[str]
    need: list[dict[str, Any]]
    route: str  # "ACCEPT" or "REJECT"
    fallbacks: dict[str, Any]
    unverified_citations: list[dict[str, Any]]
    flags: dict[str, bool]
    trace: dict[str, Any]


def document_row(doc: Document) -> dict[str, Any]:
    """A retrieved parent block as JSON: id, score, content, meta."""
    return {"id": doc.id, "score": None if doc.score is None else float(doc.score), "content": doc.content,
            "meta": dict(doc.meta)}


def article_row(doc: Document) -> dict[str, Any]:
    """
    An article-level result: law_id, article (the store's key), score (6 decimals), chunk_id, title, law_short, label
    (the article as a citation names it: "art. 391-A").
    """
    return {
        "law_id": doc.meta.get("law_id"),
        "article": doc.meta.get("article"),
        "score": round(float(doc.score or 0.0), 6),
        "chunk_id": doc.id,
        "title": doc.meta.get("article_title") or "",
        "law_short": doc.meta.get("law_short") or "",
        "label": article_citation(doc.meta),
    }
