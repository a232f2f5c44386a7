"""The constitutional bases of statute articles (`components/legal/data/bases.yaml`)."""

import pytest

from components.legal.bases import Basis, load_bases
from components.legal.legal_text import split_sentences, unit_range
from components.legal.answer_format import article_body
from tests.corpus_helpers import CE, CORPUS
from tests.reference_fixtures import parent_blocks

CLT = "DEL-5452-1943"


def test_bundled_bases_point_at_real_subdivisions_and_articles():
    """Every basis names a subdivision its constitution's text has, for articles the CLT has (keys as parsed)."""
    bases = load_bases()
    blocks = parent_blocks(CORPUS / "CF88.md", CORPUS / "CLT.md", CE, CORPUS / "BOE-A-1985-16660.md")
    articles = {(b.meta["law_id"], b.meta["article"]) for b in blocks}
    assert len(bases) >= 25 and set(bases) <= articles
    for key, found in bases.items():
        for basis in found:
            parts = [b for b in blocks if (b.meta["law_id"], b.meta["article"]) == (basis.law_id, basis.article)]
            assert any(
                unit_range(split_sentences(article_body(b), lang="pt"), list(basis.units)) is not None for b in parts
            ), (key, basis)
    # the rights a lawyer cites with their regulation
    assert bases[(CLT, "59")] == (Basis("CF88", "7", (("inciso", "XVI"),)),)
    assert bases[(CLT, "392")] == (Basis("CF88", "7", (("inciso", "XVIII"),)),)
    assert bases[(CLT, "11")] == (Basis("CF88", "7", (("inciso", "XXIX"),)),)
    assert bases[(CLT, "391-a")] == (Basis("CF88", "adct-10", (("inciso", "II"), ("letra", "b"))),)
    # an article that only touches a right is no basis's: art. 473 lists leaves, paternity among them
    assert (CLT, "473") not in bases
    # in Spain, only the fundamental right the LOLS develops: the CE's other labour provisions state principles
    spanish = {key: found for key, found in bases.items() if key[0].startswith("BOE-")}
    assert spanish == {
        ("BOE-A-1985-16660", article): (Basis("BOE-A-1978-31229", "28", (("apartado", "1"),)),) for article in "12"
    }


@pytest.mark.parametrize("text", [
    "- a list\n",
    "CF88: [1, 2]\n",
    "CF88:\n  '7': {units: [[inciso, XVI]]}\n",
    "CF88:\n  '7':\n    - {units: [[inciso, XVI]]}\n",
    "CF88:\n  '7':\n    - {units: [[capitulo, 2]], regulated_by: {CLT: ['59']}}\n",
    "CF88:\n  '7':\n    - {units: [], regulated_by: {CLT: ['59']}}\n",
    "CF88:\n  '7':\n    - {units: [[inciso, XVI]], regulated_by: {CLT: []}}\n",
])
def test_a_malformed_bases_file_is_a_clear_error(tmp_path, text):
    path = tmp_path / "bases.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match="bases"):
        load_bases(path)


def test_a_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        load_bases(tmp_path / "none.yaml")


def test_a_custom_bases_file(tmp_path):
    path = tmp_path / "bases.yaml"
    path.write_text("CF88:\n  '7':\n    - {units: [[inciso, XV]], regulated_by: {DEL-5452-1943: ['67', 'ART-X']}}\n",
                    encoding="utf-8")
    assert load_bases(path) == {
        (CLT, "67"): (Basis("CF88", "7", (("inciso", "XV"),)),),
        (CLT, "art-x"): (Basis("CF88", "7", (("inciso", "XV"),)),),
    }
