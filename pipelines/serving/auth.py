"""
Who calls: API keys, principals and roles, and the `access` context the server builds from them.

An API key belongs to one **principal**: a tenant, optionally a user, groups and cases, and roles. The keys file
(`<store>/keys.yaml`, or `LEXHAY_AUTH_KEYS`; written with mode 0600) holds each key's id, the SHA-256 of the key
(never the key) and its principal; `lexhay keys add|list|revoke` manages it. Once the file exists every request
needs `Authorization: Bearer <key>`; without it the server is a single-user loopback server (`LOCAL`).

Roles (a key holds one or more):

- `reader`: retrieve, ask, chat, the status and docs routes.
- `writer`: reader + index into its own tenant / group / user scope.
- `admin`: writer + index `global` documents (the public statutes), server-side `paths`, the traces routes.
- `gateway`: reader + may pass an `access` object in the request body (a trusted front end acting for its own
  users), never outside its own tenant.

The server never takes a caller's word for who it is: `access` is built from the key's principal
(`request_access`), and a body `access` without the `gateway` role is a 403.

### Usage example

```python
from pipelines.serving.auth import KeyStore

store = KeyStore("/srv/lexhay/keys.yaml")
key = store.add(tenant="acme", user="ana", roles=["reader", "writer"])  # shown once: only its hash is kept
principal = store.authenticate(key)
assert principal.access() == {"tenant_id": "acme", "roles": ["reader", "writer"], "user_id": "ana"}
```
"""

import contextvars
import datetime
import hashlib
import hmac
import os
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from components.legal.access import ALL_CASES, ROLES, check_access
from pipelines.serving.errors import http_error

KEY_PREFIX = "lxh"
_EMPTY_HASH = hashlib.sha256(b"").hexdigest()


