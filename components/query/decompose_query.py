# SPDX-License-Identifier: Apache-2.0
"""
Query decomposition: a user's question in colloquial Spanish or Portuguese -> 1-4 search queries.

`DecomposeQuery` searches a first question as the user wrote it (one more query per concept it compares, or per
question of a message that asks several), and a turn
of a conversation read with the question before it (see the class docstring). A chat generator, where a deployment
asks for it, adds keyword queries after the deterministic ones; when the call fails the deterministic queries are
used alone. The colloquial -> legal equivalence table (`components/legal/data/equivalences.yaml`, read through the
shared `components.legal.terms`) gives the LLM its hints and a follow-up's keyword queries their statutory terms.
"""

import re
import time
from typing import Any

from haystack import component, default_from_dict, default_to_dict, logging
from haystack.dataclasses import ChatMessage, ChatRole

from components.legal.catalogue import asks_for_catalogue
from components.legal.citations import CitationGrammar, asks_only_case_law
from components.legal.conversation import previous_questions, read_with_previous
from components.legal.jurisdiction import countries_named, country_readings, without_countries
from components.legal.legal_text import detect_query_language
from components.legal.terms import (
    FOLLOWUP_FILLER,
    dedup,
    extract_keywords,
    format_hints,
    load_equivalences,
    split_concepts,
)
from components.generators.llm_backends import (
    chat_json,
    generator_to_dict,
    strip_fences,
    warm_up_generator,
    with_deserialized_generator,
)

logger = logging.getLogger(__name__)

FOLLOWUP_MAX_QUERIES = 3
HISTORY_MESSAGES = 4
HISTORY_MAX_CHARS = 200
MAX_QUERY_CHARS = 120
MAX_FALLBACK_TERMS = 10
# a turn with at most this many content words names no matter of its own ("¿me las tienen que pagar?", "e o pai?",
# "¿y si no me avisaron?"): like a turn that asks nothing new, it is read with the question before it only
BARE_TURN_WORDS = 1

DECOMPOSE_SYSTEM_PROMPT = """\
Eres un asistente jurídico que prepara búsquedas en una base de datos de legislación laboral y de Seguridad \
Social española (Estatuto de los Trabajadores, Ley General de la Seguridad Social y normas relacionadas) y \
brasileña (CLT y Constitución Federal de 1988).

Convierte la pregunta del usuario en consultas de búsqueda por palabras clave.

Reglas:
- Escribe las consultas en el idioma de la pregunta: una pregunta en portugués busca en la legislación brasileña \
con los términos de la CLT (por ejemplo, "dispensa sem justa causa rescisão" para "me mandaram embora").
- Responde SOLO con un array JSON de cadenas: sin explicaciones, sin texto adicional y sin bloques de código markdown.
- Cada cadena tiene entre 3 y 6 palabras clave; nunca una frase completa ni una pregunta.
- No incluyas números de artículo: la búsqueda es semántica y no los necesita.
- Cuando el término coloquial y el jurídico sean distintos, incluye los dos (por ejemplo, "baja médica" e \
"incapacidad temporal").
- Pregunta sencilla (un solo concepto): una sola consulta.
- Comparación o varios conceptos: una consulta por concepto, como máximo {max_queries}.

Ejemplos:
Pregunta: ¿Cuántos días de vacaciones tengo?
Respuesta: ["vacaciones anuales retribuidas días disfrute"]

Pregunta: ¿Qué diferencia hay entre despido objetivo y disciplinario?
Respuesta: ["despido objetivo causas indemnización", "despido disciplinario causas procedimiento"]"""

