"""Tests of Contextualizer: breadcrumb contexts, the cached LLM mode with its per-chunk fallback, embedding."""

import json

import pytest
from haystack import Document, Pipeline

from components.preprocessors.article_parser import ArticleParser
from components.preprocessors.child_splitter import ChildSplitter
from components.preprocessors.contextualizer import (
    PROMPT_VERSION,
    ContextCache,
    Contextualizer,
    breadcrumb,
    heading_label,
)
from components.utils.models import is_installed
from components.preprocessors.semantic_parent_splitter import SemanticParentSplitter
from components.embedders.sparse_embedder import SparseDocumentEmbedder, SparseTextEmbedder
from components.converters.statute_converter import StatuteConverter
from tests.corpus_helpers import CE, ET_2015
from tests.scripted_llm import ScriptedChatGenerator

ET_38 = "ET > Título I > Capítulo II > Sección 5.ª > Artículo 38. Vacaciones anuales"


def _chunks(path, articles):
    """Parent blocks and children of some articles of a bundled statute, as the indexing pipeline makes them."""
    docs = StatuteConverter().run(sources=[str(path)])["documents"]
    parsed = [d for d in ArticleParser().run(documents=docs)["documents"] if d.meta.get("article") in articles]
    parents = SemanticParentSplitter(breakpoint_model="lexical").run(documents=parsed)["documents"]
    return ChildSplitter(chunk_chars=300, overlap=50).run(documents=parents)["documents"]


@pytest.fixture(scope="module")
def et_38():
    return _chunks(ET_2015, {"38"})


def test_init_defaults():
    contextualizer = Contextualizer()
    assert contextualizer.mode == "breadcrumb"
    assert contextualizer.heading_style == "label"
    assert contextualizer.include_parents is True
    assert contextualizer.enabled is True
    assert contextualizer.chat_generator is None


@pytest.mark.parametrize(
    "kwargs",
    [
        {"mode": "summary"},
        {"heading_style": "short"},
        {"max_context_chars": 10},
        {"max_tokens": 2},
        {"timeout": 0},
    ],
)
def test_init_rejects_bad_values(kwargs):
    with pytest.raises(ValueError):
        Contextualizer(**kwargs)


def test_to_dict_and_from_dict_with_generator(tmp_path):
    contextualizer = Contextualizer(
        mode="llm",
        chat_generator=ScriptedChatGenerator(replies=["una frase"]),
        heading_style="full",
        cache_path=str(tmp_path / "c.jsonl"),
        timeout=5.0,
        enabled=False,
    )
    data = contextualizer.to_dict()
    assert data["type"] == "components.preprocessors.contextualizer.Contextualizer"
    params = data["init_parameters"]
    assert params["mode"] == "llm"
    assert params["heading_style"] == "full"
    assert params["enabled"] is False
    assert params["chat_generator"]["type"] == "tests.scripted_llm.ScriptedChatGenerator"
    restored = Contextualizer.from_dict(data)
    assert isinstance(restored.chat_generator, ScriptedChatGenerator)
    assert restored.chat_generator.replies == ["una frase"]
    assert restored.to_dict() == data


def test_from_dict_of_the_default():
    restored = Contextualizer.from_dict(Contextualizer().to_dict())
    assert restored.mode == "breadcrumb" and restored.chat_generator is None


@pytest.mark.parametrize(
    ("heading", "label"),
    [
        ("TÍTULO I. De la relación individual de trabajo", "Título I"),
        ("CAPÍTULO II. Contenido del contrato de trabajo", "Capítulo II"),
        ("Sección 5.ª Tiempo de trabajo", "Sección 5.ª"),
        ("CAPÍTULO PRIMERO. Principios generales", "Capítulo primero"),
        ("Capítulo IV: Das Funções Essenciais à Justiça", "Capítulo IV"),
        ("Seção III: Da Previdência Social", "Seção III"),
        ("Disposiciones transitorias", "Disposiciones transitorias"),
    ],
)
def test_heading_label(heading, label):
    assert heading_label(heading) == label


