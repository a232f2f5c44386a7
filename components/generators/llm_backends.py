# SPDX-License-Identifier: Apache-2.0
"""
LLM backends for the answer loop: a Haystack chat generator for the bundled GGUF (llama.cpp's OpenAI-compatible
server, started in-process on loopback and driven by Haystack's `OpenAIChatGenerator`), the choice of the default
generator from the environment, and never-raising helpers to call any generator.

Every LLM stage of lexhay takes a Haystack chat generator (`OpenAIChatGenerator` for any OpenAI-compatible
endpoint, `LocalLlamaChatGenerator` for the bundled Qwen2.5-Coder GGUF, or any component with the same
`run(messages, generation_kwargs)` interface) and falls back to a deterministic path when the call fails.
`chat_text` / `chat_json` make that failure a return value instead of an exception.

Settings followed by `default_chat_generator` (`pipelines.settings`, from these variables):

- `LEXHAY_LLM_BASE_URL`, `OPENAI_API_KEY`, `LEXHAY_LLM_MODEL`: an OpenAI-compatible endpoint (OpenAI, Azure,
  Ollama, vLLM, a llama.cpp server). `LEXHAY_LLM_API_KEY` is the key of a base URL that is not OpenAI's.
- `LEXHAY_LLM`: `none` disables every LLM stage; otherwise the local model (registry name or GGUF path,
  default `qwen2.5-coder-1.5b`) used when no endpoint is configured.
- `LEXHAY_LLM_TIMEOUT`: seconds allowed to one LLM call (default 60).
"""

import asyncio
import atexit
import inspect
import json
import os
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from haystack import component, default_from_dict, default_to_dict, logging
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.core.serialization import component_to_dict
from haystack.dataclasses import ChatMessage, StreamingCallbackT, StreamingChunk
from haystack.tools import ToolsType
from haystack.utils import Secret, deserialize_chatgenerator_inplace

from components.utils.models import REGISTRY, is_installed, resolve_model

logger = logging.getLogger(__name__)

LLM_ENV = "LEXHAY_LLM"
LLM_BASE_URL_ENV = "LEXHAY_LLM_BASE_URL"
LLM_MODEL_ENV = "LEXHAY_LLM_MODEL"
LLM_API_KEY_ENV = "LEXHAY_LLM_API_KEY"
LLM_TIMEOUT_ENV = "LEXHAY_LLM_TIMEOUT"
DEFAULT_LOCAL_MODEL = "qwen2.5-coder-1.5b"
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
DEFAULT_TIMEOUT = 60.0
# the bundled model runs on the CPU: the 1.5B needs over a minute for an answer prompt on 2 cores
DEFAULT_LOCAL_TIMEOUT = 180.0
# at exit, how long to wait for calls abandoned at their deadline (llama.cpp must not be torn down mid-call)
EXIT_WAIT = 300.0
_ABANDONED: list[threading.Thread] = []


def _join_abandoned() -> None:
    """Wait (bounded) for LLM calls abandoned at their deadline, so the native backend is not killed mid-call."""
    deadline = time.monotonic() + EXIT_WAIT
    for worker in list(_ABANDONED):
        worker.join(max(0.0, deadline - time.monotonic()))


atexit.register(_join_abandoned)
DISABLED_VALUES = ("none", "off", "false", "0")
# the key sent to an OpenAI-compatible server that needs none (Ollama, vLLM and llama.cpp servers ignore it)
NO_KEY = "sk-no-key-required"
DEFAULT_GENERATION_KWARGS: dict[str, Any] = {"temperature": 0.0, "max_tokens": 512}
INSTALL_HINT = "run `make models-llm` (or `lexhay models install {name}`)"

