"""
Access control vocabulary: how filters combine, who may read a document, what owner meta a document carries.

Every store read of a request ANDs the access filter into its own filters (`and_filters`); indexing stamps the
owner meta that those filters test. Stages import these functions from here rather than from one another.
"""

from typing import Any


def and_filters(*filters: dict[str, Any] | None) -> dict[str, Any] | None:
    """AND-combine Haystack filters, dropping empty ones."""
    conditions = [f for f in filters if f]
    if not conditions:
        return None
    return conditions[0] if len(conditions) == 1 else {"operator": "AND", "conditions": conditions}


# `scope` values of documents that are NOT visible to everyone; anything else (or no scope at all: the public
# statutes) is global.
PRIVATE_SCOPES = ("tenant", "group", "user")
SCOPES = ("global", *PRIVATE_SCOPES)
# The access vocabulary (what `LexHay` receives as `access`, what the server builds from an API key):
# - `tenant_id`, `user_id`, `group_ids`: who the principal is (documents of its tenant / groups / user);
# - `case_ids`: the cases the principal may read; `["*"]` = every case of its tenant. A tenant's documents that
#   carry a `case_id` are a boundary: visible only to principals allowed that case (or all cases). Documents
#   without a case (stamped `case_id: NO_CASE` at indexing) stay visible to the whole tenant (by scope);
# - `case_id`: narrows one request to one case (must be one of `case_ids` when those are given);
# - `roles`: `reader` (read), `writer` (index into its own tenant / group / user scope), `admin` (index `global`
#   documents, read every case of its tenant), `gateway` (a trusted front end acting for its own users; its
#   requests name the acting principal). Absent `roles` = the local operator of the store (the SDK or the CLI on
#   its own store): admin. A server always sets `roles` from the caller's key.
ACCESS_KEYS = ("tenant_id", "user_id", "group_ids", "case_id", "case_ids", "roles")
ROLES = ("reader", "writer", "admin", "gateway")
ALL_CASES = "*"
# `case_id` of a tenant's document that belongs to no case: a value, not a missing field, because a Qdrant server
# cannot filter on a missing field (qdrant-haystack refuses `== None`); reserved, never a real case id
NO_CASE = "-"
LOCAL_ROLES = ("reader", "writer", "admin")  # what a principal without `roles` (the local operator) may do
# owner meta stamped on indexed documents (never roles or case lists)
OWNER_KEYS = ("tenant_id", "user_id", "group_ids", "case_id")
GLOBAL_ONLY = {"field": "meta.scope", "operator": "not in", "value": list(PRIVATE_SCOPES)}
# caps of a caller's filter (a deep or huge filter is refused with a ValueError, never a RecursionError)
MAX_FILTER_DEPTH = 8
MAX_FILTER_CONDITIONS = 256
MAX_FILTER_LIST = 1000


class AccessDenied(ValueError):
    """The principal may not do this (a server answers 403; it is a ValueError for the SDK and the CLI)."""


