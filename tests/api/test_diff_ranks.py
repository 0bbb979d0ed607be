"""attnscope diff (documents and traces, renames, thresholds) and several ranks in one analyze."""

from __future__ import annotations

import copy
import gzip
import json
import shutil

import pytest

from attnscope.api.diff import _norm, compare_results, context_changes, diff, kernel_changes, load_side, pair
from attnscope.cli.main import main
from attnscope.document.load import head
from attnscope.document.schema import DocumentError
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
        "env device_name: NVIDIA H200 → —",
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


# attnscope diff, pinned value by value: every expected number below is worked out by hand in the test
# or its docstring from the input the test builds, never by calling the function under test.


def _k(name, category, duration, op=None):
    return {"name": name, "category": category, "duration_us": duration, "launched_by": op}


def _r(variant="v", kernels=(), **kw):
    r = {"variant": variant, "status": "ok", "kernels": list(kernels)}
    r.update(kw)
    return r


def _doc_s(*results, **top):
    return {"schema_version": 1, "tool": "attnscope", "env": None, "results": list(results), **top}


# ---------------------------------------------------------------- load_side (document.load reads the file)


def test_load_side_of_a_directory_says_not_a_file(tmp_path):
    with pytest.raises(DocumentError, match=r": a directory: name a result file or a trace in it$"):
        load_side(tmp_path)
    with pytest.raises(DocumentError, match=r"nope\.json: no such file$"):
        load_side(tmp_path / "nope.json")


CPU_ONLY_TRACE = {
    "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 5, "pid": 1, "tid": 1}]
}


def test_load_side_analyses_a_trace_without_gpu_events(tmp_path):
    """A trace of one CPU op and no kernel is still analysed (the GPU is not required): one result, named
    after the file stem 't', its one op (aten::mm, recorded without shapes: a leaf compute op) the unit of work,
    and no env (a trace has none)."""
    p = tmp_path / "t.json"
    p.write_text(json.dumps(CPU_ONLY_TRACE))
    doc = load_side(p)
    assert doc["env"] is None
    (r,) = doc["results"]
    assert r["variant"] == "t" and [(k["name"], k["device"]) for k in r["kernels"]] == [("aten::mm", "cpu")]


def test_load_side_takes_a_gz_name_as_a_trace_even_when_its_head_lacks_trace_events(tmp_path):
    """70,000 characters of padding come before "traceEvents", beyond the 64 KiB (65,536 bytes) head: only
    the ".gz" name says it is a trace.  Read as a result document it would fail (not valid JSON)."""
    p = tmp_path / "p.json.gz"
    p.write_bytes(gzip.compress(json.dumps({"padding": "x" * 70_000, **CPU_ONLY_TRACE}).encode()))
    assert b'"traceEvents"' not in head(p)
    (r,) = load_side(p)["results"]
    assert r["variant"] == "p" and [k["name"] for k in r["kernels"]] == ["aten::mm"]


# ---------------------------------------------------------------- _norm


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("k<a<b>>(int)", "k"),  # parameters cut, then <b>, then <a>
        ("sm90_k<8>", "sm#_k"),  # template cut, digits become #
        ("void f<T<1>, 2>(float*, int)", "void f"),
        ("plain_kernel", "plain_kernel"),
        ("gemm_128x64", "gemm_#x#"),
        ("a<b<c>", "a<b"),  # unbalanced: <c> goes, then no <...> pair is left
    ],
)
def test_norm_blanks_templates_parameters_and_numbers(name, expected):
    assert _norm(name) == expected


# ---------------------------------------------------------------- kernel_changes


