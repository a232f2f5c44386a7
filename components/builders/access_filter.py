"""Query stage: the access filter of one request, AND-ed with the caller's filters (rules: `components.legal.access`)."""

from typing import Any

from haystack import component, default_from_dict, default_to_dict

from components.legal.access import access_filter, and_filters, check_filters, checked_text

@component
class AccessFilter:
    """
    Builds the access filter of one request and AND-s the caller's own filters into it.

    Wired first in the query pipeline; its `filters` output feeds every store read (hybrid retrieval, citation and
    carryover fetches, NEED fetches, reference / sibling expansion, graph enrichment), so a user-supplied filter can
    only narrow what the access context allows, never widen it.

    ### Usage example

    ```python
    from components.builders.access_filter import AccessFilter

    filters = AccessFilter().run(tenant_id="acme", user_id="ana", group_ids=["laboral"])["filters"]
    retriever.run(query_embedding=..., query_sparse_embedding=..., filters=filters)
    ```
    """

    def __init__(self, *, default_tenant_id: str | None = None) -> None:
        """
        Create an AccessFilter.

        :param default_tenant_id: Tenant used when a request names none (a single-tenant deployment); None keeps
            anonymous requests to global documents.
        """
        self.default_tenant_id = checked_text("default_tenant_id", default_tenant_id)

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(self, default_tenant_id=self.default_tenant_id)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "AccessFilter":
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)

    @component.output_types(filters=dict[str, Any])
    def run(
        self,
        tenant_id: str | None = None,
        user_id: str | None = None,
        group_ids: list[str] | None = None,
        case_id: str | None = None,
        filters: dict[str, Any] | None = None,
        case_ids: list[str] | None = None,
        roles: list[str] | None = None,
    ) -> dict[str, Any]:
        """
        The combined filter: access AND the caller's filters.

        :param tenant_id: The caller's tenant.
        :param user_id: The caller (adds their personal documents).
        :param group_ids: The caller's groups (adds their groups' documents).
        :param case_id: Narrows the tenant's documents to one case.
        :param filters: The caller's Haystack filters (narrowing only).
        :param case_ids: The cases the caller may read (`["*"]` = all); None: all for an admin, none otherwise.
        :param roles: The caller's roles (see `ACCESS_KEYS`); None = the local operator (admin).
        :returns: `filters`: the filter every store read must apply.
        :raises ValueError: An invalid access context or malformed `filters`.
        """
        filters = check_filters(filters)
        access = {"tenant_id": tenant_id or self.default_tenant_id, "user_id": user_id, "group_ids": group_ids,
                  "case_id": case_id, "case_ids": case_ids}
        access = {k: v for k, v in access.items() if v is not None}
        if roles is not None:
            access["roles"] = roles
        combined = and_filters(filters, access_filter(access))
        return {"filters": combined}
