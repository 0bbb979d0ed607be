"""The output guard and the store's lock, through the commands: no output may be one of the inputs (by name, through
a symbolic link or a hard link), no two outputs of one command may be one file, and a store being written by one
attnscope is refused to a second.  Each is one line, exit 2, before any work, and the files are left as they were."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from attnscope.cli.main import main
from attnscope.core.files import lock_store

H200 = Path(__file__).resolve().parents[1] / "data" / "h200"
RUN = ["run", "--device", "cpu", "--no-peak", "--seq", "16", "--variants", "naive"]


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    t0 = time.monotonic()
    rc = main(argv)
    err = capsys.readouterr().err.strip()
    assert rc == 2, (rc, err)
    assert err.startswith("attnscope: error:") and "\n" not in err, err
    assert time.monotonic() - t0 < 20  # refused before anything was measured
    return err


@pytest.fixture
def study(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A real run document (the H200's) in the working folder, as out/study.json."""
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "study.json").write_bytes((H200 / "run.json").read_bytes())
    return out / "study.json"


def test_report_onto_its_own_input_is_refused_and_the_input_kept(study, capsys):
    before = study.read_bytes()
    err = _refused(capsys, ["report", "out/study.json", "-o", "out/study.json"])
    assert "-o out/study.json is an input" in err
    assert study.read_bytes() == before  # the JSON is still the JSON, not an HTML page


@pytest.mark.parametrize("how", ["symlink", "hardlink", "dotted"])
def test_another_name_of_the_input_is_the_input(study, capsys, how):
    before = study.read_bytes()
    if how == "symlink":
        Path("alias.html").symlink_to(study)
        out = "alias.html"
    elif how == "hardlink":
        os.link(study, "alias.html")
        out = "alias.html"
    else:
        out = "out/../out/./study.json"
    err = _refused(capsys, ["report", "out/study.json", "-o", out])
    assert "writing it would replace what is read" in err
    assert study.read_bytes() == before


