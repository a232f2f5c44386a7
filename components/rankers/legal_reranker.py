"""Legal re-ranking: relevance blended with hierarchy, recency and vigencia of the norm."""

import datetime as dt
import hashlib
import time
from typing import Any

import numpy as np

from haystack import Document, component, default_from_dict, default_to_dict, logging

from components.generators.llm_backends import generator_to_dict, with_deserialized_generator
from components.legal.citations import CitationGrammar
from components.legal.ids import (
    DENSE_SCORE,
    IN_FORCE,
    LEFT_OUT,
    PARTIALLY_REPEALED,
    PASSAGE_SCORE,
    PREAMBLE,
    REGULATION_RANKS,
    REPEALED,
    SPECIAL_REGIME,
    check_named_laws,
    cited_exactly,
    is_transitional,
    norm_rank,
)
from components.legal.jurisdiction import in_jurisdiction, question_jurisdiction
from components.legal.laws import developed_laws, load_laws_table
from components.legal.regimes import load_special_regimes
from components.rankers.relevance_backends import CrossEncoderScorer, EmbeddingScorer, LLMPointwiseScorer
from components.utils.ttl_cache import TTLCache, cache_partition

logger = logging.getLogger(__name__)

RELEVANCE_BACKENDS = ("retrieval", "embedding", "cross_encoder", "llm")
DEFAULT_RETRIEVAL_BLEND = {"embedding": 0.5, "retrieval": 0.5}  # measured on the dev sets (benchmarks/)
HIERARCHY_BY_RANK = {1: 1.0, 2: 0.8, 3: 0.6, 4: 0.4, 5: 0.2}
VIGENCIA_BY_STATUS = {IN_FORCE: 1.0, PARTIALLY_REPEALED: 0.5, REPEALED: 0.0}
# the recency of a norm whose version date is unknown
NEUTRAL_RECENCY = 0.5


def hierarchy_score(meta: dict[str, Any]) -> float:
    """Rank 1 (Constitución, ley orgánica) -> 1.0 ... rank 5 (orden, convenio, other) -> 0.2."""
    return HIERARCHY_BY_RANK.get(norm_rank(meta), 0.2)


def recency_score(meta: dict[str, Any], today: dt.date) -> float:
    """
    The age of the norm's last consolidated version (`last_updated`): < 3 years old -> 1.0, linearly down to 0.0 at
    15 years; an unreadable date is neutral (0.5).

    Without a version date, the publication date is only a lower bound of it: an amended norm's text is younger than
    its publication (a constitution published in 1988 and amended many times since). Such a norm scores at least the
    neutral 0.5, and more when its publication alone is recent.
    """
    version = meta.get("last_updated")
    if version:
        return _age_score(version, today)
    published = meta.get("publication_date")
    return max(NEUTRAL_RECENCY, _age_score(published, today)) if published else NEUTRAL_RECENCY


def _age_score(raw: Any, today: dt.date) -> float:
    """A date < 3 years old -> 1.0, linearly down to 0.0 at 15 years; an unreadable date -> neutral."""
    try:
        date = dt.date.fromisoformat(str(raw)[:10])
    except ValueError:
        return NEUTRAL_RECENCY
    years = (today - date).days / 365.25
    return 1.0 if years < 3 else 0.0 if years > 15 else 1.0 - (years - 3) / 12


def vigencia_score(meta: dict[str, Any]) -> float:
    """In force 1.0, partially repealed 0.5, repealed 0.0 (penalized, never removed)."""
    return VIGENCIA_BY_STATUS.get(str(meta.get("status", IN_FORCE)), 1.0)


