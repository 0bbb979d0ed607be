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

from attnscope.core.types import Case, Env, Result
from attnscope.document.schema import result_to_dict
from attnscope.execute.executors import Executor, OnStart
from attnscope.execute.job import AttentionJob, Options, trace_file_name
from attnscope.execute.store import Store


def default_variants(devices: list[str]) -> tuple[list[str], dict[str, str]]:
    """The default set for a sweep whose cases are on ``devices``: the built-ins that can run there, and those
    left out with why (a variant without kernels for the device, or one that is opt-in there, such as compiled
    flex on a CPU: minutes of compiling per case).  Every one of them would be a ``skipped`` row in every case;
    ``--variants`` (or ``variants=``) naming one still measures it."""
    from attnscope.variants import resolve
    from attnscope.variants.base import device_kind

    kinds = {device_kind(d) for d in devices}
    keep: list[str] = []
    left: dict[str, str] = {}
    for v in resolve(None):
        if kinds and all(k not in v.devices for k in kinds):
            left[v.name] = f"no {'/'.join(sorted(kinds))} kernels"
        elif kinds and all(k in v.opt_in_on for k in kinds):
            left[v.name] = f"opt-in on {'/'.join(sorted(kinds))}; `attnscope variants` says why"
        else:
            keep.append(v.name)
    return keep, left


def left_out_line(left: dict[str, str], where: str) -> str:
    """The one line that says which default variants a sweep leaves out, and how to measure them anyway."""
    return (
        f"left out of the default set on {where} (each would be a skipped row in every case): "
        + "; ".join(f"{n} ({why})" for n, why in left.items())
        + ". Name them with --variants to measure them anyway"
    )


def plan(
    cases: list[Case], variants: list[str], options: Options, *, explicit: bool, done: set[tuple[str, str, str]]
) -> list[AttentionJob]:
    """The jobs still to measure, grouped by case (a worker builds a case's inputs once).  From the default set
    (not ``explicit``), a serving case gets the serving variants and a dense case the others."""
    from attnscope.variants import REGISTRY

    jobs = []
    for c in cases:
        for v in variants:
            if not explicit and v in REGISTRY and REGISTRY[v].serving != c.is_serving:
                continue
            j = AttentionJob(c, v, options, explicit=explicit, trace_name=trace_file_name(v, c))
            if j.key not in done:
                jobs.append(j)
    return jobs


HELD = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # the signals that stop a sweep after saving


@contextlib.contextmanager
def _sigint_after() -> Iterator[None]:
    """Hold Ctrl-C (and SIGTERM, SIGHUP where the command handles them) while a row is written: the signal lands
    after the fsync, never halfway through a line."""
    if threading.current_thread() is not threading.main_thread():
        yield  # not ours to hold
        return
    old: dict[int, Callable[[int, Any], Any]] = {}
    for sig in HELD:
        h = signal.getsignal(sig)
        if callable(h):  # an ignored or default signal is left as it is
            old[int(sig)] = h
    caught: list[int] = []
    for num in old:
        signal.signal(num, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        for num, h in old.items():
            signal.signal(num, h)
    if caught:
        old[caught[0]](caught[0], None)


def run_sweep(
    jobs: list[AttentionJob],
    store: Store,
    executor: Executor,
    *,
    env: Callable[[], Env | None] = lambda: None,
    on_start: OnStart | None = None,
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
    """The recommendation over a sweep's rows (attnscope.analysis.recommend, as `attnscope recommend`
    gives it) and its rendering."""
    from attnscope.analysis.recommend import recommend
    from attnscope.report.text.sweep import render

    rec = recommend(rows)
    if not rec["best"] and not rec.get("unresolved"):
        return rec, "recommendation: no row to compare yet (one needs status ok, numerics within tolerance, a time)"
    return rec, render(rec)
