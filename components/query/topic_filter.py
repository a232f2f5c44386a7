# SPDX-License-Identifier: Apache-2.0
"""
Query topic filter: a user's question -> one topic of the declarative topics config -> a `meta.topics` filter.

`TopicFilter` (query time, reads the question) asks a chat generator to pick the topic and falls back to keyword
scoring with the same `TopicMatcher` (`components.legal.topics`) that the indexing-time `TopicTagger` uses to write
`meta["topics"]` on documents, so both read one config file.
"""

import time
from typing import Any

from haystack import component, default_from_dict, default_to_dict, logging
from haystack.dataclasses import ChatMessage

from components.legal.access import and_filters
from components.legal.topics import GENERAL_TOPIC, TopicMatcher, load_topics
from components.generators.llm_backends import (
    chat_json,
    generator_to_dict,
    strip_fences,
    warm_up_generator,
    with_deserialized_generator,
)

DISABLED_TRACE = {"path": "disabled"}

logger = logging.getLogger(__name__)

TOPIC_SYSTEM_PROMPT = """\
Eres un asistente jurídico que clasifica preguntas sobre legislación laboral, de Seguridad Social y \
constitucional por temas, para buscar solo en los artículos de ese tema.

Temas (identificador: descripción):
{topics}

Reglas:
- Elige el único tema que mejor corresponde a la pregunta.
- Si la pregunta mezcla varios temas o no encaja claramente en ninguno, elige "{general}".
- Responde SOLO con un objeto JSON con la clave "topic" y el identificador del tema, por ejemplo \
{{"topic": "{example}"}}: sin explicaciones, sin texto adicional y sin bloques de código markdown."""

TOPIC_USER_TEMPLATE = "Pregunta: {query}"


