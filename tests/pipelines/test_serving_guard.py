"""
The guard, the OpenAI adapter and the key store in process: a small FastAPI app behind `Guard` / `OpenAICompat`,
called with Starlette's TestClient (no models). The same behaviours against the real server:
`tests/pipelines/test_serving_security.py`.
"""

import threading
import time

import pytest
from fastapi import FastAPI, File, HTTPException, UploadFile
from fastapi.responses import StreamingResponse
from starlette.testclient import TestClient

from pipelines.serving.auth import LOCAL, KeyStore, Principal, current_principal, index_owner, request_access
from pipelines.serving.config import ServerSettings
from pipelines.serving.guard import Guard, RateLimiter, Refused, required_action
from pipelines.serving.openai_compat import OpenAICompat


def make_app(tmp_path, *, keys: bool = True, **settings) -> tuple[TestClient, dict[str, str]]:
    store = KeyStore(tmp_path / "keys.yaml")
    made = {}
    if keys:
        made = {
            "reader": store.add(tenant="acme", roles=["reader"]),
            "writer": store.add(tenant="acme", user="ana", roles=["reader", "writer"]),
            "admin": store.add(tenant="ops", roles=["admin"]),
            "slow": store.add(tenant="acme", roles=["reader"], rate_limit=1),  # one a minute, no burst
        }
    release, entered = threading.Event(), threading.Event()
    app = FastAPI()

    @app.get("/status")
    def status() -> dict:
        principal = current_principal()  # set by the guard, seen in the endpoint's worker thread
        return {"key": principal.key_id, "tenant": principal.tenant}

    @app.post("/ask/run")
    def ask(body: dict) -> dict:
        if body.get("slow"):
            entered.set()
            release.wait(30)
        if body.get("fail"):
            raise HTTPException(422, "question must be a non-empty string")
        return {"ok": True}

    @app.post("/index/run")
    def index(files: list[UploadFile] = File(...)) -> dict:  # noqa: B008
        return {"files": len(files)}

    @app.get("/traces")
    def traces() -> dict:
        return {"traces": []}

    @app.get("/v1/models")
    def models() -> dict:
        return {"object": "list", "data": [{"id": "ask"}, {"id": "retrieve"}]}

    @app.post("/v1/chat/completions")
    def chat(body: dict) -> StreamingResponse:
        return StreamingResponse(iter([b'data: {"x": 1}\n\n']), media_type="text/event-stream")

    config = ServerSettings(_env_file=None, store=str(tmp_path), **settings)
    app.add_middleware(Guard, settings=config, keys=store)
    app.add_middleware(OpenAICompat)
    client = TestClient(app, raise_server_exceptions=False)
    client.release, client.entered = release, entered  # type: ignore[attr-defined]
    return client, made


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_without_a_keys_file_every_request_is_the_local_operator(tmp_path):
    client, _ = make_app(tmp_path, keys=False)
    assert client.get("/status").json() == {"key": "local", "tenant": None}
    assert client.post("/index/run", files=[("files", ("a.md", b"x"))]).json() == {"files": 1}


def test_keys_401_403_and_the_principal_reaches_the_endpoint(tmp_path):
    client, keys = make_app(tmp_path)
    missing = client.get("/status")
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
    assert client.get("/status", headers=bearer(keys["reader"] + "x")).status_code == 401
    assert client.get("/status", headers={"Authorization": keys["reader"]}).status_code == 401  # no scheme
    assert client.get("/status", headers=bearer(keys["reader"])).json()["tenant"] == "acme"
    upload = [("files", ("a.md", b"x"))]
    denied = client.post("/index/run", files=upload, headers=bearer(keys["reader"]))
    assert denied.status_code == 403 and "may not write" in denied.json()["detail"]
    assert client.post("/index/run", files=upload, headers=bearer(keys["writer"])).json() == {"files": 1}
    assert client.get("/traces", headers=bearer(keys["writer"])).status_code == 403
    assert client.get("/traces", headers=bearer(keys["admin"])).status_code == 200
    assert client.get("/no-such-route").status_code == 401  # authentication first: unknown routes reveal nothing


def test_revoked_key_is_refused_at_once(tmp_path):
    client, keys = make_app(tmp_path)
    store = KeyStore(tmp_path / "keys.yaml")
    key_id = keys["reader"].split("_")[1]
    assert client.get("/status", headers=bearer(keys["reader"])).status_code == 200
    assert store.revoke(key_id) and not store.revoke(key_id)
    assert client.get("/status", headers=bearer(keys["reader"])).status_code == 401


