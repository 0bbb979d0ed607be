"""The library API, mirroring the CLI: ``run`` a case, ``analyze`` a trace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attnscope.analysis.fingerprint import fingerprint
from attnscope.trace import load_trace
from attnscope.types import Case, Result, Timing


def analyze(path: str | Path, variant: str | None = None) -> Result:
    """The fingerprint of a trace captured anywhere; fields a trace cannot tell stay None."""
    tr = load_trace(path)
    fp = fingerprint(tr)
    gpu_t = (
        Timing(
            fp.trace_gpu_time_us,
            fp.trace_gpu_time_us,
            fp.trace_gpu_time_us,
            fp.trace_gpu_time_us,
            1,
            "sum of GPU event durations in the trace (one sample)",
        )
        if fp.trace_gpu_time_us is not None
        else None
    )
    cpu_t = (
        Timing(
            fp.trace_cpu_time_us,
            fp.trace_cpu_time_us,
            fp.trace_cpu_time_us,
            fp.trace_cpu_time_us,
            1,
            "host span of the traced region (one sample, profiler overhead included)",
        )
        if fp.trace_cpu_time_us is not None
        else None
    )
    name = variant or Path(path).name.removesuffix(".gz").removesuffix(".json")
    return Result(
        variant=name,
        case=None,
        status="ok",
        fingerprint=fp,
        gpu_time=gpu_t,
        cpu_time=cpu_t,
        peak_memory_bytes=fp.trace_peak_memory_bytes,
        peak_memory_source="profiler [memory] events in the trace" if fp.trace_peak_memory_bytes is not None else None,
        trace_path=str(path),
        source="trace",
    )


def run(case: Case, variants: str | list[str] | None = None, **options: Any) -> Any:
    """Run variants on a case (needs torch); returns a ``RunReport``."""
    from attnscope.runner import Options
    from attnscope.runner import run as _run

    return _run(case, variants, Options(**options))
