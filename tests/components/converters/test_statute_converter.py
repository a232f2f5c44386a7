"""Tests for components.converters.statute_converter.StatuteConverter."""

from pathlib import Path

import pytest
from haystack import Document
from pypdf import PdfWriter

from components.converters.statute_converter import (
    StatuteConverter,
    infer_rank_name,
    iso_date,
    rank_for,
    short_name,
)
from components.legal.citations import law_key

CORPUS = Path(__file__).resolve().parents[3] / "data" / "corpus"

# law_id -> (law_short, rank, rank_name, status, lang, format)
EXPECTED = {
    "BOE-A-1978-31229": ("CE", 1, "constitucion", "in_force", "es", "statute_md"),
    "BOE-A-1985-16660": ("LOLS", 1, "ley_organica", "in_force", "es", "statute_md"),
    "BOE-A-1995-21346": ("RD 1561/1995", 4, "real_decreto", "in_force", "es", "statute_md"),
    "BOE-A-1995-24292": ("LPRL", 2, "ley", "in_force", "es", "statute_md"),
    "BOE-A-1995-7730": ("ET1995", 2, "real_decreto_legislativo", "repealed", "es", "statute_md"),
    "BOE-A-1996-1579": ("RGC", 3, "real_decreto", "in_force", "es", "statute_md"),
    "BOE-A-1999-346": ("RD 2720/1998", 4, "real_decreto", "in_force", "es", "statute_md"),
    "BOE-A-2000-15060": ("LISOS", 2, "real_decreto_legislativo", "in_force", "es", "statute_md"),
    "BOE-A-2009-4724": ("RD 295/2009", 4, "real_decreto", "in_force", "es", "statute_md"),
    "BOE-A-2011-17975": ("RD 1620/2011", 4, "real_decreto", "in_force", "es", "statute_md"),
    "BOE-A-2015-11430": ("ET", 2, "real_decreto_legislativo", "in_force", "es", "statute_md"),
    "BOE-A-2015-11724": ("LGSS", 2, "real_decreto_legislativo", "in_force", "es", "statute_md"),
    "CF88": ("CF88", 1, "constitucion", "in_force", "pt", "br_md"),
    "DEL-5452-1943": ("CLT", 2, "decreto_ley", "in_force", "pt", "statute_md"),
}


def make_text_pdf(lines: list[str]) -> bytes:
    """A minimal one-page PDF with a real text layer (Helvetica, WinAnsi encoding), one line per entry."""

    def escape(text: str) -> str:
        return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")

    stream = "\n".join(["BT", "/F1 11 Tf", "14 TL", "50 800 Td", *[f"({escape(l)}) Tj T*" for l in lines], "ET"])
    data = stream.encode("cp1252")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(data) + data + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def make_blank_pdf(path: Path) -> None:
    writer = PdfWriter()
    writer.add_blank_page(width=595, height=842)
    with path.open("wb") as handle:
        writer.write(handle)


@pytest.fixture(scope="module")
def corpus_result():
    return StatuteConverter().run(sources=[CORPUS])


@pytest.fixture(scope="module")
def corpus_docs(corpus_result):
    return {doc.meta["law_id"]: doc for doc in corpus_result["documents"]}


# -- init / serialization -------------------------------------------------------------------------------------


def test_init_default():
    converter = StatuteConverter()
    assert converter.collection == "normativa"
    assert converter.default_lang == "es"
    assert converter.laws_file is None


def test_init_custom(tmp_path):
    table = tmp_path / "laws.yaml"
    table.write_text("laws:\n  MI-LEY: {law_short: ML}\n", encoding="utf-8")
    converter = StatuteConverter(collection="criterios", default_lang="pt", laws_file=str(table))
    assert (converter.collection, converter.default_lang, converter.laws_file) == ("criterios", "pt", str(table))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"collection": ""}, "collection"),
        ({"collection": "dos palabras"}, "collection"),
        ({"default_lang": "spanish"}, "default_lang"),
        ({"laws_file": "/does/not/exist.yaml"}, "does not exist"),
    ],
)
def test_init_invalid(kwargs, message):
    with pytest.raises(ValueError, match=message):
        StatuteConverter(**kwargs)


