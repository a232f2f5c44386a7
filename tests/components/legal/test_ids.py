import pytest

from components.legal.ids import is_transitional
from components.legal.legal_text import normalize_article_key


@pytest.mark.parametrize(
    ("raw", "kind"),
    [("Disposición transitoria undécima", "articulo"), ("única", "transitoria"), ("trigésima quinta", "transitoria"),
     ("novena bis", "transitoria")],
)
def test_a_disposicion_transitoria_is_transitional(raw, kind):
    assert is_transitional(normalize_article_key(raw, kind))


def test_transitional_keys_and_the_rest():
    # a repeated ordinal, the approving decree's
    assert all(is_transitional(k) for k in ("dt35-2", "rd-dt1"))
    # articles, the other dispositions, a preamble, no key; the ADCT's articles govern (art. 10: the FGTS fine)
    assert not any(is_transitional(k) for k in ("38", "59-a", "da1", "dd", "df2", "rd-unico", "preambulo", None, 38,
                                                "adct-10"))
