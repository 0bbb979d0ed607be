"""The attention job (:class:`AttentionJob`: one variant on one case, the ``Job`` protocol of
:mod:`attnscope.execute.job`) and ``measure_one(job) -> Result``: everything one measurement needs, built inside
the process that runs it.

Inputs, the fp64 reference and the device's matmul peak are cached per process, so a worker that
gets the jobs of one case in a row builds them once.  Needs torch.
"""

from __future__ import annotations

import contextlib
import gc
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from attnscope.core.files import keep_file, os_error_text, private_dir
from attnscope.core.flops import attention_flops, mode_flops, tflops
from attnscope.core.types import Case, Env, PeakRate, Result, Status
from attnscope.execute.job import Options, job_key
from attnscope.measure import device_state
from attnscope.measure import timing as measure
from attnscope.variants import Inputs, Prepared, Unsupported, Variant, get
from attnscope.workloads import sensitivity
from attnscope.workloads.attention import TORCH_DTYPES, make_inputs, reference, reference_grads, reference_skipped
from attnscope.workloads.reference import too_large


@dataclass(frozen=True)
class AttentionJob:
    """One variant on one case (the case carries the mode).  Plain data: it crosses processes.

    ``explicit``: the variant was asked for by name, so an opt-in variant runs.
    ``trace_name``: the trace file's name under ``options.trace_dir``.
    """

    case: Case
    variant: str
    options: Options = field(default_factory=Options)
    explicit: bool = True
    trace_name: str | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return job_key(self.variant, self.case.to_dict())

    def label(self) -> str:
        return f"{self.variant} · {self.case.label()}"

    def measure(self) -> Result:
        """Measure in this process (needs torch): :func:`measure_one`."""
        return measure_one(self)

    def failed(self, status: Status, reason: str | None) -> Result:
        """The row of a job that produced no measurement (skipped, oom, error, crashed, timeout), with the
        variant's declared family and backend; used by the worker and by executors whose worker could not answer."""
        v = get(self.variant)
        return Result(variant=v.name, case=self.case, status=status, reason=reason, family=v.family, backend=v.backend)


# One workload (the last case's) and the peaks: a sweep sorts its jobs by case.
_workload: dict[tuple[Case, int], tuple[Inputs, Any]] = {}
_peaks: dict[tuple[str, str], PeakRate] = {}
_envs: dict[str, Env] = {}
# Free memory per case, read before that case's tensors exist: what sizing's estimates are weighed against.
_free: dict[Case, int | None] = {}
# Per workload: whether the error check can see each modifier (workloads/sensitivity.py), and its notes.
_checks: dict[tuple[Case, int], tuple[list[dict[str, Any]], list[str], list[sensitivity.Probe]]] = {}

# Messages of errors after which CUDA refuses all further work in this process.
STICKY_CUDA = (
    "illegal memory access",
    "device-side assert",
    "unspecified launch failure",
    "misaligned address",
    "illegal instruction",
    "CUDA error: an illegal",
    "uncorrectable ECC",
)


def import_all() -> None:
    """In a worker process: import what every job needs, so that a fresh worker pays for it at start, not
    inside a job's timeout; then freeze those objects out of the collector's sight, so that the
    ``gc.collect()`` after each job scans only what jobs made (0.08 s → microseconds with torch loaded)."""
    import torch  # noqa: F401

    gc.collect()
    gc.freeze()


def measure_peak(case: Case) -> PeakRate:
    """The matmul rate of this device in the case dtype (and fp32 on a CPU), measured now: the % of peak
    baseline (attnscope.measure.peak says which one and why)."""
    import torch

    from attnscope.measure.peak import choose_peak

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
            else measure.time_host(lambda: a @ b, cuda=False, budget_s=0.2, lo=3, hi=10)  # noqa: B023
        )
        rates[name] = 2 * n**3 / (t.min_us * 1e-6) / 1e12
        what.append(f"{n}×{n}×{n} {name} torch.matmul ({t.num_samples} samples)")
    rate, source = choose_peak(case.dtype, rates, ", ".join(what))
    tbps, how = read_bandwidth(case.device) if cuda else (None, None)
    return PeakRate(rate, source, tbps, how)


