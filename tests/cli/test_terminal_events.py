"""Terminal events, in real processes: a documented environment variable with a bad value is refused like a bad
flag (one line, exit 2, before any work); a COLUMNS that cannot be a width counts as unset (COLUMNS=0 silenced
every command); a closed output pipe (`attnscope … | head`) ends quietly with 141 (128 + SIGPIPE), never 1 (a
regression's status) nor 70, and what was saved stays saved."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "tests" / "data" / "h200" / "b1h32s4096d128" / "flex.json"
TINY = ["--device", "cpu", "--batch", "1", "--heads", "1", "--seq", "16", "--head-dim", "8", "--dtype", "fp32"]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTNSCOPE_") and k != "COLUMNS"}
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def _cli(*argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "attnscope", *argv],
        cwd=ROOT,
        env=_env(**env),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_bad_tour_size_in_the_environment_is_refused_in_one_line(tmp_path):
    out = tmp_path / "tour.json"
    p = _cli("tour", "--auto", "--out", str(out), ATTNSCOPE_TOUR_SIZE="bogus")
    assert p.returncode == 2, p.stderr
    assert p.stderr.count("\n") == 1 and "ATTNSCOPE_TOUR_SIZE" in p.stderr and "internal error" not in p.stderr
    assert p.stdout == "" and not out.exists()  # refused before anything: no banner, no transcript


def test_a_variant_module_that_cannot_be_imported_is_refused_in_one_line():
    p = _cli("variants", "--device", "cpu", ATTNSCOPE_VARIANT_MODULES="no_such_module_here")
    assert p.returncode == 2, p.stderr
    assert p.stderr.count("\n") == 1 and "ATTNSCOPE_VARIANT_MODULES" in p.stderr and "no_such_module_here" in p.stderr


@pytest.mark.parametrize("columns", ["0", "-5", "abc", "99999999", ""])
def test_columns_that_cannot_be_a_width_count_as_unset(columns):
    p = _cli("analyze", str(TRACE), COLUMNS=columns)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert len(lines) > 20  # the whole summary, not silence
    assert max(len(line) for line in lines) <= 80  # no terminal here: rich's default width, as if unset


def _closed_pipe(argv: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    """argv with its stdout a pipe whose reader is gone before the first write."""
    p = subprocess.Popen(
        [sys.executable, "-m", "attnscope", *argv],
        cwd=ROOT,
        env=_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert p.stdout is not None and p.stderr is not None
    p.stdout.close()
    err = p.stderr.read()
    rc = p.wait(timeout=300)
    return subprocess.CompletedProcess(argv, rc, "", err)


@pytest.mark.parametrize(
    "argv",
    [
        ["analyze", str(TRACE), "--kernels"],
        ["recommend", str(ROOT / "docs" / "results" / "raw" / "h200_sweep.jsonl")],
        ["variants", "--device", "cpu"],
    ],
)
def test_a_closed_pipe_ends_quietly_with_141(argv):
    p = _closed_pipe(argv)
    assert p.returncode == 141, p.stderr
    assert p.stderr == ""  # no traceback, no "Exception ignored", no internal error


@pytest.mark.slow
def test_a_run_into_a_closed_pipe_keeps_its_document(tmp_path):
    out = tmp_path / "run.json"
    p = _closed_pipe(["run", *TINY, "--variants", "naive", "--budget", "0.01", "--no-peak", "--json", str(out)])
    assert p.returncode == 141, p.stderr
    assert "internal error" not in p.stderr and "Traceback" not in p.stderr
    assert [r["variant"] for r in json.loads(out.read_text())["results"]] == ["naive"]
