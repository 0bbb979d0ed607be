"""Tensor cores from evidence: the kernel-name table against Nsight Compute's counters on the H200.

tests/data/ncu/h200_tensor_pipe.csv is ``ncu --csv --page raw`` (columns trimmed to the counters)
of every kernel attnscope's variants launched in bf16, fp16 and fp32, forward and backward
(benchmarks/gpu/ncu_tc.sh); h200_tensor_pipe_sections.json says which section each kernel is in
(the k-th spin_kernel opens the k-th section).  Matrix MMA is computed here from the raw columns:
HMMA minus HFMA2.MMA (an elementwise half FMA issued to the tensor pipe); on this GPU the HMMA
counter already includes wgmma (nvjet kernels show HMMA == GMMA).
"""

from __future__ import annotations

import csv
import json
from functools import cache
from typing import Any

from attnscope.analysis.fingerprint import kernels as K
from attnscope.measure import ncu
from tests.rawtrace import DATA

CSV = DATA / "ncu" / "h200_tensor_pipe.csv"
SECTIONS = DATA / "ncu" / "h200_tensor_pipe_sections.json"
# The second pass (benchmarks/gpu/ncu_tc.sh rest): compiled flex in bf16, fp16 and fp32, efficient at
# S777 D128, and a decode shape (Sq 1, Sk 8192) through flash, efficient and cuDNN, forward and backward.
REST_CSV = DATA / "ncu" / "h200_tensor_pipe_rest.csv"
REST_SECTIONS = DATA / "ncu" / "h200_tensor_pipe_rest_sections.json"


def _num(s: str) -> float:
    return float(s.replace(",", "")) if s.strip() else 0.0


@cache
def kernels(csv_path: Any = CSV, sections_path: Any = SECTIONS) -> list[dict[str, Any]]:
    """Label, dtype, name and the three counters per kernel, read with the csv module alone."""
    rows = list(csv.reader(csv_path.open()))
    c = {h: i for i, h in enumerate(rows[0])}
    sections = {
        s["marker"]: s for s in json.loads(sections_path.read_text())["sections"] if s.get("marker") is not None
    }
    out, marker = [], -1
    for r in rows[2:]:
        name = r[c["Kernel Name"]]
        if "spin_kernel" in name:  # the k-th marker opens section k
            marker += 1
            continue
        s = sections[marker]
        out.append(
            {
                "name": name,
                "label": s["label"],
                "direction": s["direction"],
                "dtype": s["case"]["dtype"],
                "hmma": _num(r[c["sm__inst_executed_pipe_tensor_op_hmma.sum"]]),
                "hfma2": _num(r[c["sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum"]]),
                "gmma": _num(r[c["sm__inst_executed_pipe_tensor_op_gmma.sum"]]),
            }
        )
    return out


def test_the_recording_covers_every_variant_in_three_dtypes() -> None:
    ks = kernels()
    labels = {k["label"].split()[0] + " " + k["dtype"] + " " + k["direction"] for k in ks}
    for v in ("naive", "sdpa_math", "sdpa_efficient", "flex", "sdpa_default"):
        for dt in ("bf16", "fp16", "fp32"):
            for d in ("fwd", "bwd"):
                assert f"{v} {dt} {d}" in labels
    for v in ("sdpa_flash", "sdpa_cudnn"):  # no fp32 kernels: torch refuses fp32 for both
        assert {f"{v} bf16 fwd", f"{v} fp16 bwd"} <= labels
    assert len(ks) > 400


def test_hmma_counter_includes_wgmma_on_this_gpu() -> None:
    nvjet = [k for k in kernels() if k["name"].startswith("nvjet_sm90")]
    assert nvjet and all(k["hmma"] == k["gmma"] > 0 for k in nvjet)


def test_every_kernel_agrees_with_the_counters() -> None:
    wrong = []
    for k in kernels():
        matrix = k["hmma"] - k["hfma2"]
        cat = K.classify_gpu(k["name"])
        verdict = K.tensor_cores(k["name"], cat)
        # matrix kernels: the table must match the counters; others: not matrix work, no matrix MMA
        ok = verdict is (matrix > 0) if cat in ("gemm", "attention") else (verdict in (False, None) and matrix == 0)
        if not ok:
            wrong.append((k["label"], k["direction"], k["name"][:90], cat, verdict, matrix))
    assert not wrong, wrong