FOLLOWUP_SYSTEM_PROMPT = """\
Eres un asistente jurídico que prepara búsquedas en una base de datos de legislación laboral y de Seguridad \
Social española (Estatuto de los Trabajadores, Ley General de la Seguridad Social y normas relacionadas) y \
brasileña (CLT y Constitución Federal de 1988).

El usuario continúa una conversación. El contexto jurídico de las respuestas anteriores ya se incorpora \
automáticamente: no hace falta buscarlo de nuevo.

Reglas:
- Devuelve consultas solo para los conceptos NUEVOS del último mensaje del usuario, como máximo {max_queries}.
- Si no hay ningún concepto nuevo (por ejemplo, "¿puedes explicarlo mejor?"), responde [].
- Escribe las consultas en el idioma de la pregunta: una pregunta en portugués busca en la legislación brasileña \
con los términos de la CLT.
- Responde SOLO con un array JSON de cadenas: sin explicaciones, sin texto adicional y sin bloques de código markdown.
- Cada cadena tiene entre 3 y 6 palabras clave; nunca una frase completa ni una pregunta.
- No incluyas números de artículo.
- Cuando el término coloquial y el jurídico sean distintos, incluye los dos.

Ejemplos (la conversación anterior trataba de las vacaciones):
Pregunta: ¿Y si no me las dan?
Respuesta: ["sanción incumplimiento empresario vacaciones reclamación"]

Pregunta: ¿Puedes explicarlo mejor?
Respuesta: []"""

DECOMPOSE_USER_TEMPLATE = "Pregunta: {query}{hints}"


_ARTICLE_REF = re.compile(
    r"\b(?:art[íi]culos?|artigos?|arts?\.?)\s*\d+(?:[ºª°o]|-[a-z])?(?:\.\d+)*(?:\s*(?:bis|ter))?"
    r"(?:\s*(?:y|e|,)\s*\d+(?:[ºª°o]|-[a-z])?(?:\.\d+)*)*(?!\w)",
    re.IGNORECASE,
)

def clean_query(query: str) -> str:
    """A query as the retrievers want it: article references, quotes and stray punctuation removed."""
    text = _ARTICLE_REF.sub(" ", query)
    text = re.sub(r"[\"“”'`¿?¡!;:()\[\]{}]", " ", text)
    return " ".join(text.split()).strip(" .,-")[:MAX_QUERY_CHARS].strip()


def _schema(limit: int, *, follow_up: bool) -> dict[str, Any]:
    return {
        "type": "array",
        "items": {"type": "string", "minLength": 3, "maxLength": MAX_QUERY_CHARS},
        "minItems": 0 if follow_up else 1,
        "maxItems": limit,
    }


def _recent_history(history: list[ChatMessage] | None) -> list[ChatMessage]:
    """The last user / assistant messages of the conversation, each truncated for the prompt."""
    turns = [m for m in history or [] if m.text and (m.is_from(ChatRole.USER) or m.is_from(ChatRole.ASSISTANT))]
    recent = []
    for message in turns[-HISTORY_MESSAGES:]:
        text = message.text[:HISTORY_MAX_CHARS]
        is_user = message.is_from(ChatRole.USER)
        recent.append(ChatMessage.from_user(text) if is_user else ChatMessage.from_assistant(text))
    return recent


def _queries_from_reply(parsed: Any, raw: str, *, follow_up: bool, limit: int) -> tuple[list[str] | None, str]:
    """
    The queries an LLM reply gives, and how they were read.

    :returns: `(queries, "llm")` for a JSON array (`[]` only in follow-up mode), `(queries, "llm_text")` for a
        one-line plain-text reply taken as a single query, or `(None, reason)` when the reply is unusable.
    """
    if not raw:
        return None, "llm_error"
    if isinstance(parsed, dict):
        lists = [value for value in parsed.values() if isinstance(value, list)]
        parsed = lists[0] if len(lists) == 1 else None
    if isinstance(parsed, str):
        parsed = [parsed]
    if isinstance(parsed, list):
        queries = dedup(q for q in (clean_query(item) for item in parsed if isinstance(item, str)) if q)[:limit]
        if queries or (follow_up and not parsed):
            return queries, "llm"
        return None, "empty_reply"
    text = strip_fences(raw).strip().strip("\"'")
    if text and "\n" not in text and len(text) <= 2 * MAX_QUERY_CHARS and text[0] not in "[{":
        query = clean_query(text)
        if query:
            return [query], "llm_text"
    return None, "malformed_json"


