"""``attnscope.api.sweep``: every variant on every case of a grid, one job each, through the one campaign loop
(attnscope.api.campaign), each row appended to a JSONL store as it comes; resumable, with the settings check."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from attnscope.api.campaign import Event
from attnscope.core.types import Case, Result
from attnscope.execute.sweep_plan import default_variants, left_out_line

__all__ = [
    "SweepResults",
    "default_variants",
    "left_out_line",
    "planned",
    "recommendation",
    "settings_file",
    "sweep",
]


class SweepResults(list[Result]):
    """This call's results (the store holds them all), with what the command line says of them: the rows the store
    held before (``done_before``), its unreadable lines (``torn``), the host's verdict (``host``) and the time
    spent measuring (``elapsed_s``)."""

    def __init__(self, results: list[Result], *, done_before: int, torn: int, host: dict[str, Any], elapsed_s: float):
        super().__init__(results)
        self.done_before, self.torn, self.host, self.elapsed_s = done_before, torn, host, elapsed_s


def sweep(
    cases: Iterable[Case],
    variants: str | list[str] | None = None,
    *,
    out: str | Path,
    resume: bool = False,
    executor: str = "process",
    devices: list[str] | None = None,
    timeout_s: float | None = None,
    ray_address: str | None = None,
    workers: int | None = None,
    force: bool = False,
    on_result: Callable[[Result], None] | None = None,
    on_event: Callable[[Event], None] | None = None,
    resume_with: str | None = None,
    lock: bool = True,
    **options: Any,
) -> SweepResults:
    """Every variant on every case, one job each, each row appended to the JSONL file ``out`` as it comes.

    ``variants`` None is the default set less the built-ins that cannot run on the cases' devices (on a CPU:
    sdpa_efficient, sdpa_cudnn, flex_compiled; :func:`attnscope.execute.sweep_plan.default_variants` says why).
    ``resume`` skips the (variant, case, mode) rows ``out`` already holds (a ``crashed`` row is measured again);
    without it a non-empty ``out`` is an error; a resume whose settings (``timing_budget_s``, ``flush_l2``, torch,
    the device) differ from those recorded in ``<out>.settings.json`` is refused unless ``force``.  Cases come
    from ``attnscope.core.cases.grid`` or anywhere; ``devices`` pins one worker per GPU (``["0", "1"]``).
    Everything the command line checks before work is checked here first, and refused with the same one-line
    ``ValueError`` (a device torch cannot reach, numbers that are no usable numbers, unknown variants).
    ``out`` is locked while the sweep writes it (a second writer is refused); ``lock=False``: the caller holds
    the lock.  ``on_event``: the progress (attnscope.api.campaign); a stop raises its ``Interrupted``, which says
    what is saved and how to resume (``resume_with``: the command that does).
    Returns this call's results (the file holds them all).
    """
    import contextlib

    from attnscope.core.arguments import UsageError, check_number, check_seconds, check_timeout, repeats, times
    from attnscope.core.files import lock_store
    from attnscope.execute.executors import EXECUTORS
    from attnscope.execute.job import Options
    from attnscope.measure.env import check_device

    merged = dict(getattr(cases, "merged", None) or {})  # a grid's masks measured once for several spellings
    cases = list(cases)
    if executor not in EXECUTORS:
        raise UsageError(f"executor {executor!r}: use one of {', '.join(EXECUTORS)}")
    if timeout_s is not None:
        check_seconds("timeout_s", timeout_s)
    check_timeout(executor, timeout_s)
    if workers is not None:
        check_number("workers", workers, minimum=1, maximum=1024)
        if not isinstance(workers, int):
            raise UsageError(f"workers: expected a whole number, got {workers!r}")
    opts = Options(**options)  # the budget checked
    if not all(isinstance(c, Case) for c in cases):
        raise UsageError("cases: expected attnscope.Case objects (attnscope.execute.sweep_plan.grid makes them)")
    twice = repeats(cases)
    if twice:  # each case is measured once: its rows would share their keys in the store
        case, n = twice[0]
        raise UsageError(f"cases lists {case.label()} {times(n)}: give each case once", fields=("cases",))
    _one_mask_once(cases)
    for device in dict.fromkeys(c.device for c in cases):  # a GPU case without a GPU: refused, not crashed rows
        check_device(device, "case.device")
    if executor == "ray":
        import importlib.util

        if importlib.util.find_spec("ray") is None:
            raise UsageError("executor='ray' needs Ray: pip install -e '.[ray]' in the attnscope clone")
        if ray_address:  # a cluster that does not answer: refused now, not after minutes in ray.init
            from attnscope.execute.executors.ray import check_reachable

            check_reachable(ray_address)
    with lock_store(out, "out") if lock else contextlib.nullcontext():
        return _measure(
            cases, variants, opts, Path(out), resume, force, executor, devices, timeout_s, ray_address, workers,
            on_result, on_event, resume_with, merged,
        )  # fmt: skip


def _one_mask_once(cases: list[Case]) -> None:
    """Two cases whose masks are one mask at their shapes (an alignment where seq_q == seq_kv) are one case measured
    twice: refused in one line, as a case listed twice is (:func:`attnscope.core.cases.grid` measures such masks
    once and says so)."""
    from attnscope.core.arguments import UsageError
    from attnscope.core.cases import SAME_MASK_WHERE, mask_at_shape

    seen: dict[Case, Case] = {}
    for c in cases:
        first = seen.setdefault(mask_at_shape(c), c)
        if first is not c:
            raise UsageError(
                f"cases lists {first.label()} and {c.label()}, one mask where {SAME_MASK_WHERE}: give each case once",
                fields=("cases",),
            )


def _measure(
    cases: list[Case],
    variants: str | list[str] | None,
    opts: Any,
    out: Path,
    resume: bool,
    force: bool,
    executor: str,
    devices: list[str] | None,
    timeout_s: float | None,
    ray_address: str | None,
    workers: int | None,
    on_result: Callable[[Result], None] | None,
    on_event: Callable[[Event], None] | None,
    resume_with: str | None,
    merged: dict[Case, list[str]],
) -> SweepResults:
    from attnscope.api.campaign import measure_jobs, open_store, record_settings, resume_settings
    from attnscope.document.schema import result_to_dict
    from attnscope.execute import store_settings
    from attnscope.execute.executors import make_executor
    from attnscope.execute.sweep_plan import default_variants, plan
    from attnscope.variants import resolve

    store = open_store(out, resume=resume)
    names = [v.name for v in resolve(variants)]
    if variants is None:  # the default set: the built-ins that can run on the cases' devices (as the CLI's)
        names, _ = default_variants([c.device for c in cases])
    done = store.done() if resume else set()
    settings = None
    if cases:
        now = store_settings.current(opts.timing_budget_s, opts.flush_l2, cases[0].device)
        settings = resume_settings(out, now, resuming=resume and store.path.exists(), force=force)
    jobs = plan(cases, names, opts, explicit=variants is not None, done=done)
    torn = store.num_torn
    before = len(plan(cases, names, opts, explicit=variants is not None, done=set())) - len(jobs)
    ex = make_executor(executor, devices=devices, timeout_s=timeout_s, ray_address=ray_address, workers=workers)
    record_settings(out, settings)

    def env() -> Any:  # for rows whose worker died before it could say: this process's
        from attnscope.measure import env as env_mod

        return env_mod.collect(cases[0].device) if cases else None

    def row(r: Result) -> dict[str, Any]:
        """The row as the store keeps it; a case measured for several mask spellings names the others in
        ``same_masks`` (recommend and report read them back from the rows)."""
        d = result_to_dict(r)
        same = merged.get(r.case) if r.case is not None else None
        return {**d, "same_masks": list(same)} if same else d

    measured = measure_jobs(
        jobs,
        ex,
        row=row,
        store=store,
        on_event=on_event,
        on_result=on_result,
        env=env,
        done_before=before,
        resume=resume_with or "the same call with resume=True",
    )
    return SweepResults(
        measured.results, done_before=before, torn=torn, host=measured.host, elapsed_s=measured.elapsed_s
    )


def recommendation(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The recommendation over a sweep's rows (attnscope.analysis.recommend, as `attnscope recommend` gives it)."""
    from attnscope.analysis.recommend import recommend

    return recommend(rows)


def planned(
    cases: list[Case], variants: list[str], *, explicit: bool, done: set[tuple[str, str, str]], **options: Any
) -> list[Any]:
    """The jobs a sweep of ``cases`` × ``variants`` would measure now (``done``: the keys the store holds)."""
    from attnscope.execute.job import Options
    from attnscope.execute.sweep_plan import plan

    return plan(cases, variants, Options(**options), explicit=explicit, done=done)


def settings_file(out: str | Path) -> Path:
    """Where the settings of the store ``out`` are recorded."""
    from attnscope.execute.store_settings import settings_path

    return settings_path(out)
