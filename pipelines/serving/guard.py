"""
The server's gate: one ASGI middleware in front of every route (hayhooks' own included), before any body is read.

In order, for each HTTP request:

1. **Origin**: a request from a browser page of an origin not in `LEXHAY_CORS_ORIGINS` (nor the server's own) is a
   403 (this also stops the "simple" cross-site form posts that CORS alone lets through); allowed origins get CORS
   headers from the CORS middleware behind it (hayhooks', configured from the same setting).
2. **Authentication**: with a keys file (or `LEXHAY_JWT_KEY`: identity-provider tokens, `auth.JwtVerifier`),
   `Authorization: Bearer <key or token>` is required on every route (401 without or with an unknown key; 403
   when the key's roles do not cover the route: `/index/run` and `/sources/run` need writer, `/traces`, `/draw` and
   `/v1/files` need admin, everything else reader). The principal is set for the wrappers
   (`auth.current_principal`); admin keys are hayhooks' tracing operators (`request.state.tracing_operator`).
3. **Rate and concurrency**, per principal (key): at most `LEXHAY_RATE_LIMIT` requests a minute (bursts up to a
   sixth of it) and `LEXHAY_MAX_CONCURRENT` in flight; beyond, a 429 with `Retry-After`. The single-user loopback
   mode (no keys) has no such limits.
4. **Body size**: `LEXHAY_MAX_BODY_MB` for JSON requests, `LEXHAY_MAX_UPLOAD_MB` for a multipart index request
   (every file together), and at most `LEXHAY_MAX_FILES` parts: a 413 as soon as the declared length or the bytes
   read so far exceed it, before the rest is read or spooled.
5. **Deadline**: a response that has not started within `LEXHAY_REQUEST_TIMEOUT` seconds is a 504 (the engine
   call finishes in the background and its turn is then released; streams end themselves at the same deadline).
6. **End of the request** (`request_done`): set when the response is over, including a stream whose client left
   (the server's write fails and the app returns): the answer still streaming for it stops at its next token.
"""

import contextvars
import json
import math
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import anyio

from pipelines.serving.auth import KEY_PREFIX, LOCAL, JwtVerifier, KeyStore, Principal, reset_principal, set_principal
from pipelines.serving.config import ServerSettings

Scope = dict[str, Any]

ADMIN_PREFIXES = ("/traces", "/draw", "/v1/files", "/files")
WRITE_PATHS = ("/index/run", "/sources/run")
MULTIPART_EXTRA_PARTS = 10  # form fields besides the files (collection, access, scope, paths)

_REQUEST_DONE: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar("lexhay_request_done",
                                                                                       default=None)


def request_done() -> threading.Event | None:
    """
    An event set when the current request is over for the server: answered, past its deadline, or abandoned by its
    client (a stream whose client left). Work still running for it (an answer being streamed) stops when it is set.
    None outside a guarded request.
    """
    return _REQUEST_DONE.get()


