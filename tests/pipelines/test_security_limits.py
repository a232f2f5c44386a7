"""Limits outside HTTP (issue 12, item 4): front matter without aliases or lists, PDF / text caps, filter caps."""

import pytest
from pypdf import PdfWriter

from components.converters.statute_converter import StatuteConverter
from tests.components.converters.test_statute_converter import make_text_pdf

BODY = "# Ley\n\n##### Artículo 1. Objeto.\n\nTexto del artículo.\n"


def _convert(tmp_path, name, text, **init):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return StatuteConverter(**init).run(sources=[path])


def test_front_matter_aliases_are_refused_not_expanded(tmp_path):
    # the 181-byte "billion laughs" shape of the issue: each level multiplies the previous one by ten
    bomb = "a: &a [x,x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"{chr(98 + n)}: &{chr(98 + n)} [" + ",".join([f"*{chr(97 + n)}"] * 10) + "]\n" for n in range(6)
    )
    result = _convert(tmp_path, "bomb.md", f"---\n{bomb}title: Ley\n---\n{BODY}")
    assert result["documents"] == []
    assert "anchors and aliases are not allowed" in result["errors"][0]["error"]
    # one anchor alone is refused too (no alias needed to be rejected)
    result = _convert(tmp_path, "anchor.md", f"---\ntitle: &t Ley\n---\n{BODY}")
    assert "anchors and aliases" in result["errors"][0]["error"]


@pytest.mark.parametrize("field", ["identifier", "title", "status", "derogated_by", "publication_date"])
def test_front_matter_lists_or_mappings_where_one_value_is_expected_are_refused(tmp_path, field):
    for value in ("[BOE-A-2015-11430, x]", "{a: 1}"):
        result = _convert(tmp_path, "list.md", f"---\n{field}: {value}\n---\n{BODY}")
        assert result["documents"] == [] and f"front matter field '{field}' must be a single value" in \
            result["errors"][0]["error"]
    ok = _convert(tmp_path, "ok.md", f"---\nidentifier: LEY-1\ntitle: Ley\nextra: [a, b]\n---\n{BODY}")
    assert ok["errors"] == [] and ok["documents"][0].meta["law_id"] == "LEY-1"  # unknown fields are ignored


def test_front_matter_and_text_length_caps(tmp_path):
    long_front = "---\ntitle: Ley\nnote: " + "x" * 30_000 + "\n---\n" + BODY
    assert "front matter too long" in _convert(tmp_path, "front.md", long_front)["errors"][0]["error"]
    result = _convert(tmp_path, "long.md", BODY + "texto " * 100, max_text_chars=200)
    assert result["documents"] == [] and "text too long" in result["errors"][0]["error"]
    assert _convert(tmp_path, "fits.md", BODY, max_text_chars=200)["errors"] == []
    with pytest.raises(ValueError, match="max_text_chars"):
        StatuteConverter(max_text_chars=0)


def test_pdf_pages_and_text_are_capped(tmp_path):
    text_pdf = tmp_path / "ley.pdf"
    text_pdf.write_bytes(make_text_pdf(["Artículo 1. Objeto.", "Texto del artículo " * 5]))
    assert StatuteConverter().run(sources=[text_pdf])["errors"] == []
    capped = StatuteConverter(max_text_chars=40).run(sources=[text_pdf])
    assert capped["documents"] == [] and "PDF text longer than 40" in capped["errors"][0]["error"]
    writer = PdfWriter()
    for _ in range(5):
        writer.add_blank_page(width=200, height=200)
    many = tmp_path / "many.pdf"
    with many.open("wb") as handle:
        writer.write(handle)
    result = StatuteConverter(max_pdf_pages=4).run(sources=[many])
    assert result["documents"] == [] and result["errors"][0]["error"] == "PDF has 5 pages, at most 4"
    with pytest.raises(ValueError, match="max_pdf_pages"):
        StatuteConverter(max_pdf_pages=-1)