_FENCE = re.compile(r"^\s*```[\w-]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)
_JSON_SPAN = re.compile(r"(\[.*\]|\{.*\})", re.DOTALL)

T = TypeVar("T")


class _LoadedModel:
    """One GGUF served in this process: the xllamacpp server, its loopback OpenAI base URL and its settings."""

    def __init__(self, server: Any, n_ctx: int, n_threads: int, base_url: str) -> None:
        self.server = server
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.base_url = base_url


_MODELS: dict[str, _LoadedModel] = {}
_LOAD_LOCK = threading.Lock()
# seconds the loopback HTTP client waits for the next byte when a call has no deadline (llama.cpp's own default)
LOOPBACK_READ_TIMEOUT = 3600.0
# the OpenAI chat-completions parameters; any other generation kwarg (llama.cpp's `grammar`, `top_k`, `min_p`,
# `repeat_penalty`, ...) goes to the server in the request body (`extra_body`)
OPENAI_CHAT_PARAMS = frozenset(
    {
        "audio", "extra_body", "extra_headers", "extra_query", "frequency_penalty", "function_call", "functions",
        "logit_bias", "logprobs", "max_completion_tokens", "max_tokens", "metadata", "modalities", "n",
        "parallel_tool_calls", "prediction", "presence_penalty", "reasoning_effort", "response_format", "seed",
        "service_tier", "stop", "store", "stream_options", "temperature", "tool_choice", "tools", "top_logprobs",
        "top_p", "user",
    }
)


def default_threads() -> int:
    """
    Threads used by the local LLM when none are configured: half the CPUs this process may use, 1 to 8.

    llama.cpp's threads wait for each other at every layer, so a thread that the OS preempts stalls all of
    them: on a shared machine, fewer threads than cores generate much faster (benchmarks/README.md).
    """
    available = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 2
    return max(1, min(8, available // 2))


def _load_model(path: str, n_ctx: int, n_threads: int) -> _LoadedModel:
    """
    The process-wide llama.cpp server of `path`, started on first use (the first settings win).

    xllamacpp's `Server` loads the GGUF and serves llama.cpp's OpenAI-compatible HTTP API on 127.0.0.1, on a free
    port the OS picks; nothing listens beyond loopback.
    """
    with _LOAD_LOCK:
        loaded = _MODELS.get(path)
        if loaded is None:
            import xllamacpp  # noqa: PLC0415 - only the local backend needs llama.cpp

            params = xllamacpp.CommonParams()
            params.model.path = path
            params.n_ctx = n_ctx
            params.n_parallel = 1  # one slot: calls are served one at a time, the prompt prefix stays cached
            params.hostnames = ["127.0.0.1"]  # loopback only
            params.port = 0  # let the OS pick a free port
            params.verbosity = -1
            for cpu in (params.cpuparams, params.cpuparams_batch):
                cpu.n_threads = n_threads
                cpu.poll = 0  # no busy-waiting between work items: robust on a shared CPU
            started = time.perf_counter()
            server = xllamacpp.Server(params)
            loaded = _LoadedModel(server, n_ctx, n_threads, server.listening_address.rstrip("/") + "/v1")
            _MODELS[path] = loaded
            logger.info(
                "Local LLM loaded: {path} (n_ctx={n_ctx}, {n_threads} threads) in {seconds:.1f} s, serving {url}",
                path=path,
                n_ctx=n_ctx,
                n_threads=n_threads,
                seconds=time.perf_counter() - started,
                url=loaded.base_url,
            )
        elif (loaded.n_ctx, loaded.n_threads) != (n_ctx, n_threads):
            logger.warning(
                "Local LLM {path} is already loaded with n_ctx={n_ctx}, {n_threads} threads; reusing it",
                path=path,
                n_ctx=loaded.n_ctx,
                n_threads=loaded.n_threads,
            )
        return loaded


def _run_with_deadline(call: Callable[[], T], timeout: float | None, on_timeout: Callable[[], None] | None = None) -> T:
    """
    Runs `call`, in a daemon thread when `timeout` is set, and gives up waiting after `timeout` seconds.

    :param call: The work to do.
    :param timeout: Seconds to wait, or `None` to run `call` in the calling thread.
    :param on_timeout: Called when the deadline passes, to ask the abandoned work to stop.
    :returns: What `call` returned.
    :raises TimeoutError: `call` did not finish in time (it may still be running).
    """
    if timeout is None:
        return call()
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = call()
        except BaseException as error:  # noqa: BLE001 - re-raised in the calling thread
            outcome["error"] = error

    worker = threading.Thread(target=target, name="lexhay-llm-call", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        if on_timeout is not None:
            on_timeout()
        _ABANDONED[:] = [w for w in _ABANDONED if w.is_alive()] + [worker]
        raise TimeoutError(f"no reply from the LLM within {timeout:g} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _backend_kwargs(generation_kwargs: dict[str, Any]) -> dict[str, Any]:
    """
    Generation kwargs as the OpenAI client sends them to llama.cpp's server.

    A pydantic `response_format` becomes its JSON schema (streamed structured output needs a schema), llama.cpp's
    own `json_schema` kwarg becomes a `json_schema` response format (llama.cpp turns either into a grammar), other
    non-OpenAI kwargs (`grammar`, `top_k`, `min_p`, ...) travel in `extra_body`, and the usage counts are asked for
    in the stream.
    """
    kwargs = dict(generation_kwargs)
    response_format = kwargs.get("response_format")
    if isinstance(response_format, type) and hasattr(response_format, "model_json_schema"):
        kwargs["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": response_format.__name__, "schema": response_format.model_json_schema()},
        }
    if "json_schema" in kwargs:
        schema = kwargs.pop("json_schema")
        kwargs.setdefault("response_format", {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}})
    extra = {name: kwargs.pop(name) for name in list(kwargs) if name not in OPENAI_CHAT_PARAMS}
    if extra:
        kwargs["extra_body"] = {**(kwargs.get("extra_body") or {}), **extra}
    kwargs["stream_options"] = {"include_usage": True}
    return kwargs


class _TimedStream:
    """
    A chat-completion stream (sync or async) seen through: llama.cpp's `timings` (an extra field of its last
    chunk, which the OpenAI chunk model keeps) are recorded on the way.
    """

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.timings: dict[str, Any] = {}

    def _note(self, chunk: Any) -> Any:
        extra = getattr(chunk, "model_extra", None) or {}
        if isinstance(extra.get("timings"), dict):
            self.timings = extra["timings"]
        return chunk

    def __iter__(self) -> Any:
        for chunk in self.stream:
            yield self._note(chunk)

    async def __aiter__(self) -> Any:
        async for chunk in self.stream:
            yield self._note(chunk)

    def close(self) -> Any:
        return self.stream.close()


class _LoopbackChatGenerator(OpenAIChatGenerator):
    """
    `OpenAIChatGenerator` for the in-process llama.cpp server: it closes the HTTP stream of a call that stops
    early (llama.cpp stops generating when the connection closes) and adds llama.cpp's `timings` to the reply's
    meta. Internal to `LocalLlamaChatGenerator`, which serializes itself.
    """

    def _handle_stream_response(self, chat_completion: Any, callback: Any) -> list[ChatMessage]:
        timed = _TimedStream(chat_completion)
        try:
            replies = super()._handle_stream_response(timed, callback)
        finally:
            timed.close()  # a no-op after a complete stream; after a cancelled one, llama.cpp stops generating
        return _with_timings(replies, timed.timings)

    async def _handle_async_stream_response(self, chat_completion: Any, callback: Any) -> list[ChatMessage]:
        timed = _TimedStream(chat_completion)
        try:
            replies = await super()._handle_async_stream_response(timed, callback)
        finally:
            await timed.close()
        return _with_timings(replies, timed.timings)


def _with_timings(replies: list[ChatMessage], timings: dict[str, Any]) -> list[ChatMessage]:
    for reply in replies:
        reply.meta["timings"] = dict(timings)
    return replies


class _Cancelled(Exception):
    """Raised from the streaming callback of a call abandoned at its deadline: it ends the stream."""


@component
class LocalLlamaChatGenerator:
    """
    Chat completion with a local GGUF model: llama.cpp (`xllamacpp`) serves it in this process on loopback, and
    Haystack's `OpenAIChatGenerator` talks to it with the OpenAI protocol.

    A drop-in for `OpenAIChatGenerator` in lexhay's LLM stages: same `run(messages, generation_kwargs,
    streaming_callback, tools)` contract (and `run_async`), OpenAI generation kwargs (`temperature`,
    `max_tokens`, `top_p`, `stop`, `seed`, `tool_choice`, ...), tool calls in the replies, streaming chunks with
    their `finish_reason`, token `usage` in the reply's meta. The model's own chat template (from the GGUF)
    formats the messages. `response_format` (`{"type": "json_schema", "json_schema": {"schema": {...}}}`,
    `{"type": "json_object"}` or a pydantic model) and llama.cpp's own `json_schema` / `grammar` (GBNF) kwargs
    constrain decoding with a grammar, so the reply is valid JSON by construction.

    The model is loaded once per process and GGUF path, with one decoding slot: concurrent calls queue, and the
    prompt prefix of the previous call (a fixed system prompt) is reused from the KV cache. A call past its
    `timeout` raises `TimeoutError` and its HTTP stream is closed at the next token, which stops llama.cpp.

    Usage example:

    ```python
    from haystack.dataclasses import ChatMessage
    from components.generators.llm_backends import LocalLlamaChatGenerator

    llm = LocalLlamaChatGenerator(model="qwen2.5-coder-0.5b", timeout=60)
    llm.warm_up()
    reply = llm.run(
        messages=[ChatMessage.from_user("Palabras clave para: ¿cuántos días de vacaciones tengo?")],
        generation_kwargs={"json_schema": {"type": "array", "items": {"type": "string"}}},
    )["replies"][0]
    reply.text, reply.meta["usage"], reply.meta["finish_reason"]
    ```
    """

    def __init__(
        self,
        *,
        model: str = DEFAULT_LOCAL_MODEL,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        generation_kwargs: dict[str, Any] | None = None,
        timeout: float | None = None,
    ) -> None:
        """
        Create a LocalLlamaChatGenerator.

        :param model: Registry name (`qwen2.5-coder-1.5b`, `qwen2.5-coder-0.5b`) or path of a GGUF file.
        :param n_ctx: Context window in tokens (prompt + reply); 8192 fits the answer prompt (a 4000-token context
            budget, instructions, history) plus the reply. The first generator to load a model sets it.
        :param n_threads: CPU threads; `None` = half the CPUs available to the process (see `default_threads`).
        :param generation_kwargs: Defaults for every call, merged over `temperature=0, max_tokens=512`; the
            per-run `generation_kwargs` are merged over these.
        :param timeout: Seconds allowed to one call; past it `run` raises `TimeoutError` and the generation is
            stopped at its next token. `None` waits as long as it takes.
        :raises ValueError: An empty `model`, `n_ctx` < 256, `n_threads` < 1 or `timeout` <= 0.
        """
        if not model or not model.strip():
            raise ValueError("`model` must be a registry name (e.g. 'qwen2.5-coder-1.5b') or a GGUF path.")
        if n_ctx < 256:
            raise ValueError(f"`n_ctx` must be >= 256 tokens, got {n_ctx}.")
        if n_threads is not None and n_threads < 1:
            raise ValueError(f"`n_threads` must be None or >= 1, got {n_threads}.")
        if timeout is not None and timeout <= 0:
            raise ValueError(f"`timeout` must be None or a positive number of seconds, got {timeout}.")
        self.model = model
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.generation_kwargs = generation_kwargs or {}
        self.timeout = timeout
        self._loaded: _LoadedModel | None = None
        self._client: _LoopbackChatGenerator | None = None

    def to_dict(self) -> dict[str, Any]:
        """
        Serializes the component to a dictionary.

        :returns: Dictionary with serialized data.
        """
        return default_to_dict(
            self,
            model=self.model,
            n_ctx=self.n_ctx,
            n_threads=self.n_threads,
            generation_kwargs=self.generation_kwargs,
            timeout=self.timeout,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "LocalLlamaChatGenerator":
        """
        Deserializes the component from a dictionary.

        :param data: Dictionary to deserialize from.
        :returns: Deserialized component.
        """
        return default_from_dict(cls, data)

    def model_path(self) -> str:
        """
        The GGUF file this generator runs.

        :raises RuntimeError: The model is a registry name that is not installed, or a path that does not exist.
        """
        if self.model in REGISTRY:
            try:
                return resolve_model(self.model)
            except RuntimeError as error:
                msg = f"Local LLM '{self.model}' is not installed: {INSTALL_HINT.format(name=self.model)}."
                raise RuntimeError(msg) from error
        if not Path(self.model).is_file():
            msg = (
                f"Local LLM '{self.model}' is neither a registered model ({', '.join(sorted(REGISTRY))}) nor an "
                f"existing GGUF file: {INSTALL_HINT.format(name=DEFAULT_LOCAL_MODEL)} or pass a GGUF path."
            )
            raise RuntimeError(msg)
        return self.model

    def warm_up(self) -> None:
        """
        Loads the model and its loopback server (once per process and GGUF file; later calls return at once).

        :raises RuntimeError: The model is not installed (see `model_path`) or llama.cpp cannot load it.
        """
        if self._loaded is None:
            self._loaded = _load_model(self.model_path(), self.n_ctx, self.n_threads or default_threads())
        if self._client is None:
            self._client = _LoopbackChatGenerator(
                api_key=Secret.from_token(NO_KEY),  # the loopback server checks no key
                model=self.model,
                api_base_url=self._loaded.base_url,  # each call passes its generation kwargs, translated
                # the call's deadline is enforced by `run`; the HTTP client only guards against a silent server
                timeout=self.timeout or LOOPBACK_READ_TIMEOUT,
                max_retries=0,  # a retry would queue the same long generation again
            )

    def _prepare(self, messages: Any, generation_kwargs: dict[str, Any] | None) -> dict[str, Any]:
        if not isinstance(messages, list) or not all(isinstance(m, ChatMessage) for m in messages):
            raise TypeError("LocalLlamaChatGenerator expects `messages` to be a list of ChatMessage.")
        merged = {**DEFAULT_GENERATION_KWARGS, **self.generation_kwargs, **(generation_kwargs or {})}
        return _backend_kwargs(merged)

    @component.output_types(replies=list[ChatMessage])
    def run(
        self,
        messages: list[ChatMessage],
        generation_kwargs: dict[str, Any] | None = None,
        streaming_callback: StreamingCallbackT | None = None,
        *,
        tools: ToolsType | None = None,
        tools_strict: bool | None = None,
    ) -> dict[str, list[ChatMessage]]:
        """
        Generates one reply to the conversation.

        :param messages: The conversation (system, user, assistant and tool messages).
        :param generation_kwargs: Per-call generation kwargs, merged over the init ones.
        :param streaming_callback: Called with each `StreamingChunk` as it is generated (the last ones carry
            the `finish_reason` and the usage counts).
        :param tools: Tools the model may call; its calls are the reply's `tool_calls`.
        :param tools_strict: Ask for strict adherence to the tools' parameter schemas.
        :returns: A dictionary with:
            - `replies`: One assistant `ChatMessage`; its meta holds `model`, `finish_reason`, `usage`
              (token counts) and `timings` (llama.cpp's prompt / generation speeds).
        :raises TypeError: `messages` is not a list of ChatMessages.
        :raises TimeoutError: No complete reply within `timeout` seconds.
        :raises RuntimeError: llama.cpp rejected the request or failed.
        """
        kwargs = self._prepare(messages, generation_kwargs)
        if inspect.iscoroutinefunction(streaming_callback):
            raise ValueError("An async streaming_callback needs `run_async`.")
        self.warm_up()
        assert self._client is not None  # noqa: S101 - set by warm_up
        client = self._client
        cancelled = threading.Event()

        def relay(chunk: StreamingChunk) -> None:
            if cancelled.is_set():
                raise _Cancelled
            if streaming_callback is not None:
                streaming_callback(chunk)

        def complete() -> dict[str, list[ChatMessage]]:
            try:
                return client.run(messages=messages, generation_kwargs=kwargs, streaming_callback=relay, tools=tools,
                                  tools_strict=tools_strict)
            except openai_errors() as error:
                raise _backend_error(error) from error

        return _run_with_deadline(complete, self.timeout, on_timeout=cancelled.set)

    @component.output_types(replies=list[ChatMessage])
    async def run_async(
        self,
        messages: list[ChatMessage],
        generation_kwargs: dict[str, Any] | None = None,
        streaming_callback: StreamingCallbackT | None = None,
        *,
        tools: ToolsType | None = None,
        tools_strict: bool | None = None,
    ) -> dict[str, list[ChatMessage]]:
        """
        Asynchronous `run`: same parameters and reply. `streaming_callback` may be sync or async; past `timeout`
        the call is cancelled (its stream closed, llama.cpp stops) and `TimeoutError` is raised.
        """
        kwargs = self._prepare(messages, generation_kwargs)
        if self._client is None:
            await asyncio.to_thread(self.warm_up)  # loading a GGUF takes seconds: off the event loop
        assert self._client is not None  # noqa: S101 - set by warm_up

        async def relay(chunk: StreamingChunk) -> None:
            if streaming_callback is not None:
                result = streaming_callback(chunk)
                if inspect.isawaitable(result):
                    await result

        call = self._client.run_async(messages=messages, generation_kwargs=kwargs, streaming_callback=relay,
                                      tools=tools, tools_strict=tools_strict)
        try:
            return await asyncio.wait_for(call, self.timeout)
        except asyncio.TimeoutError:
            raise TimeoutError(f"no reply from the LLM within {self.timeout:g} s") from None
        except openai_errors() as error:
            raise _backend_error(error) from error


def openai_errors() -> tuple[type[BaseException], ...]:
    """The OpenAI client's errors (a timeout, a refused connection, an error status or streamed error)."""
    import openai  # noqa: PLC0415 - a dependency of Haystack's OpenAIChatGenerator

    return (openai.APIError,)


def _backend_error(error: BaseException) -> Exception:
    """The OpenAI client's `error` from the loopback server as lexhay reports it (timeout / llama.cpp failure)."""
    import openai  # noqa: PLC0415

    if isinstance(error, openai.APITimeoutError):
        return TimeoutError(f"no reply from llama.cpp: {error}")
    body = getattr(error, "body", None)
    detail = body.get("message") if isinstance(body, dict) and body.get("message") else str(error)
    return RuntimeError(f"llama.cpp failed: {detail}")


def default_chat_generator(*, timeout: float | None = None, settings: Any | None = None) -> Any | None:
    """
    The chat generator the deployment's settings configure, or `None` when no LLM is available.

    1. `llm` (`LEXHAY_LLM`) `none` (or `off`): `None`, every LLM stage runs its deterministic fallback.
    2. `llm_base_url` (`LEXHAY_LLM_BASE_URL`) or `OPENAI_API_KEY` set: Haystack's `OpenAIChatGenerator` (model
       `llm_model` / `LEXHAY_LLM_MODEL`, default `gpt-4o-mini`; key `OPENAI_API_KEY`, else `LEXHAY_LLM_API_KEY`,
       which is set to a dummy for a base URL that needs no key; one retry).
    3. The local model `llm` (registry name or GGUF path, default `qwen2.5-coder-1.5b`) when it is installed:
       `LocalLlamaChatGenerator`.
    4. Otherwise `None`.

    The generator is not warmed up here.

    :param timeout: Seconds allowed to one call; default `llm_timeout` (`LEXHAY_LLM_TIMEOUT`), else 60 for an
        endpoint and 180 for the bundled CPU model.
    :param settings: The settings to follow (`pipelines.settings.Settings`); default: `current_settings()`.
    :returns: A chat generator component, or `None`.
    :raises ValueError: An invalid setting (e.g. `LEXHAY_LLM_TIMEOUT` is not a positive number).
    """
    if settings is None:
        from pipelines.settings import current_settings  # noqa: PLC0415 - the one reader of LEXHAY_* variables

        settings = current_settings()
    timeout = timeout if timeout is not None else settings.llm_timeout
    local = (settings.llm or DEFAULT_LOCAL_MODEL).strip()
    if local.lower() in DISABLED_VALUES:
        logger.info("{env}={value}: LLM stages use their deterministic fallbacks", env=LLM_ENV, value=local)
        return None
    base_url = settings.llm_base_url or None
    if base_url or settings.openai_api_key:
        if base_url and not settings.openai_api_key and not settings.llm_api_key:
            os.environ.setdefault(LLM_API_KEY_ENV, NO_KEY)  # what the serialized Secret resolves at run time
        return OpenAIChatGenerator(
            api_key=Secret.from_env_var(["OPENAI_API_KEY", LLM_API_KEY_ENV]),
            model=settings.llm_model or DEFAULT_OPENAI_MODEL,
            api_base_url=base_url,
            timeout=timeout or DEFAULT_TIMEOUT,
            max_retries=1,
        )
    if local in REGISTRY:
        if is_installed(local):
            return LocalLlamaChatGenerator(model=local, timeout=timeout or DEFAULT_LOCAL_TIMEOUT)
        logger.info(
            "Local LLM '{name}' is not installed ({hint}); LLM stages use their deterministic fallbacks",
            name=local,
            hint=INSTALL_HINT.format(name=local),
        )
        return None
    if Path(local).is_file():
        return LocalLlamaChatGenerator(model=local, timeout=timeout or DEFAULT_LOCAL_TIMEOUT)
    logger.warning(
        "{env}={value} is neither a registered model nor a GGUF file; LLM stages use their deterministic fallbacks",
        env=LLM_ENV,
        value=local,
    )
    return None


def generator_to_dict(generator: Any | None) -> dict[str, Any] | None:
    """Serialized form of an LLM stage's nested `chat_generator` init parameter (None stays None)."""
    return component_to_dict(generator, name="chat_generator") if generator is not None else None


def with_deserialized_generator(data: dict[str, Any]) -> dict[str, Any]:
    """A copy of a serialized LLM stage whose nested `chat_generator` is deserialized; `data` is left as it was."""
    init_params = dict(data.get("init_parameters", {}))
    if init_params.get("chat_generator") is not None:
        deserialize_chatgenerator_inplace(init_params, key="chat_generator")
    return {**data, "init_parameters": init_params}


def warm_up_generator(generator: Any | None) -> None:
    """Warms up `generator` if it has a `warm_up` method (a no-op for `None`)."""
    if generator is not None and hasattr(generator, "warm_up"):
        generator.warm_up()


def chat_text(
    generator: Any,
    messages: list[ChatMessage],
    *,
    generation_kwargs: dict[str, Any] | None = None,
    timeout: float | None = None,
    streaming_callback: Callable[[StreamingChunk], None] | None = None,
) -> str | None:
    """
    Calls a chat generator and returns the text of its first reply; never raises on backend errors.

    :param generator: Any Haystack chat generator.
    :param messages: The conversation.
    :param generation_kwargs: Passed to `generator.run` when given.
    :param timeout: Seconds to wait for the reply (enforced here, whatever the generator); `None` = no limit.
    :param streaming_callback: Passed to `generator.run` when given: called with each generated `StreamingChunk`.
    :returns: The reply text, or `None` when the call failed, timed out or returned no text (logged).
    """
    kwargs: dict[str, Any] = {"generation_kwargs": generation_kwargs} if generation_kwargs else {}
    if streaming_callback is not None and _accepts(generator, "streaming_callback"):
        kwargs["streaming_callback"] = streaming_callback  # OpenAIChatGenerator, LocalLlamaChatGenerator, ...
    name = type(generator).__name__
    started = time.perf_counter()
    try:
        result = _run_with_deadline(lambda: generator.run(messages=messages, **kwargs), timeout)
    except Exception as error:  # noqa: BLE001 - any backend failure means "no reply": callers fall back
        logger.warning("{generator} call failed: {error}", generator=name, error=f"{type(error).__name__}: {error}")
        return None
    replies = (result.get("replies") or []) if isinstance(result, dict) else []
    text = replies[0].text if replies and isinstance(replies[0], ChatMessage) else None
    logger.debug(
        "{generator} replied in {seconds:.2f} s: {text}",
        generator=name,
        seconds=time.perf_counter() - started,
        text=text,
    )
    if not text or not text.strip():
        logger.warning("{generator} returned no text", generator=name)
        return None
    return text


def _accepts(generator: Any, name: str) -> bool:
    """Whether the generator's `run` takes the keyword `name` (a generator without streaming just doesn't stream)."""
    try:
        return name in inspect.signature(generator.run).parameters
    except (TypeError, ValueError):
        return False


def strip_fences(text: str) -> str:
    """The text inside one markdown code fence (```json ... ```), or `text` stripped when it has none."""
    match = _FENCE.match(text)
    return (match.group(1) if match else text).strip()


def parse_json_reply(text: str) -> Any | None:
    """
    Parses an LLM reply as JSON: fences stripped, else the outermost `[...]` / `{...}` span of the text.

    :returns: The parsed value, or `None` when no JSON can be read from the reply.
    """
    body = strip_fences(text)
    candidates = [body]
    match = _JSON_SPAN.search(body)
    if match and match.group(1) != body:
        candidates.append(match.group(1))
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    return None


def chat_json(
    generator: Any,
    messages: list[ChatMessage],
    *,
    schema: dict[str, Any] | None = None,
    timeout: float | None = None,
) -> tuple[Any | None, str]:
    """
    Calls a chat generator for a JSON reply; never raises on backend errors.

    With a `LocalLlamaChatGenerator`, `schema` becomes a grammar and the reply is valid JSON by construction.
    Other generators only get the prompt's instructions: OpenAI's structured outputs need an object at the
    root and strict schemas, and OpenAI-compatible servers differ in what they accept.

    :param generator: Any Haystack chat generator.
    :param messages: The conversation.
    :param schema: JSON schema of the expected reply.
    :param timeout: Seconds to wait for the reply; `None` = no limit beyond the generator's own.
    :returns: `(parsed, raw)`: the parsed JSON (or `None` when the reply is not JSON) and the raw reply text
        (`""` when the call failed, timed out or returned nothing).
    """
    generation_kwargs = None
    if schema is not None and isinstance(generator, LocalLlamaChatGenerator):
        json_schema = {"name": "reply", "schema": schema}
        generation_kwargs = {"response_format": {"type": "json_schema", "json_schema": json_schema}}
    raw = chat_text(generator, messages, generation_kwargs=generation_kwargs, timeout=timeout)
    if raw is None:
        return None, ""
    parsed = parse_json_reply(raw)
    if parsed is None:
        logger.warning("LLM reply is not valid JSON: {raw}", raw=raw[:300])
    return parsed, raw
