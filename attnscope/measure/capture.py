"""One profiled call under torch.profiler → a Kineto trace file on disk."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from attnscope.analysis.fingerprint.build import CALL_ANNOTATION

# Kineto leaves CUPTI attached after a profiling session unless TEARDOWN_CUPTI=1: every later CUDA
# launch in the process then pays CUPTI's callbacks.  On the H200 that took flash's host time per call
# from ~25 to ~63 µs for every variant timed after the first capture of a run or of a reused sweep
# worker (benchmarks/gpu/host_diag.py, docs/results/h200_launch_host.md).  With the teardown, host time
# after a capture matched the time before it, and CUDA-graph replays and later captures still ran
# (torch 2.11, CUDA 13; Kineto's own note says graphs and teardown clashed on CUDA 11/12).  Read by
# Kineto when a session ends; a value the user set is kept.
TEARDOWN_ENV = "TEARDOWN_CUPTI"


def capture(fn: Callable[[], Any], path: Path, *, cuda: bool) -> Path:
    import os
    import warnings

    if cuda:
        os.environ.setdefault(TEARDOWN_ENV, "1")
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    if cuda:
        torch.cuda.synchronize()
    with warnings.catch_warnings():  # scoped: the caller's warning filters stay as they were
        warnings.filterwarnings("ignore", message=".*Profiler clears events at the end of each cycle.*")
        with profile(activities=acts, record_shapes=True, profile_memory=True) as prof:
            with record_function(CALL_ANNOTATION):
                fn()
            if cuda:
                torch.cuda.synchronize()
    path.parent.mkdir(parents=True, exist_ok=True)
    prof.export_chrome_trace(str(path))
    return path
