"""Decode over a growing cache (``attnscope run --steps N``): one serving variant, step after step.  Needs torch.

Step ``t`` (0-based) reads ``L_b + t`` tokens of every sequence ``b`` (the cache grows by one token per step; its
pool holds every token of the last step from the start, and writing the new token's K and V is not timed).  Two
series, each a list with one entry per step (docs/serving.md):

- **eager**, as a loop without shape buckets runs it: every step is a new shape (the longest sequence grew), so the
  variant's per-shape work (``Server.plan``: a gather index, a BlockMask, FlashInfer's ``plan()``) is redone, then
  the call.  Per step: ``plan_ms`` (host, synchronised), ``call_ms`` and ``step_ms`` (wall clock, synchronised),
  and ``repeat_ms``, a second call of the same shape after the step: ``call_ms − repeat_ms`` is the work a new shape
  costs inside the call (a cuDNN graph build per KV length, a recompile), which no range marks.
- **graph** (CUDA only), as a serving engine runs it: shapes in buckets of ``bucket`` tokens; at the first step of a
  bucket the per-shape work is done and one CUDA graph of the call is captured (``rebuild_ms``: plan + warm-up +
  capture); every step replays it (``replay_ms``: CUDA events around ``graph.replay()``).  The call reads the
  lengths from a device tensor, so one graph serves every length of its bucket.  A server whose ``plan()`` must
  see each step's lengths on the host (FlashInfer's ``use_cuda_graph`` wrappers) is captured once for the loop and
  planned before every replay (``plan_ms``, host, synchronised), as serving engines run it.

Each step runs inside ``record_function("attnscope.step[decode] T")`` and each per-shape rebuild inside
``attnscope.rebuild[WHAT]``: a trace of the loop (``--trace-dir``) is split into steps by those names.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

from attnscope.core.types import Case
from attnscope.variants.paged import REBUILD_RANGE, STEP_RANGE, Server, ready_server

DEFAULT_BUCKET = 256  # tokens: a graph (and a plan) per 256 tokens of the longest sequence
TRACE_STEPS = 32  # steps of each series recorded in the loop's traces (the timed series runs unprofiled)

# The advice that removes each kind of per-shape work, by the rebuild's name (Server.rebuild)
ADVICE = {
    "gather_index": (
        "pad the gather to shape buckets (e.g. 256 tokens) so its index, and any per-shape SDPA set-up such as a "
        "cuDNN graph, is built once per bucket"
    ),
    "create_block_mask": "build the BlockMask once for the largest length of a bucket; the mask_mod reads the lengths",
    "block_mask_from_table": "build the BlockMask from the block table once per bucket; the mask_mod reads the lengths",
    "flashinfer_plan": "call plan() once per step for the whole model (it is per batch, not per layer)",
    "graph_capture": "larger shape buckets: fewer captures, each replayed for more steps",
}


def bucket_of(n: int, bucket: int) -> int:
    """The bucket's capacity for a longest length ``n``: ``n`` rounded up to a multiple of ``bucket``."""
    return -(-n // bucket) * bucket


def _sync(cuda: bool) -> None:
    if cuda:
        import torch

        torch.cuda.synchronize()


def _step_name(case: Case, t: int) -> str:
    return STEP_RANGE.format(kind=case.serving_kind, index=t)


def eager_series(server: Server, case: Case, steps: int, first: int = 0) -> list[dict[str, float]]:
    """Steps ``first .. first+steps-1`` eagerly, a new shape each step (plan, then the call)."""
    import torch

    cuda = server.x.q.is_cuda
    lens0 = case.kv_lengths
    out = []
    for t in range(first, first + steps):
        server.cache.set_lengths([n + t for n in lens0])
        _sync(cuda)
        t0 = time.perf_counter()
        with torch.profiler.record_function(_step_name(case, t)):
            need = max(server.cache.lengths)
            if need != server.capacity:
                server.plan(need)
            t1 = time.perf_counter()
            server.call()
            _sync(cuda)
        t2 = time.perf_counter()
        server.call()  # the same shape again, outside the step: what the call costs once its shape is known
        _sync(cuda)
        t3 = time.perf_counter()
        out.append(
            {
                "step_ms": 1e3 * (t2 - t0),
                "plan_ms": 1e3 * (t1 - t0),
                "call_ms": 1e3 * (t2 - t1),
                "repeat_ms": 1e3 * (t3 - t2),
            }
        )
    return out


class GraphRunner:
    """Steps replayed from one CUDA graph per bucket, as a serving engine runs them: at a bucket's first step the
    per-shape work, a warm-up on a side stream and one capture; every step one ``graph.replay()``."""

    def __init__(self, server: Server, case: Case, bucket: int) -> None:
        import torch

        self.server, self.case, self.bucket = server, case, bucket
        self.graph: Any = None
        self.cap = 0
        self.start = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)

    def step(self, t: int) -> dict[str, float]:
        import torch

        server = self.server
        server.cache.set_lengths([n + t for n in self.case.kv_lengths])
        per_step = server.plans_each_replay  # plan() on the host before each replay; one capture serves the loop
        need = max(server.cache.lengths) if per_step else bucket_of(max(server.cache.lengths), self.bucket)
        rebuild = 0.0
        capture = self.graph is None or (need != self.cap and not per_step)
        if capture:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            with torch.profiler.record_function(REBUILD_RANGE.format(what="graph_capture")):
                server.plan(need)
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(2):
                        server.call()
                torch.cuda.current_stream().wait_stream(side)
                self.graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(self.graph):
                    self.out = server.call()
            torch.cuda.synchronize()
            rebuild = 1e3 * (time.perf_counter() - t0)
            self.cap = need
        out: dict[str, float] = {}
        with torch.profiler.record_function(_step_name(self.case, t)):
            if per_step and capture:
                out["plan_ms"] = 0.0  # this step's plan is inside its capture (rebuild_ms)
            elif per_step:
                server.plan(need)  # host work, synchronised: the step's page table into the graph's buffers
                out["plan_ms"] = 1e3 * server.plan_s[-1]
            self.start.record()
            self.graph.replay()
            self.end.record()
        self.end.synchronize()
        out.update(rebuild_ms=rebuild, replay_ms=self.start.elapsed_time(self.end), capacity=float(self.cap))
        return out


