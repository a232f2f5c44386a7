"""`StrictFields`: a field a pipeline route does not declare is a 422 (a misspelt `filter` used to be dropped)."""

from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel
from starlette.testclient import TestClient

from pipelines.serving.auth import KeyStore
from pipelines.serving.config import ServerSettings
from pipelines.serving.guard import Guard
from pipelines.serving.strict_fields import StrictFields, run_route_fields


class RetrieveRunRequest(BaseModel):  # what hayhooks builds from a wrapper's `run_api` signature
    question: str
    top_k: int = 10
    filters: dict[str, Any] | None = None


def make_client(tmp_path) -> tuple[TestClient, str]:
    keys = KeyStore(tmp_path / "keys.yaml")
    key = keys.add(tenant="acme", roles=["reader"])
    app = FastAPI()

    @app.post("/retrieve/run")
    def retrieve(run_req: RetrieveRunRequest) -> dict:
        return {"question": run_req.question, "top_k": run_req.top_k, "filters": run_req.filters}

    @app.post("/v1/chat/completions")
    def chat(body: dict) -> dict:
        return {"fields": sorted(body)}

    app.add_middleware(StrictFields, routes=app)
    app.add_middleware(Guard, settings=ServerSettings(_env_file=None, store=str(tmp_path), max_body_mb=0.001),
                       keys=keys)
    return TestClient(app, raise_server_exceptions=False), key


def test_run_route_fields_are_the_request_models_fields():
    app = FastAPI()

    @app.post("/retrieve/run")
    def retrieve(run_req: RetrieveRunRequest) -> dict:
        return {}

    @app.get("/status")
    def status() -> dict:
        return {}

    assert run_route_fields(app) == {"/retrieve/run": frozenset({"question", "top_k", "filters"})}


def test_a_misspelt_field_is_a_422_naming_it_and_the_accepted_ones(tmp_path):
    client, key = make_client(tmp_path)
    auth = {"Authorization": f"Bearer {key}"}
    country = {"field": "meta.country", "operator": "==", "value": "br"}
    response = client.post("/retrieve/run", headers=auth, json={"question": "férias", "filter": country, "topk": 2})
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert [(d["type"], d["loc"], d["input"]) for d in detail] == [
        ("extra_forbidden", ["body", "filter"], country), ("extra_forbidden", ["body", "topk"], 2)]
    assert "filters, question, top_k" in detail[0]["msg"]
    # the declared fields reach the endpoint as sent (the body is handed on whole)
    ok = client.post("/retrieve/run", headers=auth, json={"question": "férias", "filters": country, "top_k": 2})
    assert ok.status_code == 200 and ok.json() == {"question": "férias", "top_k": 2, "filters": country}


def test_other_routes_bad_json_and_the_guards_refusals_are_left_as_they_were(tmp_path):
    client, key = make_client(tmp_path)
    auth = {"Authorization": f"Bearer {key}"}
    # OpenAI clients send fields of their own
    chat = client.post("/v1/chat/completions", headers=auth, json={"model": "lexhay", "temperature": 0.2})
    assert chat.status_code == 200 and chat.json() == {"fields": ["model", "temperature"]}
    # a malformed body is FastAPI's 422; no key is the guard's 401 before any body is read; too big, its 413
    bad = client.post("/retrieve/run", headers={**auth, "content-type": "application/json"}, content=b"{not json")
    assert bad.status_code == 422 and bad.json()["detail"][0]["type"] == "json_invalid"
    assert client.post("/retrieve/run", json={"question": "x", "filter": {}}).status_code == 401
    huge = client.post("/retrieve/run", headers=auth, json={"question": "x" * 5000, "filter": {}})
    assert huge.status_code == 413
