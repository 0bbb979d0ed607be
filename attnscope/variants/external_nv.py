"""FlashInfer (single prefill, single decode) and the cuDNN frontend's SDPA graph, used when installed.

Same contract as ``external.py``: import error or the library's own check → a skipped row; the mask
in the library's native form.  FlashInfer compiles each kernel configuration on first use (JIT,
seconds to minutes): that first call happens in prepare, outside every timing, and is reported as
compile time.
"""

from __future__ import annotations

import time
from typing import Any

from attnscope.core.types import Case
from attnscope.variants.base import Inputs, Prepared, Unsupported
from attnscope.variants.external import cuda_16bit, external, lib, trial

FLASHINFER_REQ = "flashinfer-python (with apache-tvm-ffi; JIT-compiles its kernels with nvcc)"


def _fi_mask(case: Case, decode: bool) -> tuple[dict[str, Any], str]:
    """FlashInfer's causal / window_left / custom mask keywords for the case, and how in words.
    Its causal mask puts the queries at the end of the keys (an append to a KV cache): lower-right."""
    m = case.mask_spec
    lower_right = case.seq_q == case.num_seq_kv or m.align == "lower_right"
    if m.kind == "none" or (decode and m.kind == "causal" and lower_right):
        return {}, "no mask (the query sees the whole cache)" if decode and m.kind != "none" else "no mask"
    if m.kind == "sliding" and lower_right:
        w = (m.window or 1) - 1  # window_left is inclusive: w + 1 keys, the query's own included
        return ({"window_left": w} if decode else {"causal": True, "window_left": w}), f"window_left={w}"
    if decode:
        raise Unsupported(f"single_decode_with_kv_cache takes a window or nothing, not {m.canonical}")
    if m.kind == "causal" and lower_right:
        return {"causal": True}, "causal=True (queries at the end of the keys)"
    return {"custom_mask": None}, f"custom_mask (bit-packed once, outside the call) for {m.canonical}"


def _fi_check(case: Case, decode: bool) -> str | None:
    if getattr(case, "mode", "fwd") != "fwd":
        return "FlashInfer's single_* functions are forward only"
    if case.batch != 1:
        return (
            "FlashInfer's single_prefill/single_decode take one request (batch 1); batches need its paged-KV wrappers"
        )
    if decode and case.seq_q != 1:
        return f"single_decode_with_kv_cache is for one query token, the case has seq_q={case.seq_q}"
    if case.alibi and case.mask_spec.kind not in ("causal", "sliding"):
        return "FlashInfer's ALIBI position encoding assumes a causal order of the keys"
    try:
        _fi_mask(case, decode)
    except Unsupported as e:
        return str(e)
    return cuda_16bit(case, "FlashInfer")


def _fi_prepare(case: Case, x: Inputs, decode: bool) -> Prepared:
    fi = lib("flashinfer")
    kw, how = _fi_mask(case, decode)
    kw.update(kv_layout="HND", sm_scale=x.scale)  # k[0], v[0] are (H_kv, S, D): HND, no copy
    if case.softcap is not None:
        kw["logits_soft_cap"] = case.softcap
    if case.alibi:
        kw["pos_encoding_mode"] = "ALIBI"
    k, v = x.k[0], x.v[0]
    if decode:
        q = x.q[0, :, 0].contiguous()  # (H, D)

        def call() -> Any:
            return fi.single_decode_with_kv_cache(q, k, v, **kw).view(1, case.heads, 1, -1)

    else:
        q = x.q[0].transpose(0, 1).contiguous()  # queries are always NHD: (S, H, D), copied once here
        if "custom_mask" in kw:
            from attnscope.variants.mask_mods import dense_keep

            del kw["custom_mask"]
            keep = dense_keep(case, x.q.device)
            kw["packed_custom_mask"] = fi.packbits(keep.contiguous().view(-1), bitorder="little")

        def call() -> Any:
            return fi.single_prefill_with_kv_cache(q, k, v, **kw).transpose(0, 1).unsqueeze(0)

    t0 = time.perf_counter()
    trial(call, "flashinfer")
    import torch

    torch.cuda.synchronize()
    notes = [f"mask passed as {how}", "first call (JIT build or cache load) kept out of the timings"]
    if decode:
        notes.append("decode may split the KV across blocks and merge them in a second kernel: one attention step")
    return Prepared(fn=call, compile_time_s=time.perf_counter() - t0, notes=notes, extra={"mask_form": how})


