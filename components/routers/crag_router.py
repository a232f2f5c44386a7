"""Corrective RAG routing: grade the retrieved set, then accept it, retry with a broader query, or reject."""

import math
import re
from pathlib import Path
from typing import Any, Final

from haystack import Document, component, default_from_dict, default_to_dict, logging

from components.legal.catalogue import asks_for_catalogue
from components.legal.citations import CitationGrammar
from components.legal.ids import DEFAULT_COLLECTION_WEIGHTS
from components.legal.legal_text import detect_query_language, fold_accents
from components.legal.terms import (
    DEFAULT_EQUIVALENCES_FILE,
    Equivalences,
    asks_nothing_new,
    extract_keywords,
    load_equivalences,
)

logger = logging.getLogger(__name__)

SCORE_TYPES: Final[tuple[str, ...]] = ("rrf", "cosine", "bm25", "unit")
SCORE_MODES: Final[tuple[str, ...]] = ("auto", *SCORE_TYPES)
# the REJECT message in the question's language (`detect_query_language`; Spanish without evidence)
REJECTED_MESSAGES: Final[dict[str, str]] = {
    "es": (
        "El corpus indexado no cubre esta pregunta: no he encontrado normas lo bastante relevantes para responder "
        "con fundamento. Prueba a reformularla con otros términos o indica la ley o el artículo que te interesa."
    ),
    "pt": (
        "O corpus indexado não cobre esta pergunta: não encontrei normas suficientemente relevantes para responder "
        "com fundamento. Tente reformulá-la com outros termos ou indique a lei ou o artigo que lhe interessa."
    ),
}
REJECTED_MESSAGE: Final[str] = REJECTED_MESSAGES["es"]
RRF_LISTS: Final[int] = 2  # dense + sparse
MIN_KEPT_TERMS: Final[int] = 3
_RRF_TOLERANCE: Final[float] = 2e-6  # Qdrant fuses in float32
_RRF_MAX_RANK: Final[int] = 1000
# the most specific terms of a question: numbers, dates, amounts, codes (ET, LGSS) and proper nouns
_SPECIFIC_RE: Final[re.Pattern[str]] = re.compile(
    r"(?<!\S)\S*\d\S*|(?<!\w)[A-ZÁÉÍÓÚÑÇ]{2,}(?!\w)|(?<=[\w,;:] )[A-ZÁÉÍÓÚÑÇ][a-záéíóúñçãõâêô]+"
)