def read_bandwidth(device: str) -> tuple[float | None, str | None]:
    """The device memory's read rate, measured now: ``x.sum()`` with fp32 accumulation over a bf16 tensor of up to
    2 GiB (an eighth of the free memory at most), fastest of its CUDA-event samples, in TB/s (10^12 B/s).  A plain
    copy reads and writes, so it is no read ceiling; a kernel may still read faster than this probe."""
    import torch

    free, _ = torch.cuda.mem_get_info(torch.device(device))
    nbytes = min(2 * 1024**3, free // 8) // 2 * 2
    if nbytes < 64 * 1024**2:
        return None, None
    x = torch.ones(nbytes // 2, device=device, dtype=torch.bfloat16)
    t = measure.time_gpu(lambda: x.sum(dtype=torch.float32), budget_s=0.3, flush_l2=False, lo=5, hi=20)
    tbps = nbytes / (t.min_us * 1e-6) / 1e12
    return tbps, f"x.sum() in fp32 over {nbytes:,} B of bf16 ({t.num_samples} samples), fastest sample"


def free_memory() -> None:
    """Drop cached workloads and return CUDA's cached blocks: after an OOM the next case must fit."""
    _workload.clear()
    gc.collect()
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _env(device: str) -> Env:
    if device not in _envs:
        from attnscope.measure import env

        _envs[device] = env.collect(device)
    return _envs[device]


def _inputs_and_reference(case: Case, seed: int) -> tuple[Inputs, Any]:
    key = (case, seed)
    if key not in _workload:
        _workload.clear()
        import torch

        torch.manual_seed(seed)
        x = make_inputs(case, seed, requires_grad=case.mode == "fwd_bwd")
        _checks.clear()
        out = None
        costly = sensitivity.too_costly(case) if too_large(case) is None else None
        if case.is_serving:  # checked per sequence against the block table instead (workloads/paged_cache.py)
            pass
        elif costly:
            _checks[key] = ([], [costly], [])
        elif too_large(case) is None:  # can the error check see each modifier? (and the forward reference)
            out, rows, notes, probes = sensitivity.check(case, x, measure.TOLERANCE[case.dtype])
            _checks[key] = (rows, notes, probes)
        if case.mode == "fwd_bwd":
            ref = reference_grads(case, x)
        else:
            out = reference(case, x) if out is None else out
            ref = {"out": out} if out is not None else None
        _workload[key] = (x, ref)
    return _workload[key]


def failure(job: AttentionJob, e: BaseException, during: str = "") -> Result:
    """An oom / crashed / error row with the exception on one line: one job never stops the sweep."""
    import torch

    text = " ".join(str(e).split())
    msg = f"{type(e).__name__}{during}: {text[:400]}"
    if isinstance(e, torch.cuda.OutOfMemoryError) or "can't allocate memory" in text:
        free_memory()
        return job.failed("oom", f"out of memory{during}: {str(e).splitlines()[0] if str(e) else ''}")
    if any(s in text for s in STICKY_CUDA) or type(e).__name__ == "AcceleratorError":
        return job.failed("crashed", f"CUDA fault (sticky: this worker is replaced){during}: {text[:400]}")
    return job.failed("error", msg)


def _with_backward(fn: Any, x: Inputs) -> Any:
    """One call = the forward and autograd's dq, dk, dv for the fixed dO (no .grad accumulation)."""
    import torch

    leaves = (x.q, x.k, x.v)
    go = x.grad_out

    def call() -> Any:
        out = fn()
        return (out, *torch.autograd.grad(out, leaves, go))

    return call


def _errors(outs: Any, ref: dict[str, Any] | None) -> tuple[dict[str, float], bool]:
    """Relative error of each output against the reference; without one, only finiteness is checked."""
    import torch

    outs = outs if isinstance(outs, tuple) else (outs,)
    if ref is None:
        return {}, not all(bool(torch.isfinite(o).all()) for o in outs)
    got = dict(zip(ref, outs, strict=True))
    for name, r in ref.items():  # the plugin contract, before torch's own broadcasting error
        if tuple(got[name].shape) != tuple(r.shape):
            raise ValueError(
                f"the variant broke the plugin contract: its {name} has shape {tuple(got[name].shape)}, expected "
                f"{tuple(r.shape)} ([batch, heads, seq_q, head_dim], as the inputs' layout)"
            )
    errs: dict[str, float] = {}
    bad = False
    scale = measure.rms(*ref.values())  # the floor's scale: the whole result, so an all-zero dq has one
    for name, r in ref.items():
        errs[name], nf = measure.relative_error(got[name], r, scale)
        bad = bad or nf
    return errs, bad


def measure_one(job: AttentionJob) -> Result:
    """Measure ``job``; every failure becomes a row (skipped, oom, error, crashed), never an exception."""
    t0 = time.perf_counter()
    v = get(job.variant)
    case = job.case
    reason = v.refusal(case)
    if reason is None and not job.explicit and case.device.split(":")[0] in v.opt_in_on:
        reason = v.opt_in_reason
    if reason is None:
        reason = _size_skip(case, job.variant, job.options.seed)
    if reason:
        return job.failed("skipped", reason)
    try:
        r = _measure(v, job)
    except Exception as e:  # noqa: BLE001 - one job's failure must not lose the others
        r = failure(job, e, " while preparing inputs")
    cost = dict(r.cost_s or {})
    cost["total"] = time.perf_counter() - t0
    return replace(r, env=_env(case.device), family=v.family, backend=v.backend, cost_s=cost)


def _size_skip(case: Case, name: str, seed: int) -> str | None:
    """Why this variant is not run (memory or time, estimated by attnscope.workloads.sizing), else None."""
    from attnscope.measure import env
    from attnscope.workloads import sizing

    if case not in _free:
        if (case, seed) not in _workload:
            free_memory()  # the last case's tensors are not this case's concern
        _free.clear()
        _free[case] = env.free_memory_bytes(case.device)
    free = _free[case]
    if free is None:
        return None
    peak = _peaks.get((case.device, case.dtype))
    # twice the fastest matmul measured here (or the device kind's ceiling): a time floor no kernel beats
    rate = 2 * peak.tflops if peak else sizing.CEILING_TFLOPS["cuda" if case.device.startswith("cuda") else "cpu"]
    return sizing.variant_skip(case, name, free, rate)


def _measure(v: Variant, job: AttentionJob) -> Result:
    opts, case = job.options, job.case
    t0 = time.perf_counter()
    x, ref = _inputs_and_reference(case, opts.seed)
    peak = None
    if opts.measure_peak:
        pk = (case.device, case.dtype)
        if pk not in _peaks:
            _peaks[pk] = measure_peak(case)
        peak = _peaks[pk]
    cost = {"workload": time.perf_counter() - t0}
    t0 = time.perf_counter()
    try:
        prep = v.prepare(case, x)
    except Unsupported as e:
        return job.failed("skipped", str(e))
    except Exception as e:  # noqa: BLE001 - one variant's failure must not lose the others
        return failure(job, e, " while preparing")
    cost["prepare"] = time.perf_counter() - t0
    checks = _modifier_checks(v, case, _checks.get((case, opts.seed)))
    # The trace is exported into a private folder (Kineto's own `<path>.tmp` too), read there, then moved to
    # --trace-dir: a link planted there is never written through, and a full disk there costs the trace, not the row.
    with private_dir() as tmp:
        name = job.trace_name or f"{v.name}.json"
        path = tmp / name
        fn = _with_backward(prep.fn, x) if case.mode == "fwd_bwd" else prep.fn

        def copy() -> Any:  # the call again on a fresh copy of its inputs: cold-L2 graph replay rotates them
            xc = _copy_inputs(x)
            p = v.prepare(case, xc)
            return _with_backward(p.fn, xc) if case.mode == "fwd_bwd" else p.fn

        try:
            r = _observe(job, prep, fn, ref, peak, path, cost, copy, working_set_bytes(x))
            r = replace(r, modifier_checks=checks[0], notes=r.notes + tuple(checks[1])) if checks else r
        except Exception as e:  # noqa: BLE001
            r = failure(job, e, "")
        if r.status == "ok" and "rebuild" in r.extra:
            r = replace(r, notes=(rebuild_note(r.extra, looped=bool(opts.steps)), *r.notes))
        if r.status == "ok" and opts.steps and case.is_serving:
            r = _with_decode_loop(r, job, path.stem)
        if opts.trace_dir and r.status == "ok":
            r = _keep_trace(r, path, Path(opts.trace_dir), name)
        t0 = time.perf_counter()
        with contextlib.suppress(Exception):
            free_after(case)
        # gc and the CUDA cache: paid by every job that ran
        return replace(r, cost_s={**(r.cost_s or {}), "cleanup": time.perf_counter() - t0})


def rebuild_note(extra: dict[str, Any], *, looped: bool) -> str:
    """A serving variant's per-shape work, done once before timing; where the row has no decode loop, what measures
    one (never where the user already asked for it)."""
    head = f"per-shape work ({extra['rebuild']}) done once before timing: {extra['plan_ms']:.2f} ms host; "
    if looped:
        return head + "the decode loop below redoes it at each new shape"
    return head + "a decode loop redoes it per new shape (run --steps)"


def _keep_trace(r: Result, path: Path, trace_dir: Path, name: str) -> Result:
    """The row with its trace moved to ``trace_dir``; when that fails (a full disk), the row as measured, saying
    why its trace was not kept."""
    try:
        kept = keep_file(path, trace_dir, name)
    except OSError as e:
        return replace(r, notes=(*r.notes, f"trace not kept in {trace_dir}: {os_error_text(e)}"))
    return replace(r, trace_path=str(kept))


def _with_decode_loop(r: Result, job: AttentionJob, stem: str) -> Result:
    """The row with its decode loop (attnscope.execute.serve) in ``extra["decode_loop"]``; a loop that fails is a
    note, never the row's loss."""
    from attnscope.execute.serve import decode_loop

    opts = job.options
    t0 = time.perf_counter()
    try:
        loop = decode_loop(
            job.case, job.variant, opts.steps, bucket=opts.bucket, seed=opts.seed, trace_dir=opts.trace_dir,
            trace_stem=f"{stem}-",
        )  # fmt: skip
    except Exception as e:  # noqa: BLE001 - the single-call measurement stands
        text = " ".join(str(e).split())[:300]
        return replace(r, notes=(*r.notes, f"decode loop of {opts.steps} steps failed: {type(e).__name__}: {text}"))
    cost = {**(r.cost_s or {}), "decode_loop": time.perf_counter() - t0}
    return replace(r, extra={**r.extra, "decode_loop": loop}, cost_s=cost)


def _modifier_checks(
    v: Variant, case: Case, found: tuple[list[dict[str, Any]], list[str], list[sensitivity.Probe]] | None
) -> tuple[list[dict[str, Any]], list[str]] | None:
    """The case's modifier checks, with this variant's verdict on each probe (its forward run once on the
    probe's inputs): a variant that ignores a modifier the usual inputs cannot show fails here."""
    if found is None:
        return None
    rows, notes = [dict(r) for r in found[0]], list(found[1])
    for probe in found[2]:
        row = next(r for r in rows if r["modifier"] == probe.modifier)
        try:
            out = v.prepare(case, probe.inputs).fn()
            row["variant"] = sensitivity.judge(out, probe)
        except Exception as e:  # noqa: BLE001 - the probe never costs the measurement
            row["variant"] = {"applied": None, "why": f"{type(e).__name__}: {' '.join(str(e).split())[:200]}"}
            continue
        notes.append(sensitivity.probe_note(row))
    return rows, notes


def free_after(case: Case) -> None:
    """What the last variant left is freed; what survives is frozen (gc.freeze), so that the next collect walks
    only what was made since, not the ~3·10^5 objects of torch and dynamo (0.15 s or more each time on a CPU).
    The campaign loop (attnscope.api.campaign) unfreezes when it ends."""
    gc.collect()
    gc.freeze()
    if case.device.startswith("cuda"):
        import torch

        torch.cuda.empty_cache()


def _context_overhead_us(prep: Prepared) -> float | None:
    if prep.context is contextlib.nullcontext:
        return None
    ctx = prep.context

    def enter_exit() -> None:
        with ctx():
            pass

    return measure.time_host(enter_exit, cuda=False, budget_s=0.05, lo=20, hi=200).median_us


def _copy_inputs(x: Inputs) -> Inputs:
    """The same values in fresh memory (leaves for autograd where the originals were)."""

    def c(t: Any) -> Any:
        return None if t is None else t.detach().clone().requires_grad_(t.requires_grad)

    return Inputs(q=c(x.q), k=c(x.k), v=c(x.v), scale=x.scale, grad_out=c(x.grad_out))


def working_set_bytes(x: Inputs) -> int:
    """What one call reads and writes at least: q, k, v (and dO) and an output the size of q (in fwd_bwd also
    dq, dk, dv the size of q, k, v); the bytes cold-L2 replay must keep out of the L2."""
    ins = sum(t.numel() * t.element_size() for t in (x.q, x.k, x.v, x.grad_out) if t is not None)
    out = x.q.numel() * x.q.element_size()
    if x.grad_out is not None:
        out += sum(t.numel() * t.element_size() for t in (x.q, x.k, x.v))
    return int(ins + out)


_samplers: dict[str, tuple[Any, str | None]] = {}


def _sampler(device: str) -> tuple[Any, str | None]:
    """One NVML sampler per device and process (attnscope.measure.device_state), or why there is none."""
    if device not in _samplers:
        import torch

        dev = torch.device(device)
        idx = dev.index if dev.index is not None else torch.cuda.current_device()
        uuid = getattr(torch.cuda.get_device_properties(idx), "uuid", None)
        _samplers[device] = device_state.open_sampler(str(uuid) if uuid else None, idx)
    return _samplers[device]


def _tokens_per_call(case: Case) -> int | None:
    """Query tokens per call at decode (one query per sequence): batch; None elsewhere (energy per call only)."""
    return case.batch if case.seq_q == 1 else None


def _clock_peak(case: Case, state: dict[str, Any], rate: float | None) -> dict[str, Any]:
    """% of the compute peak at the sampled SM clock, for the row's rate (attnscope.core.gpus' FLOPs per clock)."""
    import torch

    from attnscope.core.gpus import flops_per_clock_per_sm

    props = torch.cuda.get_device_properties(torch.device(case.device))
    per = flops_per_clock_per_sm((props.major, props.minor), case.dtype)
    out = device_state.clock_peak(state, per, props.multi_processor_count, rate)
    if per is None:
        out["peak_why"] = f"no FLOPs per clock per SM known for sm{props.major}{props.minor} in {case.dtype}"
    return out


def _l2_and_spare(device: str) -> tuple[int | None, int | None]:
    """The device's L2 bytes (torch.cuda.get_device_properties(...).L2_cache_size; None where torch lacks it)
    and the share of free memory the input copies may take."""
    import torch

    props = torch.cuda.get_device_properties(torch.device(device))
    l2 = getattr(props, "L2_cache_size", None)
    free, _ = torch.cuda.mem_get_info(torch.device(device))
    return (int(l2) if l2 else None), int(free * measure.COPY_MEMORY_SHARE)


def _observe(
    job: AttentionJob,
    prep: Prepared,
    fn: Any,
    ref: dict[str, Any] | None,
    peak: PeakRate | None,
    path: Path,
    cost: dict[str, float],
    copy: Any = None,
    ws_bytes: int | None = None,
) -> Result:
    """Warm up, check numerics, time, measure memory, capture one call and fingerprint it."""
    import torch

    from attnscope.analysis.fingerprint.build import fingerprint
    from attnscope.measure.capture import capture
    from attnscope.trace import load_trace

    case, opts = job.case, job.options
    cuda = case.device.startswith("cuda")
    t0 = time.perf_counter()
    with prep.context():
        # warm-up: caches, autotuning, lazy inits; on a CPU one call (the timer makes one more before its samples)
        for _ in range(3 if cuda else 1):
            out = fn()
        if cuda:
            torch.cuda.synchronize()
        errs, nonfinite = _errors(out, ref)
        del out
        t1 = time.perf_counter()
        cpu_t = (
            measure.time_host_cuda(fn, budget_s=opts.timing_budget_s)
            if cuda
            else (measure.time_host(fn, cuda=False, budget_s=opts.timing_budget_s))
        )
        gpu_t = (
            measure.time_gpu(fn, budget_s=opts.timing_budget_s, flush_l2=opts.flush_l2, host_us=cpu_t.median_us)
            if cuda
            else None
        )
        graph_t, graph_why, graphs = None, None, None
        state: dict[str, Any] = device_state.unavailable("CPU run: NVML reads GPUs only, so no clock, power or energy")
        if cuda:
            l2, spare = _l2_and_spare(case.device)
            sampler, no_nvml = _sampler(case.device)
            if sampler is not None:
                sampler.reset()
            graph_t, graph_why, graphs = measure.time_graphs(
                fn,
                copy,
                budget_s=opts.timing_budget_s,
                working_set_bytes=ws_bytes,
                l2_bytes=l2,
                spare_bytes=spare,
                sampler=sampler,
            )
            if sampler is not None:
                state = sampler.summary(_tokens_per_call(case))
            else:
                state = device_state.unavailable(no_nvml or "no NVML sampler")
        peak_mem = measure.cuda_peak_extra_bytes(fn) if cuda else None
        t2 = time.perf_counter()
        capture(fn, path, cuda=cuda)
    t3 = time.perf_counter()
    fp = fingerprint(load_trace(path))
    cost.update(warmup=t1 - t0, timing=t2 - t1, capture=t3 - t2, fingerprint=time.perf_counter() - t3)
    notes = list(prep.notes)
    if ref is None:
        notes.append(reference_skipped(case))
    overhead = _context_overhead_us(prep)
    if overhead is not None:
        notes.append(f"entering+leaving its context manager costs {overhead:.1f} µs per use (kept out of CPU µs)")
    mem_src = "torch.cuda.max_memory_allocated over one call, minus allocated before it"
    if not cuda:
        peak_mem = fp.trace_peak_memory_bytes
        mem_src = "profiler [memory] events of the profiled call (peak minus start)"
    flops = mode_flops(attention_flops(case), case.mode)
    rate = tflops(flops, gpu_t.median_us if gpu_t else cpu_t.median_us)
    if cuda:
        state.update(_clock_peak(case, state, rate))
    return Result(
        variant=job.variant,
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
        max_rel_error=max(errs.values()) if errs else None,
        error_tolerance=measure.TOLERANCE[case.dtype],
        nonfinite=nonfinite,
        compile_time_s=prep.compile_time_s,
        trace_path=None,  # set once the trace is kept in --trace-dir (_keep_trace)
        peak=peak,
        rel_errors=errs or None,
        notes=tuple(notes),
        context_overhead_us=overhead,
        sdpa_why=prep.extra.get("sdpa_why"),
        extra={k: val for k, val in prep.extra.items() if k != "sdpa_why"},
        gpu_time_graph=graph_t,
        gpu_time_graph_why=graph_why,
        timing=graphs,
        device_state=state,
        # stream time (the same inputs every call) against the warm graph figure: like with like
        launch=measure.launch_overhead(gpu_t, graphs.graph_warm if graphs else graph_t),
        cost_s=cost,
    )
