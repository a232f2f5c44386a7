"""Tests for components.preprocessors.article_parser.ArticleParser, on the bundled corpus and on small synthetic laws."""

import hashlib
import logging
import re
import time
from pathlib import Path

import pytest
from haystack import Document, Pipeline

from components.preprocessors.article_parser import ArticleParser, section_name, split_br_notes
from components.converters.statute_converter import StatuteConverter
from tests.components.converters.test_statute_converter import make_text_pdf

CORPUS = Path(__file__).resolve().parents[3] / "data" / "corpus"
APPROVAL_RDL = ["Real Decreto Legislativo (aprobación)"]

# Documents per law: articles + dispositions + annexes + preamble. A change here is a parsing change: check it.
EXPECTED_COUNTS = {
    "BOE-A-1978-31229": 185,  # CE: preámbulo + 169 articles + 4 da + 9 dt + dd + df
    "BOE-A-1985-16660": 25,
    "BOE-A-1995-21346": 50,
    "BOE-A-1995-24292": 80,
    "BOE-A-1995-7730": 144,
    "BOE-A-1996-1579": 108,
    "BOE-A-1999-346": 15,
    "BOE-A-2000-15060": 69,
    "BOE-A-2009-4724": 70,
    "BOE-A-2011-17975": 23,
    "BOE-A-2015-11430": 142,
    "BOE-A-2015-11724": 508,
    "CF88": 383,  # preâmbulo + 263 articles (250 + 13 "-A"/"-B") + 119 ADCT articles
    "DEL-5452-1943": 1027,  # CLT: preâmbulo (the approving decree) + 1026 articles, lettered ones included
}


@pytest.fixture(scope="module")
def parsed():
    laws = StatuteConverter().run(sources=[CORPUS])["documents"]
    start = time.perf_counter()
    result = ArticleParser().run(documents=laws)
    return result, time.perf_counter() - start


@pytest.fixture(scope="module")
def by_law(parsed):
    out: dict[str, dict[str, Document]] = {}
    for doc in parsed[0]["documents"]:
        out.setdefault(doc.meta["law_id"], {})[doc.meta["article"]] = doc
    return out


def parse_text(tmp_path: Path, text: str, name: str = "ley.txt", **kwargs) -> list[Document]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    laws = StatuteConverter().run(sources=[path])["documents"]
    return ArticleParser(**kwargs).run(documents=laws)["documents"]


# -- init / serialization -------------------------------------------------------------------------------------


def test_init_default():
    parser = ArticleParser()
    assert (parser.min_preamble_chars, parser.include_preamble) == (200, True)


def test_init_custom():
    parser = ArticleParser(min_preamble_chars=0, include_preamble=False)
    assert (parser.min_preamble_chars, parser.include_preamble) == (0, False)


@pytest.mark.parametrize("value", [-1, 1.5, "200"])
def test_init_invalid(value):
    with pytest.raises(ValueError, match="min_preamble_chars"):
        ArticleParser(min_preamble_chars=value)


def test_to_dict():
    assert ArticleParser(min_preamble_chars=50).to_dict() == {
        "type": "components.preprocessors.article_parser.ArticleParser",
        "init_parameters": {"min_preamble_chars": 50, "include_preamble": True},
    }


def test_from_dict():
    data = {
        "type": "components.preprocessors.article_parser.ArticleParser",
        "init_parameters": {"min_preamble_chars": 10, "include_preamble": False},
    }
    parser = ArticleParser.from_dict(data)
    assert (parser.min_preamble_chars, parser.include_preamble) == (10, False)
    assert ArticleParser.from_dict(parser.to_dict()).to_dict() == parser.to_dict()


def test_pipeline_round_trip(tmp_path):
    pipe = Pipeline()
    pipe.add_component("converter", StatuteConverter())
    pipe.add_component("article_parser", ArticleParser())
    pipe.connect("converter.documents", "article_parser.documents")
    loaded = Pipeline.loads(pipe.dumps())
    result = loaded.run({"converter": {"sources": [str(CORPUS / "BOE-A-1999-346.md")]}})
    keys = [d.meta["article"] for d in result["article_parser"]["documents"]]
    assert keys == ["preambulo", *map(str, range(1, 11)), "dt", "dd", "df1", "df2"]