def test_init_invalid_laws_table(tmp_path):
    table = tmp_path / "laws.yaml"
    table.write_text("laws: [1, 2]\n", encoding="utf-8")
    with pytest.raises(ValueError, match="mapping"):
        StatuteConverter(laws_file=str(table))


def test_init_is_keyword_only():
    with pytest.raises(TypeError):
        StatuteConverter("normativa")  # type: ignore[misc]


def test_to_dict():
    data = StatuteConverter(collection="sentencias").to_dict()
    assert data == {
        "type": "components.converters.statute_converter.StatuteConverter",
        "init_parameters": {"collection": "sentencias", "default_lang": "es", "laws_file": None,
                            "max_pdf_pages": 3000, "max_text_chars": 20_000_000},
    }


def test_from_dict():
    data = {
        "type": "components.converters.statute_converter.StatuteConverter",
        "init_parameters": {"collection": "criterios", "default_lang": "pt", "laws_file": None},
    }
    converter = StatuteConverter.from_dict(data)
    assert (converter.collection, converter.default_lang) == ("criterios", "pt")
    assert StatuteConverter.from_dict(converter.to_dict()).to_dict() == converter.to_dict()


# -- helpers --------------------------------------------------------------------------------------------------


def test_rank_helpers():
    assert rank_for("constitucion") == 1
    assert rank_for("ley_organica") == 1
    assert rank_for("real_decreto_legislativo") == 2
    assert rank_for("Real Decreto-ley") == 2
    assert rank_for("real_decreto", "Real Decreto 84/1996 por el que se aprueba el Reglamento general sobre inscripción") == 3
    assert rank_for("real_decreto", "Real Decreto 295/2009, de 6 de marzo") == 4
    assert rank_for("orden") == 5
    assert rank_for("convenio") == 5
    assert rank_for("circular") == 5
    assert infer_rank_name("Ley Orgánica 3/2007, de 22 de marzo") == "ley_organica"
    assert infer_rank_name("Real Decreto-ley 32/2021, de 28 de diciembre") == "real_decreto_ley"
    assert infer_rank_name("Constituição da República Federativa do Brasil") == "constitucion"
    assert infer_rank_name("Convenio colectivo de hostelería") == "convenio"
    assert infer_rank_name("Sentencia del Tribunal Supremo") == "other"


def test_short_name():
    assert short_name("Ley 31/1995, de 8 de noviembre, de Prevención de Riesgos Laborales") == "Ley 31/1995"
    assert short_name("Real Decreto 295/2009, de 6 de marzo, por el que se regulan ...") == "RD 295/2009"
    assert short_name("Ley Orgánica 3/2007, de 22 de marzo") == "LO 3/2007"
    assert short_name("Real Decreto Legislativo 2/2015, de 23 de octubre") == "RDLeg 2/2015"
    assert short_name("Real Decreto-ley 32/2021, de 28 de diciembre") == "RDL 32/2021"
    assert short_name("Orden TES/1/2020, de 2 de enero") == "Orden TES/1/2020"
    assert short_name("Lei nº 8.213, de 24 de julho de 1991") == "Lei 8.213/1991"
    assert short_name("Constitución Española") is None


def test_iso_date():
    assert iso_date("1978-12-29") == "1978-12-29"
    assert iso_date("20151113") == "2015-11-13"
    assert iso_date("5/10/1988") == "1988-10-05"
    assert iso_date("2015-02-30") is None
    assert iso_date("ayer") is None


# -- real corpus ----------------------------------------------------------------------------------------------


def test_run_corpus_one_document_per_file(corpus_result):
    assert corpus_result["errors"] == []
    assert [Path(d.meta["source_path"]).name for d in corpus_result["documents"]] == sorted(
        p.name for p in CORPUS.glob("*.md")
    )


