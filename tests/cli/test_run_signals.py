"""SIGTERM and SIGINT during `attnscope run`: the variants finished so far are in the --json file (written
atomically, marked partial), the one line on stderr names that file, and the exit status is the signal's
(143 for SIGTERM, 130 for SIGINT)."""

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
VARIANTS = "naive,naive_inplace,sdpa_math,sdpa_flash"


def _start(out: Path) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-c", "import sys; from attnscope.cli.main import entry; entry()"]
    args = ["run", "--seq", "32", "--variants", VARIANTS, "--budget", "2", "--json", str(out)]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([*cmd, *args], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _wait_for(proc: subprocess.Popen[bytes], out: Path) -> None:
    deadline = time.monotonic() + 240
    while not out.exists():
        assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
        assert time.monotonic() < deadline, "no variant finished in time"
        time.sleep(0.1)


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_saves_the_finished_variants_and_names_the_file(tmp_path, sig, status):
    out = tmp_path / "run.json"
    proc = _start(out)
    _wait_for(proc, out)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    text = err.decode()
    assert proc.returncode == status, text[-2000:]
    doc = json.loads(out.read_text())  # whole JSON: written beside and renamed, never half a file
    rows = doc["results"]
    assert 1 <= len(rows) < len(VARIANTS.split(","))
    assert doc.get("partial") is True
    last = text.strip().splitlines()[-1]
    assert (
        last == f"attnscope: interrupted ({sig.name}): {len(rows)} finished variant(s) saved in {out} (marked partial)"
    )
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]  # no temporary file left behind
