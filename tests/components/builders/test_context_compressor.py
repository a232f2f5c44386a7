"""Tests of ContextCompressor: budget, drop order, sentence trimming that keeps facts, token counters."""

from dataclasses import replace

import pytest
from haystack import Document

from components.builders.answer_prompt import AnswerPromptBuilder
from components.preprocessors.article_parser import ArticleParser
from components.utils.chunking import CHARS_PER_TOKEN
from components.legal.answer_format import CONTEXT_SEPARATOR
from components.builders.context_compressor import (
    ContextCompressor,
    EstimateCounter,
    HFTokenizerCounter,
    make_counter,
)
from components.utils.models import is_installed
from components.preprocessors.semantic_parent_splitter import SemanticParentSplitter
from components.converters.statute_converter import StatuteConverter
from tests.corpus_helpers import ET_2015

QUESTION = "¿Cuántos días de vacaciones tengo al año?"


@pytest.fixture(scope="module")
def et_blocks():
    """Parent blocks of ET articles 38, 37, 34, 23 and 4 (one block per article part), scored best first."""
    docs = StatuteConverter().run(sources=[str(ET_2015)])["documents"]
    wanted = ["38", "37", "34", "23", "4"]
    articles = [d for d in ArticleParser().run(documents=docs)["documents"] if d.meta.get("article") in wanted]
    articles.sort(key=lambda d: wanted.index(d.meta["article"]))
    parents = SemanticParentSplitter(breakpoint_model="lexical").run(documents=articles)["documents"]
    return [replace(doc, score=1.0 - 0.03 * i) for i, doc in enumerate(parents)]


def _rendered_tokens(compressor, documents):
    """Tokens of the context message AnswerPromptBuilder really renders for these blocks."""
    import re

    prompt = AnswerPromptBuilder(max_documents=100).run(question=QUESTION, documents=documents)["prompt"]
    # the context travels in the user turn between the request's <<ctx-…>> delimiters
    context = re.search(r"<<(ctx-[0-9a-f]+)>>\n(.*)\n<</\1>>", prompt[-1].text, re.DOTALL).group(2)
    return compressor.count_tokens(context)


def test_init_defaults():
    compressor = ContextCompressor()
    assert compressor.token_budget == 4000
    assert compressor.tokenizer is None
    assert compressor.enabled is True


@pytest.mark.parametrize(
    "kwargs", [{"token_budget": 50}, {"chars_per_token": 0}, {"min_trimmed_tokens": 0}]
)
def test_init_rejects_bad_values(kwargs):
    with pytest.raises(ValueError):
        ContextCompressor(**kwargs)


def test_to_dict_and_from_dict():
    compressor = ContextCompressor(token_budget=2500, chars_per_token=3.5, min_trimmed_tokens=40, enabled=False)
    data = compressor.to_dict()
    assert data == {
        "type": "components.builders.context_compressor.ContextCompressor",
        "init_parameters": {
            "token_budget": 2500,
            "tokenizer": None,
            "chars_per_token": 3.5,
            "min_trimmed_tokens": 40,
            "enabled": False,
        },
    }
    restored = ContextCompressor.from_dict(data)
    assert restored.token_budget == 2500 and restored.enabled is False
    assert restored.to_dict() == data


def test_run_under_budget_changes_nothing(et_blocks):
    compressor = ContextCompressor()
    few = et_blocks[:3]
    result = compressor.run(documents=few, query=QUESTION)
    assert result["documents"] == few
    stats = result["stats"]
    assert stats["dropped_ids"] == [] and stats["trimmed_ids"] == []
    assert stats["tokens_after"] == _rendered_tokens(compressor, few) <= 4000


def test_run_drops_lowest_scored_blocks_first(et_blocks):
    compressor = ContextCompressor(token_budget=1500)
    shuffled = et_blocks[::2] + et_blocks[1::2]  # input order is not score order
    result = compressor.run(documents=shuffled, query=QUESTION)
    kept, stats = result["documents"], result["stats"]
    assert stats["tokens_before"] > 1500
    assert _rendered_tokens(compressor, kept) <= 1500
    assert stats["tokens_after"] <= 1500
    kept_ids = {d.id for d in kept}
    dropped = [d for d in shuffled if d.id in set(stats["dropped_ids"])]
    assert dropped
    # every dropped block scores below every block kept whole
    whole = [d for d in kept if not d.meta.get("compressed")]
    assert max(d.score for d in dropped) < min(d.score for d in whole)
    # kept blocks keep the input order, their ids and meta
    assert [d.id for d in kept] == [d.id for d in shuffled if d.id in kept_ids]
    assert all(d.meta["law_short"] == "ET" for d in kept)
    assert stats["documents_out"] == len(kept) == len(shuffled) - len(dropped)