def test_the_rows_the_counters_corrected() -> None:
    by = {}
    for k in kernels():
        by.setdefault(k["name"].split("<")[0].split("(")[0].removeprefix("void "), []).append(k)
    # fp32 memory-efficient attention runs TF32 MMA (forward and backward)
    for n in ("fmha_cutlassF_f32_aligned_64x64_rf_sm80", "fmha_cutlassB_f32_aligned_64x64_k64_sm80"):
        (k, *_) = by[n]
        assert k["hmma"] - k["hfma2"] > 0 and k["dtype"] == "fp32"
        assert K.tensor_cores(k["name"], "attention") is True
        assert K.tensor_core_precision(k["name"], "attention") == "TF32"
    # flash's split-KV combine, dO·O and dQ-convert helpers issue no matrix MMA (only HFMA2.MMA at most)
    for n in ("pytorch_flash::flash_fwd_splitkv_combine_kernel", "pytorch_flash::flash_bwd_dot_do_o_kernel"):
        for k in by[n]:
            assert k["hmma"] == k["hfma2"]
            assert K.tensor_cores(k["name"], K.classify_gpu(k["name"])) is False
    # triu_tril (the math backend's mask) shows tensor-pipe instructions, all HFMA2.MMA
    tri = by["native::triu_tril_kernel"]
    assert all(k["hmma"] > 0 and k["hmma"] == k["hfma2"] for k in tri)
    assert K.tensor_cores(tri[0]["name"], K.classify_gpu(tri[0]["name"])) is False
    # 16-bit kernels are not TF32
    assert K.tensor_core_precision(by["fmha_cutlassF_bf16_aligned_64x64_rf_sm80"][0]["name"], "attention") is None


def test_parser_reads_the_same_counts() -> None:
    parsed = [k for k in ncu.parse_raw_csv(CSV.read_text()) if "spin_kernel" not in k.name]
    ks = kernels()
    assert len(parsed) == len(ks)
    for p, k in zip(parsed, ks, strict=True):
        assert p.get(ncu.HMMA) == k["hmma"] and p.get(ncu.HFMA2_MMA) == k["hfma2"]
        assert ncu.matrix_mma(p) == k["hmma"] - k["hfma2"]


def test_deep_csv_parsed_values_read_by_hand() -> None:
    # tests/data/ncu/h200_deep.csv, the flash forward row at B4 H16 S2048 D64 bf16 causal, read by hand:
    # sm__warps_active...pct 11.85, sm__maximum_warps_per_active_cycle_pct 12.5, dram__bytes_read 50,513,664,
    # lts__t_sector_hit_rate.pct 79.5, gpu__time_duration 157,472 ns; largest stall 'wait' 1.04 warps per issue.
    ks = ncu.parse_raw_csv((DATA / "ncu" / "h200_deep.csv").read_text())
    assert [k.name.split("<")[0].removeprefix("void ")[:22] for k in ks] == [
        "pytorch_flash::flash_f",
        "cudnn_generated_fort_n",
        "fmha_cutlassF_bf16_ali",
        "triton_tem_fused_flex_",
    ]
    d = ncu.deep_fields(ks[0])
    assert d["achieved_occupancy_pct"] == 11.85 and d["theoretical_occupancy_pct"] == 12.5
    assert d["dram_read_bytes"] == 50_513_664 and d["l2_hit_rate_pct"] == 79.5 and d["duration_ns"] == 157_472
    assert d["top_stalls"][0] == {"reason": "wait", "warps_per_issue": 1.04}
    assert all(s["reason"] != "selected" for s in d["top_stalls"])
    # the cuDNN row (the second), read by hand: launch__grid_size 132, sm__cycles_active.avg 150,243.14 and .max
    # 170,725: the mean SM was busy 150,243.14 / 170,725 = 88.0% of the busiest one's cycles
    c = ncu.deep_fields(ks[1])
    assert c["grid_size"] == 132 and c["sm_active_cycles_avg"] == 150_243.14 and c["sm_active_cycles_max"] == 170_725
    assert c["sm_balance_pct"] == 88.0


def rest() -> list[dict[str, Any]]:
    return kernels(REST_CSV, REST_SECTIONS)