@component
class TopicFilter:
    """
    Resolves a question to one topic of the topics config and the retrieval filter that topic implies.

    With a chat generator, the LLM gets a Spanish system prompt listing the topic ids and descriptions and
    returns `{"topic": "<id>"}`; a reply naming no known topic, a failed call or no LLM at all fall back to
    keyword scoring: the topic whose keywords (accent-folded lowercase word prefixes, every language of the
    config) occur most often in the question; a tie (a mixed question) or no match gives `general`. `general`
    means "search everything" (`filters=None`); any other topic gives
    `{"field": "meta.topics", "operator": "in", "value": [topic]}`, which matches the documents `TopicTagger`
    tagged with it.

    Usage example:

    ```python
    from components.generators.llm_backends import default_chat_generator
    from components.query.topic_filter import TopicFilter

    resolver = TopicFilter(chat_generator=default_chat_generator())
    result = resolver.run(query="¿Cuántos días de vacaciones tengo?")
    result["topic"]    # "vacaciones_permisos"
    result["filters"]  # {"field": "meta.topics", "operator": "in", "value": ["vacaciones_permisos"]}
    ```
    """

    def __init__(
        self,
        *,
        enabled: bool = True,
        chat_generator: Any | None = None,
        topics_file: str | None = None,
        timeout: float | None = None,
    ) -> None:
        """
        Create a TopicFilter.

        :param chat_generator: A Haystack chat generator (`OpenAIChatGenerator`, `LocalLlamaChatGenerator`, ...);
            `None` always uses keyword scoring.
        :param topics_file: The topics YAML; `None` = env `LEXHAY_TOPICS`, else the bundled `components/legal/data/topics.yaml`.
        :param timeout: Seconds allowed to the LLM call, whatever the generator (a slow reply is abandoned and
            keyword scoring runs); `None` = only the generator's own timeout applies.
        :param enabled: Feature flag (`topic_filter`; `False` resolves nothing and passes `filters` on unchanged).
            A run's `enabled` overrides it.
        :raises ValueError: `timeout` <= 0, or a bad topics file.
        """
        if timeout is not None and timeout <= 0:
            raise ValueError(f"`timeout` must be None or a positive number of seconds, got {timeout}.")
        self.enabled = enabled
        self.chat_generator = chat_generator
        self.topics_file = topics_file
        self.timeout = timeout
        self.matcher: TopicMatcher = load_topics(topics_file)
        topic_ids = self.matcher.topic_ids
        self._system_prompt = TOPIC_SYSTEM_PROMPT.format(
            topics="\n".join(f"- {topic.id}: {topic.description}" for topic in self.matcher.topics),
            general=GENERAL_TOPIC,
            example=next(topic_id for topic_id in topic_ids if topic_id != GENERAL_TOPIC),
        )
        self._schema = {
            "type": "object",
            "properties": {"topic": {"type": "string", "enum": topic_ids}},
            "required": ["topic"],
            "additionalProperties": False,
        }

    def to_dict(self) -> dict[str, Any]:
        """
        Serializes the component to a dictionary.

        :returns: Dictionary with serialized data.
        """
        return default_to_dict(
            self,
            enabled=self.enabled, chat_generator=generator_to_dict(self.chat_generator),
            topics_file=self.topics_file,
            timeout=self.timeout,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TopicFilter":
        """
        Deserializes the component from a dictionary.

        :param data: Dictionary to deserialize from.
        :returns: Deserialized component.
        """
        return default_from_dict(cls, with_deserialized_generator(data))

    def warm_up(self) -> None:
        """
        Warms up the chat generator (loads a local model); idempotent.

        :raises RuntimeError: The generator cannot start, e.g. its local model is not installed. `run` never
            raises for that: it falls back.
        """
        warm_up_generator(self.chat_generator)

    @component.output_types(topic=str, filters=dict[str, Any] | None, fallback=bool, trace=dict[str, Any])
    def run(
        self, query: str, filters: dict[str, Any] | None = None, enabled: bool | None = None
    ) -> dict[str, Any]:
        """
        Resolves the topic of a question.

        :param query: The user's question.
        :param filters: Filters the topic filter is AND-ed into (e.g. the request's access filter).
        :param enabled: Overrides the init `enabled` for this run (per-request feature flag).
        :returns: A dictionary with:
            - `topic`: A topic id of the config (`general` when none applies).
            - `filters`: the input `filters` for `general`, else them AND a filter on `meta.topics` for that topic.
            - `fallback`: `True` when keyword scoring chose the topic.
            - `trace`: `path` (`llm` or `keywords`), `fallback_reason` (`no_llm`, `llm_error`, `malformed_json`,
              `unknown_topic`), `llm_reply`, `keyword_matches` (topic -> the keyword spans found in the question),
              `topic`, `elapsed_ms`.
        :raises ValueError: `query` is empty.
        """
        if not isinstance(query, str) or not query.strip():
            raise ValueError("TopicFilter needs a non-empty `query` string.")
        if not (self.enabled if enabled is None else enabled):
            return {"topic": GENERAL_TOPIC, "filters": filters, "fallback": False, "trace": DISABLED_TRACE}
        started = time.perf_counter()
        trace: dict[str, Any] = {
            "llm": type(self.chat_generator).__name__ if self.chat_generator is not None else None,
            "llm_reply": None,
        }
        topic, reason = None, "no_llm"
        if self.chat_generator is not None:
            messages = [
                ChatMessage.from_system(self._system_prompt),
                ChatMessage.from_user(TOPIC_USER_TEMPLATE.format(query=query.strip())),
            ]
            parsed, raw = chat_json(self.chat_generator, messages, schema=self._schema, timeout=self.timeout)
            trace["llm_reply"] = raw
            topic, reason = self._topic_from_reply(parsed, raw)
        matches = self.matcher.matches(query)
        if topic is None:
            topic = self._keyword_topic(matches)
            trace.update(path="keywords", fallback_reason=reason)
        else:
            trace.update(path="llm", fallback_reason=None)
        if topic != GENERAL_TOPIC:
            filters = and_filters(filters, {"field": "meta.topics", "operator": "in", "value": [topic]})
        trace.update(keyword_matches=matches, topic=topic, elapsed_ms=round((time.perf_counter() - started) * 1000, 1))
        logger.debug("TopicFilter {path}: {topic}", path=trace["path"], topic=topic)
        return {"topic": topic, "filters": filters, "fallback": trace["path"] == "keywords", "trace": trace}

    def _topic_from_reply(self, parsed: Any, raw: str) -> tuple[str | None, str]:
        """
        The topic an LLM reply names, and how it was read.

        :returns: `(topic, "llm")` for `{"topic": "<known id>"}` or a bare known id, else `(None, reason)`.
        """
        if not raw:
            return None, "llm_error"
        if parsed is None:  # not JSON: a bare known id is accepted, as some models answer that way
            bare = strip_fences(raw).strip("\"' .").lower()
            return (bare, "llm") if self.matcher.get(bare) is not None else (None, "malformed_json")
        candidate = parsed.get("topic") if isinstance(parsed, dict) else parsed
        if not isinstance(candidate, str):
            return None, "malformed_json"
        topic = candidate.strip().lower()
        if self.matcher.get(topic) is None:
            logger.warning("LLM named an unknown topic {topic!r}; falling back to keywords", topic=candidate)
            return None, "unknown_topic"
        return topic, "llm"

    @staticmethod
    def _keyword_topic(matches: dict[str, list[str]]) -> str:
        """The topic with the most keyword occurrences; `general` for no match or a tie (a mixed question)."""
        if not matches:
            return GENERAL_TOPIC
        best = max(map(len, matches.values()))
        leaders = [topic_id for topic_id, words in matches.items() if len(words) == best]
        return leaders[0] if len(leaders) == 1 else GENERAL_TOPIC
