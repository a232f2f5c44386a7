"""TermExpander: the statutory terms of a question's colloquial expressions, for BM25."""

import pytest
from haystack import Pipeline

from components.embedders.sparse_embedder import SparseTextEmbedder
from components.query.term_expander import TermExpander

DISMISSED_PT = "fui mandado embora grávida, tenho direito a quê?"


def test_init_defaults_and_validation(tmp_path):
    expander = TermExpander()
    assert (expander.enabled, expander.equivalences_file) == (True, None)
    with pytest.raises(ValueError, match="not found"):
        TermExpander(equivalences_file=str(tmp_path / "missing.yaml"))


def test_to_dict_from_dict(tmp_path):
    table = tmp_path / "equivalences.yaml"
    table.write_text("curro: trabajo empleo\n", encoding="utf-8")
    expander = TermExpander(enabled=False, equivalences_file=str(table))
    data = expander.to_dict()
    assert data == {
        "type": "components.query.term_expander.TermExpander",
        "init_parameters": {"enabled": False, "equivalences_file": str(table)},
    }
    restored = TermExpander.from_dict(data)
    assert (restored.enabled, restored.equivalences_file) == (False, str(table))
    assert TermExpander(equivalences_file=str(table)).run(query="mi curro")["query"] == "mi curro trabajo empleo"


def test_portuguese_question_gets_the_clt_terms_in_order():
    result = TermExpander().run(query=DISMISSED_PT)
    assert result["expressions"] == ["mandado embora", "grávida"]
    assert result["query"] == (
        f"{DISMISSED_PT} dispensa sem justa causa rescisão contrato "
        "empregada gestante estabilidade provisória licença-maternidade"
    )


@pytest.mark.parametrize("query", ["trabalho a distância, tenho direito a hora extra?", "faço trabalho remoto"])
def test_portuguese_remote_work_is_telework(query):
    # the CLT calls it "teletrabalho" (arts. 75-A to 75-F): the statute's word for what the worker says
    assert "teletrabalho prestação de serviços fora das dependências" in TermExpander().run(query=query)["query"]
    # "trabalho na casa de uma senhora" is domestic work, not telework: no key reads "trabalho ... casa" as remote
    assert "teletrabalho" not in TermExpander().run(query="trabalho na casa de uma senhora, tenho direito a FGTS?")[
        "query"]


@pytest.mark.parametrize(
    ("query", "terms"),
    [
        ("¿cuántos días tengo por la muerte de mi padre?", "permiso retribuido fallecimiento parientes"),
        ("operan a mi madre, ¿tengo derecho a algún permiso?", "hospitalización intervención quirúrgica"),
        ("mi padre está en el hospital y no puedo ir a trabajar", "hospitalización intervención quirúrgica"),
        ("me mudo de piso, ¿me dan el día?", "permiso retribuido traslado del domicilio habitual"),
        ("vou casar, quantos dias de folga tenho?", "casamento deixar de comparecer ao serviço"),
        ("posso faltar para doar sangue?", "doação voluntária de sangue"),
    ],
)
def test_the_events_of_a_paid_leave_get_the_statute_s_words(query, terms):
    # ET art. 37.3 and CLT art. 473 name the events ("fallecimiento", "traslado del domicilio", "casamento")
    assert terms in TermExpander().run(query=query)["query"]


@pytest.mark.parametrize(
    ("query", "terms"),
    [
        ("¿me pueden pinchar el teléfono?", "secreto de las comunicaciones telefónicas"),
        ("¿puede la policía entrar en mi casa sin permiso?", "domicilio inviolable"),
        ("a polícia pode entrar na minha casa sem mandado?", "casa asilo inviolável"),
        ("a polícia pode grampear meu telefone?", "sigilo comunicações telefônicas"),
        ("¿puedo manifestarme sin pedir permiso?", "derecho de reunión pacífica manifestaciones autorización previa"),
        ("¿es obligatorio ir al colegio?", "enseñanza básica obligatoria"),
        ("o governo pode censurar um jornal?", "censura liberdade manifestação do pensamento"),
        ("posso ir a uma manifestação sem pedir autorização?", "reunião pacífica"),
    ],
)
def test_fundamental_rights_in_everyday_words_get_the_constitution_s(query, terms):
    assert terms in TermExpander().run(query=query)["query"]


@pytest.mark.parametrize("query", ["estoy de baja, ¿me pueden despedir?", "¿y si estoy de baja en las vacaciones?"])
def test_being_on_sick_leave_in_any_person_is_temporary_incapacity(query):
    assert "incapacidad temporal" in TermExpander().run(query=query)["query"]


