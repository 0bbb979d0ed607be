"""trace_summary on real GPU traces, checked against counts read from the raw JSON here."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

from attnscope.analysis.fingerprint import breakdown as B
from attnscope.analysis.fingerprint.build import analyse
from attnscope.api import analyze
from attnscope.core.types import HiddenCopy, Upcast
from attnscope.trace import GpuEvent, trace_from_doc
from tests.rawtrace import H200, LLAMA, VARIANTS, raw_call_window, raw_events, raw_gpu_events_in_call
from tests.synth import PID, TID, doc, kernel, launch, op

GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def _raw_launchers(events):
    """correlation → name of the cpu_op whose External id the runtime call carries (rule 1, from the raw JSON)."""
    by_ext = {
        e["args"]["External id"]: e["name"]
        for e in events
        if e.get("cat") == "cpu_op" and "External id" in e.get("args", {})
    }
    return {
        e["args"]["correlation"]: by_ext.get(e["args"].get("External id"))
        for e in events
        if e.get("cat") in ("cuda_runtime", "cuda_driver")
    }


@pytest.mark.parametrize("variant", VARIANTS)
def test_summary_counts_and_launchers_match_the_raw_trace(variant):
    path = H200 / f"{variant}.json"
    events = raw_events(path)
    gpu = raw_gpu_events_in_call(events)
    r = analyze(path)
    s = r.trace_summary
    assert s["num_gpu_events"] == len(gpu)
    assert s["gpu_time_us"] == pytest.approx(sum(e["dur"] for e in gpu), abs=1e-3)
    assert sum(c["num_kernels"] for c in s["categories"]) == len(gpu)
    by_cat = {c["category"]: c["num_kernels"] for c in s["categories"]}
    assert by_cat["memcpy"] == sum(e["cat"] == "gpu_memcpy" for e in gpu)
    assert by_cat["memset"] == sum(e["cat"] == "gpu_memset" for e in gpu)
    launchers = _raw_launchers(events)
    expected = Counter(launchers[e["args"]["correlation"]] for e in sorted(gpu, key=lambda e: e["ts"]))
    assert Counter(k.launched_by for k in r.fingerprint.kernels) == expected
    assert s["attribution"]["correlation"] == len(gpu)
    # the launch delay of every linked event is its start minus its runtime call's start
    rt = {e["args"]["correlation"]: e["ts"] for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    delays = sorted(e["ts"] - rt[e["args"]["correlation"]] for e in gpu)
    assert s["launch"]["launch_to_start_us"]["max_us"] == pytest.approx(delays[-1], abs=1e-3)
    dev = s["idle"]["devices"][0]
    span = max(e["ts"] + e["dur"] for e in gpu) - min(e["ts"] for e in gpu)
    assert dev["span_us"] == pytest.approx(span, abs=1e-3)
    assert dev["busy_us"] + dev["idle_us"] == pytest.approx(span, abs=1e-3)


def _raw_inside(events, op_name):
    """GPU events (of the call) whose runtime call starts inside any cpu_op called op_name: from the raw JSON."""
    spans = [(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") == "cpu_op" and e["name"] == op_name]
    corr = {
        e["args"]["correlation"]
        for e in events
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and any(a <= e["ts"] <= b for a, b in spans)
    }
    return len(spans), [e for e in raw_gpu_events_in_call(events) if e["args"]["correlation"] in corr]


@pytest.mark.parametrize(
    ("variant", "family", "impl", "op"),
    [
        ("sdpa_flash", "flash", "FA2 (PyTorch bundled)", "aten::_scaled_dot_product_flash_attention"),
        (
            "sdpa_efficient",
            "efficient",
            "cutlass memory-efficient (PyTorch / xformers)",
            "aten::_scaled_dot_product_efficient_attention",
        ),
        ("sdpa_cudnn", "cudnn", "cuDNN generated SDPA", "aten::_scaled_dot_product_cudnn_attention"),
        ("flex_compiled", "flex", "FlexAttention (Triton template)", None),
    ],
)
def test_fused_attention_family_is_read_off_the_kernel_name(variant, family, impl, op):
    path = H200 / f"{variant}.json"
    events = raw_events(path)
    s = analyze(path).trace_summary
    (fam,) = s["attention_families"]
    assert fam["family"] == family and impl in fam["implementations"]
    if op is None:  # compiled: Inductor records the Triton launch as a cpu_op named like the kernel
        raw = [e for e in raw_gpu_events_in_call(events) if "flex_attention" in e["name"]]
        n_calls = sum(e.get("cat") == "cpu_op" and "flex_attention" in e["name"] for e in events)
    else:
        n_calls, raw = _raw_inside(events, op)
    assert raw and fam["num_kernels"] == len(raw) and fam["num_forward_calls"] == n_calls
    assert fam["time_us"] == pytest.approx(sum(e["dur"] for e in raw), abs=1e-3)


def test_math_family_owns_every_kernel_launched_inside_the_math_op():
    path = H200 / "sdpa_math.json"
    events = raw_events(path)
    (m,) = [e for e in events if e.get("cat") == "cpu_op" and e["name"] == "aten::_scaled_dot_product_attention_math"]
    t0, t1 = raw_call_window(events)
    assert t0 <= m["ts"] <= t1
    inside = {
        e["args"]["correlation"]
        for e in events
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and m["ts"] <= e["ts"] <= m["ts"] + m["dur"]
    }
    n_inside = sum(e["args"]["correlation"] in inside for e in raw_gpu_events_in_call(events))
    s = analyze(path).trace_summary
    (fam,) = s["attention_families"]
    assert fam["family"] == "math" and fam["num_kernels"] == n_inside and fam["num_forward_calls"] == 1


def test_llama_training_trace_against_raw_counts():
    """The Llama training trace in tests/data: the summary's counts against the raw events."""
    import gzip

    import orjson

    llama = LLAMA
    events = orjson.loads(gzip.decompress(llama.read_bytes()))["traceEvents"]
    gpu = [e for e in events if e.get("cat") in GPU_CATS]
    r = analyze(llama)
    s = r.trace_summary
    assert s["num_events"] == len(events) and s["num_skipped_events"] == 0
    assert s["num_gpu_events"] == len(gpu)
    assert s["gpu_time_us"] == pytest.approx(sum(e["dur"] for e in gpu), rel=1e-9)
    by_cat = {c["category"]: c for c in s["categories"]}
    assert by_cat["memcpy"]["num_kernels"] == sum(e["cat"] == "gpu_memcpy" for e in gpu)
    assert by_cat["memset"]["num_kernels"] == sum(e["cat"] == "gpu_memset" for e in gpu)
    launchers = _raw_launchers(events)
    assert Counter(k.launched_by for k in r.fingerprint.kernels) == Counter(
        launchers[e["args"]["correlation"]] for e in gpu
    )
    (cudnn,) = [f for f in s["attention_families"] if f["family"] == "cudnn"]
    ops = Counter(e["name"] for e in events if e.get("cat") == "cpu_op")
    assert cudnn["num_forward_calls"] == ops["aten::_scaled_dot_product_cudnn_attention"]
    assert cudnn["num_backward_calls"] == ops["aten::_scaled_dot_product_cudnn_attention_backward"]
    fused = sum(e["name"].startswith("cudnn_generated_fort_native_sdpa") for e in gpu)
    assert by_cat["attention"]["num_kernels"] >= fused > 0
    rt = [e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")]
    assert s["launch"]["runtime_total_us"] == pytest.approx(sum(e["dur"] for e in rt), rel=1e-9)
    assert sum(x["num"] for x in s["launch"]["runtime_calls"]) == len(rt)


# trace_summary (analysis/breakdown.py), pinned piece by piece on synthetic traces written here.
#
# Every expected value is worked out by hand from the events the test writes (the arithmetic is in
# each docstring or beside the value); none is read back from attnscope.  What is pinned: nearest-rank
# percentiles and the distribution rows, shares, GPU time per category, attention families (their
# implementations, kernels, forward/backward calls and the case where calls are unknown), top kernels
# and top launching ops, launch statistics inside a call window, idle time and gaps per device and
# stream, the ranking of hidden copies and upcasts, the summary of a trace without GPU events, the
# default and explicit ``top`` limits, and that the per-event lists must line up with the GPU events.


CATS = (  # docs/analyze.md's order
    "gemm",
    "attention",
    "softmax",
    "elementwise",
    "reduction",
    "copy",
    "memcpy",
    "memset",
    "communication",
    "other",
)
CALLS_UNKNOWN = (
    "no attention op above these kernels (a library called outside aten, e.g. FlashInfer or the cuDNN "
    "frontend): the trace does not say how many calls they were"
)


def _launched(
    name: str, ts: float, dur: float, kname: str, kts: float, kdur: float, ext: int, cat: str = "kernel", **kw: Any
) -> list[dict[str, Any]]:
    """An op [ts, ts+dur] whose runtime call (at ts+1, correlation = External id = ext) launches one GPU event."""
    api = "cudaMemcpyAsync" if cat == "gpu_memcpy" else "cudaLaunchKernel"
    return [
        op(name, ts, dur, ext),
        launch(ts + 1, corr=ext, ext=ext, name=api),
        kernel(kname, kts, kdur, ext, cat=cat, **kw),
    ]


def _analysed(events: list[dict[str, Any]], **top: Any):
    tr = trace_from_doc(doc(events, **top))
    return tr, analyse(tr)


def _zero_row(c: str) -> dict[str, Any]:
    return {"category": c, "num_kernels": 0, "time_us": 0.0, "share_pct": 0.0}


# ---- percentile, _dist, _pct ----------------------------------------------------------------------


def test_percentile_is_nearest_rank_and_clamped_to_the_list():
    """k = round(q/100 · (n−1)), clamped to 0..n−1."""
    s = [1.0, 2.0, 3.0]
    assert B.percentile(s, 0) == 1.0  # k = 0
    assert B.percentile(s, 100) == 3.0  # k = 2, the last
    assert B.percentile(s, 150) == 3.0  # k = round(3.0) = 3, clamped to 2
    assert B.percentile(s, -50) == 1.0  # k = −1, clamped to 0
    assert B.percentile([float(i) for i in range(101)], 100) == 100.0  # k = 100 of 0..100
    assert B.percentile([], 50) is None


def test_dist_of_nothing_has_no_mean_percentiles_or_max():
    assert B._dist([]) == {
        "num": 0,
        "total_us": 0,
        "mean_us": None,
        "p50_us": None,
        "p95_us": None,
        "max_us": None,
    }


def test_dist_rounds_to_three_decimals():
    """[3.0, 1.0, 2.34567] sorted is [1.0, 2.34567, 3.0]: total 6.34567 → 6.346, mean 2.11522… → 2.115,
    p50 = s[round(0.5·2)] = s[1] = 2.34567 → 2.346, p95 = s[round(1.9)] = s[2] = 3.0, max 3.0."""
    assert B._dist([3.0, 1.0, 2.34567]) == {
        "num": 3,
        "total_us": 6.346,
        "mean_us": 2.115,
        "p50_us": 2.346,
        "p95_us": 3.0,
        "max_us": 3.0,
    }


def test_dist_percentiles_of_61_values():
    """60, 59, …, 0: sorted s[i] = i.  p50 = s[round(0.5·60)] = s[30]; p95 = s[round(0.95·60)] = s[57].
    Total 60·61/2 = 1830, mean 30."""
    assert B._dist([float(60 - i) for i in range(61)]) == {
        "num": 61,
        "total_us": 1830.0,
        "mean_us": 30.0,
        "p50_us": 30.0,
        "p95_us": 57.0,
        "max_us": 60.0,
    }


def test_dist_median_of_two_is_the_lower():
    """n = 2: p50 = s[round(0.5)] = s[0] (round half to even), p95 = s[round(0.95)] = s[1]."""
    d = B._dist([2.0, 1.0])
    assert (d["p50_us"], d["p95_us"]) == (1.0, 2.0)


def test_share_in_percent_with_two_decimals():
    assert B._pct(1, 3) == 33.33
    assert B._pct(2, 5) == 40.0
    assert B._pct(0.25, 0.5) == 50.0  # a whole under 1 µs is still a whole
    assert B._pct(0.0, 0) == 0.0  # nothing to share: 0, not a division by zero
    assert B._pct(0.0, 0.0) == 0.0


# ---- categories -----------------------------------------------------------------------------------


def _cat_trace():
    """Two gemm kernels (3.0 + 1.0 µs), one softmax (0.5004), one DtoD memcpy (0.4996): 5.0 µs in all."""
    return _analysed(
        _launched("aten::mm", 0, 10, "nvjet_tst_a", 100, 3.0, 1)
        + _launched("aten::mm", 20, 10, "nvjet_tst_b", 110, 1.0, 2)
        + _launched("aten::_softmax", 40, 10, "softmax_warp_forward", 120, 0.5004, 3)
        + _launched("aten::copy_", 60, 10, "Memcpy DtoD (Device -> Device)", 130, 0.4996, 4, cat="gpu_memcpy")
    )


CAT_ROWS = [
    {"category": "gemm", "num_kernels": 2, "time_us": 4.0, "share_pct": 80.0},  # 4.0 / 5.0
    _zero_row("attention"),
    {"category": "softmax", "num_kernels": 1, "time_us": 0.5, "share_pct": 10.01},  # 0.5004 → 0.5; 10.008 %
    _zero_row("elementwise"),
    _zero_row("reduction"),
    _zero_row("copy"),
    {"category": "memcpy", "num_kernels": 1, "time_us": 0.5, "share_pct": 9.99},  # 0.4996 → 0.5; 9.992 %
    _zero_row("memset"),
    _zero_row("communication"),
    _zero_row("other"),
]


def test_categories_sum_time_per_category():
    tr, an = _cat_trace()
    s = B.summarize(tr, an)
    assert s["gpu_time_us"] == 5.0
    assert s["categories"] == CAT_ROWS
    assert B.categories(an.attribution, 5.0) == CAT_ROWS  # without the precomputed list: worked out here


def test_categories_count_by_the_list_given():
    """The caller's precomputed categories are used as given: four events all called 'other'."""
    _, an = _cat_trace()
    rows = B.categories(an.attribution, 5.0, ["other"] * 4)
    assert rows == [_zero_row(c) for c in CATS[:-1]] + [
        {"category": "other", "num_kernels": 4, "time_us": 5.0, "share_pct": 100.0}
    ]


# ---- attention families ---------------------------------------------------------------------------

FILL = "vectorized_elementwise_kernel_fill"
FMHA_F = "fmha_cutlassF_bf16_aligned_64x64_rf_sm80"
FMHA_B = "fmha_cutlassB_bf16_aligned_64x64_k64_sm80"
MATH_KERNELS = [  # (launching op, kernel, µs), launched under the math op
    ("aten::bmm", "ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_nn", 30.0),
    ("aten::bmm", "ampere_bf16_s16816gemm_bf16_64x64_ldg8_f2f_nn", 24.0),
    ("aten::_softmax", "softmax_warp_forward", 12.0),
    ("aten::mul", "vectorized_elementwise_kernel_mul", 9.0),
    ("aten::div", "vectorized_elementwise_kernel_div", 7.0),
    ("aten::add", "vectorized_elementwise_kernel_add", 5.0),
    ("aten::neg", "vectorized_elementwise_kernel_neg", 3.0),
]


def _family_events() -> list[dict[str, Any]]:
    """One thread; GPU µs in brackets.

    - an unattributed gemm (no correlation, no External id) runs first on the GPU [15]
    - efficient, 2 forward calls and 1 backward: aten::_scaled_dot_product_efficient_attention
      (the first op of the trace) launches a fill kernel itself [2] and holds
      aten::_efficient_attention_forward → fmha_cutlassF [10]; a second such call → fmha_cutlassF [10];
      the backward op holds aten::_efficient_attention_backward → fmha_cutlassB [15].  37 µs.
    - math, 1 forward call: seven generic kernels under _scaled_dot_product_attention_math [30, 24, 12,
      9, 7, 5, 3] = 90 µs.
    - flex, 1 forward call: FlexAttentionAutogradOp → the Triton template [40] and triton_poi_fused_0 [4];
      the generated reduction op triton_per_fused_flex_attention_1 (part of a call, not a call) → its
      kernel [6].  50 µs.
    - flash: flash_fwd_kernel [8.00049] under a non-aten op: the calls are unknown.
    Total 15 + 37 + 90 + 50 + 8.00049 = 200.00049 µs.
    """
    ev: list[dict[str, Any]] = [kernel("nvjet_tst_64x8_64x16_2x1_v_bz_TNT", 1, 15.0, None)]
    ev += [
        op("aten::_scaled_dot_product_efficient_attention", 100, 100, 1),
        launch(105, corr=1, ext=1),
        kernel(FILL, 106, 2.0, 1),
    ]
    ev += _launched("aten::_efficient_attention_forward", 110, 50, FMHA_F, 120, 10.0, 2)
    ev += [op("aten::_scaled_dot_product_efficient_attention", 300, 100, 3)]
    ev += _launched("aten::_efficient_attention_forward", 310, 50, FMHA_F, 320, 10.0, 4)
    ev += [op("aten::_scaled_dot_product_efficient_attention_backward", 500, 100, 5)]
    ev += _launched("aten::_efficient_attention_backward", 502, 90, FMHA_B, 510, 15.0, 6)
    ev += [op("aten::_scaled_dot_product_attention_math", 700, 200, 10)]
    for j, (o, k, us) in enumerate(MATH_KERNELS):
        ev += _launched(o, 705 + 10 * j, 8, k, 710 + 40 * j, us, 11 + j)
    ev += [
        op("FlexAttentionAutogradOp", 1000, 50, 20),
        launch(1005, corr=20, ext=20),
        kernel("triton_tem_fused_flex_attention_0", 1006, 40.0, 20),
        launch(1010, corr=21, ext=20),
        kernel("triton_poi_fused_0", 1050, 4.0, 21),
    ]
    ev += _launched("triton_per_fused_flex_attention_1", 1060, 10, "triton_per_fused_flex_attention_1", 1065, 6.0, 22)
    ev += _launched("mylib::fused_attention", 1100, 20, "flash_fwd_kernel", 1106, 8.00049, 30)
    return ev


FAMILY_ROWS = [  # by time, most first; shares of 200.00049 µs
    {
        "family": "math",
        "implementations": ["decomposed into generic kernels"],
        "num_kernels": 7,
        "num_distinct_kernels": 7,
        "time_us": 90.0,
        "share_pct": 45.0,  # 44.99989
        "num_forward_calls": 1,
        "num_backward_calls": 0,
        "kernels": [k for _, k, _ in MATH_KERNELS[:5]],  # the five longest of seven
    },
    {
        "family": "flex",
        "implementations": ["FlexAttention (Triton template)", "decomposed into generic kernels"],
        "num_kernels": 3,
        "num_distinct_kernels": 3,
        "time_us": 50.0,
        "share_pct": 25.0,  # 24.99994
        "num_forward_calls": 1,
        "num_backward_calls": 0,
        "kernels": ["triton_tem_fused_flex_attention_0", "triton_per_fused_flex_attention_1", "triton_poi_fused_0"],
    },
    {
        "family": "efficient",
        "implementations": ["cutlass memory-efficient (PyTorch / xformers)", "helper kernel"],
        "num_kernels": 4,
        "num_distinct_kernels": 3,
        "time_us": 37.0,
        "share_pct": 18.5,  # 18.49995
        "num_forward_calls": 2,
        "num_backward_calls": 1,
        "kernels": [FMHA_F, FMHA_B, FILL],  # 10 + 10 = 20 > 15 > 2
    },
    {
        "family": "flash",
        "implementations": ["FA2 (flash-attn package)"],
        "num_kernels": 1,
        "num_distinct_kernels": 1,
        "time_us": 8.0,  # 8.00049 to three decimals
        "share_pct": 4.0,  # 4.00023
        "num_forward_calls": None,
        "num_backward_calls": None,
        "kernels": ["flash_fwd_kernel"],
        "calls_unknown": CALLS_UNKNOWN,
    },
]


def test_attention_families_kernels_calls_and_implementations():
    tr, an = _analysed(_family_events())
    s = B.summarize(tr, an)
    assert s["gpu_time_us"] == 200.0  # 200.00049 to three decimals
    assert s["attention_families"] == FAMILY_ROWS


def test_kernel_family_of_a_copy_comes_from_its_op_not_its_name():
    """Only kernels are read against the attention-kernel table: a memcpy is attention only through
    the op above it (here a helper of the efficient op), whatever its name says."""
    ev = [
        *_launched("aten::mm", 0, 10, "flash_fwd_kernel", 20, 1.0, 1, cat="gpu_memcpy"),
        op("aten::_efficient_attention_forward", 40, 20, 2),
        launch(41, corr=2, ext=2, name="cudaMemsetAsync"),
        kernel("flash_fwd_kernel", 50, 1.0, 2, cat="gpu_memset"),
    ]
    _, an = _analysed(ev)
    assert [g.kind for g in an.attribution.gpu] == ["memcpy", "memset"]
    assert B.kernel_families(an.attribution) == [None, ("efficient", "helper kernel")]


# ---- top kernels, top ops ----------------------------------------------------------------------------

NVJET = "nvjet_tst_128x128_64x4_1x2_h_bz_coopA_TNT"
VEC = "vectorized_elementwise_kernel"
MEMCPY = "Memcpy DtoD (Device -> Device)"
POI = "triton_poi_fused_add_0"
VEC_OPS = ["aten::add"] * 4 + ["aten::mul"] * 3 + ["aten::div"] * 2 + ["aten::sub"]


def _top_events() -> list[dict[str, Any]]:
    """aten::mm (the first op) and another aten::mm → the nvjet gemm [3.0, 4.2004]; the efficient forward
    → fmha [20]; aten::copy_ → a DtoD memcpy [5]; ten ops (add ×4, mul ×3, div ×2, sub ×1) → the same
    elementwise kernel [1 each]; an unattributed triton kernel [2.5].  Total 44.7004 µs."""
    ev = _launched("aten::mm", 0, 10, NVJET, 100, 3.0, 1)
    ev += _launched("aten::mm", 20, 10, NVJET, 110, 4.2004, 2)
    ev += _launched("aten::_efficient_attention_forward", 40, 10, FMHA_F, 120, 20.0, 3)
    ev += _launched("aten::copy_", 60, 10, MEMCPY, 150, 5.0, 4, cat="gpu_memcpy")
    for j, name in enumerate(VEC_OPS):
        ev += _launched(name, 100 + 10 * j, 5, VEC, 200 + 2 * j, 1.0, 10 + j)
    ev.append(kernel(POI, 300, 2.5, None))
    return ev


TOP_KERNELS = [  # shares of 44.7004 µs
    {
        "name": FMHA_F,
        "category": "attention",
        "attention_family": "efficient",
        "num_calls": 1,
        "time_us": 20.0,
        "mean_us": 20.0,
        "share_pct": 44.74,
        "launched_by": [{"op": "aten::_efficient_attention_forward", "count": 1}],
    },
    {
        "name": VEC,
        "category": "elementwise",
        "attention_family": None,
        "num_calls": 10,
        "time_us": 10.0,
        "mean_us": 1.0,
        "share_pct": 22.37,
        "launched_by": [  # the three most frequent of four
            {"op": "aten::add", "count": 4},
            {"op": "aten::mul", "count": 3},
            {"op": "aten::div", "count": 2},
        ],
    },
    {
        "name": NVJET,
        "category": "gemm",
        "attention_family": None,
        "num_calls": 2,
        "time_us": 7.2,  # 3.0 + 4.2004
        "mean_us": 3.6,  # 3.6002
        "share_pct": 16.11,
        "launched_by": [{"op": "aten::mm", "count": 2}],
    },
    {
        "name": MEMCPY,
        "category": "memcpy",
        "attention_family": None,
        "num_calls": 1,
        "time_us": 5.0,
        "mean_us": 5.0,
        "share_pct": 11.19,
        "launched_by": [{"op": "aten::copy_", "count": 1}],
    },
    {
        "name": POI,
        "category": "elementwise",
        "attention_family": None,
        "num_calls": 1,
        "time_us": 2.5,
        "mean_us": 2.5,
        "share_pct": 5.59,
        "launched_by": [{"op": "(unattributed)", "count": 1}],
    },
]

TOP_OPS = [
    {"op": "aten::_efficient_attention_forward", "num_kernels": 1, "time_us": 20.0, "share_pct": 44.74,
     "categories": {"attention": 1}},
    {"op": "aten::mm", "num_kernels": 2, "time_us": 7.2, "share_pct": 16.11, "categories": {"gemm": 2}},
    {"op": "aten::copy_", "num_kernels": 1, "time_us": 5.0, "share_pct": 11.19, "categories": {"memcpy": 1}},
    {"op": "aten::add", "num_kernels": 4, "time_us": 4.0, "share_pct": 8.95, "categories": {"elementwise": 4}},
    {"op": "aten::mul", "num_kernels": 3, "time_us": 3.0, "share_pct": 6.71, "categories": {"elementwise": 3}},
    {"op": "(unattributed)", "num_kernels": 1, "time_us": 2.5, "share_pct": 5.59, "categories": {"elementwise": 1}},
    {"op": "aten::div", "num_kernels": 2, "time_us": 2.0, "share_pct": 4.47, "categories": {"elementwise": 2}},
    {"op": "aten::sub", "num_kernels": 1, "time_us": 1.0, "share_pct": 2.24, "categories": {"elementwise": 1}},
]  # fmt: skip


def test_top_kernels_by_time_with_their_launching_ops():
    tr, an = _analysed(_top_events())
    s = B.summarize(tr, an)
    assert s["gpu_time_us"] == 44.7
    assert s["top_kernels"] == TOP_KERNELS


def test_top_ops_by_the_gpu_time_they_launched():
    tr, an = _analysed(_top_events())
    assert B.summarize(tr, an)["top_ops"] == TOP_OPS
    assert B.top_ops(an.attribution, 44.7004, 3) == TOP_OPS[:3]  # categories worked out here


def test_top_ops_count_categories_from_the_list_given():
    _, an = _analysed(_top_events())
    rows = B.top_ops(an.attribution, 44.7004, 1, ["x"] * len(an.attribution.gpu))
    assert rows == [{**TOP_OPS[0], "categories": {"x": 1}}]


def test_summary_top_limits_kernels_and_ops():
    tr, an = _analysed(_top_events())
    s = B.summarize(tr, an, top=2)
    assert s["top_kernels"] == TOP_KERNELS[:2]
    assert s["top_ops"] == TOP_OPS[:2]


def test_summary_keeps_fifteen_kernels_and_ops_by_default():
    """Sixteen ops aten::op_01..16, each launching kernel_NN of NN µs: the fifteen longest stay."""
    ev: list[dict[str, Any]] = []
    for j in range(1, 17):
        ev += _launched(f"aten::op_{j:02d}", 20 * j, 10, f"kernel_{j:02d}", 1000 + 20 * j, float(j), j)
    tr, an = _analysed(ev)
    s = B.summarize(tr, an)
    assert [k["name"] for k in s["top_kernels"]] == [f"kernel_{j:02d}" for j in range(16, 1, -1)]
    assert [o["op"] for o in s["top_ops"]] == [f"aten::op_{j:02d}" for j in range(16, 1, -1)]


# ---- launch statistics -------------------------------------------------------------------------------


def _annotation(ts: float, dur: float) -> dict[str, Any]:
    return {"ph": "X", "cat": "user_annotation", "name": "attnscope::call", "pid": PID, "tid": TID, "ts": ts,
            "dur": dur, "args": {}}  # fmt: skip


def test_launch_statistics_inside_the_call_window():
    """attnscope::call spans [100, 200].  Outside it: a warm-up launch at 50 (7 µs) and one at 252 (6 µs).
    Inside (runtime call: start, µs → GPU event: start, µs):

    - cudaLaunchKernel at 100 (the window's first instant), 4.0 → nvjet at 110, 2.0: delay 10, shorter
    - cudaLaunchKernel at 145, 3.0 → elementwise at 150, 3.0: delay 5, as long as its launch
    - cudaLaunchKernel at 166, 2.5 → elementwise at 190, 1.0: delay 24, shorter
    - cudaMemcpyAsync at 177, 12.3456 → memcpy at 185, 20.0: delay 8
    - cudaDeviceSynchronize at 200 (the window's last instant), 30.0
    - a kernel at 105 with no runtime call (its External id names aten::add): not linked

    Per API: sync 30; memcpy 12.3456; launch [2.5, 3.0, 4.0] = 9.5, mean 3.1667, p50 s[1], p95 s[round(1.9)].
    Total 51.8456.  Delays [5, 8, 10, 24]: total 47, mean 11.75, p50 s[round(1.5)] = s[2], p95 s[round(2.85)]."""
    ev = [
        _annotation(100, 100),
        *_launched("aten::warm", 40, 20, "warm_kernel", 60, 1.0, 90),
        op("aten::mm", 100, 30, 1),
        launch(100, corr=1, ext=1, dur=4.0),
        kernel("nvjet_tst_a", 110, 2.0, 1),
        op("aten::add", 140, 20, 2),
        launch(145, corr=2, ext=2, dur=3.0),
        kernel("vectorized_elementwise_kernel", 150, 3.0, 2),
        kernel("vectorized_elementwise_kernel_fill", 105, 1.0, None, ext=2),
        op("aten::mul", 165, 10, 3),
        launch(166, corr=3, ext=3, dur=2.5),
        kernel("vectorized_elementwise_kernel_mul", 190, 1.0, 3),
        op("aten::copy_", 176, 10, 4),
        launch(177, corr=4, ext=4, dur=12.3456, name="cudaMemcpyAsync"),
        kernel("Memcpy HtoD (Pinned -> Device)", 185, 20.0, 4, cat="gpu_memcpy"),
        launch(200, corr=6, ext=None, dur=30.0, name="cudaDeviceSynchronize"),
        op("aten::after", 250, 10, 5),
        launch(252, corr=5, ext=5, dur=6.0),
        kernel("after_kernel", 260, 1.0, 5),
    ]
    tr, an = _analysed(ev)
    assert an.window == (100.0, 200.0)
    assert B.summarize(tr, an)["launch"] == {
        "runtime_calls": [
            {"name": "cudaDeviceSynchronize", "num": 1, "total_us": 30.0, "mean_us": 30.0, "p50_us": 30.0,
             "p95_us": 30.0, "max_us": 30.0},
            {"name": "cudaMemcpyAsync", "num": 1, "total_us": 12.346, "mean_us": 12.346, "p50_us": 12.346,
             "p95_us": 12.346, "max_us": 12.346},
            {"name": "cudaLaunchKernel", "num": 3, "total_us": 9.5, "mean_us": 3.167, "p50_us": 3.0,
             "p95_us": 4.0, "max_us": 4.0},
        ],
        "runtime_total_us": 51.846,
        "num_linked_gpu_events": 4,
        "launch_to_start_us": {"num": 4, "total_us": 47.0, "mean_us": 11.75, "p50_us": 10.0, "p95_us": 24.0,
                               "max_us": 24.0},
        "num_shorter_than_launch": 2,
    }  # fmt: skip


# ---- idle time ---------------------------------------------------------------------------------------


def _g(name: str, ts: float, dur: float, device: int | None, stream: int | None) -> GpuEvent:
    return GpuEvent("kernel", name, ts, dur, None, None, device, stream)


def test_idle_time_gaps_per_device_and_busy_per_stream():
    """Device 0 (µs from 1000): k0 [0, 10] s7, k1 [5, 15] s8 overlaps, k2 [6, 8] s7 inside, k3 [15, 20] s7
    starts as the busy run ends (no gap), then gaps of 0.5 (before k4 [20.5, 22]), 3 (k5 [25, 26]),
    50 (k6 [76, 80]), 500 (k7 [580, 600] s8), 2000 (k8 [2600, 2610] s8) and exactly 10 (k9 [2620, 2630] s8).
    Span 2630, busy 20 + 1.5 + 1 + 4 + 20 + 10 + 10 = 66.5, idle 2563.5 (the gaps' sum), 97.47 %.
    A bound is the next bucket's: 10 is "10-100us".  The five largest gaps, most first.
    Device None (events without a device, listed first): a_none [0, 4.2], b_none [2, 3.00049] inside it.
    Streams by busy time: (0, 8) 10+20+10+10 = 50; (0, 7) 10+2+5+1.5+1+4 = 23.5; (None, 3) 5.20049."""
    gpu = [
        _g("a_none", 0.0, 4.2, None, 3),
        _g("b_none", 2.0, 1.00049, None, 3),
        _g("k0", 1000.0, 10.0, 0, 7),
        _g("k1", 1005.0, 10.0, 0, 8),
        _g("k2", 1006.0, 2.0, 0, 7),
        _g("k3", 1015.0, 5.0, 0, 7),
        _g("k4", 1020.5, 1.5, 0, 7),
        _g("k5", 1025.0, 1.0, 0, 7),
        _g("k6", 1076.0, 4.0, 0, 7),
        _g("k7", 1580.0, 20.0, 0, 8),
        _g("k8", 3600.0, 10.0, 0, 8),
        _g("k9", 3620.0, 10.0, 0, 8),
    ]
    assert B.idle_time(gpu) == {
        "devices": [
            {
                "device": 0,
                "span_us": 2630.0,
                "busy_us": 66.5,
                "idle_us": 2563.5,
                "idle_pct": 97.47,
                "num_gaps": 6,
                "gaps_by_length": {"<10us": 2, "10-100us": 2, "100us-1ms": 1, ">1ms": 1},
                "largest_gaps": [
                    {"gap_us": 2000.0, "after_us": 600.0, "before": "k7", "next": "k8"},
                    {"gap_us": 500.0, "after_us": 80.0, "before": "k6", "next": "k7"},
                    {"gap_us": 50.0, "after_us": 26.0, "before": "k5", "next": "k6"},
                    {"gap_us": 10.0, "after_us": 2610.0, "before": "k8", "next": "k9"},
                    {"gap_us": 3.0, "after_us": 22.0, "before": "k4", "next": "k5"},
                ],
            },
            {
                "device": None,
                "span_us": 4.2,
                "busy_us": 4.2,
                "idle_us": 0.0,
                "idle_pct": 0.0,
                "num_gaps": 0,
                "gaps_by_length": {"<10us": 0, "10-100us": 0, "100us-1ms": 0, ">1ms": 0},
                "largest_gaps": [],
            },
        ],
        "streams": [
            {"device": 0, "stream": 8, "num_events": 4, "busy_us": 50.0},
            {"device": 0, "stream": 7, "num_events": 6, "busy_us": 23.5},
            {"device": None, "stream": 3, "num_events": 2, "busy_us": 5.2},
        ],
    }
    # asked for more, the sixth gap (0.5 µs after k3, 20 µs in) comes too
    assert B.idle_time(gpu, top=6)["devices"][0]["largest_gaps"][-1] == {
        "gap_us": 0.5,
        "after_us": 20.0,
        "before": "k3",
        "next": "k4",
    }


def test_idle_time_rounds_to_three_decimals():
    """Device 1: x0 [10, 11.23456], x1 [13.5, 15.50007]: gap 2.26544 after 1.23456 µs, span 5.50007,
    busy 1.23456 + 2.00007 = 3.23463, idle 2.26544, 41.19 %.  Device 2, under a microsecond:
    y0 [0, 0.25], y1 [0.5, 0.75]: span 0.75, busy 0.5, idle 0.25, 33.33 %."""
    gpu = [
        _g("y0", 0.0, 0.25, 2, 7),
        _g("y1", 0.5, 0.25, 2, 7),
        _g("x0", 10.0, 1.23456, 1, 7),
        _g("x1", 13.5, 2.00007, 1, 7),
    ]
    one_gap = {"<10us": 1, "10-100us": 0, "100us-1ms": 0, ">1ms": 0}
    assert B.idle_time(gpu) == {
        "devices": [
            {
                "device": 1,
                "span_us": 5.5,
                "busy_us": 3.235,
                "idle_us": 2.265,
                "idle_pct": 41.19,
                "num_gaps": 1,
                "gaps_by_length": one_gap,
                "largest_gaps": [{"gap_us": 2.265, "after_us": 1.235, "before": "x0", "next": "x1"}],
            },
            {
                "device": 2,
                "span_us": 0.75,
                "busy_us": 0.5,
                "idle_us": 0.25,
                "idle_pct": 33.33,
                "num_gaps": 1,
                "gaps_by_length": one_gap,
                "largest_gaps": [{"gap_us": 0.25, "after_us": 0.25, "before": "y0", "next": "y1"}],
            },
        ],
        "streams": [
            {"device": 1, "stream": 7, "num_events": 2, "busy_us": 3.235},
            {"device": 2, "stream": 7, "num_events": 2, "busy_us": 0.5},
        ],
    }


# ---- hidden copies, upcasts ----------------------------------------------------------------------------

DTOD = "Memcpy DtoD (Device -> Device)"
MATH_OP = "aten::_scaled_dot_product_attention_math"


def _copies() -> list[HiddenCopy]:
    """Group A (masked_fill, value): 1000 B 2.5 µs + 3000 B 1.25 µs; group B (repeat_interleave,
    broadcast, inside math): 500 B, no device time; group C (contiguous, layout): 8000 B 3.75 µs,
    as long as A but more bytes; group D (clone, value): 100 B 0.12346 µs.
    All: 5 copies, 12600 B, 7.62346 µs."""
    return [
        HiddenCopy("aten::masked_fill", "aten::copy_", 1000, (250,), DTOD, 2.5, "value", None),
        HiddenCopy("aten::repeat_interleave", "aten::copy_", 500, (125,), None, None, "broadcast", MATH_OP),
        HiddenCopy("aten::masked_fill", "aten::copy_", 3000, (750,), DTOD, 1.25, "value", None),
        HiddenCopy("aten::contiguous", "aten::copy_", 8000, (2000,), DTOD, 3.75, "layout", None),
        HiddenCopy("aten::clone", "aten::copy_", 100, (25,), DTOD, 0.12346, "value", None),
    ]


def _copy_row(op_: str, kind: str, inside: str | None, count: int, nbytes: int, us: float, ev: str | None = DTOD):
    return {"op": op_, "copy_op": "aten::copy_", "device_event": ev, "kind": kind, "inside": inside,
            "count": count, "bytes": nbytes, "time_us": us}  # fmt: skip


def _upcasts() -> tuple[list[Upcast], list[float | None]]:
    """softmax inside math: 4096 B 1.5 µs + 4096 B with no device time; layer_norm: 2048 B 2.0 µs."""
    ups = [
        Upcast("aten::softmax", "bf16", "fp32", (1024,), 4096, inside=MATH_OP),
        Upcast("aten::softmax", "bf16", "fp32", (1024,), 4096, inside=MATH_OP),
        Upcast("aten::layer_norm", "bf16", "fp32", (512,), 2048),
    ]
    return ups, [1.5, None, 2.0]


def test_hidden_copies_grouped_by_cause_most_time_first():
    an = SimpleNamespace(fingerprint=SimpleNamespace(hidden_copies=_copies()))
    assert B.top_copies(an, 3) == {
        "num": 5,
        "bytes": 12600,
        "time_us": 7.623,
        "top": [
            _copy_row("aten::contiguous", "layout", None, 1, 8000, 3.75),  # ties A on time, more bytes
            _copy_row("aten::masked_fill", "value", None, 2, 4000, 3.75),
            _copy_row("aten::clone", "value", None, 1, 100, 0.123),
        ],  # B (no device time: 0) is fourth, past the top 3
    }


def test_upcasts_grouped_by_cause_most_time_first():
    ups, us = _upcasts()
    an = SimpleNamespace(fingerprint=SimpleNamespace(upcasts=ups), upcast_us=us)
    row = {"op": "aten::layer_norm", "src_dtype": "bf16", "dst_dtype": "fp32", "inside": None}
    assert B.top_upcasts(an, 1) == {
        "num": 3,
        "bytes": 10240,
        "time_us": 3.5,
        "top": [{**row, "count": 1, "bytes": 2048, "time_us": 2.0}],  # softmax's group: 1.5 + 0
    }
    assert B.top_upcasts(an, 5)["top"][1] == {
        "op": "aten::softmax",
        "src_dtype": "bf16",
        "dst_dtype": "fp32",
        "inside": MATH_OP,
        "count": 2,
        "bytes": 8192,
        "time_us": 1.5,
    }


def test_summary_top_limits_copies_and_upcasts():
    tr, an = _cat_trace()
    ups, us = _upcasts()
    an = replace(an, fingerprint=replace(an.fingerprint, hidden_copies=_copies(), upcasts=ups), upcast_us=us)
    s = B.summarize(tr, an, top=1)
    assert s["hidden_copies"]["top"] == [_copy_row("aten::contiguous", "layout", None, 1, 8000, 3.75)]
    assert [u["op"] for u in s["upcasts"]["top"]] == ["aten::layer_norm"]


def test_ranked_totals_round_to_three_decimals():
    """Two groups: ('a',) 1.23456 + 1.0 µs, ('b',) 0.5 µs: group time 2.23456 → 2.235, total 2.73456 → 2.735."""
    items = [(("a",), 1, 1.23456), (("b",), 2, 0.5), (("a",), 4, 1.0)]
    assert B._ranked(items, ("op",), 5) == {
        "num": 3,
        "bytes": 7,
        "time_us": 2.735,
        "top": [
            {"op": "a", "count": 2, "bytes": 5, "time_us": 2.235},
            {"op": "b", "count": 1, "bytes": 2, "time_us": 0.5},
        ],
    }


# ---- a trace without GPU events, the rank --------------------------------------------------------------


def test_summary_of_a_trace_without_gpu_events():
    """Two CPU ops, no GPU event, no runtime call; Kineto's distributedInfo says rank 3."""
    tr, an = _analysed([op("aten::relu", 0, 10, 1), op("aten::add", 20, 5, 2)], distributedInfo={"rank": 3})
    empty = {"num": 0, "bytes": 0, "time_us": 0, "top": []}
    assert B.summarize(tr, an) == {
        "rank": 3,
        "num_events": 2,
        "num_skipped_events": 0,
        "num_cpu_ops": 2,
        "num_gpu_events": 0,
        "gpu_time_us": 0,
        "categories": [_zero_row(c) for c in CATS],
        "attention_families": [],
        "top_kernels": [],
        "top_ops": [],
        "attribution": {"correlation": 0, "time": 0, "external_id": 0, "none": 0},
        "launch": {
            "runtime_calls": [],
            "runtime_total_us": 0,
            "num_linked_gpu_events": 0,
            "launch_to_start_us": {
                "num": 0,
                "total_us": 0,
                "mean_us": None,
                "p50_us": None,
                "p95_us": None,
                "max_us": None,
            },
            "num_shorter_than_launch": 0,
        },
        "idle": None,
        "hidden_copies": empty,
        "upcasts": empty,
    }


# ---- the per-event lists must line up --------------------------------------------------------------------


def _misaligned_calls():
    tr, an = _cat_trace()
    att = an.attribution
    fams = B.kernel_families(att)
    cats = B._categories_of(att)
    ups, us = _upcasts()
    return {
        "kernel_families": lambda: B.kernel_families(replace(att, launcher=att.launcher[:-1])),
        "categories": lambda: B.categories(att, 5.0, cats[:-1]),
        "families": lambda: B.families(att, fams[:-1], 5.0, 5),
        "top_kernels": lambda: B.top_kernels(att, fams[:-1], 5.0, 5),
        "top_ops": lambda: B.top_ops(att, 5.0, 5, cats[:-1]),
        "launch_stats": lambda: B.launch_stats(replace(att, runtime=att.runtime[:-1]), tr, None),
        "top_upcasts": lambda: B.top_upcasts(
            SimpleNamespace(fingerprint=SimpleNamespace(upcasts=ups), upcast_us=us[:-1]), 5
        ),
        "_ranked": lambda: B._ranked([(("a", "b"), 1, 1.0)], ("op",), 5),
    }


@pytest.mark.parametrize("name", list(_misaligned_calls()))
def test_lists_that_do_not_line_up_are_refused(name):
    """One list shorter than the one it pairs with is an error, never a silently shortened summary."""
    with pytest.raises(ValueError, match=r"zip\(\) argument \d is (shorter|longer)"):
        _misaligned_calls()[name]()
