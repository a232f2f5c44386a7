import pytest
from haystack import Document, Pipeline
from haystack.dataclasses import ChatRole

from components.query.topic_filter import TopicFilter
from components.extractors.topic_tagger import TopicTagger
from components.legal.topics import DEFAULT_TOPICS_FILE, load_topics
from tests.scripted_llm import ScriptedChatGenerator

VACATIONS = "¿cuántos días de vacaciones tengo?"
VACATIONS_FILTER = {"field": "meta.topics", "operator": "in", "value": ["vacaciones_permisos"]}


def test_init_defaults_and_validation(tmp_path):
    resolver = TopicFilter()
    assert (resolver.chat_generator, resolver.topics_file, resolver.timeout) == (None, None, None)
    with pytest.raises(ValueError, match="timeout"):
        TopicFilter(timeout=0)
    with pytest.raises(ValueError, match="not found"):
        TopicFilter(topics_file=str(tmp_path / "missing.yaml"))


def test_to_dict():
    assert TopicFilter(timeout=5.0).to_dict() == {
        "type": "components.query.topic_filter.TopicFilter",
        "init_parameters": {"enabled": True, "chat_generator": None, "topics_file": None, "timeout": 5.0},
    }


def test_from_dict_with_nested_generator():
    resolver = TopicFilter(
        chat_generator=ScriptedChatGenerator(replies=['{"topic": "desempleo"}']), topics_file=str(DEFAULT_TOPICS_FILE)
    )
    data = resolver.to_dict()
    assert data["init_parameters"]["chat_generator"] == {
        "type": "tests.scripted_llm.ScriptedChatGenerator",
        "init_parameters": {"replies": ['{"topic": "desempleo"}'], "error": None, "delay": 0.0},
    }
    restored = TopicFilter.from_dict(data)
    assert isinstance(restored.chat_generator, ScriptedChatGenerator)
    assert restored.to_dict() == data
    assert restored.run(query="¿Cobro el paro?")["topic"] == "desempleo"
    assert TopicFilter.from_dict(TopicFilter().to_dict()).chat_generator is None


def test_pipeline_yaml_round_trip():
    pipeline = Pipeline()
    pipeline.add_component(
        "topic", TopicFilter(chat_generator=ScriptedChatGenerator(replies=['{"topic": "vacaciones_permisos"}']))
    )
    result = Pipeline.loads(pipeline.dumps()).run({"topic": {"query": VACATIONS}})
    assert result["topic"]["filters"] == VACATIONS_FILTER


def test_warm_up_warms_the_nested_generator():
    llm = ScriptedChatGenerator()
    TopicFilter(chat_generator=llm).warm_up()
    assert llm.warm_ups == 1
    TopicFilter().warm_up()


def test_run_by_keywords():
    result = TopicFilter().run(query=VACATIONS)
    assert result["topic"] == "vacaciones_permisos"
    assert result["filters"] == VACATIONS_FILTER
    assert result["fallback"] is True
    assert result["trace"]["path"] == "keywords" and result["trace"]["fallback_reason"] == "no_llm"
    assert result["trace"]["keyword_matches"] == {"vacaciones_permisos": ["vacaciones"]}


def test_run_by_scripted_llm():
    llm = ScriptedChatGenerator(replies=['{"topic": "vacaciones_permisos"}'])
    result = TopicFilter(chat_generator=llm).run(query=VACATIONS)
    assert (result["topic"], result["filters"], result["fallback"]) == ("vacaciones_permisos", VACATIONS_FILTER, False)
    assert result["trace"]["path"] == "llm" and result["trace"]["llm_reply"] == '{"topic": "vacaciones_permisos"}'
    (messages,) = llm.calls
    assert [m.role for m in messages] == [ChatRole.SYSTEM, ChatRole.USER]
    system = messages[0].text
    for topic in load_topics().topics:
        assert f"- {topic.id}: {topic.description}" in system
    assert '"topic"' in system and "JSON" in system
    assert messages[1].text == f"Pregunta: {VACATIONS}"


