import pytest
from haystack import Document
from haystack.dataclasses import ChatMessage

from components.validators.answer_meta_parser import AnswerMetaParser

ET = "BOE-A-2015-11430"
CONTEXT = [Document(id=f"chunk{i}", content=f"fragmento {i}") for i in range(1, 5)]  # [1]..[4]


@pytest.fixture(scope="module")
def parser():
    return AnswerMetaParser()


def test_init_and_validation(tmp_path):
    parser = AnswerMetaParser()
    assert parser.laws_file is None and parser.aliases is None
    with pytest.raises(ValueError, match="does not exist"):
        AnswerMetaParser(laws_file=str(tmp_path / "missing.yaml"))


def test_to_dict():
    assert AnswerMetaParser(aliases={"Lei 8.213": "L8213"}).to_dict() == {
        "type": "components.validators.answer_meta_parser.AnswerMetaParser",
        "init_parameters": {"laws_file": None, "aliases": {"Lei 8.213": "L8213"}},
    }


def test_from_dict():
    data = AnswerMetaParser(aliases={"Lei 8.213": "L8213"}).to_dict()
    restored = AnswerMetaParser.from_dict(data)
    assert restored.to_dict() == data
    need = restored.run(text="A\n===META===\nUSED|1\nDROP|ninguno\nNEED|57|Lei 8.213")["need"]
    assert need[0]["law_id"] == "L8213"


def test_run_well_formed_reply_from_chat_messages(parser):
    reply = (
        "Tienes derecho a 30 días naturales de vacaciones [1], que no se pueden sustituir por dinero [3].\n"
        "===META===\nUSED|1,3\nDROP|2\nNEED|art. 48|ET\nNEED|vacaciones no disfrutadas incapacidad temporal"
    )
    result = parser.run(replies=[ChatMessage.from_assistant(reply)], context_documents=CONTEXT)
    assert result["answer"].startswith("Tienes derecho") and result["answer"].endswith("[3].")
    assert (result["used"], result["dropped"]) == ([1, 3], [2])
    assert result["context_chunk_ids"] == ["chunk1", "chunk3"]
    assert result["meta_valid"] is True and result["warnings"] == []
    assert result["need"] == [
        {"type": "article", "article": "48", "law_id": ET, "law": "ET", "query": "art. 48 ET"},
        {"type": "keywords", "article": None, "law_id": None, "law": None,
         "query": "vacaciones no disfrutadas incapacidad temporal"},
    ]


@pytest.mark.parametrize(
    ("name", "reply", "used", "dropped", "valid", "warning"),
    [
        ("drop ninguno", "A [1]\n===META===\nUSED|1,2\nDROP|ninguno", [1, 2], [], True, None),
        ("no delimiter", "Según [1] y [3], sí; ver [2, 4].", [1, 3, 2, 4], [], False, "no ===META=== delimiter"),
        ("meta lines without delimiter", "Respuesta.\n\nUSED|1\nDROP|2", [1], [2], False, "no ===META=== delimiter"),
        ("out of range", "A\n===META===\nUSED|1, 7, 0\nDROP|9", [1], [], True, "USED indices out of range 1..4"),
        ("spaces, lowercase, colon", "A\n  ===  META ===  \n used : 1 y 2 \n drop | [3]", [1, 2], [3], True, None),
        ("markdown delimiter", "A\n**===META===**\n- USED|2\n- DROP|1", [2], [1], True, None),
        ("duplicated lines", "A\n===META===\nUSED|1\nUSED|2\nDROP|3\nDROP|3", [1, 2], [3], True, "USED line repeated"),
        ("range and brackets", "A\n===META===\nUSED|[1-3]\nDROP|4", [1, 2, 3], [4], True, None),
        ("used and dropped", "A\n===META===\nUSED|1,2\nDROP|2", [1, 2], [2], True, "both USED and DROP"),
        ("invalid used", "A [4]\n===META===\nUSED|todos\nDROP|ninguno", [4], [], False, "USED line without valid"),
        ("missing drop", "A [2]\n===META===\nUSED|2", [2], [], False, "mandatory DROP line missing"),
        ("garbage meta", "A\n===META===\nGracias por preguntar.", [], [], False, "unrecognised metadata line"),
        ("two delimiters, last wins", "A\n===META===\nx\n===META===\nUSED|1\nDROP|2", [1], [2], True, None),
        ("empty reply", "", [], [], False, "empty reply"),
        ("comments", "A\n===META===\nUSED|1 (artículo 38)\nDROP|2 (no aplica)", [1], [2], True, None),
    ],
)
def test_run_malformed_metadata_never_raises(parser, name, reply, used, dropped, valid, warning):
    result = parser.run(text=reply, context_documents=CONTEXT)
    assert result["used"] == used, name
    assert result["dropped"] == dropped, name
    assert result["meta_valid"] is valid, name
    if warning is None:
        assert result["warnings"] == [], name
    else:
        assert any(warning in w for w in result["warnings"]), (name, result["warnings"])
    assert "===META===" not in result["answer"].split("\n")[-1]
    assert "USED" not in result["answer"]
    expected_ids = [f"chunk{i}" for i in used if i not in dropped]
    assert result["context_chunk_ids"] == expected_ids, name


def test_run_need_variants(parser):
    reply = "A\n===META===\nUSED|1\nDROP|ninguno\n" + "\n".join(
        [
            "NEED | disposición adicional primera | LGSS",
            "NEED|disposición adicional primera|LGSS",  # duplicate: merged
            "NEED|48|",  # law missing
        ]
    )
    result = parser.run(text=reply)
    assert result["need"] == [
        {"type": "article", "article": "da1", "law_id": "BOE-A-2015-11724", "law": "LGSS",
         "query": "disposición adicional primera LGSS"},
        {"type": "article", "article": "48", "law_id": None, "law": None, "query": "artículo 48"},
    ]
    assert "NEED for article 48 without a law" in result["warnings"]

    more = parser.run(
        text="A\n===META===\nUSED|1\nDROP|ninguno\nNEED|14|Estatuto de los Trabajadores\n"
        "NEED|artículo 14 de la Constitución\nNEED|despido colectivo\nNEED|ninguno"
    )
    assert [(n["article"], n["law"]) for n in more["need"]] == [("14", "ET"), ("14", "CE")]
    assert any("more than 2 NEED lines" in w for w in more["warnings"])
    unknown = parser.run(text="A\n===META===\nUSED|1\nDROP|ninguno\nNEED|5|Ley 99/2099")
    assert unknown["need"][0]["law"] == "Ley 99/2099" and unknown["need"][0]["law_id"] is None
    assert any("not in the laws table" in w for w in unknown["warnings"])


def test_run_without_context_documents_and_inputs(parser):
    result = parser.run(text="A\n===META===\nUSED|1,9\nDROP|ninguno")
    assert result["used"] == [1, 9]  # nothing to range-check against
    assert result["context_chunk_ids"] == []
    empty = parser.run()
    assert empty["answer"] == "" and empty["meta_valid"] is False
    fallback = parser.run(replies=[ChatMessage.from_assistant("")], text="B\n===META===\nUSED|1\nDROP|ninguno")
    assert fallback["answer"] == "B" and fallback["meta_valid"] is True
