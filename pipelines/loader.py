"""Loading the canonical YAML pipelines with settings applied, through Haystack's deserialization allowlist."""

import json
from pathlib import Path
from typing import Any

import yaml
from haystack import Pipeline

from components.legal.ids import CHILD_FILTER
from components.utils.templates import compile_templates_once
from lexhay_resources import resource_dir
from pipelines.settings import ALLOWED_MODULES, KNOWN_COSINE_RANGES, Settings, current_settings, setup_environment

EDGE_STORE_TYPE = "components.document_stores.edge_document_store.EdgeDocumentStore"
QDRANT_STORE_TYPE = "haystack_integrations.document_stores.qdrant.document_store.QdrantDocumentStore"
DENSE_EMBEDDER_TYPES = ("components.embedders.dense_embedder.DenseDocumentEmbedder", "components.embedders.dense_embedder.DenseTextEmbedder")
RETRIEVER_TYPE = "components.retrievers.hybrid_retriever.HybridRetriever"
CRAG_TYPE = "components.routers.crag_router.CRAGRouter"
RERANKER_TYPE = "components.rankers.legal_reranker.LegalReranker"
COMPRESSOR_TYPE = "components.builders.context_compressor.ContextCompressor"
LOCAL_LLM_TOKEN_BUDGET = 1500
OPENSEARCH_STORE_TYPE = (
    "haystack_integrations.document_stores.opensearch.document_store.OpenSearchDocumentStore"
)
PRUNING_WRITER_TYPE = "components.writers.pruning_writer.PruningDocumentWriter"
# the writers that make a pipeline an indexing pipeline (the canonical one, or a user's with Haystack's own)
INDEXING_WRITER_TYPES = (PRUNING_WRITER_TYPE, "haystack.components.writers.document_writer.DocumentWriter")
METADATA_ROUTER_TYPE = "haystack.components.routers.metadata_router.MetadataRouter"
OPENSEARCH_WRITER_NAME = "opensearch_writer"
OPENSEARCH_ROUTER_NAME = "opensearch_router"  # the child chunks, for the OpenSearch writer
OPENSEARCH_RRF_K = 60  # RRF rank constant of the dense + OpenSearch BM25 fusion (the k=60)


def yaml_dir() -> Path:
    """Folder of the canonical pipelines: `LEXHAY_YAML_DIR`, else the shipped `yaml/` (`lexhay_resources`)."""
    return Path(current_settings().yaml_dir or resource_dir("yaml"))


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
            "progress_bar": False,
        }
        if "url" in where:  # the embedded store's payload indexes (local mode has none, and warns about them)
            params["payload_fields_to_index"] = _qdrant_payload_indexes()
        if settings.qdrant_api_key:
            params["api_key"] = {"type": "env_var", "env_vars": ["LEXHAY_QDRANT_API_KEY"], "strict": True}
        return {"type": QDRANT_STORE_TYPE, "init_parameters": params}
    return {"type": EDGE_STORE_TYPE, "init_parameters": {"path": settings.store_path}}


def _qdrant_payload_indexes() -> list[dict[str, str]]:
    from components.document_stores.edge_document_store import DEFAULT_PAYLOAD_INDEXES  # noqa: PLC0415

    return [{"field_name": name, "field_schema": kind} for name, kind in DEFAULT_PAYLOAD_INDEXES.items()]


def _opensearch_store_dict(settings: Settings) -> dict[str, Any]:
    """The OpenSearch index of the BM25 child chunks (Spanish analyzer with accent folding, `opensearch_index`)."""
    from components.document_stores.opensearch_index import (  # noqa: PLC0415
        OPENSEARCH_INDEX_SETTINGS,
        OPENSEARCH_MAPPINGS,
    )
    from components.utils.extras import optional_import  # noqa: PLC0415

    with optional_import("opensearch", "LEXHAY_OPENSEARCH_URL (BM25 on OpenSearch)") as opensearch_import:
        import haystack_integrations.document_stores.opensearch  # noqa: F401, PLC0415
    opensearch_import.check()
    hosts = [url.strip() for url in (settings.opensearch_url or "").split(",") if url.strip()]
    if not hosts:
        raise ValueError("opensearch_url (LEXHAY_OPENSEARCH_URL) is empty")
    return {
        "type": OPENSEARCH_STORE_TYPE,
        "init_parameters": {
            "hosts": hosts,
            "index": settings.opensearch_index,
            "mappings": OPENSEARCH_MAPPINGS,
            "settings": OPENSEARCH_INDEX_SETTINGS,
            "create_index": True,
        },
    }


