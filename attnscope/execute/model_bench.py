"""Build a transformer from its config (random weights) and measure one step per (implementation, mode).  Needs torch.

Per row: a warm-up, then the step timed many times by the loop every attnscope measurement uses
(:mod:`attnscope.measure.timing`: GPU time from CUDA events on CUDA, each step queued behind a GPU sleep; wall time
on a CPU), with ``reset`` (the decode cache restored) before every step outside the timed region; then one step
profiled with the model annotated (:mod:`attnscope.workloads.hf.module_ranges`) and split by
:func:`attnscope.analysis.fingerprint.model_split.breakdown`.  Timings are taken without the annotation hooks; the
profiled step carries them.
"""

from __future__ import annotations

import copy
import dataclasses
import gc
import importlib.util
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnscope.core.types import Timing
from attnscope.measure import timing
from attnscope.workloads.hf.module_ranges import annotate, step_range

MODES = ("prefill", "decode", "train")
IMPLS = ("eager", "sdpa", "flex_attention", "flash_attention_2")
DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


@dataclass
class BenchOptions:
    device: str
    dtype: str
    batch: int
    seq: int
    budget_s: float = 1.0
    warmup: int = 2
    trace_dir: Path | None = None
    grid: bool = False  # several (batch, seq) points: the trace names carry them
    time_limit_s: float | None = None  # rows not started by then become skipped rows

    def __post_init__(self) -> None:  # checked as the command line's --budget and --time-limit are
        from attnscope.core.arguments import check_seconds

        check_seconds("budget_s", self.budget_s)
        if self.time_limit_s is not None:
            check_seconds("time_limit_s", self.time_limit_s)


class Skip(Exception):
    """This (implementation, mode) cannot run here; the message says why."""


def unavailable(impl: str, mode: str, device: str, encoder: bool, chosen: bool) -> str | None:
    """Why a row cannot (or by default does not) run here, before any model is built."""
    if mode == "decode" and encoder:
        return "an encoder has no KV cache: decode does not apply"
    if impl == "flash_attention_2":
        if not device.startswith("cuda"):
            return "flash_attention_2 runs on CUDA only"
        if importlib.util.find_spec("flash_attn") is None:
            return "flash_attention_2 needs the flash-attn package, which is not installed here"
    if impl == "flex_attention" and not device.startswith("cuda") and not chosen:
        return (
            "transformers compiles flex_attention with torch.compile for every new shape (seconds per shape on a "
            "small CPU): not in the CPU default set, pass --impl flex_attention to include it"
        )
    return None


def _torch_dtype(name: str) -> Any:
    import torch

    return getattr(torch, DTYPES[name])


def build_model(cfg: Any, impl: str, opts: BenchOptions, encoder: bool) -> Any:
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM

    auto = AutoModelForMaskedLM if encoder else AutoModelForCausalLM
    dtype_kw = "dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"
    kw = {"attn_implementation": impl, dtype_kw: _torch_dtype(opts.dtype)}
    torch.manual_seed(0)
    try:
        try:
            with torch.device(opts.device):  # random init on the device: seconds, not minutes, for big shapes
                model = auto.from_config(cfg, **kw)
        except RuntimeError:
            if opts.device == "cpu":
                raise
            model = auto.from_config(cfg, **kw)  # a transformers that cannot build under a device context
    except (ImportError, ValueError) as e:
        raise Skip(_one_line(e)) from None
    return model.to(opts.device)


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split())[:400] or type(e).__name__


