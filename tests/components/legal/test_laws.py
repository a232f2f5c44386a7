import pytest

from components.legal.laws import DEFAULT_LAWS_FILE, load_laws_table


def test_bundled_table():
    table = load_laws_table()
    assert DEFAULT_LAWS_FILE.is_file()
    assert table["BOE-A-2015-11430"]["law_short"] == "ET"
    assert load_laws_table(None) == load_laws_table(str(DEFAULT_LAWS_FILE))


def test_custom_and_invalid_tables(tmp_path):
    custom = tmp_path / "laws.yaml"
    custom.write_text("laws:\n  L1:\n    law_short: UNO\n  L2:\n", encoding="utf-8")
    assert load_laws_table(custom) == {"L1": {"law_short": "UNO"}, "L2": {}}
    with pytest.raises(ValueError, match="does not exist"):
        load_laws_table(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("laws: [1, 2]\n", encoding="utf-8")
    with pytest.raises(ValueError, match="must hold a mapping"):
        load_laws_table(bad)