@pytest.mark.parametrize("law_id", sorted(EXPECTED))
def test_run_corpus_meta(corpus_docs, law_id):
    meta = corpus_docs[law_id].meta
    law_short, rank, rank_name, status, lang, fmt = EXPECTED[law_id]
    assert (meta["law_short"], meta["rank"], meta["rank_name"]) == (law_short, rank, rank_name)
    assert (meta["status"], meta["lang"], meta["format"]) == (status, lang, fmt)
    assert meta["collection"] == "normativa"
    assert meta["law_title"]
    assert meta["law_key"] == law_key(law_short)  # how a citation of it is matched when the table lacks it
    assert meta["publication_date"][:2] in ("19", "20")


def test_run_front_matter_removed(corpus_docs):
    et = corpus_docs["BOE-A-2015-11430"]
    assert et.content.startswith("# Real Decreto Legislativo 2/2015, de 23 de octubre")
    assert "identifier:" not in et.content[:2000]
    assert et.meta["law_title"].startswith("Real Decreto Legislativo 2/2015")
    assert et.meta["last_updated"] == "2025-12-30"
    assert et.meta["source_url"] == "https://www.boe.es/eli/es/rdlg/2015/10/23/2"
    assert "derogated_by" not in et.meta


def test_run_repealed_law(corpus_docs):
    meta = corpus_docs["BOE-A-1995-7730"].meta
    assert meta["status"] == "repealed"
    assert meta["derogated_by"] == "BOE-A-2015-11430"
    assert meta["repeal_date"] == "2015-11-13"


def test_run_brazilian_constitution(corpus_docs):
    cf = corpus_docs["CF88"]
    assert cf.meta["law_title"] == "Constituição da República Federativa do Brasil"
    assert (cf.meta["rank"], cf.meta["lang"], cf.meta["status"]) == (1, "pt", "in_force")
    assert cf.meta["publication_date"] == "1988-10-05"
    assert "**Art. 5º**" in cf.content


def test_run_clt_front_matter_short_name_and_country(corpus_docs):
    clt = corpus_docs["DEL-5452-1943"]
    assert clt.meta["law_short"] == "CLT"  # the front matter's short_name, not "DL 5.452/1943" from the title
    assert clt.meta["law_title"].startswith("Decreto-Lei nº 5.452, de 1º de maio de 1943")
    assert (clt.meta["country"], clt.meta["lang"]) == ("br", "pt")
    assert corpus_docs["CF88"].meta["country"] == "br"  # no front matter: the laws table
    assert corpus_docs["BOE-A-2015-11430"].meta["country"] == "es"


def test_run_short_name_front_matter_wins_and_country_from_language(tmp_path):
    path = tmp_path / "lei.md"
    path.write_text(
        '---\ntitle: "Lei nº 9.999, de 1º de maio de 2020"\nidentifier: "LEI-9999"\nshort_name: "LTeste"\n---\n'
        "# Lei nº 9.999\n\n**Art. 1º** Esta Lei institui o teste, não altera os direitos dos trabalhadores, que "
        "são assegurados pela Constituição, e também não muda a jornada de trabalho nem as férias.\n",
        encoding="utf-8",
    )
    meta = StatuteConverter().run(sources=[path])["documents"][0].meta
    assert meta["law_short"] == "LTeste"
    assert (meta["lang"], meta["country"]) == ("pt", "br")