# -- whole corpus ---------------------------------------------------------------------------------------------


def test_run_corpus_counts_and_speed(parsed, by_law):
    result, seconds = parsed
    assert result["errors"] == []
    assert {law: len(articles) for law, articles in by_law.items()} == EXPECTED_COUNTS
    assert len(result["documents"]) == sum(EXPECTED_COUNTS.values())  # keys are unique within each law
    assert seconds < 5


def test_run_corpus_invariants(parsed):
    orders: dict[str, list[int]] = {}
    for doc in parsed[0]["documents"]:
        meta = doc.meta
        assert doc.id == hashlib.sha256(f"{meta['law_id']}|{meta['article']}".encode()).hexdigest()
        assert doc.content.lower().startswith(meta["article_label"].split()[0].lower())  # "Artículo", "ANEXO", ...
        assert "**" not in doc.content and not re.search(r"^#+ ", doc.content, re.M)
        assert isinstance(meta["heading_path"], list)
        assert meta["law_short"] and meta["rank"] in (1, 2, 3, 4) and meta["collection"] == "normativa"
        orders.setdefault(meta["law_id"], []).append(meta["article_order"])
    assert all(order == list(range(len(order))) for order in orders.values())


def test_run_et_2015_articles(by_law):
    et = by_law["BOE-A-2015-11430"]
    art38 = et["38"]
    assert art38.meta["article_title"] == "Vacaciones anuales"
    assert art38.meta["article_label"] == "Artículo 38"
    assert art38.meta["heading_path"] == [
        "TÍTULO I. De la relación individual de trabajo",
        "CAPÍTULO II. Contenido del contrato de trabajo",
        "Sección 5.ª Tiempo de trabajo",
    ]
    assert art38.content.startswith("Artículo 38. Vacaciones anuales.\n\n1. El periodo de vacaciones anuales retribuidas")
    assert "Artículo 39" not in art38.content
    assert art38.meta["law_short"] == "ET" and art38.meta["rank"] == 2 and art38.meta["lang"] == "es"
    assert et["14"].meta["article_title"] == "Periodo de prueba"  # this consolidated text writes "Periodo"
    assert et["14"].meta["heading_path"][1:] == ["CAPÍTULO II. Contenido del contrato de trabajo", "Sección 1.ª Duración del contrato"]
    assert {"20 bis", "47 bis", "48 bis"} <= set(et)
    assert et["48 bis"].meta["article_title"] == ""
    assert [k for k in et if re.fullmatch(r"\d+", k)] == [str(n) for n in range(1, 93)]
    assert [k for k in et if k.startswith("da")] == [f"da{n}" for n in range(1, 30)]
    assert [k for k in et if k.startswith("dt")] == [f"dt{n}" for n in range(1, 14)]
    assert [k for k in et if k.startswith("df")] == ["df1", "df2"]
    assert et["da1"].meta["heading_path"] == ["Disposiciones adicionales"]
    assert et["da21"].meta["article_label"] == "Disposición adicional vigesimoprimera"


