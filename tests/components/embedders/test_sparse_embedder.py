import json
import subprocess
import sys
from pathlib import Path

import pytest
from haystack import Document
from haystack.dataclasses import SparseEmbedding

from components.embedders.sparse_embedder import DEFAULT_AVG_LEN, SparseDocumentEmbedder, SparseTextEmbedder

REPO_ROOT = Path(__file__).resolve().parents[3]


def _indices(embedding: SparseEmbedding) -> set[int]:
    return set(embedding.indices)


def test_init_defaults():
    embedder = SparseDocumentEmbedder()
    assert embedder.language == "spanish"
    assert (embedder.k, embedder.b, embedder.avg_len) == (1.2, 0.75, DEFAULT_AVG_LEN)
    assert embedder.ascii_folding is True
    assert embedder.meta_fields_to_embed == []
    assert embedder.embedding_separator == "\n"
    assert embedder.language_meta_field == "lang"
    text_embedder = SparseTextEmbedder()
    assert (text_embedder.language, text_embedder.avg_len, text_embedder.ascii_folding) == (
        "spanish",
        DEFAULT_AVG_LEN,
        True,
    )


@pytest.mark.parametrize("cls", [SparseDocumentEmbedder, SparseTextEmbedder])
def test_init_invalid_parameters(cls):
    with pytest.raises(ValueError, match="klingon"):
        cls(language="klingon")
    with pytest.raises(ValueError):
        cls(b=1.5)
    with pytest.raises(ValueError):
        cls(avg_len=0.0)


def test_to_dict():
    embedder = SparseDocumentEmbedder(language="pt", avg_len=30.0, meta_fields_to_embed=["article_title"])
    assert embedder.to_dict() == {
        "type": "components.embedders.sparse_embedder.SparseDocumentEmbedder",
        "init_parameters": {
            "language": "pt",
            "k": 1.2,
            "b": 0.75,
            "avg_len": 30.0,
            "ascii_folding": True,
            "meta_fields_to_embed": ["article_title"],
            "embedding_separator": "\n",
            "language_meta_field": "lang",
        },
    }
    assert SparseTextEmbedder(k=1.5).to_dict() == {
        "type": "components.embedders.sparse_embedder.SparseTextEmbedder",
        "init_parameters": {
            "language": "spanish",
            "k": 1.5,
            "b": 0.75,
            "avg_len": DEFAULT_AVG_LEN,
            "ascii_folding": True,
            "detect_language": True,
        },
    }


def test_from_dict():
    embedder = SparseDocumentEmbedder.from_dict(
        SparseDocumentEmbedder(language="portuguese", b=0.5, meta_fields_to_embed=["law_short"]).to_dict()
    )
    assert (embedder.language, embedder.b, embedder.meta_fields_to_embed) == ("portuguese", 0.5, ["law_short"])
    text_embedder = SparseTextEmbedder.from_dict(SparseTextEmbedder(language="es", avg_len=None).to_dict())
    assert (text_embedder.language, text_embedder.avg_len) == ("es", None)


def test_warm_up_is_idempotent():
    embedder = SparseTextEmbedder()
    embedder.warm_up()
    model = embedder._model
    embedder.warm_up()
    assert embedder._model is model


def test_run_query_matches_document_with_stemming_and_accent_folding():
    document = SparseDocumentEmbedder().run([Document(content="Vacaciones anuales retribuidas")])["documents"][0]
    query_embedder = SparseTextEmbedder()
    for query in ("vacaciones", "VACACIÓN", "vacacion"):
        query_vector = query_embedder.run(text=query)["sparse_embedding"]
        assert len(query_vector.indices) == 1
        assert _indices(query_vector) <= _indices(document.sparse_embedding), query
    assert len(document.sparse_embedding.indices) == 3
    assert all(value > 0 for value in document.sparse_embedding.values)


def test_run_text_embedder_weights_and_stopwords():
    vector = SparseTextEmbedder().run(text="¿Cuántos días de vacaciones tengo en el año?")["sparse_embedding"]
    assert vector.values == [1.0] * len(vector.indices)
    assert SparseTextEmbedder().run(text="de la y en el")["sparse_embedding"] == SparseEmbedding([], [])


def test_run_accented_stopwords_are_removed_with_ascii_folding():
    # Qdrant folds accents before its stopword check; the folded forms are added as custom stopwords
    assert SparseTextEmbedder().run(text="más también sí está él")["sparse_embedding"].indices == []
    assert SparseTextEmbedder(language="pt").run(text="não é também já")["sparse_embedding"].indices == []
    assert SparseTextEmbedder(ascii_folding=False).run(text="más también")["sparse_embedding"].indices == []


def test_run_document_embedder_keeps_documents_and_sets_sparse_embedding():
    documents = [Document(id="d1", content="Despido disciplinario", meta={"law_id": "ET"}), Document(content=None)]
    result = SparseDocumentEmbedder().run(documents)["documents"]
    assert [doc.id for doc in result] == ["d1", documents[1].id]
    assert result[0].meta == {"law_id": "ET"}
    assert len(result[0].sparse_embedding.indices) == 2
    assert result[1].sparse_embedding == SparseEmbedding([], [])
    assert documents[0].sparse_embedding is None  # inputs are not mutated