@component
class DecomposeQuery:
    """
    Turns a question into 1-4 search queries for hybrid retrieval, deterministically or with an LLM.

    First question: the question as the user wrote it; a comparison ("diferencia entre X y Y", "X o Y") then
    gets one more query per concept, the concept's words, and a message asking several questions one more per
    question (`components.legal.terms.split_questions`: searched as one text, the second question was mostly lost).
    No LLM is asked unless `llm_on_first_question` is set; then the LLM's keyword queries follow the deterministic
    ones. Why: the dense side embeds each query, and the embedding model reads a natural question far better than a
    bag of keywords, so a keyword query ranks the governing article lower than the question it came from, and a
    query an LLM rewrote lower still (benchmarks/answer_bench.py measures them against the plain question). The
    statute's vocabulary reaches BM25 through the retrieval chain's `TermExpander`, for every query.

    A turn of a conversation (`history` holds an earlier user question, or `carryover` the chunk ids of the
    previous answer) may go on from the previous question ("¿y me las pueden pagar?") or ask a new one ("¿cuánto
    dura el periodo de prueba?"); nothing in its text tells the two apart reliably.
    - With the previous answer's blocks carried over, the turn is taken to go on from it: it is searched read
      with the question before it ("¿Cuántos días de vacaciones tengo? ¿y me las pueden pagar?": the previous
      question supplies the matter, the embedding model reads the two as one question), then by its keywords
      plus their statutory terms, one query per concept; a turn that asks nothing new ("explícamelo mejor"), or
      names one thing only ("¿me las tienen que pagar?", "e o pai?"), is searched read with the question before
      it only: the carried blocks alone, graded by `CRAGRouter` on their
      similarity to words that name no matter, were refused as off-topic.
    - With the conversation alone (what a plain OpenAI-compatible chat client sends), the turn is searched under
      both readings, read with the question before it and as written, and `MultiQueryRetriever` fuses the two
      rankings; the conversation's reading comes first, so that its best block wins when each reading ranks a
      different block first (as written, "e posso vender uma parte?" after a question on holidays finds the
      Union's share of taxes); a turn that asks nothing new, or names one thing only, is searched read with the
      question before it.
    - With carried-over blocks but no conversation: the turn's keywords plus their statutory terms.
    "The question before it" is, from the third turn on, the last two user questions: a third turn often goes on
    from a follow-up ("¿cuántos días de vacaciones tengo? / ¿y si me despiden antes de disfrutarlas? / ¿me las
    tienen que pagar?"), and read with the follow-up alone it had no matter.
    Why: without carried blocks, a follow-up searched as written lost its matter, and a new question searched
    only read with the previous one lost its own; both readings keep new questions as good as asked alone and
    find a follow-up's article far more often. With carried blocks, the first reading alone found follow-ups'
    articles more often than both, and new questions' less often; read with two questions, third turns that go on
    from a follow-up are found far more often, a new question asked third somewhat less often with carried blocks
    (benchmarks/follow_up_bench.py). A turn of one content word searched as written finds any article that holds
    the word ("¿y si soy el padre?" after a question on the birth permit: the King's guardian, CE art. 60); read
    with the question before it only, such turns found their article more often in either mode, and a question
    that asks something new names at least two things.

    The numbers of what a question cites outside the corpus, case law ("Súmula 331 do TST", a CNJ process number)
    and norms the laws table lacks ("Lei 605/49"), are left out of every deterministic query: searched, a number
    finds the article that bears it (`CitationGrammar.search_text`). A first question about case law and nothing
    else ("Súmula 331 do TST": `citations.asks_only_case_law`) gets no query at all (`path` `outside_corpus`, nor is
    the LLM asked): an index of statutes holds none, its leftover words would find any article, and the answer is
    that it is not in the corpus. A norm the laws table lacks ("Lei 605/49") is still searched: the caller may have
    indexed it. A question about the corpus itself and nothing else ("¿qué leyes tienes?":
    `catalogue.asks_for_catalogue`) gets no query either (`path` `catalogue`): `NormCatalogue` lists the norms.

    No LLM is asked about a turn unless `llm_on_follow_up` is set; then the LLM gets the system prompt, the last
    4 messages of the conversation (200 characters each) and the question, plus the equivalences found in it,
    and returns keyword queries for the turn's new concepts, at most 3 queries in all, which follow the
    deterministic ones. A reply that is not JSON but one line of text is used as a single query; when the call fails
    (error, timeout, unusable reply) the deterministic queries are used. Why off: with the default local model,
    the LLM's queries alone found the labelled article in far fewer follow-up answers than the deterministic
    queries, and after the conversation-read question they added nothing but seconds of latency.

    Usage example:

    ```python
    from components.query.decompose_query import DecomposeQuery
    from components.generators.llm_backends import default_chat_generator

    decomposer = DecomposeQuery(chat_generator=default_chat_generator())
    result = decomposer.run(query="¿Qué diferencia hay entre despido objetivo y disciplinario?")
    result["queries"]   # ["¿Qué diferencia hay entre despido objetivo y disciplinario?", "despido objetivo",
                        #  "despido disciplinario"]

    follow_up = decomposer.run(query="¿Y si es disciplinario?", history=history, carryover=previous_chunk_ids)
    follow_up["fallback"]  # True when the LLM was asked but the deterministic path produced the queries
    ```
    """

    def __init__(
        self,
        *,
        enabled: bool = True,
        chat_generator: Any | None = None,
        max_queries: int = 4,
        equivalences_file: str | None = None,
        timeout: float | None = None,
        llm_on_first_question: bool = False,
        llm_on_follow_up: bool = False,
    ) -> None:
        """
        Create a DecomposeQuery.

        :param chat_generator: A Haystack chat generator (`OpenAIChatGenerator`, `LocalLlamaChatGenerator`, ...)
            for the questions `llm_on_first_question` and `llm_on_follow_up` send to it; `None` always uses the
            deterministic queries.
        :param max_queries: Most queries returned for a first question (follow-ups: at most 3, or fewer when
            this is lower).
        :param equivalences_file: YAML mapping colloquial expressions to statutory terms; `None` = the bundled
            `components/legal/data/equivalences.yaml`.
        :param timeout: Seconds allowed to the LLM call, whatever the generator (a slow reply is abandoned and
            the fallback runs); `None` = only the generator's own timeout applies.
        :param llm_on_first_question: Whether a first question also goes to the LLM, whose keyword queries are
            added after the deterministic ones (off: with the models measured, they ranked the governing article
            lower; see above).
        :param llm_on_follow_up: Whether a conversation turn goes to the LLM, whose keyword queries for the turn's
            new concepts are added after the deterministic ones (off: see above).
        :raises ValueError: `max_queries` < 1, `timeout` <= 0, or an unreadable equivalences file.
        """
        if max_queries < 1:
            raise ValueError(f"`max_queries` must be >= 1, got {max_queries}.")
        if timeout is not None and timeout <= 0:
            raise ValueError(f"`timeout` must be None or a positive number of seconds, got {timeout}.")
        self.enabled = enabled
        self.chat_generator = chat_generator
        self.max_queries = max_queries
        self.equivalences_file = equivalences_file
        self.timeout = timeout
        self.llm_on_first_question = llm_on_first_question
        self.llm_on_follow_up = llm_on_follow_up
        self.equivalences = load_equivalences(equivalences_file)
        self._grammar = CitationGrammar()

    def to_dict(self) -> dict[str, Any]:
        """
        Serializes the component to a dictionary.

        :returns: Dictionary with serialized data.
        """
        return default_to_dict(
            self,
            enabled=self.enabled, chat_generator=generator_to_dict(self.chat_generator),
            max_queries=self.max_queries,
            equivalences_file=self.equivalences_file,
            timeout=self.timeout,
            llm_on_first_question=self.llm_on_first_question,
            llm_on_follow_up=self.llm_on_follow_up,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DecomposeQuery":
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

    @component.output_types(queries=list[str], fallback=bool, trace=dict[str, Any])
    def run(
        self,
        query: str,
        history: list[ChatMessage] | None = None,
        carryover: list[str] | None = None,
        enabled: bool | None = None,
    ) -> dict[str, Any]:
        """
        Decomposes a question into search queries.

        :param query: The user's question.
        :param history: The conversation so far; an earlier user question makes this a conversation turn
            (`follow_up` mode; the LLM, when asked, gets its last 4 messages).
        :param carryover: Ids of the chunks used by the previous answer; non-empty = `follow_up` mode too.
        :param enabled: Overrides the init `enabled` for this run (per-request feature flag).
        :returns: A dictionary with:
            - `queries`: 1 to `max_queries` search queries; in follow-up mode 0 to 3, where `[]` means "skip
              retrieval and use the carryover".
            - `fallback`: `True` when the LLM was to be asked (`llm_on_follow_up` / `llm_on_first_question`)
              but the deterministic path produced the queries.
            - `trace`: `mode` (`first_question` / `follow_up`), `path` (`deterministic` for a first question
              the LLM is not asked about, `llm`, `llm_text` for a plain-text reply used as one query, or
              `fallback`), `fallback_reason` (`no_llm`, `llm_error`, `empty_reply`, `malformed_json`),
              `llm_reply`, `equivalences` (expressions found), `queries`, `skip_retrieval`, `elapsed_ms`.
        :raises ValueError: `query` is empty.
        """
        if not isinstance(query, str) or not query.strip():
            raise ValueError("DecomposeQuery needs a non-empty `query` string.")
        if not (self.enabled if enabled is None else enabled):
            trace = {"mode": "disabled", "path": "disabled", "queries": [query.strip()]}
            return {"queries": [query.strip()], "fallback": False, "trace": trace}
        started = time.perf_counter()
        previous = previous_questions(history)
        follow_up = bool(carryover) or previous is not None
        limit = min(FOLLOWUP_MAX_QUERIES, self.max_queries) if follow_up else self.max_queries
        matches = self.equivalences.matches(query)
        trace: dict[str, Any] = {
            "mode": "follow_up" if follow_up else "first_question",
            "carryover": len(carryover or []),
            "equivalences": [key for key, _ in matches],
            "llm": type(self.chat_generator).__name__ if self.chat_generator is not None else None,
            "llm_reply": None,
        }
        queries: list[str] | None = None
        asks_llm = self.llm_on_follow_up if follow_up else self.llm_on_first_question
        path = "no_llm"
        # "Súmula 331 do TST": searched, "súmula do" finds any article; the answer says it is not in the corpus
        # (the case-law pattern first: most questions cite none, and then the citations need not be read)
        case_law = [] if follow_up else self._grammar.extract_case_law(query)
        outside = bool(case_law) and asks_only_case_law(query, self._grammar.extract(query, colloquial=True), case_law)
        # "¿qué leyes tienes?" asks for the list of norms (`NormCatalogue`), which no article holds
        catalogue = not outside and asks_for_catalogue(query)
        if self.chat_generator is not None and asks_llm and not (outside or catalogue):
            messages = self._messages(query, history, follow_up=follow_up, matches=matches, limit=limit)
            parsed, raw = chat_json(
                self.chat_generator, messages, schema=_schema(limit, follow_up=follow_up), timeout=self.timeout
            )
            trace["llm_reply"] = raw
            queries, path = _queries_from_reply(parsed, raw, follow_up=follow_up, limit=limit)
        # the LLM only adds queries: the deterministic ones (the question as written, a turn's readings) come first;
        # the numbers of a norm or a súmula the corpus lacks are not searched (they would find that article)
        deterministic = self._deterministic(
            self._grammar.search_text(query), follow_up=follow_up, limit=limit, previous=previous,
            carryover=bool(carryover),
        )
        if outside or catalogue:
            queries = []
            trace.update(path="outside_corpus" if outside else "catalogue", fallback_reason=None)
        elif queries is None:
            queries = deterministic
            if asks_llm:
                trace.update(path="fallback", fallback_reason=path)
            else:
                trace.update(path="deterministic", fallback_reason=None)
        else:
            queries = dedup([*deterministic, *queries])[:limit]
            trace.update(path=path, fallback_reason=None)
        trace.update(
            queries=queries,
            skip_retrieval=not queries,
            elapsed_ms=round((time.perf_counter() - started) * 1000, 1),
        )
        logger.debug("DecomposeQuery {path}: {queries}", path=trace["path"], queries=queries)
        return {"queries": queries, "fallback": trace["path"] == "fallback", "trace": trace}

    def _messages(
        self,
        query: str,
        history: list[ChatMessage] | None,
        *,
        follow_up: bool,
        matches: list[tuple[str, str]],
        limit: int,
    ) -> list[ChatMessage]:
        hints = format_hints(matches, self.equivalences.language_of(query))
        user = ChatMessage.from_user(DECOMPOSE_USER_TEMPLATE.format(query=query.strip(), hints=hints))
        if not follow_up:
            return [ChatMessage.from_system(DECOMPOSE_SYSTEM_PROMPT.format(max_queries=limit)), user]
        system = ChatMessage.from_system(FOLLOWUP_SYSTEM_PROMPT.format(max_queries=limit))
        return [system, *_recent_history(history), user]

    def _deterministic(
        self,
        query: str,
        *,
        follow_up: bool,
        limit: int,
        previous: str | None = None,
        carryover: bool = False,
    ) -> list[str]:
        """
        Deterministic queries. A first question: the question as written, then, when it names several countries,
        one reading per country (`country_readings`), else, when it compares concepts or asks several questions,
        one query per concept or question (`split_concepts`, its words).

        A turn of a conversation (`previous`: what it goes on from, `previous_questions`: the last user question,
        from the third turn on the last two):
        - without carried-over blocks: the turn read with `previous`, then the turn as written, for the retriever
          to fuse (the first query's best block wins a tie of the two rankings' first ranks); a turn that asks
          nothing new (only words that ask to go on): read with `previous` only;
        - with them (`carryover`): the turn read with `previous`, then one query per concept, its keywords plus
          their statutory terms; nothing new: read with `previous` only;
        - either way, a turn naming only a country ("¿y en Brasil?"): `previous` without its countries, read with
          the turn, whose country the re-ranker puts first;
        - either way, a turn with at most `BARE_TURN_WORDS` content words and no country ("¿me las tienen que
          pagar?", "e o pai?"): read with `previous` only.

        Carried-over blocks without the conversation: one query per concept, its keywords plus their statutory
        terms; nothing left, nothing new: no query.
        """
        concepts = split_concepts(query)
        if not follow_up:  # a question about two countries' law is compared by country, not by its words
            parts = country_readings(query) or (concepts if len(concepts) > 1 else [])
            return dedup([" ".join(query.split()), *parts])[:limit]
        language = detect_query_language(query, default="es")  # the whole question tells it better than a part
        keywords = [
            extract_keywords(without_countries(c), extra_stopwords=FOLLOWUP_FILLER, language=language)
            for c in concepts
        ]
        if previous is not None and not any(keywords):
            # "¿y en Brasil?": the question before, without its own country, of the country the turn names
            return [read_with_previous(query, without_countries(previous) if countries_named(query) else previous)]
        if previous is not None and sum(map(len, keywords)) <= BARE_TURN_WORDS and not countries_named(query):
            # one word ("pagar", "padre") is no matter: searched alone, it finds any article that has the word
            return [read_with_previous(query, previous)]
        if previous is not None and not carryover:
            return dedup([read_with_previous(query, previous), " ".join(query.split())])[:limit]
        queries = []
        for concept, words in zip(concepts, keywords):
            if words:
                terms = self.equivalences.terms(concept, language)
                queries.append(" ".join(dedup([*words, *terms])[:MAX_FALLBACK_TERMS]))
        if queries and previous is not None:
            queries.insert(0, read_with_previous(query, previous))
        return dedup(queries)[:limit]