@component
class CRAGRouter:
    """
    Grades a retrieved set (Corrective RAG) and routes it: ACCEPT, RETRY with a broader query, or REJECT.

    **Calibration.** Retrieval scores live on different scales, so each document's score is first mapped to
    [0, 1] according to its score type:

    - `rrf` (hybrid retrieval, Reciprocal Rank Fusion of dense + sparse with constant `rrf_k`):
      `score * rrf_k / 2`, the fraction of the best possible fused score: 1.0 = ranked first by both retrievers,
      0.5 = first by one of them only. RRF measures rank agreement, not absolute relevance.
    - `cosine` (dense only): linear from `cosine_floor` (0) to `cosine_ceiling` (1), clipped. Tune both to the
      embedding model (e5 models score unrelated pairs around 0.7).
    - `bm25` (sparse only, unbounded): `score / (score + bm25_midpoint)`.
    - `unit` (already calibrated: lexical-first exact hits, reranker probabilities): clipped to [0, 1].

    **Absolute relevance first.** Fused (RRF) and re-ranked scores are relative to the other candidates, so a set of
    equally irrelevant documents can look strong. When the documents carry `meta[absolute_field]` (the dense
    similarity `HybridRetriever` records as `dense_score`), `auto` mode grades the set on it (as `cosine`); blocks
    declared `unit` (citations fetched directly) keep their score, and a block with neither counts 0. Carried-over
    blocks (`meta["carried_over"]`) are graded on their own dense similarity to the new question only (0 without
    one): any caller can send ids, so they never vouch for a question by their fixed score. The one exception is a
    turn that asks nothing new ("explica melhor", "resúmelo": no word but `FOLLOWUP_FILLER`'s) with carried-over
    blocks alone (nothing was searched for it): what it asks about is those blocks, which the caller may read, and
    its words, naming no matter, are close to none. They are graded on their fixed score (as `unit`).
    Otherwise:

    `score_mode="auto"` takes the type a document declares in `meta["score_type"]` (`LexicalFirstGate` marks its
    hits `unit`) and infers it for the others from their scores: any score above 1 means `bm25`; a set whose best
    score reaches a rank-0 hit's `w / rrf_k` and whose `top_n` best scores are all exact RRF values,
    `w * (1/(rrf_k + i) [+ 1/(rrf_k + j)])` for integer ranks and a collection weight `w` in `rrf_weights`, is
    `rrf` (float32 cosine scores essentially never land on that lattice); anything else is `cosine`. Scores
    rounded to two decimals can look like RRF, and sparse scores that never exceed 1 read as cosine: set
    `score_mode` explicitly for such retrievers. A missing score counts as 0.

    **Decision.** `best` is the highest calibrated score, `mean_top_n` the mean of the `top_n` highest (over the
    documents available, without padding), and `confidence = (best + mean_top_n) / 2`.

    - ACCEPT when `best >= accept_best` and `mean_top_n >= accept_mean_top_n`.
    - Otherwise RETRY while `retries < max_retries`, with `retry_query`: the question without its most specific
      terms (numbers, article references, codes such as ET, proper nouns; stopwords too) and without what it cites
      outside the corpus (`CitationGrammar.without_outside`: "Código Penal artículo 138" has nothing left to
      search, where "código" found the social-security codes of occupations; a question about the corpus itself,
      "¿qué leyes tienes?", has nothing to search either: `NormCatalogue` answers it) plus the statutory terms
      of the colloquial -> legal equivalence table (`components/legal/data/equivalences.yaml`, optional); from the
      second attempt on, its trailing qualifiers are also trimmed, a quarter of the other keywords per further
      attempt (keeping at least 3).
    - At `max_retries`, or when the rewrite would not change the query, the set is final: ACCEPT with its (low)
      confidence when `best >= min_best` (one plausibly relevant document is still worth answering from: the
      answer stage can DROP it and the citation verifier checks what is cited), REJECT otherwise.

    Each route has its own output socket, so a pipeline branches without a `ConditionalRouter`: `accepted`
    (documents), `retry_query` (back to the retrieval branch, through a `BranchJoiner` that also takes the
    question) or `rejected` (the message, in the question's language: Spanish or Portuguese). `route`, `retries`
    and `confidence` are always emitted; Haystack does not connect a component to itself, so `retries` returns to
    the `retries` input through a pass-through such as `OutputAdapter(template="{{ retries }}", output_type=int)`.

    ### Usage example

    ```python
    from components.routers.crag_router import CRAGRouter

    router = CRAGRouter(max_retries=2)
    result = router.run(query="¿Cuántos días de vacaciones tengo?", documents=retrieved, retries=0)
    if result["route"] == "RETRY":
        retrieved = retrieve(result["retry_query"])
        result = router.run(query=result["retry_query"], documents=retrieved, retries=result["retries"])
    ```
    """

    def __init__(
        self,
        *,
        enabled: bool = True,
        accept_best: float = 0.5,
        accept_mean_top_n: float = 0.35,
        top_n: int = 5,
        max_retries: int = 2,
        min_best: float = 0.3,
        score_mode: str = "auto",
        rrf_k: int = 2,
        rrf_weights: list[float] | None = None,
        cosine_floor: float = 0.2,
        cosine_ceiling: float = 0.6,
        bm25_midpoint: float = 10.0,
        equivalences_file: str | None = None,
        rejected_message: str | dict[str, str] | None = None,
        absolute_field: str | None = "dense_score",
    ) -> None:
        """
        Create a CRAGRouter.

        :param accept_best: Calibrated score the best document must reach to ACCEPT.
        :param accept_mean_top_n: Calibrated mean of the `top_n` best documents needed to ACCEPT.
        :param top_n: Documents averaged for `accept_mean_top_n`.
        :param max_retries: RETRY rounds allowed before the set is final.
        :param min_best: Floor for the final decision: at `max_retries`, ACCEPT (low confidence) when the best
            calibrated score reaches it, else REJECT. Must not exceed `accept_best`.
        :param score_mode: `auto` (per document, see the class description), or one of `rrf`, `cosine`, `bm25`,
            `unit` for all documents.
        :param rrf_k: The RRF constant of the fused scores (Qdrant's and `EdgeDocumentStore`'s default is 2).
        :param rrf_weights: Collection weights that may multiply RRF scores (HybridRetriever); `None` = 1.0 and
            HybridRetriever's default collection weights. Only used to recognise RRF scores in `auto` mode.
        :param cosine_floor: Cosine similarity calibrated to 0. The defaults (0.2 / 0.6) are EmbeddingGemma's,
            calibrated on the full corpus so that in-domain questions grade high and off-topic ones low
            (benchmarks/README.md); `pipelines.settings` sets them per embedder.
        :param cosine_ceiling: Cosine similarity calibrated to 1.
        :param bm25_midpoint: BM25 score calibrated to 0.5.
        :param equivalences_file: Colloquial -> statutory terms table used to broaden retry queries; `None` = the
            bundled `components/legal/data/equivalences.yaml` when it exists (no table otherwise).
        :param rejected_message: Message sent on the `rejected` output: one text, or texts by the question's
            language (ISO 639-1 code -> text; a language without one gets Spanish, else the first); `None` = the
            bundled Spanish and Portuguese `REJECTED_MESSAGES`.
        :param absolute_field: Meta field holding an absolute relevance score (the dense similarity
            `HybridRetriever` records as `dense_score`). In `auto` mode, when any document has it, the set is graded
            on it (calibrated as `cosine`): fused and re-ranked scores are relative to the best candidate and would
            accept any set. `None` = grade the scores themselves.
        :param enabled: Feature flag (`crag`; `False` accepts every retrieved set as is).
            A run's `enabled` overrides it.
        :raises ValueError: If a threshold is outside [0, 1], `min_best > accept_best`, `top_n < 1`,
            `max_retries < 0`, `score_mode` is unknown, a calibration parameter is invalid, or `equivalences_file`
            cannot be read.
        """
        for name, value in (("accept_best", accept_best), ("accept_mean_top_n", accept_mean_top_n),
                            ("min_best", min_best)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} is a calibrated score and must be in [0, 1], got {value}")
        if min_best > accept_best:
            raise ValueError(f"min_best ({min_best}) must not exceed accept_best ({accept_best})")
        if top_n < 1:
            raise ValueError(f"top_n must be >= 1, got {top_n}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        if score_mode not in SCORE_MODES:
            raise ValueError(f"score_mode must be one of {SCORE_MODES}, got {score_mode!r}")
        if rrf_k < 1:
            raise ValueError(f"rrf_k must be >= 1, got {rrf_k}")
        if rrf_weights is not None and (not rrf_weights or any(w <= 0 for w in rrf_weights)):
            raise ValueError(f"rrf_weights must be positive collection weights, got {rrf_weights}")
        if not cosine_floor < cosine_ceiling:
            raise ValueError(f"cosine_floor ({cosine_floor}) must be below cosine_ceiling ({cosine_ceiling})")
        if bm25_midpoint <= 0:
            raise ValueError(f"bm25_midpoint must be > 0, got {bm25_midpoint}")
        if rejected_message is not None:
            texts = {"": rejected_message} if isinstance(rejected_message, str) else rejected_message
            if not isinstance(texts, dict) or not texts or not all(
                isinstance(key, str) and isinstance(text, str) and text.strip() for key, text in texts.items()
            ):
                raise ValueError("rejected_message must be a non-empty text or a language -> non-empty text mapping")
        self.enabled = enabled
        self.accept_best = accept_best
        self.accept_mean_top_n = accept_mean_top_n
        self.top_n = top_n
        self.max_retries = max_retries
        self.min_best = min_best
        self.score_mode = score_mode
        self.rrf_k = rrf_k
        self.rrf_weights = rrf_weights
        self.cosine_floor = cosine_floor
        self.cosine_ceiling = cosine_ceiling
        self.bm25_midpoint = bm25_midpoint
        self.equivalences_file = equivalences_file
        self.rejected_message = rejected_message
        self.absolute_field = absolute_field
        self._weights = sorted(set(rrf_weights or [1.0, *DEFAULT_COLLECTION_WEIGHTS.values()]))
        self._equivalences: Equivalences | None = None
        if equivalences_file or Path(DEFAULT_EQUIVALENCES_FILE).is_file():
            self._equivalences = load_equivalences(equivalences_file)
        else:
            logger.info("No {path}: retry queries get no legal terms", path=str(DEFAULT_EQUIVALENCES_FILE))
        self._grammar = CitationGrammar()  # what a question cites outside the corpus is not searched

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(
            self,
            enabled=self.enabled, accept_best=self.accept_best,
            accept_mean_top_n=self.accept_mean_top_n,
            top_n=self.top_n,
            max_retries=self.max_retries,
            min_best=self.min_best,
            score_mode=self.score_mode,
            rrf_k=self.rrf_k,
            rrf_weights=self.rrf_weights,
            cosine_floor=self.cosine_floor,
            cosine_ceiling=self.cosine_ceiling,
            bm25_midpoint=self.bm25_midpoint,
            equivalences_file=self.equivalences_file,
            rejected_message=self.rejected_message,
            absolute_field=self.absolute_field,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CRAGRouter":
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)

    @component.output_types(
        accepted=list[Document],
        retry_query=str,
        retry_documents=list[Document],
        retry_filters=dict[str, Any] | None,
        rejected=str,
        route=str,
        retries=int,
        confidence=float,
    )
    def run(
        self,
        query: str,
        documents: list[Document],
        retries: int = 0,
        enabled: bool | None = None,
        filters: dict[str, Any] | None = None,
        carried: list[Document] | None = None,
    ) -> dict[str, Any]:
        """
        Grade `documents` and route them.

        :param query: The query the documents were retrieved for (the base of `retry_query`).
        :param documents: The retrieved documents, with retrieval scores.
        :param retries: RETRY rounds already done for this question (the loop counter).
        :param enabled: Overrides the init `enabled` for this run (per-request feature flag).
        :param filters: The filters the documents were retrieved with; a RETRY sends them back on `retry_filters`
            (connections deliver a value once: the retrieval of each loop round needs them again).
        :param carried: The set graded in the previous round (`retry_documents` passed back): merged with
            `documents` by id, the higher score winning, so the cited and carried-over blocks fetched before the
            loop stay in the set.
        :returns: One of `accepted` (the documents, unchanged), `retry_query` (with `retry_documents`: the graded
            set, to merge with the retry's results) or `rejected` (the message, in the question's language), plus
            `route`, `retries` (incremented on RETRY) and `confidence` (in [0, 1]).
        :raises ValueError: If `retries` is negative.
        """
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        if carried:
            documents = _merge(carried, documents)
        if not (self.enabled if enabled is None else enabled):
            return {"accepted": documents, "route": "ACCEPT", "retries": retries, "confidence": 1.0}
        carried_only = bool(documents) and all(doc.meta.get("carried_over") for doc in documents)
        ranked = sorted(self.calibrate(documents, goes_on=carried_only and asks_nothing_new(query)), reverse=True)
        best = ranked[0] if ranked else 0.0
        top = ranked[: self.top_n]
        mean_top = sum(top) / len(top) if top else 0.0
        confidence = round((best + mean_top) / 2, 4)
        result: dict[str, Any] = {"retries": retries, "confidence": confidence}

        if best >= self.accept_best and mean_top >= self.accept_mean_top_n:
            route = "ACCEPT"
        else:
            rewrite = self.broaden_query(query, attempt=retries + 1) if retries < self.max_retries else ""
            if rewrite and _folded(rewrite) != _folded(query):
                route = "RETRY"
                # the graded set goes back too, so the retry's results are merged with it (cited and carryover
                # blocks are fetched once, before the loop)
                result.update(
                    retry_query=rewrite, retry_documents=documents, retry_filters=filters, retries=retries + 1
                )
            else:
                route = "ACCEPT" if documents and best >= self.min_best else "REJECT"
        if route == "ACCEPT":
            result["accepted"] = documents
        elif route == "REJECT":
            result["rejected"] = self._rejected(query)
        logger.info(
            "CRAG {route}: best={best} mean_top_n={mean} confidence={confidence} retries={retries}",
            route=route, best=round(best, 3), mean=round(mean_top, 3), confidence=confidence, retries=result["retries"],
        )
        return {**result, "route": route}

    def _rejected(self, query: str) -> str:
        """The REJECT message, in the question's language when there are several."""
        if isinstance(self.rejected_message, str):
            return self.rejected_message
        messages = self.rejected_message or REJECTED_MESSAGES
        language = detect_query_language(query, default="es")
        return messages.get(language) or messages.get("es") or next(iter(messages.values()))

    def calibrate(self, documents: list[Document], *, goes_on: bool = False) -> list[float]:
        """
        Calibrated [0, 1] score of each document, in input order (see the class description). A carried-over block
        (`meta["carried_over"]`, the previous turn's context) is graded on its own dense similarity to this
        question (`absolute_field`, calibrated as `cosine`), 0 without one: never on its fixed score, unless
        `goes_on` (the question asks nothing new) and they are all there is (nothing was searched).
        """
        if goes_on and documents and all(doc.meta.get("carried_over") for doc in documents):
            return [self._calibrated(doc.score or 0.0, "unit") for doc in documents]
        scores = self._calibrate_scores(documents)
        for position, doc in enumerate(documents):
            if doc.meta.get("carried_over"):
                absolute = _absolute(doc, self.absolute_field) if self.absolute_field else None
                scores[position] = 0.0 if absolute is None else self._calibrated(absolute, "cosine")
        return scores

    def _calibrate_scores(self, documents: list[Document]) -> list[float]:
        if self.score_mode != "auto":
            types = [self.score_mode] * len(documents)
        elif self.absolute_field and any(_absolute(d, self.absolute_field) is not None for d in documents):
            # absolute mode: the dense similarity each block carries; declared unit scores (directly fetched
            # citations, carryover) keep theirs; a block with neither has no evidence of relevance of its own
            return [
                self._calibrated(d.score or 0.0, "unit") if d.meta.get("score_type") == "unit"
                else self._calibrated(_absolute(d, self.absolute_field), "cosine")  # type: ignore[arg-type]
                if _absolute(d, self.absolute_field) is not None else 0.0
                for d in documents
            ]
        else:
            declared = [d.meta.get("score_type") for d in documents]
            declared = [t if t in SCORE_TYPES else None for t in declared]
            inferred = self._infer_score_type([d.score or 0.0 for d, t in zip(documents, declared) if t is None])
            types = [t or inferred for t in declared]
        return [self._calibrated(doc.score or 0.0, score_type) for doc, score_type in zip(documents, types)]

    def broaden_query(self, query: str, attempt: int = 1) -> str:
        """
        A broader rewrite of `query` for retry `attempt` (1-based): see the class description. Empty when the
        query has no general term left and no equivalence applies.
        """
        if asks_for_catalogue(query):  # "¿qué leyes tienes?": no article answers it (`NormCatalogue` does)
            return ""
        query = self._grammar.without_outside(query)  # "Código Penal artículo 138": not "código"
        legal = self._equivalences.terms(query) if self._equivalences else []
        legal_folded = {_folded(term) for term in legal}
        keywords = [k for k in extract_keywords(_SPECIFIC_RE.sub(" ", query)) if _folded(k) not in legal_folded]
        if len(keywords) > MIN_KEPT_TERMS:
            dropped = (attempt - 1) * math.ceil(len(keywords) / 4)
            keywords = keywords[: max(MIN_KEPT_TERMS, len(keywords) - dropped)]
        return " ".join([*keywords, *legal])  # both free of repeats, and disjoint

    def _infer_score_type(self, scores: list[float]) -> str:
        if any(score > 1.0 for score in scores):
            return "bm25"
        top = sorted((s for s in scores if s > 0), reverse=True)[: self.top_n]
        # the best fused score is at least that of a rank-0 hit, w / k
        if top and top[0] >= self._weights[0] / self.rrf_k - _RRF_TOLERANCE and all(map(self._on_rrf_lattice, top)):
            return "rrf"
        return "cosine"

    def _on_rrf_lattice(self, score: float) -> bool:
        """Whether `score` is `w * (1/(k+i) [+ 1/(k+j)])` for integer ranks `i <= j` and a known weight `w`."""
        k = self.rrf_k
        for weight in self._weights:
            target = score / weight
            rank = 0
            while rank < _RRF_MAX_RANK and 1 / (k + rank) >= target / 2 - _RRF_TOLERANCE:
                rest = target - 1 / (k + rank)
                if abs(rest) <= _RRF_TOLERANCE:
                    return True
                if rest > 0:
                    other = round(1 / rest - k)
                    if other >= rank and abs(1 / (k + other) - rest) <= _RRF_TOLERANCE:
                        return True
                rank += 1
        return False

    def _calibrated(self, score: float, score_type: str) -> float:
        if score_type == "rrf":
            value = score * self.rrf_k / RRF_LISTS
        elif score_type == "cosine":
            value = (score - self.cosine_floor) / (self.cosine_ceiling - self.cosine_floor)
        elif score_type == "bm25":
            value = score / (score + self.bm25_midpoint) if score > 0 else 0.0
        else:
            value = score
        return min(1.0, max(0.0, value))


def _merge(first: list[Document], second: list[Document]) -> list[Document]:
    """
    Union by id, the higher score winning; best first. A block both carried over and retrieved again counts as
    retrieved (its relevance to this question is established), with the best dense similarity of its copies.
    """
    best: dict[str, Document] = {}
    copies: dict[str, list[Document]] = {}
    for doc in [*first, *second]:
        copies.setdefault(doc.id, []).append(doc)
        if doc.id not in best or (doc.score or 0.0) > (best[doc.id].score or 0.0):
            best[doc.id] = doc
    for doc_id, doc in best.items():
        if len(copies[doc_id]) > 1:
            similarities = [d.meta["dense_score"] for d in copies[doc_id]
                            if isinstance(d.meta.get("dense_score"), (int, float))]
            meta = dict(doc.meta)
            if similarities:
                meta["dense_score"] = max(similarities)
            if not all(d.meta.get("carried_over") for d in copies[doc_id]):
                meta.pop("carried_over", None)
            best[doc_id] = Document(id=doc.id, content=doc.content, meta=meta, score=doc.score)
    return sorted(best.values(), key=lambda d: d.score or 0.0, reverse=True)


def _absolute(document: Document, field: str) -> float | None:
    value = document.meta.get(field)
    return float(value) if isinstance(value, (int, float)) else None


def _folded(text: str) -> str:
    return " ".join(fold_accents(text).lower().split())
