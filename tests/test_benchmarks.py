"""The benchmark scripts' own helpers that decide what a benchmark measures."""

import importlib.util
from pathlib import Path

import yaml
from haystack import Document

from components.preprocessors.contextualizer import Contextualizer

ROOT = Path(__file__).resolve().parents[1]


def _contextual_bench():
    spec = importlib.util.spec_from_file_location("contextual_bench", ROOT / "benchmarks" / "contextual_bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_contextual_bench_switches_the_canonical_contextualizer_on():
    """The variant pipeline is the canonical one with its contextualizer on: same components and edges, contexts made."""
    bench = _contextual_bench()
    canonical = yaml.safe_load((ROOT / "yaml" / "indexing.yaml").read_text(encoding="utf-8"))
    variant = bench.indexing_yaml(mode="breadcrumb", heading_style="full", sparse_fields=["article_title", "context"],
                                  dense_fields=["context"], include_parents=True)
    assert list(variant["components"]) == list(canonical["components"])
    assert variant["connections"] == canonical["connections"]
    spec = variant["components"]["contextualizer"]
    assert spec["init_parameters"]["enabled"] is True and canonical["components"]["contextualizer"]["init_parameters"][
        "enabled"] is False
    assert variant["components"]["dense_embedder"]["init_parameters"]["meta_fields_to_embed"] == ["context"]
    contextualizer = Contextualizer.from_dict(spec)
    parent = Document(id="p", content="Art. 482. Constituem justa causa...",
                      meta={"level": "parent", "law_short": "CLT", "article": "482", "article_label": "Art. 482",
                            "heading_path": ["TÍTULO IV: DO CONTRATO INDIVIDUAL DO TRABALHO", "CAPÍTULO V: DA RESCISÃO"]})
    child = Document(id="c", content="i) abandono de emprego;", meta={**parent.meta, "level": "child", "parent_id": "p"})
    out = contextualizer.run(documents=[parent, child])["documents"]
    assert all("CAPÍTULO V: DA RESCISÃO" in doc.meta["context"] for doc in out)