def key_hash(key: str) -> str:
    """The stored form of a key: its SHA-256 (keys are 256-bit random tokens, so a plain hash suffices)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Principal:
    """The caller a key stands for: tenant, user, groups, cases and roles (`key_id` names the key in logs)."""

    key_id: str
    tenant: str | None = None
    user: str | None = None
    groups: tuple[str, ...] = ()
    cases: tuple[str, ...] = ()
    roles: frozenset[str] = field(default_factory=frozenset)
    rate_limit: float | None = None  # requests a minute for this key (None = the server's LEXHAY_RATE_LIMIT)
    local: bool = False  # the single-user loopback mode (no keys file): today's trust-the-body behaviour

    def may(self, action: str) -> bool:
        """Whether this principal may `read`, `write` (own scope), `write_global`, `admin` or act as `gateway`."""
        if self.local:
            return True
        roles = self.roles
        return {
            "read": bool(roles),
            "write": bool(roles & {"writer", "admin"}),
            "write_global": "admin" in roles,
            "admin": "admin" in roles,
            "gateway": "gateway" in roles,
        }[action]

    def access(self) -> dict[str, Any] | None:
        """The access context of this principal, as the engine reads it (`components.legal.access`)."""
        if self.local or not self.tenant:
            return None
        access: dict[str, Any] = {"tenant_id": self.tenant, "roles": sorted(self.roles)}
        if self.user:
            access["user_id"] = self.user
        if self.groups:
            access["group_ids"] = list(self.groups)
        if self.cases:
            access["case_ids"] = list(self.cases)
        return access


LOCAL = Principal(key_id="local", roles=frozenset(ROLES), local=True)

_CURRENT: contextvars.ContextVar[Principal | None] = contextvars.ContextVar("lexhay_principal", default=None)


def set_principal(principal: Principal | None) -> contextvars.Token:
    """Sets the principal of the current request (the guard middleware does; the wrappers read it)."""
    return _CURRENT.set(principal)


def reset_principal(token: contextvars.Token) -> None:
    """Restores the principal that was current before `set_principal` returned `token`."""
    _CURRENT.reset(token)


def current_principal() -> Principal:
    """
    The principal of the current request. Outside a guarded request (in-process use, plain `hayhooks run`) it is
    `LOCAL` only while no keys file exists; with one, an unguarded request is refused (401).
    """
    principal = _CURRENT.get()
    if principal is not None:
        return principal
    from pipelines.serving.config import server_settings  # noqa: PLC0415

    settings = server_settings()
    if settings.keys_file().exists() or settings.jwt_key:
        raise http_error(401, "this server has API keys: start it with `lexhay serve` so requests are authenticated")
    return LOCAL


def request_access(principal: Principal, body_access: Any) -> dict[str, Any] | None:
    """
    The `access` a request runs with: the principal's own, or, for a `gateway` key, the body's: the user the
    gateway acts for, validated and kept within the gateway: its tenant (a missing `tenant_id` is the gateway's),
    its cases when the key names cases, and roles among its own (default: its own roles but `gateway`).

    :raises HTTPException: 403 for a body `access` without the gateway role or outside the gateway's tenant,
        cases or roles.
    :raises ValueError: A malformed body `access` (422).
    """
    if principal.local:
        return body_access
    if body_access is None:
        return principal.access()
    if not principal.may("gateway"):
        raise http_error(403, "`access` in the request is for gateway keys only; this key's own access applies")
    if not isinstance(body_access, dict):
        check_access(body_access)  # raises the engine's own ValueError
    own_roles = sorted(principal.roles - {"gateway"}) or ["reader"]
    checked = check_access({"tenant_id": principal.tenant, "roles": own_roles, **body_access})
    if checked.get("tenant_id") != principal.tenant:
        raise http_error(403, f"a gateway acts within its own tenant ({principal.tenant!r}) only")
    if set(checked.get("roles") or ()) - set(own_roles):
        raise http_error(403, f"a gateway grants at most its own roles ({', '.join(own_roles)})")
    if principal.cases and ALL_CASES not in principal.cases:
        asked = set(checked.get("case_ids") or ()) | ({checked["case_id"]} if checked.get("case_id") else set())
        if not asked or asked - set(principal.cases):
            raise http_error(403, f"a gateway acts within its own cases ({', '.join(principal.cases)}) only")
    return checked


def index_owner(principal: Principal, body_access: Any, scope: str | None) -> tuple[dict[str, Any] | None, str | None]:
    """
    Who indexes, as `(access, scope)` for `LexHay.index`, which decides what that principal may write (its own
    tenant / group / user scope; `global` for admins only: `AccessDenied`, a 403).
    """
    return request_access(principal, body_access), scope


class JwtVerifier:
    """
    JWT bearer tokens of an identity provider (PyJWT), for deployments that authenticate users elsewhere: the
    signature (`LEXHAY_JWT_KEY`: a PEM public key file, or the shared secret for HS256; `LEXHAY_JWT_ALGORITHMS`),
    expiry, and `aud` / `iss` when configured are verified; the claims are the principal: `tenant_id` (or
    `tenant`), `sub` (the user; or `user_id`), `groups`, `cases`, `roles` (required, among `ROLES`).
    """

    def __init__(self, key: str, *, algorithms: list[str], audience: str | None = None,
                 issuer: str | None = None) -> None:
        from importlib.util import find_spec  # noqa: PLC0415

        from components.utils.extras import install_hint  # noqa: PLC0415

        if find_spec("jwt") is None:
            raise ValueError(install_hint("jwt", "LEXHAY_JWT_KEY") + " (and cryptography for RS / ES keys)")
        if not algorithms:
            raise ValueError("LEXHAY_JWT_ALGORITHMS must name at least one algorithm")
        path = Path(key)
        self.key = path.read_text(encoding="utf-8") if len(key) < 4096 and path.is_file() else key
        self.algorithms, self.audience, self.issuer = algorithms, audience or None, issuer or None

    def authenticate(self, token: str) -> Principal | None:
        """The principal of a valid token, or None (bad signature, expired, wrong audience / issuer, no tenant or
        roles)."""
        import jwt  # noqa: PLC0415

        required = ["exp", "sub"] + (["aud"] if self.audience else []) + (["iss"] if self.issuer else [])
        try:
            claims = jwt.decode(token, self.key, algorithms=self.algorithms, audience=self.audience,
                                issuer=self.issuer, options={"require": required})
        except jwt.PyJWTError:
            return None
        tenant = claims.get("tenant_id") or claims.get("tenant")
        roles = frozenset(r for r in claims.get("roles") or () if isinstance(r, str)) & frozenset(ROLES)

        def texts(name: str) -> tuple[str, ...]:
            value = claims.get(name) or ()
            return tuple(v for v in value if isinstance(v, str) and v.strip()) if isinstance(value, list) else ()

        if not isinstance(tenant, str) or not tenant.strip() or not roles:
            return None
        user = claims.get("user_id") or claims.get("sub")
        return Principal(key_id=f"jwt:{claims.get('iss') or ''}:{claims['sub']}", tenant=tenant.strip(),
                         user=user if isinstance(user, str) and user.strip() else None, groups=texts("groups"),
                         cases=texts("cases"), roles=roles)


def jwt_verifier(settings: Any) -> JwtVerifier | None:
    """The JWT verifier the server settings ask for (None when `LEXHAY_JWT_KEY` is unset)."""
    if not settings.jwt_key:
        return None
    algorithms = [a.strip() for a in settings.jwt_algorithms.split(",") if a.strip()]
    return JwtVerifier(settings.jwt_key, algorithms=algorithms, audience=settings.jwt_audience,
                       issuer=settings.jwt_issuer)


class KeyStore:
    """
    The API keys file: add, list, revoke, authenticate. Reloaded when the file changes, so `lexhay keys revoke`
    takes effect on a running server at its next request.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._stamp: tuple[float, int] | None = None
        self._entries: list[dict[str, Any]] = []

    def exists(self) -> bool:
        return self.path.exists()

    def _load(self) -> list[dict[str, Any]]:
        with self._lock:
            try:
                stat = self.path.stat()
            except FileNotFoundError:
                self._stamp, self._entries = None, []
                return []
            stamp = (stat.st_mtime, stat.st_size)
            if stamp != self._stamp:
                raw = yaml.safe_load(self.path.read_text(encoding="utf-8")) or {}
                entries = raw.get("keys") if isinstance(raw, dict) else None
                if not isinstance(entries, list):
                    raise ValueError(f"{self.path}: expected a mapping with a `keys` list")
                self._entries, self._stamp = [e for e in entries if isinstance(e, dict)], stamp
            return list(self._entries)

    def _save(self, entries: list[dict[str, Any]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            yaml.safe_dump({"keys": entries}, out, sort_keys=False, allow_unicode=True)
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.path)

    def add(self, *, tenant: str, roles: list[str], user: str | None = None, groups: list[str] | None = None,
            cases: list[str] | None = None, rate_limit: float | None = None) -> str:
        """
        Create a key; returns the key itself (shown once: only its hash is stored).

        :raises ValueError: No tenant, no or unknown roles, empty names, a negative rate limit.
        """
        if rate_limit is not None and rate_limit < 0:
            raise ValueError(f"rate_limit must be >= 0 requests a minute, got {rate_limit}")
        roles = sorted(set(roles or []))
        if not roles or set(roles) - set(ROLES):
            raise ValueError(f"roles must be one or more of {ROLES}, got {roles}")
        check_access({"tenant_id": tenant, "user_id": user, "group_ids": groups or None})  # same rules as `access`
        for case in cases or []:
            if not isinstance(case, str) or not case.strip():
                raise ValueError(f"case ids must be non-empty strings, got {case!r}")
        entries = self._load()
        key_id = secrets.token_hex(4)
        while any(e.get("id") == key_id for e in entries):
            key_id = secrets.token_hex(4)
        key = f"{KEY_PREFIX}_{key_id}_{secrets.token_urlsafe(32)}"
        entry: dict[str, Any] = {"id": key_id, "sha256": key_hash(key), "tenant": tenant.strip()}
        if user:
            entry["user"] = user.strip()
        if groups:
            entry["groups"] = [g.strip() for g in groups]
        if cases:
            entry["cases"] = [c.strip() for c in cases]
        entry["roles"] = roles
        if rate_limit is not None:
            entry["rate_limit"] = rate_limit
        entry["created"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        self._save([*entries, entry])
        return key

    def list(self) -> list[dict[str, Any]]:
        """The keys (without their hashes)."""
        return [{k: v for k, v in e.items() if k != "sha256"} for e in self._load()]

    def revoke(self, key_id: str) -> bool:
        """Remove a key by id; False when there is none."""
        entries = self._load()
        kept = [e for e in entries if e.get("id") != key_id]
        if len(kept) == len(entries):
            return False
        self._save(kept)
        return True

    def authenticate(self, key: str) -> Principal | None:
        """The principal of a key, or None (unknown, revoked or malformed: compared in constant time)."""
        parts = key.split("_", 2) if isinstance(key, str) else []
        key_id = parts[1] if len(parts) == 3 and parts[0] == KEY_PREFIX else ""
        entry = next((e for e in self._load() if e.get("id") == key_id), None) if key_id else None
        expected = str(entry.get("sha256", "")) if entry else _EMPTY_HASH
        if not hmac.compare_digest(key_hash(key or ""), expected) or entry is None:
            return None
        return Principal(
            key_id=key_id, tenant=entry.get("tenant"), user=entry.get("user"),
            groups=tuple(entry.get("groups") or ()), cases=tuple(entry.get("cases") or ()),
            roles=frozenset(entry.get("roles") or ()) & frozenset(ROLES),
            rate_limit=float(entry["rate_limit"]) if entry.get("rate_limit") is not None else None,
        )
