"""Where traces are written: exported into a private folder (Kineto writes ``<path>.tmp`` first, following links),
read there, then moved to ``--trace-dir``; without ``--trace-dir`` nothing is left in the temporary folder."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from attnscope.cli.main import main

pytestmark = pytest.mark.slow
RUN = ["run", "--device", "cpu", "--no-peak", "--seq", "16", "--variants", "naive", "--budget", "0.02"]
MODEL = ["model", "--device", "cpu", "--seq", "16", "--budget", "0.01", "--mode", "prefill", "--impl", "sdpa"]


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The process's temporary folder, emptied for the test (inline executor: the work runs in this process)."""
    t = tmp_path / "tmp"
    t.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(t))
    monkeypatch.chdir(tmp_path)
    return t


def _ours(folder: Path) -> list[str]:
    """What attnscope left in the temporary folder (torch's own caches, e.g. torchinductor_*, are not ours)."""
    return [p.name for p in folder.iterdir() if p.name.startswith("attnscope")]


def test_run_trace_dir_with_links_planted_at_the_trace_and_at_kinetos_tmp(private_tmp, tmp_path, capsys):
    victims = [tmp_path / "victim1", tmp_path / "victim2"]
    for v in victims:
        v.write_text("precious\n")
    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / "naive.json.tmp").symlink_to(victims[0])  # Kineto's own temporary name
    (traces / "naive.json").symlink_to(victims[1])
    assert main([*RUN, "--trace-dir", str(traces), "--json", "r.json"]) == 0
    assert [v.read_text() for v in victims] == ["precious\n"] * 2
    kept = traces / "naive.json"
    assert not kept.is_symlink() and "traceEvents" in json.loads(kept.read_text())
    row = json.loads(Path("r.json").read_text())["results"][0]
    assert row["trace_path"] == str(kept)
    assert _ours(private_tmp) == []  # the private export folder is gone


def test_model_without_trace_dir_leaves_no_trace_anywhere(private_tmp, capsys):
    pytest.importorskip("transformers")
    assert main([*MODEL, "--executor", "inline", "--json", "m.json"]) == 0
    assert _ours(private_tmp) == []  # no shared attnscope_model/ folder, no private folder left
    row = json.loads(Path("m.json").read_text())["results"][0]
    assert row["status"] == "ok" and row["trace_path"] is None


def test_model_trace_dir_keeps_the_trace_and_never_writes_through_a_link(private_tmp, tmp_path, capsys):
    pytest.importorskip("transformers")
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    traces = tmp_path / "mt"
    traces.mkdir()
    (traces / "model_sdpa_prefill.json.tmp").symlink_to(victim)
    assert main([*MODEL, "--executor", "inline", "--trace-dir", str(traces), "--json", "m.json"]) == 0
    assert victim.read_text() == "precious\n"
    row = json.loads(Path("m.json").read_text())["results"][0]
    assert row["trace_path"] == str(traces / "model_sdpa_prefill.json")
    assert "traceEvents" in json.loads(Path(row["trace_path"]).read_text())
    assert _ours(private_tmp) == []


def test_run_trace_not_kept_is_in_the_documents_unwritten_and_said_after_the_study(private_tmp, tmp_path, capsys):
    """A full disk at the trace's move: the row is measured and written; the library's document says what was not
    kept under ``trace_dir``, and the command prints the study, then that line naming --trace-dir, exit 74."""
    import errno

    from attnscope import api
    from attnscope.api.running import RunRequest
    from attnscope.cli.common import EXIT_WRITE
    from attnscope.execute import worker

    def full(src: Path, dest: object, name: str | None = None) -> Path:
        raise OSError(errno.ENOSPC, "No space left on device")

    traces = tmp_path / "traces"
    traces.mkdir()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(worker, "keep_file", full)
        case = {"seq_q": 16}
        asked = {"variants": "naive", "trace_dir": str(traces), "timing_budget_s": 0.02, "measure_peak": False}
        doc = api.run_request(RunRequest(case=case, device="cpu", json="lib.json", **asked))
        why = f"1 trace(s) not kept in {traces}: no space left on device (ENOSPC)"
        assert doc.unwritten == {"trace_dir": why}
        assert doc["results"][0]["status"] == "ok" and Path("lib.json").is_file()  # the row and its file kept
        capsys.readouterr()
        assert main([*RUN, "--trace-dir", str(traces), "--json", "r.json"]) == EXIT_WRITE
    out, err = capsys.readouterr()
    assert "attnscope run" in out and "JSON written to r.json" in out  # the study first, and the file written
    assert err.strip() == f"attnscope: error: {why}"
    assert json.loads(Path("r.json").read_text())["results"][0]["status"] == "ok"
