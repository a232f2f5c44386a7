"""
An in-process stand-in for an OpenSearch server, for unit tests of the OpenSearch code paths (no server runs here).

`FakeOpenSearchServer.install(monkeypatch)` makes every `OpenSearchDocumentStore` talk to one shared fake server:
its client records each request body (`server.requests`) and evaluates the query subset opensearch-haystack and
lexhay send: `bool` (must / filter / should / must_not), `term`, `terms`, `range`, `exists`, `match_all` and a
`multi_match` scored with BM25 over lowercase, accent-folded word tokens. The real analyzer (stemming) is not
emulated; only the request shapes and the ranking plumbing are under test.
"""

import functools
import math
import re
import unicodedata
from typing import Any

STOPWORDS = {"de", "la", "el", "los", "las", "y", "a", "en", "por", "se", "del", "al", "un", "una", "que", "su"}


def tokens(text: Any) -> tuple[str, ...]:
    return _tokens(str(text or ""))


@functools.lru_cache(maxsize=4096)
def _tokens(text: str) -> tuple[str, ...]:
    folded = unicodedata.normalize("NFKD", text.lower())
    folded = "".join(c for c in folded if not unicodedata.combining(c))
    return tuple(t for t in re.findall(r"\w+", folded) if t not in STOPWORDS)


class _Indices:
    def __init__(self, server: "FakeOpenSearchServer") -> None:
        self.server = server

    def exists(self, index: str) -> bool:
        return index in self.server.indices

    def create(self, index: str, body: dict[str, Any]) -> dict[str, Any]:
        self.server.requests.append(("indices.create", index, body))
        self.server.indices[index] = {"body": body, "docs": {}}
        return {"acknowledged": True}

    def get_mapping(self, index: str) -> dict[str, Any]:
        return {index: {"mappings": self.server.indices[index]["body"].get("mappings", {})}}

    def delete(self, index: str) -> dict[str, Any]:
        self.server.indices.pop(index, None)
        return {"acknowledged": True}


class FakeOpenSearchClient:
    """What `opensearchpy.OpenSearch(...)` returns here: a client bound to the shared fake server."""

    def __init__(self, server: "FakeOpenSearchServer", **kwargs: Any) -> None:
        self.server = server
        self.kwargs = kwargs
        self.indices = _Indices(server)

    def search(self, index: str, body: dict[str, Any]) -> dict[str, Any]:
        self.server.requests.append(("search", index, body))
        docs = self.server.docs(index)
        scored = []
        for doc_id, source in docs.items():
            ok, score = _evaluate(body.get("query", {"match_all": {}}), source, docs)
            if ok:
                scored.append((score, doc_id, source))
        scored.sort(key=lambda item: (-item[0], item[1]))
        excluded = set((body.get("_source") or {}).get("excludes", []))
        hits = [
            {"_id": doc_id, "_score": score, "_source": {k: v for k, v in source.items() if k not in excluded}}
            for score, doc_id, source in scored[: body.get("size", 10)]
        ]
        return {"hits": {"hits": hits}}

    def count(self, index: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        docs = self.server.docs(index)
        if not body:
            return {"count": len(docs)}
        return {"count": sum(_evaluate(body["query"], source, docs)[0] for source in docs.values())}

    def close(self) -> None:
        self.server.closed += 1


class FakeOpenSearchServer:
    """Indices, documents and the recorded requests shared by every fake client (like one server)."""

    def __init__(self) -> None:
        self.indices: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str, Any]] = []
        self.clients: list[FakeOpenSearchClient] = []
        self.closed = 0

    def install(self, monkeypatch: Any) -> "FakeOpenSearchServer":
        from haystack_integrations.document_stores.opensearch import document_store

        monkeypatch.setattr(document_store, "OpenSearch", self.client)
        monkeypatch.setattr(document_store, "bulk", self.bulk)
        return self

    def client(self, **kwargs: Any) -> FakeOpenSearchClient:
        client = FakeOpenSearchClient(self, **kwargs)
        self.clients.append(client)
        return client

    def docs(self, index: str) -> dict[str, dict[str, Any]]:
        return self.indices[index]["docs"]

    def bulk(self, client: FakeOpenSearchClient, actions: Any, index: str, **kwargs: Any) -> tuple[int, list[Any]]:
        """`opensearchpy.helpers.bulk`: index / create / delete actions."""
        actions = list(actions)
        self.requests.append(("bulk", index, actions))
        docs, done, errors = self.docs(index), 0, []
        for action in actions:
            op, doc_id = action["_op_type"], action["_id"]
            if op == "delete":
                done += docs.pop(doc_id, None) is not None
            elif op == "create" and doc_id in docs:
                errors.append({"create": {"_id": doc_id, "error": {"type": "version_conflict_engine_exception"}}})
            else:
                docs[doc_id] = dict(action["_source"])
                done += 1
        return done, errors

    def searches(self, index: str | None = None) -> list[dict[str, Any]]:
        return [body for kind, name, body in self.requests if kind == "search" and index in (None, name)]


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _values(source: dict[str, Any], field: str) -> list[Any]:
    field = field.removesuffix(".keyword")
    return [v for v in _as_list(source.get(field)) if v is not None]


