"""Insights: each fingerprint explained in words, with the evidence it rests on.  Pure.

Every rule reads one JSON-shaped result dict (what ``report.json.result_to_dict`` writes,
the same for ``attnscope run`` and ``attnscope analyze``) and returns insights, or a
``NotChecked`` that says which evidence was missing.  Every number a message shows is a
value in the insight's ``evidence``; kernels and ops are named in ``kernels``/``ops``.
Execution rules (host cost, libraries, numerics) live in :mod:`attnscope.analysis.rules.execution`; every rule
is registered in :data:`attnscope.analysis.rules.RULES`.
"""

from __future__ import annotations

from typing import Any

from attnscope.analysis.fingerprint.copy_context import copy_advice, upcast_advice
from attnscope.analysis.fingerprint.eager_attention import holds_attention
from attnscope.analysis.fingerprint.kernels import is_matrix_kernel
from attnscope.analysis.rules.peers import ALONE, Peers
from attnscope.analysis.rules.row_kernels import (
    compute_kernels,
    longest,
    names,
    read_once,
)
from attnscope.analysis.rules.ties import overlaps, tied
from attnscope.core.case import run_flags
from attnscope.core.types import Insight, NotChecked
from attnscope.core.units import fmt_mib

MIB = 1024 * 1024
LOW_OCCUPANCY_PCT = 25.0  # at or below: "low" (flash on Hopper sits at 12.5% by design)
HIGH_RATE_PCT = 20.0  # % of the measured matmul peak above which a low occupancy is paying off
MATRIX = ("gemm", "attention")
SAFE_SOFTMAX_OPS = ("aten::isneginf", "aten::all", "aten::where", "aten::fill_", "aten::_safe_softmax")
DTYPE_NAMES = {"c10::BFloat16": "bf16", "c10::Half": "fp16", "float": "fp32", "double": "fp64"}

Out = list[Insight] | NotChecked


def r1(x: float) -> float:
    return round(x, 1)


def short(name: str, n: int = 60) -> str:
    name = name.removeprefix("void ")
    return name if len(name) <= n else name[: n - 1] + "…"


def gpu_total_us(r: dict[str, Any]) -> float | None:
    """Sum of device event durations in the traced call: the base of every GPU share."""
    t = r.get("trace_gpu_time_us")
    return t if t else None


def share_pct(us: float, r: dict[str, Any]) -> float | None:
    total = gpu_total_us(r)
    return r1(100.0 * us / total) if total else None


def on_gpu(r: dict[str, Any]) -> bool:
    return r.get("device_kind") == "gpu"


BACKEND_NAMES = {"cudnn": "cuDNN", "flash": "flash", "efficient": "efficient", "math": "math"}


def fused_names(r: dict[str, Any]) -> str:
    """The fused SDPA backends that exist where this result ran: flash, cuDNN and efficient on NVIDIA
    GPUs; only flash on the CPU (torch's CPU SDPA has flash and math)."""
    return "flash, cuDNN, efficient" if on_gpu(r) else "flash"


def _share_text(us: float, pct: float | None) -> str:
    return f"{us:.1f} µs, {pct:.1f}% of GPU time" if pct is not None else f"{us:.1f} µs"


# ---- hidden copy -------------------------------------------------------------------------

