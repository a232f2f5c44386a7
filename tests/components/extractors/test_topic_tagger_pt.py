"""Portuguese topic keywords on the CLT: its articles get the topics their Spanish counterparts get."""

from pathlib import Path

import pytest

from components.converters.statute_converter import StatuteConverter
from components.extractors.topic_tagger import TopicTagger
from components.preprocessors.article_parser import ArticleParser

CLT = Path(__file__).resolve().parents[3] / "data" / "corpus" / "CLT.md"


@pytest.fixture(scope="module")
def clt():
    articles = ArticleParser().run(documents=StatuteConverter().run(sources=[CLT])["documents"])["documents"]
    return {d.meta["article"]: d for d in TopicTagger().run(documents=articles)["documents"]}


@pytest.mark.parametrize(
    ("article", "topic"),
    [
        ("477", "despido_extincion"),  # verbas rescisórias
        ("130", "vacaciones_permisos"),  # período aquisitivo
        ("59-a", "jornada_horario"),
        ("391-a", "nacimiento_cuidado_menor"),  # empregada gestante, estabilidade
        ("611-b", "libertad_sindical_huelga"),  # convenção / acordo coletivo
    ],
)
def test_clt_articles_get_their_topics(clt, article, topic):
    assert topic in clt[article].meta["topics"]
