"""Insights: each fingerprint explained in words, with the evidence it rests on.  Pure.

Every rule reads one JSON-shaped result dict (what ``report.json.result_to_dict`` writes,
the same for ``attnscope run`` and ``attnscope analyze``) and returns insights, or a
``NotChecked`` that says which evidence was missing.  Every number a message shows is a
value in the insight's ``evidence``; kernels and ops are named in ``kernels``/``ops``.
Execution rules (occupancy, host cost, libraries, numerics) and the rule table live in
:mod:`attnscope.analysis.rules.execution`; rules that compare variants in :mod:`attnscope.analysis.compare`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from attnscope.analysis.fingerprint.copy_context import copy_advice, upcast_advice
from attnscope.analysis.fingerprint.kernels import is_matrix_kernel
from attnscope.core.types import DTYPE_BYTES, Insight, NotChecked

MIB = 1024 * 1024
LOW_OCCUPANCY_PCT = 25.0  # at or below: "low" (flash on Hopper sits at 12.5% by design)
HIGH_RATE_PCT = 20.0  # % of the measured matmul peak above which a low occupancy is paying off
MATRIX = ("gemm", "attention")
SAFE_SOFTMAX_OPS = ("aten::isneginf", "aten::all", "aten::where", "aten::fill_", "aten::_safe_softmax")
DTYPE_NAMES = {"c10::BFloat16": "bf16", "c10::Half": "fp16", "float": "fp32", "double": "fp64"}

Out = list[Insight] | NotChecked
Rule = Callable[[dict[str, Any]], Out]


def r1(x: float) -> float:
    return round(x, 1)


def short(name: str, n: int = 60) -> str:
    name = name.removeprefix("void ")
    return name if len(name) <= n else name[: n - 1] + "…"


def compute_kernels(r: dict[str, Any]) -> list[dict[str, Any]]:
    return [k for k in r.get("kernels") or [] if k["category"] not in ("memcpy", "memset")]


def gpu_total_us(r: dict[str, Any]) -> float | None:
    """Sum of device event durations in the traced call: the base of every GPU share."""
    t = r.get("trace_gpu_time_us")
    return t if t else None


def share_pct(us: float, r: dict[str, Any]) -> float | None:
    total = gpu_total_us(r)
    return r1(100.0 * us / total) if total else None


def on_gpu(r: dict[str, Any]) -> bool:
    return r.get("device_kind") == "gpu"


FUSED_SDPA = ("flash", "efficient", "cudnn")
BACKEND_NAMES = {"cudnn": "cuDNN", "flash": "flash", "efficient": "efficient", "math": "math"}


def is_fused(r: dict[str, Any]) -> bool:
    """Whether the whole attention ran in one fused kernel (or CPU op), scores kept on chip."""
    if r.get("sdpa_backend") in FUSED_SDPA:
        return True
    return any(k["category"] == "attention" for k in compute_kernels(r))


def materialises_scores(r: dict[str, Any]) -> bool:
    """Whether the variant writes the score matrix out: matrix work that is not one fused attention."""
    return not is_fused(r) and any(k["category"] == "gemm" for k in compute_kernels(r))


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
# ops that copy only when their input's layout forbids a view
LAYOUT_COPY_OPS = frozenset("reshape contiguous flatten to clone expand_as view_as".split())


def _copy_advice(op: str, r: dict[str, Any], kind: str | None = None, inside: str | None = None) -> str:
    ctx = copy_advice(kind, inside, r)  # where the copy happened decides first (analysis/copy_context.py)
    if ctx is not None:
        return ctx
    if op.startswith("aten::masked_fill"):
        return (
            "use the in-place masked_fill_ on the scores (naive_inplace), or a fused SDPA backend "
            f"({fused_names(r)}) that never materialises them"
        )
    if "repeat_interleave" in op:  # a repeat in this code, whatever kind the copy was read as
        advice = str(copy_advice("broadcast", None, r))
        if kind is None:  # a document written before copies carried their kind and place
            advice += (
                "; this document does not say where the repeat happened (it predates that field): "
                "flex_attention's eager path repeats K/V itself, so analyze the trace again to tell a repeat in "
                "this code from one inside a library op"
            )
        return advice
    if op == "unknown":  # no launching op was recorded for the copy
        return (
            "the trace records no op that asked for this copy: a fused or compiled variant "
            "(e.g. flex_compiled, an SDPA backend) does the step without materialising the tensor"
        )
    if not op.startswith("aten::"):
        return (
            f"the copy happens inside {op}, out of reach of an in-place fix: a fused or compiled variant "
            "(e.g. flex_compiled, an SDPA backend) does the step without it"
        )
    base = op.removeprefix("aten::")
    if base in LAYOUT_COPY_OPS:
        return (
            f"{base} copied because its input was not laid out as a view allows: make the producer write "
            "contiguous output, or keep the strided layout for the consumer, so no copy is needed"
        )
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
    return f"{base} returns a copy here: check whether a view would do, or fuse the step (torch.compile)"


def hidden_copy(r: dict[str, Any]) -> Out:
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
            size = f"{ev['kib']:.1f} KiB"
        what = f"a full tensor ({kind})" if kind else "a full tensor"
        msg = f"{op} copies {what}: {len(cs)}× via {copy_op}, {size} in all"
        if inside and inside != op:
            msg += f", inside {inside}"
        if events and us > 0:
            ev.update(device_event=events[0], copy_us=r1(us), gpu_share_pct=share_pct(us, r))
            msg += f" ({short(events[0])}, {_share_text(ev['copy_us'], ev['gpu_share_pct'])})"
        out.append(
            Insight(
                id="hidden_copy",
                variant=r["variant"],
                severity="warning" if total >= MIB else "info",
                message=msg,
                advice=_copy_advice(op, r, kind, inside),
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
        k for k in compute_kernels(r) if is_matrix_kernel(k["name"], k["category"]) and k.get("tensor_cores") is False
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


def fp32_upcast(r: dict[str, Any]) -> Out:
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
    msg = f"{len(ups)} {src}→fp32 upcast(s) inside {', '.join(ops)} ({ev['fp32_mib']:.1f} MiB written in fp32)"
    gpu_text, kernels = _fp32_gpu_part(r, ev) if on_gpu(r) else ("", ())
    if gpu_text:
        msg += f"; {gpu_text}"
    math = any("math" in o for o in ops)
    stays = "stays in 16-bit on tensor cores" if on_gpu(r) else f"stays in {src}"
    advice = upcast_advice([u.get("inside") for u in ups], r) or (
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


# ---- mask rebuilt, safe softmax -------------------------------------------------------------


def mask_rebuilt(r: dict[str, Any]) -> Out:
    if not r.get("mask_rebuilt"):
        return []
    taken = [b for b in r.get("mask_builds") or [] if b.get("taken_by") and b.get("mask")]
    if taken:
        return _mask_build_insights(r, taken)
    ops = list(r.get("mask_ops") or [])
    ks = [
        k
        for k in compute_kernels(r)
        if k.get("launched_by") in ops
        or "triu_tril" in k["name"]
        or (r.get("device_kind") == "cpu" and k["name"] in ops)
    ]
    us = sum(k["duration_us"] for k in ks)
    ev: dict[str, Any] = {"mask_ops": ops, "num_mask_kernels": len(ks), "mask_us": r1(us)}
    case = r.get("case") or {}
    # the case's own mask where it has one (a band: tril and triu); a case of no mask ("none") whose code still
    # ran a tril built the causal mask a tril builds
    named = case.get("mask")
    mask = named if named and named != "none" else None
    what = f"the {mask} mask" if mask and not mask.startswith("causal") else "the causal mask"
    msg = f"{what} is rebuilt on every call by {', '.join(ops)} ({len(ks)} kernel(s)"
    if on_gpu(r):
        ev["mask_share_pct"] = share_pct(us, r)
        msg += f", {_share_text(ev['mask_us'], ev['mask_share_pct'])}"
    msg += ")"
    # A document without the build's context (older, or a CPU trace): the advice goes by the case's mask and
    # the backend, never by what the call may have been passed.
    math = r.get("sdpa_backend") == "math"
    sq, sk = case.get("seq_q"), case.get("seq_kv") or case.get("seq_q")
    if mask == "causal_lower_right" and sq and sk and sq != sk:
        advice = _mask_advice(
            r,
            {"mask": mask, "backend": r.get("sdpa_backend"), "dims": [sq, sk], "built_inside": None},
        )
    elif mask not in (None, "causal", "causal@top_left"):
        advice = (
            f"the {mask} mask is built as a full tensor on every call: build it once and reuse it, or use a kernel "
            "that takes the mask's own form (see dense_mask)"
        )
    elif math:
        advice = (
            f"SDPA's math backend masks with a full tensor, built on every call; a fused backend ({fused_names(r)}) "
            "masks inside the kernel"
        )
    else:
        advice = (
            f"pass is_causal=True to a fused SDPA backend ({fused_names(r)}), which masks inside the kernel; "
            "or build the mask once outside the call and reuse it"
        )
    ev["inside_sdpa"] = math
    return [
        Insight(
            id="mask_rebuilt",
            variant=r["variant"],
            severity="info",
            message=msg,
            advice=advice,
            evidence=ev,
            kernels=tuple(k["name"] for k in ks),
            ops=tuple(ops),
        )
    ]


def _mask_build_insights(r: dict[str, Any], builds: list[dict[str, Any]]) -> list[Insight]:
    """One insight per kind of build the trace shows (a model repeats it per layer), told from its context:
    who built the mask, inside or before which call, what that call was passed, which backend ran."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for b in builds:
        key = (b["mask"], b["built_inside"], b["taken_by"], b.get("backend"), b.get("is_causal"), tuple(b["dims"]))
        groups.setdefault(key, []).append(b)
    out = []
    for (mask, inside, taker, backend, is_causal, dims), bs in groups.items():
        b = bs[0]
        ops = list(dict.fromkeys([*b["built_by"], *b.get("converted_by", [])]))
        ev: dict[str, Any] = {
            "mask": mask,
            "dims": list(dims),
            "diagonal": b["diagonal"],
            "built_inside": inside,
            "taken_by": taker,
            "linked_by": b.get("linked_by"),
            "backend": backend,
            "is_causal_passed": is_causal,
            "mask_ops": ops,
            "num_builds": len(bs),
        }
        size = "×".join(str(d) for d in dims)
        per = "" if len(bs) == 1 else f" ({len(bs)} calls)"
        build = " + ".join(
            f"{o}(diagonal={b['diagonal']})" if o.endswith(("tril", "triu")) else o for o in b["built_by"]
        )
        conv = f", then {', '.join(b['converted_by'])} makes it additive" if b.get("converted_by") else ""
        on = f" for the {BACKEND_NAMES.get(backend, backend)} backend" if backend else ""
        if inside is not None:
            msg = f"the {mask} mask ({size}) is built inside {inside} on every call{per}: {build}{conv}{on}"
        else:
            msg = (
                f"a {mask} mask ({size}) is materialised on every call{per}: {build} before {taker}, which takes it "
                f"as attn_mask (linked by {b.get('linked_by')}){conv}{on}"
            )
        kernels: tuple[str, ...] = ()
        if all(x.get("num_kernels") is not None for x in bs):
            us = sum(x["kernel_us"] for x in bs)
            ev.update(num_mask_kernels=sum(x["num_kernels"] for x in bs), mask_us=r1(us))
            ev["mask_share_pct"] = share_pct(us, r)
            msg += f" ({ev['num_mask_kernels']} kernel(s), {_share_text(ev['mask_us'], ev['mask_share_pct'])})"
            kernels = tuple(dict.fromkeys(k for x in bs for k in x.get("kernels") or []))
        out.append(
            Insight(
                id="mask_rebuilt",
                variant=r["variant"],
                severity="info",
                message=msg,
                advice=_mask_advice(r, ev),
                evidence=ev,
                kernels=kernels,
                ops=tuple(ops),
            )
        )
    return out