def test_kernel_changes_exact_lists_orders_counts_and_times():
    """A: alpha (removed, 10 us), beta (removed, 20 us + 1.23456 us over two launches), mm_shared
    (3 launches, 5 us each), same (1 launch), zero (duration None).
    B: mm_shared 1 launch, same 1 launch, zero (None), gamma (added, 1.23456 us), zeta (added, 30 us).
    Names, categories and launchers are all distinct, so nothing pairs as a rename.

    removed by time descending: beta 21.23456 -> 21.235, then alpha 10.0 (alphabetical order is the reverse).
    added by time descending: zeta 30.0, then gamma round(1.23456, 3) = 1.235 (alphabetical order is the reverse).
    count_changed: mm_shared 3 -> 1 only (same 1 -> 1 and zero 1 -> 1 unchanged; removed kernels not listed).
    """
    a = _r(
        kernels=[
            _k("alpha", "c_alpha", 10.0, "op::alpha"),
            _k("beta", "c_beta", 20.0, "op::beta"),
            _k("beta", "c_beta", 1.23456, "op::beta"),
            _k("mm_shared", "gemm", 5.0, "aten::mm"),
            _k("mm_shared", "gemm", 5.0, "aten::mm"),
            _k("mm_shared", "gemm", 5.0, "aten::mm"),
            _k("same", "softmax", 2.0, "aten::softmax"),
            _k("zero", "elementwise", None, "aten::add"),
        ]
    )
    b = _r(
        kernels=[
            _k("mm_shared", "gemm", 5.0, "aten::mm"),
            _k("same", "softmax", 2.0, "aten::softmax"),
            _k("zero", "elementwise", None, "aten::add"),
            _k("gamma", "c_gamma", 1.23456, "op::gamma"),
            _k("zeta", "c_zeta", 30.0, "op::zeta"),
        ]
    )
    assert kernel_changes(a, b) == {
        "added": [
            {"name": "zeta", "category": "c_zeta", "count": 1, "time_us": 30.0},
            {"name": "gamma", "category": "c_gamma", "count": 1, "time_us": 1.235},
        ],
        "removed": [
            {"name": "beta", "category": "c_beta", "count": 2, "time_us": 21.235},
            {"name": "alpha", "category": "c_alpha", "count": 1, "time_us": 10.0},
        ],
        "renamed": [],
        "count_changed": [{"name": "mm_shared", "count_a": 3, "count_b": 1}],
    }


def test_count_changed_is_ordered_by_time_in_a_descending():
    """In A: aa 3 x 1 us = 3 us, bb 2 x 4 us = 8 us; in B one launch each.  By A's time: bb (8) then aa (3);
    alphabetical order would put aa first."""
    a = _r(kernels=[_k("aa", "x", 1.0, "o1")] * 3 + [_k("bb", "y", 4.0, "o2")] * 2)
    b = _r(kernels=[_k("aa", "x", 1.0, "o1"), _k("bb", "y", 4.0, "o2")])
    assert kernel_changes(a, b)["count_changed"] == [
        {"name": "bb", "count_a": 2, "count_b": 1},
        {"name": "aa", "count_a": 3, "count_b": 1},
    ]


def test_a_kernel_without_duration_adds_no_time():
    """Removed 'z' launched twice with duration None and 0.0: 0 us in all."""
    a = _r(kernels=[_k("z", "c", None, "o"), _k("z", "c", 0.0, "o")])
    assert kernel_changes(a, _r())["removed"] == [{"name": "z", "category": "c", "count": 2, "time_us": 0.0}]


def test_rename_by_normalised_name_though_launcher_differs():
    """gemm_128x64 and gemm_256x32 both normalise to gemm_#x#: a rename, although one is launched by
    aten::mm and the other by aten::addmm.  Counts 2 -> 3, category of the new one (gemm)."""
    a = _r(kernels=[_k("gemm_128x64", "gemm", 1.0, "aten::mm")] * 2)
    b = _r(kernels=[_k("gemm_256x32", "gemm", 1.0, "aten::addmm")] * 3)
    assert kernel_changes(a, b) == {
        "added": [],
        "removed": [],
        "renamed": [{"from": "gemm_128x64", "to": "gemm_256x32", "category": "gemm", "count_a": 2, "count_b": 3}],
        "count_changed": [],
    }


def test_rename_by_category_and_launcher_when_names_differ():
    """fooA and barB normalise differently but share (category 'attention', launcher 'aten::sdpa')."""
    a = _r(kernels=[_k("fooA", "attention", 1.0, "aten::sdpa")])
    b = _r(kernels=[_k("barB", "attention", 1.0, "aten::sdpa")])
    assert kernel_changes(a, b)["renamed"] == [
        {"from": "fooA", "to": "barB", "category": "attention", "count_a": 1, "count_b": 1}
    ]