# aten ops with an in-place twin (op_) that returns its input: only these get "use op_" advice.
INPLACE_OPS = frozenset(
    "masked_fill add sub mul div pow clamp clamp_min clamp_max relu sigmoid tanh exp log neg abs sqrt rsqrt "
    "fill zero addcmul addcdiv lerp index_fill index_copy scatter scatter_add copy silu gelu".split()
)
# ops that join tensors: always a new tensor, never a view
JOIN_OPS = frozenset({"cat", "concat", "concatenate", "stack", "hstack", "vstack"})
# ops whose copy is about a tensor's layout, each with why it copied and what avoids the copy (``{op}``: its name)
_REWRITE = (
    "make the producer write contiguous output, or keep the strided layout for the consumer, so no copy is needed"
)
_RESHAPED = ("{op} made a copy because its input's strides allow no view of the new shape", _REWRITE)
_VIEW_ONLY = (
    "{op} returns a view and copies nothing itself: the copy recorded under it is of the tensor it was given",
    "make that tensor in the layout it is used in, so no copy is needed",
)
LAYOUT_COPY_ADVICE: dict[str, tuple[str, str]] = {
    "reshape": _RESHAPED,
    "flatten": _RESHAPED,
    "contiguous": ("{op} made a copy because its input was not contiguous", _REWRITE),
    "to": (
        "{op} made a copy: a change of dtype, device or memory format (or copy=True) is never a view",
        "make the tensor in the dtype, device and memory format it is used in, so no conversion is needed",
    ),
    "clone": (
        "{op} made a copy, as a clone always does",
        "drop the clone where neither tensor is changed in place afterwards",
    ),
    "expand_as": _VIEW_ONLY,
    "view_as": _VIEW_ONLY,
}
LAYOUT_COPY_OPS = frozenset(LAYOUT_COPY_ADVICE)


def _inplace_measured(r: dict[str, Any], peers: Peers) -> dict[str, Any]:
    """What the case measured of naive_inplace against ``r``: ``verdict`` "slower", "faster" or "tied" (beyond the
    noise, their interquartile ranges apart, or not) with both times and their ratio (naive_inplace's over
    ``r``'s), or "not_measured" (with naive_inplace's ``status`` where it ran without a time to compare), and the
    ``command`` that would measure it."""
    mine, other = peers.row_of(r), peers.row_named("naive_inplace")
    if mine is not None and other is not None and other[0] is not r:
        out = {"naive_inplace_us": r1(other[1]), "this_us": r1(mine[1]), "ratio": round(other[1] / mine[1], 2)}
        # the noise alone decides: the two launch the same compute kernels, the copy being the difference measured
        verdict = "tied" if overlaps(mine[2], other[2]) else "slower" if other[1] > mine[1] else "faster"
        return {"verdict": verdict, **out}
    ran = next((p for p in peers.results if p.get("variant") == "naive_inplace"), None)
    case = r.get("case")
    flags = run_flags(case) if isinstance(case, dict) else ""
    got: dict[str, Any] = {
        "verdict": "not_measured",
        "command": f"attnscope run --variants naive,naive_inplace {flags}".rstrip() if flags else None,
    }
    if ran is not None:
        got["status"] = ran.get("status")
    return got


def _inplace_advice(r: dict[str, Any], fused: str, m: dict[str, Any]) -> str:
    """The masked_fill advice from what the case measured of naive_inplace (:func:`_inplace_measured`)."""
    v = m["verdict"]
    if v == "slower":
        return (
            f"use {fused}; naive_inplace measured {m['naive_inplace_us']:,.1f} µs here, {m['ratio']:.2f}× slower "
            f"than {r['variant']} ({m['this_us']:,.1f} µs): the in-place fill does not pay at this case"
        )
    if v == "faster":
        return (
            f"use the in-place masked_fill_ on the scores: naive_inplace measured {m['naive_inplace_us']:,.1f} µs "
            f"here, {m['this_us'] / m['naive_inplace_us']:.2f}× faster than {r['variant']} ({m['this_us']:,.1f} µs); "
            f"or {fused}"
        )
    if v == "tied":
        return (
            f"use {fused}; the in-place masked_fill_ saves the copy's memory but not time here: naive_inplace "
            f"measured {m['naive_inplace_us']:,.1f} µs, tied within the noise with {r['variant']} "
            f"({m['this_us']:,.1f} µs)"
        )
    ran = f" (naive_inplace ran here: {m['status']}, no time to compare)" if m.get("status") else ""
    how = (
        f"{m['command']} measures it"
        if m.get("command")
        else "attnscope run --variants naive,naive_inplace with the case's shape flags measures it"
    )
    return (
        f"use {fused}, or the in-place masked_fill_ on the scores; whether in place is faster is not measured "
        f"here{ran}: {how}"
    )