def test_run_meta_fields_to_embed():
    meta = {"article_title": "Vacaciones", "heading_path": ["Título I"]}
    document = Document(content="Despido disciplinario", meta=meta)
    vacaciones = _indices(SparseTextEmbedder().run(text="vacaciones")["sparse_embedding"])
    titulo = _indices(SparseTextEmbedder().run(text="título")["sparse_embedding"])
    plain = SparseDocumentEmbedder().run([document])["documents"][0].sparse_embedding
    with_meta = (
        SparseDocumentEmbedder(meta_fields_to_embed=["article_title", "heading_path", "missing"])
        .run([document])["documents"][0]
        .sparse_embedding
    )
    assert not vacaciones & _indices(plain)
    assert vacaciones <= _indices(with_meta)
    assert titulo <= _indices(with_meta)


def test_run_language_per_document():
    # "não" is a Portuguese stopword but an ordinary token for the Spanish tokenizer
    embedder = SparseDocumentEmbedder(language="spanish")
    portuguese, spanish, default = embedder.run(
        [
            Document(content="não", meta={"lang": "pt"}),
            Document(content="não", meta={"lang": "es"}),
            Document(content="não"),
        ]
    )["documents"]
    assert portuguese.sparse_embedding.indices == []
    assert spanish.sparse_embedding.indices != []
    assert default.sparse_embedding == spanish.sparse_embedding
    ferias_doc = embedder.run([Document(content="Férias anuais remuneradas", meta={"lang": "pt"})])["documents"][0]
    ferias_query = SparseTextEmbedder(language="portuguese").run(text="ferias")["sparse_embedding"]
    assert _indices(ferias_query) <= _indices(ferias_doc.sparse_embedding)


def test_run_query_language_detected_per_question():
    # Portuguese stemming of a Portuguese question matches the Portuguese statute text; Spanish stemming does not
    doc = SparseDocumentEmbedder().run(
        [Document(content="O empregado terá direito a férias remuneradas", meta={"lang": "pt"})]
    )["documents"][0]
    question = "meu chefe não quer me dar as férias remuneradas, ele pode fazer isso?"
    embedder = SparseTextEmbedder(language="spanish")
    detected = embedder.run(text=question)["sparse_embedding"]
    assert detected == embedder.run(text=question, language="pt")["sparse_embedding"]
    assert detected != SparseTextEmbedder(language="spanish", detect_language=False).run(text=question)[
        "sparse_embedding"
    ]
    assert _indices(SparseTextEmbedder(language="pt").run(text="remuneradas")["sparse_embedding"]) <= _indices(
        doc.sparse_embedding
    )
    spanish = "¿Cuántos días de vacaciones tengo?"
    assert embedder.run(text=spanish)["sparse_embedding"] == embedder.run(text=spanish, language="es")[
        "sparse_embedding"
    ]
    assert SparseTextEmbedder.from_dict(SparseTextEmbedder(detect_language=False).to_dict()).detect_language is False


def test_run_unsupported_document_language_falls_back_to_default(caplog):
    embedder = SparseDocumentEmbedder(language="spanish")
    unknown, spanish = embedder.run(
        [Document(content="Vacaciones anuales", meta={"lang": "xx"}), Document(content="Vacaciones anuales")]
    )["documents"]
    assert unknown.sparse_embedding == spanish.sparse_embedding
    assert "No BM25 tokenizer for language 'xx'" in caplog.text


def test_run_avg_len_changes_document_weights():
    document = [Document(content="Vacaciones anuales retribuidas no sustituibles por compensación económica")]
    short = SparseDocumentEmbedder(avg_len=5.0).run(document)["documents"][0].sparse_embedding
    long = SparseDocumentEmbedder(avg_len=500.0).run(document)["documents"][0].sparse_embedding
    assert short.indices == long.indices
    assert all(s < l for s, l in zip(short.values, long.values, strict=True))


def test_run_rejects_wrong_input_types():
    with pytest.raises(TypeError, match="SparseTextEmbedder"):
        SparseDocumentEmbedder().run("vacaciones")
    with pytest.raises(TypeError, match="SparseDocumentEmbedder"):
        SparseTextEmbedder().run([Document(content="vacaciones")])


def test_indices_are_stable_across_processes():
    text = "Vacaciones anuales retribuidas y despido improcedente"
    code = (
        "import json\n"
        "from components.embedders.sparse_embedder import SparseDocumentEmbedder, SparseTextEmbedder\n"
        "from haystack import Document\n"
        f"q = SparseTextEmbedder().run(text={text!r})['sparse_embedding']\n"
        f"d = SparseDocumentEmbedder().run([Document(content={text!r})])['documents'][0].sparse_embedding\n"
        "print(json.dumps([q.to_dict(), d.to_dict()]))\n"
    )
    output = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout
    query_there, document_there = json.loads(output)
    assert query_there == SparseTextEmbedder().run(text=text)["sparse_embedding"].to_dict()
    document_here = SparseDocumentEmbedder().run([Document(content=text)])["documents"][0]
    assert document_there == document_here.sparse_embedding.to_dict()