def test_run_breadcrumb_on_real_articles(et_38):
    result = Contextualizer().run(documents=et_38)
    docs = result["documents"]
    assert len(docs) == len(et_38)
    assert {d.meta["context"] for d in docs} == {ET_38}
    assert [d.content for d in docs] == [d.content for d in et_38]  # the chunk text itself is not changed
    assert [d.id for d in docs] == [d.id for d in et_38]
    assert "context" not in et_38[0].meta  # inputs are not mutated
    stats = result["stats"]
    assert stats["mode"] == "breadcrumb"
    assert stats["contextualized"] == len(et_38)
    assert stats["llm_fallbacks"] == 0


def test_run_breadcrumb_full_headings_and_children_only(et_38):
    result = Contextualizer(heading_style="full", include_parents=False).run(documents=et_38)
    for doc in result["documents"]:
        if doc.meta["level"] == "parent":
            assert "context" not in doc.meta
        else:
            assert doc.meta["context"] == (
                "ET > TÍTULO I. De la relación individual de trabajo > CAPÍTULO II. Contenido del contrato de "
                "trabajo > Sección 5.ª Tiempo de trabajo > Artículo 38. Vacaciones anuales"
            )


def test_breadcrumb_of_an_untitled_constitution_article():
    chunks = _chunks(CE, {"14"})
    assert breadcrumb(chunks[0]) == "CE > Título I > Capítulo segundo > Artículo 14"
    assert breadcrumb(Document(content="texto suelto")) == ""


@pytest.mark.parametrize("kwargs", [{"enabled": False}, {"mode": "none"}])
def test_run_pass_through_when_off(et_38, kwargs):
    result = Contextualizer(mode="breadcrumb").run(documents=et_38, **kwargs)
    assert result["documents"] is et_38
    assert result["stats"]["mode"] == "none"
    assert result["stats"]["contextualized"] == 0


def test_run_flag_off_at_init_can_be_enabled_per_run(et_38):
    contextualizer = Contextualizer(enabled=False)
    assert contextualizer.run(documents=et_38)["documents"] is et_38
    assert contextualizer.run(documents=et_38, enabled=True)["documents"][0].meta["context"] == ET_38


def test_run_rejects_bad_input():
    with pytest.raises(TypeError):
        Contextualizer().run(documents=["not a document"])
    with pytest.raises(ValueError):
        Contextualizer().run(documents=[], mode="summary")