def test_the_second_pass_covers_compiled_flex_decode_and_d128() -> None:
    labels = {(k["label"], k["direction"]) for k in rest()}
    for dt in ("bf16", "fp16", "fp32"):
        for d in ("fwd", "bwd"):
            assert (f"flex_compiled {dt} B1 H4 S512 D64 causal", d) in labels
    for v in ("sdpa_flash", "sdpa_efficient", "sdpa_cudnn"):
        assert (f"{v} bf16 decode Sq1 Sk8192 D128", "fwd") in labels
    assert ("sdpa_efficient fp32 B1 H4 S777 D128", "bwd") in labels


def test_every_kernel_of_the_second_pass_agrees_with_the_counters_given_its_dtype() -> None:
    wrong, by_dtype_rule = [], []
    for k in rest():
        matrix = k["hmma"] - k["hfma2"] + (k["gmma"] if k["gmma"] > k["hmma"] - k["hfma2"] else 0)
        cat = K.classify_gpu(k["name"])
        verdict = K.tensor_cores_for_dtype(k["name"], cat, k["dtype"])
        if verdict is None and K.is_matrix_kernel(k["name"], cat):
            # unknown only where the dtype rule says a flag the trace lacks decides; here (default flags) no MMA
            by_dtype_rule.append((k["name"], k["dtype"], matrix))
            continue
        ok = verdict is (matrix > 0) if cat in ("gemm", "attention") else (verdict in (False, None) and matrix == 0)
        if not ok:
            wrong.append((k["label"], k["direction"], k["name"][:90], cat, verdict, matrix))
    assert not wrong, wrong
    assert by_dtype_rule and all(d == "fp32" and m == 0 and "flex_attention" in n for n, d, m in by_dtype_rule)


def test_compiled_flex_in_fp32_runs_no_matrix_mma_and_is_not_called_tensor_core() -> None:
    fp32 = [k for k in rest() if k["label"].startswith("flex_compiled fp32") and "triton_tem" in k["name"]]
    assert {k["direction"] for k in fp32} == {"fwd", "bwd"}
    for k in fp32:
        assert k["hmma"] == k["hfma2"] and k["gmma"] == 0  # HFMA2.MMA at most: IEEE fp32 FMA, no MMA
        assert K.tensor_cores(k["name"], "attention") is True  # the name alone cannot tell
        assert K.tensor_cores_for_dtype(k["name"], "attention", "fp32") is None  # the dtype rule: unknown
    for dt in ("bf16", "fp16"):  # 16-bit compiled flex issues wgmma (GMMA), forward and backward
        ks = [k for k in rest() if k["label"].startswith(f"flex_compiled {dt}") and "triton_tem" in k["name"]]
        assert len(ks) == 2 and all(k["gmma"] > 0 for k in ks)
        assert all(K.tensor_cores_for_dtype(k["name"], "attention", dt) is True for k in ks)


def test_decode_split_kv_and_cudnn_helpers_from_the_counters() -> None:
    by = {}
    for k in rest():
        by.setdefault((k["label"].split()[0], k["name"].split("<")[0].split("(")[0].removeprefix("void ")), k)
    split = by[("sdpa_flash", "pytorch_flash::flash_fwd_splitkv_kernel")]
    combine = by[("sdpa_flash", "pytorch_flash::flash_fwd_splitkv_combine_kernel")]
    assert split["hmma"] - split["hfma2"] > 0 and K.tensor_cores(split["name"], "attention") is True
    assert combine["hmma"] == combine["hfma2"] and K.tensor_cores(combine["name"], "attention") is False
    # cuDNN at decode picks an sm80 kernel (wmma, HMMA) forward and an sm90 wgmma one backward
    fwd = next(k for (v, n), k in by.items() if v == "sdpa_cudnn" and "fprop_wmma" in n)
    bwd = next(k for (v, n), k in by.items() if v == "sdpa_cudnn" and "bprop_wgmma" in n)
    assert fwd["hmma"] > 0 and fwd["gmma"] == 0 and bwd["gmma"] > 0
    assert K.tensor_cores(fwd["name"], "attention") is K.tensor_cores(bwd["name"], "attention") is True
    lean = next(k for (v, n), k in by.items() if "lean_reduction" in n)
    assert lean["hmma"] == lean["hfma2"]  # elementwise merge of the partial outputs: no MMA
