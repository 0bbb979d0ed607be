"""The roofline of a call and of its kernels: bytes by a stated model, intensity against the ridge,
the bound that applies and its % of peak.  Pure (plain numbers and dicts in, a dict out).

Bytes model (``bytes_source`` says which was used): Q, K and V read once and O written once; for
forward+backward also dO read, dQ, dK, dV written and the LSE (fp32, one per query row per head)
written and read; at decode K and V are the KV cache, read once; a dense mask tensor passed to the
call adds its own bytes.  With Nsight Compute (``run --ncu``), the DRAM bytes its counters read over the call's
kernels replace the model, which is kept beside them (``bytes_model``, ``bytes_measured``, ``bytes_ratio``).

Bound: ``latency`` when the grid has fewer blocks than the GPU has SMs, or the call is under
``LATENCY_US``; otherwise ``compute`` when the intensity (FLOP per byte) reaches the ridge (peak
FLOP/s over peak bytes/s), else ``memory``.  The %peak quoted is the one of the bound that applies:
TFLOP/s against the compute ceiling for ``compute``, TB/s against the bandwidth ceiling otherwise.

A kernel's own roofline (``kernels``) is given where one matrix kernel does the call's work: the call's FLOPs and
bytes on that kernel's time.  Where several share it (a naive call's GEMMs, a forward and a backward kernel) none
is, and ``kernels_why`` says so: no model splits the work among them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from attnscope.analysis.fingerprint.kernels import is_matrix_kernel
from attnscope.core.gpus import GpuSpec, lookup

LATENCY_US = 10.0
DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}
LSE_BYTES = 4


def call_bytes(case: dict[str, Any], mask_bytes: int = 0) -> tuple[int, str]:
    """(bytes, the model in words) for one call of ``case`` (a case dict as documents hold it)."""
    if case.get("page_size") is not None or case.get("kv_lens") is not None:
        return serving_bytes(case, mask_bytes)
    e = DTYPE_BYTES[case.get("dtype") or "bf16"]
    b, h, d = case["batch"], case["heads"], case["head_dim"]
    sq = case["seq_q"]
    sk = case.get("seq_kv") or sq
    kvh = case.get("kv_heads") or h
    q = b * h * sq * d * e
    kv = b * kvh * sk * d * e
    total = 2 * q + 2 * kv  # Q read, O written, K and V read
    kv_word = "K, V (the KV cache)" if sq == 1 else "K, V"
    words = f"Q, {kv_word} read and O written once: 2·B·H·Sq·D·{e} + 2·B·Hkv·Sk·D·{e}"
    if case.get("mode") == "fwd_bwd":
        lse = 2 * b * h * sq * LSE_BYTES
        total += 2 * q + 2 * kv + lse  # dO read, dQ written; dK, dV written; LSE written and read
        words += f"; backward adds dO, dQ (2·B·H·Sq·D·{e}), dK, dV (2·B·Hkv·Sk·D·{e}) and the LSE (2·B·H·Sq·4)"
    if mask_bytes:
        total += mask_bytes
        words += f"; a dense mask tensor of {mask_bytes:,} B"
    return total, "model: " + words


def serving_bytes(case: dict[str, Any], mask_bytes: int = 0) -> tuple[int, str]:
    """A paged or ragged cache's call: each sequence's K and V read for the tokens it keeps (Σ L_b, not the padded
    longest, not the pool), Q read and O written, the block table (int32) and the lengths (int32) read."""
    from attnscope.core.case import Case
    from attnscope.core.serving import pages_of

    c = Case.from_dict(case)
    e = DTYPE_BYTES[c.dtype]
    lens = c.kv_lengths
    q = c.batch * c.heads * c.seq_q * c.head_dim * e
    kv = 2 * c.num_kv_heads * c.head_dim * e * sum(lens)
    total = 2 * q + kv + 4 * c.batch
    words = (
        f"Q read and O written (2·B·H·Sq·D·{e}), K and V read for the tokens each sequence keeps "
        f"(2·Hkv·D·{e}·Σ L_b, Σ L_b = {sum(lens):,}), the lengths (4·B)"
    )
    if c.page_size is not None:
        table = 4 * c.batch * max(pages_of(n, c.page_size) for n in lens)
        total += table
        words += f", the block table (4·B·max pages = {table:,} B); the last page's empty slots not counted"
    if mask_bytes:
        total += mask_bytes
        words += f"; a dense mask tensor of {mask_bytes:,} B"
    return total, "model: " + words


def _pct(x: float | None, of: float | None) -> float | None:
    return 100 * x / of if x is not None and of else None


def roofline(
    *,
    flops: int | None,
    nbytes: int,
    bytes_source: str,
    time_us: float | None,
    spec: GpuSpec | None,
    peak_tflops_measured: float | None = None,
    bandwidth_tbps_measured: float | None = None,
    grid_blocks: int | None = None,
    call: bool = True,
) -> dict[str, Any] | None:
    """The roofline fields of one call (``call``) or kernel; None without a time or bytes.  The time rule of
    ``latency`` (under :data:`LATENCY_US`) applies to a call; a kernel is latency-bound by its grid only."""
    if not time_us or time_us <= 0 or nbytes <= 0:
        return None
    at = _roofline_at(flops, nbytes, spec, peak_tflops_measured, bandwidth_tbps_measured)
    return at(time_us, grid_blocks, call, bytes_source)


RooflineAt = Callable[[float, int | None, bool, str], dict[str, Any]]


def _roofline_at(
    flops: int | None,
    nbytes: int,
    spec: GpuSpec | None,
    peak_tflops_measured: float | None,
    bandwidth_tbps_measured: float | None,
) -> RooflineAt:
    """:func:`roofline` of this work (``nbytes`` > 0) as a function of the time (> 0), grid and bytes' words:
    what does not depend on the time worked out once for a call's many kernels."""
    intensity = flops / nbytes if flops else None
    peak_c = spec.bf16_tflops if spec else peak_tflops_measured
    peak_b = spec.bandwidth_tbps if spec else bandwidth_tbps_measured
    ridge = peak_c / peak_b if peak_c and peak_b else None
    sms = spec.sms if spec else None
    spec_c = spec.bf16_tflops if spec else None
    spec_b = spec.bandwidth_tbps if spec else None
    spec_source = spec.source if spec else None
    by_intensity = None
    if intensity is not None and ridge is not None:
        by_intensity = "compute" if intensity >= ridge else "memory"

    def at(time_us: float, grid_blocks: int | None, call: bool, bytes_source: str) -> dict[str, Any]:
        sec = time_us * 1e-6
        tflops = flops / sec / 1e12 if flops else None
        tbps = nbytes / sec / 1e12
        latency = (grid_blocks is not None and sms is not None and grid_blocks < sms) or (call and time_us < LATENCY_US)
        return {  # the %s as _pct works them out, written out: 10^3 kernels a model step
            "bytes": nbytes,
            "bytes_source": bytes_source,
            "intensity": intensity,
            "ridge": ridge,
            "bound": "latency" if latency else by_intensity,
            "tflops": tflops,
            "tbps": tbps,
            "pct_compute_spec": 100 * tflops / spec_c if tflops is not None and spec_c else None,
            "pct_compute_measured": (
                100 * tflops / peak_tflops_measured if tflops is not None and peak_tflops_measured else None
            ),
            "pct_bandwidth_spec": 100 * tbps / spec_b if spec_b else None,
            "pct_bandwidth_measured": 100 * tbps / bandwidth_tbps_measured if bandwidth_tbps_measured else None,
            "grid_blocks": grid_blocks,
            "sms": sms,
            "spec_source": spec_source,
        }

    return at


