# SPDX-License-Identifier: Apache-2.0
"""
Indexing stage: `TopicTagger` writes `meta["topics"]` and `meta["content_type"]` from the declarative topics config.

The config and its keyword matcher are shared vocabulary (`components.legal.topics`): the query-side
`TopicFilter` matches questions through the same `TopicMatcher`.
"""

from collections import Counter
from dataclasses import replace
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging

from components.legal.topics import load_topics

logger = logging.getLogger(__name__)

@component
class TopicTagger:
    """
    Tags chunks with topics and a content type from the declarative topics config, for topic-filtered retrieval.

    A document gets `meta["topics"]`: the ids of the topics whose keywords occur at least `min_hits` times in its
    text plus its `article_title` (accent-folded lowercase word prefixes; only the keywords of the document's
    `lang` when the config has some), at most `max_topics`, most hits first, and only topics that list the
    document's content type. `meta["content_type"]` is the first content type of the config whose cues
    (collection, article key pattern, article title pattern) match. A child chunk whose parent block is in the
    same batch takes its parent's tags (`inherit_from_parent`): a 300-character child rarely repeats its
    article's keywords, and a topic filter must find all chunks of an article about that topic.

    Each run logs the tag distribution (topic -> documents).

    Usage example:

    ```python
    from haystack import Document
    from components.extractors.topic_tagger import TopicTagger

    tagger = TopicTagger()
    doc = Document(content="El periodo de vacaciones anuales retribuidas ...", meta={"article": "38", "lang": "es",
                   "article_title": "Vacaciones anuales."})
    tagged = tagger.run(documents=[doc])["documents"][0]
    tagged.meta["topics"], tagged.meta["content_type"]  # ["vacaciones_permisos"], "articulo"
    ```
    """

    def __init__(
        self,
        *,
        topics_file: str | None = None,
        min_hits: int = 2,
        max_topics: int = 3,
        inherit_from_parent: bool = True,
    ) -> None:
        """
        Create a TopicTagger.

        :param topics_file: The topics YAML; `None` = env `LEXHAY_TOPICS`, else the bundled
            `components/legal/data/topics.yaml`.
        :param min_hits: Keyword occurrences a document needs for a topic.
        :param max_topics: Most topics per document.
        :param inherit_from_parent: Children (meta `parent_id`) whose parent is in the same batch take its tags.
        :raises ValueError: `min_hits` or `max_topics` < 1, or a bad topics file.
        """
        if min_hits < 1:
            raise ValueError(f"`min_hits` must be >= 1, got {min_hits}.")
        if max_topics < 1:
            raise ValueError(f"`max_topics` must be >= 1, got {max_topics}.")
        self.topics_file = topics_file
        self.min_hits = min_hits
        self.max_topics = max_topics
        self.inherit_from_parent = inherit_from_parent
        self.matcher = load_topics(topics_file)

    def to_dict(self) -> dict[str, Any]:
        """
        Serializes the component to a dictionary.

        :returns: Dictionary with serialized data.
        """
        return default_to_dict(
            self,
            topics_file=self.topics_file,
            min_hits=self.min_hits,
            max_topics=self.max_topics,
            inherit_from_parent=self.inherit_from_parent,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TopicTagger":
        """
        Deserializes the component from a dictionary.

        :param data: Dictionary to deserialize from.
        :returns: Deserialized component.
        """
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """
        Tags documents with topics and a content type.

        :param documents: Chunks (articles, parent blocks, children) with meta `article_title`, `article`,
            `collection`, `lang` when known.
        :returns: `documents`: new Documents (same ids, content and embeddings) whose meta has `topics` (list of
            topic ids, possibly empty) and `content_type`.
        """
        tags: dict[str, tuple[list[str], str]] = {}
        output = []
        for doc in documents:
            parent_id = doc.meta.get("parent_id")
            if self.inherit_from_parent and doc.meta.get("level") == "child" and parent_id in tags:
                topics, content_type = tags[parent_id]
            else:
                topics, content_type = self._tag(doc)
            tags[doc.id] = (topics, content_type)
            output.append(replace(doc, meta={**doc.meta, "topics": list(topics), "content_type": content_type}))

        distribution = Counter(topic for doc in output for topic in doc.meta["topics"])
        logger.info(
            "TopicTagger: {tagged}/{total} documents tagged; topics: {topics}; content types: {types}",
            tagged=sum(1 for doc in output if doc.meta["topics"]),
            total=len(output),
            topics=dict(distribution.most_common()),
            types=dict(Counter(doc.meta["content_type"] for doc in output).most_common()),
        )
        return {"documents": output}

    def _tag(self, doc: Document) -> tuple[list[str], str]:
        title = str(doc.meta.get("article_title") or "")
        content_type = self.matcher.content_type(
            article=str(doc.meta.get("article") or ""), title=title, collection=doc.meta.get("collection")
        )
        matches = self.matcher.matches(f"{doc.content or ''}\n{title}", lang=doc.meta.get("lang"))
        eligible = [
            (len(spans), topic_id)
            for topic_id, spans in matches.items()
            if len(spans) >= self.min_hits and content_type in self.matcher.get(topic_id).content_types
        ]
        ranked = sorted(eligible, key=lambda item: -item[0])  # stable: ties keep config order
        return [topic_id for _, topic_id in ranked[: self.max_topics]], content_type
