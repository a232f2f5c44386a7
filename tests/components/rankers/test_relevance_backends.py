import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from haystack import Document
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.utils import Secret

from components.generators.llm_backends import LocalLlamaChatGenerator
from components.legal.legal_text import split_sentences
from components.rankers.relevance_backends import (
    GRADE_SYSTEM_PROMPT,
    CrossEncoderScorer,
    EmbeddingScorer,
    LLMPointwiseScorer,
    passage_text,
    truncate_at_sentence,
    yes_probability,
)
from tests.corpus_helpers import ET_2015, markdown_article
from tests.scripted_llm import ScriptedChatGenerator
from tests.tiny_models import tiny_bert, tiny_sentence_transformer

QUERY = "¿Cuántos días de vacaciones tengo?"


def words(texts):
    return [len(t.split()) for t in texts]


@pytest.fixture(scope="module")
def articles():
    """ET 2015 articles 38 (vacaciones), 34 (jornada) and 37 (descanso semanal, festivos y permisos)."""
    return {n: markdown_article(ET_2015, n) for n in ("38", "34", "37")}


@pytest.fixture(scope="module")
def blocks(articles):
    titles = {"38": "Vacaciones anuales", "34": "Jornada", "37": "Descanso semanal, fiestas y permisos"}
    return [
        Document(id=f"et-{n}", content=text, meta={"article_title": titles[n], "law_short": "ET", "lang": "es"})
        for n, text in articles.items()
    ]


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory, articles):
    return tiny_bert(tmp_path_factory.mktemp("ce") / "model", [*articles.values(), QUERY, "Vacaciones anuales"],
                     num_labels=1)


@pytest.fixture(scope="module")
def tiny_bi_encoder(tmp_path_factory, articles):
    return tiny_sentence_transformer(tmp_path_factory.mktemp("st") / "model",
                                     [*articles.values(), QUERY, "Vacaciones anuales Jornada Descanso semanal"])


def test_truncate_at_sentence_keeps_whole_sentences(articles):
    text = articles["34"]  # several hundred words
    cut = truncate_at_sentence(text, 60, words)
    sentences = split_sentences(text)
    assert len(cut.split()) <= 60
    kept = split_sentences(cut)
    assert kept == sentences[: len(kept)] and 1 <= len(kept) < len(sentences)
    # the next sentence would not have fit
    assert len(" ".join(sentences[: len(kept) + 1]).split()) > 60
    assert truncate_at_sentence(text, 100_000, words) == text.strip()  # fits: unchanged


def test_truncate_cuts_a_long_first_sentence_at_a_word():
    sentence = "La duración máxima de la jornada ordinaria de trabajo será de cuarenta horas semanales."
    assert truncate_at_sentence(sentence, 4, words) == "La duración máxima de"
    with pytest.raises(ValueError, match="max_tokens"):
        truncate_at_sentence(sentence, 0, words)


def test_passage_text_puts_meta_first(blocks):
    assert passage_text(blocks[0], ("law_short", "article_title", "missing")).startswith(
        "ET\nVacaciones anuales\nArtículo 38."
    )


def test_cross_encoder_init_validation():
    with pytest.raises(ValueError, match="model"):
        CrossEncoderScorer(model="")
    with pytest.raises(ValueError, match="max_length"):
        CrossEncoderScorer(model="x", max_length=4)


