"""The columnar cache of read traces (trace/cache.py, ``ATTNSCOPE_TRACE_CACHE``): a second read of the same file
gives the same records from the cache; a changed file, a cut-short cache and a trace read by the safe path do not."""

from __future__ import annotations

import os
import shutil
import tracemalloc

import pytest

import attnscope.trace as trace_pkg
from attnscope.trace import cache, load_trace, parallel
from tests.trace.test_parallel_read import LLAMA, ROOT, _records

H200 = ROOT / "tests" / "data" / "h200" / "model" / "model_sdpa_train.json.gz"


@pytest.fixture(autouse=True)
def _one_core(monkeypatch):
    monkeypatch.setenv(parallel.ENV, "1")


def _from_cache_only(monkeypatch):
    """Reading the JSON fails from here on: what load_trace returns came from the cache."""

    def no_json(*a, **k):
        raise AssertionError("the JSON was read")

    monkeypatch.setattr(trace_pkg, "_load", no_json)


@pytest.mark.parametrize("path", [LLAMA, H200])
def test_a_second_read_comes_from_the_cache_with_the_same_records(path, monkeypatch, tmp_path):
    monkeypatch.setenv(cache.ENV, str(tmp_path / "cache"))
    want = _records(load_trace(path))
    assert len(list((tmp_path / "cache").iterdir())) == 1
    _from_cache_only(monkeypatch)
    assert _records(load_trace(path)) == want


def test_a_changed_file_is_read_again(monkeypatch, tmp_path):
    monkeypatch.setenv(cache.ENV, str(tmp_path / "cache"))
    p = tmp_path / "t.json.gz"
    shutil.copy(H200, p)
    load_trace(p)
    os.utime(p, ns=(1, 1))  # another modification time: another file for the cache
    read = []
    load = trace_pkg._load
    monkeypatch.setattr(trace_pkg, "_load", lambda *a, **k: read.append(a) or load(*a, **k))
    load_trace(p)
    assert len(read) == 1
    assert len(list((tmp_path / "cache").iterdir())) == 2


def test_a_cache_cut_short_is_passed_over(monkeypatch, tmp_path):
    monkeypatch.setenv(cache.ENV, str(tmp_path / "cache"))
    want = _records(load_trace(H200))
    (f,) = (tmp_path / "cache").iterdir()
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    assert cache.load(H200) is None
    assert _records(load_trace(H200)) == want  # read from the JSON, and cached again whole
    _from_cache_only(monkeypatch)
    assert _records(load_trace(H200)) == want


def test_off_by_default_and_not_for_a_trace_with_a_note(monkeypatch, tmp_path):
    monkeypatch.delenv(cache.ENV, raising=False)
    assert cache.path_for(H200) is None
    monkeypatch.setenv(cache.ENV, str(tmp_path / "cache"))
    p = ROOT / "tests" / "data" / "hta" / "amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz"
    assert load_trace(p).notes  # the safe path read it: its note names the path as given
    assert not (tmp_path / "cache").exists()


def test_an_unwritable_cache_costs_nothing(monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv(cache.ENV, str(blocker / "cache"))
    assert _records(load_trace(H200))["events"] > 0


def test_a_cache_file_claiming_a_huge_frame_is_refused_before_allocating(monkeypatch, tmp_path):
    """A frame length past the file's own size (a corrupt or foreign file) is not allocated: the cache is passed
    over at once."""
    monkeypatch.setenv(cache.ENV, str(tmp_path / "cache"))
    want = _records(load_trace(H200))
    (f,) = (tmp_path / "cache").iterdir()
    f.write_bytes((512 << 20).to_bytes(8, "little") + b"x" * 64)  # a 512 MiB frame, if believed
    tracemalloc.start()
    try:
        assert cache.load(H200) is None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20
    assert _records(load_trace(H200)) == want


def test_a_cache_path_that_is_a_file_is_refused_in_one_line(monkeypatch, tmp_path, capsys):
    from attnscope.cli.main import main

    f = tmp_path / "file"
    f.write_text("x")
    monkeypatch.setenv(cache.ENV, str(f))
    assert main(["analyze", str(H200)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "ATTNSCOPE_TRACE_CACHE" in err[0] and "not a directory" in err[0]
