"""
The OpenAI-compatible chat of `ask` / `lexhay`: `POST /v1/chat/completions`, plain and streaming.

The last message is the question, earlier user / assistant messages the history (`pipelines.history`); extra body
fields `previous_chunk_ids` (carryover), `filters`, `options` and, for gateway keys, `access`. A response carries
OpenAI's `usage` (estimated counts: the answer stages do not report tokens) and the extra field `lexhay` with what
a client needs besides the text (`context_chunk_ids` first: send them back as `previous_chunk_ids`).

Streaming runs `LexHay.ask` in a worker thread and forwards the LLM's tokens without the META block
(`AnswerTokenFilter`); the extractive answer is streamed in pieces. A stream the client abandons, or one past the
request deadline, is cancelled: the next token the LLM produces raises `StreamCancelled` in the worker, which ends
the answer and gives the engine turn back.
"""

import queue
import re
import threading
import time
import uuid
from collections.abc import Generator
from typing import Any

from haystack import logging
from haystack.dataclasses import StreamingChunk

from components.legal.answer_format import (
    DELIMITER_RE,
    META_LINE_RE,
    UNVERIFIED_MARK,
    UNVERIFIED_MARKS,
    answer_language,
)
from pipelines.history import message_text
from pipelines.results import QueryResult
from pipelines.serving.auth import Principal, request_access
from pipelines.serving.config import server_settings
from pipelines.serving.engine import Engine
from pipelines.serving.errors import error_response, http_error, http_errors
from pipelines.serving.guard import request_done

logger = logging.getLogger(__name__)

STREAM_CHUNK_CHARS = 48
# the heading of an answer that replaced the streamed tokens (a NEED retry's, or the extractive answer that replaced
# a reply citing none of its context), in the question's language
REVISED_ANSWER = {"es": "Respuesta revisada:", "pt": "Resposta revisada:"}
# the `QueryResult` keys a chat completion carries in its `lexhay` field (the text is the message; no trace)
ANSWER_EXTRAS = ("context_chunk_ids", "citations", "route", "need", "fallbacks", "unverified_citations", "flags")


class StreamCancelled(RuntimeError):
    """The client left (or the deadline passed) while the answer was being generated."""


def chat_inputs(engine: Engine, principal: Principal, messages: list[dict[str, Any]],
                body: dict[str, Any]) -> dict[str, Any]:
    """
    `LexHay.ask` arguments of a chat completion request, validated by the engine before anything runs (a ValueError
    is a 422). Other OpenAI fields (temperature, max_tokens, ...) are ignored: the answer stage has its own settings.
    """
    if not messages or not isinstance(messages[-1], dict) or messages[-1].get("role") != "user":
        raise http_error(422, "the last message must be the user's question")
    with http_errors():
        kwargs = {
            "question": message_text(messages[-1].get("content")),
            "history": messages[:-1],
            "previous_chunk_ids": body.get("previous_chunk_ids"),
            "filters": body.get("filters"),
            "access": request_access(principal, body.get("access")),
            "options": body.get("options"),
        }
        engine.lex.check_ask(**kwargs)
    return kwargs


def estimate_tokens(text: str) -> int:
    """A token count estimate (words and punctuation marks): the answer stages do not report their tokens."""
    return len(re.findall(r"\w+|[^\w\s]", text or ""))


def usage(kwargs: dict[str, Any], answer: str) -> dict[str, int]:
    """OpenAI's `usage` for a question (with its history) and its answer, estimated."""
    history = " ".join(message_text(m.get("content")) for m in kwargs.get("history") or [] if isinstance(m, dict))
    prompt, completion = estimate_tokens(f"{history} {kwargs['question']}"), estimate_tokens(answer)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def answer_extras(result: QueryResult) -> dict[str, Any]:
    """The `lexhay` field of a chat completion: what a client needs besides the text (carryover ids first)."""
    return {k: result.get(k) for k in ANSWER_EXTRAS}


