# SPDX-License-Identifier: Apache-2.0
"""
HyDE (hypothetical document embeddings): embed a statute-like passage that would answer the question, not the
question itself, so the dense search compares text with text of the same register.
"""

import re
from typing import Any

from haystack import component, default_from_dict, default_to_dict, logging
from haystack.dataclasses import ChatMessage

from components.legal.terms import format_hints, load_equivalences
from components.generators.llm_backends import (
    chat_text,
    generator_to_dict,
    strip_fences,
    warm_up_generator,
    with_deserialized_generator,
)

logger = logging.getLogger(__name__)

MIN_DOCUMENT_CHARS = 40
MAX_DOCUMENT_CHARS = 1500

HYDE_SYSTEM_PROMPT = """\
Eres un experto en Derecho del Trabajo y de la Seguridad Social español. Redacta el texto de un artículo \
hipotético de ley que respondería a la pregunta del usuario, con el estilo del Estatuto de los Trabajadores \
o de la Ley General de la Seguridad Social.

Reglas:
- Entre 3 y 5 frases, en español, con el registro y el vocabulario técnico de una norma ("El trabajador \
tendrá derecho a...", "El empresario deberá...", "En ningún caso...").
- Usa los términos jurídicos precisos (por ejemplo, "incapacidad temporal" y no "baja médica").
- Escribe solo el texto del artículo: sin título, sin número de artículo, sin introducción, sin comentarios \
y sin markdown.
- Si no conoces un dato exacto, redacta igualmente una regla verosímil: el texto solo sirve para encontrar \
artículos parecidos."""

HYDE_USER_TEMPLATE = "Pregunta: {query}{hints}"
# a Portuguese question gets a Brazilian article: its hypothetical text must look like the CLT / CF88 blocks it
# is embedded to find, not like the Estatuto
HYDE_SYSTEM_PROMPT_PT = """\
Você é especialista em Direito do Trabalho brasileiro. Redija o texto de um artigo hipotético de lei que \
responderia à pergunta do usuário, no estilo da Consolidação das Leis do Trabalho (CLT) ou da Constituição \
Federal.

Regras:
- Entre 3 e 5 frases, em português, com o registro e o vocabulário técnico de uma norma ("O empregado terá \
direito a...", "O empregador deverá...", "Em nenhuma hipótese...").
- Use os termos jurídicos precisos (por exemplo, "dispensa sem justa causa" e não "mandado embora").
- Escreva só o texto do artigo: sem título, sem número de artigo, sem introdução, sem comentários e sem \
markdown.
- Se não souber um dado exato, redija mesmo assim uma regra verossímil: o texto serve apenas para encontrar \
artigos parecidos."""
HYDE_USER_TEMPLATE_PT = "Pergunta: {query}{hints}"

_ARTICLE_LABEL = re.compile(r"^(?:art[íi]culo|art\.)\s*\d+(?:\s*(?:bis|ter))?\s*[.:-]?\s*", re.IGNORECASE)


HYDE_GENERATION = {"max_tokens": 200}


def _clean_document(text: str) -> str:
    """The passage as one paragraph: fences, a leading "Artículo N." label and extra whitespace removed."""
    body = " ".join(strip_fences(text).split())
    return _ARTICLE_LABEL.sub("", body).strip()[:MAX_DOCUMENT_CHARS]