def test_blocks_of_equal_score_keep_one_block_of_every_article_first(et_blocks):
    # the blocks of the articles a question cites are fetched at the same score: when they do not all fit, an
    # article's later blocks go before another article's only block ("arts. 37 y 34 ET")
    cited = [replace(d, score=1.0) for d in et_blocks if d.meta["article"] in ("37", "34")]
    assert [d.meta["article"] for d in cited].count("37") > 1
    compressor = ContextCompressor(token_budget=700)
    costs = [compressor._block_tokens(d, i) for i, d in enumerate(cited, 1)]
    assert sum(c for c, d in zip(costs, cited) if d.meta["article"] == "37") > 700  # art. 37 alone overflows
    kept = compressor.run(documents=cited, query="arts. 37 y 34 ET")["documents"]
    assert {d.meta["article"] for d in kept} == {"37", "34"}
    assert [d.id for d in kept] == [d.id for d in cited if d.id in {k.id for k in kept}]  # input order kept


def test_a_question_asking_for_the_cited_text_keeps_the_cited_blocks_whole(et_blocks):
    from components.legal.ids import EXACT_MATCH, LEXICAL_MATCH, WHOLE_TEXT

    cited = [replace(d, score=1.0, meta={**d.meta, LEXICAL_MATCH: EXACT_MATCH})
             for d in et_blocks if d.meta["article"] == "37"]
    others = [d for d in et_blocks if d.meta["article"] != "37"]
    compressor = ContextCompressor(token_budget=300)
    whole = compressor.run(documents=[*cited, *others], query="transcribe el artículo 37 del ET")
    assert [d.id for d in whole["documents"]] == [d.id for d in cited]  # every cited block, and nothing else
    assert not any(d.meta.get("compressed") for d in whole["documents"])
    assert whole["stats"]["token_budget"] > 300
    # asked as usual, the budget holds
    usual = compressor.run(documents=[*cited, *others], query="¿qué dice el artículo 37 del ET?")
    assert usual["stats"]["tokens_after"] <= 300 and usual["stats"]["token_budget"] == 300
    # "el artículo 37 del ET completo": read with the citations, whose blocks the gate marks (`whole_text`)
    marked = [replace(d, meta={**d.meta, WHOLE_TEXT: True}) for d in cited]
    after = compressor.run(documents=[*marked, *others], query="el artículo 37 del ET completo")
    assert [d.id for d in after["documents"]] == [d.id for d in cited]
    assert not any(d.meta.get("compressed") for d in after["documents"])
    unmarked = compressor.run(documents=[*cited, *others], query="el artículo 37 del ET completo")
    assert unmarked["stats"]["token_budget"] == 300


def test_run_never_drops_the_best_block(et_blocks):
    best = et_blocks[0]  # ET art. 38, the best scored
    compressor = ContextCompressor(token_budget=120)
    result = compressor.run(documents=list(reversed(et_blocks)), query=QUESTION)
    kept = result["documents"]
    assert [d.id for d in kept] == [best.id]
    trimmed = kept[0]
    assert trimmed.meta["compressed"] is True
    assert trimmed.meta["original_length"] == len(best.content)
    assert trimmed.content.startswith("Artículo 38. Vacaciones anuales.")  # the citation line stays
    assert "treinta días naturales" in trimmed.content  # the sentence with the question's terms and the number
    assert result["stats"]["trimmed_ids"] == [best.id]
    assert _rendered_tokens(compressor, kept) <= 120


def test_trimming_keeps_facts_in_original_order(et_blocks):
    """Art. 38 trimmed: the sentences on the holiday calendar kept, in text order, gaps marked."""
    art_38 = et_blocks[0]
    compressor = ContextCompressor(token_budget=300, min_trimmed_tokens=20)
    kept = compressor.run(documents=[art_38], query="calendario de vacaciones")["documents"][0]
    body = kept.content.split("\n", 1)[1]
    assert "[…]" in body
    pieces = [p.strip() for p in body.split("[…]") if p.strip()]
    positions = [art_38.content.index(p[:40]) for p in pieces]
    assert positions == sorted(positions)
    # the two sentences with both query terms first, then a sentence carrying a number before plain ones
    assert "El calendario de vacaciones se fijará en cada empresa." in body
    assert "coincida en el tiempo con una incapacidad temporal" in body
    assert "inferior a treinta días naturales" in body
    assert "dieciocho meses" not in body  # one query term only, too long for what is left
    assert len(kept.content) < len(art_38.content)


