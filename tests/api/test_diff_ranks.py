"""attnscope diff (documents and traces, renames, thresholds) and several ranks in one analyze."""

from __future__ import annotations

import copy
import json
import shutil

from attnscope.api.diff import diff, kernel_changes
from attnscope.cli.main import main
from tests.rawtrace import H200, raw_events, raw_gpu_events_in_call


def _result(variant, gpu, cpu, kernels, **kw):
    r = {"variant": variant, "status": "ok", "gpu_time_us": gpu, "cpu_time_us": cpu, "peak_memory_bytes": None}
    r["kernels"] = [{"name": n, "category": c, "duration_us": d, "launched_by": op} for n, c, d, op in kernels]
    r.update(kw)
    return r


def _doc(*results):
    return {"schema_version": 1, "tool": "attnscope", "env": None, "results": list(results)}


A_KERNELS = [
    ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", "gemm", 50.0, "aten::mm"),
    ("softmax_warp_forward<float>", "softmax", 20.0, "aten::_softmax"),
    ("Memcpy DtoD (Device -> Device)", "memcpy", 30.0, "aten::copy_"),
]
B_KERNELS = [
    ("nvjet_sm90_tst_192x192_64x3_1x2_h_bz_coopB_NNT", "gemm", 45.0, "aten::mm"),  # same GEMM, new tile: renamed
    ("softmax_warp_forward<float>", "softmax", 20.0, "aten::_softmax"),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop", "attention", 10.0, "aten::_cudnn_attention_forward"),
]


def test_kernel_changes_find_added_removed_and_renamed():
    k = kernel_changes(_result("v", 1, 1, A_KERNELS), _result("v", 1, 1, B_KERNELS))
    assert [r["from"][:18] for r in k["renamed"]] == ["nvjet_sm90_tst_256"]
    assert [a["name"][:5] for a in k["added"]] == ["cudnn"]
    assert [r["name"][:6] for r in k["removed"]] == ["Memcpy"]


def test_threshold_flags_only_growth_beyond_it():
    a = _doc(_result("flash", 100.0, 50.0, A_KERNELS), _result("naive", 200.0, 80.0, A_KERNELS))
    b = _doc(_result("flash", 104.0, 70.0, A_KERNELS), _result("naive", 150.0, 80.0, A_KERNELS))
    d = diff(a, b, threshold_pct=5.0)
    assert [(r["variant"], r["metric"]) for r in d["regressions"]] == [("flash", "cpu_time_us")]
    assert diff(a, b, threshold_pct=5.0, metrics=("gpu",))["regressions"] == []
    assert diff(a, b)["regressions"] == []  # no threshold, no gate
    (naive,) = [v for v in d["variants"] if v["variant"] == "naive"]
    assert naive["gpu_time_us"]["delta_pct"] == -25.0


def test_flags_and_unpaired_variants_are_reported():
    a = _doc(_result("x", 1, 1, [], upcast_fp32=True, sdpa_backend="math"), _result("old", 1, 1, []))
    b = _doc(_result("x", 1, 1, [], upcast_fp32=False, sdpa_backend="cudnn"), _result("new", 1, 1, []))
    d = diff(a, b)
    (v,) = d["variants"]
    assert v["flags"]["upcast_fp32"] == {"a": True, "b": False} and v["flags"]["sdpa_backend"]["b"] == "cudnn"
    assert d["only_in_a"] == ["old"] and d["only_in_b"] == ["new"]


def test_diff_cli_exit_status_is_the_ci_gate(tmp_path, capsys):
    a = _doc(_result("flash", 100.0, 50.0, A_KERNELS))
    b = copy.deepcopy(a)
    b["results"][0]["gpu_time_us"] = 130.0
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(json.dumps(a))
    pb.write_text(json.dumps(b))
    assert main(["diff", str(pa), str(pb), "--threshold", "10"]) == 1
    assert "+30.0% > 10%" in capsys.readouterr().out
    assert main(["diff", str(pa), str(pb), "--threshold", "50"]) == 0
    assert main(["diff", str(pa), str(pb)]) == 0
    assert main(["diff", str(pa), str(tmp_path / "missing.json")]) == 2
    assert "missing.json: no such file" in capsys.readouterr().err