def test_run_texto_refundido_keys_do_not_collide(by_law):
    et = by_law["BOE-A-2015-11430"]
    assert list(et)[:3] == ["preambulo", "rd-unico", "rd-dd"]
    assert et["rd-unico"].meta["heading_path"] == APPROVAL_RDL
    assert et["rd-unico"].meta["article_title"] == "Aprobación del texto refundido de la Ley del Estatuto de los Trabajadores"
    assert et["rd-dd"].meta["heading_path"] == APPROVAL_RDL
    assert "Real Decreto Legislativo 1/1995" in et["rd-dd"].content
    assert "TEXTO REFUNDIDO" not in et["rd-dd"].content  # the approved text's title line is not the decree's
    assert et["preambulo"].meta["heading_path"] == APPROVAL_RDL
    assert "dd" not in et  # the refunded ET has no derogatoria of its own

    lgss = by_law["BOE-A-2015-11724"]
    assert [k for k in lgss if k.startswith("rd-")] == ["rd-unico", "rd-da", "rd-dd", "rd-df"]
    assert lgss["1"].meta["heading_path"][0] == "TÍTULO I. Normas generales del sistema de la Seguridad Social"
    assert {"da1", "dt1", "df1"} <= set(lgss)

    et1995 = by_law["BOE-A-1995-7730"]
    assert [k for k in et1995 if k.startswith("rd-")] == ["rd-unico", "rd-df"]
    assert et1995["1"].meta["heading_path"][0] == "TÍTULO I. De la relación individual de trabajo"
    assert et1995["14"].meta["article_title"] == "Período de prueba"
    assert et1995["14"].meta["status"] == "repealed"
    assert {"rd-unico", "rd-df", "1"} <= set(by_law["BOE-A-2000-15060"])
    rgc = by_law["BOE-A-1996-1579"]
    assert rgc["rd-unico"].meta["heading_path"] == ["Real Decreto (aprobación)"]
    assert rgc["1"].meta["heading_path"][0] == "CAPITULO I. De la liquidación de deudas con la Seguridad Social"


def test_run_constitucion(by_law):
    ce = by_law["BOE-A-1978-31229"]
    assert [k for k in ce if k.isdigit()] == [str(n) for n in range(1, 170)]
    assert [k for k in ce if not k.isdigit()] == [
        "preambulo", "da1", "da2", "da3", "da4", *[f"dt{n}" for n in range(1, 10)], "dd", "df"
    ]
    assert ce["14"].meta["heading_path"] == ["TÍTULO I. De los derechos y deberes fundamentales", "CAPÍTULO SEGUNDO. Derechos y libertades"]
    assert ce["15"].meta["heading_path"][-1] == "Sección 1.ª De los derechos fundamentales y de las libertades públicas"
    assert ce["1"].content.startswith("Artículo 1\n\n1. España se constituye en un Estado social y democrático de Derecho")
    assert ce["1"].meta["article_title"] == ""
    assert "La Nación española" in ce["preambulo"].content
    assert ce["dd"].meta["article_label"] == "Disposición derogatoria"


def test_run_word_numbered_articles(by_law):
    lols = by_law["BOE-A-1985-16660"]
    assert lols["1"].meta["article_label"] == "Artículo primero"
    assert lols["10"].meta["article_label"] == "Artículo diez"
    assert [k for k in lols if k.isdigit()] == [str(n) for n in range(1, 16)]


def test_run_brazilian_constitution(by_law):
    cf = by_law["CF88"]
    art5 = cf["5"]
    assert art5.meta["lang"] == "pt" and art5.meta["law_id"] == "CF88" and art5.meta["rank"] == 1
    assert art5.content.startswith("Art. 5º\n\nTodos são iguais perante a lei")
    assert art5.meta["article_label"] == "Art. 5º"
    assert art5.meta["heading_path"] == [
        "Título II: Dos Direitos e Garantias Fundamentais",
        "Capítulo I: Dos Direitos e Deveres Individuais e Coletivos",
    ]
    assert "§ 1º As normas definidoras" in art5.content and "**" not in art5.content
    assert "Art. 6º" not in art5.content
    lettered = [k for k in cf if re.fullmatch(r"\d+-[a-z]", k)]
    assert lettered[:3] == ["29-a", "103-a", "103-b"] and len(lettered) == 13
    assert cf["29-a"].content.startswith("Art. 29-A.\n\nO total da despesa do Poder Legislativo Municipal")
    assert [k for k in cf if k.isdigit()] == [str(n) for n in range(1, 251)]
    adct = [k for k in cf if k.startswith("adct-")]
    assert adct[0] == "adct-1" and len(adct) == 119
    assert cf["adct-1"].meta["heading_path"] == ["Ato das Disposições Constitucionais Transitórias"]
    assert cf["preambulo"].content.startswith("Preâmbulo\n\nNós, representantes do povo brasileiro")
    assert "_a)_" not in cf["5"].content and "a) para assegurar" in cf["5"].content