def _in_place_readers(r: dict[str, Any], peers: Peers) -> dict[str, Any] | None:
    """The variants of ``r``'s case that read a paged cache in place (``paged_*`` but no gather) and ranked, with
    their times against ``r``'s; None where none ranked or ``r`` did not."""
    mine = peers.row_of(r)
    if mine is None:
        return None
    others = [
        row
        for row in peers.rows
        if row[0] is not r and str(row[0].get("variant", "")).startswith("paged_") and "gather" not in row[0]["variant"]
    ]
    if not others:
        return None
    return {
        "this_us": r1(mine[1]),
        "readers": [{"variant": o[0]["variant"], "us": r1(o[1]), "ratio": round(o[1] / mine[1], 2)} for o in others],
        "all_slower": all(o[1] > mine[1] and not tied(mine, o) for o in others),
    }


def _copy_advice(
    op: str,
    r: dict[str, Any],
    kind: str | None = None,
    inside: str | None = None,
    inplace: dict[str, Any] | None = None,
    peers: list[dict[str, Any]] | None = None,
) -> str:
    """The advice for one group of copies; ``inplace``: what the case measured of naive_inplace against this row
    (:func:`_inplace_measured`; None: nothing was looked at, as for a row alone), which decides whether the
    in-place fill is advised and on what evidence."""
    ctx = copy_advice(kind, inside, r, peers)  # where the copy happened decides first (analysis/copy_context.py)
    if ctx is not None:
        return ctx
    if op.startswith("aten::masked_fill") and holds_attention(r):  # else: the in-place form, as for any op
        fused = f"a fused SDPA backend ({fused_names(r)}) that never materialises the scores"
        if r.get("variant") == "naive_inplace":
            return f"use {fused}"
        return _inplace_advice(r, fused, inplace if inplace is not None else _inplace_measured(r, ALONE))
    if "repeat_interleave" in op:  # a repeat in this code, whatever kind the copy was read as
        advice = str(copy_advice("broadcast", None, r, peers))
        if kind is None:  # a document written before copies carried their kind and place
            advice += (
                "; this document does not say where the repeat happened (it predates that field): "
                "flex_attention's eager path repeats K/V itself, so analyze the trace again to tell a repeat in "
                "this code from one inside a library op"
            )
        return advice
    if op == "unknown":  # no launching op was recorded for the copy
        if not holds_attention(r):
            return "the trace records no op that asked for this copy, so no call in this code can be named for it"
        return (
            "the trace records no op that asked for this copy: a fused or compiled variant "
            "(e.g. flex_compiled, an SDPA backend) does the step without materialising the tensor"
        )
    if not op.startswith("aten::"):
        if "ddp.reducer" in op or "copy_bucket_to_grad" in op:
            # DDP copies each gradient out of its all-reduce bucket; with gradient_as_bucket_view the gradients
            # are views of the buckets and this op is not called at all (so the flag is not already passed)
            return (
                f"DDP copies each gradient out of its all-reduce bucket ({op}): "
                "DistributedDataParallel(..., gradient_as_bucket_view=True) makes the gradients views of the "
                "buckets, so this copy is not made"
            )
        if not any(w in op.lower() for w in ("attention", "sdpa", "flex", "attn")):
            return f"the copy happens inside {op}, not a call in this code: an in-place fix cannot reach it"
        return (
            f"the copy happens inside {op}, out of reach of an in-place fix: a fused or compiled variant "
            "(e.g. flex_compiled, an SDPA backend) does the step without it"
        )
    base = op.removeprefix("aten::")
    if base in LAYOUT_COPY_OPS:
        why, fix = LAYOUT_COPY_ADVICE[base]
        return f"{why.format(op=op)}: {fix}"
    if base.endswith("_backward"):
        return (
            f"autograd's {base} materialises a full-size gradient: slicing or indexing fewer, larger tensors "
            "in the forward pass (or a fused op) avoids it"
        )
    if base in INPLACE_OPS:
        return (
            f"use the in-place form ({base}_) where the input is not needed afterwards, "
            "or a fused variant that does the step inside one kernel"
        )
    if base in JOIN_OPS:  # no view of a concatenation exists: "check whether a view would do" cannot apply
        return (
            f"{base} always writes a new tensor: have the producers write into slices of one preallocated tensor "
            f"({base}'s out=, or each slice's copy_), or fuse the step (torch.compile)"
        )
    if base == "copy_":  # the copy this code asked for by name
        return "an explicit copy_ in this code: drop it where the destination may share the source's memory"
    return f"{base} returns a copy here: check whether a view would do, or fuse the step (torch.compile)"