def test_run_json_and_html_to_one_file_is_refused_before_any_work(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    err = _refused(capsys, [*RUN, "--json", "same.json", "--html", "same.json"])
    assert "--json and --html name the same file (same.json)" in err
    assert not Path("same.json").exists()


@pytest.mark.parametrize(
    ("argv", "expect"),
    [
        (["diff", "out/study.json", "out/study.json", "--json", "out/study.json"], "--json out/study.json is an input"),
        (["recommend", "out/study.json", "--json", "out/study.json"], "--json out/study.json is an input"),
        (["analyze", "out/study.json", "--json", "out/study.json"], "--json out/study.json is an input"),
        (["analyze", "out/study.json", "--html", "out/study.json"], "--html out/study.json is an input"),
        ([*RUN, "--guess", "out/study.json", "--json", "out/study.json"], "the --guess file"),
        ([*RUN, "--json", "o.json", "--html", "./o.json"], "--json and --html name the same file"),
        (["guess", *RUN[1:], "--json", "o.json", "--save", "o.json"], "--json and --save name the same file"),
        (["sweep", "--seq", "16", "--out", "s.jsonl", "--json", "s.jsonl"], "--out and --json name the same file"),
        (["sweep", "--seq", "16", "--out", "s.jsonl", "--html", "s.jsonl"], "--out and --html name the same file"),
        (["sweep", "--seq", "16", "--out", "s", "--json", "s.settings.json"], "--out's settings and --json"),
        (["sweep", "--seq", "16", "--json", "r.json", "--html", "r.json"], "--json and --html name the same file"),
        (["model", "--seq", "16", "--out", "m.jsonl", "--json", "m.jsonl"], "--out and --json name the same file"),
        (["model", "--seq", "16", "--json", "m.json", "--html", "m.json"], "--json and --html name the same file"),
        (["model", "--config", "out/study.json", "--json", "out/study.json"], "the --config file"),
        (["tour", "--out", "t.json", "--html", "t.json"], "--out and --html name the same file"),
        (["tour", "--answers", "out/study.json", "--out", "out/study.json", "--resume"], "the --answers file"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else None,
)
def test_every_writing_command_guards_its_outputs(study, capsys, argv, expect):
    before = study.read_bytes()
    err = _refused(capsys, argv)
    assert expect in err
    assert study.read_bytes() == before
    assert not any(Path(n).exists() for n in ("same.json", "o.json", "s.jsonl", "s", "m.jsonl", "m.json", "t.json"))


def test_user_code_is_an_input(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("mods.py").write_text("def causal(b, h, q, k):\n    return q >= k\n")
    err = _refused(capsys, [*RUN, "--mask-mod", "mods.py:causal", "--json", "mods.py"])
    assert "--json mods.py is the --mask-mod file" in err
    assert Path("mods.py").read_text().startswith("def causal")


# ------------------------------------------------------------------------------------------------ the store's lock

SWEEP = ["sweep", "--device", "cpu", "--seq", "16", "--variants", "naive", "--no-peak", "--executor", "inline"]


def test_a_second_sweep_writer_is_refused_while_another_process_holds_the_store(tmp_path):
    """Two real processes: a holder of the lock (as a running sweep holds it) and `attnscope sweep` on the store."""
    store = tmp_path / "same.jsonl"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from attnscope.core.files import lock_store; "
            f"lock = lock_store({str(store)!r}, '--out'); print('held', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        t0 = time.monotonic()
        p = subprocess.run(
            [sys.executable, "-m", "attnscope", *SWEEP, "--out", str(store)],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
            timeout=120,
        )
    finally:
        holder.kill()
        holder.wait()
    assert p.returncode == 2, (p.returncode, p.stderr)
    err = p.stderr.strip()
    assert "\n" not in err and "another attnscope is writing to it now" in err, err
    assert "attnscope sweep:" not in p.stdout  # refused before the plan was announced
    assert store.read_bytes() == b""  # the holder's (empty) store: nothing appended by the refused writer
    assert time.monotonic() - t0 < 60


def test_a_second_model_writer_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with lock_store("m.jsonl", "--out"):  # the lock is per open file: this process's own second open conflicts
        err = _refused(capsys, ["model", "--seq", "16", "--budget", "0.01", "--out", "m.jsonl"])
    assert "--out m.jsonl: another attnscope is writing to it now" in err


def test_the_lock_is_released_and_a_refused_command_leaves_no_store(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _refused(capsys, [*SWEEP, "--out", "s.jsonl", "--variants", "nope"])  # refused after the lock was taken
    assert not Path("s.jsonl").exists()
    with lock_store("s.jsonl", "--out"):  # released: it can be taken again
        pass


@pytest.mark.parametrize("command", [SWEEP, ["model", "--seq", "16", "--budget", "0.01"]], ids=["sweep", "model"])
def test_a_store_that_is_a_link_is_refused_and_its_target_untouched(tmp_path, monkeypatch, capsys, command):
    monkeypatch.chdir(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    Path("rows.jsonl").symlink_to(victim)
    err = _refused(capsys, [*command, "--out", "rows.jsonl", "--resume"])
    assert "--out rows.jsonl: is a symbolic link" in err
    assert victim.read_text() == "precious\n"


SWEEP_T = ["sweep", "--device", "cpu", "--seq", "16", "--variants", "naive", "--trace-dir", "t"]
MODEL_T = ["model", "--device", "cpu", "--seq", "16", "--impl", "sdpa", "--mode", "prefill", "--trace-dir", "t"]


@pytest.mark.parametrize(
    ("argv", "trace"),
    [
        ([*RUN, "--trace-dir", "t", "--json", "t/naive.json"], "naive.json"),
        ([*RUN, "--trace-dir", "t", "--html", "./t/naive.json"], "naive.json"),
        (
            [*SWEEP_T, "--json", "t/naive-b1-h8-s16-d64-bf16-causal-fwd.json"],
            "naive-b1-h8-s16-d64-bf16-causal-fwd.json",
        ),
        (
            [*MODEL_T, "--json", "t/model_sdpa_prefill.json"],
            "model_sdpa_prefill.json",
        ),
    ],
    ids=["run-json", "run-html", "sweep", "model"],
)
def test_an_output_where_a_kept_trace_goes_is_refused(tmp_path, monkeypatch, capsys, argv, trace):
    """The trace file names are the commands' own (variant, or the case's fields, or impl and mode): an output
    named so inside --trace-dir would be replaced by a trace, or replace it."""
    monkeypatch.chdir(tmp_path)
    err = _refused(capsys, argv)
    assert f"is where --trace-dir keeps the trace {trace}" in err
    assert not Path("t").exists() or list(Path("t").iterdir()) == []
