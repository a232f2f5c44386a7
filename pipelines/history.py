"""
Conversation history: OpenAI-style `{"role", "content"}` messages as Haystack `ChatMessage`s.

One helper for every entry point: `LexHay.ask(history=...)` accepts either form and normalises it here, so the CLI
(`lexhay ask --history FILE`) and the HTTP API (`/ask/run`, `/v1/chat/completions`) build history the same way.
"""

from collections.abc import Callable
from typing import Any

from haystack.dataclasses import ChatMessage

MAX_HISTORY_MESSAGES = 20
MAX_HISTORY_CHARS = 8000

_MAKERS: dict[str, Callable[[str], ChatMessage]] = {
    "user": ChatMessage.from_user,
    "assistant": ChatMessage.from_assistant,
}
# the roles an OpenAI conversation holds; those not in `_MAKERS` are not history, any other is a mistake ("usr")
ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


def message_text(content: Any) -> str:
    """Text of an OpenAI message content: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def to_history(messages: Any) -> list[ChatMessage] | None:
    """
    Conversation history as ChatMessages: user and assistant turns, the last `MAX_HISTORY_MESSAGES` kept, each cut
    to `MAX_HISTORY_CHARS`. System and tool messages are not history (the answer stage has its own system prompt).

    :param messages: None, or a list of `{"role", "content"}` dicts and / or `ChatMessage`s.
    :returns: The history, or None when it holds no user / assistant text.
    :raises ValueError: Anything but a list of such messages, or a role that is not one of `ROLES`.
    """
    if messages is None:
        return None
    if not isinstance(messages, list) or not all(
        isinstance(m, ChatMessage) or (isinstance(m, dict) and "role" in m) for m in messages
    ):
        raise ValueError('history must be a list of {"role", "content"} messages')
    unknown = [m["role"] for m in messages if isinstance(m, dict) and m["role"] not in ROLES]
    if unknown:
        raise ValueError(f"history has a message of unknown role {unknown[0]!r}; roles: {', '.join(sorted(ROLES))}")
    turns: list[tuple[str, str]] = []
    for m in messages:
        if isinstance(m, ChatMessage):
            role, text = m.role.value, m.text or ""
        else:
            role, text = m.get("role"), message_text(m.get("content"))
        if role in _MAKERS and text.strip():
            turns.append((role, text.strip()))
    history = [_MAKERS[role](text[:MAX_HISTORY_CHARS]) for role, text in turns[-MAX_HISTORY_MESSAGES:]]
    return history or None
