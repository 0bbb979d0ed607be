"""Signals from the first instant: the console script installs its SIGINT, SIGTERM and SIGHUP handlers before any
import that takes time, so a signal at any moment ends with the signal's status (130, 143, 129) and one line that
names only files that exist; and no temporary folder of the workers survives any way out (a signal, an exception).

Real subprocesses: each test starts ``python -m attnscope`` and signals it; when the handlers are in place is read
from the kernel (``/proc/PID/status``, the caught-signal mask), not guessed from a sleep.
"""

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
STATUS = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}
SIGNALS = list(STATUS)

linux = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc/PID/status (Linux)")


def _default_signals() -> None:
    """In the child: the stopping signals at their defaults, whatever this test run inherited (``nohup`` ignores
    SIGHUP, a background job SIGINT, and an ignored signal stays ignored across exec: the command keeps it so)."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def _start(tmp_path: Path, *argv: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), ATTNSCOPE_VARIANT_MODULES="tests.variants_for_tests")
    env["TMPDIR"] = str(tmp_path / "tmp")  # every temporary folder the command makes, where the test can see it
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return subprocess.Popen(
        [sys.executable, "-m", "attnscope", *argv],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_signals,
    )


def _caught(pid: int) -> int:
    """The mask of signals the process has a handler for (SigCgt), 0 once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("SigCgt:"):
                return int(line.split()[1], 16)
    except OSError:
        pass
    return 0


def _torch_loaded(pid: int) -> bool:
    try:
        return "libtorch" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def _wait_for_handlers(p: subprocess.Popen[str]) -> tuple[float, bool]:
    """(seconds until SIGTERM and SIGHUP are caught, whether torch was loaded by then)."""
    want = (1 << (signal.SIGTERM - 1)) | (1 << (signal.SIGHUP - 1))
    t0 = time.monotonic()
    while time.monotonic() - t0 < 60:
        if _caught(p.pid) & want == want:
            return time.monotonic() - t0, _torch_loaded(p.pid)
        time.sleep(0.002)
    raise AssertionError("the handlers were never installed")


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@linux
@pytest.mark.parametrize("sig", SIGNALS, ids=[s.name for s in SIGNALS])
def test_a_signal_at_the_first_instant_says_nothing_was_measured(tmp_path, sig):
    """Handlers are in place before torch is loaded; a signal right then ends in one line and the signal's status."""
    p = _start(tmp_path, "run", *TINY, "--variants", "naive", "--budget", "0.01", "--no-peak", "--json", "r.json")
    _, torch_before = _wait_for_handlers(p)
    assert not torch_before, "the handlers came after torch was imported: a signal during the import said nothing"
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode == STATUS[sig], err
    line = _one_line(err)
    assert f"interrupted ({sig.name})" in line and "nothing measured yet" in line
    assert not (tmp_path / "r.json").exists()  # and no file is named that does not exist
    assert not list((tmp_path / "tmp").iterdir())


@linux
@pytest.mark.parametrize("command", ["sweep", "model", "analyze"])
def test_a_signal_while_the_command_line_is_read_ends_in_one_line(tmp_path, command):
    argv = {"sweep": ["--device", "cpu", "--out", "s.jsonl"], "model": ["--device", "cpu"], "analyze": ["x.json"]}
    p = _start(tmp_path, command, *argv[command])
    _wait_for_handlers(p)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 143, err
    line = _one_line(err)
    said = "nothing measured yet" if command != "analyze" else "stopped before anything was written"
    assert said in line
    assert not (tmp_path / "s.jsonl").exists() and not list((tmp_path / "tmp").iterdir())


@pytest.mark.slow
@pytest.mark.parametrize("sig", SIGNALS, ids=[s.name for s in SIGNALS])
def test_a_signal_mid_run_saves_names_the_file_and_leaves_no_workers_folder(tmp_path, sig):
    """naive is measured and saved; t_hang hangs in its worker; the signal stops the run (SIGHUP as SIGTERM)."""
    out = tmp_path / "run.json"
    p = _start(
        tmp_path,
        "run",
        *TINY,
        "--variants",
        "naive,t_hang",
        "--budget",
        "0.01",
        "--no-peak",
        "--executor",
        "process",
        "--json",
        str(out),
    )
    t0 = time.monotonic()
    while not out.exists() and time.monotonic() - t0 < 120:
        time.sleep(0.1)
    assert out.exists(), "naive's row was never saved"
    workers = list((tmp_path / "tmp").glob("attnscope-workers-*"))
    assert workers, "the process executor's folder is where the test looks"
    time.sleep(0.3)
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode == STATUS[sig], err
    line = _one_line(err)
    assert f"interrupted ({sig.name})" in line and f"saved in {out}" in line
    assert [r["variant"] for r in json.loads(out.read_text())["results"]] == ["naive"]
    assert not list((tmp_path / "tmp").iterdir()), "a temporary folder survived the signal"


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM], ids=["SIGHUP", "SIGTERM"])
def test_a_signal_mid_sweep_names_the_rows_and_how_to_resume(tmp_path, sig):
    out = tmp_path / "s.jsonl"
    p = _start(
        tmp_path, "sweep", "--device", "cpu", "--seq", "16", "--heads", "1", "--head-dim", "8", "--dtype", "fp32",
        "--variants", "naive,t_hang", "--budget", "0.01", "--no-peak", "--out", str(out), "--quiet",
    )  # fmt: skip
    t0 = time.monotonic()
    while not (out.exists() and out.read_text().strip()) and time.monotonic() - t0 < 120:
        time.sleep(0.1)
    time.sleep(0.3)
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode == STATUS[sig], err
    line = _one_line(err)
    assert f"1 row(s) saved in {out}" in line and "--resume" in line
    assert not list((tmp_path / "tmp").iterdir()), "a temporary folder survived the signal"


@pytest.mark.slow
def test_an_exception_in_model_leaves_no_workers_folder(tmp_path, monkeypatch, capsys):
    """A failure after the workers started (here: the annotation of the saved rows raises) still stops them and
    removes their folder; the command ends in its one internal-error line (exit 70: a bug, made here on purpose)."""
    pytest.importorskip("transformers")
    import tempfile

    from attnscope.analysis.recommend import model_points as recommend_model
    from attnscope.cli.main import main

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))

    def broken(rows):
        raise RuntimeError("planted")

    monkeypatch.setattr(recommend_model, "annotate_rows", broken)
    argv = ["model", "--device", "cpu", "--impl", "eager", "--mode", "prefill", "--seq", "16", "--budget", "0.01"]
    assert main([*argv, "--json", str(tmp_path / "m.json")]) == 70
    assert "planted" in capsys.readouterr().err
    assert not list(tmp.iterdir()), "the workers' folder survived the exception"
