"""A conversation turn read with the questions before it (`components.legal.conversation`)."""

from haystack.dataclasses import ChatMessage

from components.legal.conversation import PREVIOUS_QUESTION_CHARS, previous_questions, read_with_previous


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