def test_same_category_but_other_launcher_is_not_a_rename():
    """fooA (gemm, aten::mm) and barB (gemm, aten::bmm): names normalise apart, launchers differ."""
    a = _r(kernels=[_k("fooA", "gemm", 1.0, "aten::mm")])
    b = _r(kernels=[_k("barB", "gemm", 2.0, "aten::bmm")])
    k = kernel_changes(a, b)
    assert k["renamed"] == []
    assert k["removed"] == [{"name": "fooA", "category": "gemm", "count": 1, "time_us": 1.0}]
    assert k["added"] == [{"name": "barB", "category": "gemm", "count": 1, "time_us": 2.0}]


# ---------------------------------------------------------------- compare_results: deltas, flags, noise


def test_time_and_memory_deltas_exact():
    """gpu 3.0 -> 4.0: delta 1.0, 100 * 1 / 3 = 33.333... -> 33.33.
    cpu 1.0 -> 1.1234: delta 0.1234 -> 0.123 (3 places), 12.34 %.
    peak memory None -> 1000: no delta."""
    a = _r(gpu_time_us=3.0, cpu_time_us=1.0, peak_memory_bytes=None)
    b = _r(gpu_time_us=4.0, cpu_time_us=1.1234, peak_memory_bytes=1000)
    v = compare_results(a, b)
    assert v["gpu_time_us"] == {"a": 3.0, "b": 4.0, "delta": 1.0, "delta_pct": 33.33}
    assert v["cpu_time_us"] == {"a": 1.0, "b": 1.1234, "delta": 0.123, "delta_pct": 12.34}
    assert v["peak_memory_bytes"] == {"a": None, "b": 1000, "delta": None, "delta_pct": None}


def test_peak_memory_delta_and_a_zero_base():
    """Peak 2000 -> 3000 bytes: +1000, +50 %.  GPU 0 -> 5: delta 5, no percentage of zero."""
    a = _r(peak_memory_bytes=2000, gpu_time_us=0.0)
    b = _r(peak_memory_bytes=3000, gpu_time_us=5.0)
    v = compare_results(a, b)
    assert v["peak_memory_bytes"] == {"a": 2000, "b": 3000, "delta": 1000, "delta_pct": 50.0}
    assert v["gpu_time_us"] == {"a": 0.0, "b": 5.0, "delta": 5.0, "delta_pct": None}
    assert v["cpu_time_us"] == {"a": None, "b": None, "delta": None, "delta_pct": None}


def test_equal_flags_are_not_reported_and_differing_ones_are():
    a = _r(status="ok", sdpa_backend="flash", num_kernels=3, device_name="H200")
    b = _r(status="ok", sdpa_backend="cudnn", num_kernels=3, device_name="H200")
    assert compare_results(a, b)["flags"] == {"sdpa_backend": {"a": "flash", "b": "cudnn"}}
    assert compare_results(a, a)["flags"] == {}


def test_hidden_copies_flag_counts_and_sums_bytes():
    """A: two copies, 64 bytes and bytes None (counts as 0): (2, 64).  B: one of 64 bytes: (1, 64)."""
    a = _r(hidden_copies=[{"bytes": 64}, {"bytes": None}])
    b = _r(hidden_copies=[{"bytes": 64}])
    assert compare_results(a, b)["flags"] == {"hidden_copies": {"a": (2, 64), "b": (1, 64)}}


def test_hidden_copies_of_equal_count_but_other_bytes_are_flagged():
    a = _r(hidden_copies=[{"bytes": 100}])
    b = _r(hidden_copies=[{"bytes": 300}])
    assert compare_results(a, b)["flags"] == {"hidden_copies": {"a": (1, 100), "b": (1, 300)}}
    assert compare_results(a, _r(hidden_copies=[{"bytes": 100}]))["flags"] == {}


