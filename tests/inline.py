"""The variants of one case measured in this process, through the inline executor: the jobs below the API, without
its document (no annotation, no plain-call rewrite of a mask that keeps every key), for tests of the measuring."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from attnscope.core.types import Case, Env, Result
from attnscope.execute.executors.inline import InlineExecutor
from attnscope.execute.job import Options
from attnscope.execute.worker import AttentionJob


@dataclass
class Measured:
    results: list[Result]
    env: Env  # this process's, where the rows were measured


def run(
    case: Case,
    variants: str | list[str] | None,
    options: Options | None = None,
    on_result: Callable[[Result], None] | None = None,
) -> Measured:
    """Each variant's row, in the order of the variants; ``on_result`` sees each as it comes."""
    import gc

    from attnscope.variants import resolve

    opts = options or Options()
    jobs = [
        AttentionJob(case, v.name, opts, explicit=variants is not None)
        for v in resolve(variants, serving=case.is_serving)
    ]
    out = []
    try:
        for r in InlineExecutor().run(jobs):
            out.append(r)
            if on_result:
                on_result(r)
    finally:
        gc.unfreeze()  # worker.free_after froze what survived each variant
    from attnscope.measure.env import collect

    return Measured(out, collect(case.device))
