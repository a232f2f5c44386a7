"""Multi-tenant access control: the Haystack filter every retrieval path AND-s into its store reads."""

from typing import Any

from haystack import component, default_from_dict, default_to_dict

from components.retrievers.hybrid_retriever import and_filters

# `scope` values of documents that are NOT visible to everyone; anything else (or no scope at all: the public
# statutes) is global.
PRIVATE_SCOPES = ("tenant", "group", "user")
SCOPES = ("global", *PRIVATE_SCOPES)
ACCESS_KEYS = ("tenant_id", "user_id", "group_ids", "case_id")
GLOBAL_ONLY = {"field": "meta.scope", "operator": "not in", "value": list(PRIVATE_SCOPES)}


def _text(name: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    return value.strip()


def check_filters(filters: Any) -> dict[str, Any] | None:
    """
    A caller's Haystack filters: None, or a well-formed filter (checked with Haystack's own filter evaluation
    before any model runs; the store checks them again).

    :raises ValueError: Not a non-empty dict, or malformed (unknown operator, missing field / value, ...).
    """
    from haystack import Document  # noqa: PLC0415
    from haystack.errors import FilterError  # noqa: PLC0415
    from haystack.utils.filters import document_matches_filter  # noqa: PLC0415

    if filters is None:
        return None
    if not isinstance(filters, dict) or not filters:
        raise ValueError(
            'filters must be a non-empty Haystack filter dict, e.g. {"field": "meta.law_short", "operator": "==", '
            f'"value": "ET"}}, got {filters!r}'
        )
    try:
        document_matches_filter(filters, Document(content=""))
    except FilterError as error:
        raise ValueError(f"invalid filters: {error}") from None
    return filters


def check_access(access: dict[str, Any] | None) -> dict[str, Any]:
    """
    Validate an access context (`tenant_id`, `user_id`, `group_ids`, `case_id`); None or {} = anonymous.

    :raises ValueError: Unknown keys, non-string values, `user_id` / `group_ids` / `case_id` without `tenant_id`.
    """
    if access is None:
        return {}
    if not isinstance(access, dict):
        raise ValueError(f"access must be a mapping with keys {ACCESS_KEYS}, got {access!r}")
    unknown = sorted(set(access) - set(ACCESS_KEYS))
    if unknown:
        raise ValueError(f"Unknown access key(s) {unknown}; known: {list(ACCESS_KEYS)}")
    checked: dict[str, Any] = {k: _text(k, access.get(k)) for k in ("tenant_id", "user_id", "case_id")}
    groups = access.get("group_ids")
    if groups is not None:
        if isinstance(groups, str) or not isinstance(groups, (list, tuple)):
            raise ValueError(f"group_ids must be a list of strings, got {groups!r}")
        checked["group_ids"] = [_text("group_ids item", g) for g in groups]
    if not checked.get("tenant_id") and any(checked.get(k) for k in ("user_id", "group_ids", "case_id")):
        raise ValueError("user_id, group_ids and case_id need a tenant_id")
    return {k: v for k, v in checked.items() if v}


def access_filter(access: dict[str, Any] | None) -> dict[str, Any]:
    """
    The Haystack filter of the documents an access context may read.

    - Global documents (`scope` global or absent: the public statutes) are visible to everyone.
    - Every other document needs the caller's `tenant_id`; then `scope: tenant` is visible to the whole tenant,
      `scope: group` to callers sharing one of its `group_ids`, `scope: user` to its `user_id` only.
    - `case_id` narrows the tenant's documents to that one case (global documents stay visible).
    - Anonymous callers (no tenant) see global documents only.

    :raises ValueError: An invalid access context (see `check_access`).
    """
    access = check_access(access)
    tenant = access.get("tenant_id")
    if not tenant:
        return GLOBAL_ONLY
    visible = [{"field": "meta.scope", "operator": "==", "value": "tenant"}]
    if access.get("group_ids"):
        visible.append(
            {
                "operator": "AND",
                "conditions": [
                    {"field": "meta.scope", "operator": "==", "value": "group"},
                    {"field": "meta.group_ids", "operator": "in", "value": list(access["group_ids"])},
                ],
            }
        )
    if access.get("user_id"):
        visible.append(
            {
                "operator": "AND",
                "conditions": [
                    {"field": "meta.scope", "operator": "==", "value": "user"},
                    {"field": "meta.user_id", "operator": "==", "value": access["user_id"]},
                ],
            }
        )
    private = [
        {"field": "meta.tenant_id", "operator": "==", "value": tenant},
        visible[0] if len(visible) == 1 else {"operator": "OR", "conditions": visible},
    ]
    if access.get("case_id"):
        private.append({"field": "meta.case_id", "operator": "==", "value": access["case_id"]})
    return {"operator": "OR", "conditions": [GLOBAL_ONLY, {"operator": "AND", "conditions": private}]}


def tenant_meta(access: dict[str, Any] | None, scope: str | None = None) -> dict[str, Any]:
    """
    The access meta to stamp on documents indexed for `access` (what `LexHay.index(access=...)` writes).

    Without a tenant the documents are global. With one, the scope defaults to the narrowest the context names:
    `user` when `user_id` is given, else `tenant`; `group` needs `group_ids`.

    :raises ValueError: An unknown scope, a scope the context cannot fill, or an invalid context.
    """
    access = check_access(access)
    if scope is not None and scope not in SCOPES:
        raise ValueError(f"scope must be one of {SCOPES}, got {scope!r}")
    if not access.get("tenant_id"):
        if scope not in (None, "global"):
            raise ValueError(f"scope {scope!r} needs a tenant_id")
        return {"scope": "global"}
    scope = scope or ("user" if access.get("user_id") else "tenant")
    if scope == "group" and not access.get("group_ids"):
        raise ValueError("scope 'group' needs group_ids")
    if scope == "user" and not access.get("user_id"):
        raise ValueError("scope 'user' needs a user_id")
    return {"scope": scope, **access}


def owner_key(meta: dict[str, Any]) -> str:
    """
    Namespace of a document's owner for deterministic ids: "" for global documents, else tenant / scope / user /
    case / groups. Two tenants (or two cases) indexing the same statute get distinct ids, never each other's.
    """
    scope = meta.get("scope")
    if scope not in PRIVATE_SCOPES:
        return ""
    groups = ",".join(sorted(str(g) for g in meta.get("group_ids") or []))
    return "/".join(str(meta.get(k) or "") for k in ("tenant_id", "scope", "user_id", "case_id")) + f"/{groups}"


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
        self.default_tenant_id = _text("default_tenant_id", default_tenant_id)

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
    ) -> dict[str, Any]:
        """
        The combined filter: access AND the caller's filters.

        :param tenant_id: The caller's tenant.
        :param user_id: The caller (adds their personal documents).
        :param group_ids: The caller's groups (adds their groups' documents).
        :param case_id: Narrows the tenant's documents to one case.
        :param filters: The caller's Haystack filters (narrowing only).
        :returns: `filters`: the filter every store read must apply.
        :raises ValueError: An invalid access context or malformed `filters`.
        """
        if filters is not None and (not isinstance(filters, dict) or not filters):
            raise ValueError(f"filters must be a non-empty Haystack filter dict, got {filters!r}")
        access = {"tenant_id": tenant_id or self.default_tenant_id, "user_id": user_id, "group_ids": group_ids,
                  "case_id": case_id}
        combined = and_filters(filters, access_filter({k: v for k, v in access.items() if v}))
        return {"filters": combined}