def _cache_kw(model: Any) -> str:
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def make_step(model: Any, mode: str, ids: Any, encoder: bool) -> tuple[Callable[[], Any], Callable[[], None]]:
    """(step, reset): reset runs before each step, outside the timed region."""
    import torch

    if mode == "prefill":
        model.eval()
        kw = {} if encoder else {"use_cache": True}

        def prefill() -> Any:
            with torch.no_grad():
                return model(ids, **kw).logits

        return prefill, lambda: None
    if mode == "decode":
        model.eval()
        with torch.no_grad():
            out = model(ids, use_cache=True)
        cache = out.get("cache") or out.get("past_key_values")  # renamed 'cache' in transformers 5.2x
        if isinstance(cache, tuple):  # transformers 4.x hands back the legacy tuples when given no Cache
            from transformers import DynamicCache

            cache = DynamicCache.from_legacy_cache(cache)  # type: ignore[attr-defined]  # 4.x only
        tok = ids[:, -1:]
        ckw = _cache_kw(model)

        snapshot = cache
        live = [copy.deepcopy(snapshot)]

        def decode() -> Any:
            with torch.no_grad():
                return model(tok, use_cache=True, **{ckw: live[0]}).logits

        def fresh_cache() -> None:
            # A copy of the cache of --seq tokens before every step: crop() cannot undo a sliding-window
            # layer that already dropped tokens, a copy always can.
            live[0] = copy.deepcopy(snapshot)

        return decode, fresh_cache
    return _train_step(model, ids, encoder), lambda: None


def _train_step(model: Any, ids: Any, encoder: bool) -> Callable[[], Any]:
    import torch
    import torch.nn.functional as F

    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    kw = {} if encoder else {"use_cache": False}

    def train() -> Any:
        opt.zero_grad(set_to_none=True)
        logits = model(ids, **kw).logits
        with step_range("loss"):
            if encoder:
                loss = F.cross_entropy(logits.float().flatten(0, 1), ids.flatten())
            else:
                loss = F.cross_entropy(logits[:, :-1].float().flatten(0, 1), ids[:, 1:].flatten())
        with step_range("backward"):
            loss.backward()
        with step_range("optimizer"):
            opt.step()
        return loss.detach()

    return train


def _sync(cuda: bool) -> None:
    if cuda:
        import torch

        torch.cuda.synchronize()


def time_steps(
    step: Callable[[], Any], reset: Callable[[], None], *, cuda: bool, budget_s: float, lo: int = 5, hi: int = 100
) -> tuple[Timing, Timing | None]:
    """The step timed by the loop every measurement uses (attnscope.measure.timing), ``reset`` outside the timed
    region: host time per step (wall time on a CPU; dispatch time on CUDA), and on CUDA the device time per step
    from CUDA events, each step queued behind a GPU sleep longer than its dispatch."""
    host = _per_step(timing.time_host(step, cuda=cuda, budget_s=budget_s, lo=lo, hi=hi, before=reset))
    if not cuda:
        return host, None
    gpu = timing.time_gpu(step, budget_s=budget_s, flush_l2=False, host_us=host.median_us, lo=lo, hi=hi, before=reset)
    return host, _per_step(gpu)


def _per_step(t: Timing) -> Timing:
    """The loop's method text, worded for a model step rather than an attention call."""
    return dataclasses.replace(t, method=t.method.replace("per call", "per step").replace("each call", "each step"))


def profile_step(
    model: Any, step: Callable[[], Any], reset: Callable[[], None], mode: str, path: Path, cuda: bool
) -> Path:
    """One annotated step under torch.profiler (record_shapes for copies and upcasts) → a Kineto trace."""
    import warnings

    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    reset()
    _sync(cuda)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Profiler clears events at the end of each cycle.*")
        with annotate(model), profile(activities=acts, record_shapes=True) as prof:
            with step_range("step", mode):
                step()
            _sync(cuda)
    path.parent.mkdir(parents=True, exist_ok=True)
    prof.export_chrome_trace(str(path))
    return path


def peak_reset(cuda: bool) -> int | None:
    if not cuda:
        return None
    import torch

    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    return torch.cuda.memory_allocated()


def peak_extra(cuda: bool, base: int | None) -> int | None:
    if not cuda or base is None:
        return None
    import torch

    return max(0, torch.cuda.max_memory_allocated() - base)


def free(cuda: bool) -> None:
    gc.collect()
    if cuda:
        import torch

        torch.cuda.empty_cache()


def trace_name(opts: BenchOptions, impl: str, mode: str) -> str:
    """The file name of a row's trace (in a private folder while it is read; in --trace-dir when kept)."""
    point = f"_b{opts.batch}_s{opts.seq}" if opts.grid else ""
    return f"model_{impl}_{mode}{point}.json"