def peak_basis(rf: dict[str, Any] | None) -> dict[str, Any] | None:
    """The %peak a table prints for a call, and the ceiling it is of: the compute ceiling (TFLOP/s) for a
    compute-bound call, the bandwidth ceiling (TB/s) otherwise (memory- or latency-bound), each the measured
    ceiling where the run measured it, else the spec's.  None without a bound."""
    if not rf or rf.get("bound") is None:
        return None
    compute = rf["bound"] == "compute"
    order = ("measured", "spec") if compute else ("spec", "measured")
    for source in order:
        pct = rf.get(f"pct_{'compute' if compute else 'bandwidth'}_{source}")
        rate = rf.get("tflops" if compute else "tbps")
        if pct and rate:
            return {
                "pct": pct,
                "bound": rf["bound"],
                "ceiling": "compute" if compute else "bandwidth",
                "unit": "TFLOP/s" if compute else "TB/s",
                "source": source,
                "ceiling_value": rate * 100.0 / pct,
            }
    return None


def grid_blocks(kernel: dict[str, Any]) -> int | None:
    g = kernel.get("grid")
    return math.prod(map(int, g)) if g else None


def row_roofline(
    r: dict[str, Any],
    peak_tflops_measured: float | None = None,
    bandwidth_tbps_measured: float | None = None,
    mask_bytes: int = 0,
) -> dict[str, Any] | None:
    """The call's roofline for one result row (GPU rows with a case and a GPU time), with ``kernels``: the
    same FLOPs and bytes on the one matrix kernel's own duration and grid where one does the call's work (helpers
    such as a split-KV combine or a mask build are no matrix kernels); empty, with ``kernels_why``, where several
    share it.  ``spec_note``: where the ceilings
    came from."""
    case = r.get("case")
    us = r.get("gpu_time_us")
    if not isinstance(case, dict) or not us or r.get("device_kind") not in (None, "gpu"):
        return None
    calls = r.get("attention_calls") or []
    if r.get("source") == "trace" and len(calls) > 1 and not _forward_and_its_backward(calls, case):
        # a trace of many calls (a training or decode loop): its GPU time is every kernel's, its FLOPs every
        # call's, and the bytes model is one call's, so no call's roofline can be read from them (the Llama
        # step read 229,488 FLOP/B at 0.0001 TB/s); the per-call rate is the row's TFLOP/s over attention time
        return None
    if (case.get("device") or "cuda") == "cpu":
        return None
    try:
        nbytes, source = call_bytes(case, mask_bytes)
    except (KeyError, TypeError):
        return None
    model_bytes, model_words = nbytes, source
    measured, per_kernel, _why = measured_bytes(r)
    if measured is not None and measured > 0:
        nbytes = measured
        source = (
            f"measured: DRAM bytes read + written over the call's {len(per_kernel)} kernel(s), Nsight Compute "
            f"(dram__bytes_read.sum + dram__bytes_write.sum, one more call after the timed ones); the {source}"
        )
    spec = lookup(r.get("device_name"))
    matrix = [  # not memcpy or memset (is_matrix_kernel: gemm or attention), asked of 1 kernel in 5 of a model step
        k
        for k in r.get("kernels") or []
        if k.get("category") in ("gemm", "attention") and is_matrix_kernel(k.get("name") or "", k.get("category"))
    ]
    main = max(matrix, key=lambda k: k.get("duration_us") or 0, default=None)  # the call's grid is its grid
    out = roofline(
        flops=r.get("flops"),
        nbytes=nbytes,
        bytes_source=source,
        time_us=us,
        spec=spec,
        peak_tflops_measured=peak_tflops_measured,
        bandwidth_tbps_measured=bandwidth_tbps_measured,
        grid_blocks=grid_blocks(main) if main else None,
    )
    if out is None:
        return None
    out["spec_note"] = (
        f"ceilings from the spec table for {spec.name} (keyed by the device name {r.get('device_name')!r}): "
        f"{spec.source}"
        if spec
        else "device not in the spec table: ceilings measured in this run only"
    )
    per = []
    if len(matrix) == 1:  # one matrix kernel does the call's work: the call's FLOPs and bytes on its own time
        at = _roofline_at(r.get("flops"), nbytes, spec, peak_tflops_measured, bandwidth_tbps_measured)  # nbytes > 0
        words = source + " (the call's bytes on this kernel's time)"
        t = matrix[0].get("duration_us")
        if t and t > 0:
            per.append({"name": matrix[0].get("name"), **at(t, grid_blocks(matrix[0]), False, words)})
    elif matrix:
        # several (a naive call's GEMMs, a forward and a backward kernel) share the call's work, and no model says
        # how: the whole call's on each one's time read up to 4x the spec's compute (fwd_bwd naive on the H200)
        out["kernels_why"] = (
            f"{len(matrix)} matrix kernels share the call's work and the model does not split it: the call's "
            "roofline only"
        )
    out["kernels"] = per
    out["graph_replay"] = _graph_replay(r, nbytes, spec, peak_tflops_measured, bandwidth_tbps_measured)
    out["bytes_model"] = model_bytes
    out["bytes_model_source"] = model_words
    out["bytes_measured"] = measured
    out["bytes_ratio"] = round(measured / model_bytes, 4) if measured and model_bytes > 0 else None
    out["bytes_per_kernel"] = per_kernel
    return out


