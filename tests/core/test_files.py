"""The one atomic writer and every writer built on it, against planted links: a symbolic link waiting at the target,
at the old predictable ``.<name>.tmp``, at Kineto's ``<trace>.tmp``, or as the store itself.  The victim a link
points to must be unchanged, and no temporary file may be left."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from attnscope.core.files import check_outputs, keep_file, lock_store, os_error_text, private_dir, write_atomic

H200 = Path(__file__).resolve().parents[1] / "data" / "h200"
PRECIOUS = "precious\n"


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    v = tmp_path / "elsewhere" / "victim.txt"
    v.parent.mkdir()
    v.write_text(PRECIOUS)
    return v


def _plant(link: Path, victim: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(victim)


def _only(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_write_atomic_replaces_a_link_at_the_target_and_never_writes_through_it(tmp_path, victim):
    out = tmp_path / "out" / "doc.json"
    _plant(out, victim)
    _plant(out.with_name(".doc.json.tmp"), victim)  # the name the pages used to write through
    write_atomic(out, b"{}\n")
    assert victim.read_text() == PRECIOUS
    assert not out.is_symlink() and out.read_bytes() == b"{}\n"
    assert _only(out.parent) == [".doc.json.tmp", "doc.json"]  # the planted link left alone, no temporary file


def test_write_atomic_keeps_the_umask_and_writes_text_and_streams(tmp_path):
    old = os.umask(0o027)
    try:
        p = write_atomic(tmp_path / "a.txt", "é")
        assert p.read_bytes() == "é".encode()
        assert p.stat().st_mode & 0o777 == 0o640  # 0666 less the umask, as open() would make it
    finally:
        os.umask(old)
    write_atomic(tmp_path / "b.bin", lambda f: f.write(b"x" * 3))
    assert (tmp_path / "b.bin").read_bytes() == b"xxx"


def test_a_failed_write_leaves_the_target_and_no_temporary_file(tmp_path):
    target = tmp_path / "doc.json"
    target.write_text("old")

    def full(f):
        f.write(b"part")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(OSError) as e:
        write_atomic(target, full)
    assert str(e.value) == f"{target}: not written: no space left on device (ENOSPC)"  # a WriteError
    assert e.value.errno == errno.ENOSPC
    assert os_error_text(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))) == "no space left on device (ENOSPC)"
    assert target.read_text() == "old"
    assert _only(tmp_path) == ["doc.json"]


def test_document_writer_against_a_planted_link(tmp_path, victim):
    from attnscope.document.schema import write_atomic as write_doc

    out = tmp_path / "r.json"
    _plant(out, victim)
    write_doc(out, {"schema_version": 1, "results": []})
    assert victim.read_text() == PRECIOUS
    assert json.loads(out.read_text()) == {"schema_version": 1, "results": []}


def test_report_page_against_the_planted_tmp_link(tmp_path, victim):
    """The reproduction: a link at ``out/.page.html.tmp`` used to receive the whole page (4.8 MB)."""
    pytest.importorskip("plotly")
    from attnscope.api.report import write_html

    page = tmp_path / "out" / "page.html"
    _plant(page.with_name(".page.html.tmp"), victim)
    write_html(H200 / "naive.json", page)
    assert victim.read_text() == PRECIOUS
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    _plant(tmp_path / "out" / "again.html", victim)  # a link at the page's own name: replaced, not written through
    write_html(H200 / "naive.json", tmp_path / "out" / "again.html")
    assert victim.read_text() == PRECIOUS
    assert not (tmp_path / "out" / "again.html").is_symlink()


def test_plotly_asset_against_planted_links(tmp_path, victim):
    pytest.importorskip("plotly")
    from attnscope.api.report import write_html
    from attnscope.report.html.markup import plotly_asset_name

    assets = tmp_path / "assets"
    name = plotly_asset_name()
    _plant(assets / f".{name}.tmp", victim)
    _plant(assets / name, victim)
    write_html(H200 / "naive.json", tmp_path / "p.html", assets=assets)
    assert victim.read_text() == PRECIOUS
    assert not (assets / name).is_symlink() and (assets / name).stat().st_size > 1000


def test_tour_page_against_a_planted_link(tmp_path, victim):
    pytest.importorskip("plotly")
    from attnscope.report.html.tour import write_tour_html

    transcript = {"kind": "tour", "device": "cpu", "steps": [], "score": {}}
    page = tmp_path / "tour.html"
    _plant(page.with_name(".tour.html.tmp"), victim)
    _plant(page, victim)
    write_tour_html(transcript, page)
    assert victim.read_text() == PRECIOUS
    assert not page.is_symlink()


def test_the_store_never_appends_through_a_link(tmp_path, victim):
    from attnscope.execute.store import Store

    link = tmp_path / "rows.jsonl"
    _plant(link, victim)
    with pytest.raises(OSError) as e:
        Store(link).append({"variant": "naive", "status": "ok"})
    assert e.value.errno == errno.ELOOP
    assert victim.read_text() == PRECIOUS


def test_the_store_appends_after_a_torn_line_on_a_fresh_line(tmp_path):
    from attnscope.execute.store import Store

    p = tmp_path / "rows.jsonl"
    p.write_bytes(b'{"variant": "a", "status": "ok"}\n{"variant": "b", "sta')
    s = Store(p)
    s.append({"variant": "c", "status": "ok"})
    assert p.read_bytes().endswith(b'"sta\n{"variant":"c","status":"ok"}\n')
    assert [r["variant"] for r in s.rows()] == ["a", "c"] and s.num_torn == 1


def test_keep_file_moves_a_private_trace_over_a_planted_link(tmp_path, victim):
    keep = tmp_path / "traces"
    _plant(keep / "naive.json", victim)
    _plant(keep / "naive.json.tmp", victim)  # Kineto's own temporary name, had it written here
    with private_dir() as d:
        assert d.stat().st_mode & 0o777 == 0o700
        (d / "naive.json").write_text('{"traceEvents": []}')
        kept = keep_file(d / "naive.json", keep)
    assert not d.exists()
    assert victim.read_text() == PRECIOUS
    assert kept.read_text() == '{"traceEvents": []}' and not kept.is_symlink()


def test_keep_file_across_file_systems_copies_atomically(tmp_path, monkeypatch):
    real = os.replace

    def cross(src, dst):  # the first rename is across file systems; write_atomic's own rename is not
        if str(src).endswith("t.json"):
            raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))
        return real(src, dst)

    monkeypatch.setattr(os, "replace", cross)
    src = tmp_path / "t.json"
    src.write_text("trace")
    kept = keep_file(src, tmp_path / "keep")
    assert kept.read_text() == "trace" and _only(tmp_path / "keep") == ["t.json"]


def test_check_outputs_compares_names_links_and_inodes(tmp_path):
    from attnscope.core.arguments import UsageError

    a = tmp_path / "a.json"
    a.write_text("{}")
    os.link(a, tmp_path / "hard.json")
    check_outputs([("input", a)], [("--json", tmp_path / "b.json"), ("--html", tmp_path / "c.html")])
    for out in (a, tmp_path / "hard.json", tmp_path / "x" / ".." / "a.json"):
        with pytest.raises(UsageError, match="writing it would replace what is read"):
            check_outputs([("input", a)], [("--json", out)])
    with pytest.raises(UsageError, match="--json and --html name the same file"):
        check_outputs([], [("--json", tmp_path / "n.json"), ("--html", tmp_path / "." / "n.json")])
    check_outputs([("input", tmp_path)], [("--json", tmp_path / "in-the-folder.json")])  # a folder is not its file


def test_lock_store_refuses_a_second_holder_and_removes_what_it_made(tmp_path):
    from attnscope.core.arguments import UsageError

    p = tmp_path / "s.jsonl"
    with lock_store(p, "--out"):
        assert p.exists()
        with pytest.raises(UsageError, match="another attnscope is writing to it now"):
            lock_store(p, "--out")
    assert not p.exists()  # made by the lock, never written: removed
    p.write_text("row\n")
    with lock_store(p, "--out"):
        pass
    assert p.read_text() == "row\n"


def test_check_trace_names_refuses_only_a_trace_of_the_folder(tmp_path, monkeypatch):
    from attnscope.core.arguments import UsageError
    from attnscope.core.files import check_trace_names

    monkeypatch.chdir(tmp_path)
    names = ["naive.json", "sdpa_math.json"]
    check_trace_names("t", names, [("--json", "t/other.json"), ("--html", "naive.json"), ("--save", None)])
    check_trace_names(None, names, [("--json", "t/naive.json")])  # no --trace-dir: no trace is kept
    for out in ("t/naive.json", "./t/../t/sdpa_math.json", str(tmp_path / "t" / "naive.json")):
        with pytest.raises(UsageError, match="is where trace_dir keeps the trace"):
            check_trace_names("t", names, [("--json", out)])


def _owner_process(tmp: Path, prefix: str):
    """A python process that makes an owned folder under ``tmp``, prints its path, then waits to be killed."""
    import subprocess
    import sys

    code = (
        "import sys, tempfile, time; tempfile.tempdir = sys.argv[1]\n"
        "from attnscope.core.files import owned_dir\n"
        f"d, fd = owned_dir({prefix!r}); print(d, flush=True); time.sleep(120)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    p = subprocess.Popen([sys.executable, "-c", code, str(tmp)], stdout=subprocess.PIPE, text=True, env=env)
    assert p.stdout is not None
    return p, Path(p.stdout.readline().strip())


def test_a_folder_left_by_kill_9_is_removed_by_the_next_one_made(tmp_path, monkeypatch):
    import signal
    import tempfile

    from attnscope.core.files import reap_orphans

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead, dead_dir = _owner_process(tmp_path, "attnscope-workers-")
    live, live_dir = _owner_process(tmp_path, "attnscope-")
    try:
        (dead_dir / "worker0.log").write_text("")
        dead.send_signal(signal.SIGKILL)
        dead.wait(timeout=30)
        assert dead_dir.is_dir() and live_dir.is_dir()  # kill -9: nothing of the process could remove it
        no_owner = tmp_path / "attnscope-old"  # a folder without an owner file: not ours to judge
        no_owner.mkdir()
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        (elsewhere / ".owner").write_text("1\n")  # unlocked, and reached only through a link
        (tmp_path / "attnscope-link").symlink_to(elsewhere)
        with private_dir() as d:  # making a folder removes the dead one first
            assert d.is_dir() and (d / ".owner").read_text() == f"{os.getpid()}\n"
            assert not dead_dir.exists()
            assert live_dir.is_dir()  # its owner lives: its lock is held
        assert not d.exists()
        assert no_owner.is_dir() and elsewhere.is_dir() and (elsewhere / ".owner").exists()
        assert reap_orphans() == 0
    finally:
        live.kill()
        live.wait(timeout=30)
    assert reap_orphans() == 1 and not live_dir.exists()
