"""`attnscope run`: every chosen variant on one case, as jobs through an executor.

The measuring itself is ``worker.measure_one``; sweeps use the same jobs and executors.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from attnscope.core.types import Case, Env, PeakRate, Result
from attnscope.execute.executors import Executor, make_executor
from attnscope.execute.job import AttentionJob, Options
from attnscope.variants import resolve
from attnscope.workloads.attention import make_inputs, reference

__all__ = ["Options", "PeakRate", "RunReport", "make_inputs", "reference", "run"]


@dataclass
class RunReport:
    env: Env
    case: Case
    results: list[Result]
    peak: PeakRate | None


def run(
    case: Case,
    variants: str | list[str] | None = None,
    options: Options | None = None,
    on_result: Callable[[Result], None] | None = None,
    on_start: Callable[[str], None] | None = None,
    executor: Executor | None = None,
) -> RunReport:
    """Run each variant on ``case``; ``variants=None`` is the device's default set.

    ``executor`` defaults to running in this process; pass ``make_executor("process")`` to
    isolate each variant in a worker process.
    """
    import torch

    from attnscope.measure import env as env_mod

    opts = options or Options()
    if case.device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' asked for, but torch sees no CUDA GPU (use --device cpu)")
    jobs = [
        AttentionJob(case, v.name, opts, explicit=variants is not None)
        for v in resolve(variants, serving=case.is_serving)
    ]
    ex = executor or make_executor("inline")
    results: list[Result] = []
    try:
        for r in ex.run(jobs, on_start=(lambda j: on_start(j.variant)) if on_start else None):
            results.append(r)
            if on_result:
                on_result(r)
    finally:
        if executor is None:
            ex.close()
        import gc

        gc.unfreeze()  # worker.free_after froze what survived each variant
    order = {j.variant: i for i, j in enumerate(jobs)}
    results.sort(key=lambda r: order[r.variant])
    peak = next((r.peak for r in results if r.peak is not None), None)
    return RunReport(env=env_mod.collect(case.device), case=case, results=results, peak=peak)