FLASHINFER_PREFILL = external(
    "flashinfer_prefill",
    "flashinfer",
    FLASHINFER_REQ,
    "FlashInfer single_prefill_with_kv_cache",
    lambda c: _fi_check(c, decode=False),
    lambda c, x: _fi_prepare(c, x, decode=False),
)
FLASHINFER_DECODE = external(
    "flashinfer_decode",
    "flashinfer",
    FLASHINFER_REQ,
    "FlashInfer single_decode_with_kv_cache (one query token against the KV cache)",
    lambda c: _fi_check(c, decode=True),
    lambda c, x: _fi_prepare(c, x, decode=True),
)


# --------------------------------------------------------------------------------------------- cuDNN frontend


def _cudnn_mask(case: Case) -> tuple[dict[str, Any], str]:
    m = case.mask_spec
    lower_right = case.seq_q == case.num_seq_kv or m.align == "lower_right"
    if m.kind == "none":
        return {}, "no mask"
    if m.kind == "causal":
        if case.causal:
            return {"use_causal_mask": True}, "use_causal_mask=True"
        return {"use_causal_mask_bottom_right": True}, "use_causal_mask_bottom_right=True"
    if m.kind == "sliding" and lower_right:
        # A band: bottom-right diagonal, no key to its right, W keys up to and including the diagonal.
        # The keyword spelling differs between frontend releases: _cudnn_sdpa tries each (BAND_SPELLINGS).
        return {"band": m.window}, f"a bottom-right diagonal band of {m.window} keys (sliding:{m.window})"
    if m.kind == "padding":
        return {"use_padding_mask": True}, "use_padding_mask=True with seq_len_q / seq_len_kv"
    return {"bias": None}, f"a dense additive bias tensor (-inf where masked) for {m.canonical}"


def _cudnn_check(case: Case) -> str | None:
    if getattr(case, "mode", "fwd") != "fwd":
        return "the cuDNN frontend graph is wired here for the forward only"
    if case.softcap is not None:
        return "cuDNN frontend soft-capping needs a score_mod callback graph: not wired here"
    if case.alibi and not case.causal:
        return "cuDNN's ALiBi mask (use_alibi_mask) is defined with a top-left causal mask only"
    return cuda_16bit(case, "the cuDNN frontend")


def _cudnn_graph(case: Case, x: Inputs, cudnn: Any) -> tuple[Any, dict[Any, Any], Any, str]:
    import torch

    io = cudnn.data_type.HALF if case.dtype == "fp16" else cudnn.data_type.BFLOAT16
    g = cudnn.pygraph(
        io_data_type=io, intermediate_data_type=cudnn.data_type.FLOAT, compute_data_type=cudnn.data_type.FLOAT
    )
    q, k, v = (g.tensor_like(t) for t in (x.q, x.k, x.v))
    kw, how = _cudnn_mask(case)
    pack: dict[Any, Any] = {q: x.q, k: x.k, v: x.v}
    if "bias" in kw:
        from attnscope.variants.mask_mods import dense_bias

        bias_t = dense_bias(case, x.q.device, x.q.dtype).contiguous()
        kw["bias"] = g.tensor_like(bias_t)
        pack[kw["bias"]] = bias_t
    if kw.get("use_padding_mask"):
        sq = torch.full((case.batch, 1, 1, 1), case.seq_q, dtype=torch.int32, device=x.q.device)
        sk = torch.tensor(case.mask_spec.lengths, dtype=torch.int32, device=x.q.device).view(-1, 1, 1, 1)
        kw["seq_len_q"], kw["seq_len_kv"] = g.tensor_like(sq), g.tensor_like(sk)
        pack.update({kw["seq_len_q"]: sq, kw["seq_len_kv"]: sk})
    if case.alibi:
        kw["use_alibi_mask"] = True
    o, spelled = _cudnn_sdpa(g, cudnn, q, k, v, x.scale, kw)
    if spelled:
        how = f"{how}: {spelled}"
    out = torch.empty_like(x.q)
    o.set_output(True).set_dim(list(out.shape)).set_stride(list(out.stride()))
    pack[o] = out
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    g.check_support()
    g.build_plans()
    return g, pack, out, how