def test_cross_encoder_scores_are_the_models_sigmoid_on_truncated_pairs(tiny_cross_encoder, blocks):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    scorer = CrossEncoderScorer(model=str(tiny_cross_encoder), max_length=64, batch_size=2)
    scorer.warm_up()
    ranker = scorer._ranker
    scorer.warm_up()
    assert scorer._ranker is ranker  # loaded once
    scores = scorer.score(QUERY, blocks)
    assert len(scores) == 3 and all(0.0 < s < 1.0 for s in scores)

    tokenizer = AutoTokenizer.from_pretrained(tiny_cross_encoder)
    model = AutoModelForSequenceClassification.from_pretrained(tiny_cross_encoder).eval()
    budget = 64 - len(tokenizer(QUERY, add_special_tokens=False)["input_ids"]) - 4
    for block, score in zip(blocks, scores, strict=True):
        passage = truncate_at_sentence(
            passage_text(block, ("article_title",)), budget,
            lambda ts: [len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in ts],
        )
        pair = tokenizer(QUERY, passage, return_tensors="pt")
        assert pair["input_ids"].shape[1] <= 64  # the model saw the whole truncated block
        assert passage.endswith(".")  # cut at a sentence end
        with torch.no_grad():
            expected = torch.sigmoid(model(**pair).logits)[0, 0].item()
        assert score == pytest.approx(expected, abs=1e-5)
    assert scorer.score(QUERY, []) == []


def test_embedding_scorer_cosine_of_whole_blocks(tiny_bi_encoder, blocks):
    import numpy as np
    from sentence_transformers import SentenceTransformer

    scorer = EmbeddingScorer(model=str(tiny_bi_encoder), max_length=48)
    scorer.warm_up()
    embedder = scorer._document_embedder
    seen, real_run = [], embedder.run

    def spy(documents):
        seen.extend(documents)
        return real_run(documents=documents)

    embedder.run = spy
    vectors = scorer.embed_documents(blocks)
    query = scorer.embed_query(QUERY)
    assert scorer.score(QUERY, blocks, query_embedding=query, document_embeddings=vectors) == pytest.approx(
        [float(np.clip(np.dot(query, v) / np.linalg.norm(query) / np.linalg.norm(v), 0, 1)) for v in vectors]
    )
    # each block was embedded as "title\n\nsentences that fit 48 tokens", cut at a sentence end
    reference = SentenceTransformer(str(tiny_bi_encoder), device="cpu")
    count = lambda ts: [len(reference.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in ts]  # noqa: E731
    for block, sent, vector in zip(blocks, seen, vectors, strict=True):
        assert sent.meta == {"article_title": block.meta["article_title"]}
        assert sent.content == truncate_at_sentence(block.content, 48 - 12 - count([block.meta["article_title"]])[0],
                                                    count)
        assert sent.content.endswith(".") and len(sent.content) < len(block.content)
        text = f"{block.meta['article_title']}\n\n{sent.content}"
        assert len(reference.tokenizer(text)["input_ids"]) <= 48
        expected = reference.encode([text], normalize_embeddings=True)[0]  # float32; the scorer may run bf16
        assert float(np.dot(expected, vector) / np.linalg.norm(vector)) > 0.995
    # precomputed vectors are used as given
    assert scorer.score(QUERY, blocks[:1], query_embedding=[1.0, 0.0], document_embeddings=[[0.6, 0.8]]) == [
        pytest.approx(0.6)
    ]
    with pytest.raises(ValueError, match="differ in size"):
        scorer.score(QUERY, blocks[:1], query_embedding=[1.0, 0.0, 0.0], document_embeddings=[[0.6, 0.8]])
    with pytest.raises(ValueError, match="max_length"):
        EmbeddingScorer(max_length=8)


@pytest.mark.model
def test_embedding_scorer_with_embeddinggemma_prefers_the_vacations_article(blocks):
    from components.utils.models import is_installed

    if not is_installed("embeddinggemma"):
        pytest.skip("embeddinggemma is not installed: run `make models`")
    scores = EmbeddingScorer(model="embeddinggemma", max_length=512).score(QUERY, blocks)
    assert scores[0] == max(scores) and scores[0] > 0.4  # ET art. 38 (vacaciones) over 34 (jornada), 37 (permisos)


def test_llm_init_validation():
    with pytest.raises(ValueError, match="chat_generator"):
        LLMPointwiseScorer(chat_generator=None)
    with pytest.raises(ValueError, match="timeout"):
        LLMPointwiseScorer(chat_generator=ScriptedChatGenerator(), timeout=0)
    assert LLMPointwiseScorer(chat_generator=ScriptedChatGenerator()).mode == "grade"
    llm = OpenAIChatGenerator(api_key=Secret.from_token("x"), model="m")
    assert LLMPointwiseScorer(chat_generator=llm).mode == "logprobs"
    assert LLMPointwiseScorer(chat_generator=llm, use_logprobs=False).mode == "grade"
    local = LocalLlamaChatGenerator(model="qwen2.5-coder-0.5b")  # llama.cpp's server returns logprobs too
    assert LLMPointwiseScorer(chat_generator=local).mode == "logprobs"


def test_llm_scorer_warns_that_the_bundled_model_is_a_poor_judge(monkeypatch, caplog):
    monkeypatch.setattr(LocalLlamaChatGenerator, "warm_up", lambda self: None)  # no model loaded
    local = LLMPointwiseScorer(chat_generator=LocalLlamaChatGenerator(model="qwen2.5-coder-0.5b"))
    with caplog.at_level("WARNING"):
        local.warm_up()
        local.warm_up()
    warnings = [r for r in caplog.records if "bundled local model" in r.getMessage()]
    assert len(warnings) == 1 and "llm_relevance_bench" in warnings[0].getMessage()
    caplog.clear()
    with caplog.at_level("WARNING"):
        LLMPointwiseScorer(chat_generator=ScriptedChatGenerator()).warm_up()
    assert not [r for r in caplog.records if "bundled local model" in r.getMessage()]


def test_llm_yes_no_with_the_local_model_one_call_at_a_time(monkeypatch, blocks):
    """The local model decodes one request at a time: its yes/no calls are made in turn (parallel calls would only
    queue with their deadlines running), and its streamed logprobs are read."""
    from haystack.dataclasses import ChatMessage

    running, peak, lock = [0], [0], threading.Lock()

    def run(messages, generation_kwargs=None, **_):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.02)
        with lock:
            running[0] -= 1
        yes = "Vacaciones" in messages[-1].text
        chunk = {"content": [{"token": "s" if yes else "no", "logprob": 0.0}]}
        return {"replies": [ChatMessage.from_assistant("sí" if yes else "no", meta={"logprobs": [chunk]})]}

    local = LocalLlamaChatGenerator(model="qwen2.5-coder-0.5b")
    monkeypatch.setattr(local, "warm_up", lambda: None)
    monkeypatch.setattr(local, "run", run)
    scorer = LLMPointwiseScorer(chat_generator=local, batch_size=5)
    assert scorer.score(QUERY, blocks) == [1.0, 0.0, 0.0]
    assert peak[0] == 1


