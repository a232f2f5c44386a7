"""The norms a caller can read, listed when the question asks which ones the engine holds ("¿qué leyes tienes?")."""

from typing import Any

from haystack import component, default_from_dict, default_to_dict, logging

from components.legal.access import and_filters
from components.legal.catalogue import asks_for_catalogue, catalogue_answer
from components.legal.ids import PARENT_FILTER, REPEALED
from components.legal.legal_text import detect_query_language

logger = logging.getLogger(__name__)

# countries first in this order, then any other (a tenant's upload of another country's law), by law name
COUNTRY_ORDER = ("es", "br")


@component
class NormCatalogue:
    """
    Lists the norms the caller can read when the question asks which ones the engine holds, and nothing else
    (`components.legal.catalogue.asks_for_catalogue`: "¿qué leyes tienes?", "quais leis você conhece?").

    Searched like any question, such a question returns whichever articles mention "normas" or "leis"; the answer
    it wants is the list of norms, and that list depends on who asks: the public statutes, plus what the caller's
    tenant, groups or user indexed, never another tenant's. The norms are the distinct `law_id`s among the parent
    blocks that `filters` (the request's access filter) lets through, read from the store with the Haystack
    document-store method `get_metadata_field_unique_values` (the embedded store counts an indexed field without
    reading any payload; qdrant-haystack's `QdrantDocumentStore` has the same method). Each row holds the norm's
    short name, title and country as its blocks carry them, and whether every block of it is repealed (the
    Estatuto de los Trabajadores of 1995). Any other question returns no rows and reads nothing.

    ### Usage example

    ```python
    from components.retrievers.norm_catalogue import NormCatalogue

    catalogue = NormCatalogue(document_store=store)
    result = catalogue.run(query="¿Qué leyes tienes?", filters=access_filters)
    result["norms"][0]["law_short"], result["answer"]  # "CE", "Respondo con el texto de estas normas: ..."
    ```
    """

    def __init__(self, *, document_store: Any, max_norms: int = 500) -> None:
        """
        Create a NormCatalogue.

        :param document_store: The store holding the parent blocks: any store with
            `get_metadata_field_unique_values` (`EdgeDocumentStore`, qdrant-haystack's `QdrantDocumentStore`).
        :param max_norms: The most norms listed (a store shared by many tenants' uploads holds many; each caller
            sees only its own and the public ones).
        :raises ValueError: A non-positive `max_norms`, or a store without `get_metadata_field_unique_values`.
        """
        if max_norms <= 0:
            raise ValueError(f"max_norms must be > 0, got {max_norms}")
        if not hasattr(document_store, "get_metadata_field_unique_values"):
            raise ValueError(
                f"NormCatalogue needs a store with get_metadata_field_unique_values, got {type(document_store)}"
            )
        self.document_store = document_store
        self.max_norms = max_norms

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(self, document_store=self.document_store, max_norms=self.max_norms)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "NormCatalogue":
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)

    @component.output_types(norms=list[dict[str, Any]], answer=str | None)
    def run(self, query: str, filters: dict[str, Any] | None = None) -> dict[str, Any]:
        """
        List the norms when `query` asks for them.

        :param query: The user's question.
        :param filters: The request's access filter (`AccessFilter.filters`): only the norms whose blocks the caller
            can read are listed.
        :returns: `norms`: one row per norm (`law_id`, `law_short`, `law_title`, `country`, `repealed`), Spain's
            first, then Brazil's, then any other, each by short name; `[]` for any other question. `answer`: the
            list as the answer, in the question's language (`None` for any other question).
        :raises ValueError: `query` is not a string.
        """
        if not isinstance(query, str):
            raise ValueError("NormCatalogue needs a `query` string.")
        if not asks_for_catalogue(query):
            return {"norms": [], "answer": None}
        readable = and_filters(PARENT_FILTER, filters)
        law_ids, total = self.document_store.get_metadata_field_unique_values(
            "law_id", filters=readable, size=self.max_norms
        )
        if total > len(law_ids):
            logger.warning("NormCatalogue: {total} norms, listing {shown}", total=total, shown=len(law_ids))
        norms = [self._norm(law_id, readable) for law_id in law_ids]
        norms.sort(key=_order)
        language = detect_query_language(query, default="es")
        return {"norms": norms, "answer": catalogue_answer(norms, language)}

    def _norm(self, law_id: str, readable: dict[str, Any] | None) -> dict[str, Any]:
        """One norm's row, from the blocks of it the caller can read."""
        of_law = and_filters(readable, {"field": "meta.law_id", "operator": "==", "value": law_id})
        values = {
            field: self.document_store.get_metadata_field_unique_values(field, filters=of_law, size=2)[0]
            for field in ("law_short", "law_title", "country", "status")
        }
        return {
            "law_id": law_id,
            "law_short": next(iter(values["law_short"]), None),
            "law_title": next(iter(values["law_title"]), None),
            "country": next(iter(values["country"]), None),
            "repealed": values["status"] == [REPEALED],
        }


def _order(norm: dict[str, Any]) -> tuple[int, str]:
    country = norm.get("country")
    rank = COUNTRY_ORDER.index(country) if country in COUNTRY_ORDER else len(COUNTRY_ORDER)
    return rank, str(norm.get("law_short") or norm["law_id"]).lower()