def _completion(resp_id: str, model: str, created: int, *, content: str | None, finish: str | None,
                extras: dict[str, Any] | None, chunk: bool, used: dict[str, int] | None = None) -> Any:
    from fastapi_openai_compat import ChatCompletion, Choice, Message  # noqa: PLC0415

    message = Message(role="assistant", content=content)
    choice = Choice(index=0, delta=message, finish_reason=finish) if chunk else Choice(
        index=0, message=message, finish_reason=finish)
    fields = {"lexhay": extras} if extras is not None else {}
    return ChatCompletion(id=resp_id, object="chat.completion.chunk" if chunk else "chat.completion",
                          created=created, model=model, choices=[choice], usage=used, **fields)


class AnswerTokenFilter:
    """
    Streams an answer stage's reply token by token without its metadata: stops at the `===META===` line and holds
    back trailing `USED|` / `DROP|` / `NEED|` lines (AnswerMetaParser's format); a line that might become one of
    those is held until it is complete.
    """

    _META_KEYS = ("USED", "DROP", "NEED")

    def __init__(self) -> None:
        self.pending = ""  # the start of the current line, held
        self.line_open = False  # part of the current line was already emitted: it is answer text
        self.held_meta: list[str] = []
        self.stopped = False
        self.emitted: list[str] = []

    def _maybe_meta(self, partial: str) -> bool:
        start = partial.lstrip(" \t*_`-").upper()
        if not start or start[0] == "=":
            return True
        return any(k.startswith(start[:4]) or start.startswith(k) for k in self._META_KEYS)

    def feed(self, text: str) -> str:
        """The part of the reply that can be shown now."""
        if self.stopped or not text:
            return ""
        out: list[str] = []
        self.pending += text
        while not self.stopped:
            newline = self.pending.find("\n")
            if newline < 0:
                break
            line, self.pending = self.pending[: newline + 1], self.pending[newline + 1 :]
            if self.line_open:
                out.append(line)
            elif DELIMITER_RE.match(line.strip()):
                self.stopped = True
            elif META_LINE_RE.match(line.strip()):
                self.held_meta.append(line)
            else:
                out.extend([*self.held_meta, line])
                self.held_meta.clear()
            self.line_open = False
        if not self.stopped and self.pending and (self.line_open or not self._maybe_meta(self.pending)):
            out.extend([*self.held_meta, self.pending])
            self.held_meta.clear()
            self.pending, self.line_open = "", True
        emitted = "".join(out)
        self.emitted.append(emitted)
        return emitted

    @property
    def text(self) -> str:
        return "".join(self.emitted)


def text_pieces(text: str, size: int = STREAM_CHUNK_CHARS) -> list[str]:
    """`text` cut into pieces of about `size` characters at whitespace; joined they give `text` back."""
    pieces, current = [], ""
    for token in re.findall(r"\S+\s*|\s+", text):
        current += token
        if len(current) >= size:
            pieces.append(current)
            current = ""
    if current:
        pieces.append(current)
    return pieces


def _without_marks(text: str) -> str:
    for mark in UNVERIFIED_MARKS.values():
        text = text.replace(mark, "")
    return " ".join(text.split())


