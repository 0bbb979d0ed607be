"""The library API, mirroring the CLI: ``run`` a case (``run_request``: what ``attnscope run`` is asked, in plain
values), ``sweep`` a grid, ``analyze`` a trace (``analyze_traces`` for the document of several), ``recommend`` from
rows, ``diff_files``, ``write_html`` (the report), ``variant_support``, and ``annotate`` a document (the one place
insights and the recommendation are computed).
Each command of the CLI parses its arguments, calls one of these and prints what it returns."""

from __future__ import annotations

from collections.abc import Iterable
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
    "model",
    "recommend",
    "run",
    "run_request",
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
    if tr.num_skipped == tr.num_events:  # every event malformed: nothing was read, a fingerprint would be empty
        raise TraceError(f"{path}: none of its {tr.num_events:,} events could be read (each lacks a field it needs)")
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
    # a trace named after a built-in variant carries its declared flags (no plugin code is run for a trace); the
    # declarations are imported only for such a name (~5 ms of start-up, the variant modules and their patterns)
    known = None
    if name in BUILT_IN_VARIANTS:
        from attnscope.variants.builtin import BY_NAME

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


# The names of attnscope.variants.builtin.BY_NAME (tests/api/test_analyze_names.py keeps the two the same).
BUILT_IN_VARIANTS = frozenset(
    {
        "cudnn_frontend",
        "flash_attn2",
        "flash_attn3",
        "flashinfer_decode",
        "flashinfer_prefill",
        "flex",
        "flex_compiled",
        "flex_compiled_user",
        "flex_user",
        "naive",
        "naive_inplace",
        "paged_flashinfer",
        "paged_flex",
        "paged_flex_compiled",
        "paged_flex_flash",
        "paged_flex_triton",
        "paged_flex_triton_decode",
        "paged_gather_flash",
        "paged_gather_flash_fa3",
        "paged_gather_flash_fa4",
        "paged_gather_sdpa",
        "paged_varlen",
        "sageattention",
        "sdpa_cudnn",
        "sdpa_default",
        "sdpa_efficient",
        "sdpa_flash",
        "sdpa_math",
        "xformers",
    }
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
            f"{len(calls)} attention call(s){replayed}: forward 4·D·(score entries kept, over batch and heads), "
            f"backward {shape.BACKWARD_FLOPS_FACTOR}× that; TFLOP/s over the GPU time launched inside attention ops "
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


def run_request(request: Any, **kwargs: Any) -> Any:
    """Everything `attnscope run` does, from what it is asked in plain values (:class:`attnscope.api.running.
    RunRequest`): every check, the measurement, the document and the page written (see
    :func:`attnscope.api.running.run_request`)."""
    from attnscope.api.running import run_request as _run_request

    return _run_request(request, **kwargs)


def sweep(cases: Iterable[Case], variants: str | list[str] | None = None, **kwargs: Any) -> Any:
    """Every variant on every case, each row appended to the JSONL file ``out`` as it comes; returns this call's
    results (see :func:`attnscope.api.sweeping.sweep`)."""
    from attnscope.api.sweeping import sweep as _sweep

    return _sweep(cases, variants, **kwargs)


def model(grid: Any, **kwargs: Any) -> Any:
    """A transformers model's step, per attention implementation, over a grid of points (``grid``:
    :meth:`attnscope.api.modeling.ModelGrid.build`): the annotated model document (see
    :func:`attnscope.api.modeling.model`)."""
    from attnscope.api.modeling import model as _model

    return _model(grid, **kwargs)


def annotate(doc: dict[str, Any], predictions: list[Any] | None = None) -> dict[str, Any]:
    """A copy of a result document with insights per row and the recommendation (and verdicts)."""
    from attnscope.analysis.annotate import annotate as _annotate

    def declared(name: str) -> tuple[str, str | None] | None:
        from attnscope.variants import REGISTRY  # plain declarations, no torch; asked only for rows without flags

        v = REGISTRY.get(name)  # a built-in name is answered without asking the plugins
        return None if v is None else (v.family, v.backend)

    return _annotate(doc, predictions, declared)
