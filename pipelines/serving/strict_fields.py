"""
Unknown fields of a JSON request to a pipeline route are an error, not silently dropped (an ASGI middleware).

hayhooks builds each `/{name}/run` request model from the wrapper's `run_api` signature, and pydantic models ignore
fields they do not declare. A misspelt field then changes what is asked without a word: `{"question": ...,
"filter": {"field": "meta.country", "operator": "==", "value": "br"}}` retrieved Spanish law as if no filter had
been sent, `"topk": 2` returned ten results. `StrictFields` answers such a body with a 422 in FastAPI's own shape
(`{"detail": [{"type": "extra_forbidden", "loc": ["body", name], "msg": ..., "input": ...}]}`), naming the fields
the route accepts. It reads the JSON body of the routes it knows (the size limit is the guard's, which runs before
it) and hands the same bytes on; other routes, the OpenAI-compatible ones included (their clients send fields of
their own), and multipart uploads pass untouched.
"""

import json
from typing import Any

from pipelines.serving.guard import send_json

EXTRA_FIELD_MESSAGE = "Extra inputs are not permitted; this route accepts: {fields}"


def run_route_fields(app: Any) -> dict[str, frozenset[str]]:
    """The JSON fields each `/{name}/run` route of a FastAPI app declares: its request model's fields."""
    fields = {}
    for route in getattr(app, "routes", []):
        path = getattr(route, "path", "")
        body = getattr(route, "body_field", None)
        model = getattr(getattr(body, "field_info", None), "annotation", None)
        if path.endswith("/run") and "POST" in (getattr(route, "methods", None) or ()) and hasattr(
            model, "model_fields"
        ):
            fields[path] = frozenset(model.model_fields)
    return fields


class StrictFields:
    """
    The ASGI middleware described in the module docstring.

    :param app: The ASGI app it wraps.
    :param routes: The FastAPI app whose `/{name}/run` routes are checked (`run_route_fields`, read at the first
        request: the routes are in place by then).
    """

    def __init__(self, app: Any, *, routes: Any) -> None:
        self.app = app
        self.routes = routes
        self._fields: dict[str, frozenset[str]] | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if self._fields is None and scope["type"] == "http":
            self._fields = run_route_fields(self.routes)
        accepted = (self._fields or {}).get(scope.get("path", "")) if scope["type"] == "http" else None
        content_type = next((v for k, v in scope.get("headers", []) if k.lower() == b"content-type"), b"")
        if accepted is None or scope.get("method") != "POST" or b"json" not in content_type.lower():
            await self.app(scope, receive, send)
            return
        chunks, more = [], True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client left: nothing to check
                await self.app(scope, _replay([message], receive), send)
                return
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            data = json.loads(body or b"null")
        except ValueError:  # FastAPI answers a malformed body itself
            data = None
        unknown = [name for name in data if name not in accepted] if isinstance(data, dict) else []
        if unknown:
            message = EXTRA_FIELD_MESSAGE.format(fields=", ".join(sorted(accepted)))
            detail = [{"type": "extra_forbidden", "loc": ["body", name], "msg": message, "input": data[name]}
                      for name in unknown]
            await send_json(send, 422, {"detail": detail})
            return
        await self.app(scope, _replay([{"type": "http.request", "body": body, "more_body": False}], receive), send)


def _replay(messages: list[dict[str, Any]], receive: Any) -> Any:
    """A `receive` that gives `messages` first, then what the client sends next (a disconnect)."""
    pending = list(messages)

    async def replayed() -> dict[str, Any]:
        return pending.pop(0) if pending else await receive()

    return replayed
