"""``attnscope.run``: everything ``attnscope run`` does, as a library call.

The executor's lifetime, the timeout's rule, Nsight Compute (``ncu``), insights, the recommendation and the
verdicts of predictions: the command line only parses, calls this, and renders what it returns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from attnscope.api.campaign import Event
from attnscope.core.arguments import UsageError, check_seconds, check_timeout
from attnscope.core.types import Case, Env, Mode, PeakRate, Prediction, Result


@dataclass
class RunReport:
    """The run's objects: the environment, the case measured, the rows in the order of the variants, the peak."""

    env: Env
    case: Case
    results: list[Result]
    peak: PeakRate | None


class RunDocument(dict[str, Any]):
    """The annotated run document (the dict ``run --json`` writes), carrying the run's objects as well:
    ``results`` (``Result`` rows), ``env``, ``case`` and ``peak`` (:class:`RunReport`)."""

    def __init__(self, doc: dict[str, Any], report: RunReport, partial_saved: int = 0) -> None:
        super().__init__(doc)
        self.report = report
        self.partial_saved = partial_saved  # rows in ``partial_to`` as last written (a full disk stops the rewrites)

    @property
    def results(self) -> list[Result]:
        return self.report.results

    @property
    def env(self) -> Env:
        return self.report.env

    @property
    def case(self) -> Case:
        return self.report.case

    @property
    def peak(self) -> PeakRate | None:
        return self.report.peak


def _peak(p: Any) -> dict[str, Any] | None:
    """The document's ``peak``: the matmul rate and, where measured, the read bandwidth (the roofline's ceiling)."""
    if p is None:
        return None
    out = {"tflops": p.tflops, "source": p.source}
    if p.bandwidth_tbps is not None:
        out.update(bandwidth_tbps=p.bandwidth_tbps, bandwidth_source=p.bandwidth_source)
    return out


def partial_document(case: Case, done: list[Result]) -> dict[str, Any]:
    """What is saved after each variant, before the run ends: the rows so far, marked partial."""
    from attnscope.document.schema import document

    return document(None, done, case=case.to_dict(), partial=True)


def plain_call(case: Case) -> tuple[Case, dict[str, Any] | None]:
    """(the case to measure, the document's ``equivalent_case``): a mask that keeps every key is the plain call
    (attnscope.analysis.equivalent), so that call is measured and advised on, and the document says so.  ALiBi
    keeps the stated alignment (its bias depends on where the queries sit): ``none@lower_right``."""
    from attnscope.analysis.equivalent import causal_equivalent, equivalent_case

    same = equivalent_case(case.to_dict())
    if same is None:
        causal = causal_equivalent(case.to_dict())
        if causal is None:
            return case, None
        measured = "the plain causal call"
        return replace(case, mask=causal["mask"]), {**causal, "asked": case.mask, "measured": measured}
    align = case.mask_spec.align
    plain = "none" if not (case.alibi and align and case.seq_q != case.num_seq_kv) else f"none@{align}"
    return replace(case, mask=plain), {**same, "mask": plain, "asked": case.mask, "measured": "the plain call"}


def check_case_fits(case: Any, names: list[str], explicit: bool) -> None:
    """Refuse, before any tensor, a case whose inputs do not fit or where no variant could run (the command line
    and :func:`run` both ask: the one-line ``UsageError`` names the case, never a flag)."""
    from attnscope.measure.env import free_memory_bytes
    from attnscope.variants import REGISTRY
    from attnscope.workloads import sizing

    free = free_memory_bytes(case.device)
    if free is None:
        return  # the system does not say: the runner's per-variant guards still apply
    why = sizing.case_skip(case, free, sizing.reference_chunk_bytes())
    if why:
        raise UsageError(f"{case.label()}: {why}")
    dev = "cuda" if case.device.startswith("cuda") else "cpu"
    runnable = [
        n for n in names if (explicit or dev not in REGISTRY[n].opt_in_on) and REGISTRY[n].refusal(case) is None
    ]
    rate = sizing.CEILING_TFLOPS[dev]
    reasons = {n: sizing.variant_skip(case, n, free, rate) for n in runnable}
    if runnable and all(reasons.values()):
        first = min(runnable, key=lambda n: sizing.variant_bytes(case, n).bytes)
        raise UsageError(f"{case.label()}: no variant can run this case here; {first}, the lightest: {reasons[first]}")


