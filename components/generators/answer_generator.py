"""The answer stage: the LLM answers from the numbered context, or the extractive answer when it cannot."""

from collections.abc import Callable
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.dataclasses import ChatMessage, StreamingChunk

from components.generators.extractive_answer import ExtractiveAnswer
from components.generators.llm_backends import chat_text, generator_to_dict, warm_up_generator, with_deserialized_generator
from components.legal.answer_format import cited_indices, split_meta
from components.legal.citations import CitationGrammar, cites_block
from components.legal.terms import asks_for_cited_text

logger = logging.getLogger(__name__)

# why the extractive answer replaced the LLM's (the `fallback_reason` output)
FALLBACK_NO_LLM = "no LLM configured"
FALLBACK_NO_REPLY = "the LLM gave no answer"
FALLBACK_UNCITED = "the LLM's answer cites none of its context"
FALLBACK_FULL_TEXT = "the question asks for the text of the articles it cites: quoted as written"


@component
class AnswerGenerator:
    """
    Generates the answer (text + `===META===` block) with a chat generator, falling back to `ExtractiveAnswer`.

    The fallback runs when no chat generator is configured, when the call fails or times out, when the reply
    holds no answer (empty, or a META block alone), or when the reply cites none of its context: no `===META===`
    block or USED / DROP line, no fragment reference "[n]" within the context, no article a context block holds
    ("art. 392 da CLT"). Such a reply has ignored the answer format and grounds nothing it says in the statutes (a
    small local model's paraphrase of a block, with its errors, came out as the answer, with no citation to
    check); the extractive answer quotes the retrieved articles instead. A reply that follows the format is kept
    even when it uses no fragment (`USED|` empty, every fragment dropped: the model's judgement that the context
    does not answer). A question that cites articles and asks for their text ("transcribe el artículo 38 del ET",
    "o art. 7º da CF na íntegra") is answered by the extractive answer without calling the model: the statute's own
    words, whole, and at once. `fallback` says which path produced the reply and `fallback_reason` why, so the
    pipeline always answers and the trace tells.

    ### Usage example

    ```python
    from components.generators.answer_generator import AnswerGenerator
    from components.builders.answer_prompt import AnswerPromptBuilder

    prompt = AnswerPromptBuilder().run(question=question, documents=parents)
    reply = AnswerGenerator(chat_generator=None).run(
        prompt=prompt["prompt"], question=question, documents=prompt["context_documents"]
    )["replies"][0].text  # extractive answer, ends with ===META===
    ```
    """

    def __init__(
        self,
        *,
        chat_generator: Any | None = None,
        timeout: float | None = None,
        extractive: ExtractiveAnswer | None = None,
    ) -> None:
        """
        Create an AnswerGenerator.

        :param chat_generator: Any Haystack chat generator (`OpenAIChatGenerator`, `LocalLlamaChatGenerator`);
            `None` always uses the extractive answer.
        :param timeout: Seconds to wait for the LLM before falling back; `None` = the generator's own limit.
        :param extractive: The fallback (default `ExtractiveAnswer()`).
        """
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be None or > 0, got {timeout}")
        self.chat_generator = chat_generator
        self.timeout = timeout
        self.extractive = extractive or ExtractiveAnswer()
        self._citations = CitationGrammar()

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(
            self,
            chat_generator=generator_to_dict(self.chat_generator),
            timeout=self.timeout,
            extractive=self.extractive.to_dict(),
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "AnswerGenerator":
        """Deserialize this component from a dictionary."""
        data = with_deserialized_generator(data)
        extractive = data["init_parameters"].get("extractive")
        if isinstance(extractive, dict):
            data["init_parameters"]["extractive"] = ExtractiveAnswer.from_dict(extractive)
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """Warm up the chat generator (loads a local model); idempotent."""
        warm_up_generator(self.chat_generator)

    @component.output_types(replies=list[ChatMessage], fallback=bool, fallback_reason=str | None)
    def run(
        self,
        prompt: list[ChatMessage],
        question: str,
        documents: list[Document],
        streaming_callback: Callable[[StreamingChunk], None] | None = None,
        citations: list[dict[str, Any]] | None = None,
        out_of_scope: list[str] | None = None,
        unknown_norms: list[str] | None = None,
        missing_articles: list[str] | None = None,
        history: list[ChatMessage] | None = None,
    ) -> dict[str, Any]:
        """
        Answer the question.

        :param prompt: The chat messages built by `AnswerPromptBuilder`.
        :param question: The user's question (for the extractive fallback).
        :param documents: The numbered context documents, in prompt order (for the extractive fallback).
        :param streaming_callback: Called with each token of the LLM reply as it is generated (META block included);
            never called for the extractive answer.
        :param citations: The question's citations (`CitationDetector.citations`), for the extractive fallback,
            which quotes a cited article first; `None` lets it read them from `question`.
        :param out_of_scope: The branch of law the question is about when the corpus lacks its statutes
            (`ScopeChecker.out_of_scope`), for the extractive fallback's notice (the LLM has it in its prompt).
        :param unknown_norms: The norms and case law the question cites that the corpus lacks
            (`CitationDetector.unknown_norms`), for the extractive fallback's notice; `None` lets it read them.
        :param missing_articles: The cited articles the direct fetch did not find (`LexicalFirstGate.missing`), for
            the extractive fallback's notice.
        :param history: The conversation before `question`, for the extractive fallback, which matches a turn's
            sentences read with the questions before it (the LLM has the conversation in its prompt).
        :returns: `replies` (one assistant message: answer + META block), `fallback` (True = extractive) and
            `fallback_reason` (why the extractive answer was used; `None` for the LLM's).
        """
        reason = FALLBACK_NO_LLM
        if self.chat_generator is not None and asks_for_cited_text(question, citations):
            reason = FALLBACK_FULL_TEXT  # "transcribe el artículo 38": the statute's words, not a model's rendering
        elif self.chat_generator is not None:
            text = chat_text(self.chat_generator, prompt, timeout=self.timeout, streaming_callback=streaming_callback)
            answer, meta_lines, has_delimiter = split_meta(text or "")
            reason = FALLBACK_UNCITED if answer else FALLBACK_NO_REPLY  # "===META===\nUSED|1" alone answers nothing
            has_meta = bool(meta_lines) or has_delimiter
            if answer and (not documents or self._cites_context(answer, has_meta, documents)):
                return {"replies": [ChatMessage.from_assistant(text)], "fallback": False, "fallback_reason": None}
            logger.warning("{reason}; using the extractive answer", reason=reason)
        extractive = self.extractive.run(
            question=question,
            documents=documents,
            citations=citations,
            out_of_scope=out_of_scope,
            unknown_norms=unknown_norms,
            missing_articles=missing_articles,
            history=history,
        )
        return {"replies": extractive["replies"], "fallback": True, "fallback_reason": reason}

    def _cites_context(self, answer: str, has_meta: bool, documents: list[Document]) -> bool:
        """
        Whether a reply refers to its context: it has a META block or trailing USED / DROP / NEED lines
        (`has_meta`), or its answer text cites a fragment of the context ("[2]") or an article a context block holds
        (`cites_block`, as the citation verifier checks it).
        """
        if has_meta or any(1 <= i <= len(documents) for i in cited_indices(answer)):
            return True
        return any(
            cites_block(citation, doc.meta)
            for citation in self._citations.extract(answer)
            if citation.get("article")
            for doc in documents
        )