def test_run_clt_structure_and_lettered_articles(by_law):
    clt = by_law["DEL-5452-1943"]
    assert clt["59-a"].meta["article_label"] == "Art. 59-A" and clt["59-a"].meta["law_short"] == "CLT"
    assert clt["59-a"].meta["heading_path"] == [
        "TÍTULO II: DAS NORMAS GERAIS DE TUTELA DO TRABALHO",
        "CAPÍTULO II: DA DURAÇÃO DO TRABALHO",
        "SEÇÃO II: DA JORNADA DE TRABALHO",
    ]
    assert clt["611-b"].meta["heading_path"] == ["TÍTULO VI: CONVENÇÕES COLETIVAS DE TRABALHO"]  # note removed
    assert {"477", "477-a", "477-b", "611-a", "611-b"} <= set(clt)
    art477 = clt["477"].content
    assert art477.startswith("Art. 477.\n\nNa extinção do contrato de trabalho")
    assert "§ 8º A inobservância do disposto no § 6º" in art477 and "Parágrafo único" not in art477
    assert "a) (revogado);" in art477  # alíneas, emphasis removed
    assert "Art. 477-A" not in art477
    assert "Parágrafo único. A remuneração mensal pactuada" in clt["59-a"].content
    assert re.search(r"^I - em dinheiro, depósito bancário", art477, re.M)  # incisos on their own lines


def test_run_clt_amendment_notes_move_to_meta(by_law):
    clt = by_law["DEL-5452-1943"]
    art477 = clt["477"]
    assert "Redação dada" not in art477.content and "Incluído pela" not in art477.content
    assert "§ 1º (Revogado)." in art477.content  # a repealed paragraph keeps its "(Revogado)"
    assert art477.meta["amendments"][:2] == [
        "Redação dada pela Lei nº 13.467, de 2017",
        "Redação dada pela Lei nº 5.584, de 26.6.1970",
    ]
    assert len(art477.meta["amendments"]) == len(set(art477.meta["amendments"]))  # each note once
    assert art477.meta["status"] == "in_force"
    assert "(Vigência)" not in clt["59"].content and "Vigência" not in clt["59"].meta["amendments"]
    # a provision brought back in force with a new wording (CLT arts. 500, 680, 694): its note too
    assert clt["694"].meta["amendments"][0] == "Restabelecido com nova redação dada pela Lei nº 5.442, de 24.5.1968"
    for doc in clt.values():
        assert not re.search(r"\((?:Redação dada|Incluíd[oa] pel|Revogad[oa] pel|Vide |Restabelecid|Revigorad)",
                             doc.content), doc.meta
        assert not any("Redação dada" in heading for heading in doc.meta["heading_path"])


def test_run_clt_repealed_and_vetoed_articles_kept_with_status(by_law):
    clt = by_law["DEL-5452-1943"]
    assert clt["17"].content == "Art. 17.\n\n(Revogado)"
    assert clt["17"].meta["status"] == "repealed"
    assert clt["17"].meta["amendments"] == ["Revogado pela Lei nº 13.874, de 2019"]
    assert clt["686"].content == "Art. 686.\n\n(Suprimido)" and clt["686"].meta["status"] == "repealed"
    assert clt["390-a"].meta["status"] == "vetoed"
    statuses = [doc.meta["status"] for doc in clt.values()]
    assert statuses.count("in_force") == 841 and statuses.count("repealed") == 182 and statuses.count("vetoed") == 4
    assert by_law["CF88"]["117"].meta["status"] == "repealed"  # "Art. 117. (Revogado)." without a note
    assert by_law["BOE-A-2015-11430"]["38"].meta["status"] == "in_force"  # Spanish text untouched


