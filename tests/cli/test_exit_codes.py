"""Each exit status of each command (docs/cli.md): 0 measured, 1 a regression / strict miss / nothing measured,
2 bad input.  130 and 143 (interrupted, after saving) are in test_signals.py; every --help names its statuses."""

from __future__ import annotations

import builtins
import copy
import json
from pathlib import Path

import pytest

from attnscope.cli.main import EXIT_CODES, main

DATA = Path(__file__).resolve().parents[1] / "data"
RUN_DOC = DATA / "h200" / "run.json"
SWEEP = DATA / "cpu" / "tiny_sweep.jsonl"
TRACE = next((DATA / "h200" / "b1h32s4096d128").iterdir())
TINY = ["--device", "cpu", "--batch", "1", "--heads", "1", "--seq", "16", "--head-dim", "8", "--dtype", "fp32"]
FAST = ["--budget", "0.01", "--no-peak"]
SKIPPED_HERE = "sdpa_cudnn,sdpa_efficient"  # no CPU kernel in torch: both rows are `skipped` on a CPU


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def _rc(argv: list[str]) -> int:
    return main(argv)


@pytest.mark.parametrize("cmd", sorted(EXIT_CODES))
def test_every_help_names_its_exit_statuses(capsys, cmd):
    assert main([cmd, "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "exit" in out and " 2 bad input" in out


# ------------------------------------------------------------------------------------------------ run / guess


def test_run_0_1_2(capsys):
    pytest.importorskip("torch")
    assert _rc(["run", *TINY, *FAST, "--variants", "naive"]) == 0
    assert _rc(["run", *TINY, *FAST, "--variants", SKIPPED_HERE]) == 1
    out = capsys.readouterr().out
    assert "nothing was measured" in out and "sdpa_cudnn skipped:" in " ".join(out.split())
    assert _rc(["run", *TINY, "--seq", "0"]) == 2


def test_run_strict_miss_is_1(tmp_path):
    pytest.importorskip("torch")
    guess = tmp_path / "g.toml"
    # naive computes Q·Kᵀ and P·V as separate matmuls: "1 op" is a clear miss
    guess.write_text('[[predict]]\nvariant = "naive"\nkernels = 1\n')
    argv = ["run", *TINY, *FAST, "--variants", "naive", "--guess", str(guess)]
    assert _rc(argv) == 0  # without --strict a miss is reported, not failed
    assert _rc([*argv, "--strict"]) == 1


def test_guess_0_1_2(monkeypatch):
    pytest.importorskip("torch")

    def no_answers(prompt: str) -> str:
        raise EOFError

    monkeypatch.setattr(builtins, "input", no_answers)
    assert _rc(["guess", *TINY, *FAST, "--variants", "naive"]) == 0
    assert _rc(["guess", *TINY, *FAST, "--variants", SKIPPED_HERE]) == 1
    assert _rc(["guess", *TINY, "--variants", "nope"]) == 2


# ------------------------------------------------------------------------------------------------ sweep


def test_sweep_0_1_2(tmp_path):
    pytest.importorskip("torch")
    grid = ["--device", "cpu", "--batch", "1", "--heads", "1", "--seq", "16", "--head-dim", "8", "--dtype", "fp32"]
    common = [*grid, "--executor", "inline", "--budget", "0.01", "--quiet"]
    assert _rc(["sweep", *common, "--variants", "naive", "--out", str(tmp_path / "a.jsonl")]) == 0
    assert _rc(["sweep", *common, "--variants", SKIPPED_HERE, "--out", str(tmp_path / "b.jsonl")]) == 1
    assert _rc(["sweep", *common, "--variants", "naive", "--timeout", "0", "--out", "c.jsonl"]) == 2


def test_sweep_an_empty_mask_is_named_as_such(capsys):
    # an empty --mask is not "--mask with --causal": the message names what is wrong with the flag given
    assert _rc(["sweep", "--device", "cpu", "--mask", "", "--out", "m.jsonl"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["attnscope: error: --mask '': an empty item between commas"]


# ------------------------------------------------------------------------------------------------ the readers


def test_recommend_0_1_2(tmp_path):
    assert _rc(["recommend", str(SWEEP)]) == 0
    rows = [json.loads(line) for line in SWEEP.read_text().splitlines() if line.strip()]
    failed = tmp_path / "failed.jsonl"
    failed.write_text("".join(json.dumps({**r, "status": "error", "reason": "boom"}) + "\n" for r in rows))
    assert _rc(["recommend", str(failed)]) == 1
    rec = tmp_path / "rec.json"
    assert _rc(["recommend", str(SWEEP), "--json", str(rec)]) == 0
    assert _rc(["recommend", str(rec)]) == 2  # a recommendation, not rows
    assert _rc(["recommend", str(tmp_path / "missing.jsonl")]) == 2


def test_diff_0_1_2(tmp_path):
    doc = json.loads(RUN_DOC.read_text())
    slower = copy.deepcopy(doc)
    for r in slower["results"]:
        for key in ("gpu_time_us", "cpu_time_us"):  # the medians a diff compares
            if r.get(key) is not None:
                r[key] *= 2  # every time doubled: +100%, past a 10% threshold
    b = tmp_path / "b.json"
    b.write_text(json.dumps(slower))
    assert _rc(["diff", str(RUN_DOC), str(RUN_DOC), "--threshold", "10"]) == 0
    assert _rc(["diff", str(RUN_DOC), str(b), "--threshold", "10"]) == 1
    assert _rc(["diff", str(RUN_DOC), str(b), "--metrics", "tpu"]) == 2


def test_analyze_0_2(tmp_path):
    assert _rc(["analyze", str(TRACE)]) == 0
    assert _rc(["analyze", str(tmp_path / "missing.json")]) == 2


def test_report_0_2(tmp_path):
    pytest.importorskip("plotly")
    assert _rc(["report", str(SWEEP), "-o", str(tmp_path / "s.html"), "--assets", str(tmp_path / "assets")]) == 0
    assert _rc(["report", str(tmp_path / "missing.json"), "-o", str(tmp_path / "x.html")]) == 2


def test_variants_0_2():
    pytest.importorskip("torch")
    assert _rc(["variants", "--device", "cpu"]) == 0
    assert _rc(["variants", "--device", "tpu"]) == 2


def test_the_top_level_help_says_what_the_tool_does_and_every_status(capsys):
    """`attnscope --help` opens with what the tool does (it opened with the module's developer note, 'Thin command
    line: parse → call → render') and names every status docs/cli.md lists, 74 (a full disk) included."""
    assert main(["--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "What attention implementations really do" in out and "parse → call → render" not in out
    for status in ("0 measured", "1 a regression", "2 bad input", "130/143/129", "141", "74 a file could not be"):
        assert status in out, status
