"""Nsight Compute: the command line attnscope runs, and the parser of its CSV.  Pure (no torch).

``ncu --csv --page raw`` writes one header row (``ID``, ``Kernel Name``, ... then one column per
metric), one row of units, then one row per profiled kernel; ``==PROF==``/``==WARNING==`` lines
may come before.  Numbers carry thousands separators ("1,024").  Metrics ncu could not collect
are empty cells or "n/a": they stay None, never 0.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from typing import Any

# Tensor-pipe counters (sm90 names; probed with `ncu --query-metrics` on the H200, ncu 2025.3).
HMMA = "sm__inst_executed_pipe_tensor_op_hmma.sum"  # includes HFMA2.MMA (elementwise fp16 FMA on the pipe)
HFMA2_MMA = "sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum"
GMMA = "sm__inst_executed_pipe_tensor_op_gmma.sum"  # Hopper warpgroup MMA (wgmma)
IMMA = "sm__inst_executed_pipe_tensor_op_imma.sum"
DMMA = "sm__inst_executed_pipe_tensor_op_dmma.sum"
TENSOR_METRICS = (HMMA, HFMA2_MMA, GMMA, IMMA, DMMA)

# Deep mode: what each kernel did, beside what its launch allowed.
DEEP_METRICS: dict[str, str] = {
    "achieved_occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "theoretical_occupancy_pct": "sm__maximum_warps_per_active_cycle_pct",
    "sm_throughput_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "memory_throughput_pct": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "tensor_pipe_pct": "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "dram_read_bytes": "dram__bytes_read.sum",
    "dram_write_bytes": "dram__bytes_write.sum",
    "l2_hit_rate_pct": "lts__t_sector_hit_rate.pct",
    "duration_ns": "gpu__time_duration.sum",
    "grid_size": "launch__grid_size",
    # the SMs' busy cycles: their mean against the busiest SM's (a grid whose long blocks leave most SMs idle)
    "sm_active_cycles_avg": "sm__cycles_active.avg",
    "sm_active_cycles_max": "sm__cycles_active.max",
}
STALL_PREFIX = "smsp__average_warps_issue_stalled_"
STALL_SUFFIX = "_per_issue_active.ratio"


@dataclass
class NcuKernel:
    """One profiled kernel launch: its name, launch shape and metric values (None: not collected)."""

    id: int
    name: str
    block: str
    grid: str
    metrics: dict[str, float | None] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)

    def get(self, metric: str) -> float | None:
        return self.metrics.get(metric)


def _number(cell: str) -> float | None:
    s = cell.strip().replace(",", "")
    if not s or s.lower() in ("n/a", "nan", "-"):
        return None
    try:
        return float(s)
    except ValueError:
        return None


def parse_raw_csv(text: str) -> list[NcuKernel]:
    """Kernels of an ``ncu --csv --page raw`` output, in profiling order."""
    rows = list(csv.reader(io.StringIO(text)))
    start = next((i for i, r in enumerate(rows) if r[:1] == ["ID"] and "Kernel Name" in r), None)
    if start is None:
        raise ValueError("no ncu raw CSV header (a row starting with ID ... Kernel Name) in the output")
    head, units = rows[start], rows[start + 1] if start + 1 < len(rows) else []
    col = {h: i for i, h in enumerate(head)}
    first_metric = next((i for i, h in enumerate(head) if "__" in h), len(head))
    out = []
    for r in rows[start + 2 :]:
        if len(r) != len(head) or not r[0].strip().isdigit():
            continue  # ==PROF== lines between rows, a truncated last row
        k = NcuKernel(
            id=int(r[0]),
            name=r[col["Kernel Name"]],
            block=r[col["Block Size"]] if "Block Size" in col else "",
            grid=r[col["Grid Size"]] if "Grid Size" in col else "",
        )
        for i in range(first_metric, len(head)):
            k.metrics[head[i]] = _number(r[i])
            if i < len(units) and units[i]:
                k.units[head[i]] = units[i]
        out.append(k)
    return out


def matrix_mma(k: NcuKernel) -> float | None:
    """Tensor-core matrix instructions: HMMA minus HFMA2.MMA, plus GMMA, IMMA and DMMA.

    HFMA2.MMA is an elementwise half-precision FMA that Ampere and later issue to the tensor
    pipe; it counts as a tensor-pipe HMMA instruction but multiplies no matrices.  None when
    the HMMA counter was not collected."""
    hmma = k.get(HMMA)
    if hmma is None:
        return None
    hfma2 = k.get(HFMA2_MMA)
    if hfma2 is None and hmma > 0:
        return None  # cannot tell matrix work from HFMA2.MMA
    base = hmma - (hfma2 or 0.0)
    gmma = k.get(GMMA) or 0.0
    if gmma > base:  # on the H200 (ncu 2025.3) the HMMA counter includes wgmma: nvjet shows HMMA == GMMA
        base += gmma
    return base + sum(v for v in (k.get(IMMA), k.get(DMMA)) if v)


def tensor_core_verdict(k: NcuKernel, input_dtype: str | None = None) -> tuple[bool | None, str]:
    """(ran matrix MMA on tensor cores, in words with the counts).  fp32 inputs on HMMA mean TF32."""
    mma = matrix_mma(k)
    if mma is None:
        return None, "tensor-pipe counters not collected (or HFMA2.MMA not separable)"
    hmma, hfma2, gmma = k.get(HMMA) or 0.0, k.get(HFMA2_MMA) or 0.0, k.get(GMMA) or 0.0
    counts = f"HMMA {hmma:,.0f} (of which HFMA2.MMA {hfma2:,.0f}), GMMA {gmma:,.0f}"
    if mma <= 0:
        extra = ": HFMA2.MMA only, elementwise, not matrix work" if hfma2 > 0 else ""
        return False, f"no matrix MMA instructions ({counts}){extra}"
    kind = "GMMA (wgmma)" if gmma > 0 else "HMMA"
    if input_dtype == "fp32" and gmma <= 0:
        kind += " on fp32 inputs: TF32"
    return True, f"{kind}: {mma:,.0f} matrix MMA instructions ({counts})"


def deep_fields(k: NcuKernel, top_stalls: int = 3) -> dict[str, Any]:
    """The deep-mode numbers of one kernel (None where ncu did not collect them) and its top stall reasons."""
    out: dict[str, Any] = {key: k.get(m) for key, m in DEEP_METRICS.items()}
    avg, most = out["sm_active_cycles_avg"], out["sm_active_cycles_max"]
    # the mean SM's busy share of the busiest one's: 100% when the work is spread evenly over the SMs
    out["sm_balance_pct"] = round(100.0 * avg / most, 1) if avg is not None and most else None
    stalls = []
    for m, v in k.metrics.items():
        if m.startswith(STALL_PREFIX) and m.endswith(STALL_SUFFIX) and v:
            reason = m[len(STALL_PREFIX) : -len(STALL_SUFFIX)]
            # "selected" is a warp issuing, not a stall; the "_not_issued" twins repeat the same cycles
            if reason != "selected" and not reason.endswith("_not_issued"):
                stalls.append((reason, v))
    stalls.sort(key=lambda x: -x[1])
    out["top_stalls"] = [{"reason": r, "warps_per_issue": round(v, 3)} for r, v in stalls[:top_stalls]]
    mma = matrix_mma(k)
    out["matrix_mma_instructions"] = mma
    return out


# ---- deep mode: the command, the split by call, the join into the kernels ---------------------

MARKER = "spin_kernel"  # torch.cuda._sleep: launched once before each profiled call
SECTIONS = ("SpeedOfLight", "Occupancy", "MemoryWorkloadAnalysis", "WarpStateStats", "LaunchStats")
EXTRA_METRICS = (
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_sector_hit_rate.pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    HMMA,
    HFMA2_MMA,
    GMMA,
)


def build_command(ncu: str, python: str, target_args: list[str]) -> list[str]:
    """``ncu`` around ``python -m attnscope.execute.ncu_run target ...``: only the marked calls are profiled."""
    cmd = [ncu, "--profile-from-start", "off", "--target-processes", "application-only", "--csv", "--page", "raw"]
    for s in SECTIONS:
        cmd += ["--section", s]
    cmd += ["--metrics", ",".join(EXTRA_METRICS)]
    return [*cmd, python, "-m", "attnscope.execute.ncu_run", "target", *target_args]


def split_by_marker(kernels: list[NcuKernel], labels: list[str]) -> dict[str, list[NcuKernel]]:
    """The kernels after the k-th marker belong to ``labels[k]`` (markers themselves dropped)."""
    out: dict[str, list[NcuKernel]] = {}
    k = -1
    for kern in kernels:
        if MARKER in kern.name:
            k += 1
            if k < len(labels):
                out[labels[k]] = []
            continue
        if 0 <= k < len(labels):
            out[labels[k]].append(kern)
    return out


def _stem(name: str) -> str:
    """A kernel name without 'void ', template arguments and parameters: ncu and Kineto demangle differently."""
    return name.removeprefix("void ").split("<")[0].split("(")[0].strip()


def join(trace_kernels: list[tuple[str, str]], profiled: list[NcuKernel], dtype: str | None) -> list[dict[str, Any]]:
    """Each profiled kernel's deep fields, with the index of the trace kernel (name, category) it is.

    The same call launches the same kernels in the same order, so they are matched by position
    (memcpy and memset are not kernels to ncu) when the counts agree and every name stem matches;
    otherwise by name stem, first unused match; ``trace_kernel`` is None where nothing matched."""
    ks = [i for i, (_, cat) in enumerate(trace_kernels) if cat not in ("memcpy", "memset")]

    def same(i: int, p: NcuKernel) -> bool:
        return _stem(trace_kernels[i][0]).split("::")[-1] == _stem(p.name).split("::")[-1]

    by_position = len(ks) == len(profiled) and all(same(i, p) for i, p in zip(ks, profiled, strict=True))
    out = []
    free = list(ks)
    for pos, p in enumerate(profiled):
        idx = ks[pos] if by_position else next((i for i in free if same(i, p)), None)
        if idx is not None and idx in free:
            free.remove(idx)
        tc, why = tensor_core_verdict(p, dtype)
        out.append({"trace_kernel": idx, "name": p.name, **deep_fields(p), "tensor_cores": tc, "tensor_cores_why": why})
    return out