def test_upcast_count_flag():
    a = _r(upcasts=[{"op": "aten::to"}, {"op": "aten::to"}])
    b = _r(upcasts=None)
    assert compare_results(a, b)["flags"] == {"num_upcasts": {"a": 2, "b": 0}}
    assert compare_results(a, _r(upcasts=[{}, {}]))["flags"] == {}


def test_variant_names_joined_with_an_arrow_when_they_differ():
    assert compare_results(_r("flash"), _r("cudnn"))["variant"] == "flash → cudnn"
    assert compare_results(_r("flash"), _r("flash"))["variant"] == "flash"


@pytest.mark.parametrize(
    ("side", "key", "noisy"),
    [("a", "gpu_time", True), ("b", "cpu_time", True), ("a", "gpu_time", False), ("b", "other", True)],
)
def test_noisy_if_either_side_says_its_gpu_or_cpu_timing_is(side, key, noisy):
    sides = {"a": _r(), "b": _r()}
    sides[side][key] = {"noisy": noisy}
    assert compare_results(sides["a"], sides["b"])["noisy"] is (noisy and key != "other")


# ---------------------------------------------------------------- categories


def _summ(**cats):
    return {"categories": [{"category": c, "time_us": t} for c, t in cats.items()]}


def test_categories_exact():
    """gemm 10 -> 15: +5, +50 %.  memcpy 4 -> (absent, 0.0): -4, -100 %.  idle 0 -> 2: +2, no % of zero.
    none 0 -> 0: left out."""
    a = _r(trace_summary=_summ(gemm=10.0, memcpy=4.0, idle=0.0, none=0.0))
    b = _r(trace_summary=_summ(gemm=15.0, idle=2.0, none=0.0))
    assert compare_results(a, b)["categories"] == [
        {"category": "gemm", "a": 10.0, "b": 15.0, "delta": 5.0, "delta_pct": 50.0},
        {"category": "memcpy", "a": 4.0, "b": 0.0, "delta": -4.0, "delta_pct": -100.0},
        {"category": "idle", "a": 0.0, "b": 2.0, "delta": 2.0, "delta_pct": None},
    ]


def test_a_category_only_b_has_is_listed_after_as_categories():
    """A: gemm 10.  B: gemm 10, copy 3 (a new hidden copy): gemm +0 (0 %), then copy 0 -> 3 (+3, no % of zero)."""
    a = _r(trace_summary=_summ(gemm=10.0))
    b = _r(trace_summary=_summ(gemm=10.0, copy=3.0))
    assert compare_results(a, b)["categories"] == [
        {"category": "gemm", "a": 10.0, "b": 10.0, "delta": 0.0, "delta_pct": 0.0},
        {"category": "copy", "a": 0.0, "b": 3.0, "delta": 3.0, "delta_pct": None},
    ]


@pytest.mark.parametrize("missing", ["a", "b", "both"])
def test_no_categories_unless_both_sides_have_a_summary(missing):
    s = _summ(gemm=1.0)
    a = _r(trace_summary=None if missing in ("a", "both") else s)
    b = _r(trace_summary=None if missing in ("b", "both") else s)
    assert compare_results(a, b)["categories"] == []


# ---------------------------------------------------------------- pair, context, diff


def test_one_result_against_several_pairs_by_name():
    x, y = _r("x"), _r("y")
    assert pair([x], [y, x]) == ([(x, x)], [], ["y"])
    assert pair([y, x], [x]) == ([(x, x)], ["y"], [])
    assert pair([x], [y]) == ([(x, y)], [], [])


def test_context_changes_for_a_case_key_on_one_side_only_and_equal_env():
    env = {"torch": "2.11.0", "cuda": "12.8", "cudnn": 91000, "device_name": "H200", "driver": "570", "host_cores": 16}
    a = _doc_s(case={"seq": 1}, env=env)
    b = _doc_s(case={"seq": 1, "heads": 8}, env=dict(env))
    assert context_changes(a, b) == ["case heads: — → 8"]
    b["env"]["driver"] = "575"
    assert context_changes(a, b) == ["case heads: — → 8", "env driver: 570 → 575"]


