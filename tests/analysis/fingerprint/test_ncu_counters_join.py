"""--ncu: the counters decide a profiled kernel's tensor cores, and the output says what ncu measured.

Inputs are hand-made: two kernels whose name-table verdicts are known (a flash kernel: tensor cores by
name; compiled flex in fp32: unknown by name and dtype) and ncu entries as ``ncu.join`` writes them."""

from __future__ import annotations

import io
from dataclasses import replace

from rich.console import Console

from attnscope.analysis.fingerprint.counters import COUNTERS_SOURCE, tensor_cores_from_counters
from attnscope.core.types import Fingerprint, KernelRecord
from attnscope.report.text.table import ncu_lines, ncu_table


def _fp(*ks: KernelRecord) -> Fingerprint:
    return Fingerprint(
        kernels=ks, num_kernels=len(ks), num_memcpy=0, num_memset=0, hidden_copies=(), upcasts=(),
        mask_rebuilt=False, mask_ops=(), sdpa_backend=None, device_kind="gpu", device_name="NVIDIA H200",
        compute_capability=(9, 0), trace_gpu_time_us=None, trace_cpu_time_us=None, trace_peak_memory_bytes=None,
    )  # fmt: skip


FLASH = KernelRecord("pytorch_flash::flash_fwd_kernel", "attention", 160.0, tensor_cores=True)
FLEX32 = KernelRecord("triton_tem_fused_flex_attention_0", "attention", 900.0, tensor_cores=None, input_dtype="fp32")
MEMSET = KernelRecord("Memset (Device)", "memset", 0.7, tensor_cores=False)


def test_counters_replace_the_name_table_and_each_difference_is_listed() -> None:
    fp = _fp(MEMSET, FLASH, FLEX32)
    joined = [
        {"trace_kernel": 1, "tensor_cores": True, "tensor_cores_why": "HMMA: 8,912,896 matrix MMA instructions"},
        {"trace_kernel": 2, "tensor_cores": False, "tensor_cores_why": "no matrix MMA instructions (HMMA 64 ...)"},
    ]
    out, differ = tensor_cores_from_counters(fp, joined)
    assert [k.tensor_cores for k in out.kernels] == [False, True, False]
    assert out.kernels[0] is MEMSET and out.kernels[1] == FLASH  # agreeing kernels are unchanged
    assert differ == [
        {
            "kernel": "triton_tem_fused_flex_attention_0",
            "trace_kernel": 2,
            "name_table": None,
            "name_table_precision": None,
            "counters": False,
            "counters_precision": None,
            "why": "no matrix MMA instructions (HMMA 64 ...)",
        }
    ]
    assert out.tensor_cores is True  # the row's verdict: any matrix kernel on tensor cores
    assert "HFMA2.MMA" in COUNTERS_SOURCE


def test_tf32_from_the_counters_and_what_counters_cannot_tell() -> None:
    f32 = KernelRecord("fmha_cutlassF_f32_aligned_64x64_rf_sm80", "attention", 50.0, tensor_cores=None)
    joined = [
        {"trace_kernel": 0, "tensor_cores": True, "tensor_cores_why": "HMMA on fp32 inputs: TF32: 2,116,608 ..."},
        {"trace_kernel": 1, "tensor_cores": None, "tensor_cores_why": "tensor-pipe counters not collected"},
        {"trace_kernel": None, "tensor_cores": False},  # ncu saw a kernel the trace did not
        {"trace_kernel": 7, "tensor_cores": False},  # out of range: never applied
    ]
    out, differ = tensor_cores_from_counters(_fp(f32, FLASH), joined)
    assert out.kernels[0].tensor_cores is True and out.kernels[0].tensor_core_precision == "TF32"
    assert out.kernels[1] == FLASH  # no verdict from the counters: the name table's stays
    assert [d["trace_kernel"] for d in differ] == [0]
    # a TF32 verdict of the name table dropped when the counters see no MMA at all
    tf = replace(f32, tensor_cores=True, tensor_core_precision="TF32")
    out, differ = tensor_cores_from_counters(_fp(tf), [{"trace_kernel": 0, "tensor_cores": False}])
    assert (out.kernels[0].tensor_cores, out.kernels[0].tensor_core_precision) == (False, None)
    assert differ[0]["name_table_precision"] == "TF32" and differ[0]["counters_precision"] is None


def test_an_unmatched_entry_never_stops_the_rest_and_the_last_index_is_out_of_range() -> None:
    fp = _fp(MEMSET, FLASH, FLEX32)
    joined = [
        {"trace_kernel": None, "tensor_cores": True},  # first: the kernels after it must still be read
        {"trace_kernel": 3, "tensor_cores": True},  # == len(kernels): one past the end
        {"trace_kernel": 2, "tensor_cores": False, "tensor_cores_why": "no matrix MMA"},
    ]
    out, differ = tensor_cores_from_counters(fp, joined)
    assert [k.tensor_cores for k in out.kernels] == [False, True, False]
    assert [d["trace_kernel"] for d in differ] == [2]


