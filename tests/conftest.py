"""Shared test set-up: offline environment (no hub downloads, no telemetry)."""

import os

import pytest

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# as for any user of `haystack pipeline run`: our own modules are on the deserialization allowlist
os.environ.setdefault("HAYSTACK_DESERIALIZATION_ALLOWLIST", "components.*,pipelines.*")
# A developer's ./.env (the README's docker-compose set-up writes one) must not point the suite at real servers:
# the unit tests use temporary embedded stores; the integration tests read the server variables from the environment.
os.environ.setdefault("LEXHAY_ENV_FILE", os.devnull)
# Nor may the LLMs a developer happened to install: without a setting, every LLM stage would use the default local
# model whenever it is in the model cache (`make models-llm`), and the suite would run it on every question (minutes
# per test on CPU, answers that differ from the deterministic paths the tests assert). Tests of an LLM path name
# their generator (a scripted one, the small bundled model, a fake endpoint) or set LEXHAY_LLM themselves.
os.environ.setdefault("LEXHAY_LLM", "none")

from tests.corpus_helpers import CORPUS  # noqa: E402


@pytest.fixture(scope="session")
def corpus_dir():
    return CORPUS


@pytest.fixture
def jinja_compilations(monkeypatch):
    """Every template source Jinja compiles during the test (any environment, sandboxed or not)."""
    from jinja2 import Environment

    seen = []
    original = Environment.compile

    def counting(self, source, *args, **kwargs):
        seen.append(source)
        return original(self, source, *args, **kwargs)

    monkeypatch.setattr(Environment, "compile", counting)
    return seen
