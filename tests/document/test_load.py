"""The one reader of result files: what a file is, from its content; the rows a recommendation reads, with what was
left out said."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from attnscope.document.load import load, result_rows
from attnscope.document.schema import DocumentError

ROOT = Path(__file__).resolve().parents[2]
ROW = {"variant": "naive", "status": "ok", "case": {"batch": 1, "heads": 2, "seq_q": 8, "head_dim": 4}}


def test_kinds_are_read_from_content(tmp_path):
    assert load(ROOT / "tests/data/h200/run.json").kind == "run"
    assert load(ROOT / "tests/data/cpu/tiny_sweep.jsonl").kind == "sweep"
    assert load(ROOT / "tests/data/h200/flex.json").kind == "trace"
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(gzip.compress(b'{"traceEvents": []}'))
    assert load(gz).kind == "trace"


def test_result_rows_leave_a_torn_line_out_and_say_so(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_text(json.dumps(ROW) + "\n" + json.dumps({**ROW, "variant": "sdpa"}) + "\n" + '{"variant": "fl')
    rows, notes = result_rows([p])
    assert [r["variant"] for r in rows] == ["naive", "sdpa"]
    assert notes == [f"{p}: line 3 is not valid JSON (a torn write?): left out"]


def test_result_rows_take_a_run_documents_results(tmp_path):
    doc = json.loads((ROOT / "tests/data/h200/run.json").read_text())
    rows, notes = result_rows([ROOT / "tests/data/h200/run.json"])
    assert [r["variant"] for r in rows] == [r["variant"] for r in doc["results"]] and notes == []


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ({"schema_version": 1, "kind": "recommend", "best": [], "policy": []}, "a recommendation"),
        ({"schema_version": 1, "kind": "diff", "a": "x", "b": "y"}, "a diff document"),
    ],
)
def test_a_file_of_another_kind_is_named(tmp_path, content, says):
    p = tmp_path / "f.json"
    p.write_text(json.dumps(content))
    with pytest.raises(DocumentError, match=says):
        result_rows([p])


def test_a_row_with_a_bad_field_is_refused(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_text(json.dumps({**ROW, "gpu_time_us": "fast"}) + "\n")
    with pytest.raises(DocumentError, match="gpu_time_us must be a number"):
        result_rows([p])


def test_a_folder_is_not_a_file(tmp_path):
    with pytest.raises(DocumentError, match="not a file"):
        load(tmp_path)
