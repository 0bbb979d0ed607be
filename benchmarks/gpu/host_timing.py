"""Host time per call that holds still: batch length and drain, after a CPU warm-up, nine interleaved rounds.

    python3 benchmarks/gpu/host_timing.py OUT.json

The second probe (host_timing2.py, docs/results/h200_launch_host.md) found no sampler with every round's
IQR under 10% at B4 H16 S2048 D64: the first rounds ran slower than the later ones (a machine warming up),
and single calls have a tail.  Here: 0.5 s of CPU spin before the first round, nine rounds with the
variants interleaved, and samplers that spread each sample over 0.2 ms or 1 ms of back-to-back calls
(``measure.time_host_batched(target_sample_us=...)``).  Per round: median, IQR, calls per sample; the
flash-vs-cuDNN question is answered per round (paired), so a round that is slow for both cancels out.
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
from attnscope.measure import timing as measure
from attnscope.variants import resolve
from attnscope.workloads.attention import make_inputs

ROUNDS = 9
CASES = {
    "big": Case(batch=4, heads=16, seq_q=2048, head_dim=64, device="cuda"),
    "small": Case(batch=1, heads=8, seq_q=512, head_dim=64, device="cuda"),
}
NAMES = ["sdpa_flash", "sdpa_cudnn", "sdpa_efficient"]
B = 0.25


def _batched(target: float, spin: bool, core: str) -> Callable[[Callable[[], Any]], measure.Timing]:
    return lambda fn: measure.time_host_batched(
        fn,
        cuda=True,
        budget_s=B,
        spin=spin,
        core=core,
        target_sample_us=target,
        lo=15,
        hi=400,
        max_calls_per_sample=400,
    )


SAMPLERS: dict[str, Callable[[Callable[[], Any]], measure.Timing]] = {
    "single_sync": lambda fn: measure.time_host(fn, cuda=True, budget_s=B),
    "tool (time_host_cuda)": lambda fn: measure.time_host_cuda(fn, budget_s=B),
    "b0.2ms_spin_last": _batched(200, True, "last"),
    "b1ms_spin_last": _batched(1000, True, "last"),
    "b1ms_sync_last": _batched(1000, False, "last"),
    "b1ms_spin_nopin": _batched(1000, True, "none"),
    "b5ms_spin_last": _batched(5000, True, "last"),
}


def _calls(t: measure.Timing) -> int | None:
    m = t.method.split("batches of ")
    return int(m[1].split()[0]) if len(m) > 1 else None


def main() -> None:
    t0 = time.perf_counter()
    preps: dict[str, Any] = {}
    for label, case in CASES.items():
        x = make_inputs(case, 0)
        for n in NAMES:
            (v,) = resolve([n])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                preps[f"{label}:{n}"] = v.prepare(case, x)
    end = time.perf_counter() + 0.5
    while time.perf_counter() < end:  # the CPU warmed up before the first sample
        pass
    rows: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for _ in range(ROUNDS):
        for key, p in preps.items():
            with p.context():
                for _ in range(3):
                    p.fn()
                torch.cuda.synchronize()
                for s, f in SAMPLERS.items():
                    t = f(p.fn)
                    rows.setdefault(key, {}).setdefault(s, []).append(
                        {"median_us": t.median_us, "iqr_pct": 100 * t.iqr_rel, "calls": _calls(t), "n": t.num_samples}
                    )
    for key, by in rows.items():
        for s, r in by.items():
            iqrs = sorted(x["iqr_pct"] for x in r)
            calm = sum(i <= 10 for i in iqrs)
            print(
                f"{key:20} {s:21} median {statistics.median(x['median_us'] for x in r):6.2f} us  IQR median "
                f"{statistics.median(iqrs):4.1f}% worst {iqrs[-1]:4.1f}% (≤10%: {calm}/{len(iqrs)})"
                f"  calls/sample {r[0]['calls']}  rounds {[round(x['median_us'], 1) for x in r]}",
                flush=True,
            )
    for label in CASES:
        for s in SAMPLERS:
            f = rows[f"{label}:sdpa_flash"][s]
            c = rows[f"{label}:sdpa_cudnn"][s]
            ratios = [b["median_us"] / a["median_us"] for a, b in zip(f, c, strict=True)]
            higher = sum(x > 1 for x in ratios)
            print(
                f"{label:6} {s:21} cuDNN/flash host time per round: median {statistics.median(ratios):.3f} "
                f"range {min(ratios):.3f}-{max(ratios):.3f}, cuDNN higher in {higher}/{len(ratios)}",
                flush=True,
            )
    out = {
        "torch": torch.__version__,
        "cases": {k: c.label() for k, c in CASES.items()},
        "rows": rows,
        "elapsed_s": time.perf_counter() - t0,
    }
    with open(sys.argv[1] if len(sys.argv) > 1 else "host_timing3.json", "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
