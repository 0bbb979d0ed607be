"""The library API, mirroring the CLI: ``run`` a case, ``sweep`` a grid, ``analyze`` a trace (``analyze_traces``
for the document of several), ``recommend`` from rows, ``diff_files``, ``write_html`` (the report),
``variant_support``, and ``annotate`` a document (the one place insights and the recommendation are computed).
Each command of the CLI parses its arguments, calls one of these and prints what it returns."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from attnscope.analysis.fingerprint.build import Analysis, analyse
from attnscope.api.batch import analyze_traces
from attnscope.api.diff import diff_files, load_side
from attnscope.api.recommending import NothingMeasured, recommend
from attnscope.api.report import write_html
from attnscope.api.support import variant_support
from attnscope.core.types import Case, Result, Timing
from attnscope.trace import TraceError, load_trace, no_gc

__all__ = [
    "NothingMeasured",
    "analyze",
    "analyze_traces",
    "annotate",
    "case_from_trace",
    "diff_files",
    "load_side",
    "recommend",
    "run",
    "sweep",
    "variant_support",
    "write_html",
]


def analyze(
    path: str | Path,
    variant: str | None = None,
    *,
    summary: bool = True,
    require_gpu: bool = False,
    capture: str | Path | None = None,
) -> Result:
    """The fingerprint of a trace captured anywhere; fields a trace cannot tell stay None.

    ``summary`` adds the model-scale ``trace_summary`` (categories, attention families,
    launching ops, launch overhead, idle time, top copies and upcasts, CUDA graph replays, steps).
    ``require_gpu`` raises :class:`TraceError` for a trace without GPU events.
    ``capture``: a trace of the capture of the CUDA graphs this trace replays (analysis/fingerprint/graphs.py).
    """
    with no_gc():  # ~10^5 long-lived objects: collections would find nothing to free
        return _analyze(path, variant, summary=summary, require_gpu=require_gpu, capture=capture)


def _one_sample(us: float | None, method: str) -> Timing | None:
    """A trace holds one call: a timing of one sample, its quartiles all that value."""
    return Timing(us, us, us, us, 1, method) if us is not None else None


def _analyze(
    path: str | Path, variant: str | None, *, summary: bool, require_gpu: bool, capture: str | Path | None = None
) -> Result:
    from attnscope.analysis.fingerprint.breakdown import summarize

    tr = load_trace(path)
    if tr.num_events == 0:
        raise TraceError(f"{path}: the trace holds no events")
    if require_gpu and not tr.has_gpu:
        raise TraceError(
            f"{path}: no GPU events (kernel, gpu_memcpy, gpu_memset): profile with ProfilerActivity.CUDA,"
            " or pass require_gpu=False to fingerprint its CPU ops"
        )
    cap = load_trace(capture) if capture is not None else None
    an = analyse(tr, cap)
    fp = an.fingerprint
    trace_summary = summarize(tr, an) if summary and fp.device_kind == "gpu" else None
    gpu_t = _one_sample(fp.trace_gpu_time_us, "sum of GPU event durations in the trace (one sample)")
    cpu_t = _one_sample(fp.trace_cpu_time_us, "host span of the traced region (one sample, profiler overhead included)")
    name = variant or Path(path).name.removesuffix(".gz").removesuffix(".json")
    case, flops, rate, read = case_from_trace(an, fp.device_kind)
    from attnscope.analysis.fingerprint.model_split import breakdown as model_split

    split = model_split(tr)  # attention's share of a model step, where the trace names its modules
    from attnscope.variants.builtin import BY_NAME

    # a trace named after a built-in variant carries its declared flags (no plugin code is run for a trace)
    known = BY_NAME.get(name)
    return Result(
        variant=name,
        case=case,
        flops=flops,
        tflops=rate,
        status="ok",
        fingerprint=fp,
        gpu_time=gpu_t,
        cpu_time=cpu_t,
        peak_memory_bytes=fp.trace_peak_memory_bytes,
        peak_memory_source="profiler [memory] events in the trace" if fp.trace_peak_memory_bytes is not None else None,
        trace_path=str(path),
        source="trace",
        family=known.family if known else None,
        backend=known.backend if known else None,
        trace_summary=trace_summary,
        attention_calls=read.get("attention_calls"),
        case_unknown=read.get("case_unknown"),
        flops_basis=read.get("flops_basis"),
        flops_unknown=read.get("flops_unknown"),
        model_split=split,
    )


def case_from_trace(an: Analysis, device_kind: str) -> tuple[Case | None, int | None, float | None, dict[str, Any]]:
    """The case, FLOPs and TFLOP/s read from the trace's attention ops (analysis/shape.py), and what was read."""
    from attnscope.analysis.fingerprint import shape
    from attnscope.analysis.fingerprint.graphs import call_runs
    from attnscope.core.flops import tflops

    att = an.attribution
    at = shape.attention_calls_at(att.tree)
    calls = [c for _, c in at]
    runs = call_runs(att, [i for i, _ in at])  # a call a CUDA graph replayed N times ran N times
    fields, unknown = shape.case_of(calls)
    if not calls and any(k.category == "attention" for k in an.fingerprint.kernels):
        unknown = {
            "case": "attention kernels ran with no attention op above them (a library called outside aten, e.g. "
            "FlashInfer or the cuDNN frontend): no op records their shapes"
        }
    case = None
    if fields is not None:
        try:
            case = Case(**fields, device="cuda" if device_kind == "gpu" else "cpu")
        except ValueError as e:
            unknown = {"case": f"the recorded shape is not a valid case: {e}"}
    per_call = [c.flops() for c in calls]
    ran = sum(f * n for f, n in zip(per_call, runs, strict=True) if f is not None)
    flops = ran if calls and None not in per_call else None
    att_us = shape.attention_time_us(att.tree, att.launcher, att.durations) if att.gpu else 0.0
    rate = tflops(flops, att_us) if flops and att_us > 0 else None
    read: dict[str, Any] = {"attention_calls": [shape.to_dict(c) for c in calls], "case_unknown": unknown}
    if flops is not None:
        masks = "; ".join(dict.fromkeys(b for c in calls if (b := c.mask_basis())))
        replayed = f", run {sum(runs)} times (CUDA graph replays counted)" if att.graph is not None else ""
        read["flops_basis"] = (
            f"{len(calls)} attention call(s){replayed}: forward 4·H·D·(kept score entries), backward "
            f"{shape.BACKWARD_FLOPS_FACTOR}× that; TFLOP/s over the GPU time launched inside attention ops "
            f"({att_us:,.1f} µs); mask {masks}"
        )
    elif calls:
        read["flops_unknown"] = next((f"{c.op}: {_why_no_flops(c)}" for c in calls if c.flops() is None), "")
    return case, flops, rate, read