# How each frontend release spells a bottom-right band of W keys (read from the packages: 1.32's pybind takes
# diagonal_band_left_bound/right_bound, its docstrings say left_bound/right_bound, older ones sliding_window).
BAND_SPELLINGS: tuple[tuple[str, ...], ...] = (
    ("diagonal_alignment", "diagonal_band_left_bound", "diagonal_band_right_bound"),
    ("diagonal_alignment", "left_bound", "right_bound"),
    ("use_causal_mask_bottom_right", "sliding_window_length"),
    ("use_causal_mask_bottom_right", "sliding_window"),
)


def _band_kwargs(cudnn: Any, spelling: tuple[str, ...], w: int) -> dict[str, Any]:
    if spelling[0] == "diagonal_alignment":
        return {spelling[0]: cudnn.diagonal_alignment.BOTTOM_RIGHT, spelling[1]: w, spelling[2]: 0}
    return {spelling[0]: True, spelling[1]: w}


def _cudnn_sdpa(g: Any, cudnn: Any, q: Any, k: Any, v: Any, scale: float, kw: dict[str, Any]) -> tuple[Any, str]:
    """g.sdpa with the first keyword spelling this frontend accepts (a TypeError is pybind's 'incompatible
    function arguments', raised before the graph changes); returns the output and the spelling used."""
    w = kw.pop("band", None)
    masks: list[dict[str, Any]] = [{}]
    if w is not None:
        usable = [sp for sp in BAND_SPELLINGS if sp[0] != "diagonal_alignment" or hasattr(cudnn, sp[0])]
        masks = [_band_kwargs(cudnn, sp, w) for sp in usable]
    last: TypeError | None = None
    for extra in masks:
        for stats in ({"generate_stats": False}, {"is_inference": True}):  # is_inference: before generate_stats
            try:
                o, _ = g.sdpa(name="sdpa", q=q, k=k, v=v, attn_scale=scale, **stats, **kw, **extra)
            except TypeError as e:
                last = e
                continue
            spelled = ", ".join(f"{n}={getattr(val, 'name', val)}" for n, val in extra.items())
            return o, spelled
    assert last is not None
    raise last


def _cudnn_prepare(case: Case, x: Inputs) -> Prepared:
    import torch

    cudnn = lib("cudnn")
    t0 = time.perf_counter()
    try:
        g, pack, out, how = _cudnn_graph(case, x, cudnn)
    except Exception as e:
        raise Unsupported(f"cuDNN frontend refused: {type(e).__name__}: {' '.join(str(e).split())[:400]}") from e
    handle = cudnn.create_handle()
    workspace = torch.empty(g.get_workspace_size(), device=x.q.device, dtype=torch.uint8)

    def call() -> Any:
        g.execute(pack, workspace, handle=handle)
        return out

    trial(call, "cuDNN frontend")
    notes = [f"mask passed as {how}", "graph built and its plan chosen in prepare (kept out of the timings)"]
    return Prepared(fn=call, compile_time_s=time.perf_counter() - t0, notes=notes, extra={"mask_form": how})


CUDNN_FRONTEND = external(
    "cudnn_frontend",
    "cudnn",
    "nvidia-cudnn-frontend (the cuDNN Python graph API)",
    "the cuDNN frontend's SDPA graph (cudnn.pygraph().sdpa)",
    _cudnn_check,
    _cudnn_prepare,
)
