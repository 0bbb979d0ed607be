"""One profiled call under torch.profiler → a Kineto trace file on disk."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from attnscope.analysis.fingerprint import CALL_ANNOTATION


def capture(fn: Callable[[], Any], path: Path, *, cuda: bool) -> Path:
    import warnings

    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    warnings.filterwarnings("ignore", message=".*Profiler clears events at the end of each cycle.*")
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    if cuda:
        torch.cuda.synchronize()
    with profile(activities=acts, record_shapes=True, profile_memory=True) as prof:
        with record_function(CALL_ANNOTATION):
            fn()
        if cuda:
            torch.cuda.synchronize()
    path.parent.mkdir(parents=True, exist_ok=True)
    prof.export_chrome_trace(str(path))
    return path
