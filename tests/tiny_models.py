"""Tiny models built offline by tests (no weights are downloaded): a BERT cross-encoder and a BERT bi-encoder."""

import re
from pathlib import Path

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def write_vocab(path: Path, texts: list[str]) -> Path:
    """A WordPiece vocabulary file: the special tokens, then every lowercase word and punctuation mark of `texts`."""
    words = sorted({w for text in texts for w in re.findall(r"\w+|[^\w\s]", text.lower())})
    path.write_text("\n".join(SPECIAL_TOKENS + words) + "\n", encoding="utf-8")
    return path


def tiny_bert(folder: Path, texts: list[str], *, num_labels: int | None, seed: int = 0) -> Path:
    """
    Save a 2-layer BERT (hidden 32) and its tokenizer (vocabulary from `texts`) into `folder`.

    `num_labels=1` saves a `BertForSequenceClassification` (a cross-encoder); `None` a plain `BertModel`.
    """
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertModel, BertTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    vocab = write_vocab(folder / "vocab.txt", texts)
    tokenizer = BertTokenizerFast(vocab_file=str(vocab), do_lower_case=True, model_max_length=512)
    config = BertConfig(
        vocab_size=len(tokenizer.get_vocab()),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        num_labels=num_labels or 2,
    )
    torch.manual_seed(seed)
    model = BertForSequenceClassification(config) if num_labels else BertModel(config)
    model.eval()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def tiny_sentence_transformer(folder: Path, texts: list[str]) -> Path:
    """Save a sentence-transformers bi-encoder (tiny BERT + mean pooling) into `folder`."""
    from sentence_transformers import SentenceTransformer, models

    bert = tiny_bert(folder.parent / f"{folder.name}-bert", texts, num_labels=None)
    transformer = models.Transformer(str(bert), max_seq_length=512)
    dimension = getattr(transformer, "get_embedding_dimension", None) or transformer.get_word_embedding_dimension
    pooling = models.Pooling(dimension(), pooling_mode="mean")
    SentenceTransformer(modules=[transformer, pooling], device="cpu").save(str(folder))
    return folder
