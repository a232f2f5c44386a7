"""
Topics: the declarative config (`components/legal/data/topics.yaml`) and the keyword matcher shared by indexing
(`TopicTagger` writes `meta["topics"]` and `meta["content_type"]`) and query (`TopicFilter` picks the question's
topic filter).

`load_topics` reads and validates the config into a `TopicMatcher`; both stages match through it, so a topic added
to the YAML file is used by both with no code change.
"""

import re
from collections import Counter
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import Any

import yaml
from components.legal.legal_text import fold_accents

TOPICS_ENV = "LEXHAY_TOPICS"
DEFAULT_TOPICS_FILE = Path(__file__).resolve().parent / "data" / "topics.yaml"
GENERAL_TOPIC = "general"
_ID = re.compile(r"^[a-z][a-z0-9_]*$")


def topics_path(topics_file: str | None = None) -> Path:
    """The topics config in effect: `topics_file`, else env `LEXHAY_TOPICS`, else the bundled `data/topics.yaml`."""
    if topics_file:
        return Path(topics_file)
    from pipelines.settings import current_settings  # noqa: PLC0415 - the one reader of LEXHAY_* variables

    return Path(current_settings().topics or DEFAULT_TOPICS_FILE)


def fold(text: str) -> str:
    """Lowercase and accent-free: the form text and keywords are compared in."""
    return fold_accents(text.lower())


def keyword_pattern(keywords: list[str]) -> re.Pattern[str] | None:
    """
    One regex matching any keyword at a word start, to the end of its last word; each word of a keyword is a
    word prefix. Longest keywords first, so that a phrase wins over its first word.
    """
    if not keywords:
        return None
    alternatives = [
        r"\w*\s+".join(re.escape(word) for word in keyword.split())
        for keyword in sorted(set(keywords), key=len, reverse=True)
    ]
    return re.compile(rf"(?<!\w)(?:{'|'.join(alternatives)})\w*")


@dataclass(frozen=True)
class Topic:
    """One topic of the config; `keywords` are folded (lowercase, no accents), per language."""

    id: str
    name: str
    description: str
    keywords: dict[str, list[str]]
    content_types: tuple[str, ...]


@dataclass(frozen=True)
class ContentType:
    """One content type of the config and its cues (`None` = cue not declared)."""

    id: str
    description: str
    collections: tuple[str, ...] | None
    articles: re.Pattern[str] | None
    titles: re.Pattern[str] | None

    def matches(self, *, article: str, title: str, collection: str | None) -> bool:
        """Whether every declared cue matches (always, for a type without cues)."""
        return (
            (self.collections is None or collection in self.collections)
            and (self.articles is None or self.articles.search(article) is not None)
            and (self.titles is None or self.titles.search(fold(title)) is not None)
        )


class _Keywords:
    """Compiled keyword patterns of one topic: per language, and for all languages together."""

    def __init__(self, keywords: dict[str, list[str]]) -> None:
        self.by_lang = {lang: keyword_pattern(words) for lang, words in keywords.items()}
        self.any_lang = keyword_pattern([word for words in keywords.values() for word in words])

    def find(self, folded: str, lang: str | None) -> list[tuple[int, int]]:
        pattern = self.by_lang.get(lang) if lang is not None else self.any_lang
        return [match.span() for match in pattern.finditer(folded)] if pattern is not None else []


