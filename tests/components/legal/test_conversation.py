"""A conversation turn read with the questions before it (`components.legal.conversation`)."""

from haystack.dataclasses import ChatMessage

from components.legal.conversation import (
    PREVIOUS_QUESTION_CHARS,
    previous_questions,
    read_with_previous,
    reads_earlier_turns,
)


def test_a_turn_goes_on_from_the_last_two_user_questions_each_cut():
    long = "Trabajo en una empresa de limpieza desde hace años y mi jefe me ha dicho hoy que tengo que cambiar de turno"
    history = [
        ChatMessage.from_user("¿Qué es un ERTE?"),
        ChatMessage.from_assistant("Una suspensión temporal (ET, art. 47)."),
        ChatMessage.from_user("¿Cuántos días de vacaciones tengo al año?"),
        ChatMessage.from_assistant("Treinta días naturales (ET, art. 38)."),
        ChatMessage.from_user(long),
        ChatMessage.from_user("   "),
    ]
    previous = previous_questions(history)
    assert previous == f"¿Cuántos días de vacaciones tengo al año? {long[:PREVIOUS_QUESTION_CHARS]}"
    assert "ERTE" not in previous and "Treinta" not in previous  # two questions, no answer
    assert previous_questions([ChatMessage.from_assistant("Hola")]) is None
    assert previous_questions(None) is None


def test_read_with_previous_is_one_line():
    assert read_with_previous("¿y me las pagan?\n", "¿Cuántos días   de vacaciones tengo?") == (
        "¿Cuántos días de vacaciones tengo? ¿y me las pagan?")


def test_reads_earlier_turns_tells_a_conversation_reading_from_the_question_itself():
    turn = "tenho direito a folga em outro dia da semana?"
    reading = read_with_previous(turn + "\n", "trabalho todos os domingos")
    assert reads_earlier_turns(reading, turn)
    assert not reads_earlier_turns(turn, turn)  # the turn as written
    assert not reads_earlier_turns(" ".join(turn.split()), "  " + turn)  # whitespace aside, the same text
    assert not reads_earlier_turns("folga domingos", turn)  # a query made from the question, not a reading
    assert not reads_earlier_turns(reading, None) and not reads_earlier_turns(None, turn)
    assert not reads_earlier_turns(reading, "   ")
