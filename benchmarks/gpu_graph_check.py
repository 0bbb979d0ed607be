"""Device time per call: attnscope's CUDA-graph replay against triton.testing.do_bench_cudagraph.

    python3 benchmarks/gpu_graph_check.py OUT.json

For every variant at the GPU default case and at B1 H8 S512 D64 (bf16, causal): stream time
(attnscope's CUDA events around each call), device time (attnscope.measure.timing.time_graph) and
triton's do_bench_cudagraph (median).  Goal: device time within 5% or 1 µs of triton's.
"""

from __future__ import annotations

import inspect
import json
import sys
import warnings
from typing import Any

import torch

from attnscope.core.types import Case
from attnscope.measure import timing as measure
from attnscope.variants import Unsupported, resolve
from attnscope.workloads.attention import make_inputs

CASES = [
    Case(batch=4, heads=16, seq_q=2048, head_dim=64, device="cuda"),
    Case(batch=1, heads=8, seq_q=512, head_dim=64, device="cuda"),
]


def triton_graph_us(fn: Any) -> float | None:
    from triton.testing import do_bench_cudagraph

    kw: dict[str, Any] = {"rep": 100}
    if "return_mode" in inspect.signature(do_bench_cudagraph).parameters:
        kw["return_mode"] = "median"
    try:
        return float(do_bench_cudagraph(fn, **kw)) * 1e3
    except Exception as e:  # noqa: BLE001 - not capturable: reported as such
        print(f"    triton: {type(e).__name__}: {str(e)[:120]}")
        return None


def one(name: str, case: Case) -> dict[str, Any]:
    (v,) = resolve([name])
    row: dict[str, Any] = {"variant": name, "case": case.label()}
    x = make_inputs(case, 0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prep = v.prepare(case, x)
    except Unsupported as e:
        return {**row, "status": "skipped", "reason": str(e)[:200]}
    with prep.context():
        for _ in range(3):
            prep.fn()
        torch.cuda.synchronize()
        host = measure.time_host(prep.fn, cuda=True, budget_s=0.3)
        stream = measure.time_gpu(prep.fn, budget_s=0.5, flush_l2=False, host_us=host.median_us)
        graph, why = measure.time_graph(prep.fn, budget_s=0.5)
        tri = triton_graph_us(prep.fn)
    row.update(status="ok", host_us=host.median_us, stream_us=stream.median_us, stream_iqr=stream.iqr_rel)
    row.update(graph_us=graph.median_us if graph else None, graph_iqr=graph.iqr_rel if graph else None)
    row.update(graph_method=graph.method if graph else why, triton_graph_us=tri)
    if graph and tri:
        diff = graph.median_us - tri
        row.update(diff_us=diff, diff_pct=100 * diff / tri, within=abs(diff) <= max(1.0, 0.05 * tri))
    return row


def main() -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else "graph_check.json"
    rows = []
    names = [v.name for v in resolve("all")]
    for case in CASES:
        for name in names:
            try:
                r = one(name, case)
            except Exception as e:  # noqa: BLE001 - one variant never stops the check
                r = {"variant": name, "case": case.label(), "status": "error", "reason": str(e)[:200]}
            rows.append(r)
            g, t = r.get("graph_us"), r.get("triton_graph_us")
            print(
                f"{r['case'][:34]:34} {name:15} {r['status']:7} stream {r.get('stream_us') or 0:9.1f}  "
                f"graph {g or 0:9.1f}  triton {t or 0:9.1f}  within={r.get('within')}",
                flush=True,
            )
            torch.cuda.empty_cache()
    with open(out, "w") as f:
        json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