class TopicMatcher:
    """
    The topics and content types of one config, and keyword matching on accent-folded lowercase word prefixes.

    Build it with `load_topics`. The `general` topic has no keywords and never matches: it stands for "no filter".

    Usage example:

    ```python
    from components.extractors.topic_tagger import load_topics

    matcher = load_topics()
    matcher.matches("¿Cuántos días de vacaciones tengo?")  # {"vacaciones_permisos": ["vacaciones"]}
    ```
    """

    def __init__(self, topics: list[Topic], content_types: list[ContentType]) -> None:
        """
        :param topics: The topics, in config order, `general` included.
        :param content_types: The content types, in the order they are tried; the last one has no cues.
        """
        self.topics = topics
        self.content_types = content_types
        self._by_id = {topic.id: topic for topic in topics}
        self._keywords = {topic.id: _Keywords(topic.keywords) for topic in topics if topic.keywords}
        self.languages = frozenset(lang for topic in topics for lang in topic.keywords)

    @property
    def topic_ids(self) -> list[str]:
        """All topic ids, in config order (`general` included)."""
        return list(self._by_id)

    def get(self, topic_id: str) -> Topic | None:
        """The topic with this id, or `None`."""
        return self._by_id.get(topic_id)

    def _lang(self, lang: str | None) -> str | None:
        """The keyword language to match `lang` text with; `None` (all languages) when unknown to the config."""
        return lang if lang in self.languages else None

    def matches(self, text: str, *, lang: str | None = None) -> dict[str, list[str]]:
        """
        Keyword occurrences per topic in `text`.

        A span inside a longer span of another topic does not count: "permiso por nacimiento" is one
        occurrence of `nacimiento_cuidado_menor`, not also a `permiso` of `vacaciones_permisos`. The same span
        counts for every topic that lists it ("accidente de trabajo").

        :param text: Any text (a question, an article).
        :param lang: The text's language: only that language's keywords are used when the config has some;
            `None` or a language the config has no keywords for = the keywords of every language.
        :returns: Topic id -> the matched words (folded), for the topics with at least one, in config order.
        """
        folded = fold(text)
        lang = self._lang(lang)
        spans = sorted(
            ((start, end, topic_id) for topic_id, keywords in self._keywords.items()
             for start, end in keywords.find(folded, lang)),
            key=lambda span: (span[0], -span[1]),
        )
        found: dict[str, list[str]] = {topic_id: [] for topic_id in self._keywords}
        reach = -1  # the furthest end of the spans starting before the current one (or at it, longer)
        for (start, end), same in groupby(spans, key=lambda span: span[:2]):
            if end > reach:
                for *_, topic_id in same:
                    found[topic_id].append(folded[start:end])
            reach = max(reach, end)
        return {topic_id: words for topic_id, words in found.items() if words}

    def content_type(
        self, *, article: str | None = None, title: str | None = None, collection: str | None = None
    ) -> str:
        """
        The first content type whose cues all match; the last one (the default, without cues) otherwise.

        :param article: The normalized article key (`38`, `da1`, `preambulo`, ...), searched by `articles`.
        :param title: The article title, searched (accent-folded, lowercase) by `titles`.
        :param collection: The document's collection, matched by `collections`.
        :returns: The content type id.
        """
        for content_type in self.content_types[:-1]:
            if content_type.matches(article=article or "", title=title or "", collection=collection):
                return content_type.id
        return self.content_types[-1].id


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) and item.strip() for item in value)


def _keywords(value: Any, where: str) -> dict[str, list[str]]:
    """A `keywords` mapping (language -> words), validated and folded."""
    if not isinstance(value, dict) or not all(isinstance(k, str) and _strings(words) for k, words in value.items()):
        raise ValueError(f"{where}: `keywords` must map language codes (es, pt, en) to lists of non-empty strings.")
    folded = {lang: [" ".join(fold(word).split()) for word in words] for lang, words in value.items() if words}
    if not folded:
        raise ValueError(f"{where}: `keywords` lists no keyword.")
    return folded


def _text(entry: dict[str, Any], key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}: `{key}` must be a non-empty string.")
    return " ".join(value.split())


def _regex(entry: dict[str, Any], key: str, where: str) -> re.Pattern[str] | None:
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ValueError(f"{where}: `{key}` must be a regular expression (a non-empty string).")
    try:
        return re.compile(value)
    except re.error as error:
        raise ValueError(f"{where}: `{key}` is not a valid regular expression: {error}") from error


def _content_type(entry: Any, where: str) -> ContentType:
    if not isinstance(entry, dict) or not isinstance(entry.get("id"), str) or not _ID.match(entry["id"]):
        raise ValueError(f"{where}: each content type needs an `id` in snake_case (e.g. `procedimiento`).")
    where = f"{where}, content type {entry['id']!r}"
    unknown = sorted(set(entry) - {"id", "description", "collections", "articles", "titles"})
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {unknown}; cues are `collections`, `articles` and `titles`.")
    collections = entry.get("collections")
    if collections is not None and (not _strings(collections) or not collections):
        raise ValueError(f"{where}: `collections` must be a non-empty list of collection names.")
    return ContentType(
        id=entry["id"],
        description=_text(entry, "description", where),
        collections=tuple(collections) if collections is not None else None,
        articles=_regex(entry, "articles", where),
        titles=_regex(entry, "titles", where),
    )