@pytest.mark.parametrize(
    ("query", "terms"),
    [
        ("trabalho de madrugada, tenho adicional?", "trabalho noturno adicional noturno"),
        ("me han puesto en el turno de noche", "trabajo nocturno"),
        ("a empresa pode me obrigar a fazer hora estra?", "horas suplementares"),  # misspelt as it is often typed
    ],
)
def test_night_work_and_a_misspelt_overtime_get_the_statute_s_words(query, terms):
    assert terms in TermExpander().run(query=query)["query"]


def test_the_constitution_s_own_uses_of_those_words_keep_their_reading():
    # "moción de censura" is the motion of no confidence, "colegio profesional" a professional body
    assert "libertad" not in TermExpander().run(query="¿qué pasa si prospera una moción de censura?")["query"]
    assert "enseñanza" not in TermExpander().run(query="¿qué regula la ley sobre los colegios profesionales?")["query"]
    # "manifestar" one's will is not to demonstrate
    assert "reunión" not in TermExpander().run(query="¿tengo que manifestar por escrito que me voy?")["query"]


def test_a_death_asked_about_for_a_pension_is_not_read_as_a_leave():
    assert "comparecer" not in TermExpander().run(query="meu marido morreu, tenho direito a pensão?")["query"]
    assert "permiso" not in TermExpander().run(query="ha muerto mi padre, ¿cobro pensión de orfandad?")["query"]
    # one's own stay in hospital is a sick leave (incapacidad temporal), not a family member's
    assert "permiso" not in TermExpander().run(query="estoy en el hospital, ¿cobro la baja?")["query"]


def test_spanish_work_from_home_is_remote_work_but_work_in_someone_s_home_is_not():
    assert "trabajo a distancia" in TermExpander().run(query="trabajo desde casa, ¿me pagan la luz?")["query"]
    assert "trabajo a distancia" in TermExpander().run(query="estoy en remoto, ¿me pagan la luz?")["query"]
    assert "distancia" not in TermExpander().run(query="trabajo en casa de una señora, ¿tengo derecho a paro?")[
        "query"]


def test_spanish_question_gets_spanish_terms_only():
    result = TermExpander().run(query="¿Me pagan las horas extra del domingo?")
    assert result["query"].startswith("¿Me pagan las horas extra del domingo? horas extraordinarias")
    assert "sobrejornada" not in result["query"] and "suplementares" not in result["query"]
    # the caller's language wins over detection
    forced = TermExpander().run(query="me pagan la hora extra", language="pt")
    assert forced["query"] == "me pagan la hora extra horas suplementares sobrejornada adicional hora extraordinária"


def test_nothing_to_add_leaves_the_query_as_it_is():
    expander = TermExpander()
    assert expander.run(query="¿Qué dice el  art. 38 ET?") == {"query": "¿Qué dice el art. 38 ET?", "expressions": []}
    # an entry whose terms the query already says adds nothing
    already = "¿Cuánto es la prestación por desempleo del paro?"
    assert expander.run(query=already) == {"query": already, "expressions": ["paro"]}
    assert TermExpander(enabled=False).run(query=DISMISSED_PT) == {"query": DISMISSED_PT, "expressions": []}
    with pytest.raises(TypeError, match="string"):
        expander.run(query=["paro"])


def test_in_a_pipeline_the_bm25_query_holds_the_statute_words():
    pipeline = Pipeline()
    pipeline.add_component("term_expander", TermExpander())
    pipeline.add_component("sparse_text_embedder", SparseTextEmbedder())
    pipeline.connect("term_expander.query", "sparse_text_embedder.text")
    loaded = Pipeline.loads(pipeline.dumps())
    expanded = loaded.run({"term_expander": {"query": DISMISSED_PT}})["sparse_text_embedder"]["sparse_embedding"]
    plain = SparseTextEmbedder().run(text=DISMISSED_PT)["sparse_embedding"]
    statute = SparseTextEmbedder().run(text="dispensa rescisão gestante", language="pt")["sparse_embedding"]
    assert set(plain.indices) < set(expanded.indices)
    assert set(statute.indices) <= set(expanded.indices) and not set(statute.indices) & set(plain.indices)