def test_split_br_notes():
    assert split_br_notes("§ 1º (Revogado). (Redação dada pela Lei nº 13.467, de 2017)") == (
        "§ 1º (Revogado).", ["Redação dada pela Lei nº 13.467, de 2017"]
    )
    assert split_br_notes("(Revogado pelo Decreto-Lei nº 926, de 10.10.1969)") == (
        "(Revogado)", ["Revogado pelo Decreto-Lei nº 926, de 10.10.1969"]
    )
    assert split_br_notes("II - (Suprimido pela Lei nº 1, de 1950);") == ("II - (Suprimido);", [
        "Suprimido pela Lei nº 1, de 1950"
    ])
    text = "jornada normal (Vide Lei nº 6.205, de 1975 e Lei 6.986) diária. (Incluído pela Lei nº 1) (Vigência)"
    assert split_br_notes(text) == (
        "jornada normal diária.", ["Vide Lei nº 6.205, de 1975 e Lei 6.986", "Incluído pela Lei nº 1", "Vigência"]
    )
    plain = "Fundo de Garantia do Tempo de Serviço (FGTS); salário (Revogado); (VETADO)"
    assert split_br_notes(plain) == (plain, [])


def test_run_subsections_group_labels_and_annexes(by_law):
    rd1561 = by_law["BOE-A-1995-21346"]
    assert rd1561["8"].meta["heading_path"][-1] == "Subsección 1.ª Disposiciones comunes"
    assert [k for k in rd1561 if k.startswith("anexo")] == ["anexo1", "anexo2"]
    assert rd1561["anexo2"].meta["article_label"] == "Anexo II"
    assert rd1561["anexo1"].meta["heading_path"] == ["Anexos"]
    assert rd1561["anexo1"].meta["article_title"].startswith("MODELO DE CUADRO")
    assert "ANEXO" not in rd1561["df2"].content
    rgc = by_law["BOE-A-1996-1579"]
    assert rgc["36"].meta["heading_path"][-2:] == [
        "Subsección 1.ª Cotización a cargo de los trabajadores",
        "A) Trabajadores por cuenta propia",
    ]
    assert rgc["38"].meta["heading_path"][-1] == "B) Trabajadores por cuenta ajena"
    assert "B) Trabajadores por cuenta ajena" not in rgc["37"].content


def test_run_repeated_titles_get_their_section_name(by_law):
    lisos = by_law["BOE-A-2000-15060"]
    # "Infracciones muy graves" titles eight articles: only the section says which matter each one sanctions
    labour_relations = "Infracciones en materia de relaciones laborales individuales y colectivas"
    assert lisos["8"].meta["section_name"] == labour_relations
    assert lisos["13"].meta["section_name"] == "Infracciones en materia de prevención de riesgos laborales"
    assert lisos["26"].meta["section_name"].startswith("Infracciones de los trabajadores o asimilados")
    lgss = by_law["BOE-A-2015-11724"]
    assert lgss["169"].meta["section_name"] == "Incapacidad temporal"  # one of four "Concepto"
    assert lgss["187"].meta["section_name"] == "Riesgo durante el embarazo"  # one of many "Prestación económica"
    assert by_law["BOE-A-1996-1579"]["57"].meta["section_name"] == "Régimen especial para la minería del carbón"
    # a title of its own names the article: no section added
    assert "section_name" not in by_law["BOE-A-2015-11430"]["38"].meta
    assert "section_name" not in lisos["40"].meta
    assert not any("section_name" in d.meta for d in by_law["DEL-5452-1943"].values())
    named = sum("section_name" in d.meta for law in by_law.values() for d in law.values())
    assert named == 161, "articles whose title repeats in their law: a change here is a parsing change"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (["CAPÍTULO II. Infracciones laborales", "Sección 2.ª Infracciones en materia de prevención de riesgos"],
         "Infracciones en materia de prevención de riesgos"),
        (["Subsección 1.ª Cotización a cargo de los trabajadores", "A) Trabajadores por cuenta propia"],
         "Trabajadores por cuenta propia"),
        (["Título II: Dos Direitos e Garantias Fundamentais", "Capítulo I"], "Dos Direitos e Garantias Fundamentais"),
        (["TÍTULO I. De la relación individual", "CAPÍTULO PRIMERO"], "De la relación individual"),
        (["TÍTULO PRELIMINAR"], ""),
        (["Real Decreto Legislativo (aprobación)"], "Real Decreto Legislativo (aprobación)"),  # no numbering
        ([], ""),
    ],
)
def test_section_name(path, expected):
    assert section_name(path) == expected


