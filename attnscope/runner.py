"""Run variants on one case: prepare, measure, capture, fingerprint.  Needs torch."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnscope import env as env_mod
from attnscope import measure
from attnscope.analysis.fingerprint import fingerprint
from attnscope.flops import attention_flops, tflops
from attnscope.trace import load_trace
from attnscope.types import Case, Env, Result, Timing
from attnscope.variants import Inputs, Unsupported, Variant, resolve

TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


@dataclass(frozen=True)
class Options:
    flush_l2: bool = False
    timing_budget_s: float = 0.5  # per variant, per timer
    seed: int = 0
    trace_dir: Path | None = None
    measure_peak: bool = True


@dataclass(frozen=True)
class PeakRate:
    tflops: float
    source: str


@dataclass
class RunReport:
    env: Env
    case: Case
    results: list[Result]
    peak: PeakRate | None


def make_inputs(case: Case, seed: int) -> Inputs:
    import torch

    g = torch.Generator(device="cpu").manual_seed(seed)
    dt = getattr(torch, TORCH_DTYPES[case.dtype])

    def rnd(h: int, s: int) -> torch.Tensor:
        t = torch.randn(case.batch, h, s, case.head_dim, generator=g, dtype=torch.float32)
        return t.to(device=case.device, dtype=dt)

    q = rnd(case.heads, case.seq_q)
    k = rnd(case.num_kv_heads, case.num_seq_kv)
    v = rnd(case.num_kv_heads, case.num_seq_kv)
    return Inputs(q=q, k=k, v=v, scale=case.head_dim**-0.5)


def reference(case: Case, x: Inputs) -> Any:
    """fp64 attention with the case's mask and score modification, in chunks; None when too large."""
    from attnscope.reference import reference_chunked, too_large

    if too_large(case) is not None:
        return None
    return reference_chunked(case, x.q, x.k, x.v, x.scale)["out"]


def measure_peak(case: Case) -> PeakRate:
    """The matmul rate of this device in the case dtype (and fp32 on a CPU), measured now: the % of peak
    baseline (attnscope.peak says which one and why)."""
    import torch

    from attnscope.peak import choose_peak

    cuda = case.device.startswith("cuda")
    rates: dict[str, float] = {}
    what = []
    for name in [case.dtype] if cuda or case.dtype == "fp32" else [case.dtype, "fp32"]:
        # fp16 matmul on a CPU without native fp16 GEMM takes seconds at 1024³: a smaller one tells the rate
        n = 8192 if cuda else (256 if name == "fp16" else 1024)
        dt = getattr(torch, TORCH_DTYPES[name])
        a = torch.randn(n, n, device=case.device, dtype=torch.float32).to(dt)
        b = torch.randn(n, n, device=case.device, dtype=torch.float32).to(dt)
        t = (
            measure.time_gpu(lambda: a @ b, budget_s=0.3, flush_l2=False, lo=5, hi=20)  # noqa: B023
            if cuda
            else measure.time_host(lambda: a @ b, cuda=False, budget_s=0.5, lo=3, hi=10)  # noqa: B023
        )
        rates[name] = 2 * n**3 / (t.min_us * 1e-6) / 1e12
        what.append(f"{n}×{n}×{n} {name} torch.matmul ({t.num_samples} samples)")
    rate, source = choose_peak(case.dtype, rates, ", ".join(what))
    return PeakRate(rate, source)


def _skip(v: Variant, case: Case, reason: str, status: str = "skipped") -> Result:
    return Result(variant=v.name, case=case, status=status, reason=reason)  # type: ignore[arg-type]


def _failed(v: Variant, case: Case, e: BaseException, during: str) -> Result:
    """An 'oom' or 'error' row with the exception on one line: one variant never stops the run."""
    import torch

    if isinstance(e, torch.cuda.OutOfMemoryError):
        return _skip(v, case, f"out of memory{during}: {str(e).splitlines()[0]}", "oom")
    return _skip(v, case, f"{type(e).__name__}{during}: {' '.join(str(e).split())[:400]}", "error")


def _graph_extra(stream: Timing | None, graph: Timing | None, why: str | None) -> dict[str, Any]:
    """Device time by CUDA-graph replay beside the stream time, or why the call cannot be captured."""
    if graph is None:
        return {"gpu_time_graph": None, "gpu_time_graph_why": why}
    return {"gpu_time_graph": dataclasses.asdict(graph), "launch": measure.launch_overhead(stream, graph)}


