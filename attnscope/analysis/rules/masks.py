"""Insights about the mask's cost and decode's kernels.  Pure: reads the JSON-shaped result dict.

- ``dense_mask``: the mask reached SDPA as a dense ``attn_mask``: flash cannot take it, and whichever
  backend runs computes every score and reads the mask, though the mask keeps only part of them.
- ``block_sparsity``: flex's BlockMask skips a share of the tiles (compiled), or eager flex does not.

Both read the case (:class:`~attnscope.analysis.rules.peers.Peers`): where it measured compiled flex slower, beyond
the noise, than the variant the one recommendation names best, their advice names that variant and the figures
instead of pointing to flex.
- ``split_kv``: a split-KV kernel and its combine kernel: one attention step in two kernels.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from attnscope.analysis.fingerprint.kernels import attention_family, lowered, search_ignoring_case
from attnscope.analysis.rules.insights import Out, r1, short
from attnscope.analysis.rules.peers import ALONE, Peers
from attnscope.analysis.rules.row_kernels import compute_kernels, names, read_once
from attnscope.analysis.rules.ties import Row, tied
from attnscope.core.types import DTYPE_BYTES, Insight, NotChecked
from attnscope.core.units import fmt_mib

MIB = 1024 * 1024
# A combine/merge kernel finishes what a split-KV attention kernel started, each pair seen on the H200 at decode:
# pytorch_flash::flash_fwd_splitkv_kernel + flash_fwd_splitkv_combine_kernel; FlashInfer's
# SingleDecodeWithKVCacheKernel + MergeStates*; cuDNN's generated fprop kernel + cudnn::fusion::lean_reduction_kernel;
# compiled flex's decoding template (triton_tem_fused_flex_attention, one program per KV split) + the generated
# reductions that merge the splits (triton_per_fused_*flex_attention*).  Paired within one attention family.
COMBINE = re.compile(
    r"splitkv_combine|combine_kernel|MergeStates|merge_state|flash_fwd_combine|lean_reduction|"
    r"triton_(?:per|red)_fused_\w*flex_attention(?!\w*backward)",
    re.IGNORECASE,
)
SPLIT = re.compile(
    r"splitkv|split_kv|SplitKV|Decode|cudnn_generated_fort_native_sdpa\w*fprop|"
    r"triton_tem_fused_flex_attention(?!\w*backward)",
    re.IGNORECASE,
)
_COMBINE_LOW, _SPLIT_LOW = lowered(COMBINE), lowered(SPLIT)  # hundreds-character names: no per-character folding
NUMBER_WORDS = {2: "two", 3: "three", 4: "four"}


def _x(r: dict[str, Any], key: str) -> Any:
    """A value a variant recorded (mask_form, dense_mask, block_sparsity_pct, ...): on the row, or nested in its
    ``extra`` where the document keeps variant data apart."""
    if key in r:
        return r[key]
    return (r.get("extra") or {}).get(key)


def _kept_pct(case: dict[str, Any]) -> float | None:
    """Share of the score entries the case's mask keeps, in % (attnscope.core.flops' exact count)."""
    from attnscope.core.flops import kept_fraction
    from attnscope.core.types import Case

    try:
        return 100.0 * kept_fraction(Case.from_dict(case))
    except (TypeError, ValueError, KeyError):
        return None


def _compiled_flex(peers: Peers) -> Row | None:
    """The case's ranked built-in compiled flex row (a user's mask_mod row is not the built-in)."""
    for row in peers.rows:
        r = row[0]
        if (
            r.get("family") == "flex"
            and r.get("compile_time_s") is not None
            and not (r.get("extra") or {}).get("user_mods")
        ):
            return row
    return None


def flex_behind_best(peers: Peers) -> dict[str, Any] | None:
    """Evidence that the case measured compiled flex slower, beyond the noise, than the variant the recommendation
    names best; None otherwise (no compiled flex ranked, no single best, flex is the best, or inside the noise)."""
    flex, best = _compiled_flex(peers), peers.best
    if flex is None or best is None or flex[0] is best[0] or flex[1] <= best[1] or tied(flex, best):
        return None
    return {
        "recommended": best[0]["variant"],
        "recommended_us": r1(best[1]),
        "flex_variant": flex[0]["variant"],
        "flex_us": r1(flex[1]),
        "flex_ratio": round(flex[1] / best[1], 2),
        "basis": best[3],
    }


def _behind_text(b: dict[str, Any]) -> str:
    return (
        f"{b['flex_variant']} measured {b['flex_us']:,.1f} µs here, {b['flex_ratio']:.2f}× slower than "
        f"{b['recommended']} ({b['recommended_us']:,.1f} µs, {b['basis']}), the recommendation"
    )


def native_form(case: dict[str, Any]) -> str | None:
    """The libraries' own forms of the case's mask that skip what it hides (docs/mask_reference.md's table), or
    None where none exists (a prefix-LM mask: flex's BlockMask is the form that skips)."""
    mask = str(case.get("mask") or ("causal" if case.get("causal") else "none"))
    kind = mask.split("@")[0].split(":")[0]
    alibi = bool(case.get("alibi"))
    if kind == "sliding":
        return "FlashAttention window_size, FlashInfer window_left"
    if kind in ("document", "padding"):
        return "FlashAttention's varlen call, flash_attn_varlen_func"
    if kind.startswith("causal"):
        return (
            "FlashAttention causal" + (" with FlashAttention 2's alibi_slopes" if alibi else "") + ", FlashInfer causal"
        )
    if kind == "none" and alibi:
        return "FlashAttention 2's alibi_slopes, FlashInfer's ALiBi position encoding"
    return None


def dense_mask(r: dict[str, Any], peers: Peers = ALONE) -> Out:
    """A mask passed to SDPA as a dense attn_mask; the advice reads the case's recommendation."""
    case = r.get("case")
    if not _x(r, "dense_mask"):  # only SDPA runs record how the mask was passed
        return []
    if not case:
        return NotChecked("dense_mask", "needs the case (its mask and shapes)")
    kept = _kept_pct(case)
    sq, sk = case["seq_q"], case.get("seq_kv") or case["seq_q"]
    mask_elems = case["batch"] * sq * sk if (case.get("mask") or "").startswith("padding") else sq * sk
    mask_bytes = mask_elems * (1 if not case.get("alibi") else DTYPE_BYTES[case["dtype"]])
    ev = {
        "mask_form": _x(r, "mask_form"),
        "mask": case.get("mask"),
        "kept_pct": r1(kept) if kept is not None else None,
        "scores_computed": case["batch"] * case["heads"] * sq * sk,
        "mask_mib": r1(mask_bytes / MIB),
        "backend": r.get("sdpa_backend"),
    }
    gpu = r.get("device_kind") == "gpu"
    cc, name = r.get("compute_capability"), str(r.get("device_name") or "")
    # torch's order is the H100's and H200's (sm90) fact: said only of a row that ran on one
    hopper = list(cc)[:1] == [9] if isinstance(cc, list | tuple) and cc else ("H100" in name or "H200" in name)
    ran = f"torch ran {ev['backend']}" if ev["backend"] else "the chosen backend"
    msg = (
        f"the {case.get('mask')} mask reaches SDPA as a dense attn_mask ({fmt_mib(mask_bytes)})"
        + (
            f": FlashAttention takes no arbitrary mask, so {ran}, which"
            # PyTorch's own choice; a forced backend was the user's pick.  cuDNN comes first in torch's order on
            # sm90 anyway, so flash's refusal is not why it ran.
            if gpu and not r.get("backend") and ev["backend"] not in ("cudnn", "flash")
            else f"; {ran}"
            + (" (first in torch's SDPA order on Hopper, mask or not)" if ev["backend"] == "cudnn" and hopper else "")
            + ", which"
        )
        + f" computes all {ev['scores_computed']:,} scores and reads the mask"
        + (f", though the mask keeps only {ev['kept_pct']:.1f}% of them" if kept is not None else "")
    )
    behind = flex_behind_best(peers)
    native = native_form(case)  # the form of this mask, not every mask's: a prefix has no window or varlen
    if behind is None:
        advice = (
            "a kernel that knows the mask's shape skips what it hides: torch.compile(flex_attention) with a "
            "BlockMask (flex_compiled)" + (f", or a library's native form ({native})" if native else "")
        )
    else:
        ev["flex_behind_best"] = behind
        advice = f"keep {behind['recommended']} at this case: {_behind_text(behind)}" + (
            f"; a library's native form of the mask ({native}) may still skip what it hides" if native else ""
        )
    return [
        Insight(
            id="dense_mask",
            variant=r["variant"],
            severity="warning" if kept is not None and kept < 60 else "info",
            message=msg,
            advice=advice,
            evidence=ev,
        )
    ]


def block_sparsity(r: dict[str, Any], peers: Peers = ALONE) -> Out:
    """The share of tiles flex's BlockMask skips; on the compiled flex row the advice reads the case's
    recommendation."""
    pct, case = _x(r, "block_sparsity_pct"), r.get("case")
    if pct is None or not case:  # only flex runs record their BlockMask
        return []
    kept = _kept_pct(case)
    ev = {"block_sparsity_pct": r1(pct), "block_size": _x(r, "block_size"), "kept_pct": r1(kept) if kept else None}
    if not r.get("compile_time_s"):  # eager flex: the BlockMask is honoured by masking, not by skipping
        if pct <= 0:
            return []
        msg = (
            f"eager flex computes every score: its BlockMask would skip {ev['block_sparsity_pct']:.1f}% of the tiles "
            "only inside the compiled kernel"
        )
        return [Insight("block_sparsity", r["variant"], "info", msg, "compile it: torch.compile(flex_attention)", ev)]
    size = "×".join(str(b) for b in _x(r, "block_size") or []) or "?"
    kept_txt = f" (the mask keeps {ev['kept_pct']:.1f}% of the scores)" if kept is not None else ""
    msg = f"flex skips {ev['block_sparsity_pct']:.1f}% of the {size} tiles of the score matrix{kept_txt}"
    flex = _compiled_flex(peers)
    behind = flex_behind_best(peers) if pct > 0 and flex is not None and flex[0] is r else None
    if behind is not None:
        ev["flex_behind_best"] = behind
        advice = f"the skipped tiles do not make flex the fastest here: {_behind_text(behind)}"
    elif pct > 0:
        advice = "nothing to fix: the empty tiles cost nothing; partly masked tiles still compute all their scores"
    else:
        advice = "the mask leaves no tile empty at this block size: all of them are computed"
    return [Insight("block_sparsity", r["variant"], "info", msg, advice, ev)]


@functools.cache
def _kv_role(name: str) -> tuple[str | None, str | None]:
    """('combine' | 'split' | None, attention family) by name (cached: a training step repeats 10^4 names)."""
    if search_ignoring_case(COMBINE, _COMBINE_LOW, name):
        role: str | None = "combine"
    else:
        role = "split" if search_ignoring_case(SPLIT, _SPLIT_LOW, name) else None
    return role, attention_family(name) if role else None


def split_kv(r: dict[str, Any]) -> Out:
    """Per attention family, split-KV kernels and the kernels that combine their partial results."""
    roles: dict[str, tuple[str, str | None]] = {}  # by distinct name: a training step repeats 10^4 names
    for n in read_once(r, names):
        role, fam = _kv_role(n)
        if role is not None:
            roles[n] = role, fam
    if not roles:
        return []
    by_family: dict[str | None, dict[str, list[dict[str, Any]]]] = {}
    for k in compute_kernels(r):
        if k["name"] in roles:
            role, fam = roles[k["name"]]
            by_family.setdefault(fam, {"split": [], "combine": []})[role].append(k)
    out = []
    for parts in by_family.values():
        split, combine = parts["split"], parts["combine"]
        if split and combine:
            out.append(_split_kv_insight(r, split, combine))
    return out


def _split_kv_insight(r: dict[str, Any], split: list[dict[str, Any]], combine: list[dict[str, Any]]) -> Insight:
    s, c = max(split, key=lambda k: k["duration_us"]), max(combine, key=lambda k: k["duration_us"])
    s_us, c_us = sum(k["duration_us"] for k in split), sum(k["duration_us"] for k in combine)
    total = s_us + c_us
    names = list(dict.fromkeys(k["name"] for k in split + combine))  # distinct kernels of one step
    ev = {
        "split_kernel": s["name"],
        "split_us": r1(s_us),
        "combine_kernel": c["name"],
        "combine_kernels": [n for n in names if _kv_role(n)[0] == "combine"],
        "combine_us": r1(c_us),
        "combine_pct": r1(100.0 * c_us / total) if total else None,
        "num_split_kernels": len(split),
        "num_combine_kernels": len(combine),
    }
    n = len(names)
    steps = "" if len(split) == 1 else f" (×{len(split)} calls)"
    others = ", ".join(short(x, 50) for x in ev["combine_kernels"])
    msg = (
        f"one attention step in {NUMBER_WORDS.get(n, str(n))} kernels{steps}: {short(s['name'], 50)} computes partial "
        f"results over chunks of the keys ({ev['split_us']:.1f} µs), {others} combine"
        + ("s" if len(ev["combine_kernels"]) == 1 else "")
        + f" them ({ev['combine_us']:.1f} µs"
        + (f", {ev['combine_pct']:.1f}% of the step)" if ev["combine_pct"] is not None else ")")
    )
    advice = "nothing to fix: splitting the keys keeps every SM busy when there are too few queries to share out"
    return Insight("split_kv", r["variant"], "info", msg, advice, ev, kernels=tuple(names))


def compiled_fallback(r: dict[str, Any]) -> Out:
    from attnscope.analysis.fingerprint.compiled import fell_back_to_eager

    why = fell_back_to_eager(r)
    if why is None:
        return []
    ev = {"num_kernels": len(compute_kernels(r)), "compile_time_s": r.get("compile_time_s")}
    advice = (
        "not a flex_compiled measurement: measure it again (attnscope compiles each shape afresh when dynamo's "
        "limit is reached); the recommendation leaves this row out"
    )
    return [Insight("compiled_fallback", r["variant"], "warning", why, advice, ev)]
