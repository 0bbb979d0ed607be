"""A model grid killed with kill -9, then `--resume`: finished rows are kept as written, never measured again;
SIGTERM saves and names the file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from attnscope.cli.main import main

GRID = ["model", "--config", "tiny", "--impl", "eager,sdpa", "--mode", "prefill,train", "--seq", "16,24"]


def _lines(p: Path) -> list[dict]:
    if not p.exists():
        return []
    return [json.loads(x) for x in p.read_text().splitlines() if x.strip().endswith("}")]


def _start(out: Path, budget: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    argv = [sys.executable, "-m", "attnscope.cli.main", *GRID, "--budget", budget, "--out", str(out)]
    return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _wait_rows(proc: subprocess.Popen[bytes], out: Path, n: int, limit_s: float = 240) -> None:
    t0 = time.monotonic()
    while len(_lines(out)) < n:
        assert proc.poll() is None, "finished before it could be stopped"
        assert time.monotonic() - t0 < limit_s
        time.sleep(0.05)


def test_kill_9_then_resume_measures_only_the_rest(tmp_path: Path):
    out = tmp_path / "model.jsonl"
    proc = _start(out, "0.5")
    _wait_rows(proc, out, 1)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = _lines(out)
    assert 1 <= len(before) < 8
    # the rows there were timed with --budget 0.5: a resume with 0.01 is refused, and measures nothing
    assert main([*GRID, "--budget", "0.01", "--out", str(out), "--resume"]) == 2
    assert _lines(out) == before
    assert main([*GRID, "--budget", "0.01", "--out", str(out), "--resume", "--force"]) == 0
    after = _lines(out)
    keys = [(r["impl"], r["mode"], r["batch"], r["seq"]) for r in after]
    expected = {(i, m, 1, s) for i in ("eager", "sdpa") for m in ("prefill", "train") for s in (16, 24)}
    assert sorted(keys) == sorted(expected)  # every row once: none measured twice
    assert after[: len(before)] == before  # the rows written before the kill are untouched
    assert all(r["status"] == "ok" for r in after)
    # a second --resume has nothing left to measure
    assert main([*GRID, "--budget", "0.01", "--out", str(out), "--resume", "--force"]) == 0
    assert _lines(out) == after


def test_sigterm_saves_and_names_the_file(tmp_path: Path):
    out = tmp_path / "model.jsonl"
    proc = _start(out, "0.5")
    _wait_rows(proc, out, 1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143
    text = err.decode()
    n = len(_lines(out))
    assert f"{n} row(s) saved in {out}" in text and "--resume" in text


def test_a_row_whose_worker_is_stopped_is_a_row(tmp_path: Path, capsys):
    out = tmp_path / "model.jsonl"
    argv = ["model", "--config", "tiny", "--impl", "eager", "--mode", "prefill", "--seq", "16", "--budget", "0.01"]
    # a worker process cannot build and time a model in 10 ms: it is stopped, and the row says so
    assert main([*argv, "--timeout", "0.01", "--out", str(out)]) == 1  # nothing measured
    [row] = _lines(out)
    assert row["status"] == "timeout"
    assert row["reason"] == "no result within the timeout of 0.01 s: the worker was stopped"  # no flag: library words
    assert row["variant"] == "eager" and row["case"]["mode"] == "prefill" and row["case"]["seq"] == 16
    assert "nothing was measured" in capsys.readouterr().err


@pytest.mark.slow
def test_ray_executor_measures_model_rows(tmp_path: Path):
    pytest.importorskip("ray")
    out = tmp_path / "model.jsonl"
    argv = ["model", "--config", "tiny", "--impl", "sdpa", "--mode", "prefill", "--seq", "16", "--budget", "0.01"]
    assert main([*argv, "--executor", "ray", "--out", str(out)]) == 0
    [row] = _lines(out)
    assert row["status"] == "ok" and row["variant"] == "sdpa" and row["median_us"] == row["step_time"]["median_us"]


def test_a_resume_with_other_settings_is_refused_in_one_line_unless_forced(tmp_path: Path, capsys):
    """The settings check of a sweep, for a model's store: rows timed with another budget never mix silently."""
    out = tmp_path / "model.jsonl"
    one = ["model", "--config", "tiny", "--impl", "eager", "--mode", "prefill", "--seq", "16", "--executor", "inline"]
    assert main([*one, "--budget", "0.01", "--out", str(out)]) == 0
    settings = json.loads((tmp_path / "model.jsonl.settings.json").read_text())
    assert settings["budget_s"] == 0.01 and settings["transformers"] and settings["torch"]
    rows = _lines(out)
    capsys.readouterr()
    more = [*one, "--mode", "prefill,train", "--out", str(out), "--resume"]
    assert main([*more, "--budget", "0.02"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--budget 0.01 → 0.02" in err and "--resume --force" in err, err
    assert _lines(out) == rows  # refused before any work
    assert main([*more, "--budget", "0.01"]) == 0  # the same settings: resumed
    assert [(r["mode"], r["status"]) for r in _lines(out)] == [("prefill", "ok"), ("train", "ok")]


def test_force_without_resume_is_refused(tmp_path: Path, capsys):
    argv = ["model", "--config", "tiny", "--seq", "16", "--budget", "0.01", "--out", str(tmp_path / "m.jsonl")]
    assert main([*argv, "--force"]) == 2
    assert "--force is for --resume" in capsys.readouterr().err