@component
class HyDE:
    """
    Writes a hypothetical statute passage answering the question, to be embedded for the dense search.

    With a chat generator, the LLM writes 3-5 sentences in the style of an article of the Estatuto de los
    Trabajadores, using statutory terms (the colloquial -> legal equivalences found in the question are given
    to it); a Portuguese question gets a Portuguese prompt and an article in the style of the CLT, so the passage
    looks like the Brazilian blocks it is embedded to find. Without one, or when the call fails or returns too
    little text, the fallback is the question followed by the statutory phrases of its equivalences ("me han dado
    la baja médica incapacidad temporal prestación"). The query pipeline embeds the result for the dense side
    only; BM25 keeps the real queries.

    Usage example:

    ```python
    from components.query.hyde import HyDE
    from components.generators.llm_backends import default_chat_generator

    hyde = HyDE(chat_generator=default_chat_generator())
    result = hyde.run(query="¿Cuántos días de vacaciones tengo?")
    result["hypothetical_document"]  # "El periodo de vacaciones anuales retribuidas ... treinta días naturales."
    result["fallback"]               # True when the deterministic expansion was used
    ```
    """

    def __init__(
        self,
        *,
        enabled: bool = True,
        chat_generator: Any | None = None,
        equivalences_file: str | None = None,
        timeout: float | None = None,
    ) -> None:
        """
        Create a HyDE component.

        :param chat_generator: A Haystack chat generator; `None` always uses the deterministic expansion.
        :param equivalences_file: YAML mapping colloquial expressions to statutory terms; `None` = the bundled
            `components/legal/data/equivalences.yaml`.
        :param timeout: Seconds allowed to the LLM call, whatever the generator; `None` = only the generator's
            own timeout applies.
        :param enabled: Feature flag (`hyde`; `False` writes nothing: `hypothetical_document` is None).
            A run's `enabled` overrides it.
        :raises ValueError: `timeout` <= 0 or an unreadable equivalences file.
        """
        if timeout is not None and timeout <= 0:
            raise ValueError(f"`timeout` must be None or a positive number of seconds, got {timeout}.")
        self.enabled = enabled
        self.chat_generator = chat_generator
        self.equivalences_file = equivalences_file
        self.timeout = timeout
        self.equivalences = load_equivalences(equivalences_file)

    def to_dict(self) -> dict[str, Any]:
        """
        Serializes the component to a dictionary.

        :returns: Dictionary with serialized data.
        """
        return default_to_dict(
            self,
            enabled=self.enabled, chat_generator=generator_to_dict(self.chat_generator),
            equivalences_file=self.equivalences_file,
            timeout=self.timeout,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "HyDE":
        """
        Deserializes the component from a dictionary.

        :param data: Dictionary to deserialize from.
        :returns: Deserialized component.
        """
        return default_from_dict(cls, with_deserialized_generator(data))

    def warm_up(self) -> None:
        """
        Warms up the chat generator (loads a local model); idempotent.

        :raises RuntimeError: The generator cannot start. `run` never raises for that: it falls back.
        """
        warm_up_generator(self.chat_generator)

    @component.output_types(hypothetical_document=str | None, fallback=bool)
    def run(self, query: str, enabled: bool | None = None) -> dict[str, Any]:
        """
        Writes the hypothetical document of a question.

        :param query: The user's question.
        :param enabled: Overrides the init `enabled` for this run (per-request feature flag).
        :returns: A dictionary with:
            - `hypothetical_document`: The passage to embed (one paragraph).
            - `fallback`: `True` when it is the deterministic expansion of the question.
        :raises ValueError: `query` is empty.
        """
        if not isinstance(query, str) or not query.strip():
            raise ValueError("HyDE needs a non-empty `query` string.")
        if not (self.enabled if enabled is None else enabled):
            return {"hypothetical_document": None, "fallback": False}
        query = query.strip()
        language = self.equivalences.language_of(query)
        matches = self.equivalences.matches(query, language)
        if self.chat_generator is not None:
            portuguese = language == "pt"
            system, user = (HYDE_SYSTEM_PROMPT_PT, HYDE_USER_TEMPLATE_PT) if portuguese else (
                HYDE_SYSTEM_PROMPT, HYDE_USER_TEMPLATE)
            messages = [
                ChatMessage.from_system(system),
                ChatMessage.from_user(user.format(query=query, hints=format_hints(matches, language))),
            ]
            # 3-5 sentences: capping the reply keeps a local model's HyDE call to seconds
            reply = chat_text(self.chat_generator, messages, timeout=self.timeout, generation_kwargs=HYDE_GENERATION)
            document = _clean_document(reply or "")
            if len(document) >= MIN_DOCUMENT_CHARS:
                return {"hypothetical_document": document, "fallback": False}
            if reply:
                logger.warning("HyDE: the LLM reply is too short to use: {reply}", reply=reply[:200])
        return {"hypothetical_document": self.equivalences.expand(query, language, matches=matches), "fallback": True}
