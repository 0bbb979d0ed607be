"""How many processes ``analyze`` of several traces uses: one per idle core, but this process alone for traces too
small to repay a pool's start (``batch.SMALL_TEXT``) or where fewer than two cores are idle, unless ``--jobs`` says
otherwise."""

from __future__ import annotations

import concurrent.futures
import gzip
from pathlib import Path

from attnscope.api import batch
from attnscope.trace.source import text_size

ROOT = Path(__file__).resolve().parents[2]
RANKS = [ROOT / "tests" / "data" / "hta" / f"trace_filter_sampled_rank-{i}.json.gz" for i in (0, 1)]


def _pools(monkeypatch, cores=2, load=0.0):
    started = []
    real = concurrent.futures.ProcessPoolExecutor

    def pool(*a, **k):
        started.append(k.get("max_workers"))
        return real(*a, **k)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", pool)
    monkeypatch.setattr(batch.os, "cpu_count", lambda: cores)
    monkeypatch.setattr(batch.os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(batch, "LOADAVG", "/nonexistent/loadavg")  # the load average decides, as set here
    return started


def test_small_traces_are_read_in_this_process(monkeypatch):
    started = _pools(monkeypatch)
    results, errors = batch.analyze_many(RANKS, require_gpu=False)
    assert len(results) == 2 and not errors and started == []


def test_jobs_or_larger_traces_get_the_pool(monkeypatch):
    started = _pools(monkeypatch)
    batch.analyze_many(RANKS, jobs=2, require_gpu=False)
    assert started == [2]
    monkeypatch.setattr(batch, "SMALL_TEXT", 1)  # as if they were long
    batch.analyze_many(RANKS, require_gpu=False)
    assert started == [2, 2]


def test_a_busy_machine_reads_long_traces_in_this_process(monkeypatch):
    monkeypatch.setattr(batch, "SMALL_TEXT", 1)  # as if they were long
    started = _pools(monkeypatch, cores=2, load=0.6)  # 1.4 cores idle: one, not two
    results, errors = batch.analyze_many(RANKS, require_gpu=False)
    assert len(results) == 2 and not errors and started == []
    started = _pools(monkeypatch, cores=2, load=0.4)  # 1.6 idle: two
    batch.analyze_many(RANKS, require_gpu=False)
    assert started == [2]
    batch.analyze_many(RANKS, jobs=2, require_gpu=False)  # --jobs as given, whatever the load
    assert started == [2, 2]


def test_idle_cores_are_the_cores_less_the_load_average_rounded(monkeypatch):
    monkeypatch.setattr(batch, "LOADAVG", "/nonexistent/loadavg")  # no run queue read: the 1-minute average
    monkeypatch.setattr(batch.os, "cpu_count", lambda: 16)
    for load, idle in ((10.4, 6), (0.0, 16), (15.6, 0), (20.0, 0)):
        monkeypatch.setattr(batch.os, "getloadavg", lambda load=load: (load, 99.0, 99.0))  # the 1-minute one
        assert batch.idle_cores() == idle, load
    monkeypatch.setattr(batch.os, "cpu_count", lambda: None)  # cores unknown: one
    monkeypatch.setattr(batch.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert batch.idle_cores() == 1

    def unreadable():
        raise OSError("no load average")

    monkeypatch.setattr(batch.os, "getloadavg", unreadable)
    assert batch.idle_cores() is None


def test_the_pool_has_a_worker_per_idle_core_at_most(monkeypatch):
    monkeypatch.setattr(batch, "SMALL_TEXT", 1)  # as if they were long
    started = _pools(monkeypatch, cores=16, load=14.0)  # 2 cores idle: two workers for three traces
    results, errors = batch.analyze_many([*RANKS, RANKS[0]], require_gpu=False)
    assert len(results) == 3 and not errors and started == [2]


def test_without_a_load_average_long_traces_get_one_worker_per_core(monkeypatch):
    monkeypatch.setattr(batch, "SMALL_TEXT", 1)
    started = _pools(monkeypatch, cores=2)

    def unreadable():
        raise OSError("no load average")

    monkeypatch.setattr(batch.os, "getloadavg", unreadable)
    batch.analyze_many(RANKS, require_gpu=False)
    assert started == [2]


def test_text_size_is_the_inflated_length():
    for p in RANKS:
        assert text_size(p) == len(gzip.open(p).read())


def test_idle_cores_are_the_cores_less_what_runs_now_where_the_kernel_says(monkeypatch, tmp_path):
    """/proc/loadavg's 4th field (running or ready / all tasks) counts this process too; a 1-minute average still
    high from a load that has ended does not decide then."""
    f = tmp_path / "loadavg"
    monkeypatch.setattr(batch, "LOADAVG", str(f))
    monkeypatch.setattr(batch.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(batch.os, "getloadavg", lambda: (1.8, 1.8, 1.8))  # would say: no core idle
    for line, idle in (("1.80 1.20 0.90 1/230 4242", 2), ("0.10 0.10 0.10 2/230 4242", 1),
                       ("0.00 0.00 0.00 3/230 4242", 0), ("0.00 0.00 0.00 9/230 4242", 0)):  # fmt: skip
        f.write_text(line + "\n")
        assert batch.idle_cores() == idle, line
    readings = iter(["1/9 1", "5/9 1", "1/9 1"])  # a task seen ready once in three readings: the median, none

    def read(*a, **k):
        import io

        return io.StringIO("0 0 0 " + next(readings))

    monkeypatch.setattr("builtins.open", read)
    assert batch.runnable_now(gap_s=0) == 0
    monkeypatch.undo()
    monkeypatch.setattr(batch, "LOADAVG", str(tmp_path / "garbled"))
    (tmp_path / "garbled").write_text("0.5 0.5\n")  # no 4th field: not read, so the load average decides
    monkeypatch.setattr(batch.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(batch.os, "getloadavg", lambda: (0.4, 0.4, 0.4))
    assert batch.runnable_now() is None and batch.idle_cores() == 2
