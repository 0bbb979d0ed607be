"""A full disk under --json, --html, --trace-dir and the stores: the measurement is kept (printed, and saved where
there is room), the results come first, the cause is named (``no space left on device (ENOSPC)``), the exit status
is 74, and no temporary file is left.

Two disks: a real 64 KiB tmpfs where this process may mount one (root with CAP_SYS_ADMIN), and everywhere a folder
whose writes fail as a full disk's do: ``fsync`` of a file in it raises ENOSPC, and a file moved into it from
another folder is copied (as across file systems), so it goes through the same failing write."""

from __future__ import annotations

import contextlib
import errno
import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from attnscope.cli.main import main

pytestmark = pytest.mark.slow
ENOSPC = "no space left on device (ENOSPC)"
RUN = ["run", "--device", "cpu", "--no-peak", "--seq", "16", "--budget", "0.02"]
H200 = Path(__file__).resolve().parents[1] / "data" / "h200"


REAL_FSYNC, REAL_REPLACE = os.fsync, os.replace


def _fake_full(folder: Path, monkeypatch: pytest.MonkeyPatch, only: str = "") -> None:
    """Writes into ``folder`` fail as on a full disk (``only``: those of files whose name ends so)."""
    real_fsync, real_replace = REAL_FSYNC, REAL_REPLACE
    inside = str(folder.resolve()) + os.sep

    def fsync(fd: int) -> None:
        name = os.readlink(f"/proc/self/fd/{fd}")
        if name.startswith(inside) and name.endswith(only):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    def replace(src: str | Path, dst: str | Path) -> None:
        if str(Path(dst).resolve()).startswith(inside) and not str(Path(src).resolve()).startswith(inside):
            raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))  # another file system: copied, then renamed
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)