def _forward_and_its_backward(calls: list[dict[str, Any]], case: dict[str, Any]) -> bool:
    """A trace of one training call: one forward and one backward of the case's shape (the case is fwd_bwd), whose
    FLOPs, bytes model and GPU time are one fwd_bwd call's, as a run's with --mode fwd_bwd."""
    return case.get("mode") == "fwd_bwd" and sorted(str(c.get("direction")) for c in calls) == ["backward", "forward"]


def measured_bytes(r: dict[str, Any]) -> tuple[int | None, list[dict[str, Any]], str | None]:
    """DRAM bytes read and written by the call's kernels under Nsight Compute (``run --ncu``): (total, per
    kernel {name, read, write}, None), or (None, [], why not) where ncu did not run or did not collect them."""
    n = r.get("ncu")
    if not isinstance(n, dict) or n.get("status") != "ok":
        return None, [], "no Nsight Compute counters (run --ncu)"
    per = []
    for k in n.get("kernels") or []:
        rd, wr = k.get("dram_read_bytes"), k.get("dram_write_bytes")
        if rd is None or wr is None:
            return None, [], f"Nsight Compute did not collect DRAM bytes for {k.get('name')}"
        per.append({"name": k.get("name"), "read": int(rd), "write": int(wr)})
    if not per:
        return None, [], "Nsight Compute profiled no kernel of the call"
    return sum(k["read"] + k["write"] for k in per), per, None