def graph_series(runner: GraphRunner, steps: int, first: int = 0) -> list[dict[str, float]]:
    return [runner.step(t) for t in range(first, first + steps)]


def _median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def summarise(eager: list[dict[str, float]], graph: list[dict[str, float]] | None, rebuild: str) -> dict[str, Any]:
    """The series in a few numbers, each with its formula: the per-shape work per step and per 1,000 steps, and
    when graphs pay (the capture cost against the time a replay saves per step).  Pure."""
    plan = [s["plan_ms"] for s in eager]
    call = [s["call_ms"] for s in eager]
    step = [s["step_ms"] for s in eager]
    inside = [s["call_ms"] - s["repeat_ms"] for s in eager if "repeat_ms" in s]
    out: dict[str, Any] = {
        "eager": {
            "step_ms_median": _median(step),
            "call_ms_median": _median(call),
            "repeat_ms_median": _median([s["repeat_ms"] for s in eager if "repeat_ms" in s]),
            # work a new shape costs inside the call itself (a cuDNN graph build, a recompile): the first call of a
            # shape minus a second call of the same shape, per step
            "in_call_rebuild_ms_median": _median(inside),
            "in_call_rebuild_ms_per_1000_steps": 1000 * sum(inside) / len(inside) if inside else None,
            "plan_ms_median": _median(plan),
            "rebuilds": sum(1 for p in plan if p > 0),
            "rebuild_ms_per_step": sum(plan) / len(plan) if plan else None,
            "rebuild_ms_per_1000_steps": 1000 * sum(plan) / len(plan) if plan else None,
            "formula": (
                "rebuild ms per step = Σ plan_ms / steps (every step a new shape); per 1,000 steps × 1000; "
                "in the call: Σ (call_ms − repeat_ms) / steps, repeat_ms a second call of the step's shape"
            ),
        },
        "rebuild": rebuild,
        "advice": ADVICE.get(rebuild),
    }
    if graph:
        rb = [s["rebuild_ms"] for s in graph]
        rp = [s["replay_ms"] for s in graph]
        # a server that plans before every replay (FlashInfer's graph wrappers): that host work is part of a step
        pp = [s["plan_ms"] for s in graph if "plan_ms" in s]
        captures = sum(1 for r in rb if r > 0)
        g: dict[str, Any] = {
            "replay_ms_median": _median(rp),
            "plan_ms_per_replay_median": _median(pp) if pp else None,
            "captures": captures,
            "capture_ms_total": sum(rb),
            "capture_ms_per_step": sum(rb) / len(rb),
            "capture_ms_per_1000_steps": 1000 * sum(rb) / len(rb),
            "step_ms_with_captures": (sum(rb) + sum(rp) + sum(pp)) / len(rp),
        }
        # a replayed step: the replay, plus the host plan before it where there is one
        replayed = (g["replay_ms_median"] or 0) + (g["plan_ms_per_replay_median"] or 0)
        saved = (out["eager"]["step_ms_median"] or 0) - replayed
        per_capture = sum(rb) / captures if captures else 0.0
        g["saved_ms_per_step"] = saved
        g["break_even_steps_per_capture"] = per_capture / saved if saved > 0 else None
        g["pays"] = bool(saved > 0 and g["step_ms_with_captures"] < out["eager"]["step_ms_median"])
        g["formula"] = (
            "graphs pay when (eager step − replayed step) × steps per capture > capture ms; a replayed step = replay "
            "median (+ the host plan before each replay, where the variant plans per step); break-even steps per "
            "capture = capture ms / (eager step median − replayed step); step with captures = (Σ capture + Σ replay "
            "+ Σ plan) / steps"
        )
        out["graph"] = g
    return out


