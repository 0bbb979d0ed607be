"""Each command is its own module, reached from the parser, and does what one API function does: the document a
command writes with --json is the one its API function returns, on the committed data.

Expected values beside the equality come from the raw files (GPU event durations summed from the Kineto JSON, the
lines of the JSONL counted), not from attnscope."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from attnscope import api
from attnscope.cli.main import build_parser, main
from attnscope.document.schema import write_atomic
from tests.rawtrace import H200, raw_events

ROOT = Path(__file__).resolve().parents[2]
SWEEP = ROOT / "tests/data/cpu/tiny_sweep.jsonl"
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")

# command → the arguments one parse needs besides the command
COMMANDS = {
    "variants": [],
    "analyze": ["t.json"],
    "report": ["a.json", "-o", "r.html"],
    "recommend": ["s.jsonl"],
    "diff": ["a.json", "b.json"],
}


def _raw_gpu_us(path: Path) -> float:
    return sum(e["dur"] for e in raw_events(path) if e.get("cat") in GPU_CATS)


def test_every_command_module_is_reached_from_its_help() -> None:
    """In a fresh interpreter: before `attnscope CMD --help` the module attnscope.cli.CMD is not loaded, after it
    is, and --help exits 0 with the command's usage and its exit statuses."""
    names = [*COMMANDS, "sweep", "model", "tour"]
    code = (
        "import contextlib, io, json, sys\n"
        "from attnscope.cli.main import main\n"
        "out = {}\n"
        f"for c in {names!r}:\n"
        "    before = f'attnscope.cli.{c}' in sys.modules\n"
        "    buf = io.StringIO()\n"
        "    with contextlib.redirect_stdout(buf):\n"
        "        rc = main([c, '--help'])\n"
        "    out[c] = [before, f'attnscope.cli.{c}' in sys.modules, rc, buf.getvalue()]\n"
        "print(json.dumps(out))\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout.strip().splitlines()[-1])
    for c in names:
        before, after, rc, text = got[c]
        assert (before, after, rc) == (False, True, 0), c
        assert f"usage: attnscope {c}" in text and "2 bad input" in text, c  # its exit statuses end the help


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_command_runs_the_function_of_its_own_module(command: str) -> None:
    args = build_parser([command]).parse_args([command, *COMMANDS[command]])
    assert args.func.__module__ == f"attnscope.cli.{command}"
    assert args.func.__name__ == f"cmd_{command}"


def _written(tmp_path: Path, doc: dict) -> dict:
    """A document as the CLI writes it (JSON has no tuples and no NaN), read back."""
    p = tmp_path / "api.json"
    write_atomic(p, doc)
    return json.loads(p.read_text())


def test_analyze_writes_the_document_api_analyze_traces_returns(tmp_path: Path, capsys) -> None:
    traces = [H200 / "flex.json", H200 / "naive.json"]
    out = tmp_path / "cli.json"
    assert main(["analyze", *map(str, traces), "--jobs", "1", "--json", str(out)]) == 0
    doc, errors = api.analyze_traces(traces, jobs=1)
    assert errors == [] and doc is not None
    cli = json.loads(out.read_text())
    assert cli == _written(tmp_path, doc)
    assert [r["variant"] for r in cli["results"]] == ["flex", "naive"]
    assert [r["gpu_time_us"] for r in cli["results"]] == pytest.approx([_raw_gpu_us(t) for t in traces])
    assert "overall" in cli  # two traces: the ranks combined


def test_analyze_traces_returns_no_document_and_the_errors_when_nothing_could_be_read(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a trace"}')
    doc, errors = api.analyze_traces([bad, tmp_path / "missing.json"], jobs=1)
    assert doc is None and len(errors) == 2 and "missing.json" in errors[1]


def test_recommend_writes_the_document_api_recommend_returns(tmp_path: Path, capsys) -> None:
    out = tmp_path / "cli.json"
    assert main(["recommend", str(SWEEP), "--json", str(out)]) == 0
    cli = json.loads(out.read_text())
    assert cli == _written(tmp_path, api.recommend([str(SWEEP)]))
    lines = [json.loads(line) for line in SWEEP.read_text().splitlines() if line.strip()]
    assert cli["files"] == [str(SWEEP)] and cli["counts"]["rows"] == len(lines) == 48
    assert cli["counts"]["by_status"] == {"ok": sum(r["status"] == "ok" for r in lines)}


def test_recommend_says_what_the_loader_left_out(tmp_path: Path) -> None:
    p = tmp_path / "torn.jsonl"
    p.write_bytes(SWEEP.read_bytes() + b'{"variant": "na')
    heard: list[str] = []
    rec = api.recommend([p], on_note=heard.append)
    assert heard == [f"{p}: line 49 is not valid JSON (a torn write?): left out"] and rec["counts"]["rows"] == 48


def test_recommend_of_a_document_without_rows_says_so(tmp_path: Path, capsys) -> None:
    p = tmp_path / "empty.json"
    p.write_text(json.dumps({"schema_version": 1, "tool": "attnscope", "env": None, "results": []}))
    assert main(["recommend", str(p)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("rows by status: none, it holds no row)") and len(err.splitlines()) == 1


def test_recommend_of_rows_that_all_failed_is_nothing_measured_not_bad_input(tmp_path: Path, capsys) -> None:
    row = json.loads(SWEEP.read_text().splitlines()[0])
    p = tmp_path / "oom.jsonl"
    p.write_text(json.dumps({**row, "status": "oom", "gpu_time": None, "cpu_time": None}) + "\n")
    with pytest.raises(api.NothingMeasured, match="rows by status: oom 1"):
        api.recommend([p])
    assert main(["recommend", str(p)]) == 1
    assert "nothing measured to recommend from" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("a", "b", "threshold"),
    [
        (H200 / "flex.json", H200 / "flex_compiled.json", 5.0),
        (H200 / "flex_compiled.json", H200 / "flex.json", 5.0),
        (ROOT / "tests/data/h200/run.json", ROOT / "tests/data/cpu/run_all.json", None),
    ],
)
def test_diff_writes_the_document_api_diff_files_returns(tmp_path: Path, capsys, a: Path, b: Path, threshold) -> None:
    out = tmp_path / "cli.json"
    argv = ["diff", str(a), str(b), "--json", str(out)] + (["--threshold", str(threshold)] if threshold else [])
    rc = main(argv)
    d = api.diff_files(str(a), str(b), threshold_pct=threshold)
    cli = json.loads(out.read_text())
    assert cli == _written(tmp_path, d)
    assert cli["kind"] == "diff" and (cli["a"], cli["b"]) == (str(a), str(b))
    assert rc == (1 if d["regressions"] else 0)
    if "flex" in a.name:  # two traces: one variant each, its GPU time the raw sum of GPU event durations
        (v,) = cli["variants"]
        ga, gb = _raw_gpu_us(a), _raw_gpu_us(b)
        assert (v["gpu_time_us"]["a"], v["gpu_time_us"]["b"]) == pytest.approx((ga, gb))
        assert bool(cli["regressions"]) == (100 * (gb - ga) / ga > threshold)


def test_diff_files_refuses_metrics_it_does_not_know() -> None:
    with pytest.raises(ValueError, match="gpu and/or cpu"):
        api.diff_files(H200 / "flex.json", H200 / "naive.json", metrics=("wall",))


@pytest.mark.parametrize("command", ["report", "recommend", "diff"])
def test_a_file_of_no_known_kind_is_refused_in_one_line(tmp_path: Path, capsys, command: str) -> None:
    p = tmp_path / "notes.txt"
    p.write_text("a plain text file\nof two lines\n")
    argv = {
        "report": ["report", str(p), "-o", str(tmp_path / "r.html")],
        "recommend": ["recommend", str(p)],
        "diff": ["diff", str(p), str(H200 / "flex.json")],
    }[command]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"attnscope: error: {p}: not valid JSON")
    assert not (tmp_path / "r.html").exists()