def _graph_replay(
    r: dict[str, Any], nbytes: int, spec: GpuSpec | None, tflops_measured: float | None, tbps_measured: float | None
) -> dict[str, Any] | None:
    """The call's rates on its CUDA-graph replay median (the same bytes and FLOPs; back-to-back calls without
    the launch gaps the CUDA-event loop includes), where the run measured one."""
    g = r.get("gpu_time_graph")
    us = g.get("median_us") if isinstance(g, dict) else None
    if not isinstance(g, dict) or not isinstance(us, (int, float)) or us <= 0:
        return None
    sec = us * 1e-6
    flops = r.get("flops")
    tflops = flops / sec / 1e12 if flops else None
    tbps = nbytes / sec / 1e12
    return {
        "time_us": us,
        "method": g.get("method"),
        "tflops": tflops,
        "tbps": tbps,
        "pct_compute_spec": _pct(tflops, spec.bf16_tflops if spec else None),
        "pct_compute_measured": _pct(tflops, tflops_measured),
        "pct_bandwidth_spec": _pct(tbps, spec.bandwidth_tbps if spec else None),
        "pct_bandwidth_measured": _pct(tbps, tbps_measured),
    }


def step_rooflines(r: dict[str, Any]) -> None:
    """A roofline on each step of a trace's ``steps`` (analysis/fingerprint/loop_steps.py) whose attention calls are
    known: their FLOPs and bytes (:func:`call_bytes`, summed over the step's calls) on the step's attention GPU time.
    Set in place as ``step["roofline"]`` (None where the step has no calls or no attention time)."""
    s = r.get("trace_summary")
    steps = s.get("steps") if isinstance(s, dict) else None
    if not isinstance(steps, dict):
        return
    spec = lookup(r.get("device_name"))
    for st in steps.get("steps") or []:
        st["roofline"] = st["roofline_kv_annotated"] = None
        calls = st.get("attention_calls") or []
        if not calls or any(c.get(f) is None for c in calls for f in ("batch", "heads", "seq_q", "head_dim")):
            continue
        try:
            nbytes = sum(call_bytes(c)[0] * c["count"] for c in calls)
        except (KeyError, TypeError):
            continue
        words = call_bytes(calls[0])[1] + f", summed over the step's {sum(c['count'] for c in calls)} attention call(s)"
        rf = roofline(
            flops=st.get("attention_flops"),
            nbytes=nbytes,
            bytes_source=words,
            time_us=st.get("attention_us"),
            spec=spec,
        )
        if rf is not None:
            rf["time_basis"] = "the step's attention GPU time (attention_us: kernels and the helpers inside its ops)"
            over = [k for k in ("pct_compute_spec", "pct_bandwidth_spec") if (rf.get(k) or 0) > 100]
            rf["impossible"] = over or None  # over 100% of a spec ceiling: the bytes or the time are wrong
        st["roofline"] = rf
        st["roofline_kv_annotated"] = _annotated(st, calls, spec)


def _annotated(st: dict[str, Any], calls: list[dict[str, Any]], spec: GpuSpec | None) -> dict[str, Any] | None:
    """The step's bandwidth on the KV lengths its range's name gives (``kv=L`` or one length per sequence) in place
    of the cache length its ops were given: the bytes a kernel that reads only the valid keys would move.  None
    without such lengths, or when a list of them does not have one length per sequence of every call."""
    kv = st.get("kv_annotated")
    if not kv:
        return None
    total = 0
    for c in calls:
        lens = kv if len(kv) == c["batch"] else [kv[0]] * c["batch"] if len(kv) == 1 else None
        if lens is None:
            return None
        total += sum(call_bytes({**c, "batch": 1, "seq_kv": n})[0] for n in lens) * c["count"]
    rf = roofline(
        flops=None,
        nbytes=total,
        bytes_source="model: Q read, O written, K and V read over the annotated KV length of each sequence (kv=)",
        time_us=st.get("attention_us"),
        spec=spec,
    )
    if rf is not None:
        over = [k for k in ("pct_bandwidth_spec",) if (rf.get(k) or 0) > 100]
        rf["impossible"] = over or None
    return rf
