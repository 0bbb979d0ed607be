"""DRAM traffic above the byte model (``run --ncu``): by how much, and the cause the counters point at.  Pure.

The roofline's byte model reads Q, K and V and writes O once (``attnscope.analysis.roofline.call_bytes``);
Nsight Compute's ``dram__bytes_read.sum`` + ``dram__bytes_write.sum`` over the call's kernels say what moved.
Above :data:`OVER` × the model, the insight names what the numbers show: bytes in kernels beside attention
(copies, casts, a mask built on the device), K and V read more than once (prefill streams them again for each
block of queries where the L2 cannot keep them), or a dense mask the call read.
"""

from __future__ import annotations

from typing import Any

from attnscope.analysis.fingerprint.kernels import classify_gpu
from attnscope.analysis.roofline import DTYPE_BYTES
from attnscope.core.types import Insight

OVER = 1.25  # measured above 1.25 × the model: the model misses real traffic
OTHER_SHARE = 0.10  # kernels beside attention carry more than 10% of the bytes: named as a cause
PASSES = 1.2  # K and V read more than 1.2 times: re-read


def _mb(n: float) -> float:
    return round(n / 1e6, 1)


def traffic_over_model(r: dict[str, Any]) -> list[Insight]:
    rf = r.get("roofline") or {}
    ratio, measured, model = rf.get("bytes_ratio"), rf.get("bytes_measured"), rf.get("bytes_model")
    if ratio is None or not measured or not model or ratio <= OVER:
        return []
    per = rf.get("bytes_per_kernel") or []
    attn = [k for k in per if classify_gpu(k.get("name") or "") == "attention"]
    other = [k for k in per if k not in attn]
    other_bytes = sum(k["read"] + k["write"] for k in other)
    ev: dict[str, Any] = {
        "bytes_measured": measured,
        "bytes_model": model,
        "bytes_ratio": ratio,
        "measured_mb": _mb(measured),
        "model_mb": _mb(model),
        "other_kernels_bytes": other_bytes,
    }
    causes = []
    if other_bytes > OTHER_SHARE * measured:
        names = ", ".join(sorted({str(k.get("name"))[:40] for k in other})[:3])
        ev["other_kernels_pct"] = round(100.0 * other_bytes / measured, 1)
        causes.append(
            f"{_mb(other_bytes):,.1f} MB ({ev['other_kernels_pct']}%) move in kernels beside attention ({names}): "
            "copies, casts or a mask built on the device"
        )
    got = r.get("case")
    case: dict[str, Any] = got if isinstance(got, dict) else {}
    passes = _kv_passes(case, attn)
    if passes is not None:
        ev["kv_passes"] = passes
        if passes > PASSES and (case.get("seq_q") or 1) > 1:
            causes.append(
                f"the attention kernel read K and V {passes:.1f} times (its DRAM reads less Q, over K and V's bytes): "
                "each block of queries streams them again where the L2 cannot hold them (prefill)"
            )
    dense = [n for n in r.get("run_notes") or [] if "dense" in n and "attn_mask" in n]
    if dense:
        causes.append("the call read a dense mask tensor (" + dense[0][:80] + ")")
    if not causes:
        causes.append(
            "no cause the DRAM counters alone show: a register spill to local memory or a partial L2 reuse "
            "(ncu's MemoryWorkloadAnalysis and the spill counters say which)"
        )
    msg = (
        f"DRAM traffic {ev['measured_mb']:,.1f} MB is {ratio:.2f}× the byte model's {ev['model_mb']:,.1f} MB "
        "(Q, K, V read and O written once)"
    )
    advice = "; ".join(causes) + "; the roofline here uses the measured bytes"
    return [Insight("traffic_over_model", r["variant"], "warning", msg, advice, ev, tuple(k["name"] for k in attn))]


def _kv_passes(case: dict[str, Any], attn: list[dict[str, Any]]) -> float | None:
    """(the attention kernels' DRAM reads − Q's bytes) / (K and V's bytes), from the case's shapes."""
    try:
        e = DTYPE_BYTES[case.get("dtype") or "bf16"]
        b, h, d, sq = case["batch"], case["heads"], case["head_dim"], case["seq_q"]
        sk = case.get("seq_kv") or sq
        kvh = case.get("kv_heads") or h
    except (KeyError, TypeError):
        return None
    if not attn or case.get("mode") == "fwd_bwd":
        return None
    kv = 2 * b * kvh * sk * d * e
    q = b * h * sq * d * e
    read = sum(k["read"] for k in attn)
    return round((read - q) / kv, 2) if kv > 0 else None
