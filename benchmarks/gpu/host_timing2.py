"""Why host time is noisy at the GPU default case: the ways of draining the device, side by side.

    python3 benchmarks/gpu/host_timing2.py OUT.json

At B4 H16 S2048 D64 the kernels take 100-340 µs, so the wait before each sample is long; at B1 H8
S512 D64 (host IQR < 10% in the first run) it is short.  Hypothesis: a long blocking synchronize lets
the thread sleep and the next call starts cold.  Samplers, in alternating rounds: one call per sample
after torch.cuda.synchronize (today's), batches of 10 after synchronize, batches of 10 after spinning
on an event, and one call per sample after spinning.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
import warnings

import torch

from attnscope import measure
from attnscope.runner import make_inputs
from attnscope.types import Case
from attnscope.variants import resolve

ROUNDS = 5
CASE = Case(batch=4, heads=16, seq_q=2048, head_dim=64, device="cuda")
NAMES = ["sdpa_flash", "sdpa_cudnn", "sdpa_efficient"]
SAMPLERS = {
    "single_sync": lambda fn: measure.time_host(fn, cuda=True, budget_s=0.3),
    "batched_sync": lambda fn: measure.time_host_batched(fn, cuda=True, budget_s=0.3),
    "batched_spin": lambda fn: measure.time_host_batched(fn, cuda=True, budget_s=0.3, spin=True),
    "single_spin": lambda fn: measure.time_host_batched(fn, cuda=True, budget_s=0.3, calls_per_sample=1, spin=True),
}


def main() -> None:
    t0 = time.perf_counter()
    x = make_inputs(CASE, 0)
    preps = {}
    for n in NAMES:
        (v,) = resolve([n])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            preps[n] = v.prepare(CASE, x)
    rows: dict[str, dict[str, list[dict[str, float]]]] = {n: {s: [] for s in SAMPLERS} for n in NAMES}
    for _ in range(ROUNDS):
        for n, p in preps.items():
            with p.context():
                for _ in range(3):
                    p.fn()
                torch.cuda.synchronize()
                for s, f in SAMPLERS.items():
                    t = f(p.fn)
                    rows[n][s].append({"median_us": t.median_us, "iqr_pct": 100 * t.iqr_rel, "min_us": t.min_us})
    for n in NAMES:
        for s in SAMPLERS:
            r = rows[n][s]
            print(
                f"{n:15} {s:13} median of rounds {statistics.median(x['median_us'] for x in r):7.2f} us  "
                f"worst IQR {max(x['iqr_pct'] for x in r):5.1f}%  rounds {[round(x['median_us'], 1) for x in r]}",
                flush=True,
            )
    out = {"torch": torch.__version__, "case": CASE.label(), "rows": rows, "elapsed_s": time.perf_counter() - t0}
    with open(sys.argv[1] if len(sys.argv) > 1 else "host_timing2.json", "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