def test_context_changes_name_a_library_that_imports_on_one_side_only():
    env = {"torch": "2.11.0", "libraries": {"flashinfer": None, "xformers.ops": "0.0.30"}}
    a = _doc_s(case={"seq": 1}, env=env)
    b = _doc_s(case={"seq": 1}, env={**env, "libraries": {"flashinfer": "0.2.5", "xformers.ops": "0.0.30"}})
    assert context_changes(a, b) == ["env library flashinfer: does not import → 0.2.5"]
    older = _doc_s(case={"seq": 1}, env={"torch": "2.11.0"})  # written before env.libraries: nothing to compare
    assert context_changes(older, b) == []


def test_a_case_on_one_side_only_is_one_line_not_each_field_against_none():
    case = {"batch": 1, "heads": 2, "seq_q": 128, "head_dim": 32, "dtype": "bf16"}
    a, b = _doc_s(case=case), _doc_s()  # b: a trace's document, no case
    assert context_changes(a, b) == [
        "case: only A names one (B is a trace or names none): the cases could not be compared"
    ]
    assert context_changes(b, a) == [
        "case: only B names one (A is a trace or names none): the cases could not be compared"
    ]


def test_diff_carries_both_environments():
    ea, eb = {"torch": "2.11.0"}, {"torch": "2.13.0"}
    d = diff(_doc_s(_r("v"), env=ea), _doc_s(_r("v"), env=eb))
    assert d["env_a"] == {"torch": "2.11.0"} and d["env_b"] == {"torch": "2.13.0"}
    assert d["context_changes"] == ["env torch: 2.11.0 → 2.13.0"]
    assert d["threshold_pct"] is None and d["regressions"] == []


