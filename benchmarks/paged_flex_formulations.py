"""Paged flex: the two ways of making its BlockMask (attnscope.variants.paged.FlexPaged), timed apart.

    python benchmarks/paged_flex_formulations.py [--device cpu|cuda] [--compiled] [--batch 8] [--lens uniform:512..4096]

For each formulation (``table``: the block table is the BlockMask; ``pool``: create_block_mask over every
(query, pool token) pair) it prints the host time of building the mask (plan) and of one attention call, medians
of ``--repeat`` wall-clock samples (synchronised on CUDA), and checks the output against the fp64 reference.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings


def main() -> None:
    import torch

    from attnscope.core.cases import make_case
    from attnscope.measure.timing import relative_error
    from attnscope.variants.paged import FlexPaged
    from attnscope.workloads.attention import make_inputs, reference

    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--compiled", action="store_true")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--lens", default="uniform:512..4096@0")
    ap.add_argument("--page-size", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    case = make_case(
        a.device, batch=a.batch, heads=a.heads, kv_heads=a.kv_heads, seq_q=1, kv_lens=a.lens, page_size=a.page_size
    )
    x = make_inputs(case, seed=0)
    ref = reference(case, x)
    sync = torch.cuda.synchronize if a.device.startswith("cuda") else (lambda: None)
    print(f"{case.label()}  (pool {x.k.shape[0] * a.page_size:,} tokens)")
    for form in ("table", "pool"):
        s = FlexPaged(case, x, compiled=a.compiled, formulation=form)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s.plan(max(case.kv_lengths))
            out = s.call()  # the first call (compiles when --compiled)
            err, _ = relative_error(out, ref)
            plans, calls = [], []
            for _ in range(a.repeat):
                t0 = time.perf_counter()
                s.plan(max(case.kv_lengths))
                sync()
                t1 = time.perf_counter()
                s.call()
                sync()
                plans.append(1e3 * (t1 - t0))
                calls.append(1e3 * (time.perf_counter() - t1))
        print(
            f"{form:5s}  plan {statistics.median(plans):9.2f} ms  call {statistics.median(calls):9.2f} ms  "
            f"(medians of {a.repeat}, wall clock)  max rel error {err:.1e}"
        )


if __name__ == "__main__":
    main()