def test_foreign_origins_are_refused_and_allowed_ones_pass(tmp_path):
    client, keys = make_app(tmp_path, cors_origins="https://app.example")
    foreign = client.post("/ask/run", json={}, headers={**bearer(keys["reader"]), "Origin": "https://evil.example"})
    assert foreign.status_code == 403 and "origin" in foreign.json()["detail"]
    preflight = client.options("/ask/run", headers={"Origin": "https://evil.example",
                                                    "Access-Control-Request-Method": "POST"})
    assert preflight.status_code == 403 and "access-control-allow-origin" not in preflight.headers
    allowed = client.post("/ask/run", json={}, headers={**bearer(keys["reader"]), "Origin": "https://app.example"})
    assert allowed.status_code == 200
    own = client.post("/ask/run", json={}, headers={**bearer(keys["reader"]), "Origin": "http://testserver"})
    assert own.status_code == 200  # the server's own pages (/docs) call it from its own origin
    spoofed = client.post("/ask/run", json={}, headers={**bearer(keys["reader"]), "Origin": "http://testserver.evil"})
    assert spoofed.status_code == 403


def test_body_limits_refuse_before_reading_everything(tmp_path):
    client, keys = make_app(tmp_path, max_body_mb=0.001, max_upload_mb=0.01, max_files=3)
    big = client.post("/ask/run", json={"question": "x" * 2000}, headers=bearer(keys["reader"]))
    assert big.status_code == 413 and "LEXHAY_MAX_BODY_MB" in big.json()["detail"]
    upload = client.post("/index/run", files=[("files", ("a.md", b"x" * 12000))], headers=bearer(keys["writer"]))
    assert upload.status_code == 413 and "LEXHAY_MAX_UPLOAD_MB" in upload.json()["detail"]
    many = [("files", (f"{n}.md", b"x")) for n in range(20)]
    refused = client.post("/index/run", files=many, headers=bearer(keys["writer"]))
    assert refused.status_code == 413 and "LEXHAY_MAX_FILES" in refused.json()["detail"]
    few = client.post("/index/run", files=many[:3], headers=bearer(keys["writer"]))
    assert few.status_code == 200 and few.json() == {"files": 3}

    def chunked():  # no content-length: counted as it is read
        for _ in range(5):
            yield b"x" * 400

    streamed = client.post("/ask/run", content=chunked(), headers={**bearer(keys["reader"]),
                                                                   "content-type": "application/json"})
    assert streamed.status_code == 413


def test_rate_limit_per_key_is_a_429_with_retry_after(tmp_path):
    client, keys = make_app(tmp_path)
    assert client.get("/status", headers=bearer(keys["slow"])).status_code == 200
    limited = client.get("/status", headers=bearer(keys["slow"]))
    assert limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1
    assert client.get("/status", headers=bearer(keys["reader"])).status_code == 200  # other keys are not limited


def test_concurrency_limit_per_key(tmp_path):
    client, keys = make_app(tmp_path, max_concurrent=1)
    results = []
    slow = threading.Thread(target=lambda: results.append(
        client.post("/ask/run", json={"slow": True}, headers=bearer(keys["reader"])).status_code))
    slow.start()
    assert client.entered.wait(30)  # the slow request holds the key's only slot
    second = client.get("/status", headers=bearer(keys["reader"]))
    other = client.get("/status", headers=bearer(keys["writer"])).status_code
    client.release.set()
    slow.join()
    assert second is not None and second.status_code == 429 and other == 200 and results == [200]
    assert client.get("/status", headers=bearer(keys["reader"])).status_code == 200  # its slot came back


def test_request_deadline_is_a_504(tmp_path):
    client, keys = make_app(tmp_path, request_timeout=1.0)
    # the endpoint waits for `release`, set 3 s on (the test client returns when the endpoint's thread ends)
    threading.Timer(3, client.release.set).start()
    late = client.post("/ask/run", json={"slow": True}, headers=bearer(keys["reader"]))
    assert late.status_code == 504 and "LEXHAY_REQUEST_TIMEOUT" in late.json()["detail"]
    # the key is served again, a quick request well inside the deadline (0.3 s had been too short on a loaded host)
    assert client.post("/ask/run", json={}, headers=bearer(keys["reader"])).json() == {"ok": True}


