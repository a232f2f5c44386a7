"""Loading the canonical YAML pipelines with settings applied, through Haystack's deserialization allowlist."""

import json
import os
from pathlib import Path
from typing import Any

import yaml
from haystack import Pipeline

from pipelines.settings import ALLOWED_MODULES, Settings, setup_environment

EDGE_STORE_TYPE = "components.edge_document_store.EdgeDocumentStore"
QDRANT_STORE_TYPE = "haystack_integrations.document_stores.qdrant.document_store.QdrantDocumentStore"
DENSE_EMBEDDER_TYPES = ("components.dense_embedder.DenseDocumentEmbedder", "components.dense_embedder.DenseTextEmbedder")
RETRIEVER_TYPE = "components.hybrid_retriever.HybridRetriever"


def yaml_dir() -> Path:
    """Folder of the canonical pipelines (`LEXHAY_YAML_DIR` or the repository's `yaml/`)."""
    return Path(os.environ.get("LEXHAY_YAML_DIR") or Path(__file__).resolve().parents[1] / "yaml")


def pipeline_path(name: str) -> Path:
    """`indexing` / `retrieval` / `query` -> yaml/<name>.yaml; any existing path is returned as is."""
    path = Path(name)
    if path.suffix in (".yaml", ".yml"):
        if not path.is_file():
            raise FileNotFoundError(f"Pipeline file not found: {path}")
        return path
    path = yaml_dir() / f"{name}.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"No pipeline named {name!r} ({path} does not exist)")
    return path


def _store_dict(settings: Settings) -> dict[str, Any]:
    if settings.qdrant_url:
        # ":memory:" = qdrant-client's local mode (tests, demos); anything else is a server URL
        where = {"location": ":memory:"} if settings.qdrant_url == ":memory:" else {"url": settings.qdrant_url}
        params: dict[str, Any] = {
            **where,
            "index": settings.qdrant_index,
            "embedding_dim": settings.resolved_embedding_dim(),
            "use_sparse_embeddings": True,
            "sparse_idf": True,
            "similarity": "cosine",
            "recreate_index": False,
        }
        if settings.qdrant_api_key:
            params["api_key"] = {"type": "env_var", "env_vars": ["LEXHAY_QDRANT_API_KEY"], "strict": True}
        return {"type": QDRANT_STORE_TYPE, "init_parameters": params}
    return {"type": EDGE_STORE_TYPE, "init_parameters": {"path": settings.store_path}}


def _chat_generator_dict() -> dict[str, Any] | None:
    """The configured LLM (OpenAI-compatible endpoint, else the bundled local model), serialized; None = no LLM."""
    from haystack.core.serialization import component_to_dict  # noqa: PLC0415

    from components.llm_backends import default_chat_generator  # noqa: PLC0415

    generator = default_chat_generator()
    return component_to_dict(generator, name="chat_generator") if generator is not None else None


def apply_settings(data: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """
    Return a copy of a serialized pipeline with the deployment's settings applied.

    Store location (or a Qdrant server instead of the embedded store), embedder model and collection weights
    come from settings, so the YAML files never need editing per deployment.
    """
    data = yaml.safe_load(yaml.safe_dump(data))  # deep copy
    llm: dict[str, Any] = {}

    def visit(spec: dict[str, Any]) -> None:
        """Apply the settings to one serialized component and, recursively, to the components nested in it."""
        params = spec.get("init_parameters")
        if not isinstance(params, dict):
            return
        for key, value in list(params.items()):
            if isinstance(value, dict) and value.get("type") == EDGE_STORE_TYPE:
                params[key] = _store_dict(settings)
            elif isinstance(value, dict) and "type" in value:
                visit(value)
        if spec.get("type") in DENSE_EMBEDDER_TYPES:
            params["model"] = settings.embedder
        if spec.get("type") == RETRIEVER_TYPE:
            params["collections"] = dict(settings.collections)
        if "chat_generator" in params and params["chat_generator"] is None:
            # LLM stages left without a generator in YAML get the deployment's LLM (LEXHAY_LLM_BASE_URL /
            # OPENAI_API_KEY, else the bundled local model; LEXHAY_LLM=none keeps the deterministic fallbacks)
            if "value" not in llm:
                llm["value"] = _chat_generator_dict()
            params["chat_generator"] = llm["value"]

    for spec in data.get("components", {}).values():
        visit(spec)
    return data


def load_pipeline(name: str, settings: Settings | None = None, stores: dict[str, Any] | None = None) -> Pipeline:
    """
    Load a canonical pipeline (`indexing`, `retrieval`, `query` or a YAML path) with settings applied.

    Custom classes load through the allowlist `components.*`, `pipelines.*`; never `unsafe=True`.

    :param stores: A cache of document store instances keyed by their serialized form. Components whose stores
        serialize the same share one instance (also across pipelines loaded with the same cache), so a writer and
        a retriever see the same index even on an in-memory backend.
    """
    setup_environment()
    settings = settings or Settings.load()
    data = yaml.safe_load(pipeline_path(name).read_text(encoding="utf-8"))
    pipe = Pipeline.from_dict(apply_settings(data, settings), allowed_modules=ALLOWED_MODULES)
    stores = {} if stores is None else stores
    for _, instance in pipe.walk():
        _share_stores(instance, stores)
    return pipe


def _share_stores(instance: Any, stores: dict[str, Any]) -> None:
    """Point `instance` and the components nested in it at one store object per serialized store."""
    store = getattr(instance, "document_store", None)
    if store is not None and hasattr(store, "to_dict"):
        key = json.dumps(store.to_dict(), sort_keys=True, default=str)
        instance.document_store = stores.setdefault(key, store)
    for value in vars(instance).values():
        if value is not instance and hasattr(value, "__haystack_input__"):  # a nested component
            _share_stores(value, stores)