def test_a_real_ddp_job_of_two_ranks_is_read_as_two_ranks_and_its_bucket_copies_get_ddp_advice(tmp_path):
    # two ranks of one DDP training job (the Llama step, 5 profiled steps, both ranks on one H100, gloo): each
    # trace says its rank in distributedInfo; counts read from the raw JSON here, not from attnscope
    from pathlib import Path

    job = Path(__file__).resolve().parents[1] / "data" / "ranks_ddp_h100"
    raw = [json.loads(gzip.open(job / f"rank{i}.json.gz").read()) for i in (0, 1)]
    assert [r["distributedInfo"]["rank"] for r in raw] == [0, 1]
    gpu_cats = ("kernel", "gpu_memcpy", "gpu_memset")
    want = [[e for e in r["traceEvents"] if e.get("cat") in gpu_cats] for r in raw]
    out = tmp_path / "o.json"
    assert main(["analyze", str(job), "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    o = doc["overall"]
    assert o["num_ranks"] == 2 and o["rank_sources"] == ["distributedInfo"]
    assert [p["num_gpu_events"] for p in o["per_rank"]] == [len(w) for w in want]
    for r, w in zip(doc["results"], want, strict=True):
        assert r["num_kernels"] == sum(e["cat"] == "kernel" for e in w)
        assert r["trace_gpu_time_us"] == pytest.approx(sum(e["dur"] for e in w), rel=1e-9)
    bucket = "torch.distributed.ddp.reducer::copy_bucket_to_grad"
    copies = [
        i for r in doc["results"] for i in r["insights"] if i["id"] == "hidden_copy" and i["evidence"]["op"] == bucket
    ]
    assert len(copies) == 2 and all("gradient_as_bucket_view=True" in i["advice"] for i in copies)
    assert not any("flex_compiled" in i["advice"] for i in copies)


def _model_row(impl, mode, step_us):
    case = {"config": "tiny", "layers": 2, "batch": 1, "seq": 128, "dtype": "bf16", "device": "cpu", "mode": mode}
    t = {"median_us": step_us, "noisy": False, "method": "wall time per step, median of 9"}
    return {"variant": impl, "status": "ok", "mode": mode, "case": case, "step_time_us": step_us, "step_time": t}


def test_model_rows_pair_by_mode_and_point_and_compare_their_step_time():
    """A model document holds one row per (implementation, mode, point): eager prefill is compared with eager
    prefill, never with eager decode (by name alone the last eager row of B answered every eager row of A).  By
    hand: prefill 100 → 120 µs is +20%, decode 10 → 11 µs is +10%; a 15% threshold catches the prefill only."""
    a = _doc_s(_model_row("eager", "prefill", 100.0), _model_row("eager", "decode", 10.0))
    b = _doc_s(_model_row("eager", "decode", 11.0), _model_row("eager", "prefill", 120.0))
    d = diff(a, b, threshold_pct=15.0)
    got = {v["variant"]: v["step_time_us"]["delta_pct"] for v in d["variants"]}
    assert got == {"eager prefill batch=1 seq=128": 20.0, "eager decode batch=1 seq=128": 10.0}
    regressions = [(r["variant"], r["metric"]) for r in d["regressions"]]
    assert regressions == [("eager prefill batch=1 seq=128", "step_time_us")]
    assert d["only_in_a"] == [] and d["only_in_b"] == []


def test_an_older_documents_case_is_compared_as_the_case_it_stands_for():
    """The H200 run document (schema 1) names no alibi, mask, mode or softcap and leaves kv_heads and seq_kv to
    follow heads and seq_q: spelled out with those defaults it is the same case (no line), and against the H100
    paged decode document only the fields whose values differ are said, each as a number or a mask name (the
    expected lines read off the two files' case objects by hand, a field one side lacks as '—', not Python's
    None), never 'alibi: None → False'."""
    old = json.loads((H200 / "run.json").read_text())
    assert old["case"] == {"batch": 4, "heads": 16, "seq_q": 2048, "head_dim": 64, "dtype": "bf16", "causal": True,
                           "kv_heads": None, "seq_kv": None, "device": "cuda"}  # fmt: skip
    spelled = {**old, "case": {**old["case"], "kv_heads": 16, "seq_kv": 2048, "mask": "causal", "alibi": False,
                               "mode": "fwd", "softcap": None}}  # fmt: skip
    assert context_changes(old, spelled) == []
    paged = json.loads((H200.parent / "h100" / "paged_decode_run.json").read_text())
    assert [line for line in context_changes(old, paged) if line.startswith("case ")] == [
        "case batch: 4 → 8",
        "case causal: True → False",
        "case head_dim: 64 → 128",
        "case heads: 16 → 32",
        "case kv_heads: 16 → 8",
        "case kv_lens: — → uniform:512..4096@0",
        "case mask: causal → none",
        "case page_size: — → 16",
        "case seq_kv: 2048 → 3970",
        "case seq_q: 2048 → 1",
    ]


def test_a_trace_against_a_run_shows_cpu_time_without_comparing_it(tmp_path):
    """The H200 run's naive row (CPU µs 196.0, the median per call) against naive's trace (the traced region's
    host span, one sample with the profiler's overhead: 4,180.6 µs): --threshold 5 read +2,033% as a regression
    and exited 1; the GPU µs (2,259.7 → 2,273.5, +0.6%) stays compared."""
    run = json.loads((H200 / "run.json").read_text())
    naive = next(r for r in run["results"] if r["variant"] == "naive")
    out = tmp_path / "d.json"
    assert main(["diff", str(H200 / "run.json"), str(H200 / "naive.json"), "--threshold", "5", "--json", str(out)]) == 0
    d = json.loads(out.read_text())
    (v,) = [v for v in d["variants"] if v["variant"] == "naive"]
    assert v["cpu_time_us"]["a"] == naive["cpu_time_us"] and v["cpu_time_us"]["b"] is not None
    assert v["cpu_time_us"]["delta_pct"] is None and d["regressions"] == []
    assert "numerics_ok" not in v["flags"]  # a trace cannot say (it holds no output): unknown, not a change
    assert v["gpu_time_us"]["delta_pct"] is not None and abs(v["gpu_time_us"]["delta_pct"]) < 5
    assert any(c.startswith("timings: one side is a trace, the other a run") for c in d["context_changes"])
    both_runs = diff(run, run, threshold_pct=5)
    assert not any(c.startswith("timings:") for c in both_runs["context_changes"])
