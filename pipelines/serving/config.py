"""
The server's settings: every `LEXHAY_*` variable the HTTP layer reads, read once, typed and validated
(pydantic-settings). The engine's own settings (store, embedder, LLM, ...) are `pipelines.settings.Settings`.
"""

import os
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
KEYS_FILENAME = "keys.yaml"


def _items(raw: str, sep: str = ",") -> list[str]:
    return [item.strip() for item in raw.split(sep) if item.strip()]


class ServerSettings(BaseSettings):
    """
    HTTP serving settings, from `LEXHAY_<NAME>` environment variables (and `.env`).

    Engine turns (`pipelines.serving.engine`): `serve_readers`, `serve_queue_timeout`. Inputs: `max_question_chars`.
    Limits (`pipelines.serving.guard`): `max_body_mb`, `max_upload_mb`, `max_files`, `rate_limit` (requests per
    minute per principal), `max_concurrent` (requests in flight per principal), `request_timeout` (seconds).
    Browser safety: `cors_origins`, `allowed_hosts`. Indexing server-side files: `index_roots`. Keys: `auth_keys`;
    JWT bearer tokens from an identity provider: `jwt_key`, `jwt_algorithms`, `jwt_audience`, `jwt_issuer`.
    """

    model_config = SettingsConfigDict(env_prefix="LEXHAY_", env_file=".env", extra="ignore")

    store: str = "./.lexhay"
    serve_readers: int = Field(default=4, ge=1)
    serve_queue_timeout: float = Field(default=120.0, ge=0)
    max_question_chars: int = Field(default=4000, ge=1)
    max_body_mb: float = Field(default=1.0, gt=0)  # JSON bodies (questions, chat)
    max_upload_mb: float = Field(default=50.0, gt=0)  # one multipart index request, every file together
    max_files: int = Field(default=100, ge=1)  # files per index request
    rate_limit: float = Field(default=120.0, ge=0)  # requests per minute per key principal (0 = unlimited)
    max_concurrent: int = Field(default=8, ge=0)  # requests in flight per key principal (0 = unlimited)
    request_timeout: float = Field(default=900.0, gt=0)  # overall deadline of one request (a local CPU LLM answer
    # takes minutes), streams included
    cors_origins: str = ""  # comma-separated origins browsers may call from; empty = none
    allowed_hosts: str = ",".join(LOOPBACK_HOSTS)  # Host header values accepted (comma-separated; * = any)
    index_roots: str = ""  # os.pathsep-separated folders `paths` may be indexed from; empty = `paths` disabled
    auth_keys: str = ""  # the API keys file; default <store>/keys.yaml
    jwt_key: str = ""  # JWT bearer tokens: the verification key (a PEM file path, or the shared secret); empty = off
    jwt_algorithms: str = "RS256"  # comma-separated algorithms accepted (HS256 with a shared secret)
    jwt_audience: str = ""  # the `aud` tokens must carry (empty = not checked)
    jwt_issuer: str = ""  # the `iss` tokens must carry (empty = not checked)

    @property
    def cors_origin_list(self) -> list[str]:
        return _items(self.cors_origins)

    @property
    def allowed_host_list(self) -> list[str]:
        return _items(self.allowed_hosts)

    @property
    def index_root_list(self) -> list[Path]:
        return [Path(r).resolve() for r in _items(self.index_roots, os.pathsep)]

    def keys_file(self, store: str | None = None) -> Path:
        """The API keys file: `LEXHAY_AUTH_KEYS`, else `<store>/keys.yaml`."""
        return Path(self.auth_keys) if self.auth_keys else Path(store or self.store) / KEYS_FILENAME


def server_settings() -> ServerSettings:
    """The server settings from the current environment (a ValueError names the bad variable)."""
    from pydantic import ValidationError  # noqa: PLC0415

    try:
        return ServerSettings()
    except ValidationError as error:
        problems = "; ".join(f"LEXHAY_{'_'.join(map(str, e['loc'])).upper()}: {e['msg']}" for e in error.errors())
        raise ValueError(f"invalid server setting: {problems}") from None
