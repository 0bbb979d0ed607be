"""Whether occupancy is the question for a kernel, from the roofline.  Pure.

A low occupancy is judged (``low_occupancy``) only for a compute-bound kernel.  Otherwise the kernel's
own limit is said instead:

- ``shape_cannot_fill_gpu``: the grid has fewer blocks than the GPU has SMs; no tiling fixes that.
- ``latency_bound``: the call is under :data:`attnscope.analysis.roofline.LATENCY_US`.
- ``memory_bound``: intensity below the ridge; near the bandwidth ceiling there is nothing to gain from
  more resident warps.  Below it the advice names a backend to compare that fits the row: cuDNN where the row is
  not cuDNN already, FlashInfer only where it is known to import where the row ran
  (:func:`attnscope.analysis.rules.libraries.importable`); elsewhere what to install.
- ``masked_scores``: under a dense mask the kernel computes every score while the FLOP count keeps only
  the mask's share, so a low rate is the mask's waste, not the kernel's.
"""

from __future__ import annotations

from typing import Any

from attnscope.analysis.roofline import grid_blocks, row_roofline
from attnscope.analysis.rules.insights import r1, short
from attnscope.analysis.rules.libraries import importable
from attnscope.core.gpus import lookup
from attnscope.core.libraries import FLASHINFER
from attnscope.core.types import Insight

# % of the spec bandwidth at or above which a memory-bound kernel is "near the ceiling": the H200's own
# read probe (x.sum() over 4 GiB of bf16) reached ~4.2 of 4.81 TB/s, 87%; 70% leaves room for launch gaps.
NEAR_BANDWIDTH_PCT = 70.0


def _kernel_roofline(r: dict[str, Any], k: dict[str, Any]) -> dict[str, Any] | None:
    rf = r.get("roofline")
    if not isinstance(rf, dict):
        rf = row_roofline(r)
    if rf is None:
        return None
    mine = next((x for x in rf.get("kernels") or [] if x.get("name") == k.get("name")), None)
    return {**(mine or rf), "call_bound": rf.get("bound"), "call_us": r.get("gpu_time_us")}


def _kept_pct(r: dict[str, Any]) -> float | None:
    from attnscope.analysis.rules.masks import _kept_pct as kept

    case = r.get("case")
    return kept(case) if isinstance(case, dict) else None


def _flashinfer_variant(case: Any) -> str | None:
    """The FlashInfer variant that measures ``case``: the paged wrappers on a serving cache, the single-request
    functions at batch 1 (decode for one query); None for a dense batch, which FlashInfer takes only as a paged
    cache."""
    if not isinstance(case, dict):
        return None
    if case.get("page_size") is not None or case.get("kv_lens") is not None:
        return "paged_flashinfer"
    if case.get("batch") == 1:
        return "flashinfer_decode" if case.get("seq_q") == 1 else "flashinfer_prefill"
    return None


def faster_backends(r: dict[str, Any], k: dict[str, Any], peers: list[dict[str, Any]], ev: dict[str, Any]) -> str:
    """What a memory-bound kernel with bandwidth left unused is compared with, fitted to the row: cuDNN unless the
    row is cuDNN (or the run's torch has no cuDNN), FlashInfer where it imports where the row ran, and what to
    install where it does not or the document does not say.  Records what it read in ``ev``."""
    name = str(k.get("name") or "").lower()
    variant = str(r.get("variant") or "")
    is_cudnn = "cudnn" in name or r.get("sdpa_backend") == "cudnn" or variant in ("sdpa_cudnn", "cudnn_frontend")
    is_fi = variant in FLASHINFER.variants or any(s in name for s in ("flashinfer", "batchdecodewith", "batchprefill"))
    raw = r.get("env")
    env: dict[str, Any] = raw if isinstance(raw, dict) else {}
    no_cudnn = "cudnn" in env and env.get("cudnn") is None  # the run's torch said it has no cuDNN
    fi, how = importable(FLASHINFER, r, peers)
    ev["flashinfer_imports"], ev["flashinfer_known_from"] = fi, how
    fv = _flashinfer_variant(r.get("case"))
    run = f", then attnscope run --variants {fv}" if fv else ""
    ran = next(
        (p["variant"] for p in peers if p.get("status") == "ok" and p is not r and p.get("sdpa_backend") == "cudnn"),
        None,
    )
    cudnn = "cuDNN (SDPA's cuDNN backend" + (f"; {ran} ran it on this case)" if ran else ")")
    named = [] if is_cudnn or no_cudnn else [cudnn]
    fi_ran = next(
        (p["variant"] for p in peers if p.get("status") == "ok" and p.get("variant") in FLASHINFER.variants), None
    )
    if fi and not is_fi:
        cite = f"{fi_ran} ran on this case" if fi_ran else f"attnscope run --variants {fv}" if fv else ""
        named.append(f"FlashInfer, which imports where this ran{f' ({cite})' if cite else ''}")
    tail = ""
    if fi is False and not is_fi:
        tail = f"FlashInfer does not import where this ran: pip install {FLASHINFER.install} to compare it{run}"
    elif fi is None and not is_fi:
        tail = (
            f"FlashInfer{' too' if named else ''} where it imports (pip install {FLASHINFER.install}{run}): the "
            f"{'trace' if r.get('source') == 'trace' else 'document'} does not record whether it imports where this ran"
        )
    text = "bandwidth is left unused"
    if named:
        text += ": compare a backend that streams K and V faster, " + " or ".join(named)
    elif not tail:
        text += ": compare another backend on this case"
    return text + (f"; {tail}" if tail else "")


