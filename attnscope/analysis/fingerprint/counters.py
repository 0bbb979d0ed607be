"""Nsight Compute's counters joined into a fingerprint (``attnscope run --ncu``).  Pure.

With ``--ncu`` the tensor-core verdict of every profiled kernel comes from its counters (matrix
MMA = HMMA minus HFMA2.MMA, wgmma included: ``attnscope.measure.ncu.tensor_core_verdict``), not from the
kernel-name table; where the two disagree, the result says so, kernel by kernel.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from attnscope.analysis.fingerprint.kernels import any_tensor_cores
from attnscope.core.types import Fingerprint

COUNTERS_SOURCE = "Nsight Compute counters (matrix MMA = HMMA − HFMA2.MMA, wgmma included)"


def tensor_cores_from_counters(
    fp: Fingerprint, profiled: list[dict[str, Any]]
) -> tuple[Fingerprint, list[dict[str, Any]]]:
    """``fp`` with each profiled kernel's tensor cores (and TF32) as its counters say, and where the name table
    said otherwise.  ``profiled``: ``ncu.join``'s entries (``trace_kernel`` is the index into ``fp.kernels``);
    a kernel ncu did not match, or whose counters were not collected (verdict None), keeps the name table's."""
    ks = list(fp.kernels)
    differ: list[dict[str, Any]] = []
    for d in profiled:
        i, tc = d.get("trace_kernel"), d.get("tensor_cores")
        if i is None or tc is None or not 0 <= i < len(ks):
            continue
        k = ks[i]
        tf32 = "TF32" in (d.get("tensor_cores_why") or "")
        precision = ("TF32" if tf32 else k.tensor_core_precision) if tc else None
        if (k.tensor_cores, k.tensor_core_precision) != (tc, precision):
            differ.append(
                {
                    "kernel": k.name,
                    "trace_kernel": i,
                    "name_table": k.tensor_cores,
                    "name_table_precision": k.tensor_core_precision,
                    "counters": tc,
                    "counters_precision": precision,
                    "why": d.get("tensor_cores_why"),
                }
            )
        ks[i] = replace(k, tensor_cores=tc, tensor_core_precision=precision)
    return replace(fp, kernels=tuple(ks), tensor_cores=any_tensor_cores(ks)), differ
