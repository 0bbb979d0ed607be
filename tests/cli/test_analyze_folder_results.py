"""analyze of a folder passes over the result files attnscope wrote there (a run's --json beside its traces), with
a note each; they made the command end in exit 2 as 'not a Kineto trace'."""

from __future__ import annotations

import json
import shutil

from attnscope.cli.main import main
from tests.rawtrace import DATA


def test_a_document_beside_the_traces_is_passed_over(tmp_path, capsys):
    for name in ("naive.json", "sdpa_flash.json", "run.json"):  # two traces and the H200 run's document
        shutil.copy(DATA / "h200" / name, tmp_path / name)
    assert "traceEvents" not in json.loads((tmp_path / "run.json").read_text())
    out = tmp_path / "o.json"
    assert main(["analyze", str(tmp_path), "--json", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"attnscope: note: {tmp_path / 'run.json'}: a result file attnscope wrote, not a trace: passed over" in err
    assert "error" not in err
    assert [r["variant"] for r in json.loads(out.read_text())["results"]] == ["naive", "sdpa_flash"]


def test_a_folder_of_documents_only_says_so(tmp_path, capsys):
    shutil.copy(DATA / "h100" / "paged_decode_run.json", tmp_path / "paged_decode_run.json")
    assert main(["analyze", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "directory holds no .json or .json.gz trace files (only 1 result file(s) attnscope wrote" in err
