"""``attnscope.run``: everything ``attnscope run`` does, as a library call.

The executor's lifetime, the timeout's rule, Nsight Compute (``ncu``), insights, the recommendation and the
verdicts of predictions: the command line only parses, calls this, and renders what it returns.

Two ways in: :func:`run` for a :class:`Case` built by the caller, and :func:`run_request` for what ``attnscope
run`` is asked, in plain values (:class:`RunRequest`): every check before any tensor (:func:`check_run`), the
measurement, then the document written to ``json`` and the page to ``html``.  ``attnscope guess`` asks its
questions between the two halves (:func:`check_run`, then :func:`run_checked`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnscope.api.campaign import Event
from attnscope.core.arguments import UsageError, check_seconds, check_timeout
from attnscope.core.types import Case, Env, Mode, PeakRate, Prediction, Result

if TYPE_CHECKING:
    from attnscope.execute.job import Options

# seconds per timer per variant when a request gives no budget: a CPU's default study (six variants, one of them
# ~0.1 s a call) measures in ≤ 10 s of 2 cores with 0.2 (benchmarks/first_result.py); a GPU call is µs long
DEFAULT_BUDGET_S = {"cuda": 0.5, "cpu": 0.2}


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
        # what :func:`run_checked` could not write, by the request's field (json, html, trace_dir): why
        self.unwritten: dict[str, str] = {}

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
    from attnscope.api.user_case import check_user_mods, with_user_variants
    from attnscope.execute.job import Options
    from attnscope.measure.env import check_device
    from attnscope.variants import resolve

    if timeout_s is not None:
        check_seconds("timeout_s", timeout_s)
    check_timeout(executor, timeout_s)
    if predictions is not None and not annotated:
        raise UsageError("predictions are judged when the document is annotated: pass annotated=True")
    case = case if mode is None else replace(case, mode=mode)
    check_device(case.device, "case.device")  # the command line's checks, before any tensor (a one-line error)
    opts = Options(**options)  # its budget checked
    explicit = variants is not None
    check_case_fits(case, [v.name for v in resolve(with_user_variants(case, variants))], explicit=explicit)
    # last: importing the user's mask_mod / score_mod file runs its code
    case, user_mods = check_user_mods(case)  # a user's mask_mod measured as the built-in it equals
    return _measure(
        case,
        user_mods,
        variants,
        opts,
        executor=executor,
        timeout_s=timeout_s,
        ncu=ncu,
        predictions=predictions,
        on_result=on_result,
        on_event=on_event,
        on_note=on_note,
        partial_to=partial_to,
        annotated=annotated,
    )


def _measure(
    case: Case,
    user_mods: dict[str, Any] | None,
    variants: str | list[str] | None,
    opts: Options,
    *,
    executor: str,
    timeout_s: float | None,
    ncu: bool,
    predictions: list[Prediction] | None,
    on_result: Callable[[Result], None] | None,
    on_event: Callable[[Event], None] | None,
    on_note: Callable[[str], None] | None,
    partial_to: str | Path | None,
    annotated: bool,
) -> RunDocument:
    """The checked case's variants measured through the campaign loop, then the one document (annotated once)."""
    from attnscope.api import annotate
    from attnscope.api.campaign import measure_jobs
    from attnscope.api.user_case import with_user_variants
    from attnscope.document.schema import document, result_to_dict
    from attnscope.execute.executors import make_executor
    from attnscope.execute.worker import AttentionJob
    from attnscope.variants import resolve

    explicit = variants is not None
    variants = with_user_variants(case, variants)
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
        title=case.label(),
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
            on_note(f"Nsight Compute: {why}; the run's results are complete without it")
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
        **({"notes": notes} if (notes := cpu_timing_notes(opts.flush_l2, case.device)) else {}),
    )
    if annotated:  # once: insights, the recommendation and the predictions' verdicts in one pass
        doc = annotate(doc, predictions)
    return RunDocument(doc, rep, measured.in_document)


