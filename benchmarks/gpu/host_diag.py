"""Why `attnscope run` reports more host time per call than a bare script (about 1.5-2× on the H200).

    python3 benchmarks/gpu/host_diag.py

One process, flash and cuDNN at B1 H8 S512 D64, the tool's sampler (measure.time_host_cuda) after each
step that `attnscope run` takes and a bare script does not: the matmul peak, the fp64 reference, a
torch.profiler capture (CUPTI attached), the rich progress spinner, and measure_one itself.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import warnings
from pathlib import Path

import torch

from attnscope.core.types import Case
from attnscope.measure import timing as measure
from attnscope.variants import resolve
from attnscope.workloads.attention import make_inputs

CASE = Case(batch=1, heads=8, seq_q=512, head_dim=64, device="cuda")


def sample(preps: dict, label: str) -> None:
    out = []
    for name, p in preps.items():
        with p.context():
            for _ in range(3):
                p.fn()
            torch.cuda.synchronize()
            ts = [measure.time_host_cuda(p.fn, budget_s=0.2).median_us for _ in range(3)]
        out.append(f"{name} {statistics.median(ts):6.2f}")
    print(f"{label:42} " + "  ".join(out), flush=True)


def main() -> None:
    x = make_inputs(CASE, 0)
    preps = {}
    for n in ("sdpa_flash", "sdpa_cudnn"):
        (v,) = resolve([n])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            preps[n] = v.prepare(CASE, x)
    sample(preps, "fresh")
    from attnscope.execute.worker import measure_peak

    measure_peak(CASE)
    sample(preps, "after the matmul peak")
    from attnscope.workloads.attention import reference

    ref = reference(CASE, x)
    sample(preps, "after the fp64 reference")
    del ref
    from attnscope.measure.capture import capture

    with tempfile.TemporaryDirectory() as d:
        capture(preps["sdpa_flash"].fn, Path(d) / "t.json", cuda=True)
    sample(preps, "after one torch.profiler capture")
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn

    with Progress(
        SpinnerColumn(), TextColumn("{task.description}"), console=Console(file=sys.stderr), transient=True
    ) as pr:
        pr.add_task("x")
        sample(preps, "inside a rich progress spinner")
    from attnscope.execute.job import Options
    from attnscope.execute.worker import AttentionJob, measure_one

    for n in preps:
        r = measure_one(AttentionJob(variant=n, case=CASE, options=Options(timing_budget_s=0.3, measure_peak=False)))
        ct = r.cpu_time
        print(f"measure_one {n:12} {r.status} cpu {ct.median_us if ct else float('nan'):6.2f}", flush=True)
    sample(preps, "after measure_one (captures, graphs)")
    for i in range(2):  # captures and graph replays again: Kineto warns that teardown and CUDA graphs can clash
        with tempfile.TemporaryDirectory() as d:
            capture(preps["sdpa_cudnn"].fn, Path(d) / "t.json", cuda=True)
        g, why = measure.time_graph(preps["sdpa_flash"].fn, budget_s=0.1)
        print(f"capture + graph {i}: graph {'ok' if g else why}", flush=True)
    sample(preps, "after two more captures and graphs")
    print("TEARDOWN_CUPTI =", __import__("os").environ.get("TEARDOWN_CUPTI"), flush=True)


if __name__ == "__main__":
    main()
