"""Writes tiny_sweep.jsonl: a small CPU sweep, one row per (variant, case, mode), each appended as measured.

Run from the repository root: ``python tests/data/cpu/make_tiny_sweep.py [OUT]``.  The rows are the
`run` command's results (report/json.py ``result_to_dict``) with the environment on each row, the shape
``attnscope sweep`` writes.  bf16 on 2 CPU cores, 0.02 s per timer per variant, no matmul peak.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import attnscope
from attnscope.core.cases import make_case
from attnscope.document.schema import result_to_dict
from attnscope.execute.store import Store

VARIANTS = "naive_inplace,sdpa_math,sdpa_flash,sdpa_default"


def main(out: Path) -> None:
    out.unlink(missing_ok=True)
    store = Store(out)
    for mode in ("fwd", "fwd_bwd"):
        for d in (32, 64):
            for s in (64, 256, 1024):
                case = make_case("cpu", batch=1, heads=2, seq_q=s, head_dim=d, dtype="bf16", causal=True, mode=mode)
                rep = attnscope.run(case, VARIANTS, timing_budget_s=0.02, measure_peak=False)
                for r in rep.results:
                    row = result_to_dict(dataclasses.replace(r, env=rep.env))
                    row["trace_summary"] = None  # not read by anything that uses this file
                    store.append(row)
                print(
                    case.label(),
                    [(r.variant, r.status, r.cpu_time and round(r.cpu_time.median_us)) for r in rep.results],
                )


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).with_name("tiny_sweep.jsonl")))