def decode_loop(
    case: Case,
    variant: str,
    steps: int,
    *,
    bucket: int = DEFAULT_BUCKET,
    seed: int = 0,
    trace_dir: Path | None = None,
    trace_stem: str = "",
) -> dict[str, Any]:
    """The decode loop of ``variant`` on ``case`` for ``steps`` steps: both series, their summary, the last step's
    error against the fp64 reference, and (with ``trace_dir``) the loop's traces.  Plain data for the document."""
    import warnings

    import torch

    from attnscope.measure.timing import relative_error
    from attnscope.workloads.paged_cache import make_serving_inputs, serving_reference

    cuda = case.device.startswith("cuda")
    x = make_serving_inputs(case, seed, extra_steps=steps)
    server, notes = ready_server(variant, case, x)  # planned and called once (a compiled variant compiles here)
    why_no_graph = None
    if not cuda:
        why_no_graph = "CUDA graph replay needs a CUDA device; only the eager series runs on the CPU"
    elif server.graph_refusal is not None:
        why_no_graph = f"{variant}: {server.graph_refusal}; not replayed from a graph"
    traces: dict[str, str] = {}
    with server.context(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server.capacity = 0  # the loop's first step plans afresh
        eager = eager_series(server, case, steps)
        # the last step's output against the fp64 reference of its lengths
        last = server.call()
        _sync(cuda)
        err, bad = relative_error(last, serving_reference(case, x))
        graph, graph_err, graph_bad = None, None, False
        if why_no_graph is None:
            graph, graph_err, graph_bad, why_no_graph = replayed(server, case, x, steps, bucket)
        if trace_dir is not None:
            traces = _trace_loops(
                server, case, min(steps, TRACE_STEPS), bucket, trace_dir, trace_stem, graph is not None
            )
    summary = summarise(eager, graph, server.rebuild)
    found = {}
    if traces:
        from attnscope.analysis.rebuilds import rebuilds_in_trace
        from attnscope.trace import load_trace

        found = {name: rebuilds_in_trace(load_trace(path)) for name, path in traces.items()}
    return {
        "steps": steps,
        "bucket": bucket,
        "grows": "one token per sequence per step; step t reads L_b + t tokens",
        "timing": (
            "eager: wall clock per step, synchronised, one sample per step (each step its own shape: single "
            "samples, noisy); graph: CUDA events around graph.replay()"
        ),
        "kv_lengths_first": list(case.kv_lengths),
        "kv_lengths_last": [n + steps - 1 for n in case.kv_lengths],
        "eager": eager,
        "graph": graph,
        "graph_refused": why_no_graph,
        "summary": summary,
        "last_step_rel_error": err,
        "last_step_nonfinite": bad,
        "graph_last_step_rel_error": graph_err,
        "graph_last_step_nonfinite": graph_bad,
        "traces": traces,
        "trace_rebuilds": found,
        "notes": notes,
        "step_range": STEP_RANGE,
        "rebuild_range": REBUILD_RANGE,
        "torch": torch.__version__,
    }


def replayed(
    server: Server, case: Case, x: Any, steps: int, bucket: int
) -> tuple[list[dict[str, float]] | None, float | None, bool, str | None]:
    """The graph series and its last replay's error against the fp64 reference (a graph replays what it captured,
    so a stale length or page table shows here and not in the eager check); a series that fails is said, never the
    eager series' loss: (series, error, non-finite, None) or (None, None, False, why)."""
    from attnscope.measure.timing import relative_error
    from attnscope.workloads.paged_cache import serving_reference

    try:
        runner = GraphRunner(server.for_graphs(), case, bucket)
        graph = graph_series(runner, steps)
        err, bad = relative_error(runner.out, serving_reference(case, x))
    except Exception as e:  # noqa: BLE001 - the eager series stands
        text = " ".join(str(e).split())[:300] or type(e).__name__
        return None, None, False, f"the graph series failed: {type(e).__name__}: {text}"
    finally:
        server.cache.set_lengths(list(case.kv_lengths))
    return graph, err, bad, None


def _trace_loops(
    server: Server, case: Case, steps: int, bucket: int, trace_dir: Path, stem: str, graphs: bool
) -> dict[str, str]:
    """The loop's traces, gzipped: the first ``steps`` eager steps; with graphs, the capture (the first bucket's plan,
    warm-up, capture and first replay) and then the replayed steps 1 .. steps-1 (a capture inside them only where
    a bucket ends).  Steps are numbered as in the timed series."""
    import gzip
    import shutil

    from torch.profiler import ProfilerActivity, profile

    cuda = server.x.q.is_cuda
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    trace_dir.mkdir(parents=True, exist_ok=True)
    out: dict[str, str] = {}

    def save(prof: Any, name: str) -> None:
        raw = trace_dir / f"{stem}{name}.json"
        prof.export_chrome_trace(str(raw))
        with raw.open("rb") as src, gzip.open(f"{raw}.gz", "wb") as dst:
            shutil.copyfileobj(src, dst)
        raw.unlink()
        out[name] = f"{raw}.gz"

    server.capacity = 0
    with profile(activities=acts, record_shapes=True) as prof:
        eager_series(server, case, steps)
    save(prof, "decode_loop_eager")
    if graphs:
        runner = GraphRunner(server.for_graphs(), case, bucket)
        with profile(activities=acts, record_shapes=True) as prof:
            runner.step(0)
        save(prof, "decode_capture")
        with profile(activities=acts, record_shapes=True) as prof:
            graph_series(runner, steps - 1, first=1)
        save(prof, "decode_loop_graph")
    return out
