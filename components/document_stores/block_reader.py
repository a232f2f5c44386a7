"""The one place where the expansion stages (CitedBlockExpander, SiblingExpander, GraphEnricher) read parent blocks."""

from typing import Any

from haystack import Document

from components.legal.access import and_filters
from components.legal.ids import PARENT_FILTER


def read_blocks(
    document_store: Any, condition: dict[str, Any] | None, filters: dict[str, Any] | None
) -> list[Document]:
    """
    Parent blocks matching `condition`, AND-ed with `meta.level == parent` and the request's `filters` (the access
    filter of a multi-tenant deployment, a user's narrowing filter): every expansion read goes through here, so
    no expansion path can return a block the request may not see. A None `condition` reads nothing.
    """
    if not condition:
        return []
    return document_store.filter_documents(and_filters(condition, PARENT_FILTER, filters))


def ids_condition(ids: list[str]) -> dict[str, Any] | None:
    """Filter on document ids (None for no ids)."""
    ids = list(dict.fromkeys(ids))
    return {"field": "id", "operator": "in", "value": ids} if ids else None


def any_of(conditions: list[dict[str, Any]]) -> dict[str, Any] | None:
    """OR of conditions (the condition itself when there is one; None for none)."""
    if not conditions:
        return None
    return conditions[0] if len(conditions) == 1 else {"operator": "OR", "conditions": conditions}


def articles_condition(articles: list[tuple[str, str]], part: int | None = None) -> dict[str, Any] | None:
    """Blocks of the given (law_id, article) pairs (only part `part` when given); None for no pairs."""
    conditions = []
    for law_id, article in dict.fromkeys(articles):
        condition = [
            {"field": "meta.law_id", "operator": "==", "value": law_id},
            {"field": "meta.article", "operator": "==", "value": article},
        ]
        if part is not None:
            condition.append({"field": "meta.part", "operator": "==", "value": part})
        conditions.append({"operator": "AND", "conditions": condition})
    return any_of(conditions)


def with_score(document: Document, score: float, **meta: Any) -> Document:
    """A copy of `document` with `score` and extra meta."""
    return Document(
        id=document.id, content=document.content, meta={**document.meta, **meta}, score=score,
        embedding=document.embedding, sparse_embedding=document.sparse_embedding,
    )


def count_blocks(document_store: Any, condition: dict[str, Any], filters: dict[str, Any] | None) -> int:
    """How many parent blocks match `condition` AND the request's `filters` (`count_documents_by_filter` when the
    store has it, else the length of `read_blocks`)."""
    combined = and_filters(condition, PARENT_FILTER, filters)
    if hasattr(document_store, "count_documents_by_filter"):
        return int(document_store.count_documents_by_filter(combined))
    return len(document_store.filter_documents(combined))