def test_llm_yes_no_without_logprobs_reads_the_reply_word(blocks):
    """A reply without logprobs is read by its first word, a yes or no word or the start of one only."""
    llm = ScriptedChatGenerator(replies=["s", "Nã", "quizá"])
    scorer = LLMPointwiseScorer(chat_generator=llm, batch_size=1, use_logprobs=True)
    assert scorer.score(QUERY, blocks) == [1.0, 0.0, None]


def test_llm_grades_batches_of_passages(blocks):
    llm = ScriptedChatGenerator(replies=['{"scores": [9, 2]}', "```json\n[4]\n```"])
    scorer = LLMPointwiseScorer(chat_generator=llm, batch_size=2, max_length=64)
    assert scorer.score(QUERY, blocks) == [0.9, 0.2, 0.4]
    assert llm.warm_ups == 1 and len(llm.calls) == 2
    system, user = llm.calls[0]
    assert system.text == GRADE_SYSTEM_PROMPT
    assert QUERY in user.text and "[1] ET · Vacaciones anuales\nArtículo 38." in user.text
    assert "[2] ET · Jornada\nArtículo 34." in user.text
    assert "[3]" not in user.text and "[1] ET · Descanso semanal" in llm.calls[1][1].text
    passage = user.text.split("[1] ")[1].split("\n\n[2]")[0]
    assert len(passage) <= 64 * 4