def hidden_copy(r: dict[str, Any], peers: Peers = ALONE) -> Out:
    """Full-tensor copies the code asked for, grouped by the op that asked; ``peers``: the row's case, whose
    measurements decide whether the in-place fill is advised."""
    groups: dict[tuple[str, str, str | None, str | None], list[dict[str, Any]]] = {}
    for c in r.get("hidden_copies") or []:
        groups.setdefault((c["op"], c["copy_op"], c.get("kind"), c.get("inside")), []).append(c)
    out = []
    for (op, copy_op, kind, inside), cs in groups.items():
        total = sum(int(c["bytes"]) for c in cs)
        us = sum(c.get("duration_us") or 0.0 for c in cs)
        events = sorted({c["device_event"] for c in cs if c.get("device_event")})
        ev: dict[str, Any] = {
            "op": op,
            "copy_op": copy_op,
            "num_copies": len(cs),
            "bytes": total,
            "mib": r1(total / MIB),
            "dims": [list(c.get("dims") or []) for c in cs],
            "kind": kind,
            "inside": inside,
        }
        if total >= MIB:
            size = f"{ev['mib']:.1f} MiB"
        else:
            ev["kib"] = r1(total / 1024)
            size = f"{ev['kib']:.1f} KiB" if total >= 1024 else f"{total} B"  # 16 bytes never read "0.0 KiB"
        what = f"a full tensor ({kind})" if kind else "a full tensor"
        msg = f"{op} copies {what}: {len(cs)}× via {copy_op}, {size} in all"
        if inside and inside != op:
            msg += f", inside {inside}"
        if events and us > 0:
            ev.update(device_event=events[0], copy_us=r1(us), gpu_share_pct=share_pct(us, r))
            msg += f" ({short(events[0])}, {_share_text(ev['copy_us'], ev['gpu_share_pct'])})"
        inplace = None
        if op.startswith("aten::masked_fill") and holds_attention(r) and copy_advice(kind, inside, r) is None:
            inplace = _inplace_measured(r, peers)
            ev["naive_inplace_measured"] = inplace
        advice = _copy_advice(op, r, kind, inside, inplace, peers.results)
        readers = _in_place_readers(r, peers) if kind == "gather" and inside is None else None
        if readers is not None:
            ev["in_place_readers_measured"] = readers
            said = ", ".join(f"{x['variant']} {x['us']:,.1f} µs ({x['ratio']:.2f}×)" for x in readers["readers"])
            if readers["all_slower"]:  # measured: the copy pays at this case, so avoiding it is no advice
                advice = (
                    f"the copy pays at this case: every kernel measured here that reads the pages in place was "
                    f"slower than this gather ({readers['this_us']:,.1f} µs): {said}"
                )
            else:
                advice += f"; measured here against this gather ({readers['this_us']:,.1f} µs): {said}"
        out.append(
            Insight(
                id="hidden_copy",
                variant=r["variant"],
                severity="warning" if total >= MIB else "info",
                message=msg,
                advice=advice,
                evidence=ev,
                kernels=tuple(events),
                ops=(op, copy_op),
            )
        )
    return out


# ---- fp32 upcast / no tensor cores ---------------------------------------------------------


def fp32_cuda_core_kernels(r: dict[str, Any]) -> list[dict[str, Any]]:
    """Matrix kernels (gemm, attention; not a combine/merge helper) that ran without tensor cores."""
    return [
        k for k in compute_kernels(r) if k.get("tensor_cores") is False and is_matrix_kernel(k["name"], k["category"])
    ]