def _topic(entry: Any, where: str, content_type_ids: list[str]) -> Topic:
    if not isinstance(entry, dict) or not isinstance(entry.get("id"), str) or not _ID.match(entry["id"]):
        raise ValueError(f"{where}: each topic needs an `id` in snake_case (e.g. `vacaciones_permisos`).")
    topic_id = entry["id"]
    where = f"{where}, topic {topic_id!r}"
    unknown = sorted(set(entry) - {"id", "name", "description", "keywords", "content_types"})
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {unknown}; a topic has id, name, description, keywords, "
                         "content_types.")
    name, description = _text(entry, "name", where), _text(entry, "description", where)
    if topic_id == GENERAL_TOPIC:
        if entry.get("keywords") or entry.get("content_types"):
            raise ValueError(f"{where}: `general` means 'no topic filter' and takes no `keywords` or `content_types`.")
        return Topic(id=topic_id, name=name, description=description, keywords={}, content_types=())
    content_types = entry.get("content_types")
    if not _strings(content_types) or not content_types:
        raise ValueError(f"{where}: `content_types` must be a non-empty list of content type ids {content_type_ids}.")
    unknown = [c for c in content_types if c not in content_type_ids]
    if unknown:
        raise ValueError(f"{where}: unknown content type(s) {unknown}; declared: {content_type_ids}.")
    if entry.get("keywords") is None:
        raise ValueError(f"{where}: `keywords` (es / pt / en lists) are required.")
    return Topic(
        id=topic_id,
        name=name,
        description=description,
        keywords=_keywords(entry["keywords"], where),
        content_types=tuple(content_types),
    )


def load_topics(topics_file: str | None = None) -> TopicMatcher:
    """
    Loads and validates a topics config.

    :param topics_file: A YAML file with `content_types` and `topics` lists (see `components/legal/data/topics.yaml`);
        `None` = env `LEXHAY_TOPICS`, else the bundled `components/legal/data/topics.yaml`.
    :returns: The matcher of that config.
    :raises ValueError: The file is missing, is not YAML, or breaks the schema (the message says where).
    """
    path = topics_path(topics_file)
    if not path.is_file():
        raise ValueError(f"Topics file not found: {path} (set `topics_file` or env {TOPICS_ENV}).")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise ValueError(f"Topics file {path} is not valid YAML: {error}") from error
    if not isinstance(data, dict) or not isinstance(data.get("topics"), list) or not data["topics"]:
        raise ValueError(f"Topics file {path} must be a mapping with a non-empty `topics` list (and `content_types`).")
    if not isinstance(data.get("content_types"), list) or not data["content_types"]:
        raise ValueError(f"Topics file {path} needs a non-empty `content_types` list.")

    content_types = [_content_type(entry, str(path)) for entry in data["content_types"]]
    type_ids = [c.id for c in content_types]
    repeated = sorted(type_id for type_id, n in Counter(type_ids).items() if n > 1)
    if repeated:
        raise ValueError(f"{path}: content type ids repeat: {repeated}.")
    last = content_types[-1]
    if (last.collections, last.articles, last.titles) != (None, None, None):
        raise ValueError(f"{path}: the last content type must have no cues (the default, e.g. `articulo`).")

    topics = [_topic(entry, str(path), type_ids) for entry in data["topics"]]
    topic_ids = [t.id for t in topics]
    repeated = sorted(topic_id for topic_id, n in Counter(topic_ids).items() if n > 1)
    if repeated:
        raise ValueError(f"{path}: topic ids repeat: {repeated}.")
    if GENERAL_TOPIC not in topic_ids:
        raise ValueError(f"{path}: the `{GENERAL_TOPIC}` topic (no filter, no keywords) is required.")
    if len(topics) < 2:
        raise ValueError(f"{path}: declare at least one topic besides `{GENERAL_TOPIC}`.")
    return TopicMatcher(topics, content_types)