def test_llm_unusable_replies_score_none(blocks):
    llm = ScriptedChatGenerator(replies=['{"scores": [9]}', "no sé", '{"scores": [11, -1, "x"]}'])
    scorer = LLMPointwiseScorer(chat_generator=llm, batch_size=3)
    assert scorer.score(QUERY, blocks) == [None, None, None]  # wrong length
    assert scorer.score(QUERY, blocks) == [None, None, None]  # not JSON
    assert scorer.score(QUERY, blocks) == [1.0, 0.0, None]  # clipped to 0-10, non-number ignored
    down = LLMPointwiseScorer(chat_generator=ScriptedChatGenerator(error="connection refused"), batch_size=2)
    assert down.score(QUERY, blocks) == [None, None, None]


def test_yes_probability_from_openai_logprobs():
    logprobs = {"content": [{"token": "Sí", "logprob": math.log(0.6), "top_logprobs": [
        {"token": "Sí", "logprob": math.log(0.6)}, {"token": " si", "logprob": math.log(0.1)},
        {"token": "No", "logprob": math.log(0.2)}, {"token": "Tal", "logprob": math.log(0.1)}]}]}
    assert yes_probability(logprobs) == pytest.approx(0.7 / 0.9)
    assert yes_probability({"content": [{"token": "no", "logprob": 0.0}]}) == 0.0
    assert yes_probability({"content": [{"token": "Quizá", "logprob": 0.0}]}) is None
    assert yes_probability(None) is None and yes_probability({"content": []}) is None


def test_yes_probability_from_a_streamed_reply_split_by_bpe():
    # a streamed reply carries one logprobs entry per chunk; Qwen's vocabulary splits "sí" into "s" + "í"
    first = {"token": "s", "logprob": math.log(0.5), "top_logprobs": [
        {"token": "s", "logprob": math.log(0.5)}, {"token": "No", "logprob": math.log(0.2)},
        {"token": "no", "logprob": math.log(0.1)}, {"token": "S", "logprob": math.log(0.1)},
        {"token": "Se", "logprob": math.log(0.05)}, {"token": "n", "logprob": math.log(0.05)}]}
    streamed = [{"content": []}, {"content": [first]}, {"content": [{"token": "í", "logprob": 0.0}]}]
    assert yes_probability(streamed) == pytest.approx(0.6 / 0.95)
    assert yes_probability([{"content": [{"token": "nã", "logprob": 0.0}]}]) == 0.0
    assert yes_probability([]) is None and yes_probability([{"content": []}]) is None


def test_llm_logprobs_with_a_real_openai_client_on_a_local_server(blocks):
    """OpenAIChatGenerator against an OpenAI-compatible server on 127.0.0.1 that answers with logprobs."""
    requests = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                requests.append(body)
            prompt = body["messages"][-1]["content"]
            p_yes = 0.8 if "vacaciones" in prompt.split("Pasaje:")[1].lower() else 0.1
            token = "Sí" if p_yes > 0.5 else "No"
            top = [{"token": "Sí", "logprob": math.log(p_yes), "bytes": None},
                   {"token": "No", "logprob": math.log(1 - p_yes), "bytes": None}]
            payload = json.dumps({
                "id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "length",
                             "message": {"role": "assistant", "content": token},
                             "logprobs": {"content": [{"token": token, "logprob": math.log(max(p_yes, 1 - p_yes)),
                                                       "bytes": None, "top_logprobs": top}]}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
            }).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        llm = OpenAIChatGenerator(api_key=Secret.from_token("local-key"), model="test-model",
                                  api_base_url=f"http://127.0.0.1:{server.server_address[1]}/v1", timeout=10)
        scores = LLMPointwiseScorer(chat_generator=llm, batch_size=3).score(QUERY, blocks)
    finally:
        server.shutdown()
        server.server_close()
    # ET 38 speaks of vacaciones; 34 (jornada) does too ("vacaciones" appears in it?) -> check each from the text
    expected = [0.8 if "vacaciones" in (b.content + b.meta["article_title"]).lower() else 0.1 for b in blocks]
    assert scores == pytest.approx(expected)
    assert len(requests) == 3
    assert all(r["logprobs"] is True and r["top_logprobs"] == 10 and r["max_tokens"] == 1 for r in requests)