def test_run_a_title_with_no_short_form_names_the_law_and_a_file_name_does_not(tmp_path):
    # an uploaded collective agreement: cited by its heading, not by "convenio-acme"
    agreement = tmp_path / "convenio-acme.md"
    agreement.write_text(
        "# Convenio colectivo de Acme Hostelería 2025-2027\n\n##### Artículo 11. Vacaciones\n\nLas personas "
        "trabajadoras disfrutarán de treinta y tres días naturales de vacaciones retribuidas por año de servicio.\n",
        encoding="utf-8",
    )
    # no heading: the first line is a sentence of the text, not a name; a heading too long to cite is not either
    untitled = tmp_path / "notas-internas.md"
    untitled.write_text("Las personas trabajadoras disfrutarán de treinta y tres días naturales de vacaciones.\n",
                        encoding="utf-8")
    long_title = tmp_path / "acuerdo.md"
    long_title.write_text("# " + "Acuerdo de la comisión paritaria sobre " * 4 + "\n\nTexto del acuerdo sobre la "
                          "jornada y los descansos de las personas trabajadoras del centro.\n", encoding="utf-8")
    docs = StatuteConverter().run(sources=[agreement, untitled, long_title])["documents"]
    assert [d.meta["law_short"] for d in docs] == [
        "Convenio colectivo de Acme Hostelería 2025-2027", "notas-internas", "acuerdo"]
    assert docs[0].meta["law_id"] == "convenio-acme"  # the id stays the file's


# -- meta, directories, other formats -------------------------------------------------------------------------


def test_run_meta_overrides_and_per_source_list():
    converter = StatuteConverter()
    result = converter.run(
        sources=[CORPUS / "BOE-A-1999-346.md", str(CORPUS / "BOE-A-2011-17975.md")],
        meta=[{"collection": "criterios", "tenant_id": "t1"}, {"law_short": "RDHogar"}],
    )
    first, second = result["documents"]
    assert (first.meta["collection"], first.meta["tenant_id"]) == ("criterios", "t1")
    assert (second.meta["collection"], second.meta["law_short"]) == ("normativa", "RDHogar")
    with pytest.raises(ValueError, match="length"):
        converter.run(sources=[CORPUS / "BOE-A-1999-346.md"], meta=[{}, {}])


def test_run_collection_from_init():
    doc = StatuteConverter(collection="sentencias").run(sources=[CORPUS / "BOE-A-1999-346.md"])["documents"][0]
    assert doc.meta["collection"] == "sentencias"


def test_run_text_file(tmp_path):
    path = tmp_path / "ley_empleo.txt"
    path.write_text(
        "Ley 3/2023, de 28 de febrero, de Empleo\n\nArtículo 1. Objeto.\nEsta ley regula las políticas de empleo y "
        "los servicios públicos de empleo del Estado, con el fin de mejorar la empleabilidad de las personas.\n",
        encoding="utf-8",
    )
    doc = StatuteConverter().run(sources=[path])["documents"][0]
    assert doc.content.startswith("Ley 3/2023")
    assert doc.meta["law_id"] == "ley_empleo"
    assert doc.meta["law_title"] == "Ley 3/2023, de 28 de febrero, de Empleo"
    assert (doc.meta["law_short"], doc.meta["rank"], doc.meta["rank_name"]) == ("Ley 3/2023", 2, "ley")
    assert (doc.meta["format"], doc.meta["lang"], doc.meta["status"]) == ("text", "es", "in_force")


def test_run_text_file_with_front_matter_and_legacy_encoding(tmp_path):
    path = tmp_path / "orden.txt"
    path.write_bytes(
        "---\nidentifier: BOE-A-2020-1\ntitle: Orden TES/1/2020, de 2 de enero\nrank: orden\ncountry: es\n"
        "status: vigente\n---\nOrden de prueba sobre cotización y jornada de los trabajadores.\n".encode("cp1252")
    )
    doc = StatuteConverter().run(sources=[path])["documents"][0]
    assert doc.meta["law_id"] == "BOE-A-2020-1"
    assert (doc.meta["law_short"], doc.meta["rank"], doc.meta["status"]) == ("Orden TES/1/2020", 5, "in_force")
    assert "cotización" in doc.content