@contextlib.contextmanager
def _tmpfs(folder: Path) -> Iterator[bool]:
    """A 64 KiB tmpfs at ``folder`` (True), or False where none can be mounted here."""
    folder.mkdir()
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        yield False
        return
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)], capture_output=True)
    if p.returncode != 0:
        yield False
        return
    try:
        yield True
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.fixture(params=["tmpfs", "failing-writes"])
def full(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on a full disk; the test's working folder is beside it."""
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "full"
    with _tmpfs(folder) as mounted:
        if request.param == "tmpfs":
            if not mounted:
                pytest.skip("no tmpfs can be mounted here (needs root with CAP_SYS_ADMIN)")
            _fill(folder / "filler", 64 << 10)  # every page taken
        else:
            _fake_full(folder, monkeypatch)
        yield folder


def _fill(path: Path, size: int) -> None:
    """``size`` bytes, or as many as fit."""
    with contextlib.suppress(OSError), open(path, "wb") as f:
        f.write(b"\0" * size)
        f.flush()


def _main(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    """main() with stdout and stderr into one stream, in the order they were written."""
    both = io.StringIO()
    monkeypatch.setattr(sys, "stdout", both)
    monkeypatch.setattr(sys, "stderr", both)
    monkeypatch.setenv("COLUMNS", "160")
    rc = main(argv)
    return rc, both.getvalue()


def _left(folder: Path) -> list[str]:
    """What is in the folder besides the filler: temporary files would show here."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.name != "filler")


def test_run_json_html_and_traces_on_a_full_disk(full, monkeypatch):
    pytest.importorskip("plotly")
    argv = [*RUN, "--variants", "naive", "--json", f"{full}/r.json", "--html", f"{full}/r.html"]
    rc, out = _main([*argv, "--trace-dir", f"{full}/traces"], monkeypatch)
    assert rc == 74, out
    table = out.index("naive")
    errors = [line for line in out.splitlines() if line.startswith("attnscope: error:")]
    assert len(errors) == 3, out
    assert all(ENOSPC in e for e in errors)
    assert any("r.json: not written" in e for e in errors) and any("r.html: not written" in e for e in errors)
    assert any("1 trace(s) not kept in" in e for e in errors)
    assert table < out.index("attnscope: error:")  # the results first
    assert "JSON written to" not in out and "HTML report written to" not in out
    # the measurement itself: a row with a time on screen
    row = next(line for line in out.splitlines() if line.strip("│ ").startswith("naive"))
    assert " ok " in row
    assert all(n in ("traces",) for n in _left(full)), _left(full)  # no temporary file, no half file


def test_run_json_on_a_full_disk_keeps_the_page_written_elsewhere(full, monkeypatch, tmp_path):
    pytest.importorskip("plotly")
    rc, out = _main([*RUN, "--variants", "naive", "--json", f"{full}/r.json", "--html", "r.html"], monkeypatch)
    assert rc == 74
    assert "HTML report written to r.html" in out and Path("r.html").stat().st_size > 1000
    assert f"{full}/r.json: not written: {ENOSPC}" in out
    assert _left(full) == []


def test_report_and_analyze_on_a_full_disk(full, monkeypatch):
    pytest.importorskip("plotly")
    rc, out = _main(["report", str(H200 / "run.json"), "-o", f"{full}/p.html"], monkeypatch)
    assert rc == 74 and out.strip() == f"attnscope: error: {full}/p.html: not written: {ENOSPC}"
    rc, out = _main(["analyze", str(H200 / "naive.json"), "--json", f"{full}/a.json"], monkeypatch)
    assert rc == 74 and out.index("attnscope analyze") < out.index(f"{full}/a.json: not written: {ENOSPC}")
    assert _left(full) == []


def test_a_sweep_store_on_a_full_disk_says_what_is_saved_and_how_to_resume(full, monkeypatch):
    if (full / "filler").exists():  # one page left: the settings, written first, fit; a row does not
        (full / "filler").unlink()
        _fill(full / "filler", 60 << 10)
    else:
        _fake_full(full, monkeypatch, only=".jsonl")
    argv = ["sweep", "--device", "cpu", "--seq", "16", "--batch", "1", "--heads", "1", "--head-dim", "16"]
    argv += ["--variants", "naive", "--no-peak", "--budget", "0.01", "--executor", "inline", "--out", f"{full}/s.jsonl"]
    rc, out = _main(argv, monkeypatch)
    assert rc == 74, out
    line = next(x for x in out.splitlines() if x.startswith("attnscope: error:"))
    assert f"{full}/s.jsonl: not written: {ENOSPC}" in line and "resume with: attnscope sweep" in line
    assert "Traceback" not in out
    # the store holds no row (its line, if any of it was written, is torn and left out), and nothing else is left
    assert [n for n in _left(full) if n not in ("s.jsonl", "s.jsonl.settings.json")] == []


def test_sweep_json_and_html_on_a_full_disk(full, monkeypatch):
    pytest.importorskip("plotly")
    argv = ["sweep", "--device", "cpu", "--seq", "16", "--batch", "1", "--heads", "1", "--head-dim", "16"]
    argv += ["--variants", "naive", "--no-peak", "--budget", "0.01", "--executor", "inline", "--out", "s.jsonl"]
    rc, out = _main([*argv, "--json", f"{full}/rec.json", "--html", f"{full}/s.html"], monkeypatch)
    assert rc == 74, out
    assert out.index("Recommendation") < out.index(f"{full}/rec.json: not written: {ENOSPC}")
    assert f"{full}/s.html: not written: {ENOSPC}" in out
    assert len(Path("s.jsonl").read_text().splitlines()) == 1  # the row itself is saved
    assert _left(full) == []


def test_recommend_and_diff_print_first_then_name_the_file_not_written(full, monkeypatch):
    store = Path(__file__).resolve().parents[1] / "data" / "cpu" / "tiny_sweep.jsonl"
    rc, out = _main(["recommend", str(store), "--json", f"{full}/rec.json"], monkeypatch)
    assert rc == 74 and out.index("Recommendation") < out.index(f"{full}/rec.json: not written: {ENOSPC}")
    run = str(H200 / "run.json")
    rc, out = _main(["diff", run, run, "--json", f"{full}/d.json"], monkeypatch)
    assert rc == 74 and out.index("attnscope diff") < out.index(f"{full}/d.json: not written: {ENOSPC}")
    assert _left(full) == []
