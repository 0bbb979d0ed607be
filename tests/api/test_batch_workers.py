"""How many processes ``analyze`` of several traces uses: one per core, but this process alone for traces too small
to repay a pool's start (``batch.SMALL_TEXT``), unless ``--jobs`` says otherwise."""

from __future__ import annotations

import concurrent.futures
import gzip
from pathlib import Path

from attnscope.api import batch
from attnscope.trace.source import text_size

ROOT = Path(__file__).resolve().parents[2]
RANKS = [ROOT / "tests" / "data" / "hta" / f"trace_filter_sampled_rank-{i}.json.gz" for i in (0, 1)]


def _pools(monkeypatch):
    started = []
    real = concurrent.futures.ProcessPoolExecutor

    def pool(*a, **k):
        started.append(k.get("max_workers"))
        return real(*a, **k)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", pool)
    monkeypatch.setattr(batch.os, "cpu_count", lambda: 2)
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


def test_text_size_is_the_inflated_length():
    for p in RANKS:
        assert text_size(p) == len(gzip.open(p).read())
