"""--capture given a folder or one of attnscope's own documents: one line that says which, exit 2 before any trace
is read ('no such file' for a folder that exists; the document was read as a trace without naming --capture)."""

from __future__ import annotations

from attnscope.cli.main import main
from tests.rawtrace import DATA

TRACE = str(DATA / "h200" / "naive.json")


def test_a_folder(tmp_path, capsys):
    assert main(["analyze", TRACE, "--capture", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"--capture {tmp_path}: a directory: name the capture's trace file" in err and "no such file" not in err


def test_a_document_attnscope_wrote(capsys):
    doc = DATA / "h200" / "run.json"
    assert main(["analyze", TRACE, "--capture", str(doc)]) == 2
    err = capsys.readouterr().err
    assert f"--capture {doc}: a result file attnscope wrote, not the Kineto trace of a capture" in err
    assert err.count("\n") == 1


def test_a_missing_file_still_says_so(tmp_path, capsys):
    assert main(["analyze", TRACE, "--capture", str(tmp_path / "none.json")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_an_input_flag_given_a_folder_says_so(tmp_path, capsys):
    """run --guess FOLDER (an input flag's file): 'a directory: name a file in it', not 'not a file'."""
    assert main(["run", "--guess", str(tmp_path), "--seq", "64"]) == 2
    assert f"--guess {tmp_path}: a directory: name a file in it" in capsys.readouterr().err