def test_run_odd_headings_of_the_repealed_et(by_law):
    et1995 = by_law["BOE-A-1995-7730"]
    assert et1995["93-97"].meta["article_label"] == "Artículos 93 a 97"
    assert et1995["93-97"].content == "Artículos 93 a 97.\n\n(Derogados)"
    assert et1995["94"].content == "Artículo 94. Infracciones leves.\n\n(Derogado)"
    assert et1995["94"].meta["heading_path"][-1] == "CAPÍTULO I. Disposiciones generales (Derogado)"


def test_run_repeated_keys_are_renamed_with_warning(caplog):
    law = StatuteConverter().run(sources=[CORPUS / "BOE-A-2015-11724.md"])["documents"]
    with caplog.at_level(logging.WARNING):
        docs = {d.meta["article"]: d for d in ArticleParser().run(documents=law)["documents"]}
    assert {"dt35", "dt35-2", "dt44", "dt44-2"} <= set(docs)  # the BOE text itself has two "trigésima quinta [sic]"
    assert "[sic]" in docs["dt35-2"].content.split("\n")[0]
    assert docs["dt35-2"].id != docs["dt35"].id
    assert sum("repeats" in r.getMessage() for r in caplog.records) == 2


# -- plain text, PDF and edge cases ---------------------------------------------------------------------------

PLAIN_LAW = """Ley 3/2023, de 28 de febrero, de Empleo

PREÁMBULO

La presente ley tiene por objeto regular el empleo. Se estructura en títulos y capítulos, y contiene disposiciones
que desarrollan las políticas activas de empleo y la coordinación de los servicios públicos de empleo del Estado.

TÍTULO PRELIMINAR
Disposiciones generales

Artículo 1. Objeto.
Esta ley tiene por objeto establecer el marco de las políticas
de empleo, conforme al artículo 40 de la Constitución.

Artículo 2. Definiciones.
1. Artículo 5 de la ley anterior queda sin efecto.
2. Artículo primero de la Ley 56/2003 no se aplica.

CAPÍTULO I
De los servicios de empleo

Artículo 3 bis. Servicios.
Los servicios públicos de empleo son los del Estado.

DISPOSICIONES ADICIONALES

Disposición adicional primera. Financiación.
Se financiará con cargo a los presupuestos.

Disposición derogatoria única. Derogación normativa.
Queda derogada la Ley 56/2003.

Disposición final primera. Entrada en vigor.
Esta ley entrará en vigor al día siguiente.
"""


def test_run_plain_text(tmp_path):
    docs = {d.meta["article"]: d for d in parse_text(tmp_path, PLAIN_LAW)}
    assert list(docs) == ["preambulo", "1", "2", "3 bis", "da1", "dd", "df1"]
    assert docs["1"].meta["heading_path"] == ["TÍTULO PRELIMINAR. Disposiciones generales"]
    assert docs["3 bis"].meta["heading_path"] == ["TÍTULO PRELIMINAR. Disposiciones generales", "CAPÍTULO I. De los servicios de empleo"]
    assert docs["2"].content == (
        "Artículo 2. Definiciones.\n\n1. Artículo 5 de la ley anterior queda sin efecto.\n"
        "2. Artículo primero de la Ley 56/2003 no se aplica."
    )
    assert docs["preambulo"].content.startswith("Preámbulo\n\nLa presente ley tiene por objeto")
    assert docs["dd"].meta["article_title"] == "Derogación normativa"
    assert "DISPOSICIONES ADICIONALES" not in docs["3 bis"].content
    assert docs["1"].meta["format"] == "text"