def test_run_trims_the_edge_block_instead_of_dropping_it(et_blocks):
    compressor = ContextCompressor(token_budget=1200, min_trimmed_tokens=30)
    result = compressor.run(documents=et_blocks, query=QUESTION)
    stats = result["stats"]
    assert len(stats["trimmed_ids"]) == 1
    trimmed = next(d for d in result["documents"] if d.id == stats["trimmed_ids"][0])
    assert trimmed.meta["compressed"] is True
    assert stats["tokens_after"] <= 1200
    assert stats["tokens_after"] > 1200 - 200  # the budget is used, not left half empty


def test_each_block_is_laid_out_once_per_run(et_blocks, monkeypatch):
    """The layout of a block (neutralized header, chapter, text) is computed once per run, the trimmed one twice."""
    from components.builders import context_compressor as module
    from components.legal.answer_format import context_block

    calls = []

    def counting(doc):
        calls.append(doc.id)
        return context_block(doc)

    monkeypatch.setattr(module, "context_block", counting)
    result = ContextCompressor(token_budget=1200, min_trimmed_tokens=30).run(documents=et_blocks, query=QUESTION)
    assert len(result["stats"]["trimmed_ids"]) == 1
    assert len(calls) == len(et_blocks) + 1  # every block once, and the trimmed copy of the edge block
    assert result["stats"]["tokens_after"] == ContextCompressor(token_budget=1200).count_tokens(
        ContextCompressor().render(result["documents"])
    )


def test_run_pass_through_when_disabled(et_blocks):
    compressor = ContextCompressor(token_budget=200, enabled=False)
    result = compressor.run(documents=et_blocks)
    assert result["documents"] is et_blocks
    assert result["stats"]["enabled"] is False
    assert result["stats"]["tokens_after"] == result["stats"]["tokens_before"] > 200
    enabled = compressor.run(documents=et_blocks, enabled=True, token_budget=300)
    assert enabled["stats"]["tokens_after"] <= 300


def test_run_leaves_out_blocks_without_text_and_rejects_bad_input(et_blocks):
    empty = Document(content="   ", meta={"law_short": "ET"}, score=2.0)
    result = ContextCompressor().run(documents=[empty, *et_blocks[:2]])
    assert [d.id for d in result["documents"]] == [d.id for d in et_blocks[:2]]
    assert result["stats"]["dropped_ids"] == [empty.id]
    with pytest.raises(TypeError):
        ContextCompressor().run(documents=["texto"])
    with pytest.raises(ValueError):
        ContextCompressor().run(documents=[], token_budget=10)


def test_budget_counts_block_headers():
    """Two blocks of equal text: the one with long headings (chapter, repeal note) costs more tokens."""
    text = "Los trabajadores tendrán derecho a vacaciones. " * 4
    plain = Document(content=text, meta={"law_short": "ET", "article": "38"})
    rich = Document(
        content=text,
        meta={
            "law_short": "ET1995",
            "article": "38",
            "article_title": "Vacaciones anuales",
            "heading_path": ["TÍTULO I. De la relación individual de trabajo", "CAPÍTULO II. Contenido"],
            "status": "repealed",
            "derogated_by": "Real Decreto Legislativo 2/2015",
        },
    )
    compressor = ContextCompressor()
    plain_tokens = compressor.run(documents=[plain])["stats"]["tokens_before"]
    rich_tokens = compressor.run(documents=[rich])["stats"]["tokens_before"]
    assert rich_tokens > plain_tokens + 20
    # a block is counted as the context renders it: intro + block (+ its separator) = the rendered context
    for doc in (plain, rich):
        rendered = compressor.count_tokens(compressor.render([doc]) + CONTEXT_SEPARATOR)
        assert abs(compressor.run(documents=[doc])["stats"]["tokens_before"] - rendered) <= 2