@pytest.mark.parametrize(
    ("reply", "expected_topic", "path", "reason"),
    [
        ('{"topic": "astrologia"}', "vacaciones_permisos", "keywords", "unknown_topic"),
        ("no sé qué tema es", "vacaciones_permisos", "keywords", "malformed_json"),
        ('{"topic": 3}', "vacaciones_permisos", "keywords", "malformed_json"),
        ("vacaciones_permisos", "vacaciones_permisos", "llm", None),  # a bare id is accepted
        ('```json\n{"topic": "Jornada_Horario"}\n```', "jornada_horario", "llm", None),
        ('{"topic": "general"}', "general", "llm", None),
    ],
)
def test_run_reads_or_rejects_llm_replies(reply, expected_topic, path, reason):
    result = TopicFilter(chat_generator=ScriptedChatGenerator(replies=[reply])).run(query=VACATIONS)
    assert result["topic"] == expected_topic
    assert (result["trace"]["path"], result["trace"]["fallback_reason"]) == (path, reason)
    assert result["fallback"] is (path == "keywords")
    assert (result["filters"] is None) is (expected_topic == "general")


def test_run_falls_back_when_the_llm_fails():
    result = TopicFilter(chat_generator=ScriptedChatGenerator(error="endpoint down")).run(query=VACATIONS)
    assert (result["topic"], result["fallback"], result["trace"]["fallback_reason"]) == (
        "vacaciones_permisos", True, "llm_error")


def test_run_without_topic_is_general():
    result = TopicFilter().run(query="¿Qué dice la ley sobre esto?")
    assert (result["topic"], result["filters"]) == ("general", None)
    assert result["trace"]["keyword_matches"] == {}
    # a question that mixes two topics equally is searched without a filter too
    mixed = TopicFilter().run(query="¿Me pueden despedir estando de baja médica?")
    assert (mixed["topic"], mixed["filters"]) == ("general", None)
    assert set(mixed["trace"]["keyword_matches"]) == {"despido_extincion", "incapacidad_temporal"}


def test_run_rejects_empty_query():
    with pytest.raises(ValueError, match="non-empty"):
        TopicFilter().run(query="  ")


def test_adding_a_topic_needs_no_code_change(tmp_path):
    """A topic appended to a copy of the bundled YAML is used by the tagger, the keyword path and the LLM prompt."""
    path = tmp_path / "topics.yaml"
    path.write_text(
        DEFAULT_TOPICS_FILE.read_text(encoding="utf-8")
        + """
  - id: trabajo_autonomo
    name: Trabajo autónomo
    description: Trabajadores autónomos o por cuenta propia, su alta y cotización en el RETA.
    keywords:
      es: [autónomo, "cuenta propia", reta]
      pt: [autônomo, "conta própria"]
      en: [self-employ, freelance]
    content_types: [articulo, procedimiento]
""",
        encoding="utf-8",
    )
    article = Document(
        content="Artículo 1. Se entiende por trabajador autónomo la persona que trabaja por cuenta propia.",
        meta={"article": "1", "article_title": "Concepto.", "lang": "es", "collection": "normativa"},
    )
    tagged = TopicTagger(topics_file=str(path)).run(documents=[article])["documents"][0]
    assert tagged.meta["topics"] == ["trabajo_autonomo"]
    assert TopicTagger().run(documents=[article])["documents"][0].meta["topics"] == []  # the bundled config

    question = "¿Cómo me doy de alta como autónomo?"
    by_keywords = TopicFilter(topics_file=str(path)).run(query=question)
    assert by_keywords["topic"] == "trabajo_autonomo"
    assert by_keywords["filters"] == {"field": "meta.topics", "operator": "in", "value": ["trabajo_autonomo"]}

    llm = ScriptedChatGenerator(replies=['{"topic": "trabajo_autonomo"}'])
    by_llm = TopicFilter(chat_generator=llm, topics_file=str(path)).run(query=question)
    assert (by_llm["topic"], by_llm["fallback"]) == ("trabajo_autonomo", False)
    assert "- trabajo_autonomo: Trabajadores autónomos" in llm.calls[0][0].text


def test_run_ands_the_topic_into_given_filters_and_disabled_passes_them_on():
    access = {"field": "meta.scope", "operator": "not in", "value": ["tenant"]}
    result = TopicFilter().run(query=VACATIONS, filters=access)
    assert result["filters"] == {"operator": "AND", "conditions": [access, VACATIONS_FILTER]}
    llm = ScriptedChatGenerator(replies=['{"topic": "vacaciones_permisos"}'])
    disabled = TopicFilter(chat_generator=llm, enabled=False).run(query=VACATIONS, filters=access)
    assert (disabled["topic"], disabled["filters"], disabled["trace"]) == ("general", access, {"path": "disabled"})
    assert llm.calls == []  # no LLM call when the flag is off
    assert TopicFilter().run(query=VACATIONS, enabled=False)["filters"] is None