def _mask_advice(r: dict[str, Any], ev: dict[str, Any]) -> str:
    """What fits the build's context: never a flag the call already passes."""
    mask, dims = ev["mask"], ev["dims"]
    backend = BACKEND_NAMES.get(ev["backend"], ev["backend"]) if ev["backend"] else "chosen"
    if ev["built_inside"] is not None:
        if ev.get("is_causal_passed"):
            return (
                f"is_causal=True is already passed; the {backend} backend expands it into a full mask on every call, "
                f"while a fused backend ({fused_names(r)}) masks inside the kernel"
            )
        return (
            f"the mask is built inside {ev['built_inside']}; a fused backend ({fused_names(r)}) masks inside the kernel"
        )
    if mask == "causal_lower_right":
        sq, sk = dims[-2], dims[-1]
        if ev["backend"] in ("flash", "efficient"):  # it took the mask in the kernel: the build is not its fallback
            text = (
                f"SDPA ran {backend}, which applies the lower-right mask inside the kernel: this dense build is not "
                "torch's causal_lower_right fallback, the calling code made it; drop it and pass the CausalBias"
            )
        else:
            ran = f" (here SDPA ran {backend})" if ev["backend"] else ""  # no backend recorded: no SDPA to name
            text = (
                "a lower-right causal mask built densely is what torch.nn.attention.bias.causal_lower_right falls back "
                f"to when neither flash nor efficient can take the call{ran}; flash (is_causal=True at "
                "its own op) and efficient (custom_mask_type 2) apply the lower-right mask inside the kernel, with "
                "nothing to build"
            )
        if sq == 1:
            text += (
                f"; and here the mask hides nothing (one query, lower-right: it sees all {sk} keys): pass no mask "
                "(attn_mask=None, is_causal=False)"
            )
        return text
    # a top-left (or square) causal mask passed as a tensor, without is_causal
    return (
        f"pass is_causal=True instead of the dense mask: SDPA's is_causal is this top-left mask, and a fused backend "
        f"({fused_names(r)}) applies it inside the kernel with nothing to build"
    )


