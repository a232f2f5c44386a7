"""
Ids and meta keys that several stages share: article-key prefixes, block (parent) ids, score fields.

Stages write and read these names; keeping them here means an indexing stage and a query stage agree on them
without importing each other.
"""

import hashlib
import re
from collections.abc import Iterable
from typing import Any, Final

from haystack import Document, logging

logger = logging.getLogger(__name__)

# article keys of the annexed "Ato das Disposições Constitucionais Transitórias" (CF88) and of the approving
# decree of a texto refundido carry a prefix, so they do not collide with the body's article numbers
ADCT_PREFIX: Final[str] = "adct-"
APPROVAL_PREFIX: Final[str] = "rd-"
PREAMBLE: Final[str] = "preambulo"  # article key of a norm's preamble (exposición de motivos): explains, not law
# `meta.rank` of a norm (`StatuteConverter`): 1 constitución / ley orgánica, 2 ley / real decreto legislativo /
# decreto-ley, 3 reglamento general, 4 real decreto / decreto, 5 anything else. A regulation (3, 4) develops a norm
# with the force of law (1, 2) and is subordinate to it.
REGULATION_RANKS: Final[frozenset[int]] = frozenset({3, 4})
# article keys of a "disposición transitoria" ("dt", "dt11", "dt35-2", "dt9 bis"; the approving decree's "rd-dt1")
_TRANSITIONAL_KEY_RE: Final[re.Pattern[str]] = re.compile(rf"(?:{APPROVAL_PREFIX})?dt(?![a-z])")

# Blocks. Parents (an article, or one part of a long article) are what readers and the LLM get; children are the
# search unit. `meta.level` is "parent" or "child"; a child's `meta.parent_id` names its block.
PARENT_FILTER = {"field": "meta.level", "operator": "==", "value": "parent"}
CHILD_FILTER = {"field": "meta.level", "operator": "==", "value": "child"}
DENSE_SCORE = "dense_score"  # meta key: a block's best dense similarity to the query (absolute relevance signal)
# meta key: the best dense similarity to the query of a block's passages (its child chunks' late-chunked vectors)
PASSAGE_SCORE = "passage_score"
# the meta fields read with a block's text wherever it is embedded or searched as text (the embedders of
# yaml/indexing.yaml, which add the contextualizer's `context`; the per-query relevance backends; the OpenSearch BM25
# request): the section's name where the article's title repeats in its law (`ArticleParser`), then the title
TEXT_META_FIELDS: Final[tuple[str, ...]] = ("section_name", "article_title")
# what a dense search ranks: blocks, never the child chunks that carry passage vectors (searched per block instead)
NOT_CHILD_FILTER = {"field": "meta.level", "operator": "!=", "value": "child"}
# `meta.expansion` of a block placed as the constitutional basis of the article before it (`BasisExpander`): it
# follows its source (`meta.expanded_from`) wherever rankings are fused or quoted, and takes no candidate's place
BASIS_EXPANSION: Final[str] = "basis"
# `meta.lexical_match` of a cited article's block as `LexicalFirstGate` scored it: `EXACT_MATCH` for the article the
# question cites itself ("art. 477 da CLT" -> CLT art. 477, not 477-A), which the re-ranker puts first
LEXICAL_MATCH: Final[str] = "lexical_match"
EXACT_MATCH: Final[str] = "exact"
# key of a citation (`CitationDetector`) and of its exact hit's `meta` (`LexicalFirstGate`): the question asks for the
# cited article's whole wording ("transcribe el artículo 38", "el artículo 48 del ET completo"), so the context keeps
# its blocks whole and the answer quotes them as written
WHOLE_TEXT: Final[str] = "whole_text"
# meta key: the group of the special regime a block belongs to that the question does not name ("serviço
# ferroviário"), set by `LegalReranker` on the blocks it puts after the general ones; the extractive answer quotes
# such a block only when nothing else is there, and the LLM's context block says whom it governs
SPECIAL_REGIME: Final[str] = "special_regime"
# meta key: on a block of a law that leaves out of its scope a group the question names (CLT art. 7, a: domestic
# employees), `{"group", "article", "own_law", "constitution"}`, set by `LegalReranker` (the block keeps its place);
# `BasisExpander` puts its constitutional basis first, and the answers say the law does not govern the group and
# name its own law
LEFT_OUT: Final[str] = "left_out"
# `meta.status` of a norm (or article): in force, repealed as a whole (its successor in `meta.derogated_by`), or
# partly repealed
IN_FORCE: Final[str] = "in_force"
REPEALED: Final[str] = "repealed"
PARTIALLY_REPEALED: Final[str] = "partially_repealed"
# meta key: sha256 of the source file (name + bytes) under the indexing pipeline and owner it was indexed with
SOURCE_DIGEST = "source_sha256"

