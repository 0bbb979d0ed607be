"""SIGTERM and SIGINT stop `attnscope run` after saving: the finished variants are in the --json file (written
atomically, marked partial), one line names it, and the exit status is the signal's (143, 130)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--device", "cpu", "--batch", "1", "--heads", "1", "--seq", "16", "--head-dim", "8", "--dtype", "fp32"]


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_saves_the_finished_variants_and_names_the_file(tmp_path, sig, status):
    out = tmp_path / "run.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT), ATTNSCOPE_VARIANT_MODULES="tests.variants_for_tests")
    argv = [*TINY, "--variants", "naive,t_hang", "--budget", "0.01", "--no-peak", "--json", str(out)]
    p = subprocess.Popen(
        [sys.executable, "-m", "attnscope.cli.main", "run", *argv],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # the signals at their defaults, whatever this test run inherited (nohup ignores SIGHUP, a background job
        # SIGINT; an ignored signal stays ignored across exec)
        preexec_fn=lambda: [signal.signal(s, signal.SIG_DFL) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)],
    )
    t0 = time.monotonic()
    while not out.exists() and time.monotonic() - t0 < 120:  # naive is saved; t_hang sleeps in its prepare
        time.sleep(0.1)
    assert out.exists(), "naive's row was never saved"
    time.sleep(0.5)
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode == status, err
    assert f"saved in {out}" in err and signal.Signals(sig).name in err
    assert err.count("\n") == 1  # one line, no traceback
    doc = json.loads(out.read_text())
    assert doc["partial"] is True and [r["variant"] for r in doc["results"]] == ["naive"]
    assert not list(tmp_path.glob(".run.json.*"))  # no temporary file left beside it