def test_estimate_counter_is_per_language():
    counter = EstimateCounter()
    text = "x" * 380
    assert counter(text, "es") == 100
    assert counter(text, "pt") == -(-380 // CHARS_PER_TOKEN["pt"])
    assert EstimateCounter(chars_per_token=2.0)(text, "es") == 190
    assert counter("", "es") == 0


def test_exact_hf_tokenizer(tmp_path, et_blocks):
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    tokenizer = Tokenizer(WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    path = tmp_path / "tokenizer.json"
    tokenizer.save(str(path))
    assert isinstance(make_counter(str(tmp_path), None), HFTokenizerCounter)
    compressor = ContextCompressor(tokenizer=str(path), token_budget=300)
    compressor.warm_up()
    assert compressor.count_tokens("El periodo de vacaciones") == 4
    result = compressor.run(documents=et_blocks, query=QUESTION)
    assert result["stats"]["counter"] == "tokenizer"
    assert result["stats"]["tokens_after"] <= 300


def test_unknown_tokenizer_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="tokenizer"):
        ContextCompressor(tokenizer=str(tmp_path / "nothing.bin")).warm_up()


@pytest.mark.model
@pytest.mark.skipif(not is_installed("qwen2.5-coder-0.5b"), reason="the small local LLM is not installed")
def test_estimate_is_conservative_against_the_real_qwen_tokenizer(et_blocks):
    exact = ContextCompressor(tokenizer="qwen2.5-coder-0.5b")
    estimate = ContextCompressor()
    rendered = estimate.render(et_blocks)
    real = exact.count_tokens(rendered)
    assert real > 500
    assert real <= estimate.count_tokens(rendered) <= real * 1.2


def test_a_portuguese_question_is_budgeted_in_the_words_of_its_prompt():
    clt = [
        Document(id=f"clt-{n}", score=1.0 / n, content=f"Art. {n}. " + "O empregado terá direito a férias. " * 40,
                 meta={"law_id": "DEL-5452-1943", "law_short": "CLT", "article": str(n), "lang": "pt",
                       "heading_path": ["CAPÍTULO IV: DAS FÉRIAS ANUAIS"], "summary": "Férias anuais."})
        for n in range(129, 134)
    ]
    question = "Quantos dias de férias eu tenho?"
    compressor = ContextCompressor(token_budget=600, min_trimmed_tokens=30)
    result = compressor.run(documents=clt, query=question)
    portuguese = compressor.render(result["documents"], language="pt")
    assert portuguese.startswith("Fragmentos de legislação") and "Resumo: Férias anuais." in portuguese
    # what is counted is what the prompt builder renders for this question
    prompt = AnswerPromptBuilder().run(question=question, documents=result["documents"])["prompt"][-1].text
    assert portuguese in prompt
    assert result["stats"]["tokens_after"] == compressor.count_tokens(portuguese) <= 600
    assert compressor.render(result["documents"]) != portuguese  # Spanish words otherwise


def test_a_portuguese_questions_function_words_do_not_choose_the_kept_sentence():
    block = Document(
        id="clt-134", score=1.0,
        content="Art. 134. Não se aplica o disposto neste artigo ao meu contrato nem ao de quem não o assinou. "
        "As férias serão concedidas por ato do empregador nos doze meses seguintes.",
        meta={"law_id": "DEL-5452-1943", "law_short": "CLT", "article": "134", "lang": "pt"},
    )
    compressor = ContextCompressor(token_budget=600)
    trimmed = compressor._trim(block, 20, "meu patrão não me deu férias", "pt")
    assert "férias" in trimmed.content and "meu contrato" not in trimmed.content


def test_the_language_counted_is_read_from_the_blocks_the_prompt_renders():
    # a question of no detectable language: the answer's language is the blocks'; empty blocks are not rendered
    spanish = Document(id="et-38", content="Artículo 38. Las vacaciones anuales retribuidas no serán sustituibles.",
                       meta={"law_short": "ET", "article": "38", "lang": "es"})
    empty = [Document(id=f"clt-{n}", content=" ", meta={"law_short": "CLT", "article": str(n), "lang": "pt"})
             for n in (129, 130)]
    compressor = ContextCompressor()
    result = compressor.run(documents=[spanish, *empty], query="38?")
    prompt = AnswerPromptBuilder().run(question="38?", documents=[spanish, *empty])["prompt"][-1].text
    assert result["stats"]["language"] == "es"
    assert compressor.render(result["documents"], language="es") in prompt
    assert result["stats"]["tokens_after"] == compressor.count_tokens(compressor.render([spanish], language="es"))
