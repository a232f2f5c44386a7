# SPDX-License-Identifier: Apache-2.0
import pytest


@pytest.fixture(scope="session")
def tiny_dense_model(tmp_path_factory):
    """A 1-layer BERT sentence-transformers folder with mean pooling, a tanh Dense projection and Normalize."""
    import torch  # noqa: PLC0415
    from sentence_transformers import SentenceTransformer, models  # noqa: PLC0415
    from transformers import BertConfig, BertModel, BertTokenizerFast  # noqa: PLC0415

    root = tmp_path_factory.mktemp("tiny_dense")
    words = "el la de los trabajador vacaciones días contrato despido empresa salario elecciones".split()
    vocab = root / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "query", "passage", ":", ".", *words]))
    config = BertConfig(vocab_size=len(vocab.read_text().splitlines()), hidden_size=32, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    torch.manual_seed(1)
    BertModel(config).save_pretrained(root / "hf")
    BertTokenizerFast(vocab_file=str(vocab)).save_pretrained(root / "hf")
    transformer = models.Transformer(str(root / "hf"))
    pooling = models.Pooling(32, "mean")
    dense = models.Dense(32, 16)  # tanh, with bias: the sentence-transformers default
    model = SentenceTransformer(modules=[transformer, pooling, dense, models.Normalize()],
                                prompts={"query": "query: ", "document": "passage: "})
    model.save(str(root / "st"))
    return root / "st"