def _doc() -> dict:
    deep = {
        "trace_kernel": 0,
        "name": "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4>>(Params)",
        "tensor_cores": True,
        "achieved_occupancy_pct": 11.93,
        "theoretical_occupancy_pct": 12.5,
        "sm_throughput_pct": 40.32,
        "memory_throughput_pct": 32.96,
        "tensor_pipe_pct": 44.95,
        "dram_read_bytes": 50700032.0,
        "dram_write_bytes": 13396480.0,
        "l2_hit_rate_pct": 79.42,
        "duration_ns": 211648.0,
        "top_stalls": [
            {"reason": "wait", "warps_per_issue": 1.04},
            {"reason": "not_selected", "warps_per_issue": 0.43},
        ],
    }
    flash = {"variant": "sdpa_flash", "status": "ok", "ncu": {"status": "ok", "kernels": [deep]}}
    flash["ncu"]["name_table_disagrees"] = [
        {"kernel": "void triton_x", "name_table": None, "counters": False, "why": "no matrix MMA instructions"}
    ]
    cudnn = {"variant": "sdpa_cudnn", "status": "ok", "ncu": {"status": "unavailable", "reason": "did not run"}}
    plain = {"variant": "naive", "status": "ok", "ncu": {}}
    return {"results": [flash, cudnn, plain]}


def test_the_ncu_table_shows_every_number_as_ncu_gave_it() -> None:
    t = ncu_table(_doc())
    assert t is not None
    buf = io.StringIO()
    Console(file=buf, width=250).print(t)
    text = buf.getvalue()
    # 50,700,032 B = 50.7 MB; 13,396,480 B = 13.4 MB; 211,648 ns = 211.6 µs; SM 40.32 %, memory 32.96 %
    for cell in ("11.9/12.5", "40/33", "45.0", "50.7/13.4", "79.4", "wait 1.04", "211.6"):
        assert cell in text, cell
    assert "not_selected" not in text  # the top stall only; the JSON keeps three
    assert "sdpa_cudnn" not in text and "naive" not in text
    assert ncu_table({"results": [{"variant": "naive", "status": "ok"}]}) is None


def test_the_table_keeps_each_variants_longest_kernels_and_says_tf32() -> None:
    ks = [
        {"trace_kernel": i, "name": f"k{i}", "tensor_cores": i == 0, "duration_ns": 1000.0 * (i + 1)} for i in range(5)
    ]
    ks[0]["tensor_cores_why"] = "HMMA on fp32 inputs: TF32: 12 matrix MMA instructions"
    ks[0]["duration_ns"] = 9000.0
    doc = {"results": [{"variant": "v", "status": "ok", "ncu": {"status": "ok", "kernels": ks}}]}
    t = ncu_table(doc)
    assert t is not None
    buf = io.StringIO()
    Console(file=buf, width=250).print(t)
    text = buf.getvalue()
    assert "v (5)" in text and "TF32" in text  # five profiled, three shown: k0 (9 µs), k4 (5 µs), k3 (4 µs)
    assert all(f" k{i} " in text for i in (0, 4, 3)) and " k1 " not in text and " k2 " not in text


def test_the_footnotes_say_how_ncu_measured_where_it_overrode_and_what_it_missed() -> None:
    ok = _doc()["results"]
    lines = ncu_lines(ok)
    assert lines[0].startswith("Nsight Compute (--ncu): each variant's call once more under ncu")
    assert "its µs is not the run's timing" in lines[0]
    assert "sdpa_cudnn: no Nsight Compute data: did not run" in lines
    assert (
        "sdpa_flash: triton_x: the name table said unknown, the counters no tensor cores (no matrix MMA instructions)"
        in lines
    )
    assert ncu_lines([{"variant": "naive", "status": "ok"}]) == []
    # one line per reason, naming every variant it holds for, in order
    gone = {"status": "unavailable", "reason": "ncu (Nsight Compute) is not on the PATH"}
    rows = [{"variant": v, "status": "ok", "ncu": dict(gone)} for v in ("naive", "sdpa_flash")]
    rows.append({"variant": "flex", "status": "ok", "ncu": {"status": "unavailable", "reason": "other"}})
    assert ncu_lines(rows) == [
        "naive, sdpa_flash: no Nsight Compute data: ncu (Nsight Compute) is not on the PATH",
        "flex: no Nsight Compute data: other",
    ]
