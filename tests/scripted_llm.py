"""A scripted chat generator for unit tests: returns queued replies and records what it was sent."""

import time
from typing import Any

from haystack import component, default_from_dict, default_to_dict
from haystack.core.serialization_security import allow_deserialization_module
from haystack.dataclasses import ChatMessage

# nested generators are rebuilt through the deserialization allowlist, like any class named in a pipeline YAML
allow_deserialization_module("tests.scripted_llm")


@component
class ScriptedChatGenerator:
    """
    Chat generator with canned replies, one per call, in order.

    Usage example:

    ```python
    llm = ScriptedChatGenerator(replies=['["vacaciones anuales retribuidas"]'])
    llm.run(messages=[ChatMessage.from_user("hola")])["replies"][0].text  # '["vacaciones anuales retribuidas"]'
    llm.calls[0]  # the messages of the first call
    ```
    """

    def __init__(self, *, replies: list[str] | None = None, error: str | None = None, delay: float = 0.0) -> None:
        """
        Create a ScriptedChatGenerator.

        :param replies: Reply texts, returned one per call; running out raises `RuntimeError`.
        :param error: When set, every call raises `ConnectionError(error)` (an endpoint that is down).
        :param delay: Seconds each call sleeps before replying (a slow endpoint).
        """
        self.replies = list(replies or [])
        self.error = error
        self.delay = delay
        self.calls: list[list[ChatMessage]] = []
        self.generation_kwargs: list[dict[str, Any] | None] = []
        self.warm_ups = 0
        self._next = 0

    def to_dict(self) -> dict[str, Any]:
        """Serializes the generator (its script, not what it recorded)."""
        return default_to_dict(self, replies=self.replies, error=self.error, delay=self.delay)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ScriptedChatGenerator":
        """Deserializes the generator."""
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """Counts the warm-ups."""
        self.warm_ups += 1

    @component.output_types(replies=list[ChatMessage])
    def run(
        self, messages: list[ChatMessage], generation_kwargs: dict[str, Any] | None = None
    ) -> dict[str, list[ChatMessage]]:
        """Records the call and returns the next scripted reply."""
        self.calls.append(messages)
        self.generation_kwargs.append(generation_kwargs)
        if self.delay:
            time.sleep(self.delay)
        if self.error is not None:
            raise ConnectionError(self.error)
        if self._next >= len(self.replies):
            raise RuntimeError(f"ScriptedChatGenerator: no reply left after {len(self.replies)} call(s)")
        reply = self.replies[self._next]
        self._next += 1
        return {"replies": [ChatMessage.from_assistant(reply, meta={"model": "scripted"})]}