def _evaluate(query: dict[str, Any], source: dict[str, Any], docs: dict[str, Any]) -> tuple[bool, float]:
    (kind, spec), = query.items()
    if kind == "match_all":
        return True, 1.0
    if kind == "bool":
        score = 0.0
        for clause in _as_list(spec.get("must", [])) + _as_list(spec.get("filter", [])):
            ok, s = _evaluate(clause, source, docs)
            if not ok:
                return False, 0.0
            score += s if clause in _as_list(spec.get("must", [])) else 0.0
        for clause in _as_list(spec.get("must_not", [])):
            if _evaluate(clause, source, docs)[0]:
                return False, 0.0
        should = [_evaluate(c, source, docs) for c in _as_list(spec.get("should", []))]
        if should and not spec.get("must") and not spec.get("filter") and not any(ok for ok, _ in should):
            return False, 0.0
        return True, score + sum(s for ok, s in should if ok)
    if kind == "term":
        (field, value), = spec.items()
        value = value["value"] if isinstance(value, dict) else value
        return value in _values(source, field), 0.0
    if kind == "terms":
        (field, values), = spec.items()
        return any(v in values for v in _values(source, field)), 0.0
    if kind == "exists":
        return bool(_values(source, spec["field"])), 0.0
    if kind == "range":
        (field, bounds), = spec.items()
        ops = {
            "gt": lambda a, b: a > b, "gte": lambda a, b: a >= b, "lt": lambda a, b: a < b, "lte": lambda a, b: a <= b
        }
        vals = _values(source, field)
        return any(all(ops[op](v, b) for op, b in bounds.items()) for v in vals), 0.0
    if kind == "multi_match":
        score = sum(_bm25(spec["query"], field, source, docs) for field in spec.get("fields", ["content"]))
        return score > 0, score
    raise NotImplementedError(f"fake OpenSearch does not evaluate {kind!r} queries")


def _bm25(query: str, field: str, source: dict[str, Any], docs: dict[str, Any], k1=1.2, b=0.75) -> float:
    field = field.split("^")[0]
    doc_tokens = tokens(source.get(field))
    if not doc_tokens:
        return 0.0
    lengths = [len(tokens(d.get(field))) for d in docs.values()]
    avg = sum(lengths) / max(len(lengths), 1) or 1.0
    score = 0.0
    for term in set(tokens(query)):
        tf = doc_tokens.count(term)
        if not tf:
            continue
        df = sum(1 for d in docs.values() if term in tokens(d.get(field)))
        idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
        score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(doc_tokens) / avg))
    return score