def run_variant(
    v: Variant, case: Case, x: Inputs, ref: Any, opts: Options, peak: PeakRate | None, trace_dir: Path
) -> Result:
    import torch

    cuda = case.device.startswith("cuda")
    reason = v.check(case)
    if reason:
        return _skip(v, case, reason)
    try:
        prep = v.prepare(case, x)
    except Unsupported as e:
        return _skip(v, case, str(e))
    except Exception as e:  # noqa: BLE001 - one variant's failure must not lose the others
        return _failed(v, case, e, " while preparing")
    try:
        with prep.context():
            for _ in range(3):  # warm-up: caches, autotuning, lazy inits
                out = prep.fn()
            if cuda:
                torch.cuda.synchronize()
            if ref is not None:
                err, nonfinite = measure.relative_error(out, ref)
            else:  # the reference was too large to compute: the error is not checked, finiteness is
                err, nonfinite = None, not bool(torch.isfinite(out).all())
            del out
            cpu_t = measure.time_host(prep.fn, cuda=cuda, budget_s=opts.timing_budget_s)
            gpu_t = (
                measure.time_gpu(
                    prep.fn, budget_s=opts.timing_budget_s, flush_l2=opts.flush_l2, host_us=cpu_t.median_us
                )
                if cuda
                else None
            )
            graph_t, graph_why = measure.time_graph(prep.fn, budget_s=opts.timing_budget_s) if cuda else (None, None)
            peak_mem = measure.cuda_peak_extra_bytes(prep.fn) if cuda else None
            path = trace_dir / f"{v.name}.json"
            from attnscope.capture import capture

            capture(prep.fn, path, cuda=cuda)
    except Exception as e:  # noqa: BLE001 - one variant's failure must not lose the others
        return _failed(v, case, e, "")
    extra: dict[str, Any] = {"notes": list(prep.notes)} if prep.notes else {}
    if ref is None:
        from attnscope.reference import too_large

        big = too_large(case)
        extra.setdefault("notes", []).append(big.reason if big else "error not checked")
    extra.update(prep.extra)
    if cuda:
        extra.update(_graph_extra(gpu_t, graph_t, graph_why))
    if prep.context is not contextlib.nullcontext:
        ctx = prep.context

        def enter_exit() -> None:
            with ctx():
                pass

        c = measure.time_host(enter_exit, cuda=False, budget_s=0.05, lo=20, hi=200)
        extra["context_overhead_us"] = c.median_us
        extra.setdefault("notes", []).append(
            f"entering+leaving its context manager costs {c.median_us:.1f} µs per use (kept out of CPU µs)"
        )
    fp = fingerprint(load_trace(path))
    mem_src = "torch.cuda.max_memory_allocated over one call, minus allocated before it"
    if not cuda:
        peak_mem = fp.trace_peak_memory_bytes
        mem_src = "profiler [memory] events of the profiled call (peak minus start)"
    flops = attention_flops(case)
    t_us = gpu_t.median_us if gpu_t else cpu_t.median_us
    rate = tflops(flops, t_us)
    return Result(
        variant=v.name,
        case=case,
        status="ok",
        fingerprint=fp,
        gpu_time=gpu_t,
        cpu_time=cpu_t,
        peak_memory_bytes=peak_mem,
        peak_memory_source=mem_src,
        flops=flops,
        tflops=rate,
        pct_of_peak=(100.0 * rate / peak.tflops) if (rate is not None and peak) else None,
        max_rel_error=err,
        error_tolerance=measure.TOLERANCE[case.dtype],
        nonfinite=nonfinite,
        compile_time_s=prep.compile_time_s,
        trace_path=str(path) if opts.trace_dir else None,
        extra=extra,
    )


def _size_skip(case: Case, name: str, free: int | None, peak: PeakRate | None) -> str | None:
    """Why this variant is not run (memory or time, estimated by attnscope.sizing), else None."""
    from attnscope import sizing

    if free is None:
        return None
    # twice the fastest matmul measured here (or the device kind's ceiling): a time floor no kernel beats
    rate = 2 * peak.tflops if peak else sizing.CEILING_TFLOPS["cuda" if case.device.startswith("cuda") else "cpu"]
    return sizing.variant_skip(case, name, free, rate)


def run(
    case: Case,
    variants: str | list[str] | None = None,
    options: Options | None = None,
    on_result: Callable[[Result], None] | None = None,
    on_start: Callable[[str], None] | None = None,
) -> RunReport:
    """Run each variant on ``case``; ``variants=None`` is the device's default set."""
    import torch

    opts = options or Options()
    if case.device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' asked for, but torch sees no CUDA GPU (use --device cpu)")
    explicit = variants is not None
    chosen = resolve(variants)
    torch.manual_seed(opts.seed)
    free = env_mod.free_memory_bytes(case.device)  # before any tensor: what sizing's estimates are weighed against
    x = make_inputs(case, opts.seed)
    ref = reference(case, x)
    peak = measure_peak(case) if opts.measure_peak else None
    tmp = None
    if opts.trace_dir is not None:
        trace_dir = Path(opts.trace_dir)
        trace_dir.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.mkdtemp(prefix="attnscope-")
        trace_dir = Path(tmp)
    results: list[Result] = []
    dev = "cuda" if case.device.startswith("cuda") else "cpu"
    try:
        for v in chosen:
            if on_start:
                on_start(v.name)
            too_big = _size_skip(case, v.name, free, peak)
            if not explicit and dev in v.opt_in_on:
                r = _skip(v, case, v.opt_in_reason)
            elif too_big:
                r = _skip(v, case, too_big)
            else:
                r = run_variant(v, case, x, ref, opts, peak, trace_dir)
            results.append(r)
            if on_result:
                on_result(r)
            gc.collect()
            if dev == "cuda":
                torch.cuda.empty_cache()
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    return RunReport(env=env_mod.collect(case.device), case=case, results=results, peak=peak)