@component
class LegalReranker:
    """
    Re-ranks the top candidates by `w_rel * relevance + w_hier * hierarchy + w_rec * recency + w_vig * vigencia`.

    All signals are in [0, 1]: relevance is the backend's score divided by the best one among the candidates (no
    `(score + 1) / 2` distortion), hierarchy follows the norm's rank (1 -> 1.0 ... 5 -> 0.2), recency the age of its
    last consolidated version (< 3 years 1.0 ... > 15 years 0.0; unknown: at least neutral, see `recency_score`),
    vigencia its status (a repealed norm is penalized, never removed). With near-equal relevance, the ET 2015
    article therefore ranks above its repealed ET 1995 twin. Only the first `top_n` documents are re-ranked; the
    rest follow in their order, their scores rescaled below the head's. The head's incoming score is kept in
    `meta["retrieval_score"]`, the backend's in `meta["relevance_score"]`; the blended one becomes `score`.

    Relevance backends (`relevance`; see `components.rankers.relevance_backends`):

    - `retrieval` (default): the incoming (fused retrieval) scores; no model, no query needed. When the candidates
      carry `meta["dense_score"]` (the cosine of the query and the block's stored full-length vector, which
      `HybridRetriever` records for every fused block), it is blended in as the `embedding` backend blends its
      cosine: `retrieval_blend * retrieval + (1 - retrieval_blend) * cosine`, each over the best candidate's
      (0.5 by default): the `embedding` relevance without embedding anything at query time. A block that also
      carries `meta["passage_score"]` (its best passage's similarity, from late-chunked child vectors) takes as
      its cosine `(1 - passage_share) * dense + passage_share * passage`.
    - `embedding` (the best offline backend on the dev sets, benchmarks/README.md): cosine of the query and each
      whole block re-embedded per query by the dense model (`max_length` 512 tokens), blended half and half with
      the retrieval score (`retrieval_blend` 0.5): what the stored full-length vectors now give at no query cost.
    - `cross_encoder`: a sentence-transformers cross-encoder (`model`: local folder or hub name), sigmoid scores.
    - `llm`: pointwise scores from `chat_generator` (P(yes) from logprobs on OpenAI-compatible endpoints and the
      local model, batched 0-10 grades otherwise). A block the LLM could not score keeps its retrieval relevance
      (reported in `stats`). Meant for a capable endpoint: the bundled local models judge worse than `retrieval`.

    Jurisdiction (`jurisdiction_first`, on by default): the corpus holds the law of Spain and of Brazil, which
    regulate the same matters, so a question in Spanish about holidays is close in meaning to the CLT's articles on
    holidays too. The norms of the question's jurisdiction (`components.legal.jurisdiction.question_jurisdiction`:
    the norms the question names, else the country it names, else the language it is written in) come first; the
    other jurisdictions' norms follow in their order, their scores rescaled below, never removed. A caller who
    wants one jurisdiction only filters on `meta.country`.

    Superseded norms (`superseded_last`, on by default): the corpus may hold a repealed norm beside the norm that
    repealed it (the Estatuto de los Trabajadores of 1995 and its 2015 recast), whose articles say nearly the same
    in nearly the same words, so the vigencia weight alone cannot tell them apart. A block of a repealed norm
    (`meta["status"] == "repealed"`) whose repealing norm (`meta["derogated_by"]`) has a block among the candidates
    goes after all the others (the later norm governs; the repealed text is history), unless the question names
    the repealed norm ("el Estatuto de los Trabajadores de 1995"). Never removed; a repealed norm whose successor
    is not among the candidates stays where relevance puts it.

    Preambles (`provisions_first`, on by default): a norm's preamble (its "exposición de motivos", article key
    `preambulo`) explains why the norm was made, in the words of every matter it regulates, but has no normative
    force: "¿qué dice la Ley de Prevención de Riesgos Laborales sobre la formación?" is answered by its article 19,
    not by the preamble's paragraph on training. A preamble among the candidates goes after the provisions. Never
    removed.

    Transitional provisions (`permanent_first`, on by default): a law's transitional provisions (its "disposiciones
    transitorias": `components.legal.ids.is_transitional`) govern the passage from the old rule to the new one
    (contracts signed before a reform, a retirement age reached year by year), in the words of the rule they phase
    in, so relevance alone often puts one above the rule itself: "¿cómo se calcula la base reguladora de la pensión
    de jubilación?" is answered first by LGSS art. 209, the rule, then by the transitional provisions on who still
    computes it the old way. A transitional provision goes right after the next permanent provision of its own
    law below it among the candidates, so the rule comes first and its transition right after it, whichever one the
    question's case falls under (a provision with none of its law's below keeps its place). Never removed; a
    question that cites one gets it first, as any cited article.

    Regulations (`laws_first`, on by default): a regulation (a real decreto, a reglamento general: `meta["rank"]`
    3 or 4) develops a law and is subordinate to it (jerarquía normativa), and it repeats the law's words for its
    own purpose: the contributions regulation's "bases por categorías" (RD 2064/1995 art. 26) ranked above ET art.
    39 for "¿me pueden poner a hacer tareas de una categoría inferior?", the maternity-benefit regulation above ET
    arts. 53 and 55 for a pregnant worker's dismissal. A regulation's block goes right after the next block below it
    of a law it develops (the table of known norms, `components/legal/data/laws.yaml`, `develops`: RD 2720/1998
    develops the ET, the contributions regulation the LGSS), so the law comes first and its detail right after it;
    a regulation the table does not list, or with no block of its law below, keeps its place, and so does the
    special law of a group the question names (`special_regimes.yaml`: "trabajo de interna" and the household
    service's RD 1620/2011): there the special rule governs. Never removed; a question that names the regulation
    gets it first (named norms, below).

    Special regimes (`special_regimes_last`, on by default): a statute's special parts govern one group of workers
    only (lex specialis): the railway's overtime (CLT art. 241), women's night work (CLT art. 381), the rest between
    shifts at sea (RD 1561/1995 art. 17). They say nearly what the general rule says, in its words, so relevance
    alone often puts them first: "fiz 2 horas a mais, quanto tem que pagar?" is answered by CLT art. 59. A block of
    a special regime (`components/legal/data/special_regimes.yaml`, `components.legal.regimes`) goes after the
    others unless the question (or the query made from it) names the regime's group ("sou ferroviário", "trabajo de
    interna", "meu filho de 16 anos") or, for a regime that is a whole law, names that law. Never removed.
    When the question names the group, the regime's article that displaces a general article for it (the table's
    `replaces`: CLT art. 303, the journalists' five hours, for art. 58, everyone's eight) goes right before that
    general article if both are among the candidates, after the jurisdiction and named-norm steps: "sou jornalista,
    quantas horas posso trabalhar por dia?" is answered by art. 303, which relevance alone ranked fourth.
    The same table lists the groups a law leaves out of its scope, whose own law the corpus does not hold (CLT art.
    7, a: domestic employees): for a question of the law's jurisdiction that names such a group ("sou empregada
    doméstica, tenho direito a férias?"), the law's blocks are marked `meta["left_out"]` (the group, the article
    that leaves it out, its own law), but the article that leaves the group out is not: the constitutional basis of
    a marked block goes first (`BasisExpander`), and the answers say whose law governs the group. Marked blocks
    keep their place: the law may still apply where the group's own law is silent, and the corpus holds nothing
    closer to that own law.

    Named norms (`named_first`, on by default): a question that names a norm ("¿qué dice la Constitución sobre las
    vacaciones?", "o que a CLT diz sobre férias?", "según el ET ...", "donde dice la constitucion que...") asks
    what that norm says, so the blocks of the norms it names come before the others (after the jurisdiction step,
    which they decide): the labour statutes say more about holidays in more words than the Constitution's one
    clause, so relevance alone puts them first. Never removed; nothing moves when no block of a named norm is among
    the candidates.

    Cited articles (`cited`): the blocks of the articles the question cites, as `LexicalFirstGate` scores them
    (`meta["lexical_match"]`). Its exact hits ("art. 477 da CLT" -> CLT art. 477) come first, in the order the
    question cites them, whether or not the search found them: a reader who names an article asks about that
    article, and a search on "o que diz o art. 477 da CLT?" has little else to go on (a number and a law name).
    The rest follows in its order, deduplicated, scores rescaled below; the list keeps its length.

    Re-embedding whole blocks beats the retrieval scores on both dev sets, and the blend beats the cosine alone
    (figures: `benchmarks/rerank_bench.py`, benchmarks/README.md); its cost is embedding the blocks, paid once per
    block while their vectors stay cached.

    Blocks are cut at the last sentence boundary within the model's limit. Backend scores are cached per (query,
    block id, content hash) for `cache_ttl` seconds (at most `cache_size` entries, least recently used evicted);
    `embedding` also caches each block's vector (query-independent) for `vector_cache_ttl` seconds (1 h).
    The `stats` output reports the backend, the path that ran, cache hits and misses, fallbacks and milliseconds.

    ### Usage example

    ```python
    from components.rankers.legal_reranker import LegalReranker

    reranker = LegalReranker(top_n=20, relevance="embedding")
    reranker.warm_up()
    result = reranker.run(documents=parent_blocks, query="¿Cuántos días de vacaciones tengo?")
    result["documents"][0].meta["relevance_score"], result["stats"]["cache_hits"]
    ```
    """

    def __init__(
        self,
        *,
        top_n: int = 20,
        relevance: str = "retrieval",
        relevance_weight: float = 0.70,
        hierarchy_weight: float = 0.15,
        recency_weight: float = 0.10,
        vigencia_weight: float = 0.05,
        today: str | None = None,
        retrieval_blend: float | None = None,
        passage_share: float = 0.5,
        model: str | None = None,
        chat_generator: Any | None = None,
        batch_size: int = 16,
        max_length: int | None = None,
        use_logprobs: bool | None = None,
        llm_timeout: float | None = 60.0,
        cache_ttl: float = 300.0,
        cache_size: int = 10_000,
        vector_cache_ttl: float = 3600.0,
        jurisdiction_first: bool = True,
        superseded_last: bool = True,
        named_first: bool = True,
        provisions_first: bool = True,
        permanent_first: bool = True,
        laws_first: bool = True,
        special_regimes_last: bool = True,
        regimes_file: str | None = None,
        laws_file: str | None = None,
    ) -> None:
        """
        Create a LegalReranker.

        :param top_n: Number of leading documents re-ranked.
        :param relevance: Relevance backend: `retrieval`, `embedding`, `cross_encoder` or `llm` (see above).
        :param relevance_weight: Weight of relevance.
        :param hierarchy_weight: Weight of the norm's rank in the hierarchy of sources.
        :param recency_weight: Weight of the age of the norm's last consolidated version.
        :param vigencia_weight: Weight of the norm being in force.
        :param today: ISO date used for recency (default: the current date); fixed dates make runs reproducible.
        :param retrieval_blend: Share of the (best-normalized) retrieval score in relevance, the backend's being
            `1 - retrieval_blend` (each normalized by the best candidate's); for `retrieval`, the share of the fused
            score beside the stored dense cosine (`meta["dense_score"]`; 1.0 = the fused score alone). `None`: the
            default chosen on the dev sets, 0.5 for `embedding` and `retrieval` (see above), 0.0 (the backend
            alone) for the others.
        :param passage_share: For `retrieval`: the share of the block's best passage similarity
            (`meta["passage_score"]`, late-chunked child vectors) in its dense similarity, the whole block's
            (`meta["dense_score"]`) being the rest; a block without a passage score keeps its whole-block one.
            A question in the words of one paragraph of a long article is close to that paragraph and less to the
            article's mean; a colloquial one is about the whole article. Half and half: the dev sets are level
            from 0.2 to 0.6 (benchmarks/README.md). 0 ignores the passages. (A query that reads the question
            with earlier turns has none: `RetrievalChain` does not search them for it.)
        :param model: `cross_encoder`: the cross-encoder (local folder, registry or hub name; required).
            `embedding`: the dense model (`None` = the deployment's embedder, as the retrieval pipeline's).
        :param chat_generator: `llm`: the Haystack chat generator (required for that backend).
        :param batch_size: Blocks per forward pass (`cross_encoder`, `embedding`), per grading prompt or parallel
            calls (`llm`).
        :param max_length: Token limit of the model's input (`None`: 512 for `cross_encoder` and `embedding`,
            384 per block for `llm`).
        :param use_logprobs: `llm`: yes/no with logprobs (`True`), batched 0-10 grades (`False`), or `None` for
            logprobs with the generators that return them (OpenAI, Azure OpenAI, the local model).
        :param llm_timeout: `llm`: seconds allowed to one LLM call.
        :param cache_ttl: Seconds a cached score (and block vector) stays valid.
        :param cache_size: Most cached scores (and, separately, block vectors: float32, 3 kB each for 768 dims).
        :param vector_cache_ttl: `embedding`: seconds a block's vector stays cached (it depends on the block only).
        :param jurisdiction_first: Put the norms of the question's jurisdiction before the others' (see above); needs
            the `query` input, and does nothing without it or when the question's jurisdiction cannot be told.
        :param superseded_last: Put the blocks of a repealed norm after the others when a block of the norm that
            repealed it is among the candidates, unless the question names the repealed norm (see above).
        :param named_first: Put the blocks of the norms the question names before the others (see above); needs
            the `query` input.
        :param provisions_first: Put a norm's preamble after the provisions among the candidates (see above).
        :param permanent_first: Put each transitional provision right after the next permanent provision of its
            law among the candidates (see above).
        :param laws_first: Put each regulation's block right after the next block of a law it develops among the
            candidates, unless a group the question names is its regime (see above).
        :param special_regimes_last: Put the blocks of a special regime after the others unless the question names
            its group (see above); needs the `query` input.
        :param regimes_file: The table of special regimes (layout of `components/legal/data/special_regimes.yaml`);
            None: the bundled one.
        :param laws_file: The table of known norms, whose `develops` says which laws a regulation develops (layout
            of `components/legal/data/laws.yaml`); None: the bundled one.
        :raises ValueError: An unknown backend, a backend without its `model` / `chat_generator`, negative weights,
            an invalid date, `retrieval_blend` outside [0, 1], a non-positive size, or a regimes or laws file that
            does not exist or is not such a table.
        """
        if top_n <= 0:
            raise ValueError(f"top_n must be > 0, got {top_n}")
        if relevance not in RELEVANCE_BACKENDS:
            raise ValueError(f"relevance must be one of {RELEVANCE_BACKENDS}, got {relevance!r}")
        weights = (relevance_weight, hierarchy_weight, recency_weight, vigencia_weight)
        if any(w < 0 for w in weights) or sum(weights) <= 0:
            raise ValueError(f"weights must be >= 0 with a positive sum, got {weights}")
        if today is not None:
            dt.date.fromisoformat(today)  # raises ValueError with the offending value
        if retrieval_blend is not None and not 0.0 <= retrieval_blend <= 1.0:
            raise ValueError(f"retrieval_blend must be in [0, 1], got {retrieval_blend}")
        if not 0.0 <= passage_share <= 1.0:
            raise ValueError(f"passage_share must be in [0, 1], got {passage_share}")
        if relevance == "cross_encoder" and not model:
            raise ValueError("relevance='cross_encoder' needs `model`: a local cross-encoder folder or a hub name")
        if relevance == "llm" and chat_generator is None:
            raise ValueError("relevance='llm' needs `chat_generator` (e.g. components.generators.llm_backends."
                             "default_chat_generator()); use relevance='retrieval' to run without an LLM")
        too_short = max_length is not None and max_length < 16
        if batch_size < 1 or cache_size < 1 or cache_ttl <= 0 or vector_cache_ttl <= 0 or too_short:
            raise ValueError(
                f"batch_size and cache_size must be >= 1, cache_ttl and vector_cache_ttl > 0, max_length None or "
                f">= 16; got {batch_size}, {cache_size}, {cache_ttl}, {vector_cache_ttl}, {max_length}"
            )
        self.top_n = top_n
        self.relevance = relevance
        self.relevance_weight = relevance_weight
        self.hierarchy_weight = hierarchy_weight
        self.recency_weight = recency_weight
        self.vigencia_weight = vigencia_weight
        self.today = today
        self.retrieval_blend = retrieval_blend
        self.passage_share = passage_share
        self.model = model
        self.chat_generator = chat_generator
        self.batch_size = batch_size
        self.max_length = max_length
        self.use_logprobs = use_logprobs
        self.llm_timeout = llm_timeout
        self.cache_ttl = cache_ttl
        self.cache_size = cache_size
        self.vector_cache_ttl = vector_cache_ttl
        self.jurisdiction_first = jurisdiction_first
        self.superseded_last = superseded_last
        self.provisions_first = provisions_first
        self.permanent_first = permanent_first
        self.laws_first = laws_first
        self.named_first = named_first
        self.special_regimes_last = special_regimes_last
        self.regimes_file = regimes_file
        self._regimes = load_special_regimes(regimes_file)
        self.laws_file = laws_file
        self._develops = developed_laws(load_laws_table(laws_file))
        self._grammar: CitationGrammar | None = None
        self._scorer = self._make_scorer()
        self._scores = TTLCache(max_entries=cache_size, ttl=cache_ttl)
        self._vectors = TTLCache(max_entries=cache_size, ttl=vector_cache_ttl)

    def _make_scorer(self) -> Any:
        if self.relevance == "cross_encoder":
            return CrossEncoderScorer(
                model=str(self.model), batch_size=self.batch_size, max_length=self.max_length or 512
            )
        if self.relevance == "embedding":
            return EmbeddingScorer(model=self.model, batch_size=self.batch_size, max_length=self.max_length or 512)
        if self.relevance == "llm":
            return LLMPointwiseScorer(
                chat_generator=self.chat_generator,
                batch_size=self.batch_size,
                max_length=self.max_length or 384,
                use_logprobs=self.use_logprobs,
                timeout=self.llm_timeout,
            )
        return None

    def _dense_similarity(self, meta: dict[str, Any]) -> float:
        """A block's dense similarity: the whole block's, blended with its best passage's when it has one."""
        block = float(meta.get(DENSE_SCORE) or 0.0)
        passage = meta.get(PASSAGE_SCORE)
        if not isinstance(passage, (int, float)) or DENSE_SCORE not in meta:
            return block
        return (1.0 - self.passage_share) * block + self.passage_share * float(passage)

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(
            self,
            top_n=self.top_n,
            relevance=self.relevance,
            relevance_weight=self.relevance_weight,
            hierarchy_weight=self.hierarchy_weight,
            recency_weight=self.recency_weight,
            vigencia_weight=self.vigencia_weight,
            today=self.today,
            retrieval_blend=self.retrieval_blend,
            passage_share=self.passage_share,
            model=self.model,
            chat_generator=generator_to_dict(self.chat_generator),
            batch_size=self.batch_size,
            max_length=self.max_length,
            use_logprobs=self.use_logprobs,
            llm_timeout=self.llm_timeout,
            cache_ttl=self.cache_ttl,
            cache_size=self.cache_size,
            vector_cache_ttl=self.vector_cache_ttl,
            jurisdiction_first=self.jurisdiction_first,
            superseded_last=self.superseded_last,
            named_first=self.named_first,
            provisions_first=self.provisions_first,
            permanent_first=self.permanent_first,
            laws_first=self.laws_first,
            special_regimes_last=self.special_regimes_last,
            regimes_file=self.regimes_file,
            laws_file=self.laws_file,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "LegalReranker":
        """Deserialize this component from a dictionary (a nested `chat_generator` included)."""
        return default_from_dict(cls, with_deserialized_generator(data))

    def warm_up(self) -> None:
        """Load the relevance backend's model and the citation grammar (once)."""
        if self._scorer is not None:
            self._scorer.warm_up()
        if (self.jurisdiction_first or self.superseded_last) and self._grammar is None:
            self._grammar = CitationGrammar()

    @component.output_types(documents=list[Document], stats=dict[str, Any])
    def run(
        self,
        documents: list[Document],
        query: str | None = None,
        top_n: int | None = None,
        query_embedding: list[float] | None = None,
        cited: list[Document] | None = None,
        named_laws: list[str] | None = None,
        question: str | None = None,
        top_k: int | None = None,
    ) -> dict[str, Any]:
        """
        Re-rank documents.

        :param documents: Candidates sorted by relevance, with scores.
        :param query: The question; required by every backend but `retrieval`.
        :param top_n: Overrides the init `top_n`.
        :param query_embedding: `embedding` backend: the query's vector from the same dense model (the retrieval
            pipeline's text embedder), saving one query embedding; computed when not given.
        :param cited: The blocks of the articles the question cites (`LexicalFirstGate`'s `documents`); those with
            `meta["lexical_match"] == "exact"` go first, in the order given (see above).
        :param named_laws: The law ids of the norms the question names (`CitationDetector.named_laws`, which the
            retrieval chain reads once for the retriever and the re-ranker); None = read them from `query` here.
        :param question: The user's question `query` was made from (a decomposed or follow-up query such as
            "pagar"): the question's jurisdiction is read from it, since a fragment often gives no evidence of its
            language; None = from `query`.
        :param top_k: At most this many documents returned (None: all of them). A caller that wants `top_k` blocks
            gives the re-ranker `candidates_for(top_k)` to judge, so the first `top_k` are chosen among as many
            candidates as the re-ranker was tuned with, whatever `top_k`.
        :returns: `documents`: the re-ranked head followed by the unchanged tail (at most `top_k` in all); `stats`:
            `backend`, `path` (`retrieval`, the backend's name, `<backend>+fallback` when some blocks kept their
            retrieval relevance), `candidates`, `scored` (computed now), `cache_hits`, `cache_misses`, `fallbacks`,
            `ms`, `jurisdiction` (what was put first: `{"country" | "language", "source"}`, or None), `superseded` (the
            ids of the repealed norms' blocks put last), `transitional` (the ids of the transitional provisions put
            after a permanent one of their law), `regulations` (the ids of the regulations' blocks put after a
            block of the law they develop), `special` (the special regimes' blocks put after the others,
            "<law id> <article> (<group>)"), `left_out` (the laws whose blocks were marked as not governing a group
            the question names, "<law id> (<group>)"), `special_first` (a named group's rule put right before the
            general rule it displaces, "<law id> <article> before <article> (<group>)"), `named` (the law ids of the
            named norms whose blocks were put first) and `cited` (the ids of the cited blocks put first).
        :raises ValueError: A backend other than `retrieval` without `query`, or `named_laws` not a list of law ids.
        """
        check_named_laws(named_laws)
        started = time.perf_counter()
        top_n = top_n or self.top_n
        head, tail = documents[:top_n], documents[top_n:]
        stats: dict[str, Any] = {"backend": self.relevance, "path": "retrieval", "candidates": len(head), "scored": 0,
                                 "cache_hits": 0, "cache_misses": 0, "fallbacks": 0, "jurisdiction": None,
                                 "superseded": [], "transitional": [], "regulations": [], "left_out": [], "special": [],
                                 "special_first": [], "named": [], "cited": []}
        exact = [d for d in cited or [] if cited_exactly(d.meta)]
        if top_k is not None and top_k <= 0:
            raise ValueError(f"top_k must be > 0, got {top_k}")
        if not head:
            stats["cited"] = [d.id for d in exact]
            return {"documents": list(exact)[:top_k], "stats": self._finish(stats, started)}
        if self._scorer is not None and (not isinstance(query, str) or not query.strip()):
            raise ValueError(
                f"LegalReranker(relevance={self.relevance!r}) needs the question: connect it to the reranker's "
                "`query` input (or use relevance='retrieval')"
            )
        best = max((d.score or 0.0) for d in head)
        retrieval = [(d.score or 0.0) / best if best > 0 else 0.0 for d in head]
        raw: list[float | None] = [None] * len(head)
        relevance = list(retrieval)
        if self._scorer is not None:
            raw = self._backend_scores(query.strip(), head, query_embedding, stats)
            relevance = self._blend(raw, retrieval, stats)
        elif any(isinstance(d.meta.get(DENSE_SCORE), (int, float)) for d in head):
            # the stored full-length block vectors' cosine, recorded by retrieval: blended like `embedding`'s
            cosines = [max(0.0, self._dense_similarity(d.meta)) for d in head]
            relevance = self._blend(cosines, retrieval, stats)
            stats["path"] = "retrieval+dense"
        today = dt.date.fromisoformat(self.today) if self.today else dt.date.today()
        rescored = []
        for doc, rel, backend_score in zip(head, relevance, raw, strict=True):
            score = (
                self.relevance_weight * rel
                + self.hierarchy_weight * hierarchy_score(doc.meta)
                + self.recency_weight * recency_score(doc.meta, today)
                + self.vigencia_weight * vigencia_score(doc.meta)
            )
            meta = {**doc.meta, "retrieval_score": doc.score}
            if backend_score is not None:
                meta["relevance_score"] = backend_score
            rescored.append(Document(id=doc.id, content=doc.content, meta=meta, score=score, embedding=doc.embedding))
        rescored.sort(key=lambda d: d.score or 0.0, reverse=True)
        ranked = _below(rescored, tail)  # the tail keeps its order, rescaled below the head
        asked = isinstance(query, str) and bool(query.strip())
        grammar_needed = self.superseded_last or self.jurisdiction_first or self.named_first
        if named_laws is not None:
            named = list(named_laws)
        else:
            named = self._named_laws(query) if asked and grammar_needed else []
        # each rule puts its blocks after the others: a special regime (law in force for some) before a repealed
        # norm (history), before a preamble (no normative force)
        if self.special_regimes_last and asked:
            # the blocks of a law that leaves out a group the question names are marked, not moved
            ranked, stats["left_out"] = self._left_out_marked(ranked, query, question)
            ranked, stats["special"] = self._special_last(named, ranked, query, question)
        if self.superseded_last:
            ranked, stats["superseded"] = self._superseded_last(named, ranked)
        if self.provisions_first:  # a preamble explains the norm; its articles are the law
            ranked = _last(ranked, [d for d in ranked if d.meta.get("article") == PREAMBLE])
        if self.permanent_first:  # a transitional provision phases its law's rule in; the rule comes first
            ranked, stats["transitional"] = _permanent_first(ranked)
        if self.laws_first:  # a regulation develops the law; the law comes first, unless it is the group's own law
            regulated = asked and any(d.meta.get("law_id") in self._develops for d in ranked)
            special = self._regimes.inside(query, question, named_laws=named) if regulated else None
            ranked, stats["regulations"] = _laws_first(ranked, self._develops, special)
        asker = question if isinstance(question, str) and question.strip() else query
        if self.jurisdiction_first and isinstance(asker, str) and asker.strip():
            ranked, stats["jurisdiction"] = self._jurisdiction_first(asker, named, ranked, query=query)
        if self.named_first and named:
            ranked, stats["named"] = self._named_first(named, ranked)
        if self.special_regimes_last and asked:
            ranked, stats["special_first"] = self._special_rule_first(ranked, query, question)
        if exact:
            ranked = _first(exact, ranked)
            stats["cited"] = [d.id for d in exact]
        return {"documents": ranked[:top_k], "stats": self._finish(stats, started)}

    def candidates_for(self, top_k: int) -> int:
        """
        How many candidates to give the re-ranker when `top_k` blocks are wanted: at least `top_n`, the pool the
        re-ranker's defaults were chosen with. Re-ranking only `top_k` of them would make the best block depend on
        how many the caller asked for (with 1, the retrieval's first would always stay first). A caller that wants
        more than `top_n` keeps the first `top_n` as a request for `top_n` ranks them (the SDK's rank windows,
        `RetrievalChain`'s own pool) so that asking for more never reorders them.

        :param top_k: Blocks wanted.
        :returns: `max(top_k, top_n)`.
        """
        if top_k <= 0:
            raise ValueError(f"top_k must be > 0, got {top_k}")
        return max(top_k, self.top_n)

    def _named_laws(self, query: str) -> list[str]:
        """The law ids of the norms the question names, in its order (the citation grammar's)."""
        if self._grammar is None:
            self._grammar = CitationGrammar()
        return [c["law_id"] for c in self._grammar.extract(query, colloquial=True) if c.get("law_id")]

    def _jurisdiction_first(
        self, question: str, named: list[str], documents: list[Document], *, query: str | None = None
    ) -> tuple[list[Document], dict[str, Any] | None]:
        """
        The documents of the question's jurisdiction first, then the others in their order, their scores rescaled
        below the last of the first group's (scores stay monotone along the list). A document whose meta does not
        say (no `country` / `lang`) stays where it is. `named`: the law ids the question names. A question about
        several countries has none; then the country or norm the searched `query` names, if one (a reading of
        the question per country, `country_readings`), puts that country's norms first for that query.
        """
        law_country = {d.meta.get("law_id"): d.meta.get("country") for d in documents if d.meta.get("country")}
        found = question_jurisdiction(question, cited_law_ids=named, law_country=law_country.get)
        if found is None and query and query != question:
            by_query = question_jurisdiction(query)
            found = by_query if by_query and by_query["source"] in ("law", "country") else None
        if found is None:
            return documents, None
        foreign = [d for d in documents if in_jurisdiction(d.meta, found) is False]
        return _last(documents, foreign), found

    @staticmethod
    def _superseded_last(named: list[str], documents: list[Document]) -> tuple[list[Document], list[str]]:
        """
        The blocks of a repealed norm whose repealing norm (`meta["derogated_by"]`) has a block among `documents`
        after all the others, unless the question names the repealed norm (`named`: the law ids it names);
        returns the list and the moved ids. (Before the jurisdiction step: another country's norms follow them.)
        """
        present = {d.meta.get("law_id") for d in documents} - {None}
        superseded = [
            d for d in documents
            if d.meta.get("status") == REPEALED and d.meta.get("derogated_by") in present
            and d.meta.get("law_id") not in named
        ]
        ranked = _last(documents, superseded)
        return ranked, [d.id for d in superseded] if ranked is not documents else []

    def _special_last(
        self, named: list[str], documents: list[Document], query: str, question: str | None
    ) -> tuple[list[Document], list[str]]:
        """
        The blocks of the special regimes that neither `question` nor `query` names (nor, for a whole-law regime,
        `named`: the law ids the question names) after all the others, each marked with its group
        (`meta["special_regime"]`); returns the list and the moved blocks, as "<law id> <article> (<group>)".
        """
        outside = self._regimes.outside(query, question, named_laws=named)
        groups = [outside(d.meta) for d in documents]
        if not any(groups) or all(groups):
            return documents, []
        marked = _marked(documents, SPECIAL_REGIME, groups)
        moved = [d for d, group in zip(marked, groups) if group]
        return _last(marked, moved), [
            f"{d.meta.get('law_id')} {d.meta.get('article')} ({d.meta[SPECIAL_REGIME]})" for d in moved
        ]

    def _left_out_marked(
        self, documents: list[Document], query: str, question: str | None
    ) -> tuple[list[Document], list[str]]:
        """
        The blocks of the laws that leave out a group `question` or `query` names, when the question is of the law's
        jurisdiction, marked (`meta["left_out"]`) in place; the article that leaves the group out is not. Returns
        the list and the laws, "<law id> (<group>)".
        """
        laws = self._regimes.leaving_out(query, question)
        if not laws:
            return documents, []
        asker = question if isinstance(question, str) and question.strip() else query
        found = question_jurisdiction(asker)
        if found is None:
            return documents, []
        marks = [
            laws[law_id].note() if (law_id := d.meta.get("law_id")) in laws
            and str(d.meta.get("article") or "").lower() != laws[law_id].article
            and in_jurisdiction(d.meta, found) is True else None
            for d in documents
        ]
        marked = _marked(documents, LEFT_OUT, marks)
        left = dict.fromkeys(f"{d.meta.get('law_id')} ({mark['group']})" for d, mark in zip(documents, marks) if mark)
        return marked, list(left)

    def _special_rule_first(
        self, documents: list[Document], query: str, question: str | None
    ) -> tuple[list[Document], list[str]]:
        """
        For a group `question` or `query` names, the regime's article that displaces a general article for that group
        (the table's `replaces`: CLT art. 303, the journalists' five hours, for art. 58) right before the general
        article's first block, when both are among `documents` and it ranks below; the blocks from there on rescaled
        below it (`_first`). Returns the list and the moves, "<law id> <article> before <article> (<group>)".
        """
        replacements = self._regimes.replacements(query, question)
        if not replacements:
            return documents, []
        ranked, moves = list(documents), []
        for (law_id, general), (special, group) in replacements.items():
            keys = [(d.meta.get("law_id"), str(d.meta.get("article") or "").lower()) for d in ranked]
            if (law_id, general) not in keys or (law_id, special) not in keys:
                continue
            at, found = keys.index((law_id, general)), keys.index((law_id, special))
            if found < at:
                continue
            ranked = ranked[:at] + _first([ranked[found]], ranked[at:])
            moved, displaced = ranked[at].meta.get("article"), ranked[at + 1].meta.get("article")
            moves.append(f"{law_id} {moved} before {displaced} ({group})")
        return ranked, moves

    @staticmethod
    def _named_first(named: list[str], documents: list[Document]) -> tuple[list[Document], list[str]]:
        """
        The blocks of the norms the question names (`named`: law ids) before the others, each group in its order;
        returns the list and the named law ids whose blocks moved ahead (`[]` when nothing moved).
        """
        others = [d for d in documents if d.meta.get("law_id") not in named]
        ranked = _last(documents, others)
        if ranked is documents:
            return documents, []
        present = {d.meta.get("law_id") for d in documents}
        return ranked, [law_id for law_id in dict.fromkeys(named) if law_id in present]

    def _finish(self, stats: dict[str, Any], started: float) -> dict[str, Any]:
        stats["ms"] = round((time.perf_counter() - started) * 1000, 1)
        return stats

    def _backend_scores(
        self, query: str, head: list[Document], query_embedding: list[float] | None, stats: dict[str, Any]
    ) -> list[float | None]:
        """The backend's scores of `head` (cached ones reused, the others computed in one batch)."""
        partition = cache_partition()  # per tenant: no entry (nor its timing) crosses tenants
        keys = [(partition, query, doc.id, content_hash(doc)) for doc in head]
        cached = [self._scores.get(key) for key in keys]
        missing = [i for i, value in enumerate(cached) if value is None]
        stats["cache_hits"] = len(head) - len(missing)
        stats["cache_misses"] = len(missing)
        if missing:
            todo = [head[i] for i in missing]
            if isinstance(self._scorer, EmbeddingScorer):
                fresh = self._scorer.score(
                    query, todo, query_embedding=query_embedding, document_embeddings=self._block_vectors(todo)
                )
            else:
                fresh = self._scorer.score(query, todo)
            stats["scored"] = len(todo)
            for i, value in zip(missing, fresh, strict=True):
                cached[i] = value
                if value is not None:  # a failed LLM score is retried next time
                    self._scores.set(keys[i], value)
        return cached

    def _block_vectors(self, documents: list[Document]) -> list[list[float]]:
        """Block vectors of the `embedding` backend: cached per (id, content hash), the missing ones embedded."""
        keys = [(cache_partition(), doc.id, content_hash(doc)) for doc in documents]
        vectors = [self._vectors.get(key) for key in keys]
        missing = [i for i, vector in enumerate(vectors) if vector is None]
        if missing:
            fresh = self._scorer.embed_documents([documents[i] for i in missing])
            for i, vector in zip(missing, fresh, strict=True):
                vectors[i] = np.asarray(vector, dtype=np.float32)
                self._vectors.set(keys[i], vectors[i])
        return vectors

    def _blend(self, raw: list[float | None], retrieval: list[float], stats: dict[str, Any]) -> list[float]:
        """Relevance in [0, 1]: the backend's score over the best one, blended with retrieval; fallbacks counted."""
        fallbacks = sum(1 for value in raw if value is None)
        stats["fallbacks"] = fallbacks
        if fallbacks == len(raw):
            stats["path"] = f"{self.relevance}+fallback"
            logger.warning("{backend} relevance unavailable: retrieval scores used", backend=self.relevance)
            return list(retrieval)
        stats["path"] = self.relevance if not fallbacks else f"{self.relevance}+fallback"
        best = max(value for value in raw if value is not None)
        share = self.retrieval_blend
        if share is None:
            share = DEFAULT_RETRIEVAL_BLEND.get(self.relevance, 0.0)
        return [
            ret if value is None else (1 - share) * (value / best if best > 0 else 0.0) + share * ret
            for value, ret in zip(raw, retrieval, strict=True)
        ]


def content_hash(document: Document) -> str:
    """Short hash of a block's content: a cached score is reused only while the text it was computed on is unchanged."""
    return hashlib.blake2b((document.content or "").encode("utf-8"), digest_size=8).hexdigest()


def _marked(documents: list[Document], key: str, marks: list[Any]) -> list[Document]:
    """`documents`, each with a truthy mark of `marks` (one per document) given as `meta[key]` on a copy."""
    return [
        Document(id=d.id, content=d.content, meta={**d.meta, key: mark}, score=d.score, embedding=d.embedding)
        if mark else d
        for d, mark in zip(documents, marks, strict=True)
    ]


def _first(leading: list[Document], ranked: list[Document]) -> list[Document]:
    """
    `leading` (unique by id, in their order) then `ranked` without them, its scores rescaled below the last of
    `leading`'s so scores stay monotone along the list; as long as `ranked` (or `leading`, if longer).
    """
    unique: dict[str, Document] = {}
    for doc in leading:
        unique.setdefault(doc.id, doc)
    rest = [d for d in ranked if d.id not in unique]
    return _below(list(unique.values()), rest)[: max(len(ranked), len(unique))]


def _permanent_first(documents: list[Document]) -> tuple[list[Document], list[str]]:
    """`documents` with each transitional provision right after the next permanent provision of its law below it."""

    def permanent_of(later: Document, moved: Document) -> bool:
        same_law = later.meta.get("law_id") == moved.meta.get("law_id")
        return same_law and not is_transitional(later.meta.get("article"))

    return _after_next(documents, lambda d: is_transitional(d.meta.get("article")), permanent_of)


def _laws_first(
    documents: list[Document], develops: dict[str, tuple[str, ...]], special: Any = None
) -> tuple[list[Document], list[str]]:
    """
    `documents` with each regulation's block right after the next block below it of a law it develops
    (`develops`: regulation law id -> law ids); `special`: a function of a block's meta giving the named group whose
    special law it is (that block stays).
    """

    def regulation(doc: Document) -> bool:
        listed = norm_rank(doc.meta) in REGULATION_RANKS and doc.meta.get("law_id") in develops
        return listed and not (special is not None and special(doc.meta))

    def developed_by(later: Document, moved: Document) -> bool:
        return later.meta.get("law_id") in develops[moved.meta.get("law_id")]

    return _after_next(documents, regulation, developed_by)


def _after_next(documents: list[Document], moves: Any, anchors: Any) -> tuple[list[Document], list[str]]:
    """
    `documents` with each one `moves(doc)` selects right after the next document below it that `anchors(next, doc)`
    accepts (one with none below keeps its place; an anchor is never itself moved), the others in their order; a
    moved block's score is lowered to its anchor's so scores stay monotone along the list. Returns the list and the
    ids of the moved blocks.
    """
    ranked: list[Document] = []
    held: list[Document] = []
    moved: list[str] = []
    for position, doc in enumerate(documents):
        if moves(doc) and any(anchors(later, doc) for later in documents[position + 1 :]):
            held.append(doc)
            moved.append(doc.id)
            continue
        ranked.append(doc)
        released = [h for h in held if anchors(doc, h)]
        if released:
            held = [h for h in held if not anchors(doc, h)]
            ranked.extend(_capped(h, doc.score or 0.0) for h in released)
    return ranked, moved


def _capped(document: Document, score: float) -> Document:
    """`document` itself when its score is at most `score`, else a copy scored `score`."""
    if (document.score or 0.0) <= score:
        return document
    return Document(id=document.id, content=document.content, meta=document.meta, score=score,
                    embedding=document.embedding)


def _last(documents: list[Document], moved: list[Document]) -> list[Document]:
    """
    `documents` with `moved` (some of them) after all the others, both in their order, the moved ones' scores
    rescaled below the last kept one's so scores stay monotone along the list. Nothing moves when `moved` is empty
    or is every document.
    """
    moved_ids = {id(d) for d in moved}
    kept = [d for d in documents if id(d) not in moved_ids]
    if not kept or len(kept) == len(documents):
        return documents
    return _below(kept, [d for d in documents if id(d) in moved_ids])


def _below(kept: list[Document], moved: list[Document]) -> list[Document]:
    """`kept` (not empty) then `moved`, each in its order, the moved ones' scores rescaled below the lowest kept
    score so scores stay monotone along the list (never raised: moved scores already below it stay as they are)."""
    if not moved:
        return list(kept)
    floor = min((d.score or 0.0) for d in kept)
    top = max((d.score or 0.0) for d in moved)
    return kept + _scaled(moved, min(1.0, 0.999 * floor / top) if top > 0 else 1.0)


def _scaled(documents: list[Document], factor: float) -> list[Document]:
    """Copies of `documents` with their scores multiplied by `factor` (the rest of each one unchanged)."""
    return [
        Document(id=d.id, content=d.content, meta=d.meta, score=(d.score or 0.0) * factor, embedding=d.embedding)
        for d in documents
    ]
