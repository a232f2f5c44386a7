"""
A conversation turn read with the questions before it: what `DecomposeQuery` searches for a follow-up and what the
extractive answer matches a follow-up's sentences with, so both read a turn the same way.
"""

from typing import Final

from haystack.dataclasses import ChatMessage, ChatRole

# the user questions a turn is read with: a third turn ("¿me las tienen que pagar?") often goes on from a question that
# was itself a follow-up ("¿y si me despiden antes de disfrutarlas?"), whose matter only the question before it names
PREVIOUS_QUESTIONS: Final[int] = 2
# each previous question is cut to this many characters: a long story must not drown the turn's words
PREVIOUS_QUESTION_CHARS: Final[int] = 60


def previous_questions(history: list[ChatMessage] | None) -> str | None:
    """
    What a turn goes on from: the conversation's last `PREVIOUS_QUESTIONS` user questions, oldest first, each cut
    to its first `PREVIOUS_QUESTION_CHARS` characters; None without a user question.
    """
    questions = [
        message.text.strip()[:PREVIOUS_QUESTION_CHARS]
        for message in history or []
        if message.is_from(ChatRole.USER) and message.text and message.text.strip()
    ]
    return " ".join(questions[-PREVIOUS_QUESTIONS:]) if questions else None


def read_with_previous(turn: str, previous: str | None) -> str:
    """A turn read with the question(s) before it (`previous_questions`), on one line; `turn` itself without them."""
    return " ".join(f"{previous} {turn}".split()) if previous else turn


def reads_earlier_turns(query: str | None, question: str | None) -> bool:
    """
    Whether a search `query` is `question` read with the turns before it (`read_with_previous`): longer than the
    question and ending with it, whitespace aside. Such a query holds two questions in one text.
    """
    if not query or not question:
        return False
    turn, text = " ".join(question.split()), " ".join(query.split())
    return bool(turn) and len(text) > len(turn) and text.endswith(turn)
