"""Why host time is noisy at the GPU default case: ways of draining the device and of pinning, side by side.

    python3 benchmarks/gpu/host_timing2.py OUT.json

At B4 H16 S2048 D64 the kernels take 100-340 µs, so the wait before each sample is long; at B1 H8
S512 D64 (host IQR < 10% in the first run) it is short.  Hypotheses, each with a sampler that tells it:

- a long blocking synchronize lets the thread sleep and the next call starts cold
  (``*_spin``: drain by polling an event, the thread never sleeps);
- the pinned core is the first one, where a VM's device interrupts land (``*_last``: the last core);
- it is the wait itself, not the shape (``small+wait``: the small case, each sample after a
  ~300 µs GPU sleep and a synchronize, as long as the default case's kernels).

Every sampler runs in each of ``ROUNDS`` rounds, variants interleaved; per round the median, the IQR
and p10/p90 are kept, so a bimodal sample (two speeds of the same call) shows.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import torch

from attnscope.core.types import Case
from attnscope.execute.runner import make_inputs
from attnscope.measure import timing as measure
from attnscope.variants import resolve

ROUNDS = 5
BIG = Case(batch=4, heads=16, seq_q=2048, head_dim=64, device="cuda")
SMALL = Case(batch=1, heads=8, seq_q=512, head_dim=64, device="cuda")
NAMES = ["sdpa_flash", "sdpa_cudnn", "sdpa_efficient"]
B = 0.25  # seconds of sampling per sampler and round

SAMPLERS: dict[str, Callable[[Callable[[], Any]], measure.Timing]] = {
    "single_sync": lambda fn: measure.time_host(fn, cuda=True, budget_s=B),
    "single_spin_first": lambda fn: measure.time_host_batched(
        fn, cuda=True, budget_s=B, calls_per_sample=1, spin=True, core="first"
    ),
    "single_spin_last": lambda fn: measure.time_host_batched(
        fn, cuda=True, budget_s=B, calls_per_sample=1, spin=True, core="last"
    ),
    "single_sync_last": lambda fn: measure.time_host_batched(
        fn, cuda=True, budget_s=B, calls_per_sample=1, core="last"
    ),
    "batched_sync_first": lambda fn: measure.time_host_batched(fn, cuda=True, budget_s=B, core="first"),
    "batched_spin_last": lambda fn: measure.time_host_batched(fn, cuda=True, budget_s=B, spin=True, core="last"),
    "single_spin_nopin": lambda fn: measure.time_host_batched(
        fn, cuda=True, budget_s=B, calls_per_sample=1, spin=True, core="none"
    ),
}


def _waiting(fn: Callable[[], Any]) -> Callable[[], Any]:
    """fn, but the sample before it waits ~300 µs on the GPU (the default case's kernel time)."""
    cycles = int(300e-6 * torch.cuda.get_device_properties(0).clock_rate * 1e3)

    def timed_after_wait() -> Any:
        return fn()

    def sampler() -> measure.Timing:
        samples = []
        for _ in range(400):
            torch.cuda._sleep(cycles)
            torch.cuda.synchronize()
            a = time.perf_counter()
            timed_after_wait()
            samples.append((time.perf_counter() - a) * 1e6)
        torch.cuda.synchronize()
        return measure.summarise(samples, "single call after a 300 µs GPU wait and a synchronize")

    return sampler


_LAST: list[list[float]] = [[]]
_summarise = measure.summarise


def _keep(samples_us: list[float], method: str) -> measure.Timing:
    """measure.summarise, keeping the samples for the percentiles (Timing holds quartiles only)."""
    _LAST[0] = list(samples_us)
    return _summarise(samples_us, method)


measure.summarise = _keep  # type: ignore[assignment]


def _pcts(samples: list[float]) -> dict[str, float]:
    s = sorted(samples)
    return {f"p{q}": s[min(len(s) - 1, int(q / 100 * len(s)))] for q in (10, 25, 50, 75, 90)}


def _row(t: measure.Timing) -> dict[str, Any]:
    return {"median_us": t.median_us, "iqr_pct": 100 * t.iqr_rel, "min_us": t.min_us, **_pcts(_LAST[0])}


def main() -> None:
    t0 = time.perf_counter()
    preps: dict[str, Any] = {}
    for label, case in (("big", BIG), ("small", SMALL)):
        x = make_inputs(case, 0)
        for n in NAMES:
            (v,) = resolve([n])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                preps[f"{label}:{n}"] = v.prepare(case, x)
    rows: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for _ in range(ROUNDS):
        for key, p in preps.items():
            with p.context():
                for _ in range(3):
                    p.fn()
                torch.cuda.synchronize()
                samplers = dict(SAMPLERS)
                if key.startswith("small:"):
                    samplers = {
                        "single_sync": SAMPLERS["single_sync"],
                        "single_spin_last": SAMPLERS["single_spin_last"],
                    }
                    samplers["small+wait"] = lambda fn: _waiting(fn)()
                for s, f in samplers.items():
                    rows.setdefault(key, {}).setdefault(s, []).append(_row(f(p.fn)))
    for key, by in rows.items():
        for s, r in by.items():
            print(
                f"{key:20} {s:18} median of rounds {statistics.median(x['median_us'] for x in r):7.2f} us  "
                f"worst IQR {max(x['iqr_pct'] for x in r):5.1f}%  rounds {[round(x['median_us'], 1) for x in r]}"
                f"  p10/p90 {[(round(x['p10'], 1), round(x['p90'], 1)) for x in r][:2]}",
                flush=True,
            )
    out = {
        "torch": torch.__version__,
        "cases": {"big": BIG.label(), "small": SMALL.label()},
        "rows": rows,
        "elapsed_s": time.perf_counter() - t0,
    }
    with open(sys.argv[1] if len(sys.argv) > 1 else "host_timing2.json", "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
