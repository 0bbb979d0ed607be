"""One model row: time, profile, split (the job that builds the model: attnscope.execute.model_job)."""

from __future__ import annotations

import time
from typing import Any

from attnscope.core.files import keep_file, os_error_text, private_dir
from attnscope.execute import model_bench as bench
from attnscope.execute.model_bench import BenchOptions, Skip


def _timing(t: Any) -> dict[str, Any] | None:
    if t is None:
        return None
    return {
        "median_us": round(t.median_us, 3),
        "p25_us": round(t.p25_us, 3),
        "p75_us": round(t.p75_us, 3),
        "min_us": round(t.min_us, 3),
        "num_samples": t.num_samples,
        "iqr_rel": round(t.iqr_rel, 4),
        "noisy": t.noisy,
        "method": t.method,
    }


def empty_row(impl: str, mode: str, status: str, reason: str | None) -> dict[str, Any]:
    return {
        "impl": impl,
        "mode": mode,
        "status": status,
        "reason": reason,
        "step_time_us": None,
        "step_time": None,
        "wall_time": None,
        "peak_memory_bytes": None,
        "attention": None,
        "rest": None,
        "layers": [],
        "insights": [],
    }


def _failure(impl: str, mode: str, e: BaseException) -> dict[str, Any]:
    if isinstance(e, Skip | NotImplementedError):
        return empty_row(impl, mode, "skipped", bench._one_line(e))
    status = "oom" if "OutOfMemoryError" in type(e).__name__ else "error"
    return empty_row(impl, mode, status, f"{type(e).__name__}: {bench._one_line(e)}")


def measure_row(model: Any, impl: str, mode: str, ids: Any, opts: BenchOptions, encoder: bool) -> dict[str, Any]:
    from attnscope.analysis.fingerprint.model_split import breakdown, fit_to_timed
    from attnscope.trace import load_trace

    cuda = opts.device.startswith("cuda")
    step, reset = bench.make_step(model, mode, ids, encoder)
    t0 = time.perf_counter()
    for _ in range(opts.warmup):
        reset()
        step()
    bench._sync(cuda)
    warmup_s = time.perf_counter() - t0  # includes any compilation (flex_attention) on first use
    base = bench.peak_reset(cuda)
    wall, gpu = bench.time_steps(step, reset, cuda=cuda, budget_s=opts.budget_s)
    peak = bench.peak_extra(cuda, base)
    # exported into a private folder (removed at once), read there, then moved to --trace-dir when one is named
    kept, not_kept = None, None
    with private_dir("attnscope-model-") as tmp:
        name = bench.trace_name(opts, impl, mode)
        path = bench.profile_step(model, step, reset, mode, tmp / name, cuda)
        split = breakdown(load_trace(path))
        if opts.trace_dir:
            try:
                kept = keep_file(path, opts.trace_dir, name)
            except OSError as e:  # a full disk costs the trace, not the row
                not_kept = f"trace not kept in {opts.trace_dir}: {os_error_text(e)}"
    main = gpu or wall
    if split is not None:  # the profiled step against the timed one: scaled to it where they differ widely
        split = fit_to_timed(split, main.median_us)
    row = empty_row(impl, mode, "ok", None)
    row.update(
        step_time_us=round(main.median_us, 3),
        step_time=_timing(main),
        wall_time=_timing(wall),
        peak_memory_bytes=peak,
        warmup_s=round(warmup_s, 3),
        trace_path=str(kept) if kept else None,
    )
    if not_kept:
        row["notes"] = [*(row.get("notes") or []), not_kept]
    if split is not None:
        row.update(
            attention=split["attention"],
            rest=split["rest"],
            layers=split["layers"],
            breakdown={
                k: split[k]
                for k in ("device", "method", "total_us", "unattributed_us", "scopes", "step", "profile")
                if k in split
            },
        )
    return row


def measure_decode_row(
    model: Any, cfg: Any, impl: str, ids: Any, opts: BenchOptions, steps: int, replay: str
) -> dict[str, Any]:
    """A decode row over a growing static cache (attnscope.execute.model_decode): the step time summarised over the
    steps, and ``steps``: the per-step series (time, KV length, attention's share)."""
    from attnscope.execute import model_decode

    # the loop's trace exported into a private folder (removed at once), moved to --trace-dir when one is named
    kept, not_kept = None, None
    with private_dir("attnscope-model-") as tmp:
        name = bench.trace_name(opts, impl, f"decode_{replay}_{steps}steps")
        path = tmp / name
        got = model_decode.measure(model, cfg, ids, steps, replay, opts, path)
        if opts.trace_dir and path.exists():
            try:
                kept = keep_file(path, opts.trace_dir, name)
            except OSError as e:  # a full disk costs the trace, not the row
                not_kept = f"trace not kept in {opts.trace_dir}: {os_error_text(e)}"
    row = empty_row(impl, "decode", "ok", None)
    row.update(
        step_time_us=round(got["summary"].median_us, 3),
        step_time=_timing(got["summary"]),
        warmup_s=got["warmup_s"],
        steps=got["steps"],
        trace_path=str(kept) if kept else None,
    )
    if not_kept:
        row["notes"] = [*(row.get("notes") or []), not_kept]
    return row
