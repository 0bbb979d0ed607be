"""Host time per call: today's sampler against the batched one, and flash against cuDNN.

    python3 benchmarks/gpu/host_timing.py OUT.json

Fused variants at the GPU default case and at B1 H8 S512 D64.  Rounds alternate the
variants (so drift of the machine hits each alike); in each round both samplers run:
``time_host`` (one call per sample) and ``time_host_batched`` (10 calls per sample, gc off,
one pinned core).  Reported: median and IQR/median per round and sampler.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
import warnings
from typing import Any

import torch

from attnscope.core.types import Case
from attnscope.execute.runner import make_inputs
from attnscope.measure import timing as measure
from attnscope.variants import resolve

ROUNDS = 5
CASES = {
    "default": (Case(batch=4, heads=16, seq_q=2048, head_dim=64, device="cuda"), True),
    "b1h8s512d64": (Case(batch=1, heads=8, seq_q=512, head_dim=64, device="cuda"), False),
}
FUSED = ["sdpa_flash", "sdpa_cudnn", "sdpa_efficient", "sdpa_default"]


def prepared(name: str, case: Case) -> Any:
    (v,) = resolve([name])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return v.prepare(case, make_inputs(case, 0))


def main() -> None:
    out: dict[str, Any] = {"torch": torch.__version__, "device": torch.cuda.get_device_name(), "cases": {}}
    t0 = time.perf_counter()
    for key, (case, with_flex) in CASES.items():
        names = FUSED + (["flex_compiled"] if with_flex else [])
        preps = {n: prepared(n, case) for n in names}
        rows: dict[str, dict[str, list[dict[str, float]]]] = {n: {"single": [], "batched": []} for n in names}
        for _ in range(ROUNDS):
            for n, p in preps.items():
                with p.context():
                    for _ in range(3):
                        p.fn()
                    torch.cuda.synchronize()
                    a = measure.time_host(p.fn, cuda=True, budget_s=0.3)
                    b = measure.time_host_batched(p.fn, cuda=True, budget_s=0.3)
                for k, t in (("single", a), ("batched", b)):
                    rows[n][k].append({"median_us": t.median_us, "iqr_pct": 100 * t.iqr_rel, "n": t.num_samples})
        out["cases"][key] = {"case": case.label(), "rows": rows}
        for n in names:
            for k in ("single", "batched"):
                r = rows[n][k]
                med = statistics.median(x["median_us"] for x in r)
                iqr = max(x["iqr_pct"] for x in r)
                print(
                    f"{key:12} {n:15} {k:8} median of rounds {med:8.2f} us  worst IQR {iqr:5.1f}%  "
                    f"rounds {[round(x['median_us'], 1) for x in r]}",
                    flush=True,
                )
        del preps
        torch.cuda.empty_cache()
    out["elapsed_s"] = time.perf_counter() - t0
    with open(sys.argv[1] if len(sys.argv) > 1 else "host_timing.json", "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