def cpu_timing_notes(flush_l2: bool, device: str) -> list[str]:
    """What a GPU-only timing setting asked on a CPU did: nothing, said once in the document's ``notes`` (the run's
    and a sweep's), so that a reader never takes its timings for cold-cache ones."""
    if flush_l2 and not device.startswith("cuda"):
        return [
            "flush_l2 (--flush-l2) asked: it flushes a GPU's L2 cache before each timed call; on a CPU it has no "
            "effect, the timings are as without it"
        ]
    return []


# ------------------------------------------------------------------------------------ what attnscope run is asked


@dataclass(frozen=True)
class RunRequest:
    """What ``attnscope run`` (or ``guess``) is asked, in plain values: the one argument of :func:`run_request`.

    ``case``: the case's fields as given (the names of :data:`attnscope.core.case.FIELDS`); one left out or None
    takes the device's default.  ``device``: cpu or cuda[:N] (None: cuda where torch sees a GPU, else cpu).
    ``mask_given``: the mask was stated (``mask`` or ``causal``), so a user's ``mask_mod`` must equal it.
    ``guess``: a predictions file (TOML), judged in the one annotation pass.  ``json``: the document, rewritten
    after every variant (marked partial) and at the end; ``html``: the page, with plotly in ``assets`` where given;
    ``trace_dir``: one trace per variant kept there.  ``timing_budget_s``: seconds per timer per variant (None:
    :data:`DEFAULT_BUDGET_S` of the device).  The rest as :func:`run` and ``attnscope.execute.job.Options`` name
    them.  Paths are checked by the caller (the command line probes each by its flag); :func:`check_run` checks
    the values."""

    case: Mapping[str, Any] = field(default_factory=dict)
    device: str | None = None
    mask_given: bool = False
    variants: str | None = None
    guess: str | None = None
    json: str | None = None
    html: str | None = None
    assets: str | None = None
    trace_dir: str | None = None
    executor: str = "inline"
    timeout_s: float | None = None
    ncu: bool = False
    flush_l2: bool = False
    timing_budget_s: float | None = None
    measure_peak: bool = True
    steps: int = 0
    bucket: int = 256


@dataclass(frozen=True)
class CheckedRun:
    """A :class:`RunRequest` that passed every check: the case to measure (a user's mask as the built-in it
    equals), the document's entries for the user's functions, the variants' names, the predictions read from
    ``guess`` and the measuring options."""

    request: RunRequest
    case: Case
    user_mods: dict[str, Any] | None
    variants: tuple[str, ...]
    predictions: list[Prediction] | None
    options: Options


def case_of(fields: Mapping[str, Any], device: str | None) -> Case:
    """The case ``fields`` ask for on ``device`` (the one device parser's; None: the default device), each field
    left out or None at the device's default (:func:`attnscope.core.cases.make_case`)."""
    from attnscope.api.checks import device as checked_device
    from attnscope.core.cases import make_case

    return make_case(checked_device(device), **fields)


def default_budget(device: str) -> float:
    """:data:`DEFAULT_BUDGET_S` of the device's kind."""
    return DEFAULT_BUDGET_S["cuda" if device.startswith("cuda") else "cpu"]


