import asyncio
import http.server
import json
import threading
import time

import pytest
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.core.serialization import component_from_dict, component_to_dict
from haystack.dataclasses import ChatMessage
from haystack.tools import Tool
from pydantic import BaseModel

from components.generators import llm_backends
from components.generators.llm_backends import (
    LocalLlamaChatGenerator,
    chat_json,
    chat_text,
    default_chat_generator,
    parse_json_reply,
    strip_fences,
)
from tests.scripted_llm import ScriptedChatGenerator

QUESTION = [
    ChatMessage.from_system("Responde solo con JSON."),
    ChatMessage.from_user("¿Cuántos días de vacaciones tengo?"),
]


class FakeServer:
    """
    Stands in for llama.cpp's loopback server: an OpenAI-compatible HTTP endpoint on 127.0.0.1 that streams
    scripted chunks (server-sent events), records the request bodies, and notices a client that hangs up.
    """

    def __init__(self, pieces=("[", '"vacaciones', ' anuales"', "]"), delay=0.0, error=None, tool_call=None):
        self.pieces = list(pieces)
        self.delay = delay
        self.error = error
        self.tool_call = tool_call  # (name, arguments JSON) streamed as a tool call instead of text
        self.requests = []
        self.sent = 0
        self.stopped = False
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append({"path": self.path, **body})
                if fake.error:
                    payload = json.dumps({"error": {"code": 400, "message": fake.error,
                                                    "type": "invalid_request_error"}}).encode()
                    self.send_response(400)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                try:
                    fake.stream(self.wfile)
                except (BrokenPipeError, ConnectionResetError):
                    fake.stopped = True

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def stream(self, out):
        def send(choices, **extra):
            chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "fake",
                     "choices": choices, **extra}
            out.write(f"data: {json.dumps(chunk)}\n\n".encode())
            out.flush()

        send([{"index": 0, "delta": {"role": "assistant", "content": None}, "finish_reason": None}])
        finish = "stop"
        if self.tool_call:
            name, arguments = self.tool_call
            call = {"index": 0, "id": "call-1", "type": "function", "function": {"name": name, "arguments": arguments}}
            send([{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}])
            finish = "tool_calls"
        for piece in [] if self.tool_call else self.pieces:
            time.sleep(self.delay)
            send([{"index": 0, "delta": {"content": piece}, "finish_reason": None}])
            self.sent += 1
        send([{"index": 0, "delta": {}, "finish_reason": finish}])
        send([], usage={"prompt_tokens": 30, "completion_tokens": 4, "total_tokens": 34},
             timings={"predicted_per_second": 12.5})
        out.write(b"data: [DONE]\n\n")
        out.flush()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def fake_model(tmp_path, monkeypatch):
    """A GGUF path whose 'loaded model' is a FakeServer (nothing is loaded by llama.cpp)."""
    path = tmp_path / "fake.gguf"
    path.write_bytes(b"GGUF")
    server = FakeServer()
    loaded = llm_backends._LoadedModel(None, 8192, 1, server.base_url)
    monkeypatch.setitem(llm_backends._MODELS, str(path), loaded)
    yield str(path), server
    server.close()


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    for var in ("LEXHAY_LLM", "LEXHAY_LLM_BASE_URL", "LEXHAY_LLM_MODEL", "LEXHAY_LLM_TIMEOUT", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    # set then delete: pytest restores "unset" at teardown even if default_chat_generator sets it
    monkeypatch.setenv("LEXHAY_LLM_API_KEY", "placeholder")
    monkeypatch.delenv("LEXHAY_LLM_API_KEY")
    monkeypatch.setenv("LEXHAY_MODELS_DIR", str(tmp_path / "no-models"))
    return monkeypatch


def test_init_defaults_and_validation():
    llm = LocalLlamaChatGenerator()
    assert (llm.model, llm.n_ctx, llm.n_threads, llm.timeout) == ("qwen2.5-coder-1.5b", 8192, None, None)
    assert llm.generation_kwargs == {}
    with pytest.raises(ValueError, match="model"):
        LocalLlamaChatGenerator(model=" ")
    with pytest.raises(ValueError, match="n_ctx"):
        LocalLlamaChatGenerator(n_ctx=16)
    with pytest.raises(ValueError, match="n_threads"):
        LocalLlamaChatGenerator(n_threads=0)
    with pytest.raises(ValueError, match="timeout"):
        LocalLlamaChatGenerator(timeout=0)


def test_to_dict_from_dict_round_trip():
    llm = LocalLlamaChatGenerator(model="qwen2.5-coder-0.5b", n_ctx=2048, n_threads=2,
                                  generation_kwargs={"max_tokens": 64}, timeout=30.0)
    data = component_to_dict(llm, name="llm")
    assert data == {
        "type": "components.generators.llm_backends.LocalLlamaChatGenerator",
        "init_parameters": {"model": "qwen2.5-coder-0.5b", "n_ctx": 2048, "n_threads": 2,
                            "generation_kwargs": {"max_tokens": 64}, "timeout": 30.0},
    }
    restored = component_from_dict(LocalLlamaChatGenerator, data, name="llm")
    assert restored.to_dict() == data
    assert restored._loaded is None  # deserializing never loads the model


def test_missing_model_names_make_models_llm(clean_env, tmp_path):
    with pytest.raises(RuntimeError, match="make models-llm"):
        LocalLlamaChatGenerator(model="qwen2.5-coder-0.5b").warm_up()
    with pytest.raises(RuntimeError, match="make models-llm"):
        LocalLlamaChatGenerator(model=str(tmp_path / "missing.gguf")).warm_up()


def test_warm_up_is_idempotent_and_shares_the_model(fake_model):
    path, _ = fake_model
    first, second = LocalLlamaChatGenerator(model=path), LocalLlamaChatGenerator(model=path)
    first.warm_up()
    loaded = first._loaded
    first.warm_up()
    second.warm_up()
    assert first._loaded is loaded is second._loaded is llm_backends._MODELS[path]


def test_run_assembles_the_streamed_reply(fake_model):
    path, server = fake_model
    llm = LocalLlamaChatGenerator(model=path, generation_kwargs={"max_tokens": 64})
    reply = llm.run(messages=QUESTION, generation_kwargs={"seed": 7})["replies"][0]
    assert reply.text == '["vacaciones anuales"]'
    assert reply.meta["finish_reason"] == "stop"
    assert reply.meta["usage"]["completion_tokens"] == 4
    assert reply.meta["timings"]["predicted_per_second"] == 12.5
    request = server.requests[0]
    assert request["path"] == "/v1/chat/completions"  # the OpenAI protocol, on the loopback server
    assert request["messages"] == [{"role": "system", "content": "Responde solo con JSON."},
                                   {"role": "user", "content": "¿Cuántos días de vacaciones tengo?"}]
    assert (request["temperature"], request["max_tokens"], request["seed"], request["stream"]) == (0.0, 64, 7, True)
    assert request["stream_options"] == {"include_usage": True}


def test_run_maps_a_pydantic_response_format_to_a_json_schema(fake_model):
    class Queries(BaseModel):
        queries: list[str]

    path, server = fake_model
    LocalLlamaChatGenerator(model=path).run(messages=QUESTION, generation_kwargs={"response_format": Queries})
    response_format = server.requests[0]["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["schema"]["properties"]["queries"]["type"] == "array"


def test_run_timeout_stops_the_generation(fake_model):
    path, server = fake_model
    server.pieces = ["palabra "] * 200
    server.delay = 0.01
    llm = LocalLlamaChatGenerator(model=path, timeout=0.2)
    started = time.perf_counter()
    with pytest.raises(TimeoutError):
        llm.run(messages=QUESTION)
    assert time.perf_counter() - started < 1.0
    deadline = time.perf_counter() + 2
    while not server.stopped and time.perf_counter() < deadline:
        time.sleep(0.02)
    assert server.stopped and server.sent < 200


def test_run_reports_backend_errors(fake_model):
    path, server = fake_model
    server.error = "failed to parse grammar"
    with pytest.raises(RuntimeError, match="llama.cpp failed: failed to parse grammar"):
        LocalLlamaChatGenerator(model=path).run(messages=QUESTION)
    with pytest.raises(TypeError, match="ChatMessage"):
        LocalLlamaChatGenerator(model=path).run(messages="hola")


def test_default_chat_generator_none_without_llm(clean_env):
    assert default_chat_generator() is None  # no endpoint configured, local model not installed
    clean_env.setenv("OPENAI_API_KEY", "sk-test")
    clean_env.setenv("LEXHAY_LLM", "none")
    assert default_chat_generator() is None


def test_default_chat_generator_openai(clean_env):
    clean_env.setenv("OPENAI_API_KEY", "sk-test")
    llm = default_chat_generator()
    assert isinstance(llm, OpenAIChatGenerator)
    assert (llm.model, llm.api_base_url, llm.timeout, llm.max_retries) == ("gpt-4o-mini", None, 60.0, 1)
    assert llm.api_key.resolve_value() == "sk-test"
    assert llm.to_dict()["init_parameters"]["api_key"]["env_vars"] == ["OPENAI_API_KEY", "LEXHAY_LLM_API_KEY"]


def test_default_chat_generator_local_endpoint_without_key(clean_env):
    clean_env.setenv("LEXHAY_LLM_BASE_URL", "http://127.0.0.1:11434/v1")
    clean_env.setenv("LEXHAY_LLM_MODEL", "qwen2.5:1.5b")
    clean_env.setenv("LEXHAY_LLM_TIMEOUT", "12")
    llm = default_chat_generator()
    assert isinstance(llm, OpenAIChatGenerator)
    assert (llm.model, llm.api_base_url, llm.timeout) == ("qwen2.5:1.5b", "http://127.0.0.1:11434/v1", 12.0)
    assert llm.api_key.resolve_value() == llm_backends.NO_KEY
    clean_env.setenv("LEXHAY_LLM_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="LEXHAY_LLM_TIMEOUT"):
        default_chat_generator()


def test_default_chat_generator_local_model(clean_env, fake_model):
    path, _ = fake_model
    clean_env.setenv("LEXHAY_LLM", path)
    llm = default_chat_generator(timeout=5)
    assert isinstance(llm, LocalLlamaChatGenerator)
    assert (llm.model, llm.timeout) == (path, 5)
    clean_env.setenv("LEXHAY_LLM", "no-such-model")
    assert default_chat_generator() is None


def test_strip_fences_and_parse_json_reply():
    assert strip_fences('```json\n["a b c"]\n```') == '["a b c"]'
    assert strip_fences("  [1]  ") == "[1]"
    assert parse_json_reply('```\n["despido objetivo", "despido disciplinario"]\n```') == [
        "despido objetivo", "despido disciplinario"]
    assert parse_json_reply('Aquí tienes: ["vacaciones anuales"] Espero que sirva.') == ["vacaciones anuales"]
    assert parse_json_reply('{"queries": ["paro"]}') == {"queries": ["paro"]}
    assert parse_json_reply('["vacaciones anuales') is None
    assert parse_json_reply("vacaciones anuales retribuidas") is None


def test_chat_json_parses_replies_and_never_raises():
    llm = ScriptedChatGenerator(replies=['```json\n["vacaciones anuales retribuidas"]\n```', "no es json"])
    assert chat_json(llm, QUESTION, schema={"type": "array"}) == (
        ["vacaciones anuales retribuidas"], '```json\n["vacaciones anuales retribuidas"]\n```')
    assert chat_json(llm, QUESTION) == (None, "no es json")
    assert llm.generation_kwargs == [None, None]  # schemas only become grammars for the local backend
    assert chat_json(llm, QUESTION) == (None, "")  # script exhausted: the error is logged, not raised
    assert chat_json(ScriptedChatGenerator(error="connection refused"), QUESTION) == (None, "")
    assert chat_text(ScriptedChatGenerator(replies=["   "]), QUESTION) is None


def test_chat_json_timeout():
    slow = ScriptedChatGenerator(replies=['["tarde"]'], delay=2.0)
    started = time.perf_counter()
    assert chat_json(slow, QUESTION, timeout=0.2) == (None, "")
    assert time.perf_counter() - started < 1.0


def test_chat_json_sends_the_schema_as_a_grammar_to_the_local_backend(fake_model):
    path, server = fake_model
    schema = {"type": "array", "items": {"type": "string"}, "maxItems": 4}
    parsed, raw = chat_json(LocalLlamaChatGenerator(model=path), QUESTION, schema=schema)
    assert parsed == ["vacaciones anuales"] and raw == '["vacaciones anuales"]'
    assert server.requests[0]["response_format"] == {
        "type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}


def test_run_streams_each_text_piece_to_the_callback(fake_model):
    path, _ = fake_model
    pieces = []
    reply = LocalLlamaChatGenerator(model=path).run(messages=QUESTION, streaming_callback=pieces.append)["replies"][0]
    assert len(pieces) > 1 and "".join(p.content for p in pieces) == reply.text == '["vacaciones anuales"]'


def test_chat_text_streams_only_to_generators_that_take_a_callback(fake_model):
    from tests.scripted_llm import ScriptedChatGenerator

    path, _ = fake_model
    pieces = []
    assert chat_text(LocalLlamaChatGenerator(model=path), QUESTION, streaming_callback=pieces.append) == (
        '["vacaciones anuales"]')
    assert pieces
    # a generator without streaming still answers (no TypeError swallowed into a fallback)
    assert chat_text(ScriptedChatGenerator(replies=["hola"]), QUESTION, streaming_callback=pieces.append) == "hola"


def test_default_timeouts_local_model_longer_than_endpoint_and_env_wins(clean_env, fake_model):
    path, _ = fake_model
    clean_env.setenv("LEXHAY_LLM", path)
    assert default_chat_generator().timeout == 180.0  # the bundled CPU model
    clean_env.setenv("LEXHAY_LLM_TIMEOUT", "30")
    assert default_chat_generator().timeout == 30.0
    clean_env.delenv("LEXHAY_LLM_TIMEOUT")
    clean_env.setenv("OPENAI_API_KEY", "sk-test")
    assert default_chat_generator().timeout == 60.0


def test_calls_abandoned_at_their_deadline_are_awaited_at_exit(monkeypatch):
    import threading

    from components.generators import llm_backends

    release = threading.Event()
    monkeypatch.setattr(llm_backends, "_ABANDONED", [])
    with pytest.raises(TimeoutError):
        llm_backends._run_with_deadline(lambda: release.wait(5), timeout=0.05)
    (worker,) = llm_backends._ABANDONED
    assert worker.is_alive()
    release.set()
    llm_backends._join_abandoned()  # what atexit runs: the native call is never torn down mid-flight
    assert not worker.is_alive()


def test_llama_cpp_kwargs_become_a_response_format_or_travel_in_the_body(fake_model):
    path, server = fake_model
    schema = {"type": "array", "items": {"type": "string"}}
    LocalLlamaChatGenerator(model=path).run(messages=QUESTION, generation_kwargs={"json_schema": schema, "top_k": 1})
    LocalLlamaChatGenerator(model=path).run(messages=QUESTION, generation_kwargs={"grammar": 'root ::= "[]"'})
    first, second = server.requests
    assert first["response_format"] == {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}
    assert first["top_k"] == 1 and "json_schema" not in first
    assert second["grammar"] == 'root ::= "[]"' and "response_format" not in second


def test_streaming_chunks_end_with_the_finish_reason_and_usage(fake_model):
    path, _ = fake_model
    chunks = []
    reply = LocalLlamaChatGenerator(model=path).run(messages=QUESTION, streaming_callback=chunks.append)["replies"][0]
    assert [c.finish_reason for c in chunks if c.finish_reason] == ["stop"]
    assert chunks[-1].meta["usage"]["total_tokens"] == 34
    assert reply.meta["usage"] == {"prompt_tokens": 30, "completion_tokens": 4, "total_tokens": 34,
                                   "completion_tokens_details": None, "prompt_tokens_details": None}
    with pytest.raises(ValueError, match="run_async"):
        LocalLlamaChatGenerator(model=path).run(messages=QUESTION, streaming_callback=_async_callback)


async def _async_callback(chunk):
    pass


def test_tool_calls_come_back_as_tool_calls(fake_model):
    path, server = fake_model
    server.tool_call = ("buscar_articulo", '{"ley": "ET", "articulo": "38"}')
    tool = Tool(name="buscar_articulo", description="Busca un artículo de una ley.",
                parameters={"type": "object", "properties": {"ley": {"type": "string"},
                                                             "articulo": {"type": "string"}}},
                function=lambda ley, articulo: f"{ley} {articulo}")
    reply = LocalLlamaChatGenerator(model=path).run(messages=QUESTION, tools=[tool])["replies"][0]
    (call,) = reply.tool_calls
    assert (call.tool_name, call.arguments) == ("buscar_articulo", {"ley": "ET", "articulo": "38"})
    assert reply.meta["finish_reason"] == "tool_calls"
    assert server.requests[0]["tools"][0]["function"]["name"] == "buscar_articulo"


def test_run_async_streams_and_times_out(fake_model):
    path, server = fake_model
    pieces = []

    async def collect(chunk):
        pieces.append(chunk.content)

    reply = asyncio.run(LocalLlamaChatGenerator(model=path).run_async(messages=QUESTION, streaming_callback=collect))
    assert reply["replies"][0].text == '["vacaciones anuales"]' == "".join(pieces)
    server.pieces = ["palabra "] * 200
    server.delay = 0.01
    with pytest.raises(TimeoutError):
        asyncio.run(LocalLlamaChatGenerator(model=path, timeout=0.2).run_async(messages=QUESTION))
    deadline = time.perf_counter() + 2
    while not server.stopped and time.perf_counter() < deadline:
        time.sleep(0.02)
    assert server.stopped and server.sent < 200


@pytest.mark.model
def test_bundled_model_over_the_openai_protocol():
    from components.utils.models import is_installed

    if not is_installed("qwen2.5-coder-0.5b"):
        pytest.skip("qwen2.5-coder-0.5b is not installed (lexhay models install qwen2.5-coder-0.5b)")
    llm = LocalLlamaChatGenerator(model="qwen2.5-coder-0.5b", n_ctx=2048, timeout=240,
                                  generation_kwargs={"max_tokens": 48})
    schema = {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3}
    parsed, raw = chat_json(llm, [ChatMessage.from_user(
        "Devuelve 2 palabras clave jurídicas para: ¿cuántos días de vacaciones tengo?")], schema=schema)
    assert isinstance(parsed, list) and 1 <= len(parsed) <= 3 and all(isinstance(k, str) for k in parsed), raw
    chunks = []
    reply = llm.run(messages=[ChatMessage.from_user("Di hola.")], streaming_callback=chunks.append,
                    generation_kwargs={"max_tokens": 8})["replies"][0]
    assert reply.text and "".join(c.content for c in chunks) == reply.text
    assert reply.meta["finish_reason"] in ("stop", "length")
    assert [c.finish_reason for c in chunks if c.finish_reason] == [reply.meta["finish_reason"]]
    assert reply.meta["usage"]["prompt_tokens"] > 0 and 0 < reply.meta["usage"]["completion_tokens"] <= 8
    assert reply.meta["timings"]["predicted_n"] == reply.meta["usage"]["completion_tokens"]
    assert llm._loaded.base_url.startswith("http://127.0.0.1:")


def test_default_chat_generator_follows_the_settings_it_is_given(clean_env, fake_model):
    from pipelines.settings import Settings

    path, _ = fake_model
    clean_env.setenv("OPENAI_API_KEY", "sk-test")  # the environment alone would choose OpenAI ...
    assert default_chat_generator(settings=Settings(llm="none")) is None  # ... these settings turn the LLM off
    local = default_chat_generator(settings=Settings(llm=path, openai_api_key=None, llm_timeout=7))
    assert isinstance(local, LocalLlamaChatGenerator) and (local.model, local.timeout) == (path, 7)
