"""
Errors as HTTP answers: bad input is a 4xx with a clear message, never a traceback.

The engine validates its inputs (`pipelines.sdk`): a `ValueError` there is a 422 (`AccessDenied`, the principal
may not do this, a 403), a malformed filter a 422, a
missing file a 404, a busy engine or an unavailable store a 503 with `Retry-After`. On the OpenAI-compatible routes
(`/v1/*`) the same errors are written in OpenAI's `{"error": {"message", "type", "param", "code"}}` shape
(`openai_error_body`), which the `openai` client turns into its typed exceptions.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from haystack import logging

from pipelines.serving.engine import EngineBusy

logger = logging.getLogger(__name__)

OPENAI_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                      404: "not_found_error", 413: "invalid_request_error", 415: "invalid_request_error",
                      422: "invalid_request_error", 429: "rate_limit_error", 501: "not_implemented_error"}


def http_error(status: int, detail: Any, headers: dict[str, str] | None = None) -> Exception:
    """A FastAPI HTTPException (imported lazily: the engine part of serving needs no web stack)."""
    from fastapi import HTTPException  # noqa: PLC0415

    return HTTPException(status_code=status, detail=detail, headers=headers)


def root_cause(error: BaseException) -> BaseException:
    """The original error under Haystack's PipelineRuntimeError wrappers."""
    seen = set()
    while error.__cause__ is not None and id(error) not in seen:
        seen.add(id(error))
        error = error.__cause__
    return error


def error_response(error: BaseException) -> tuple[int, str]:
    """HTTP status and message for an error raised while serving a request."""
    from haystack.document_stores.errors import DocumentStoreError  # noqa: PLC0415
    from haystack.errors import FilterError  # noqa: PLC0415

    from components.legal.access import AccessDenied  # noqa: PLC0415

    cause = root_cause(error)
    message = str(cause) or type(cause).__name__
    if isinstance(error, EngineBusy):
        return 503, message
    if isinstance(cause, AccessDenied):
        return 403, message
    if isinstance(cause, FilterError):
        return 422, f"invalid filters: {message}"
    if isinstance(cause, FileNotFoundError):
        return 404, message
    if isinstance(cause, (ValueError, RecursionError)):
        return 422, message if isinstance(cause, ValueError) else "input nested too deeply"
    if isinstance(cause, DocumentStoreError):
        return 503, f"document store unavailable: {message}"
    if isinstance(cause, (RuntimeError, TimeoutError, OSError)):
        return 503, f"{type(cause).__name__}: {message}"
    return 500, f"internal error ({type(cause).__name__}); see the server log"


@contextmanager
def http_errors() -> Iterator[None]:
    """Turns the engine's errors into HTTP errors with a clear message (see `error_response`)."""
    from fastapi import HTTPException  # noqa: PLC0415

    try:
        yield
    except HTTPException:
        raise
    except Exception as error:  # noqa: BLE001 - every failure becomes a clear HTTP error
        status, message = error_response(error)
        if status >= 500:
            logger.exception("request failed: {error}", error=error)
        headers = {"Retry-After": "5"} if status == 503 else None
        raise http_error(status, message, headers) from error


def detail_message(detail: Any) -> str:
    """One line of text for a FastAPI `detail` (a string, a report dict, or a list of validation errors)."""
    if isinstance(detail, str):
        return detail
    if isinstance(detail, dict) and isinstance(detail.get("message"), str):
        return detail["message"]
    if isinstance(detail, list):
        parts = []
        for item in detail:
            if isinstance(item, dict):
                where = ".".join(str(p) for p in item.get("loc", ()) if p != "body")
                parts.append(f"{where}: {item.get('msg', '')}" if where else str(item.get("msg", "")))
        return "; ".join(parts) or "invalid request"
    return str(detail)


def openai_error_body(status: int, detail: Any) -> dict[str, Any]:
    """OpenAI's error shape for a status and a FastAPI `detail`."""
    kind = OPENAI_ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": detail_message(detail), "type": kind, "param": None, "code": str(status)}}
