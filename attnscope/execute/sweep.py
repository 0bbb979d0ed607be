"""Sweeps: a grid of cases × variants, minus what the store already holds, through an executor.

Each result is appended to the JSONL store the moment it exists, so a crash, a kill -9 or
Ctrl-C loses at most the jobs that were running; a resumed sweep measures exactly what is missing.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

# The axes, their parsers and their product are generated from the table of the case's fields (core/case.py);
# named here too, where sweeps used to define them.
from attnscope.core.case_text import (  # noqa: F401
    ALIBI,
    CAUSAL,
    LIST_KINDS,
    MASK_NAMES,
    MAX_AXIS_VALUES,
    parse_alibi_axis,
    parse_causal,
    parse_choice_axis,
    parse_int_axis,
    parse_mask_axis,
    parse_softcap_axis,
)
from attnscope.core.cases import MAX_JOBS, Axes, axes_from, grid  # noqa: F401
from attnscope.core.types import Case, Env, Result
from attnscope.document.schema import result_to_dict
from attnscope.execute.executors import Executor
from attnscope.execute.job import Job, Options, trace_file_name
from attnscope.execute.store import Store


def plan(
    cases: list[Case], variants: list[str], options: Options, *, explicit: bool, done: set[tuple[str, str, str]]
) -> list[Job]:
    """The jobs still to measure, grouped by case (a worker builds a case's inputs once)."""
    jobs = []
    for c in cases:
        for v in variants:
            j = Job(c, v, options, explicit=explicit, trace_name=trace_file_name(v, c))
            if j.key not in done:
                jobs.append(j)
    return jobs


@contextlib.contextmanager
def _sigint_after() -> Iterator[None]:
    """Hold Ctrl-C while a row is written: it lands after the fsync, never halfway through a line."""
    old = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not callable(old):
        yield  # Ctrl-C ignored (a background job) or not ours to hold
        return
    caught: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
    if caught:
        old(signal.SIGINT, None)


def run_sweep(
    jobs: list[Job],
    store: Store,
    executor: Executor,
    *,
    env: Callable[[], Env | None] = lambda: None,
    on_start: Callable[[Job], None] | None = None,
    on_result: Callable[[Result], None] | None = None,
) -> list[Result]:
    """Measure ``jobs``; each row is durable in ``store`` before the next callback runs.

    A row without an environment (its worker died before it could say) gets ``env()``'s.
    KeyboardInterrupt propagates after the executor is closed: every finished row is saved.
    """
    out: list[Result] = []
    fallback: list[Env | None] = []
    try:
        for r in executor.run(jobs, on_start=on_start):
            if r.env is None:
                if not fallback:
                    fallback.append(env())
                r = replace(r, env=fallback[0])
            with _sigint_after():
                store.append(result_to_dict(r))
            out.append(r)
            if on_result:
                on_result(r)
    finally:
        executor.close()
        import gc

        gc.unfreeze()  # worker.free_after froze what survived each job run in this process
    return out


def recommendation(rows: list[dict[str, Any]]) -> tuple[dict[str, Any], Any]:
    """The recommendation over a sweep's rows (attnscope.analysis.recommend.sweep, as `attnscope recommend`
    gives it) and its rendering."""
    from attnscope.analysis.recommend.sweep import recommend
    from attnscope.report.text.sweep import render

    rec = recommend(rows)
    if not rec["best"] and not rec.get("unresolved"):
        return rec, "recommendation: no row to compare yet (one needs status ok, numerics within tolerance, a time)"
    return rec, render(rec)