def test_daily_working_hours_in_everyday_words_get_the_statutes_words():
    """"horas por dia" is the CLT's "horas diárias" (art. 58): BM25 read the night-work article's "horas de um dia"."""
    assert TermExpander().run(query="quantas horas posso trabalhar por dia?")["expressions"] == ["trabalhar por dia"]
    assert "horas diárias" in TermExpander().run(query="trabalho 10 horas por dia, pode isso?")["query"]
    assert "horas diarias" in TermExpander().run(query="¿cuántas horas puedo trabajar al día?")["query"]


@pytest.mark.parametrize(
    ("query", "terms"),
    [
        ("me han despedido por whatsapp, ¿es válido?", "notificado por escrito"),
        ("¿es legal un despido de palabra?", "notificado por escrito"),
        ("¿con cuántos años se puede empezar a trabajar?", "admisión al trabajo menores de dieciséis años"),
        ("¿cuál es la edad mínima para trabajar?", "admisión al trabajo menores de dieciséis años"),
        ("¿el rey puede ser juzgado?", "persona del Rey inviolable"),
        ("tenho direito a licença paternidade de quantos dias?", "nascimento de filho"),
        ("¿tengo derecho a desconectar fuera del horario?", "derecho a la desconexión digital"),
        ("¿la empresa puede obligarme a teletrabajar?", "trabajo a distancia"),  # the verb, with its pronoun
        ("¿tengo derecho a una pausa para el bocadillo?", "descanso durante la jornada diaria continuada"),
        ("¿puede el gobierno cerrar un periódico?", "secuestro de publicaciones"),
        ("¿qué dice la ley rider?", "plataformas digitales de reparto"),
        ("soy repartidor de glovo, ¿soy autónomo?", "presunción de laboralidad"),
        ("me tienen de falsa autónoma en una academia", "se presumirá existente"),
        ("¿me pueden llamar al móvil fuera del horario de trabajo?", "derecho a la desconexión digital"),
        ("¿cuánto tiempo tengo para reclamar las horas extra?", "prescripción caducidad"),
        ("trabalho de 12 por 36 é permitido?", "doze horas trinta e seis horas descanso"),
        # fundamental rights as citizens ask about them (CF88 art. 5º, XVIII, and art. 14; CE art. 23)
        ("posso criar uma associação sem autorização do governo?", "independem de autorização"),
        ("votar é obrigatório no Brasil?", "alistamento eleitoral voto obrigatórios"),
        ("¿es obligatorio votar en España?", "derecho a participar en los asuntos públicos"),
        ("quais dados sobre mim o governo pode ter?", "habeas data"),
        # a death said with a verb, the hours of a year, the pieces of protective equipment, the medical check-ups
        ("¿cuántos días me dan si se muere mi padre?", "fallecimiento"),
        ("mi madre falleció ayer, ¿tengo permiso?", "fallecimiento"),
        ("el convenio dice 1750 horas al año, ¿es legal?", "jornada máxima cómputo anual"),
        ("mi jefe no me da el casco ni las botas, ¿es obligación suya?", "equipos de protección individual"),
        ("¿la empresa me puede obligar a hacerme un reconocimiento médico?", "vigilancia de la salud"),
        ("posso ser obrigado a me associar a um sindicato?", "filiar-se filiado"),
        ("¿cuántos días de lactancia tengo?", "hora de ausencia"),
        ("¿cuánto me tienen que avisar antes de acabar el contrato temporal?", "preaviso"),
        ("me han despedido por email, ¿vale?", "notificado por escrito"),
        ("quanto tempo tenho para entrar com processo trabalhista?", "prescrição"),
        ("a empresa pode mudar meu horário sem me avisar?", "mútuo consentimento"),
        ("¿pueden bajarme de categoría?", "movilidad funcional funciones inferiores"),
        ("¿puedo trabajar para otra empresa a la vez?", "concurrencia desleal"),
    ],
)
def test_everyday_words_for_a_dismissal_s_form_work_age_the_king_paternity_and_disconnection(query, terms):
    assert terms in TermExpander().run(query=query)["query"]


def test_a_false_self_employed_gets_the_employment_presumption_not_the_self_employed_s_terms():
    # "trabajadores autónomos" in the query made from it gave the notice that the ET leaves the self-employed out
    query = TermExpander().run(query="los riders son falsos autónomos?")["query"]
    assert "se presumirá existente" in query and "trabajadores autónomos" not in query


def test_an_age_before_a_question_on_night_work_keeps_the_night_work_terms():
    query = TermExpander().run(query="tengo 17 años, ¿puedo trabajar de noche?")["query"]
    assert "trabajo nocturno" in query and "dieciséis" not in query