def test_diff_of_two_traces_sees_the_memcpy_go(tmp_path):
    out = tmp_path / "d.json"
    assert main(["diff", str(H200 / "naive.json"), str(H200 / "naive_inplace.json"), "--json", str(out)]) == 0
    d = json.loads(out.read_text())
    (v,) = d["variants"]
    removed = {k["name"] for k in v["kernels"]["removed"]}
    raw_a = {e["name"] for e in raw_gpu_events_in_call(raw_events(H200 / "naive.json"))}
    raw_b = {e["name"] for e in raw_gpu_events_in_call(raw_events(H200 / "naive_inplace.json"))}
    renamed_from = {k["from"] for k in v["kernels"]["renamed"]}
    assert removed | renamed_from == raw_a - raw_b and "Memcpy DtoD (Device -> Device)" in removed
    assert v["flags"]["num_memcpy"] == {"a": 1, "b": 0}


def test_a_directory_of_ranks_is_analysed_in_parallel_and_summarised(tmp_path):
    ranks = tmp_path / "job"
    ranks.mkdir()
    for i, v in enumerate(["sdpa_flash", "sdpa_cudnn", "naive"]):
        shutil.copy(H200 / f"{v}.json", ranks / f"worker_rank{i}.json")
    (ranks / "notes.txt").write_text("not a trace")
    out = tmp_path / "o.json"
    assert main(["analyze", str(ranks), "--json", str(out), "--jobs", "2"]) == 0
    doc = json.loads(out.read_text())
    assert [r["trace_summary"]["rank"] for r in doc["results"]] == [0, 1, 2]
    o = doc["overall"]
    assert o["num_ranks"] == 3 and [p["rank"] for p in o["per_rank"]] == [0, 1, 2]
    assert o["ranks_known"] is True and o["rank_sources"] == ["file name"]
    raw_n = [len(raw_gpu_events_in_call(raw_events(H200 / f"{v}.json"))) for v in ["sdpa_flash", "sdpa_cudnn", "naive"]]
    assert [p["num_gpu_events"] for p in o["per_rank"]] == raw_n
    assert sum(c["num_kernels"] for c in o["categories"]) == sum(raw_n)
    busy = [p["busy_us"] for p in o["per_rank"]]
    assert o["busy_us"]["max"] == max(busy) and o["busy_us"]["max_rank"] == busy.index(max(busy))


def test_diff_says_when_case_or_environment_differ():
    a = _doc(_result("naive", 100.0, 10.0, A_KERNELS))
    b = _doc(_result("naive", 100.0, 10.0, A_KERNELS))
    assert diff(a, b)["context_changes"] == []
    a["case"], b["case"] = {"seq_q": 512, "dtype": "bf16"}, {"seq_q": 2048, "dtype": "bf16"}
    a["env"], b["env"] = {"torch": "2.11.0", "device_name": "NVIDIA H200"}, {"torch": "2.13.0", "device_name": None}
    assert diff(a, b)["context_changes"] == [
        "case seq_q: 512 → 2048",
        "env torch: 2.11.0 → 2.13.0",
        "env device_name: NVIDIA H200 → None",
    ]


def test_traces_without_a_rank_are_not_called_ranks(tmp_path, capsys):
    # neither the traces (no distributedInfo) nor their names say a rank: numbered by position, and said so
    names = ["sdpa_flash.json", "sdpa_cudnn.json"]
    for n in names:
        assert "distributedInfo" not in json.loads((H200 / n).read_text())
    out = tmp_path / "o.json"
    assert main(["analyze", *(str(H200 / n) for n in names), "--json", str(out)]) == 0
    o = json.loads(out.read_text())["overall"]
    assert o["ranks_known"] is False and o["rank_sources"] == ["position on the command line"]
    text = capsys.readouterr().out
    assert "2 traces (no rank" in text and "2 ranks" not in text and "(rank 0)" not in text
    assert "load imbalance only if these are ranks" in text