def test_openai_routes_get_openai_errors_chat_models_and_done(tmp_path):
    client, keys = make_app(tmp_path)
    unauthenticated = client.get("/v1/models")
    assert unauthenticated.status_code == 401
    assert unauthenticated.json()["error"]["type"] == "authentication_error"
    models = client.get("/v1/models", headers=bearer(keys["reader"])).json()
    assert models["data"] == [{"id": "ask"}, {"id": "retrieve"}]  # no hayhooks registry here: left as listed
    stream = client.post("/v1/chat/completions", json={}, headers=bearer(keys["reader"]))
    assert stream.text.endswith('data: {"x": 1}\n\ndata: [DONE]\n\n')
    assert client.get("/status").json() == {"detail": "this server needs an API key: send `Authorization: Bearer "
                                                      "<key>`"}  # other routes keep FastAPI's shape


def test_required_action_per_route():
    assert [required_action(p) for p in ("/index/run", "/traces/x", "/v1/files", "/ask/run", "/v1/models")] == [
        "write", "admin", "admin", "read", "read"]


def test_rate_limiter_counts_in_flight_requests():
    limiter = RateLimiter(per_minute=0, max_concurrent=2)
    limiter.enter("k")
    limiter.enter("k")
    with pytest.raises(Refused) as info:
        limiter.enter("k")
    assert info.value.status == 429
    limiter.leave("k")
    limiter.enter("k")


# --- keys and access ----------------------------------------------------------------------------------------------


def test_key_store_keeps_only_hashes_in_a_private_file(tmp_path):
    path = tmp_path / "sub" / "keys.yaml"
    store = KeyStore(path)
    key = store.add(tenant="acme", user="ana", groups=["laboral"], cases=["c1"], roles=["reader", "writer"])
    assert (path.stat().st_mode & 0o777) == 0o600
    assert key not in path.read_text() and key.split("_", 2)[2] not in path.read_text()  # the secret may hold "_"
    principal = store.authenticate(key)
    assert principal == Principal(key_id=key.split("_")[1], tenant="acme", user="ana", groups=("laboral",),
                                  cases=("c1",), roles=frozenset({"reader", "writer"}))
    assert principal.access() == {"tenant_id": "acme", "roles": ["reader", "writer"], "user_id": "ana",
                                  "group_ids": ["laboral"], "case_ids": ["c1"]}
    assert [e["id"] for e in store.list()] == [principal.key_id] and "sha256" not in store.list()[0]
    for bad in ("", "lxh", f"lxh_{principal.key_id}_wrong", key + "x", "Bearer " + key):
        assert store.authenticate(bad) is None
    with pytest.raises(ValueError, match="roles"):
        store.add(tenant="acme", roles=["root"])
    with pytest.raises(ValueError, match="roles"):
        store.add(tenant="acme", roles=[])
    with pytest.raises(ValueError, match="tenant_id"):
        store.add(tenant="  ", roles=["reader"])


def _principal(*roles, cases=()):
    return Principal(key_id="k1", tenant="acme", cases=tuple(cases), roles=frozenset(roles))


def test_request_access_is_the_keys_own_unless_a_gateway_acts_within_its_tenant():
    from fastapi import HTTPException

    reader = _principal("reader")
    assert request_access(reader, None) == {"tenant_id": "acme", "roles": ["reader"]}
    with pytest.raises(HTTPException) as info:
        request_access(reader, {"tenant_id": "acme", "user_id": "eve"})
    assert info.value.status_code == 403
    gateway = _principal("reader", "gateway")
    assert request_access(gateway, {"user_id": "ana"}) == {"tenant_id": "acme", "user_id": "ana", "roles": ["reader"]}
    for body, status in (({"tenant_id": "beta"}, 403), ({"roles": ["admin"]}, 403), ({"tenant": "x"}, None)):
        with pytest.raises((HTTPException, ValueError)) as info:
            request_access(gateway, body)
        if status:
            assert info.value.status_code == status
    cased = _principal("reader", "gateway", cases=["c1"])
    assert request_access(cased, {"user_id": "ana", "case_ids": ["c1"]})["case_ids"] == ["c1"]
    with pytest.raises(HTTPException):
        request_access(cased, {"user_id": "ana", "case_ids": ["c2"]})
    assert request_access(LOCAL, {"tenant_id": "any"}) == {"tenant_id": "any"}  # loopback mode: today's behaviour
    assert index_owner(_principal("writer"), None, "global") == ({"tenant_id": "acme", "roles": ["writer"]}, "global")


