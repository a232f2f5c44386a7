"""
The lexhay HTTP server: hayhooks serving the `hayhooks/` wrappers, behind the guard.

`create_app` builds hayhooks' app in its fixed-pipeline mode (hayhooks' `durable_mode` setting: the pipelines load
once at start-up, one after the other, and hayhooks' run-time deploy / undeploy routes, which accept Python code,
do not exist), with CORS closed unless `LEXHAY_CORS_ORIGINS` opens it, and wraps it in four ASGI middlewares:
`TrustedHostMiddleware` (Host header among `LEXHAY_ALLOWED_HOSTS`), `OpenAICompat` (OpenAI's error shape, chat
models only in `/v1/models`, `[DONE]`), `Guard` (origin, API keys and roles, per-key limits, body size,
deadline) and `StrictFields` (a JSON field a pipeline route does not declare is a 422). `serve` runs it with
uvicorn, on loopback unless a keys file exists.
"""

import os
from pathlib import Path
from typing import Any

from haystack import logging

from lexhay_resources import resource_dir
from pipelines.serving.auth import KeyStore, jwt_verifier
from pipelines.serving.config import LOOPBACK_HOSTS, server_settings
from pipelines.serving.engine import check_store_free, close_engines
from pipelines.serving.errors import root_cause
from pipelines.serving.guard import Guard
from pipelines.serving.openai_compat import OpenAICompat
from pipelines.serving.strict_fields import StrictFields
from pipelines.settings import Settings, current_settings, setup_environment

logger = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 1416
HAYHOOKS_DIR = resource_dir("hayhooks")  # the pipeline wrappers shipped with lexhay (lexhay_resources)


def create_app(*, store: str | None = None, pipelines_dir: str | Path | None = None, host: str = DEFAULT_HOST) -> Any:
    """
    The FastAPI app serving lexhay: `index`, `retrieve`, `ask` (`/{name}/run`) and the OpenAI-compatible
    `/v1/chat/completions` + `/v1/models` (models `ask` and `lexhay`), behind the guard.

    :param store: Store folder (sets `LEXHAY_STORE` for the wrappers); default `LEXHAY_STORE` or `./.lexhay`.
    :param pipelines_dir: The wrappers' folder (default the repository's `hayhooks/`, or `LEXHAY_HAYHOOKS_DIR`).
    :param host: The address the server will listen on (hayhooks keys its local dashboard on it).
    :raises RuntimeError: A pipeline could not be loaded (its error says why, e.g. a store held by another process).
    :raises ValueError: An invalid `LEXHAY_*` server setting.
    """
    setup_environment()
    if store:
        os.environ["LEXHAY_STORE"] = str(store)
    os.environ.setdefault("HAYSTACK_DESERIALIZATION_ALLOWLIST", "components.*,pipelines.*")
    serving = server_settings()
    keys = KeyStore(serving.keys_file(store))
    folder = Path(pipelines_dir or current_settings().hayhooks_dir or HAYHOOKS_DIR)
    from hayhooks.server.app import create_app as hayhooks_app  # noqa: PLC0415
    from hayhooks.settings import settings  # noqa: PLC0415
    from starlette.middleware.trustedhost import TrustedHostMiddleware  # noqa: PLC0415

    settings.pipelines_dir = str(folder)
    settings.durable_mode = True  # a fixed pipeline set: loaded once, no run-time deploy routes
    settings.host = host
    settings.show_tracebacks = False
    settings.cors_allow_origins = serving.cors_origin_list
    settings.cors_allow_methods = ["GET", "POST", "OPTIONS"]
    settings.cors_allow_headers = ["authorization", "content-type"]
    try:
        app = hayhooks_app()
    except Exception as error:
        raise RuntimeError(f"cannot load the lexhay pipelines: {root_cause(error)}") from error
    app.add_middleware(StrictFields, routes=app)  # inside the guard: after its key and body-size checks
    app.add_middleware(Guard, settings=serving, keys=keys, jwt=jwt_verifier(serving))
    app.add_middleware(OpenAICompat)
    allowed = serving.allowed_host_list
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=[*allowed, *(f"[{h}]" for h in allowed if ":" in h)])
    return app


def serve(*, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, store: str | None = None,
          pipelines_dir: str | Path | None = None) -> None:
    """
    Start the lexhay HTTP server (blocks until stopped). Without a keys file it serves loopback only.

    :raises ValueError: A non-loopback `host` without API keys, a bad port or server setting.
    :raises RuntimeError: The pipelines could not be loaded.
    """
    if not 0 < port < 65536:
        raise ValueError(f"port must be 1-65535, got {port}")
    serving = server_settings()
    keys_file = serving.keys_file(store or current_settings().store_path)
    if host not in LOOPBACK_HOSTS and not keys_file.exists() and not serving.jwt_key:
        raise ValueError(
            f"refusing to serve on {host}: without API keys the server is for this machine only. Create a key "
            f"(`lexhay keys add --tenant T --roles reader --keys-file {keys_file}`) or serve on 127.0.0.1")
    if host not in LOOPBACK_HOSTS and serving.allowed_host_list == list(LOOPBACK_HOSTS):
        logger.warning("lexhay serve on {host}: only Host headers {hosts} are accepted; set LEXHAY_ALLOWED_HOSTS to "
                       "the names clients use", host=host, hosts=list(LOOPBACK_HOSTS))
    from haystack.document_stores.errors import DocumentStoreError  # noqa: PLC0415

    try:
        check_store_free(Settings.load(store_path=store))  # held by another process: fail before loading anything
    except DocumentStoreError as error:
        raise RuntimeError(str(error)) from error
    app = create_app(store=store, pipelines_dir=pipelines_dir, host=host)
    from hayhooks.server.app import run_app  # noqa: PLC0415

    try:
        run_app(app, host=host, port=port)
    finally:
        close_engines()
