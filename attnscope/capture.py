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
