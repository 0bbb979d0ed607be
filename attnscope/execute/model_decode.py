"""Decode as served: ``--steps N`` tokens over a static KV cache that grows by one token a step, eagerly or replayed
from a CUDA graph captured once, each step timed, and attention's share of each step from one profiled loop.
Needs torch.

- The cache: transformers' ``StaticCache`` of ``seq + steps`` positions, filled by one untimed prefill of ``seq``
  tokens; step ``i`` writes position ``seq + i`` (``cache_position``), so step ``i`` attends over ``seq + i + 1``
  tokens.  A static cache is what a CUDA graph needs (shapes never change): the attention op is given the whole
  cache, its unused positions masked.
- ``eager``: each step is the model's forward.  ``graph`` (CUDA only): one step captured into a
  ``torch.cuda.CUDAGraph`` (after warm-up steps on a side stream, as torch's documentation asks), then replayed
  with the token and the position copied into its static inputs first.
- Timing: the loop of ``steps`` steps is run ``PASSES`` times (the cache prefilled again before each pass,
  untimed); each step's time is its median over the passes.  CUDA: GPU time between CUDA events recorded around
  each step (launch gaps inside the step included); CPU: wall time per step.
- The split: one more loop, profiled, each step inside an ``attnscope.step[decode] <i> kv=<L>`` range
  (L = the tokens it attends over).  ``eager``: the model annotated (attnscope.workloads.hf.module_ranges) and each
  step split by module (analysis/fingerprint/model_split.py on the step's window: GPU time on CUDA, op self time on
  CPU).  ``graph``: one eager step before the loop, outside any step range, serves as the capture's reference: the
  replayed kernels are matched to its ops by order and name (analysis/fingerprint/graphs.py), and each step is split
  into attention, the rest and the unattributed by attention family (analysis/fingerprint/loop_steps.py).
"""

from __future__ import annotations

import inspect
import statistics
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from attnscope.measure import timing

PASSES = 3
REPLAYS = ("eager", "graph")


def graph_refusal(replay: str, device: str) -> str | None:
    """Why this replay cannot run on this device (one line, in the library's words: the command line puts its flag,
    ``--replay graph``, before it), or None."""
    if replay == "graph" and not device.startswith("cuda"):
        return f"CUDA graphs need a CUDA device; this run is on {device}"
    return None


def static_cache(model: Any, cfg: Any, batch: int, length: int, device: str, dtype: Any) -> Any:
    """transformers' StaticCache of ``length`` positions: its 5.x signature (config, max_cache_len; sized on first
    use) or its 4.x one (config, max_batch_size, max_cache_len, device, dtype)."""
    from transformers import StaticCache

    params = inspect.signature(StaticCache.__init__).parameters
    if "max_batch_size" in params:  # transformers 4.x
        return StaticCache(config=cfg, max_batch_size=batch, max_cache_len=length, device=device, dtype=dtype)
    return StaticCache(config=cfg, max_cache_len=length)


class Loop:
    """One decode loop over a static cache: ``start()`` prefills, ``step(i)`` decodes position ``seq + i``."""

    def __init__(self, model: Any, cfg: Any, ids: Any, steps: int, replay: str, dtype: Any) -> None:
        import torch

        self.model, self.ids, self.steps, self.replay = model, ids, steps, replay
        self.seq = ids.shape[1]
        self.device = ids.device
        self.cache = static_cache(model, cfg, ids.shape[0], self.seq + steps, str(ids.device), dtype)
        self.kw = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
        self.tok = ids[:, -1:].clone()
        self.pos = torch.full((1,), self.seq, dtype=torch.long, device=self.device)
        self.graph: Any = None

    def _forward(self) -> Any:
        import torch

        with torch.no_grad():
            return self.model(self.tok, use_cache=True, cache_position=self.pos, **{self.kw: self.cache}).logits

    def start(self) -> None:
        """The cache emptied and prefilled with ``seq`` tokens (untimed)."""
        import torch

        self.cache.reset()
        with torch.no_grad():
            self.model(self.ids, use_cache=True, cache_position=torch.arange(self.seq, device=self.device),
                       **{self.kw: self.cache})  # fmt: skip

    def capture(self) -> None:
        """The graph of one step (CUDA): warm-up steps on a side stream, then the capture."""
        import torch

        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                self._forward()
        torch.cuda.current_stream().wait_stream(s)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self._forward()
        torch.cuda.synchronize()

    def step(self, i: int) -> None:
        self.pos.fill_(self.seq + i)
        if self.graph is not None:
            self.graph.replay()
        else:
            self._forward()


def time_loop(loop: Loop, cuda: bool) -> list[list[float]]:
    """Per step, its times (µs) over :data:`PASSES` passes."""
    import torch

    per_step: list[list[float]] = [[] for _ in range(loop.steps)]
    for _ in range(PASSES):
        loop.start()
        if cuda:
            torch.cuda.synchronize()
            ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in per_step]
            for i, (a, b) in enumerate(ev):
                a.record()
                loop.step(i)
                b.record()
            torch.cuda.synchronize()
            for i, (a, b) in enumerate(ev):
                per_step[i].append(a.elapsed_time(b) * 1000.0)
        else:
            for i in range(loop.steps):
                t0 = time.perf_counter()
                loop.step(i)
                per_step[i].append((time.perf_counter() - t0) * 1e6)
    return per_step


