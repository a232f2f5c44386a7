"""docker-compose.yml (Qdrant, OpenSearch, Neo4j) and .env.example: YAML, keys and their agreement with lexhay's
settings. No docker here: the files are checked as data (`docker compose config` would do the same on a docker host)."""

import re
from urllib.parse import urlparse

import pytest
import yaml

from pipelines.settings import ENV_VARS, Settings
from tests.corpus_helpers import ROOT

COMPOSE = ROOT / "docker-compose.yml"
ENV_EXAMPLE = ROOT / ".env.example"
SERVER_VARS = (
    "LEXHAY_QDRANT_URL", "LEXHAY_OPENSEARCH_URL", "LEXHAY_NEO4J_URI", "LEXHAY_NEO4J_USER", "LEXHAY_NEO4J_PASSWORD"
)


@pytest.fixture(scope="module")
def compose():
    return yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def env_example():
    """`KEY=VALUE` lines of .env.example; commented-out `# KEY=` lines are documented options (value None)."""
    values = {}
    for line in ENV_EXAMPLE.read_text(encoding="utf-8").splitlines():
        if match := re.match(r"^\s*(#\s*)?([A-Z][A-Z0-9_]*)=(\S*)", line):
            values[match.group(2)] = None if match.group(1) else match.group(3)
    return values


def _env(service: dict) -> dict[str, str]:
    env = service.get("environment", {})
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return env


def _published(service: dict) -> set[int]:
    return {int(str(port).rsplit(":", 2)[-2]) for port in service.get("ports", [])}


def test_compose_declares_the_three_servers_with_healthchecks(compose):
    services = compose["services"]
    assert set(services) == {"qdrant", "opensearch", "neo4j"}
    images = {name: spec["image"].split(":")[0] for name, spec in services.items()}
    assert images == {"qdrant": "qdrant/qdrant", "opensearch": "opensearchproject/opensearch", "neo4j": "neo4j"}
    for name, spec in services.items():
        check = spec["healthcheck"]
        assert check["test"][0] in ("CMD", "CMD-SHELL") and len(check["test"]) >= 2, name
        assert {"interval", "timeout", "retries"} <= set(check), name
        assert all(str(port).startswith("127.0.0.1:") for port in spec["ports"]), f"{name} published beyond localhost"
        volume = spec["volumes"][0].split(":")[0]
        assert volume in compose["volumes"], name
    assert "/readyz" in " ".join(services["qdrant"]["healthcheck"]["test"])
    assert "_cluster/health" in " ".join(services["opensearch"]["healthcheck"]["test"])
    assert "cypher-shell" in " ".join(services["neo4j"]["healthcheck"]["test"])


def test_opensearch_is_single_node_with_security_disabled(compose):
    env = _env(compose["services"]["opensearch"])
    assert env["discovery.type"] == "single-node"
    assert env["DISABLE_SECURITY_PLUGIN"] == "true" and env["DISABLE_INSTALL_DEMO_CONFIG"] == "true"
    assert "-Xmx" in env["OPENSEARCH_JAVA_OPTS"]


def test_neo4j_auth_comes_from_the_env(compose):
    auth = _env(compose["services"]["neo4j"])["NEO4J_AUTH"]
    assert re.fullmatch(r"neo4j/\$\{LEXHAY_NEO4J_PASSWORD:\?[^}]+\}", auth)  # required: compose fails clearly without
    # the healthcheck reads the password inside the container ($$ = a literal $ for compose)
    assert "$${NEO4J_AUTH#neo4j/}" in compose["services"]["neo4j"]["healthcheck"]["test"][1]


def test_every_compose_variable_is_documented_in_env_example(compose, env_example):
    text = COMPOSE.read_text(encoding="utf-8")
    used = set(re.findall(r"(?<!\$)\$\{([A-Z][A-Z0-9_]*)", text))
    assert used, "compose interpolates no variable?"
    assert used <= set(env_example), f"undocumented in .env.example: {sorted(used - set(env_example))}"


def test_env_example_switches_lexhay_to_the_compose_servers(compose, env_example, monkeypatch, tmp_path):
    for var in SERVER_VARS:
        assert env_example.get(var), f"{var} must be set in .env.example"
    services = compose["services"]
    assert urlparse(env_example["LEXHAY_QDRANT_URL"]).port in _published(services["qdrant"])
    assert urlparse(env_example["LEXHAY_OPENSEARCH_URL"]).port in _published(services["opensearch"])
    assert urlparse(env_example["LEXHAY_NEO4J_URI"]).port in _published(services["neo4j"])
    assert env_example["LEXHAY_NEO4J_USER"] == "neo4j"  # the only user NEO4J_AUTH can create
    assert len(env_example["LEXHAY_NEO4J_PASSWORD"]) >= 8  # Neo4j 5 refuses shorter passwords
    # every LEXHAY_* setting variable it sets is one lexhay reads, and loading them switches the backends
    lexhay_vars = {k for k in env_example if k.startswith("LEXHAY_") and not k.startswith("LEXHAY_NEO4J_")}
    assert lexhay_vars <= set(ENV_VARS.values()), sorted(lexhay_vars - set(ENV_VARS.values()))
    monkeypatch.chdir(tmp_path)
    for var in ENV_VARS.values():
        monkeypatch.delenv(var, raising=False)
    for key, value in env_example.items():
        if value and key in ENV_VARS.values():
            monkeypatch.setenv(key, value)
    settings = Settings.load()
    assert settings.qdrant_url == env_example["LEXHAY_QDRANT_URL"]
    assert settings.opensearch_url == env_example["LEXHAY_OPENSEARCH_URL"]
    assert settings.opensearch_index == env_example["LEXHAY_OPENSEARCH_INDEX"]