def stream_answer(engine: Engine, kwargs: dict[str, Any], model: str,
                  deadline_s: float | None = None) -> Generator[Any, None, None]:
    """
    Runs `LexHay.ask(**kwargs)` in a worker thread now and returns the SSE chunks of its answer.

    LLM tokens are streamed as they come (without the META block); the extractive answer (no tokens) is streamed
    in pieces when it is ready. The last chunk carries `finish_reason="stop"`, `usage` and the `lexhay` field
    (carryover ids, citations, the verified `answer`). Errors after the stream started end it with an error message
    and `lexhay.error`.

    The turn on the engine is taken before returning (a busy server answers 503, not a broken stream) and released
    by the worker. The request ending for the server (the guard's `request_done`: the client left), closing the
    generator or passing `deadline_s` cancels the answer at its next token.
    """
    engine.acquire_reading()  # EngineBusy -> 503 before the stream starts
    deadline = time.monotonic() + (deadline_s if deadline_s is not None else server_settings().request_timeout)
    events: queue.Queue[tuple[str, Any]] = queue.Queue()
    cancelled = threading.Event()
    client_gone = request_done() or threading.Event()  # the guard sets it when the client has left
    tokens = AnswerTokenFilter()

    def on_token(chunk: StreamingChunk) -> None:
        if cancelled.is_set() or client_gone.is_set():
            raise StreamCancelled("the client left or the request deadline passed")
        events.put(("token", chunk))

    def work() -> None:
        try:
            events.put(("done", engine.lex.ask(**kwargs, streaming_callback=on_token)))
        except Exception as error:  # noqa: BLE001 - reported to the client in the stream
            events.put(("error", error))
        finally:
            engine.lock.release_shared()

    threading.Thread(target=work, name="lexhay-chat-stream", daemon=True).start()
    resp_id, created = f"lexhay-{uuid.uuid4().hex}", int(time.time())

    def chunk(content: str | None, finish: str | None = None, extras: dict[str, Any] | None = None,
              used: dict[str, int] | None = None) -> Any:
        return _completion(resp_id, model, created, content=content, finish=finish, extras=extras, chunk=True,
                           used=used)

    def generate() -> Generator[Any, None, None]:
        try:
            yield chunk("")
            while True:
                try:
                    kind, value = events.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    cancelled.set()
                    message = "the answer did not finish within the request deadline (LEXHAY_REQUEST_TIMEOUT)"
                    yield chunk(f"Error 504: {message}", "stop", {"error": {"status": 504, "message": message}})
                    return
                if kind == "token":
                    text = tokens.feed(value.content if isinstance(value, StreamingChunk) else str(value or ""))
                    if text:
                        yield chunk(text)
                    continue
                if kind == "error":
                    status, message = error_response(value)
                    logger.warning("chat stream failed: {error}", error=value)
                    yield chunk(f"Error {status}: {message}", "stop", {"error": {"status": status, "message": message}})
                    return
                done: QueryResult = value
                answer = done["answer"]
                shown = tokens.text
                if not shown.strip():
                    for piece in text_pieces(answer):
                        yield chunk(piece)
                elif _without_marks(answer) == _without_marks(shown):  # the verifier may have marked citations since
                    unverified = ", ".join(u.get("text", "") for u in done.get("unverified_citations") or [])
                    if unverified:
                        mark = next((m for m in UNVERIFIED_MARKS.values() if m in answer), UNVERIFIED_MARK)
                        yield chunk(f"\n\n[{mark}: {unverified}]")
                else:  # the answer was generated again after these tokens (NEED retry): the final one follows
                    revised = REVISED_ANSWER[answer_language(str(kwargs.get("question") or ""), [])]
                    yield chunk(f"\n\n{revised}\n\n")
                    for piece in text_pieces(answer):
                        yield chunk(piece)
                yield chunk(None, "stop", {**answer_extras(done), "answer": answer}, usage(kwargs, answer))
                return
        finally:
            cancelled.set()  # a no-op after the answer; a client that left stops the LLM at its next token

    return generate()


def chat_completion(engine: Engine, principal: Principal, model: str, messages: list[dict[str, Any]],
                    body: dict[str, Any]) -> Any:
    """
    An OpenAI-compatible chat completion answered by `LexHay.ask` (the `run_chat_completion` of `ask` / `lexhay`).

    Non-streaming: a `ChatCompletion` whose message is the answer, with `usage` and the extra field `lexhay`.
    Streaming (`"stream": true`): see `stream_answer`.
    """
    kwargs = chat_inputs(engine, principal, messages, body)
    with http_errors():
        if body.get("stream"):
            return stream_answer(engine, kwargs, model)
        with engine.reading() as lex:
            result: QueryResult = lex.ask(**kwargs)
    return _completion(f"lexhay-{uuid.uuid4().hex}", model, int(time.time()), content=result["answer"],
                       finish="stop", extras=answer_extras(result), chunk=False, used=usage(kwargs, result["answer"]))