def _add_opensearch_writer(data: dict[str, Any], settings: Settings) -> None:
    """
    In an indexing pipeline (one with a document writer), also write the child chunks to OpenSearch: the same
    `PruningDocumentWriter` as the main store's, text only, so a re-indexed law leaves no stale chunk there either.
    """
    components = data.get("components", {})
    writers = {name for name, spec in components.items() if spec.get("type") in INDEXING_WRITER_TYPES}
    if OPENSEARCH_WRITER_NAME in components or not writers:
        return
    senders = [
        c["sender"] for c in data.get("connections", [])
        if c.get("receiver", "").partition(".")[0] in writers and c["receiver"].endswith(".documents")
    ]
    if len(set(senders)) != 1:
        raise ValueError(
            "LEXHAY_OPENSEARCH_URL is set, but the indexing pipeline needs exactly one component sending documents "
            f"to its writer, whose child chunks go to OpenSearch too; found {sorted(set(senders)) or 'none'}"
        )
    components[OPENSEARCH_ROUTER_NAME] = {
        "type": METADATA_ROUTER_TYPE,
        "init_parameters": {"rules": {"children": dict(CHILD_FILTER)}},
    }
    components[OPENSEARCH_WRITER_NAME] = {
        "type": PRUNING_WRITER_TYPE,
        "init_parameters": {"document_store": _opensearch_store_dict(settings), "strip_embeddings": True},
    }
    data.setdefault("connections", []).extend([
        {"sender": senders[0], "receiver": f"{OPENSEARCH_ROUTER_NAME}.documents"},
        {"sender": f"{OPENSEARCH_ROUTER_NAME}.children", "receiver": f"{OPENSEARCH_WRITER_NAME}.documents"},
    ])


def _chat_generator_dict(settings: Settings | None = None) -> dict[str, Any] | None:
    """The LLM `settings` configure (OpenAI-compatible endpoint, else the bundled model), serialized; None = no LLM."""
    from haystack.core.serialization import component_to_dict  # noqa: PLC0415

    from components.generators.llm_backends import default_chat_generator  # noqa: PLC0415

    generator = default_chat_generator(settings=settings)
    return component_to_dict(generator, name="chat_generator") if generator is not None else None


def _local_llm(llm: dict[str, Any], settings: Settings | None = None) -> bool:
    """Whether the deployment's LLM (resolved once per pipeline, cached in `llm`) is the bundled local model."""
    if "value" not in llm:
        llm["value"] = _chat_generator_dict(settings)
    generator = llm["value"]
    return bool(generator) and generator.get("type", "").endswith("LocalLlamaChatGenerator")


def _tree_copy(value: Any) -> Any:
    """A deep copy of parsed YAML in which no two places share an object (unlike `copy.deepcopy`)."""
    if isinstance(value, dict):
        return {key: _tree_copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_tree_copy(item) for item in value]
    return value


def apply_settings(data: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """
    Return a copy of a serialized pipeline with the deployment's settings applied.

    Store location (or a Qdrant server instead of the embedded store), embedder model and collection weights
    come from settings, so the YAML files never need editing per deployment. With `opensearch_url`, retrievers take
    their BM25 side from OpenSearch and an indexing pipeline gets an `opensearch_writer` fed with the child chunks.
    Each YAML lists these settings slots in its header (`&store`, `model: null`, `chat_generator: null`, ...), so
    the file a reader opens is the pipeline that runs once they are filled.
    """
    data = _tree_copy(data)  # the YAML's anchors (`*store`, `*chain`) become separate copies, each visited once
    llm: dict[str, Any] = {}

    def visit(spec: dict[str, Any]) -> None:
        """Apply the settings to one serialized component and, recursively, to the components nested in it."""
        if "type" in spec and "init_parameters" not in spec:  # the YAML leaves out all-default init parameters
            spec["init_parameters"] = {}
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
        if spec.get("type") == RERANKER_TYPE and settings.rerank_relevance:
            # `embedding` re-scores whole blocks with the dense model (measured best quality, seconds per query
            # until block vectors are cached); `cross_encoder` needs `model`; `llm` the deployment's LLM
            params["relevance"] = settings.rerank_relevance
            if settings.rerank_relevance == "embedding" and not params.get("model"):
                params["model"] = settings.embedder  # the query vector comes from the same model
            if settings.rerank_relevance == "llm" and params.get("chat_generator") is None:
                params["chat_generator"] = _chat_generator_dict(settings)
        if spec.get("type") == CRAG_TYPE and settings.embedder in KNOWN_COSINE_RANGES:
            params["cosine_floor"], params["cosine_ceiling"] = KNOWN_COSINE_RANGES[settings.embedder]
        if spec.get("type") == RETRIEVER_TYPE:
            params["collections"] = dict(settings.collections)
            if settings.opensearch_url:  # BM25 side from OpenSearch, fused with the dense side by RRF k=60
                params["lexical_store"] = _opensearch_store_dict(settings)
                params["rrf_k"] = OPENSEARCH_RRF_K
        needs_llm = spec.get("type") != RERANKER_TYPE or params.get("relevance") == "llm"
        if needs_llm and "chat_generator" in params and params["chat_generator"] is None:
            # LLM stages left without a generator in YAML get the deployment's LLM (LEXHAY_LLM_BASE_URL /
            # OPENAI_API_KEY, else the bundled local model; LEXHAY_LLM=none keeps the deterministic fallbacks)
            if "value" not in llm:
                llm["value"] = _chat_generator_dict(settings)
            params["chat_generator"] = llm["value"]
        if spec.get("type") == COMPRESSOR_TYPE and _local_llm(llm, settings):
            # a CPU-bound local model cannot read a 4000-token context in time: measured 1.5B answers timing out
            # at 60 s on 2 cores with ~4.5k-token prompts (benchmarks/answer_bench.py)
            params["token_budget"] = min(params.get("token_budget") or LOCAL_LLM_TOKEN_BUDGET, LOCAL_LLM_TOKEN_BUDGET)

    for spec in data.get("components", {}).values():
        visit(spec)
    if settings.opensearch_url:
        _add_opensearch_writer(data, settings)
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
        compile_templates_once(instance)  # Haystack's routers and adapters compile their templates on every run
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
