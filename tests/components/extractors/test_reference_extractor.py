import pytest
from haystack import Document

from components.extractors.reference_extractor import ReferenceExtractor
from components.legal.ids import parent_id_for
from tests.corpus_helpers import ET_2015, RD_2720
from tests.reference_fixtures import ET, ET1995, ET_1995_FILE, RD, extracted


def _block(text, *, law_id=ET, article="49", law_short="ET", collection="normativa", **meta):
    return Document(
        id=parent_id_for(law_id, article, 1),
        content=text,
        meta={"law_id": law_id, "article": article, "law_short": law_short, "collection": collection, "rank": 2,
              "level": "parent", "part": 1, "parts": 1, **meta},
    )


def test_init_defaults_and_validation():
    extractor = ReferenceExtractor()
    assert (extractor.max_refs, extractor.regulation_refs) == (20, True)
    with pytest.raises(ValueError, match="max_refs"):
        ReferenceExtractor(max_refs=0)
    with pytest.raises(TypeError):
        ReferenceExtractor(None)  # keyword-only


def test_to_dict_from_dict():
    extractor = ReferenceExtractor(max_refs=5, regulation_refs=False, aliases={"Ley de Empleo": "LE"})
    data = extractor.to_dict()
    assert data == {
        "type": "components.extractors.reference_extractor.ReferenceExtractor",
        "init_parameters": {"laws_file": None, "aliases": {"Ley de Empleo": "LE"}, "max_refs": 5,
                            "regulation_refs": False},
    }
    restored = ReferenceExtractor.from_dict(data)
    assert (restored.max_refs, restored.regulation_refs, restored.aliases) == (5, False, {"Ley de Empleo": "LE"})


def test_run_resolves_self_named_anaphoric_and_external_citations():
    text = (
        "Artículo 49. Extinción del contrato.\n"
        "1. Conforme al artículo 48 de esta ley y al artículo 38 del Estatuto de los Trabajadores, y según el "
        "artículo 14 de la Constitución Española y el artículo 2 de la misma, así como el artículo 12 de la "
        "Ley 36/2011, de 10 de octubre. Véase el artículo 45 y el apartado 2 del artículo 49."
    )
    result = ReferenceExtractor().run(documents=[_block(text)])
    refs = result["documents"][0].meta["refs"]
    assert refs == [
        parent_id_for(ET, "48", 1),
        parent_id_for(ET, "38", 1),
        parent_id_for("BOE-A-1978-31229", "14", 1),
        parent_id_for("BOE-A-1978-31229", "2", 1),  # "de la misma": the last law named
        parent_id_for(ET, "45", 1),  # no law named: this law
    ]  # the heading "Artículo 49" and "del artículo 49" (its own article) are not references
    edges = {(e["source"], e["target"], e["type"]) for e in result["edges"]}
    assert (f"{ET}#49", "ext:ley 36/2011#12", "CITA") in edges  # kept in the graph, not in refs
    assert result["stats"]["resolved"] == 5
    assert result["stats"]["external"] == 1


def test_run_sentencias_interpret_and_law_only_citations():
    doc = _block("La sentencia aplica el artículo 38 del Estatuto de los Trabajadores y la Ley 39/2015.",
                 law_id="STS-2020-1", article="fj1", law_short="STS 1/2020", collection="sentencias", rank=5)
    result = ReferenceExtractor().run(documents=[doc])
    edges = {(e["source"], e["target"], e["type"]) for e in result["edges"]}
    assert edges == {("STS-2020-1#fj1", f"{ET}#38", "INTERPRETA"), ("STS-2020-1#fj1", "ext:ley 39/2015", "INTERPRETA")}
    assert result["documents"][0].meta["refs"] == [parent_id_for(ET, "38", 1)]


def test_run_rejects_blocks_without_article():
    with pytest.raises(ValueError, match="law_id"):
        ReferenceExtractor().run(documents=[Document(content="Artículo 1.", meta={"law_id": ET})])


def test_run_on_corpus_et_and_rd_2720():
    result = extracted(ET_2015, RD_2720)
    by_key = {(d.meta["law_id"], d.meta["article"], d.meta["part"]): d for d in result["documents"]}
    # ET art. 49 (extinción, 5 parts) cites arts. 44 and 48 of the same law
    art_49 = {ref for part in range(1, 6) for ref in by_key[(ET, "49", part)].meta["refs"]}
    assert {parent_id_for(ET, "44", 1), parent_id_for(ET, "48", 1)} <= art_49
    # RD 2720/1998 "por el que se desarrolla el artículo 15 del Estatuto de los Trabajadores": REGULAMENTA, and its
    # blocks refer to ET art. 15
    edges = {(e["source"], e["target"], e["type"]) for e in result["edges"]}
    assert (RD, f"{ET}#15", "REGULAMENTA") in edges
    assert parent_id_for(ET, "15", 1) in by_key[(RD, "3", 1)].meta["refs"]
    assert all(isinstance(d.meta["refs"], list) for d in result["documents"])
    stats = result["stats"]
    assert stats["resolved"] > 200 and stats["blocks"] == len(result["documents"])
    assert sum(len(d.meta["refs"]) for d in result["documents"]) == stats["refs"]


def test_run_repeal_edges_from_front_matter_and_derogatory_provision():
    result = extracted(ET_1995_FILE, ET_2015)
    edges = {(e["source"], e["target"], e["type"]) for e in result["edges"]}
    assert (ET, ET1995, "REVOGA") in edges  # ET 2015 derogates ET 1995 (derogated_by + its rd-dd)
    # the ET 2015 derogatory provision repeals provisions of laws outside the corpus
    assert (ET, "ext:ley 12/2001#da4", "REVOGA") in edges
    # ... but never the law that repeals the ET 1995 itself
    assert (ET1995, ET, "REVOGA") not in edges
    nodes = {n["id"]: n for n in result["nodes"]}
    assert nodes[ET]["indexed"] is True and nodes[ET]["law"] == "ET"
    assert nodes[f"{ET}#38"]["title"].startswith("Vacaciones")
