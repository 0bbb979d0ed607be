"""`attnscope analyze` given a file attnscope wrote (a run or model document, a sweep's JSON lines) refuses it in
one line that says what it is and which commands read it, exit 2, before any work, as `diff` and `recommend` name
a trace given to them.  It said "not a Kineto trace (no 'traceEvents' list)", "not valid JSON (Extra data …)", or,
past 8 MiB, "over 8 MiB of JSON not in Kineto's layout"."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from attnscope.cli.main import main
from attnscope.document.load import written_by_attnscope

DATA = Path(__file__).parents[1] / "data"
ROW = {"variant": "naive", "status": "ok", "case": {"batch": 1}, "mode": "fwd"}


def _files(tmp: Path) -> dict[str, Path]:
    run = tmp / "run.json"
    run.write_text(json.dumps({"schema_version": 1, "tool": "attnscope", "env": {}, "results": [ROW]}))
    store = tmp / "sweep.jsonl"
    store.write_text(json.dumps(ROW) + "\n" + json.dumps(ROW | {"variant": "flex"}) + "\n")
    gz = tmp / "run.json.gz"
    gz.write_bytes(gzip.compress(run.read_bytes()))
    return {"run": run, "store": store, "gz": gz}


@pytest.mark.parametrize("kind", ["run", "store", "gz"])
def test_a_result_file_is_refused_as_what_it_is(kind: str, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    f = _files(tmp_path)[kind]
    assert main(["analyze", str(f)]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err == (
        f"attnscope: error: {f}: a result file attnscope wrote (a document or a sweep's rows), not a Kineto trace: "
        "attnscope report, diff or recommend read it\n"
    )


def test_traces_are_not_taken_for_results() -> None:
    traces = [DATA / "h200" / "naive.json", DATA / "llama_train_sdpa.json.gz"]
    traces.append(DATA / "ranks_ddp_h100" / "rank0.json.gz")
    for trace in traces:
        assert not written_by_attnscope(trace), trace


def test_a_missing_file_among_traces_is_refused_before_any_is_read(capsys: pytest.CaptureFixture) -> None:
    """It analysed and printed the other traces, then said the missing one and exited 2."""
    missing = "/nonexistent-dir/trace.json"
    assert main(["analyze", str(DATA / "h200" / "naive.json"), missing]) == 2
    out = capsys.readouterr()
    assert out.out == ""  # no table: nothing was read
    assert out.err == f"attnscope: error: {missing}: no such file\n"


def test_a_trace_reached_twice_is_refused_before_any_is_read(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """`analyze X X` read one trace as two ranks (its kernels counted twice overall); so did a directory and a link
    into it."""
    trace = DATA / "hta" / "trace_filter_sampled_rank-0.json.gz"
    assert main(["analyze", str(trace), str(trace)]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err == f"attnscope: error: {trace}: given twice: each trace is one rank, read once\n"
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    (ranks / trace.name).write_bytes(trace.read_bytes())
    link = tmp_path / "link.json.gz"
    link.symlink_to(ranks / trace.name)
    assert main(["analyze", str(ranks), str(link)]) == 2
    err = capsys.readouterr().err
    same = f"the same file as {ranks / trace.name}"
    assert err == f"attnscope: error: {link}: {same}: each trace is one rank, read once\n"
    # two different files with equal contents are two ranks: not refused
    (ranks / "rank-1.json.gz").write_bytes(trace.read_bytes())
    assert main(["analyze", str(ranks)]) == 0