def run(
    case: Case,
    variants: str | list[str] | None = None,
    *,
    mode: Mode | None = None,
    executor: str = "inline",
    timeout_s: float | None = None,
    ncu: bool = False,
    predictions: list[Prediction] | None = None,
    on_result: Callable[[Result], None] | None = None,
    on_event: Callable[[Event], None] | None = None,
    on_note: Callable[[str], None] | None = None,
    partial_to: str | Path | None = None,
    annotated: bool = True,
    **options: Any,
) -> RunDocument:
    """Run variants on a case (needs torch) and return the annotated document.

    ``mode`` ("fwd" or "fwd_bwd") overrides ``case.mode``; ``executor`` is inline (this process) or process
    (a worker: a crash becomes a row); ``timeout_s`` (> 0) stops a worker, and the inline executor, which cannot
    stop itself, refuses it.  ``ncu`` adds Nsight Compute counters (a note says why, where it cannot).
    ``predictions`` add a verdict per prediction, judged in the one annotation pass.  ``on_result`` sees each row
    as it is measured, ``on_event`` the progress (attnscope.api.campaign).  ``partial_to``: the document so far
    is rewritten there after every variant (marked partial), so a stop or a crash loses no finished row; a stop
    raises :class:`attnscope.api.campaign.Interrupted` saying what was saved.  ``options`` are
    ``attnscope.execute.job.Options`` fields.
    """
    from attnscope.api import annotate
    from attnscope.api.campaign import measure_jobs
    from attnscope.document.schema import document, result_to_dict
    from attnscope.execute.executors import make_executor
    from attnscope.execute.job import AttentionJob, Options

    if timeout_s is not None:
        check_seconds("timeout_s", timeout_s)
    check_timeout(executor, timeout_s)
    if predictions is not None and not annotated:
        raise UsageError("predictions are judged when the document is annotated: pass annotated=True")
    case = case if mode is None else replace(case, mode=mode)
    from attnscope.api.user_case import check_user_mods, with_user_variants
    from attnscope.measure.env import check_device
    from attnscope.variants import resolve

    check_device(case.device, "case.device")  # the command line's checks, before any tensor (a one-line error)
    opts = Options(**options)  # its budget checked
    explicit = variants is not None
    variants = with_user_variants(case, variants)
    check_case_fits(case, [v.name for v in resolve(variants)], explicit=explicit)
    # last: importing the user's mask_mod / score_mod file runs its code
    case, user_mods = check_user_mods(case)  # a user's mask_mod measured as the built-in it equals
    case, same = plain_call(case)  # a mask that keeps every key: the plain call measured, and said
    jobs = [AttentionJob(case, v.name, opts, explicit=explicit) for v in resolve(variants, serving=case.is_serving)]
    measured = measure_jobs(
        jobs,
        make_executor(executor, timeout_s=timeout_s),
        row=result_to_dict,
        document=partial_to,
        partial=lambda done: partial_document(case, done),
        on_event=on_event,
        on_result=on_result,
    )
    order = {j.variant: i for i, j in enumerate(jobs)}
    results = sorted(measured.results, key=lambda r: order[r.variant])
    if ncu:  # deep mode: each variant's call once more, under Nsight Compute
        from attnscope.execute.ncu_run import attach

        if on_event is not None:
            from attnscope.api.campaign import Started

            on_event(Started("Nsight Compute", "Nsight Compute"))
        results, why = attach(case, results)
        if why and on_note is not None:
            on_note(f"--ncu: {why}; the run's results are complete without it")
    from attnscope.measure import env as env_mod

    peak = next((r.peak for r in results if r.peak is not None), None)
    rep = RunReport(env_mod.collect(case.device), case, results, peak)
    doc = document(
        rep.env,
        rep.results,
        case=case.to_dict(),
        peak=_peak(rep.peak),
        host=measured.host,
        **(user_mods or {}),  # mask_mod, score_mod: the user's functions and what they were checked equal to
        **({"equivalent_case": same} if same else {}),
    )
    if annotated:  # once: insights, the recommendation and the predictions' verdicts in one pass
        doc = annotate(doc, predictions)
    return RunDocument(doc, rep, measured.in_document)
