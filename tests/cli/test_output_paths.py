"""Every output path of every command is checked before any work: a name too long for the file system, a
directory, a file where a directory should be, the kernel's virtual file systems, a path past PATH_MAX, a
folder without write permission.  One line, exit 2 (never the exit 70 of an unexpected OSError)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from attnscope.cli.main import main

# (command line without the output flag, output flag, the flag names a directory rather than a file)
COMMANDS = [
    (["run", "--seq", "16"], "--json", False),
    (["run", "--seq", "16"], "--html", False),
    (["run", "--seq", "16"], "--trace-dir", True),
    (["sweep", "--seq", "16"], "--out", False),
    (["sweep", "--seq", "16"], "--json", False),
    (["sweep", "--seq", "16"], "--html", False),
    (["sweep", "--seq", "16"], "--trace-dir", True),
    (["report", "in.json"], "-o", False),
    (["analyze", "t.json"], "--json", False),
    (["analyze", "t.json"], "--html", False),
    (["diff", "a.json", "b.json"], "--json", False),
    (["recommend", "s.jsonl"], "--json", False),
    (["tour"], "--out", False),
]
IDS = [f"{c[0]}{f}" for c, f, _ in COMMANDS]
FILES = [pytest.param(*c, id=i) for i, c in zip(IDS, COMMANDS, strict=True) if not c[2]]


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    t0 = time.monotonic()
    rc = main(argv)
    err = capsys.readouterr().err.strip()
    assert rc == 2, (rc, err)
    assert err.startswith("attnscope: error:") and "\n" not in err, err
    assert time.monotonic() - t0 < 20  # refused before anything was measured
    return err


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the input names above need not exist: the output is checked first or instead
    return tmp_path


@pytest.mark.parametrize(("cmd", "flag", "is_dir"), COMMANDS, ids=IDS)
def test_name_longer_than_the_file_system_takes(in_tmp, capsys, cmd, flag, is_dir):
    name = "a" * 300 + ("" if is_dir else ".json")  # 300 bytes: over any NAME_MAX of 255
    err = _refused(capsys, [*cmd, flag, name])
    assert flag in err and "bytes" in err and "36" not in err


@pytest.mark.parametrize(("cmd", "flag", "is_dir"), COMMANDS, ids=IDS)
def test_path_longer_than_path_max(in_tmp, capsys, cmd, flag, is_dir):
    path = "/".join(["b" * 200] * 25)  # 5,024 bytes, every part a legal name: over Linux's PATH_MAX of 4,096
    err = _refused(capsys, [*cmd, flag, path])
    assert flag in err and "longer than" in err


@pytest.mark.parametrize(("cmd", "flag", "is_dir"), FILES)
def test_a_directory_where_a_file_goes(in_tmp, capsys, cmd, flag, is_dir):
    (in_tmp / "d").mkdir()
    err = _refused(capsys, [*cmd, flag, "d"])
    assert f"{flag} d: is a directory" in err


@pytest.mark.parametrize(("cmd", "flag", "is_dir"), COMMANDS, ids=IDS)
def test_a_file_where_a_directory_goes(in_tmp, capsys, cmd, flag, is_dir):
    (in_tmp / "f").write_text("x")
    err = _refused(capsys, [*cmd, flag, "f/out" if not is_dir else "f"])
    assert flag in err and "not a directory" in err


@pytest.mark.parametrize(("cmd", "flag", "is_dir"), COMMANDS, ids=IDS)
@pytest.mark.parametrize("place", ["/proc/version", "/proc/attnscope-x.json", "/sys/attnscope-x"])
def test_the_kernels_virtual_file_systems(in_tmp, capsys, cmd, flag, is_dir, place):
    err = _refused(capsys, [*cmd, flag, place])
    root = "/" + place.split("/")[1]
    # a true message: no "No such file or directory" for /proc/version, which exists
    true = [f"{root} is the kernel's virtual file system"] + (["exists and is not a directory"] if is_dir else [])
    assert any(t in err for t in true) and "No such file" not in err, err


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes through permission bits")
@pytest.mark.parametrize(("cmd", "flag", "is_dir"), COMMANDS, ids=IDS)
def test_a_folder_without_write_permission(in_tmp, capsys, cmd, flag, is_dir):
    ro = in_tmp / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        err = _refused(capsys, [*cmd, flag, str(Path("ro") / "out.json")])
    finally:
        ro.chmod(0o755)
    assert flag in err and "no file can be created" in err


def test_an_output_beside_the_probe_leaves_nothing_behind(in_tmp, capsys):
    """The probe's temporary file is removed: a refused run leaves the folder as it found it."""
    (in_tmp / "d").mkdir()
    _refused(capsys, ["run", "--seq", "16", "--json", str(in_tmp / ("c" * 250 + ".json"))])
    _refused(capsys, ["sweep", "--seq", "16", "--out", "d"])
    assert sorted(p.name for p in in_tmp.iterdir()) == ["d"] and not any((in_tmp / "d").iterdir())
