"""`attnscope sweep --resume` knows its settings: <out>.settings.json records budget, flush-l2, torch and the
device; a resume with other settings is refused (exit 2, naming what differs) unless --resume --force."""

from __future__ import annotations

import json

import pytest
import torch

from attnscope.cli.main import main
from attnscope.execute.store import Store

TINY = ["--device", "cpu", "--batch", "1", "--heads", "1", "--head-dim", "16", "--dtype", "fp32"]
BASE = [*TINY, "--no-peak", "--quiet", "--variants", "naive", "--executor", "inline"]


def _sweep(tmp_path, *extra: str) -> int:
    return main(["sweep", *BASE, "--out", str(tmp_path / "s.jsonl"), *extra])


@pytest.mark.slow
def test_resume_refuses_other_settings_unless_forced(tmp_path, capsys):
    out = tmp_path / "s.jsonl"
    assert _sweep(tmp_path, "--seq", "16", "--budget", "0.01") == 0
    recorded = json.loads((tmp_path / "s.jsonl.settings.json").read_text())
    assert recorded == {"budget_s": 0.01, "flush_l2": False, "torch": torch.__version__, "device": "cpu"}
    capsys.readouterr()

    # another budget: refused, nothing measured, the record unchanged
    assert _sweep(tmp_path, "--seq", "16,32", "--budget", "0.02", "--resume") == 2
    err = capsys.readouterr().err
    assert "--budget 0.01 → 0.02" in err and "--resume --force" in err and "flush" not in err
    assert len(Store(out).rows()) == 1
    # two settings differ: both named
    assert _sweep(tmp_path, "--seq", "16,32", "--budget", "0.02", "--flush-l2", "--resume") == 2
    err = capsys.readouterr().err
    assert "--budget 0.01 → 0.02" in err and "--flush-l2 False → True" in err

    # forced: the missing case is measured; the record keeps the first run's settings
    assert _sweep(tmp_path, "--seq", "16,32", "--budget", "0.02", "--resume", "--force") == 0
    assert sorted(r["case"]["seq_q"] for r in Store(out).rows()) == [16, 32]
    assert json.loads((tmp_path / "s.jsonl.settings.json").read_text()) == recorded

    # the same settings: resumes (nothing missing), no --force needed
    assert _sweep(tmp_path, "--seq", "16,32", "--budget", "0.01", "--resume") == 0
    assert len(Store(out).rows()) == 2


def test_force_without_resume_is_refused(tmp_path, capsys):
    assert _sweep(tmp_path, "--seq", "16", "--force") == 2
    assert "--force is for --resume" in capsys.readouterr().err
    assert not (tmp_path / "s.jsonl").exists()


def test_a_sweep_written_before_settings_were_recorded_resumes(tmp_path, capsys):
    """No settings file beside old rows: nothing to compare with; the resume records the settings it runs with."""
    row = {"variant": "naive", "status": "error", "reason": "x", "mode": "fwd", "case": {"batch": 1, "heads": 1}}
    (tmp_path / "s.jsonl").write_text(json.dumps(row) + "\n")
    assert _sweep(tmp_path, "--seq", "16", "--budget", "0.01", "--resume") == 0
    assert json.loads((tmp_path / "s.jsonl.settings.json").read_text())["budget_s"] == 0.01


def test_an_unreadable_settings_file_is_a_clear_error(tmp_path, capsys):
    row = {"variant": "naive", "status": "error", "reason": "x", "mode": "fwd", "case": {"batch": 1, "heads": 1}}
    (tmp_path / "s.jsonl").write_text(json.dumps(row) + "\n")
    (tmp_path / "s.jsonl.settings.json").write_text("{not json")
    assert _sweep(tmp_path, "--seq", "16", "--resume") == 2
    assert "unreadable settings" in capsys.readouterr().err


def test_an_l2_flush_asked_on_a_cpu_is_said_under_the_sweeps_header(tmp_path):
    from attnscope.cli.main import build_parser
    from attnscope.cli.sweep import check

    argv = ["sweep", *BASE, "--seq", "16", "--out", str(tmp_path / "s.jsonl")]
    assert not [n for n in check(build_parser(argv).parse_args(argv)).notes if "flush" in n]
    notes = check(build_parser([*argv, "--flush-l2"]).parse_args([*argv, "--flush-l2"])).notes
    assert [n for n in notes if "--flush-l2" in n and "on a CPU it has no effect" in n]