def test_run_pdf(tmp_path):
    path = tmp_path / "rd_prueba.pdf"
    path.write_bytes(
        make_text_pdf(
            [
                "Real Decreto 99/2020, de 1 de enero, de prueba",
                "CAPÍTULO I",
                "Disposiciones generales",
                "Artículo 1. Objeto.",
                "Este real decreto regula el período de prueba de los contratos.",
                "Artículo 2. Ámbito.",
                "Se aplica a todos los trabajadores por cuenta ajena.",
                "Disposición final única. Entrada en vigor.",
                "Entrará en vigor al día siguiente de su publicación.",
            ]
        )
    )
    laws = StatuteConverter().run(sources=[path])["documents"]
    docs = ArticleParser().run(documents=laws)["documents"]
    assert [d.meta["article"] for d in docs] == ["1", "2", "df"]
    assert docs[0].meta["heading_path"] == ["CAPÍTULO I. Disposiciones generales"]
    assert docs[1].content == "Artículo 2. Ámbito.\n\nSe aplica a todos los trabajadores por cuenta ajena."
    assert docs[0].meta["format"] == "pdf"


def test_run_portuguese_plain_text(tmp_path):
    text = (
        "Lei nº 1.234, de 5 de maio de 2020\n\nArt. 1º Esta lei dispõe sobre o trabalho.\n\n"
        "Parágrafo único. O disposto neste artigo aplica-se a todos.\n\nArt. 2º-A. Revogam-se as disposições em contrário.\n"
    )
    docs = parse_text(tmp_path, text, name="lei.txt")
    assert [d.meta["article"] for d in docs] == ["1", "2-a"]
    assert docs[0].meta["lang"] == "pt"
    assert docs[0].content == "Art. 1º\n\nEsta lei dispõe sobre o trabalho.\n\nParágrafo único. O disposto neste artigo aplica-se a todos."


def test_run_preamble_options(tmp_path):
    keys = [d.meta["article"] for d in parse_text(tmp_path, PLAIN_LAW, include_preamble=False)]
    assert "preambulo" not in keys and keys[0] == "1"
    keys = [d.meta["article"] for d in parse_text(tmp_path, PLAIN_LAW, min_preamble_chars=10_000)]
    assert "preambulo" not in keys


def test_run_law_without_articles(tmp_path, caplog):
    clause = "Las partes acuerdan **subir** el salario un 3 % durante la vigencia del convenio."
    with caplog.at_level(logging.WARNING):
        docs = parse_text(tmp_path, f"# Convenio colectivo de prueba\n\n{clause}\n\n{clause}\n\n{clause}\n", name="conv.md")
    assert len(docs) == 1  # no separate preamble although the text is longer than min_preamble_chars
    assert docs[0].meta["article"] == "texto"
    clean = clause.replace("**", "")
    assert docs[0].content == f"Convenio colectivo de prueba\n\n{clean}\n\n{clean}\n\n{clean}"
    assert docs[0].id == hashlib.sha256(b"conv|texto").hexdigest()
    assert any("No articles found" in r.getMessage() for r in caplog.records)


def test_run_empty_documents_are_errors():
    good = Document(content="Artículo 1. Objeto.\nTexto del artículo.", meta={"law_id": "X", "law_title": "Ley X"})
    result = ArticleParser().run(
        documents=[Document(content="", meta={"law_id": "VACIA", "source_path": "vacia.md"}), Document(content="  \n"), good]
    )
    assert [d.meta["article"] for d in result["documents"]] == ["1"]
    assert result["documents"][0].meta["law_id"] == "X"
    assert result["errors"][0] == {"source": "vacia.md", "error": "Document has no text content"}
    assert len(result["errors"]) == 2


def test_run_document_without_law_id_uses_document_id():
    doc = Document(content="Artículo 1. Objeto.\nTexto.")
    out = ArticleParser().run(documents=[doc])["documents"][0]
    assert out.meta["law_id"] == doc.id
    assert out.meta["article"] == "1" and out.meta["article_title"] == "Objeto"