def safe_softmax_kernels(r: dict[str, Any]) -> list[dict[str, Any]]:
    """The guard passes after the softmax: isneginf, all, where (the math backend's _safe_softmax)."""
    ks = compute_kernels(r)

    def tag(k: dict[str, Any]) -> str:
        return f"{k['name']} {k.get('launched_by') or ''}"

    start = next((i for i, k in enumerate(ks) if "isneginf" in tag(k)), None)
    if start is None:
        return []
    out = []
    for k in ks[start:]:
        if k["category"] in MATRIX or k["category"] == "copy":
            break
        if any(op in tag(k) for op in SAFE_SOFTMAX_OPS):
            out.append(k)
    return out


def safe_softmax(r: dict[str, Any]) -> Out:
    ks = safe_softmax_kernels(r)
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


# ---- memory --------------------------------------------------------------------------------


def score_matrix(r: dict[str, Any]) -> Out:
    case, peak = r.get("case"), r.get("peak_memory_bytes")
    if not case:
        why = "; ".join(f"{k}: {v}" for k, v in (r.get("case_unknown") or {}).items())
        return NotChecked("score_matrix", f"needs the case shape (B, H, S, D): {why or 'not known for this result'}")
    if peak is None:
        return NotChecked("score_matrix", "peak memory was not measured for this result")
    elem = DTYPE_BYTES[case["dtype"]]
    sq, sk = case["seq_q"], case.get("seq_kv") or case["seq_q"]
    score = case["batch"] * case["heads"] * sq * sk * elem
    minimum = case["batch"] * case["heads"] * sq * case["head_dim"] * elem
    # Premise: the scores are written out: matrix work outside one fused attention kernel (a fused
    # kernel, or compiled flex's generated code with no aten matmul, never writes them).  When
    # Sk ≤ D one score matrix is no larger than the output, so the peak alone cannot tell: the
    # peak beyond the output must hold a whole score matrix.
    if not materialises_scores(r) or peak - minimum < score:
        return []
    kv = 2 * case["batch"] * (case.get("kv_heads") or case["heads"]) * sk * case["head_dim"] * elem
    if score < kv:  # decode and other short query blocks: one score matrix is smaller than K and V, its ratios
        return []  # say nothing about what limits memory
    ev = {
        "peak_memory_bytes": peak,
        "peak_mib": r1(peak / MIB),
        "score_matrix_bytes": score,
        "score_mib": r1(score / MIB),
        "peak_over_score": r1(peak / score),
        "minimum_bytes": minimum,
        "minimum_mib": r1(minimum / MIB),
        "peak_over_minimum": round(peak / minimum),
        "formula": "score = B·H·Sq·Sk·bytes(dtype); minimum (the output) = B·H·Sq·D·bytes(dtype)",
    }
    msg = (
        f"the S×S score matrix is materialised: peak extra memory {ev['peak_mib']:.1f} MiB = "
        f"{ev['peak_over_score']:.1f}× one {case['dtype']} score matrix ({ev['score_mib']:.1f} MiB, grows with S²) "
        f"against the O(S·D) minimum of {ev['minimum_mib']:.1f} MiB ({ev['peak_over_minimum']}×)"
    )
    return [
        Insight(
            id="score_matrix",
            variant=r["variant"],
            severity="warning",
            message=msg,
            advice=f"a fused backend ({fused_names(r)}, or compiled flex) keeps the scores on chip: "
            "its peak memory stays O(S·D), so long sequences fit",
            evidence=ev,
        )
    ]


# ---- shared with the other rule modules ------------------------------------------------


def main_kernel(r: dict[str, Any]) -> dict[str, Any] | None:
    ks = compute_kernels(r)
    return max(ks, key=lambda k: k["duration_us"]) if ks else None
