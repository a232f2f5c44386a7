import pytest

from pipelines.flags import DEFAULT_FLAGS, check_flags, env_flags, parse_assignments, request_flags
from pipelines.settings import Settings


def test_check_flags_accepts_booleans_and_words_and_names_unknown_flags():
    assert check_flags({"hyde": "on", "rerank": "0", "crag": True}) == {"hyde": True, "rerank": False, "crag": True}
    with pytest.raises(ValueError, match="Unknown flag"):
        check_flags({"turbo": True})
    with pytest.raises(ValueError, match="needs a boolean"):
        check_flags({"hyde": "maybe"})


def test_env_flags_list_and_per_flag_variables_the_latter_winning():
    environ = {"LEXHAY_FLAGS": " hyde=on , rerank=off,", "LEXHAY_FLAG_RERANK": "1"}
    assert env_flags(environ) == {"hyde": True, "rerank": True}
    with pytest.raises(ValueError, match="LEXHAY_FLAGS items look like name=on|off, got 'hyde'"):
        env_flags({"LEXHAY_FLAGS": "hyde"})


def test_parse_assignments():
    assert parse_assignments(["a=1", " b = x ", ""], "bad {item}") == {"a": "1", "b": "x"}
    with pytest.raises(ValueError, match="bad '=1'"):
        parse_assignments(["=1"], "bad {item}")


def test_request_flags_overrides_per_request():
    flags = request_flags({"hyde": True}, {"use_rerank": "off", "force_vector": True})
    assert flags == {**DEFAULT_FLAGS, "hyde": True, "rerank": False, "lexical_first_gating": False}
    assert request_flags({}, {"force_vector": False})["lexical_first_gating"] is True
    assert request_flags({}, None) == DEFAULT_FLAGS
    with pytest.raises(ValueError, match="Unknown option 'use_turbo'"):
        request_flags({}, {"use_turbo": True})


def test_settings_read_flags_from_config_and_env(tmp_path, monkeypatch):
    config = tmp_path / "lexhay.yaml"
    config.write_text("flags:\n  hyde: true\n  graph_enrich: on\n", encoding="utf-8")
    monkeypatch.setenv("LEXHAY_FLAG_GRAPH_ENRICH", "0")
    assert Settings.load(config).flags == {"hyde": True, "graph_enrich": False}
    config.write_text("flags:\n  warp: true\n", encoding="utf-8")
    with pytest.raises(ValueError, match="Unknown flag"):
        Settings.load(config)