def _why_no_flops(c: Any) -> str:
    """Why one attention call has no FLOP count: the field the trace could not tell, and why."""
    for f in ("causal", "causal_align", "batch", "heads", "seq_q", "seq_kv", "head_dim"):
        if f in c.unknown:
            return c.unknown[f]
    return "shape not recorded"


def run(case: Case, variants: str | list[str] | None = None, **kwargs: Any) -> Any:
    """Everything `attnscope run` does; returns the annotated document (see :func:`attnscope.api.running.run`)."""
    from attnscope.api.running import run as _run

    return _run(case, variants, **kwargs)


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
    **options: Any,
) -> list[Result]:
    """Every variant on every case, one job each, each row appended to the JSONL file ``out`` as it comes.

    ``variants`` None is the default set less the built-ins that cannot run on the cases' devices (on a CPU:
    sdpa_efficient, sdpa_cudnn, flex_compiled; :func:`attnscope.execute.sweep.default_variants` says why).
    ``resume`` skips the (variant, case, mode) rows ``out`` already holds (a ``crashed`` row is measured again);
    without it a non-empty ``out`` is an error; a resume whose settings (``timing_budget_s``, ``flush_l2``, torch,
    the device) differ from those recorded in ``<out>.settings.json`` is refused unless ``force``.  Cases come
    from ``attnscope.core.cases.grid`` or anywhere; ``devices`` pins one worker per GPU (``["0", "1"]``).
    Everything the command line checks before work is checked here first, and refused with the same one-line
    ``ValueError`` (a device torch cannot reach, numbers that are no usable numbers, unknown variants).
    Returns this call's results (the file holds them all).
    """
    from attnscope.core.arguments import UsageError, check_number, check_seconds, check_timeout
    from attnscope.core.files import check_fresh_store
    from attnscope.execute import sweep_settings
    from attnscope.execute.executors import EXECUTORS, make_executor
    from attnscope.execute.job import Options
    from attnscope.execute.store import Store
    from attnscope.execute.sweep import plan, run_sweep
    from attnscope.measure.env import check_device
    from attnscope.variants import resolve

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
        raise UsageError("cases: expected attnscope.Case objects (attnscope.execute.sweep.grid makes them)")
    for device in dict.fromkeys(c.device for c in cases):  # a GPU case without a GPU: refused, not crashed rows
        check_device(device, "case.device")
    if executor == "ray":
        import importlib.util

        if importlib.util.find_spec("ray") is None:
            raise UsageError("executor='ray' needs Ray: pip install -e '.[ray]' in the attnscope clone")
        if ray_address:  # a cluster that does not answer: refused now, not after minutes in ray.init
            from attnscope.execute.executors.ray import check_reachable

            check_reachable(ray_address)
    store = Store(out)
    check_fresh_store(out, resume=resume, count=lambda: len(store.rows()))
    names = [v.name for v in resolve(variants)]
    if variants is None:  # the default set: the built-ins that can run on the cases' devices (as the CLI's)
        from attnscope.execute.sweep import default_variants

        names, _ = default_variants([c.device for c in cases])
    done = store.done() if resume else set()
    settings = None
    if cases:
        now = sweep_settings.current(opts.timing_budget_s, opts.flush_l2, cases[0].device)
        recorded = sweep_settings.load(out) if resume and store.path.exists() else None
        diff = sweep_settings.differences(recorded, now, sweep_settings.LIBRARY_WORDS) if recorded else []
        if diff and not force:
            raise UsageError(
                f"resume: the rows in {out} were measured with other settings ({'; '.join(diff)}, as recorded in "
                f"{sweep_settings.settings_path(out)}): pass the same settings, another out, or force=True"
            )
        settings = None if diff else now
    jobs = plan(cases, names, opts, explicit=variants is not None, done=done)
    ex = make_executor(executor, devices=devices, timeout_s=timeout_s, ray_address=ray_address, workers=workers)
    if settings is not None:
        from attnscope.document.schema import write_atomic

        write_atomic(sweep_settings.settings_path(out), settings)
    return run_sweep(jobs, store, ex, on_result=on_result)


def annotate(doc: dict[str, Any], predictions: list[Any] | None = None) -> dict[str, Any]:
    """A copy of a result document with insights per row and the recommendation (and verdicts)."""
    from attnscope.analysis.annotate import annotate as _annotate

    def declared(name: str) -> tuple[str, str | None] | None:
        from attnscope.variants import REGISTRY  # plain declarations, no torch; asked only for rows without flags

        v = REGISTRY.get(name)  # a built-in name is answered without asking the plugins
        return None if v is None else (v.family, v.backend)

    return _annotate(doc, predictions, declared)