def not_the_question(
    r: dict[str, Any], k: dict[str, Any], head: str, peers: list[dict[str, Any]] | None = None
) -> Insight | None:
    """The insight that replaces a low-occupancy verdict when the roofline says the limit is elsewhere
    (``peers``: the results of the same case, which may say whether a library imports where this ran)."""
    rf = _kernel_roofline(r, k)
    if rf is None:  # no case or time: the grid alone can still say the shape is too small
        spec = lookup(r.get("device_name"))
        rf = {"grid_blocks": grid_blocks(k), "sms": spec.sms if spec else None, "call_bound": None}
    ev: dict[str, Any] = {
        "kernel": k["name"],
        "bound": rf.get("bound"),
        "call_bound": rf.get("call_bound"),
        "grid_blocks": rf.get("grid_blocks"),
        "sms": rf.get("sms"),
        "tbps": r1(rf["tbps"]) if rf.get("tbps") is not None else None,
        "pct_bandwidth_spec": r1(rf["pct_bandwidth_spec"]) if rf.get("pct_bandwidth_spec") is not None else None,
        "intensity": r1(rf["intensity"]) if rf.get("intensity") is not None else None,
        "ridge": r1(rf["ridge"]) if rf.get("ridge") is not None else None,
        "bytes_source": rf.get("bytes_source"),
    }
    name = short(k["name"], 50)
    blocks, sms = rf.get("grid_blocks"), rf.get("sms")
    if blocks is not None and sms is not None and blocks < sms:
        return _out(
            r,
            k,
            "shape_cannot_fill_gpu",
            f"{name}: the shape cannot fill the GPU ({blocks} blocks vs {sms} SMs); occupancy is not the question",
            "a larger batch, more heads, or a split-KV kernel gives more blocks; no tiling of this grid fills the GPU",
            ev,
        )
    if rf.get("call_bound") == "latency":
        return _out(
            r,
            k,
            "latency_bound",
            f"{name}: the call takes {r1(rf['call_us'])} µs, latency-bound (launches and kernel start-up, under "
            "~10 µs); occupancy is not the question",
            "batch more work per call, or capture the calls in a CUDA graph",
            ev,
        )
    kept = _kept_pct(r)
    if (r.get("dense_mask") or (r.get("extra") or {}).get("dense_mask")) and kept is not None and kept < 100:
        ev["kept_pct"] = r1(kept)
        ev["thrown_away_pct"] = r1(100 - kept)
        return _out(
            r,
            k,
            "masked_scores",
            f"{head}: under a dense mask it computes every score and the mask throws away {ev['thrown_away_pct']:.1f}% "
            "of them; the rate counts only the kept scores, so it reads low for the mask, not for the occupancy",
            "a kernel that skips the masked tiles (flex with a BlockMask, a library's native mask) does less work",
            ev,
        )
    if rf.get("bound") == "memory":
        pct = rf.get("pct_bandwidth_spec")
        near = pct is not None and pct >= NEAR_BANDWIDTH_PCT
        where = (
            f"{ev['tbps']:.2f} TB/s, {ev['pct_bandwidth_spec']:.1f}% of the spec bandwidth"
            if pct is not None
            else f"{ev['tbps']:.2f} TB/s"
        )
        return _out(
            r,
            k,
            "memory_bound",
            f"{name}: memory-bound ({ev['intensity']} FLOP/B below the ridge {ev['ridge']}), reading {where}"
            + ("; near the bandwidth ceiling, occupancy is not the question" if near else ""),
            "nothing to fix in occupancy: only fewer bytes help (a smaller KV cache: GQA, fp8)"
            if near
            else faster_backends(r, k, peers or [], ev),
            ev,
        )
    return None


def _out(r: dict[str, Any], k: dict[str, Any], rid: str, msg: str, advice: str, ev: dict[str, Any]) -> Insight:
    ev["theoretical_occupancy_pct"] = k.get("theoretical_occupancy_pct")
    return Insight(
        id=rid, variant=r["variant"], severity="info", message=msg, advice=advice, evidence=ev, kernels=(k["name"],)
    )


def waits_on_device(r: dict[str, Any], ev: dict[str, Any], text: str) -> Insight | None:
    """A call whose host time includes waiting on the device is not CPU-bound: a copy from pageable host
    memory or back to the host inside the call makes the host wait for the stream (eager flex's pageable
    copy, seen with cudaStreamSynchronize in tests/data/h200/flex.json)."""
    sync = [
        k["name"]
        for k in r.get("kernels") or []
        if k.get("category") == "memcpy" and ("Pageable" in k["name"] or "DtoH" in k["name"])
    ]
    if not sync:
        return None
    ev["synchronising_copy"] = sync[0]
    return Insight(
        id="host_waits_on_device",
        variant=r["variant"],
        severity="info",
        message=f"{text}: the call waits on the device ({sync[0]} inside it synchronises the host), so its host "
        "time holds GPU time; not CPU-bound",
        advice="keep that tensor on the device (or build it once outside the call) so the call stops waiting",
        evidence=ev,
        kernels=(sync[0],),
    )
