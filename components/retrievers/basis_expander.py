"""Constitutional basis: the constitution's article stating the right a retrieved statute article regulates."""

import math
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging

from components.document_stores.block_reader import articles_condition, read_blocks, with_score
from components.legal.answer_format import block_part, cited_as, holds_subdivision
from components.legal.bases import Basis, load_bases
from components.legal.ids import BASIS_EXPANSION, LEFT_OUT, check_named_laws, cited_exactly

logger = logging.getLogger(__name__)


def _key(document: Document) -> tuple[str, str]:
    return str(document.meta.get("law_id")), str(document.meta.get("article") or "").lower()


def _score_at(ranking: list[Document], place: int) -> float | None:
    """The score of a block put at `place`: just below the block before it (just above the first, at the top)."""
    neighbour = ranking[place - 1] if place > 0 else ranking[0] if ranking else None
    if neighbour is None or neighbour.score is None:
        return None
    return math.nextafter(neighbour.score, -math.inf if place > 0 else math.inf)


@component
class BasisExpander:
    """
    Puts the constitutional basis of the first articles retrieved right after them: "fiz 2 horas a mais, quanto
    tem que pagar?" finds art. 59 da CLT (the overtime rate), and art. 7º, XVI, da Constituição (overtime paid at
    least 50% more, the guarantee the CLT regulates) follows it, as a lawyer cites both.

    Which article is the basis of which is legal knowledge, not a similarity: the bundled table
    (`components/legal/data/bases.yaml`, `components.legal.bases`) lists, per constitutional subdivision, the statute
    articles that regulate that very right. A search does not find the basis on its own: the right is one line of a
    long list (CF88 art. 7 has 34 incisos) that the statute restates in more words.

    For each of the first `source_articles` articles of the ranking that the table lists, the block of the basis
    article holding the subdivision is read from the store (through the request's `filters`: an expansion never
    returns a block the request may not see) and placed right after the source article's best block, scored just
    below it; a basis already ranked there or above stays where it is, one ranked lower moves up. The ranking keeps
    its length (the last blocks give way). A question that names norms (`named_laws`: "o que diz a CLT sobre
    férias?") gets no basis from a law it does not name; one that names the constitution ("o que diz a constituição
    sobre hora extra?") asks for its provision on the matter, and gets the basis of any article of the ranking
    first (after the articles the question cites), before the blocks of the constitution that the search found by
    their words (CF88 art. 36's "convocação extraordinária ... vinte e quatro horas"), unless the basis article is
    ranked at or above its source already. The basis of a block whose law leaves out the group the question names
    (`meta["left_out"]`, set by `LegalReranker`: "sou empregada doméstica, tenho direito a férias?" and CLT art.
    136) goes first too: the constitution's right holds for that group, the statute's rule may not.

    Added blocks carry `meta["expansion"] = "basis"` (`BASIS_EXPANSION`), `meta["expanded_from"]` (the source
    block's id), `meta["basis_units"]` (the subdivision as `[kind, value]` pairs: `ExtractiveAnswer` quotes that
    subdivision) and `meta["basis_of"]` (the source article, "CLT, art. 59": the LLM's context block notes both);
    the `bases` output says what was placed after what (the request trace records it). A store that does not hold
    the basis article (or a request that may not read it) gets no basis.

    ### Usage example

    ```python
    from components.retrievers.basis_expander import BasisExpander

    expander = BasisExpander(document_store=store)
    blocks = expander.run(documents=ranked_blocks, filters=access_filters)["documents"]
    ```
    """

    def __init__(
        self,
        *,
        document_store: Any,
        bases_file: str | None = None,
        source_articles: int = 2,
        enabled: bool = True,
    ) -> None:
        """
        Create a BasisExpander.

        :param document_store: The store of the parent blocks (`filter_documents`).
        :param bases_file: The table of bases (layout of `components/legal/data/bases.yaml`); None: the bundled one.
        :param source_articles: How many of the ranking's first articles bring their basis (the articles an answer
            quotes first).
        :param enabled: Feature flag: when False the documents pass through unchanged.
        :raises ValueError: `source_articles` < 1, or a bases file that does not exist or is not such a table.
        """
        if source_articles < 1:
            raise ValueError(f"source_articles must be >= 1, got {source_articles}")
        self.document_store = document_store
        self.bases_file = bases_file
        self.source_articles = source_articles
        self.enabled = enabled
        self._bases = load_bases(bases_file)

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(
            self,
            document_store=self.document_store,
            bases_file=self.bases_file,
            source_articles=self.source_articles,
            enabled=self.enabled,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "BasisExpander":
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document], bases=list[str])
    def run(
        self,
        documents: list[Document],
        filters: dict[str, Any] | None = None,
        named_laws: list[str] | None = None,
        enabled: bool | None = None,
    ) -> dict[str, Any]:
        """
        Put the basis of each of the first articles right after it.

        :param documents: Parent blocks, best first (meta `law_id`, `article`).
        :param filters: Haystack filters AND-ed into the store read (the request's access filter).
        :param named_laws: The law ids of the norms the question names (`CitationDetector.named_laws`): only their
            bases are added; None or empty: any.
        :param enabled: Overrides the init `enabled` for this run.
        :returns: `documents`: the ranking with the bases in place, as long as the input; `bases`: each basis placed,
            "<law> <article> <subdivision> <- <law> <article>" (its source).
        :raises ValueError: `named_laws` is not a list of law ids.
        """
        check_named_laws(named_laws)
        if not (self.enabled if enabled is None else enabled) or not documents:
            return {"documents": list(documents), "bases": []}
        sources: dict[tuple[str, str], int] = {}  # each article at its best block
        for i, doc in enumerate(documents):
            sources.setdefault(_key(doc), i)
        named = set(named_laws or ())
        # a question that names the constitution ("o que diz a constituição sobre hora extra?") asks for its
        # provision on the matter: the basis of any article of the ranking, put first (before the blocks of the
        # constitution that the search found by their words); any other question: the bases of the first articles
        wanted = [
            (at, basis)
            for rank, (key, at) in enumerate(sources.items())
            for basis in self._bases.get(key, ())
            if basis.law_id in named or (not named and rank < self.source_articles)
        ]
        if not wanted:
            return {"documents": list(documents), "bases": []}
        blocks = self._basis_blocks([basis for _, basis in wanted], filters)
        ranking, placed = list(documents), {}
        for at, basis in sorted(wanted, key=lambda item: -item[0]):  # the lower source first: the higher one wins
            block = blocks.get(basis)
            source = documents[at]
            after_source = ranking.index(source) + 1
            target = (basis.law_id, basis.article)
            # the basis article ranked at or above its source on its own merits stays where it is
            if block is None or any(
                _key(doc) == target and doc.meta.get("expansion") != BASIS_EXPANSION for doc in ranking[:after_source]
            ):
                continue
            ranking = [doc for doc in ranking if _key(doc) != target]
            place = ranking.index(source) + 1
            # first, after the articles the question cites (the re-ranker's exact hits): the basis of a question that
            # names its norm, or of a law that leaves out the group the question names (the constitution governs it)
            if basis.law_id in named or source.meta.get(LEFT_OUT):
                cited = [cited_exactly(doc.meta) for doc in ranking]
                place = cited.index(False) if False in cited else len(ranking)
            score = _score_at(ranking, place)
            ranking.insert(place, with_score(
                block, score, expansion=BASIS_EXPANSION, expanded_from=source.id,
                basis_units=[list(unit) for unit in basis.units], basis_of=cited_as(source),
            ))
            units = " ".join(f"{kind} {value}" for kind, value in basis.units)
            placed[target] = f"{basis.law_id} {basis.article} {units} <- {' '.join(_key(source))}"
        ranking = ranking[: len(documents)]
        kept = {_key(doc) for doc in ranking if doc.meta.get("expansion") == BASIS_EXPANSION}
        bases = [text for target, text in placed.items() if target in kept]
        logger.debug("BasisExpander: {bases}", bases=bases)
        return {"documents": ranking, "bases": bases}

    def _basis_blocks(self, bases: list[Basis], filters: dict[str, Any] | None) -> dict[Basis, Document]:
        """Per basis, the block of its article that holds its subdivision (one store read); none found, none."""
        condition = articles_condition([(basis.law_id, basis.article) for basis in bases])
        parts: dict[tuple[str, str], list[Document]] = {}
        for block in read_blocks(self.document_store, condition, filters):
            parts.setdefault(_key(block), []).append(block)
        found = {}
        for basis in bases:
            for block in sorted(parts.get((basis.law_id, basis.article), []), key=block_part):
                if holds_subdivision([block], list(basis.units)):
                    found[basis] = block
                    break
            else:  # the article is there, the subdivision is not: the table and the text disagree
                if parts.get((basis.law_id, basis.article)):
                    logger.warning(
                        "BasisExpander: no block of {law} art. {article} holds {units}",
                        law=basis.law_id, article=basis.article, units=basis.units,
                    )
        return found