# Logical collections (`meta.collection`) and their default weights in hybrid retrieval and CRAG grading.
DEFAULT_COLLECTION_WEIGHTS: Final[dict[str, float]] = {"normativa": 1.0, "sentencias": 0.8, "criterios": 0.9}


def cited_exactly(meta: dict[str, Any]) -> bool:
    """Whether a block (its `meta`) is an exact hit of an article the question cites (`LexicalFirstGate`)."""
    return meta.get(LEXICAL_MATCH) == EXACT_MATCH


def is_transitional(article: Any) -> bool:
    """
    Whether article key `article` is a Spanish "disposición transitoria": a provision that governs the passage from
    the old rule to the new one (contracts signed before a reform, a retirement age reached year by year), not the
    rule itself. The articles of the CF88's transitional act (ADCT) are not: its art. 10 (the 40% FGTS fine, the
    pregnant employee's job security) has governed since 1988, the law it awaits never having been passed.
    """
    return isinstance(article, str) and _TRANSITIONAL_KEY_RE.match(article) is not None


def norm_rank(meta: dict[str, Any]) -> int:
    """A block's `meta.rank` (1-5), 5 when missing or not a number."""
    try:
        return int(meta.get("rank", 5))
    except (TypeError, ValueError):
        return 5


def repeated_key(key: str, occurrence: int) -> str:
    """
    The article key of the `occurrence`-th (2, 3, ...) provision a statute numbers as an earlier one: "dt35-2" for
    the LGSS's second "disposición transitoria trigésima quinta" (`ArticleParser`).
    """
    return f"{key}-{occurrence}"


def decree_key(article: str) -> str | None:
    """
    The key of the approving decree's provision a citation of a recast law's `article` may name: "artículo único",
    a disposition with no ordinal ("disposición derogatoria única", "disposición final única") and any derogatory
    one are the decree's (`rd-unico`, `rd-dd`, `rd-df`) when the recast law (a texto refundido, which numbers its
    articles and its dispositions) has none of its own: "disposición derogatoria única del ET". None for any other.
    """
    if article == "unico" or article in ("da", "dt", "dd", "df") or re.fullmatch(r"dd\d+", article):
        return f"{APPROVAL_PREFIX}{article}"
    return None


def numbered_as(key: str, article: str) -> bool:
    """
    Whether the provision with article key `key` is the one a citation of `article` names: the same key, a later
    provision the statute numbers the same (`repeated_key`: "disposición transitoria trigésima quinta" names
    "dt35" and "dt35-2"), or the approving decree's provision of that name (`decree_key`: the ET's "disposición
    derogatoria única" is its decree's, `rd-dd`).
    """
    if key == article or key == decree_key(article):
        return True
    head, _, occurrence = key.rpartition("-")
    return head == article and occurrence.isdigit() and int(occurrence) >= 2


def parent_id_for(law_id: str, article: str, part: int, owner: str = "") -> str:
    """Deterministic id of parent block `part` of an article (`owner`: `access.owner_key`, "" = global)."""
    prefix = f"{owner}|" if owner else ""
    return hashlib.sha256(f"{prefix}{law_id}|{article}|{part}|parent".encode()).hexdigest()


def parent_key(document: Document) -> str:
    """Id of the parent block `document` belongs to: its own id for a parent (or a chunk without `parent_id`)."""
    if document.meta.get("level", "parent") == "parent":
        return document.id
    if not document.meta.get("parent_id"):
        logger.warning("Chunk {chunk_id} has no parent_id; used as its own block", chunk_id=document.id)
        return document.id
    return document.meta["parent_id"]


def first_per_article(documents: Iterable[Document]) -> list[Document]:
    """The first block of each (law_id, article) in `documents`' order: an article-level ranking of blocks."""
    seen: set[tuple[Any, Any]] = set()
    articles = []
    for doc in documents:
        key = (doc.meta.get("law_id"), doc.meta.get("article"))
        if key not in seen:
            seen.add(key)
            articles.append(doc)
    return articles


def check_named_laws(named_laws: Any) -> None:
    """
    Raise ValueError unless `named_laws` is None or a list of non-empty law id strings (the norms a question names,
    as `CitationDetector.named_laws` gives them to the retriever and the re-ranker).
    """
    if named_laws is not None and not (
        isinstance(named_laws, list) and all(isinstance(law, str) and law for law in named_laws)
    ):
        raise ValueError(f"named_laws must be a list of law ids, got {named_laws!r}")