def test_a_stream_whose_client_leaves_stops_its_answer(tmp_path):
    """Through uvicorn: the client reads a few chunks and leaves; the answer stops and gives its engine turn back."""
    import httpx
    import uvicorn
    from haystack.dataclasses import StreamingChunk

    from pipelines.serving.chat import StreamCancelled, stream_answer
    from pipelines.serving.engine import Engine
    from tests.pipelines.serving_helpers import free_port

    class EndlessLex:
        def __init__(self) -> None:
            self.stopped = threading.Event()

        def ask(self, question, *, streaming_callback=None, **kwargs):
            try:
                while True:
                    streaming_callback(StreamingChunk(content="palabra "))
                    time.sleep(0.01)
            except StreamCancelled:
                self.stopped.set()
                raise

    lex = EndlessLex()
    engine = Engine(lex, readers=1, queue_timeout=1)
    app = FastAPI()
    held = []  # as a tracing wrapper may: the generator is never closed, so only the guard's signal can stop it

    @app.get("/stream")
    def stream() -> StreamingResponse:
        chunks = stream_answer(engine, {"question": "x"}, "lexhay", deadline_s=300)
        held.append(chunks)
        return StreamingResponse((f"data: {c.model_dump_json()}\n\n" for c in chunks), media_type="text/event-stream")

    app.add_middleware(Guard, settings=ServerSettings(_env_file=None, store=str(tmp_path)),
                       keys=KeyStore(tmp_path / "keys.yaml"))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        for _ in range(100):
            if server.started:
                break
            time.sleep(0.1)
        with httpx.Client(trust_env=False) as client, client.stream("GET", f"http://127.0.0.1:{port}/stream") as resp:
            lines = []
            for line in resp.iter_lines():
                lines.append(line)
                if len(lines) > 6:
                    break  # the client leaves mid-answer
        assert any("palabra" in line for line in lines)
        assert lex.stopped.wait(20)  # the LLM stopped at its next token
        assert engine.lock.acquire_exclusive(20)  # and the read turn came back
    finally:
        server.should_exit = True
        thread.join(10)


def test_jwt_bearer_tokens_of_an_identity_provider(tmp_path):
    jwt = pytest.importorskip("jwt")
    from pipelines.serving.auth import JwtVerifier

    secret = "s" * 32
    verifier = JwtVerifier(secret, algorithms=["HS256"], audience="lexhay", issuer="https://idp.example")
    now = int(time.time())
    claims = {"sub": "ana", "tenant_id": "acme", "groups": ["laboral"], "roles": ["reader", "writer", "root"],
              "aud": "lexhay", "iss": "https://idp.example", "exp": now + 60}
    principal = verifier.authenticate(jwt.encode(claims, secret, algorithm="HS256"))
    assert principal.access() == {"tenant_id": "acme", "roles": ["reader", "writer"], "user_id": "ana",
                                  "group_ids": ["laboral"]}
    assert principal.key_id == "jwt:https://idp.example:ana"
    refused = [
        jwt.encode(claims, "other-secret-" * 3, algorithm="HS256"),  # another signer
        jwt.encode({**claims, "exp": now - 10}, secret, algorithm="HS256"),  # expired
        jwt.encode({**claims, "aud": "other"}, secret, algorithm="HS256"),
        jwt.encode({**claims, "iss": "https://evil.example"}, secret, algorithm="HS256"),
        jwt.encode({k: v for k, v in claims.items() if k != "tenant_id"}, secret, algorithm="HS256"),
        jwt.encode({**claims, "roles": ["root"]}, secret, algorithm="HS256"),
        jwt.encode(claims, None, algorithm="none"),  # unsigned
        "not-a-token",
    ]
    assert [verifier.authenticate(token) for token in refused] == [None] * len(refused)

    store = KeyStore(tmp_path / "keys.yaml")  # no keys file: the tokens alone switch authentication on
    app = FastAPI()

    @app.get("/status")
    def status() -> dict:
        return {"key": current_principal().key_id}

    app.add_middleware(Guard, settings=ServerSettings(_env_file=None, store=str(tmp_path)), keys=store, jwt=verifier)
    client = TestClient(app)
    assert client.get("/status").status_code == 401
    good = jwt.encode(claims, secret, algorithm="HS256")
    assert client.get("/status", headers=bearer(good)).json() == {"key": "jwt:https://idp.example:ana"}
    assert client.get("/status", headers=bearer(refused[1])).status_code == 401