def test_llm_mode_appends_sentences_and_caches_them(et_38, tmp_path):
    children = [d for d in et_38 if d.meta["level"] == "child"]
    replies = [f'"Regula la duración de las vacaciones anuales, parte {i}."' for i in range(len(children))]
    llm = ScriptedChatGenerator(replies=replies)
    cache = tmp_path / "contexts.jsonl"
    result = Contextualizer(mode="llm", chat_generator=llm, cache_path=str(cache), progress_bar=False).run(
        documents=et_38
    )
    stats = result["stats"]
    assert stats["llm_generated"] == len(children)
    assert stats["llm_cached"] == 0 and stats["llm_fallbacks"] == 0
    assert len(llm.calls) == len(children)
    # the parent block comes before the child in the prompt, so siblings share the prompt prefix
    system, user = llm.calls[0]
    assert "fragmento" in system.text
    parent = next(d for d in et_38 if d.meta["level"] == "parent")
    assert user.text.index(parent.content.strip()[:60]) < user.text.index(children[0].content.strip()[-40:])
    out_children = [d for d in result["documents"] if d.meta["level"] == "child"]
    assert out_children[0].meta["context"] == f"{ET_38}. Regula la duración de las vacaciones anuales, parte 0."
    assert next(d for d in result["documents"] if d.meta["level"] == "parent").meta["context"] == ET_38
    lines = [json.loads(line) for line in cache.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == len(children)

    # re-indexing the same chunks makes no LLM call, even with an LLM that is down
    down = ScriptedChatGenerator(error="connection refused")
    again = Contextualizer(mode="llm", chat_generator=down, cache_path=str(cache), progress_bar=False)
    assert again.pending(et_38) == {"children": len(children), "cached": len(children), "to_generate": 0}
    rerun = again.run(documents=et_38)
    assert rerun["stats"]["llm_cached"] == len(children)
    assert down.calls == []
    assert [d.meta["context"] for d in rerun["documents"]] == [d.meta["context"] for d in result["documents"]]


def test_llm_mode_falls_back_per_chunk(et_38, tmp_path):
    children = [d for d in et_38 if d.meta["level"] == "child"]
    assert len(children) >= 3
    replies = ["Trata del calendario de vacaciones fijado en la empresa.", "   ", "ok"]
    replies += ["Trata de las vacaciones anuales retribuidas."] * (len(children) - 3)
    result = Contextualizer(
        mode="llm",
        chat_generator=ScriptedChatGenerator(replies=replies),
        cache_path=str(tmp_path / "c.jsonl"),
        progress_bar=False,
    ).run(documents=et_38)
    stats = result["stats"]
    assert stats["llm_fallbacks"] == 2  # an empty reply and a too-short one
    assert stats["llm_generated"] == len(children) - 2
    contexts = [d.meta["context"] for d in result["documents"] if d.meta["level"] == "child"]
    assert contexts[0].endswith("calendario de vacaciones fijado en la empresa.")
    assert contexts[1] == ET_38 and contexts[2] == ET_38


def test_llm_mode_without_a_working_llm_gives_breadcrumbs(et_38, tmp_path):
    children = sum(d.meta["level"] == "child" for d in et_38)
    for generator in (None, ScriptedChatGenerator(error="connection refused")):
        result = Contextualizer(
            mode="llm", chat_generator=generator, cache_path=str(tmp_path / "c.jsonl"), progress_bar=False
        ).run(documents=et_38)
        assert result["stats"]["llm_fallbacks"] == children
        assert {d.meta["context"] for d in result["documents"]} == {ET_38}
    assert not (tmp_path / "c.jsonl").exists()


def test_cache_key_depends_on_model_prompt_and_text(tmp_path):
    base = {"model": "qwen", "heading": "ET > Artículo 38", "parent": "padre", "child": "hijo"}
    key = ContextCache.key(**base)
    assert key == ContextCache.key(**base)
    for field in base:
        assert ContextCache.key(**{**base, field: base[field] + "x"}) != key
    cache = ContextCache(tmp_path / "sub" / "c.jsonl")
    cache.put(key, "una frase")
    (tmp_path / "sub" / "c.jsonl").open("a", encoding="utf-8").write("not json\n")
    reloaded = ContextCache(tmp_path / "sub" / "c.jsonl")
    assert reloaded.get(key) == "una frase" and len(reloaded) == 1
    assert PROMPT_VERSION


def test_sparse_embedder_embeds_the_context(et_38):
    """A child that never says "vacaciones" is found by that word once its context is embedded with it."""
    pipe = Pipeline()
    pipe.add_component("contextualizer", Contextualizer())
    pipe.add_component("sparse", SparseDocumentEmbedder(meta_fields_to_embed=["context"]))
    pipe.connect("contextualizer.documents", "sparse.documents")
    docs = pipe.run({"contextualizer": {"documents": et_38}})["sparse"]["documents"]
    plain = SparseDocumentEmbedder().run(documents=et_38)["documents"]
    query = SparseTextEmbedder().run(text="vacaciones anuales")["sparse_embedding"]

    def overlap(doc):
        return set(doc.sparse_embedding.indices) & set(query.indices)

    silent = [i for i, d in enumerate(plain) if d.meta["level"] == "child" and not overlap(d)]
    assert silent, "some child of ET art. 38 does not contain the words 'vacaciones anuales'"
    assert all(overlap(docs[i]) == set(query.indices) for i in silent)


@pytest.mark.model
@pytest.mark.skipif(not is_installed("qwen2.5-coder-0.5b"), reason="the small local LLM is not installed")
def test_llm_mode_with_the_local_model(et_38, tmp_path):
    from components.generators.llm_backends import LocalLlamaChatGenerator

    parent = next(d for d in et_38 if d.meta["level"] == "parent")
    child = next(d for d in et_38 if d.meta["level"] == "child")
    llm = LocalLlamaChatGenerator(model="qwen2.5-coder-0.5b", timeout=120)
    result = Contextualizer(mode="llm", chat_generator=llm, cache_path=str(tmp_path / "c.jsonl")).run(
        documents=[parent, child]
    )
    stats = result["stats"]
    assert stats["llm_generated"] + stats["llm_fallbacks"] == 1
    context = result["documents"][1].meta["context"]
    assert context.startswith(ET_38)
    if stats["llm_generated"]:
        assert len(context) > len(ET_38) + 10
