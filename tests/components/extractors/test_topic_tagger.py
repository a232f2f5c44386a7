import logging

import pytest
from haystack import Document, Pipeline

from components.extractors.topic_tagger import TopicTagger
from components.legal.topics import DEFAULT_TOPICS_FILE, TOPICS_ENV, load_topics

# Real articles of the Estatuto de los Trabajadores (data/corpus/BOE-A-2015-11430.md), abridged.
ET_38 = """Artículo 38. Vacaciones anuales.

1. El periodo de vacaciones anuales retribuidas, no sustituible por compensación económica, será el pactado en \
convenio colectivo o contrato individual. En ningún caso la duración será inferior a treinta días naturales.

2. El periodo o periodos de su disfrute se fijará de común acuerdo entre el empresario y el trabajador, de \
conformidad con lo establecido en su caso en los convenios colectivos sobre planificación anual de las vacaciones.

3. El calendario de vacaciones se fijará en cada empresa. El trabajador conocerá las fechas que le correspondan dos \
meses antes, al menos, del comienzo del disfrute."""

ET_54 = """Artículo 54. Despido disciplinario.

1. El contrato de trabajo podrá extinguirse por decisión del empresario, mediante despido basado en un \
incumplimiento grave y culpable del trabajador.

2. Se considerarán incumplimientos contractuales:

a) Las faltas repetidas e injustificadas de asistencia o puntualidad al trabajo.

b) La indisciplina o desobediencia en el trabajo."""

ET_26 = """Artículo 26. Del salario.

1.Se considerará salario la totalidad de las percepciones económicas de los trabajadores, en dinero o en especie, \
por la prestación profesional de los servicios laborales por cuenta ajena, ya retribuyan el trabajo efectivo, \
cualquiera que sea la forma de remuneración, o los periodos de descanso computables como de trabajo."""

# Constituição Federal de 1988, art. 7 (data/corpus/CF88.md), one item.
CF88_7_XVII = "XVII - gozo de férias anuais remuneradas com, pelo menos, um terço a mais do que o salário normal;"


def _article(content, article, title, **meta):
    return Document(
        content=content,
        meta={"law_id": "BOE-A-2015-11430", "article": article, "article_title": title, "lang": "es",
              "collection": "normativa", **meta},
    )


def test_init_defaults_and_validation(tmp_path):
    tagger = TopicTagger()
    assert (tagger.topics_file, tagger.min_hits, tagger.max_topics, tagger.inherit_from_parent) == (None, 2, 3, True)
    assert "vacaciones_permisos" in tagger.matcher.topic_ids and "general" in tagger.matcher.topic_ids
    with pytest.raises(ValueError, match="min_hits"):
        TopicTagger(min_hits=0)
    with pytest.raises(ValueError, match="max_topics"):
        TopicTagger(max_topics=0)
    with pytest.raises(ValueError, match="not found"):
        TopicTagger(topics_file=str(tmp_path / "missing.yaml"))


