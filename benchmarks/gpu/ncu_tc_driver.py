"""Every kernel kind attnscope's variants launch, once each, for Nsight Compute's tensor-pipe counters.

    ncu --profile-from-start off --target-processes application-only --csv --page raw \
        --metrics ... python3 benchmarks/gpu/ncu_tc_driver.py SECTIONS.json [BUDGET_S]

Each section (variant × dtype × forward/backward, plus a decode shape that makes flash split
the KV sequence) is warmed up outside the profiled range, then run once inside it, right
after one ``spin_kernel`` launch (torch.cuda._sleep): the k-th spin_kernel in ncu's output
opens the k-th section listed in SECTIONS.json.  Sections past the time budget are listed as
skipped, so the process always ends by itself and ncu writes its CSV.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import torch

from attnscope.core.types import Case
from attnscope.variants import resolve
from attnscope.workloads.attention import make_inputs

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "sections.json")
BUDGET_S = float(sys.argv[2]) if len(sys.argv) > 2 else 150.0
T0 = time.perf_counter()
sections: list[dict[str, Any]] = []
markers = 0

FUSED = ["naive", "naive_inplace", "sdpa_math", "sdpa_efficient", "sdpa_flash", "sdpa_cudnn", "sdpa_default", "flex"]


def save() -> None:
    OUT.write_text(json.dumps({"sections": sections, "num_markers": markers}, indent=1))


def profiled(fn: Any) -> None:
    """One marker, then fn, inside the profiled range."""
    global markers
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    try:
        torch.cuda._sleep(1000)
        markers += 1
        fn()
        torch.cuda.synchronize()
    finally:
        torch.cuda.profiler.stop()


def run_section(variant: str, case: Case, label: str) -> None:
    base = {"variant": variant, "case": case.to_dict(), "label": label}
    if time.perf_counter() - T0 > BUDGET_S:
        sections.append({**base, "direction": "fwd", "status": "skipped", "reason": "time budget"})
        return
    (v,) = resolve([variant])
    try:
        x = make_inputs(case, 0)
        for t in (x.q, x.k, x.v):
            t.requires_grad_(True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prep = v.prepare(case, x)
            with prep.context():
                for _ in range(2):
                    out = prep.fn()
                    out.backward(torch.ones_like(out))
                torch.cuda.synchronize()
                for t in (x.q, x.k, x.v):
                    t.grad = None
                sections.append({**base, "direction": "fwd", "status": "ok", "marker": markers})
                holder: dict[str, Any] = {}
                profiled(lambda: holder.setdefault("out", prep.fn()))
            out = holder["out"]
            grad = torch.ones_like(out)
            sections.append({**base, "direction": "bwd", "status": "ok", "marker": markers})
            profiled(lambda: out.backward(grad))
    except Exception as e:  # noqa: BLE001 - a refused case is a row, the driver goes on
        sections.append({**base, "direction": "fwd+bwd", "status": "error", "reason": " ".join(str(e).split())[:300]})
    save()
    torch.cuda.empty_cache()


PART = sys.argv[3] if len(sys.argv) > 3 else "all"  # "rest": only what the first pass ran out of time for


def main() -> None:
    main_case = {"batch": 1, "heads": 4, "seq_q": 512, "head_dim": 64, "causal": True, "device": "cuda"}
    if PART == "rest":
        for dt in ("bf16", "fp32", "fp16"):
            run_section("flex_compiled", Case(**main_case, dtype=dt), f"flex_compiled {dt} B1 H4 S512 D64 causal")
    else:
        for dt in ("bf16", "fp32", "fp16"):
            for name in FUSED:
                run_section(name, Case(**main_case, dtype=dt), f"{name} {dt} B1 H4 S512 D64 causal")
    # The shape at which fp32 efficient attention was seen issuing tensor-pipe instructions.
    for dt in ("fp32", "bf16"):
        c = Case(batch=1, heads=4, seq_q=777, head_dim=128, dtype=dt, causal=False, device="cuda")
        run_section("sdpa_efficient", c, f"sdpa_efficient {dt} B1 H4 S777 D128")
    # Decode: one query row against a long KV sequence (flash may split the KV and combine).
    for name in ("sdpa_flash", "sdpa_efficient", "sdpa_cudnn"):
        c = Case(batch=2, heads=16, seq_q=1, seq_kv=8192, head_dim=128, dtype="bf16", causal=False, device="cuda")
        run_section(name, c, f"{name} bf16 decode Sq1 Sk8192 D128")
    if PART != "rest":
        for dt in ("bf16", "fp16", "fp32"):
            run_section("flex_compiled", Case(**main_case, dtype=dt), f"flex_compiled {dt} B1 H4 S512 D64 causal")
    save()
    print(f"{markers} markers, {len(sections)} sections in {time.perf_counter() - T0:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