def test_run_text_pdf(tmp_path):
    path = tmp_path / "rd_prueba.pdf"
    path.write_bytes(
        make_text_pdf(
            [
                "Real Decreto 99/2020, de 1 de enero, de prueba",
                "Artículo 1. Objeto.",
                "Este real decreto regula el período de prueba de los contratos.",
            ]
        )
    )
    doc = StatuteConverter().run(sources=[path])["documents"][0]
    assert doc.meta["format"] == "pdf"
    assert doc.meta["law_title"] == "Real Decreto 99/2020, de 1 de enero, de prueba"
    assert (doc.meta["law_short"], doc.meta["rank"]) == ("RD 99/2020", 4)
    assert "Artículo 1. Objeto." in doc.content


def test_run_directory_expansion(tmp_path):
    (tmp_path / "b.txt").write_text("Ley 1/2000, de prueba\nTexto de la ley.", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.md").write_text("# Ley 2/2000, de prueba\n\nTexto de la ley.", encoding="utf-8")
    (tmp_path / "notas.docx").write_bytes(b"PK\x03\x04")
    result = StatuteConverter().run(sources=[tmp_path])
    assert [d.meta["law_id"] for d in result["documents"]] == ["b", "a"]  # sorted paths: b.txt < sub/a.md
    assert result["errors"] == []
    empty_dir = tmp_path / "vacio"
    empty_dir.mkdir()
    assert "no supported files" in StatuteConverter().run(sources=[empty_dir])["errors"][0]["error"]


# -- malformed inputs -----------------------------------------------------------------------------------------


def test_run_malformed_inputs_are_errors_and_others_continue(tmp_path):
    empty = tmp_path / "empty.md"
    empty.write_text("", encoding="utf-8")
    blank = tmp_path / "blank.txt"
    blank.write_text("  \n\n ", encoding="utf-8")
    binary = tmp_path / "junk.md"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    undecodable = tmp_path / "undecodable.txt"
    undecodable.write_bytes(bytes([0x81, 0x8D, 0x8F, 0x90, 0x9D]) * 40)
    unterminated = tmp_path / "unterminated.md"
    unterminated.write_text("---\ntitle: Ley sin cierre\nidentifier: X\n\n# Ley\n\nArtículo 1.\n", encoding="utf-8")
    bad_yaml = tmp_path / "bad_yaml.md"
    bad_yaml.write_text("---\ntitle: [sin cerrar\n---\n# Ley\n", encoding="utf-8")
    only_front = tmp_path / "only_front.md"
    only_front.write_text("---\ntitle: Ley vacía\n---\n\n", encoding="utf-8")
    no_text_pdf = tmp_path / "scan.pdf"
    make_blank_pdf(no_text_pdf)
    broken_pdf = tmp_path / "broken.pdf"
    broken_pdf.write_bytes(b"%PDF-1.4\nnot really a pdf")
    unsupported = tmp_path / "ley.docx"
    unsupported.write_bytes(b"PK\x03\x04")
    missing = tmp_path / "missing.md"
    good = CORPUS / "BOE-A-1999-346.md"

    sources = [empty, blank, binary, undecodable, unterminated, bad_yaml, only_front, no_text_pdf, broken_pdf,
               unsupported, missing, good]
    result = StatuteConverter().run(sources=sources)

    assert [d.meta["law_id"] for d in result["documents"]] == ["BOE-A-1999-346"]
    errors = {Path(e["source"]).name: e["error"] for e in result["errors"]}
    assert set(errors) == {p.name for p in sources[:-1]}
    assert errors["empty.md"] == "file is empty"
    assert errors["blank.txt"] == "file is empty"
    assert "binary" in errors["junk.md"]
    assert "not UTF-8" in errors["undecodable.txt"]
    assert "unterminated YAML front matter" in errors["unterminated.md"]
    assert "invalid YAML front matter" in errors["bad_yaml.md"]
    assert errors["only_front.md"] == "no text after the front matter"
    assert "no extractable text" in errors["scan.pdf"]
    assert errors["broken.pdf"].startswith("cannot read PDF")
    assert "unsupported file type '.docx'" in errors["ley.docx"]
    assert errors["missing.md"] == "file not found"


def test_run_returns_documents(corpus_result):
    assert all(isinstance(d, Document) and d.content for d in corpus_result["documents"])