@pytest.mark.parametrize(
    ("yaml_text", "message"),
    [
        ("topics: [\n", "not valid YAML"),
        ("- id: vacaciones\n", "mapping with a non-empty `topics` list"),
        ("topics: [{id: general, name: G, description: d}]\n", "content_types"),
        (
            "content_types: [{id: articulo, description: d}]\n"
            "topics: [{id: paro, name: Paro, description: d, keywords: {es: [paro]}, content_types: [articulo]}]\n",
            "`general` topic",
        ),
        (
            "content_types: [{id: articulo, description: d}]\n"
            "topics: [{id: paro, name: P, description: d, keywords: {es: [paro]}, content_types: [sentencia]},"
            " {id: general, name: G, description: d}]\n",
            "unknown content type",
        ),
        (
            "content_types: [{id: articulo, description: d}]\n"
            "topics: [{id: paro, name: P, description: d, keywords: [paro], content_types: [articulo]},"
            " {id: general, name: G, description: d}]\n",
            "`keywords` must map language codes",
        ),
        (
            "content_types: [{id: articulo, description: d}]\n"
            "topics: [{id: Paro Total, name: P, description: d}]\n",
            "snake_case",
        ),
        (
            "content_types: [{id: articulo, description: d}]\n"
            "topics: [{id: paro, name: P, description: d, keyword: {es: [paro]}, content_types: [articulo]},"
            " {id: general, name: G, description: d}]\n",
            r"unknown key\(s\) \['keyword'\]",
        ),
        (
            "content_types: [{id: articulo, description: d}]\n"
            "topics: [{id: general, name: G, description: d, keywords: {es: [ley]}}]\n",
            "takes no `keywords`",
        ),
        (
            "content_types: [{id: articulo, description: d}]\n"
            "topics: [{id: paro, name: P, description: d, keywords: {es: [paro]}, content_types: [articulo]},"
            " {id: paro, name: P, description: d, keywords: {es: [paro]}, content_types: [articulo]},"
            " {id: general, name: G, description: d}]\n",
            "topic ids repeat",
        ),
        (
            "content_types: [{id: disposicion, description: d, articles: '^(da'}, {id: articulo, description: d}]\n"
            "topics: [{id: general, name: G, description: d}]\n",
            "not a valid regular expression",
        ),
        (
            "content_types: [{id: articulo, description: d, titles: salario}]\n"
            "topics: [{id: general, name: G, description: d}]\n",
            "last content type must have no cues",
        ),
    ],
)
def test_init_rejects_bad_topics_files(tmp_path, yaml_text, message):
    path = tmp_path / "topics.yaml"
    path.write_text(yaml_text, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        TopicTagger(topics_file=str(path))


def test_init_reads_topics_file_from_env(tmp_path, monkeypatch):
    path = tmp_path / "topics.yaml"
    path.write_text(
        "content_types: [{id: articulo, description: Artículo.}]\n"
        "topics:\n"
        "  - {id: paro, name: Paro, description: Desempleo., keywords: {es: [paro, desempleo]},"
        " content_types: [articulo]}\n"
        "  - {id: general, name: General, description: Todo.}\n",
        encoding="utf-8",
    )
    monkeypatch.setenv(TOPICS_ENV, str(path))
    assert TopicTagger().matcher.topic_ids == ["paro", "general"]
    assert TopicTagger(topics_file=str(DEFAULT_TOPICS_FILE)).matcher.topic_ids != ["paro", "general"]


def test_to_dict():
    assert TopicTagger(min_hits=3, max_topics=2).to_dict() == {
        "type": "components.extractors.topic_tagger.TopicTagger",
        "init_parameters": {"topics_file": None, "min_hits": 3, "max_topics": 2, "inherit_from_parent": True},
    }


def test_from_dict():
    data = {
        "type": "components.extractors.topic_tagger.TopicTagger",
        "init_parameters": {"topics_file": str(DEFAULT_TOPICS_FILE), "min_hits": 1, "max_topics": 1,
                            "inherit_from_parent": False},
    }
    tagger = TopicTagger.from_dict(data)
    assert (tagger.topics_file, tagger.min_hits, tagger.max_topics, tagger.inherit_from_parent) == (
        str(DEFAULT_TOPICS_FILE), 1, 1, False)
    assert tagger.to_dict() == data


def test_pipeline_yaml_round_trip():
    pipeline = Pipeline()
    pipeline.add_component("tagger", TopicTagger(max_topics=1))
    loaded = Pipeline.loads(pipeline.dumps())
    result = loaded.run({"tagger": {"documents": [_article(ET_38, "38", "Vacaciones anuales.")]}})
    assert result["tagger"]["documents"][0].meta["topics"] == ["vacaciones_permisos"]


def test_run_tags_real_articles(caplog):
    docs = [
        _article(ET_38, "38", "Vacaciones anuales."),
        _article(ET_54, "54", "Despido disciplinario."),
        _article(ET_26, "26", "Del salario."),
    ]
    with caplog.at_level(logging.INFO, logger="components.extractors.topic_tagger"):
        tagged = TopicTagger().run(documents=docs)["documents"]
    assert [d.meta["topics"] for d in tagged] == [["vacaciones_permisos"], ["despido_extincion"], ["salario_nomina"]]
    assert [d.meta["content_type"] for d in tagged] == ["articulo"] * 3
    assert [(d.id, d.content) for d in tagged] == [(d.id, d.content) for d in docs]
    assert "topics" not in docs[0].meta  # the input Documents are left as they were
    assert "3/3 documents tagged" in caplog.text and "'vacaciones_permisos': 1" in caplog.text


def test_run_min_hits_and_max_topics():
    one_mention = _article("El trabajador tendrá derecho a vacaciones.", "99", "")
    assert TopicTagger().run(documents=[one_mention])["documents"][0].meta["topics"] == []
    assert TopicTagger(min_hits=1).run(documents=[one_mention])["documents"][0].meta["topics"] == [
        "vacaciones_permisos"]

    mixed = _article("El despido nulo, el despido improcedente y el despido objetivo. Las vacaciones y sus vacaciones.",
                     "99", "")
    assert TopicTagger().run(documents=[mixed])["documents"][0].meta["topics"] == [
        "despido_extincion", "vacaciones_permisos"]  # most hits first
    assert TopicTagger(max_topics=1).run(documents=[mixed])["documents"][0].meta["topics"] == ["despido_extincion"]


def test_run_content_types():
    tagger = TopicTagger()
    disposition = _article("Las vacaciones y permisos de vacaciones ...", "da1", "Disposición adicional primera.")
    procedure = _article(
        "Los trabajadores en situación legal de desempleo solicitarán la prestación por desempleo.",
        "268",
        "Solicitud, nacimiento y conservación del derecho a las prestaciones",
    )
    preamble = _article("Las vacaciones y las vacaciones ...", "preambulo", "")
    ruling = _article("Vacaciones no disfrutadas por vacaciones ...", "1", "", collection="sentencias")
    tagged = tagger.run(documents=[disposition, procedure, preamble, ruling])["documents"]
    assert [d.meta["content_type"] for d in tagged] == ["disposicion", "procedimiento", "preambulo", "sentencia"]
    # topics list the content types they apply to: the bundled config leaves preambles untagged
    assert [d.meta["topics"] for d in tagged] == [["vacaciones_permisos"], ["desempleo"], [], ["vacaciones_permisos"]]


def test_run_children_inherit_their_parent_tags():
    parent = Document(id="p1", content=ET_38, meta={"article": "38", "article_title": "Vacaciones anuales.",
                                                    "lang": "es", "level": "parent"})
    child = Document(id="c1", content="El calendario se fijará en cada empresa.",
                     meta={"article": "38", "article_title": "Vacaciones anuales.", "lang": "es", "level": "child",
                           "parent_id": "p1"})
    inherited = TopicTagger().run(documents=[parent, child])["documents"]
    assert inherited[1].meta["topics"] == ["vacaciones_permisos"]
    alone = TopicTagger(inherit_from_parent=False).run(documents=[parent, child])["documents"]
    assert alone[1].meta["topics"] == []
    orphan = TopicTagger().run(documents=[child])["documents"]  # parent not in the batch: its own text decides
    assert orphan[0].meta["topics"] == []


def test_run_uses_the_documents_language():
    pt = Document(content=f"{CF88_7_XVII} férias coletivas", meta={"article": "7", "lang": "pt"})
    assert TopicTagger().run(documents=[pt])["documents"][0].meta["topics"] == ["vacaciones_permisos"]
    as_spanish = Document(content=f"{CF88_7_XVII} férias coletivas", meta={"article": "7", "lang": "es"})
    assert TopicTagger().run(documents=[as_spanish])["documents"][0].meta["topics"] == []


def test_matcher_matches_word_prefixes_folded():
    matcher = load_topics()
    assert matcher.matches("¿Cuántos días de VACACIÓN tengo?") == {"vacaciones_permisos": ["vacacion"]}
    assert matcher.matches("los contratos temporales") == {"contratos": ["contratos temporales"]}
    assert matcher.matches("prevacaciones") == {}  # a keyword matches at a word start only
    # a span inside a longer span of another topic counts for that topic only
    assert matcher.matches("el permiso por nacimiento") == {"nacimiento_cuidado_menor": ["permiso por nacimiento"]}