def _input_dtypes(ks: list[dict[str, Any]], r: dict[str, Any]) -> list[str]:
    """The inputs' dtypes of these kernels: each launching op's recorded Input type, else the case's dtype
    (a run knows it) unless the call upcasts (then the case's dtype is what was upcast, not what these kernels
    read); empty when neither says."""
    got: set[str] = {k["input_dtype"] for k in ks if k.get("input_dtype")}
    if not got and ks and not r.get("upcasts") and (r.get("case") or {}).get("dtype"):
        got = {r["case"]["dtype"]}
    return sorted(got)


def _fp32_gpu_part(r: dict[str, Any], ev: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    ks = fp32_cuda_core_kernels(r)
    if not ks:
        return "", ()
    us = sum(k["duration_us"] for k in ks)
    ev.update(num_fp32_matrix_kernels=len(ks), fp32_matrix_us=r1(us), fp32_matrix_share_pct=share_pct(us, r))
    ev["input_dtypes"] = _input_dtypes(ks, r)
    conv = [k for k in compute_kernels(r) if k["category"] == "copy"]
    ev["num_conversion_kernels"] = len(conv)
    dts = ev["input_dtypes"]
    how = "in fp32 " if dts == ["fp32"] else f"with {'/'.join(dts)} inputs " if dts else ""
    text = (
        f"{len(ks)} matrix kernel(s) run {how}on CUDA cores, not tensor cores: "
        f"{_share_text(ev['fp32_matrix_us'], ev['fp32_matrix_share_pct'])}"
    )
    return text, tuple(k["name"] for k in ks + conv)


def _cuda_core_advice(dts: list[str], names: tuple[str, ...] = ()) -> str:
    """What to do about matrix work on CUDA cores, by the inputs' recorded dtype: TF32 only helps fp32."""
    if dts == ["fp32"]:
        return (
            "fp32 inputs: allow TF32 (torch.set_float32_matmul_precision('high')) or run in "
            "bf16/fp16 so the matrix work lands on tensor cores"
        )
    if dts and "fp32" not in dts:
        gemv = bool(names) and all("gemv" in n.lower() for n in names)
        return f"the inputs are already {'/'.join(dts)}, so neither TF32 nor a cast would change this: " + (
            "cuBLAS picked gemv, a matrix-vector product (one row, as in decode), which is memory-bound on any "
            "core; more rows per call (several sequences batched) let it pick a tensor-core kernel"
            if gemv
            else "the library picked a CUDA-core kernel for this shape; compare another backend or shape"
        )
    return (
        "check the inputs' dtype (not recorded for these kernels): fp32 inputs run on CUDA cores unless TF32 "
        "is allowed (torch.set_float32_matmul_precision('high')); 16-bit inputs on CUDA cores are the library's "
        "choice for this shape"
    )


def fp32_upcast(r: dict[str, Any], peers: Peers = ALONE) -> Out:
    """fp32 upcasts and where they happened; ``peers``: the row's case, whose rows of an alternative are cited."""
    ups = r.get("upcasts") or []
    if not ups:
        return []
    ops = sorted({u["op"] for u in ups})
    src = DTYPE_NAMES.get(ups[0]["src_dtype"], ups[0]["src_dtype"])
    written = sum(int(u["bytes"]) for u in ups)
    ev: dict[str, Any] = {
        "num_upcasts": len(ups),
        "src_dtype": src,
        "dst_dtype": "fp32",
        "ops": ops,
        "fp32_bytes": written,
        "fp32_mib": r1(written / MIB),
    }
    msg = f"{len(ups)} {src}→fp32 upcast(s) inside {', '.join(ops)} ({fmt_mib(written)} written in fp32)"
    gpu_text, kernels = _fp32_gpu_part(r, ev) if on_gpu(r) else ("", ())
    if gpu_text:
        msg += f"; {gpu_text}"
    math = any("math" in o for o in ops)
    stays = "stays in 16-bit on tensor cores" if on_gpu(r) else f"stays in {src}"
    advice = upcast_advice([u.get("inside") for u in ups], r, peers.results) or (
        "the math backend upcasts to fp32 by design (it is the reference implementation): use a fused "
        f"backend ({fused_names(r)}) that {stays}"
        if math
        else f"keep the computation in {src}: a fused kernel or a 16-bit op avoids the upcast and the casts back"
    )
    ev["inside"] = sorted({u.get("inside") or "(this code)" for u in ups})
    return [
        Insight(
            id="fp32_upcast",
            variant=r["variant"],
            severity="warning",
            message=msg,
            advice=advice,
            evidence=ev,
            kernels=kernels,
            ops=tuple(ops),
        )
    ]


def no_tensor_cores(r: dict[str, Any]) -> Out:
    if not on_gpu(r) or r.get("upcasts"):
        return []  # an upcast already explains it (fp32_upcast)
    ev: dict[str, Any] = {}
    text, kernels = _fp32_gpu_part(r, ev)
    if not text:
        return []
    return [
        Insight(
            id="no_tensor_cores",
            variant=r["variant"],
            severity="warning",
            message=text,
            advice=_cuda_core_advice(ev["input_dtypes"], tuple(k["name"] for k in fp32_cuda_core_kernels(r))),
            evidence=ev,
            kernels=kernels,
        )
    ]


# ---- safe softmax ---------------------------------------------------------------------------


def safe_softmax_kernels(r: dict[str, Any]) -> list[dict[str, Any]]:
    """The guard passes after the softmax: isneginf, all, where (the math backend's _safe_softmax)."""
    ks = compute_kernels(r)

    def tagged(op: str, k: dict[str, Any]) -> bool:  # ``op`` in "name launched_by" (no op name holds a space)
        return op in k["name"] or op in (k.get("launched_by") or "")

    # the first isneginf, read from the row's few distinct names and ops (10^4 kernels, ~10^2 names)
    named = {n for n in read_once(r, names) if "isneginf" in n}
    ops = {o for o in {k.get("launched_by") for k in ks} if o and "isneginf" in o}
    if not named and not ops:
        return []
    start = next(i for i, k in enumerate(ks) if k["name"] in named or k.get("launched_by") in ops)
    out = []
    for k in ks[start:]:
        if k["category"] in MATRIX or k["category"] == "copy":
            break
        if any(tagged(op, k) for op in SAFE_SOFTMAX_OPS):
            out.append(k)
    return out


def safe_softmax(r: dict[str, Any]) -> Out:
    ks = safe_softmax_kernels(r) if holds_attention(r) else []  # no attention: no scores to guard
    if not ks:
        return []
    us = sum(k["duration_us"] for k in ks)
    ops = sorted({o for k in ks for o in SAFE_SOFTMAX_OPS if o in f"{k['name']} {k.get('launched_by')}"})
    ev: dict[str, Any] = {"num_guard_kernels": len(ks), "guard_us": r1(us), "ops": ops}
    unit = "kernel(s)" if on_gpu(r) else "op(s)"  # on a CPU the units of work are leaf aten ops
    msg = f'"safe" softmax: {len(ks)} extra {unit} over the scores guard fully masked rows ({", ".join(ops)})'
    if on_gpu(r):
        ev["guard_share_pct"] = share_pct(us, r)
        msg += f", {_share_text(ev['guard_us'], ev['guard_share_pct'])}"
    return [
        Insight(
            id="safe_softmax",
            variant=r["variant"],
            severity="info",
            message=msg,
            advice="the guard keeps fully masked rows at 0 instead of NaN; fused backends do it inside "
            "the kernel at no extra pass",
            evidence=ev,
            kernels=tuple(k["name"] for k in ks),
            ops=tuple(ops),
        )
    ]


# ---- shared with the other rule modules ------------------------------------------------


def main_kernel(r: dict[str, Any]) -> dict[str, Any] | None:
    """The longest compute kernel (the first of equals), or None."""
    return read_once(r, longest)


def by_launching_op(ks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The kernels grouped by the op that launched them, in order of first launch: count and µs of each."""
    out: dict[str | None, dict[str, Any]] = {}
    for x in ks:
        o = out.setdefault(x.get("launched_by"), {"op": x.get("launched_by"), "num_kernels": 0, "us": 0.0})
        o["num_kernels"] += 1
        o["us"] += x["duration_us"]
    return [{**o, "us": r1(o["us"])} for o in out.values()]