def profile_loop(loop: Loop, path: Path, cuda: bool, annotate_model: Callable[[], Any] | None) -> Path:
    """One more loop under torch.profiler, each step in an ``attnscope.step[decode] i kv=L`` range; for a graph, one
    eager step first (the capture's reference, outside every step range)."""
    import contextlib

    import torch
    from torch.autograd.profiler import record_function
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    loop.start()
    if cuda:
        torch.cuda.synchronize()
    ctx = annotate_model() if annotate_model is not None else contextlib.nullcontext()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Profiler clears events at the end of each cycle.*")
        with ctx, profile(activities=acts, record_shapes=True) as prof:
            if loop.graph is not None:
                loop.pos.fill_(loop.seq)
                loop._forward()  # the eager reference: writes position seq, which step 0 writes again
                torch.cuda.synchronize()
                # the cache prefilled again: transformers 5's StaticCache writes at its own running length (not at
                # cache_position), so the reference step would push the last replayed step one past the cache's end
                loop.start()
                torch.cuda.synchronize()
            for i in range(loop.steps):
                with record_function(f"attnscope.step[decode] {i} kv={loop.seq + i + 1}"):
                    if loop.graph is None:
                        from attnscope.workloads.hf.module_ranges import step_range

                        with step_range("step", "decode"):
                            loop.step(i)
                    else:
                        loop.step(i)
            if cuda:
                torch.cuda.synchronize()
    path.parent.mkdir(parents=True, exist_ok=True)
    prof.export_chrome_trace(str(path))
    return path


def measure(model: Any, cfg: Any, ids: Any, steps: int, replay: str, opts: Any, trace: Path) -> dict[str, Any]:
    """The ``steps`` section of a decode row, and its step time (all steps' medians summarised)."""
    from attnscope.execute.model_bench import _torch_dtype
    from attnscope.workloads.hf.module_ranges import annotate

    cuda = opts.device.startswith("cuda")
    why = graph_refusal(replay, opts.device)
    if why:
        raise ValueError(why)
    model.eval()
    loop = Loop(model, cfg, ids, steps, replay, _torch_dtype(opts.dtype))
    t0 = time.perf_counter()
    loop.start()
    for i in range(min(2, steps)):  # warm-up
        loop.step(i)
    if replay == "graph":
        loop.start()
        loop.capture()
    warmup_s = time.perf_counter() - t0
    per_step = time_loop(loop, cuda)
    path = profile_loop(loop, trace, cuda, (lambda: annotate(model)) if replay == "eager" else None)
    split = split_steps(path, replay)
    method = (
        "GPU time between CUDA events recorded around each step (launch gaps inside the step included)"
        if cuda
        else "wall time per step (time.perf_counter)"
    )
    series = []
    for i, samples in enumerate(per_step):
        row: dict[str, Any] = {"step": i, "kv_len": loop.seq + i + 1, "time_us": round(statistics.median(samples), 3)}
        if i < len(split):
            row.update(split[i])
        series.append(row)
    medians = [s["time_us"] for s in series]
    summary = timing.summarise(
        medians, f"median over the {steps} steps of each step's median over {PASSES} passes; {method}"
    )
    return {
        "summary": summary,
        "warmup_s": round(warmup_s, 3),
        "steps": {
            "num_steps": steps,
            "replay": replay,
            "cache": "static",
            "cache_len": loop.seq + steps,
            "passes": PASSES,
            "time_method": method,
            "split_method": (
                "per step, GPU time of the step's kernels by family, attention kernels against the rest"
                + (
                    " (replayed kernels matched to the ops of an eager reference step by order and name)"
                    if replay == "graph"
                    else "; module_attention_*: the model split by module on the step's window"
                )
                if cuda
                else "per step, the model split by module (model_split) on the step's window: op self time"
            ),
            "series": series,
        },
    }


def split_steps(path: Path, replay: str) -> list[dict[str, Any]]:
    """Each profiled step's attention, rest and unattributed time, and attention's share, in step order.

    On a GPU both replays are split one way, so that their shares compare: the step's kernels by family (attention
    kernels against the rest; a graph's replayed kernels matched to the eager reference's ops first).  Eager steps
    also carry the model split by module (``module_attention_us``, ``module_attention_share``: everything inside
    the attention modules, projections, rotary and K/V copies included), which a graph's replay cannot give.  On a
    CPU there are no kernels: the module split of op self time is the only one."""
    from attnscope.analysis.fingerprint.model_split import breakdown_per_step
    from attnscope.trace import load_trace

    tr = load_trace(path)
    if not tr.gpu:
        return breakdown_per_step(tr)
    from attnscope.analysis.fingerprint.breakdown import kernel_families
    from attnscope.analysis.fingerprint.build import analyse
    from attnscope.analysis.fingerprint.loop_steps import summary

    an = analyse(tr)
    st = summary(an.attribution, kernel_families(an.attribution), tr.annotations) or {"steps": []}
    rows = [
        {
            "attention_us": s["attention_us"],
            "rest_us": s["rest_us"],
            "unattributed_us": s["unattributed_us"],
            "total_us": s["gpu_time_us"],
            "attention_share": round(s["attention_us"] / s["gpu_time_us"], 4) if s["gpu_time_us"] else None,
        }
        for s in st["steps"]
    ]
    if replay == "eager":
        for row, mod in zip(rows, breakdown_per_step(tr), strict=False):
            row["module_attention_us"] = mod["attention_us"]
            row["module_attention_share"] = mod["attention_share"]
    return rows