def checked_text(name: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    return value.strip()


def check_filters(filters: Any) -> dict[str, Any] | None:
    """
    A caller's Haystack filters: None, or a well-formed filter (checked with Haystack's own filter evaluation
    before any model runs; the store checks them again).

    :raises ValueError: Not a non-empty dict, malformed (unknown operator, missing field / value, ...), nested
        deeper than `MAX_FILTER_DEPTH`, more than `MAX_FILTER_CONDITIONS` conditions, or an `in` / `not in` list
        longer than `MAX_FILTER_LIST`.
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
    _check_filter_size(filters)
    try:
        document_matches_filter(filters, Document(content=""))
    except FilterError as error:
        raise ValueError(f"invalid filters: {error}") from None
    return filters


def _check_filter_size(filters: dict[str, Any]) -> None:
    """Depth, condition count and list sizes of a filter, walked iteratively (no recursion to exhaust)."""
    stack: list[tuple[Any, int]] = [(filters, 1)]
    conditions = 0
    while stack:
        node, depth = stack.pop()
        if depth > MAX_FILTER_DEPTH:
            raise ValueError(f"filters are nested deeper than {MAX_FILTER_DEPTH} levels")
        conditions += 1
        if conditions > MAX_FILTER_CONDITIONS:
            raise ValueError(f"filters have more than {MAX_FILTER_CONDITIONS} conditions")
        if not isinstance(node, dict):
            continue  # malformed: Haystack's own check says why
        value = node.get("value")
        if isinstance(value, (list, tuple)) and len(value) > MAX_FILTER_LIST:
            raise ValueError(f"a filter value list has {len(value)} items; at most {MAX_FILTER_LIST}")
        children = node.get("conditions")
        if isinstance(children, (list, tuple)):
            if len(children) > MAX_FILTER_CONDITIONS:
                raise ValueError(f"filters have more than {MAX_FILTER_CONDITIONS} conditions")
            stack.extend((child, depth + 1) for child in children)


def _texts(name: str, value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ValueError(f"{name} must be a list of strings, got {value!r}")
    return [checked_text(f"{name} item", v) for v in value]  # type: ignore[misc]


def check_access(access: dict[str, Any] | None) -> dict[str, Any]:
    """
    Validate an access context (see `ACCESS_KEYS`); None or {} = anonymous (global documents only).

    :raises ValueError: Unknown keys or roles, non-string values, `user_id` / `group_ids` / `case_id` /
        `case_ids` without `tenant_id`, a `case_id` outside the principal's `case_ids`.
    """
    if access is None:
        return {}
    if not isinstance(access, dict):
        raise ValueError(f"access must be a mapping with keys {ACCESS_KEYS}, got {access!r}")
    unknown = sorted(set(access) - set(ACCESS_KEYS))
    if unknown:
        raise ValueError(f"Unknown access key(s) {unknown}; known: {list(ACCESS_KEYS)}")
    checked: dict[str, Any] = {k: checked_text(k, access.get(k)) for k in ("tenant_id", "user_id", "case_id")}
    for key in ("group_ids", "case_ids"):
        values = _texts(key, access.get(key))
        if values is not None:
            checked[key] = values
    roles = _texts("roles", access.get("roles"))
    if roles is not None:
        bad = sorted(set(roles) - set(ROLES))
        if bad:
            raise ValueError(f"Unknown role(s) {bad}; known: {list(ROLES)}")
        checked["roles"] = sorted(set(roles))
    if NO_CASE in ([checked.get("case_id")] + list(checked.get("case_ids") or [])):
        raise ValueError(f"{NO_CASE!r} is reserved (a document without a case); it cannot name a case")
    if not checked.get("tenant_id") and any(checked.get(k) for k in ("user_id", "group_ids", "case_id", "case_ids")):
        raise ValueError("user_id, group_ids, case_id and case_ids need a tenant_id")
    cases = checked.get("case_ids")
    if checked.get("case_id") and cases is not None and ALL_CASES not in cases and checked["case_id"] not in cases:
        raise AccessDenied(f"case {checked['case_id']!r} is not one of the principal's cases")
    return {k: v for k, v in checked.items() if v or (k in ("roles", "case_ids") and v is not None)}


def roles_of(access: dict[str, Any] | None) -> tuple[str, ...]:
    """The roles of a (checked) access context: its `roles`, or the local operator's (`LOCAL_ROLES`) without."""
    roles = (access or {}).get("roles")
    return LOCAL_ROLES if roles is None else tuple(roles)


def is_admin(access: dict[str, Any] | None) -> bool:
    """Whether the principal is an admin (the local operator without `roles` is)."""
    return "admin" in roles_of(access)


def _case_condition(access: dict[str, Any]) -> dict[str, Any] | None:
    """
    The case boundary of a tenant's documents: `case_id` narrows to that case; else an admin or `case_ids: ["*"]`
    reads every case, `case_ids` reads those cases plus the documents without a case, and a principal with no case
    reads only the documents without a case.
    """
    if access.get("case_id"):
        return {"field": "meta.case_id", "operator": "==", "value": access["case_id"]}
    cases = access.get("case_ids")
    if (cases is None and is_admin(access)) or (cases and ALL_CASES in cases):
        return None
    # a private document without a case carries NO_CASE (tenant_meta), so every test is on a value
    no_case = {"field": "meta.case_id", "operator": "==", "value": NO_CASE}
    if not cases:
        return no_case
    return {"operator": "OR", "conditions": [no_case, {"field": "meta.case_id", "operator": "in", "value": cases}]}


def access_filter(access: dict[str, Any] | None) -> dict[str, Any]:
    """
    The Haystack filter of the documents an access context may read.

    - Global documents (`scope` global or absent: the public statutes) are visible to everyone.
    - Every other document needs the caller's `tenant_id`; then `scope: tenant` is visible to the whole tenant,
      `scope: group` to callers sharing one of its `group_ids`, `scope: user` to its `user_id` only.
    - Case documents (a tenant's documents with a `case_id`) are a boundary: see `_case_condition` (`case_id`
      narrows the tenant's documents to that one case; `case_ids` lists the readable cases; an admin without
      `case_ids` reads all). Global documents stay visible.
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
    case = _case_condition(access)
    if case is not None:
        private.append(case)
    return {"operator": "OR", "conditions": [GLOBAL_ONLY, {"operator": "AND", "conditions": private}]}


def tenant_meta(access: dict[str, Any] | None, scope: str | None = None) -> dict[str, Any]:
    """
    The access meta to stamp on documents indexed for `access` (what `LexHay.index(access=...)` writes).

    Writes never cross owners: only an admin (the local operator without `roles` is one) writes `global`
    documents; a `writer` writes only into its own tenant, its own groups, its own user, and (when it has
    `case_ids`) one of its cases. Without a tenant the documents are global. With one, the scope defaults to the
    narrowest the context names: `user` when `user_id` is given, else `tenant`; `group` needs `group_ids`.

    :raises AccessDenied: A principal without the `writer` or `admin` role, a non-admin asking for `global`, or a
        restricted principal writing outside its cases.
    :raises ValueError: An unknown scope, a scope the context cannot fill, or an invalid context.
    """
    access = check_access(access)
    if scope is not None and scope not in SCOPES:
        raise ValueError(f"scope must be one of {SCOPES}, got {scope!r}")
    roles = roles_of(access)
    if not {"writer", "admin"} & set(roles):
        raise AccessDenied("indexing needs the writer or admin role")
    if not access.get("tenant_id") or scope == "global":
        if scope not in (None, "global"):
            raise ValueError(f"scope {scope!r} needs a tenant_id")
        if "admin" not in roles:
            raise AccessDenied("only an admin may index global documents")
        return {"scope": "global"}
    scope = scope or ("user" if access.get("user_id") else "tenant")
    if scope == "group" and not access.get("group_ids"):
        raise ValueError("scope 'group' needs group_ids")
    if scope == "user" and not access.get("user_id"):
        raise ValueError("scope 'user' needs a user_id")
    cases = access.get("case_ids")
    if "admin" not in roles and cases and ALL_CASES not in cases and access.get("case_id") not in cases:
        raise AccessDenied(f"a principal restricted to cases {cases} indexes into one of them (case_id)")
    owner = {"scope": scope, **{k: access[k] for k in OWNER_KEYS if access.get(k)}}
    return {**owner, "case_id": owner.get("case_id") or NO_CASE}


def owned_case(meta: dict[str, Any]) -> str | None:
    """The case a document's owner meta names; None without one, stamped `NO_CASE` or (older documents) absent."""
    case = meta.get("case_id")
    return None if case in (None, "", NO_CASE) else case


def owner_condition(meta: dict[str, Any]) -> dict[str, Any]:
    """
    A Haystack filter that selects the documents of the owner `meta` names, never another tenant's or scope's:
    global documents for a global owner, else the owner's scope, tenant and (when set) user and case. A tenant-wide
    owner's condition also matches that tenant's case documents of the same scope: callers that act on one owner
    only (prune, graph visibility) check `owner_key` of each document read. No `== None` test is used (Qdrant
    servers refuse a null filter value).
    """
    if meta.get("scope") not in PRIVATE_SCOPES:
        return GLOBAL_ONLY
    conditions: list[dict[str, Any]] = [{"field": "meta.scope", "operator": "==", "value": meta["scope"]},
                                        {"field": "meta.tenant_id", "operator": "==", "value": meta.get("tenant_id")}]
    # a no-case owner reads its whole scope; `owner_key` tells its documents from the case ones
    for key, value in (("user_id", meta.get("user_id")), ("case_id", owned_case(meta))):
        if value:
            conditions.append({"field": f"meta.{key}", "operator": "==", "value": value})
    return {"operator": "AND", "conditions": conditions}


def owner_key(meta: dict[str, Any]) -> str:
    """
    Namespace of a document's owner for deterministic ids: "" for global documents, else tenant / scope / user /
    case / groups. Two tenants (or two cases) indexing the same statute get distinct ids, never each other's.
    """
    scope = meta.get("scope")
    if scope not in PRIVATE_SCOPES:
        return ""
    groups = ",".join(sorted(str(g) for g in meta.get("group_ids") or []))
    fields = (meta.get("tenant_id"), scope, meta.get("user_id"), owned_case(meta))
    return "/".join(str(value or "") for value in fields) + f"/{groups}"