def check_run(req: RunRequest) -> CheckedRun:
    """Everything about ``req`` that can be wrong before a tensor exists, refused in one line (UsageError, its
    ``fields`` naming the values): the device and the case, the variants, the timeout, a decode loop's case, the
    case's size, a trace that would replace an output, the predictions file; the user's ``mask_mod`` /
    ``score_mod`` file is imported (its code runs) last, once every other check has passed."""
    from attnscope.api.checks import known_variants
    from attnscope.api.checks import variant_names as chosen_names
    from attnscope.api.guesses import load_predictions
    from attnscope.api.user_case import check_user_mods, with_user_variants
    from attnscope.core.arguments import variant_names
    from attnscope.core.files import check_trace_names
    from attnscope.execute.job import Options

    case = case_of(req.case, req.device)
    if req.variants is not None and len(names := variant_names(req.variants)) > 1 and "all" in names:
        raise UsageError("variants: 'all' stands alone", fields=("variants",))
    if req.timeout_s is not None:
        check_seconds("timeout_s", req.timeout_s)
    check_timeout(req.executor, req.timeout_s)
    if req.steps:
        if not case.is_serving:
            raise UsageError(
                "steps grows a serving cache: give page_size and/or kv_lens (docs/serving.md)",
                fields=("steps", "page_size", "kv_lens"),
            )
        if case.seq_q != 1:
            raise UsageError(
                f"steps decodes one new token per sequence per step: give seq_q 1, not {case.seq_q}",
                fields=("steps", "seq_q"),
            )
    budget = req.timing_budget_s if req.timing_budget_s is not None else default_budget(case.device)
    trace_dir = Path(req.trace_dir) if req.trace_dir else None
    options = Options(  # its numbers checked
        flush_l2=req.flush_l2,
        timing_budget_s=budget,
        trace_dir=trace_dir,
        measure_peak=req.measure_peak,
        steps=req.steps,
        bucket=req.bucket,
    )
    # unknown names fail first; without names, the default set of this case's kind, the one measured (a dense case
    # never lists the serving variants, nor a serving case the dense ones)
    chosen = chosen_names(with_user_variants(case, req.variants), serving=case.is_serving)
    check_case_fits(case, chosen, explicit=req.variants is not None)
    check_trace_names(req.trace_dir, (f"{n}.json" for n in chosen), [("json", req.json), ("html", req.html)])
    preds = load_predictions(req.guess, chosen, known_variants()) if req.guess else None
    # last: this imports the user's file, which runs its code
    case, user_mods = check_user_mods(case, mask_given=req.mask_given)
    return CheckedRun(req, case, user_mods, tuple(chosen), preds, options)


def run_checked(
    checked: CheckedRun,
    *,
    predictions: list[Prediction] | None = None,
    on_event: Callable[[Event], None] | None = None,
    on_note: Callable[[str], None] | None = None,
) -> RunDocument:
    """Measure a checked request (``predictions``: judged instead of those of its ``guess`` file), then write
    the document to ``json`` and the page to ``html``, each tried whatever became of the other: what could not be
    written (a full disk) is in the returned document's ``unwritten``, never raised, so the measurement is kept
    (on screen, and in the other file), as are the profiler traces that could not be kept in ``trace_dir``.  A
    stop raises :class:`attnscope.api.campaign.Interrupted` after saving."""
    req = checked.request
    doc = _measure(
        checked.case,
        checked.user_mods,
        req.variants,
        checked.options,
        executor=req.executor,
        timeout_s=req.timeout_s,
        ncu=req.ncu,
        predictions=predictions if predictions is not None else checked.predictions,
        on_result=None,
        on_event=on_event,
        on_note=on_note,
        partial_to=req.json,
        annotated=True,
    )
    from attnscope.api.report import traces_not_kept, write_outputs

    doc.unwritten = write_outputs(dict(doc), json=req.json, html=req.html, assets=req.assets)
    if "json" in doc.unwritten and doc.partial_saved:
        doc.unwritten["json"] += f"; it holds the {doc.partial_saved} variant(s) written before (marked partial)"
    if req.trace_dir:
        doc.unwritten.update(traces_not_kept(doc["results"], req.trace_dir))
    return doc


def run_request(
    req: RunRequest,
    *,
    on_event: Callable[[Event], None] | None = None,
    on_note: Callable[[str], None] | None = None,
) -> RunDocument:
    """Everything ``attnscope run`` does, from plain values: :func:`check_run`, then :func:`run_checked`."""
    return run_checked(check_run(req), on_event=on_event, on_note=on_note)