class Refused(Exception):
    """A request the guard answers itself."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}


def required_action(path: str) -> str:
    """What a route needs: `write` (index, sources), `admin` (traces, drawings, file uploads) or `read`."""
    if path in WRITE_PATHS:
        return "write"
    if path.startswith(ADMIN_PREFIXES):
        return "admin"
    return "read"


class RateLimiter:
    """
    Per-principal token buckets (`per_minute` requests, bursts of a sixth of that) and in-flight counts; a key may
    carry its own rate (`rate_limit` in the keys file).
    """

    def __init__(self, per_minute: float, max_concurrent: int) -> None:
        self.per_minute = per_minute
        self.max_concurrent = max_concurrent
        self._lock = threading.Lock()
        self._buckets: dict[str, tuple[float, float]] = {}
        self._in_flight: dict[str, int] = {}

    def enter(self, who: str, per_minute: float | None = None) -> None:
        """Count a request in; `Refused(429)` when the principal is over its rate or concurrency."""
        per_minute = self.per_minute if per_minute is None else per_minute
        with self._lock:
            if self.max_concurrent and self._in_flight.get(who, 0) >= self.max_concurrent:
                raise Refused(429, f"too many requests in flight for this key (at most {self.max_concurrent})",
                              {"Retry-After": "1"})
            if per_minute:
                rate, burst = per_minute / 60.0, max(1.0, per_minute / 6.0)
                now = time.monotonic()
                tokens, last = self._buckets.get(who, (burst, now))
                tokens = min(burst, tokens + (now - last) * rate)
                if tokens < 1:
                    wait = math.ceil((1 - tokens) / rate)
                    raise Refused(429, f"rate limit: at most {per_minute:g} requests a minute for this key",
                                  {"Retry-After": str(wait)})
                self._buckets[who] = (tokens - 1, now)
            self._in_flight[who] = self._in_flight.get(who, 0) + 1

    def leave(self, who: str) -> None:
        with self._lock:
            self._in_flight[who] = self._in_flight.get(who, 1) - 1


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or []:
        if key.lower() == name:
            return value.decode("latin-1")
    return None


async def send_json(send: Any, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
    payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    raw += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": payload})


class Guard:
    """The ASGI middleware described in the module docstring."""

    def __init__(self, app: Any, *, settings: ServerSettings, keys: KeyStore, jwt: JwtVerifier | None = None) -> None:
        self.app = app
        self.settings = settings
        self.keys = keys
        self.jwt = jwt
        self.origins = set(settings.cors_origin_list)
        self.limiter = RateLimiter(settings.rate_limit, settings.max_concurrent)

    def principal(self, scope: Scope) -> Principal:
        if self.jwt is None and not self.keys.exists():
            return LOCAL
        auth = _header(scope, b"authorization") or ""
        scheme, _, token = auth.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Refused(401, "this server needs an API key: send `Authorization: Bearer <key>`",
                          {"WWW-Authenticate": "Bearer"})
        token = token.strip()
        is_key = token.startswith(f"{KEY_PREFIX}_") or self.jwt is None
        principal = self.keys.authenticate(token) if is_key else self.jwt.authenticate(token)
        if principal is None:
            raise Refused(401, "unknown or revoked API key", {"WWW-Authenticate": 'Bearer error="invalid_token"'})
        return principal

    def allowed_origin(self, scope: Scope) -> bool:
        """No `Origin` (not a browser), an allowed one, or the server's own (its `/docs` page; the Host header is
        checked by the trusted-host middleware in front)."""
        origin = _header(scope, b"origin")
        if origin is None or origin in self.origins:
            return True
        return urlsplit(origin).netloc.lower() == (_header(scope, b"host") or "").lower() != ""

    def check(self, scope: Scope) -> Principal:
        if not self.allowed_origin(scope):
            origin = _header(scope, b"origin")
            raise Refused(403, f"requests from the web origin {origin!r} are not allowed (LEXHAY_CORS_ORIGINS)")
        principal = self.principal(scope)
        action = required_action(scope.get("path", ""))
        if not principal.may(action):
            roles = ", ".join(sorted(principal.roles)) or "none"
            raise Refused(403, f"key {principal.key_id} (roles: {roles}) may not {action} on {scope.get('path')}")
        return principal

    def body_limit(self, scope: Scope) -> tuple[int, bool]:
        """The byte limit of this request's body and whether it is a multipart upload."""
        multipart = (_header(scope, b"content-type") or "").lower().startswith("multipart/")
        mb = self.settings.max_upload_mb if multipart else self.settings.max_body_mb
        return int(mb * 1024 * 1024), multipart

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        preflight = scope.get("method") == "OPTIONS" and _header(scope, b"access-control-request-method")
        try:
            principal = LOCAL if preflight and _header(scope, b"origin") in self.origins else self.check(scope)
            limit, multipart = self.body_limit(scope)
            declared = _header(scope, b"content-length")
            if declared and declared.isdigit() and int(declared) > limit:
                raise Refused(413, f"request body of {declared} bytes, at most {limit} "
                                   f"({'LEXHAY_MAX_UPLOAD_MB' if multipart else 'LEXHAY_MAX_BODY_MB'})")
            who = None if principal.local else principal.key_id
            if who is not None:
                self.limiter.enter(who, principal.rate_limit)
                if principal.may("admin"):  # hayhooks' hook for hosts that authenticate its traces routes
                    scope.setdefault("state", {})["tracing_operator"] = True
        except Refused as refused:
            await send_json(send, refused.status, {"detail": refused.message}, refused.headers)
            return
        try:
            await self._run(scope, receive, send, principal, limit, multipart)
        finally:
            if who is not None:
                self.limiter.leave(who)

    async def _run(self, scope: Scope, receive: Any, send: Any, principal: Principal, limit: int,
                   multipart: bool) -> None:
        state: dict[str, Any] = {"read": 0, "parts": 0, "tail": b"", "refused": None, "started": False,
                                 "replaced": False}
        boundary = b""
        if multipart:
            ctype = _header(scope, b"content-type") or ""
            for param in ctype.split(";")[1:]:
                name, _, value = param.strip().partition("=")
                if name.lower() == "boundary":
                    boundary = b"--" + value.strip('"').encode("latin-1")
        max_parts = self.settings.max_files + MULTIPART_EXTRA_PARTS

        async def guarded_receive() -> Any:
            message = await receive()
            if message["type"] == "http.request" and state["refused"] is None:
                body = message.get("body", b"")
                state["read"] += len(body)
                if state["read"] > limit:
                    setting = "LEXHAY_MAX_UPLOAD_MB" if multipart else "LEXHAY_MAX_BODY_MB"
                    state["refused"] = Refused(413, f"request body over {limit} bytes ({setting})")
                elif boundary:
                    window = state["tail"] + body
                    state["parts"] += window.count(boundary) - state["tail"].count(boundary)
                    state["tail"] = window[-len(boundary):]
                    if state["parts"] - 1 > max_parts:  # the closing boundary is not a part
                        state["refused"] = Refused(413, f"too many parts in one upload: at most "
                                                        f"{self.settings.max_files} files (LEXHAY_MAX_FILES)")
                if state["refused"] is not None:
                    raise state["refused"]
            return message

        async def guarded_send(message: Any) -> None:
            if state["replaced"]:
                return
            if message["type"] == "http.response.start":
                if state["refused"] is not None:  # the app answered a body we cut short: answer for it
                    state["replaced"] = True
                    refused = state["refused"]
                    await send_json(send, refused.status, {"detail": refused.message}, refused.headers)
                    return
                state["started"] = True
                started.set()
            await send(message)

        started = anyio.Event()
        done = threading.Event()
        token = set_principal(principal)  # copied into the app's task (and from there into its worker threads)
        done_token = _REQUEST_DONE.set(done)
        try:
            async with anyio.create_task_group() as group:

                async def run_app() -> None:
                    try:
                        await self.app(scope, guarded_receive, guarded_send)
                    except Refused as refused:  # a body cut short that the app did not answer for
                        if not state["started"] and not state["replaced"]:
                            state["replaced"] = True
                            await send_json(send, refused.status, {"detail": refused.message}, refused.headers)
                    finally:  # answered, cancelled at the deadline, or the client left mid-stream
                        state["done"] = True
                        done.set()
                        started.set()

                group.start_soon(run_app)
                with anyio.move_on_after(self.settings.request_timeout):
                    await started.wait()
                if not state.get("done") and not state["started"] and not state["replaced"]:
                    state["replaced"] = True
                    await send_json(send, 504, {"detail": f"no response within {self.settings.request_timeout:g} s "
                                                          "(LEXHAY_REQUEST_TIMEOUT)"})
                    group.cancel_scope.cancel()
        finally:
            done.set()
            _REQUEST_DONE.reset(done_token)
            reset_principal(token)
