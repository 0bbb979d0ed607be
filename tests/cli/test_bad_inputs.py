"""Every bad input a newcomer can type ends in one line on stderr and exit 2, never a traceback.

Each row is an argument list run through ``attnscope.cli.main.main`` in-process; ``{d}`` is a
directory of prepared bad files.  The expected exit code is the contract: 2 for bad input,
0 for the few controls that must keep working.  Nothing here measures: every rejection
happens before a tensor exists, so the whole list runs in seconds.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from attnscope.cli.main import main

GOOD_DOC = {"schema_version": 1, "tool": "attnscope", "results": [{"variant": "naive", "status": "ok"}]}
FILES: dict[str, str | bytes] = {
    "good.json": json.dumps(GOOD_DOC),
    "results_str.json": json.dumps({"schema_version": 1, "results": "naive"}),
    "schema_str.json": json.dumps({"schema_version": "1", "results": []}),
    "schema_null.json": json.dumps({"schema_version": None, "results": []}),
    "schema_true.json": json.dumps({"schema_version": True, "results": []}),
    "schema_new.json": json.dumps({"schema_version": 99, "results": []}),
    "schema_zero.json": json.dumps({"schema_version": 0, "results": []}),
    "results_ints.json": json.dumps({"schema_version": 1, "results": [1, 2]}),
    "results_novariant.json": json.dumps({"schema_version": 1, "results": [{"variant": 1, "status": "ok"}]}),
    "results_nostatus.json": json.dumps({"schema_version": 1, "results": [{"variant": "naive"}]}),
    "env_str.json": json.dumps({"schema_version": 1, "results": [], "env": "cpu"}),
    "case_list.json": json.dumps({"schema_version": 1, "results": [], "case": [1]}),
    "list.json": "[1, 2, 3]",
    "time_str.json": json.dumps(
        {"schema_version": 1, "results": [{"variant": "naive", "status": "ok", "gpu_time_us": "x"}]}
    ),
    "peak_bool.json": json.dumps(
        {"schema_version": 1, "results": [{"variant": "naive", "status": "ok", "peak_memory_bytes": True}]}
    ),
    "kernels_str.json": json.dumps(
        {"schema_version": 1, "results": [{"variant": "naive", "status": "ok", "kernels": "k"}]}
    ),
    "kernel_noname.json": json.dumps(
        {"schema_version": 1, "results": [{"variant": "naive", "status": "ok", "kernels": [{"category": "gemm"}]}]}
    ),
    "timing_list.json": json.dumps(
        {"schema_version": 1, "results": [{"variant": "naive", "status": "ok", "cpu_time": [1]}]}
    ),
    "not_json.json": "this is not json {",
    "empty.json": "",
    "binary.json": b"\x00\x01\x02\xff\xfe",
    "events_str.json": json.dumps({"traceEvents": "nope"}),
    "events_empty.json": json.dumps({"traceEvents": []}),
    "truncated.json.gz": gzip.compress(b'{"traceEvents": [' + b'{"ph": "X"},' * 50)[:40],
    "plain.gz": b"not gzip at all",
    "bad.toml": "[[predict]\nvariant = ",
    "empty.toml": "",
    "neg_kernels.toml": '[[predict]]\nvariant = "naive"\nkernels = -3\n',
    "nan_kernels.toml": '[[predict]]\nvariant = "naive"\nkernels = nan\n',
    "float_kernels.toml": '[[predict]]\nvariant = "naive"\nkernels = 2.5\n',
    "neg_range.toml": '[[predict]]\nvariant = "naive"\ngpu_us = [-1, 5]\n',
    "inf_range.toml": '[[predict]]\nvariant = "naive"\npeak_memory_mib = [inf, inf]\n',
    "nan_range.toml": '[[predict]]\nvariant = "naive"\ncpu_us = [nan, 5]\n',
    "scalar_time.toml": '[[predict]]\nvariant = "naive"\ngpu_us = 5\n',
    "lo_gt_hi.toml": '[[predict]]\nvariant = "naive"\nkernels = [8, 4]\n',
    "unknown_variant.toml": '[[predict]]\nvariant = "turbo"\nkernels = 1\n',
    "unknown_key.toml": '[[predict]]\nvariant = "naive"\nspeed = 1\n',
    "no_variant.toml": "[[predict]]\nkernels = 1\n",
    "nothing.toml": '[[predict]]\nvariant = "naive"\n',
    "top_key.toml": 'title = "x"\n[[predict]]\nvariant = "naive"\nkernels = 1\n',
    "bad_backend.toml": '[[predict]]\nvariant = "sdpa_default"\nbackend = "tpu"\n',
    "by_zero.toml": '[[predict]]\nvariant = "sdpa_flash"\nfaster_than = { variant = "naive", by = 0 }\n',
    "by_neg.toml": '[[predict]]\nvariant = "sdpa_flash"\nfaster_than = { variant = "naive", by = -1 }\n',
    "by_other.toml": '[[predict]]\nvariant = "sdpa_flash"\nfaster_than = { variant = "turbo", by = 2 }\n',
    "by_shape.toml": '[[predict]]\nvariant = "sdpa_flash"\nfaster_than = 2\n',
    "bool_str.toml": '[[predict]]\nvariant = "naive"\nupcast = "yes"\n',
    "bool_int.toml": '[[predict]]\nvariant = "naive"\nhidden_copy = 1\n',
    "not_in_run.toml": '[[predict]]\nvariant = "flex"\nkernels = 1\n',
    "afile": "x",
    "rows.jsonl": json.dumps({"variant": "naive", "case": {"seq_q": 64}, "status": "ok"}) + "\n",
    "notrows.jsonl": "not json\nnor this\n",
}

RUN = ["run", "--device", "cpu", "--no-peak"]
SWEEP = ["sweep", "--device", "cpu", "--no-peak", "--out", "{d}/s.jsonl"]
D = "{d}"
CASES: list[tuple[str, list[str], int]] = [
    # --variants
    ("variants_commas", [*RUN, "--variants", ",,,"], 2),
    ("variants_comma", [*RUN, "--variants", ","], 2),
    ("variants_empty", [*RUN, "--variants", ""], 2),
    ("variants_dupe", [*RUN, "--variants", "naive,naive"], 2),
    ("variants_dupe_spaced", [*RUN, "--variants", "naive, naive"], 2),
    ("variants_hole", [*RUN, "--variants", "naive,,sdpa_flash"], 2),
    ("variants_unknown", [*RUN, "--variants", "nope"], 2),
    ("variants_all_plus", [*RUN, "--variants", "all,naive"], 2),
    ("variants_case", [*RUN, "--variants", "NAIVE"], 2),
    # --budget
    ("budget_nan", [*RUN, "--budget", "nan"], 2),
    ("budget_inf", [*RUN, "--budget", "inf"], 2),
    ("budget_neginf", [*RUN, "--budget", "-inf"], 2),
    ("budget_neg", [*RUN, "--budget", "-1"], 2),
    ("budget_zero", [*RUN, "--budget", "0"], 2),
    ("budget_word", [*RUN, "--budget", "fast"], 2),
    # sizes
    ("batch_zero", [*RUN, "--batch", "0"], 2),
    ("batch_neg", [*RUN, "--batch", "-1"], 2),
    ("batch_huge", [*RUN, "--batch", "1000000000"], 2),
    ("batch_float", [*RUN, "--batch", "1.5"], 2),
    ("batch_word", [*RUN, "--batch", "two"], 2),
    ("heads_zero", [*RUN, "--heads", "0"], 2),
    ("heads_huge", [*RUN, "--heads", "99999999"], 2),
    ("seq_zero", [*RUN, "--seq", "0"], 2),
    ("seq_neg", [*RUN, "--seq", "-5"], 2),
    ("seq_sci", [*RUN, "--seq", "1e3"], 2),
    ("seq_huge", [*RUN, "--seq", "100000000"], 2),
    ("seq_million", [*RUN, "--seq", "1000000"], 2),  # the fp64 reference alone: ~238,000 GiB
    ("batch_100k", [*RUN, "--batch", "100000"], 2),  # the inputs alone: ~244 GiB
    ("seq_kv_million", [*RUN, "--seq-kv", "4000000", "--variants", "naive"], 2),
    ("seq_kv_zero", [*RUN, "--seq-kv", "0"], 2),
    ("head_dim_zero", [*RUN, "--head-dim", "0"], 2),
    ("head_dim_huge", [*RUN, "--head-dim", "100000"], 2),
    ("kv_heads_not_divisor", [*RUN, "--heads", "8", "--kv-heads", "3"], 2),
    ("kv_heads_more", [*RUN, "--heads", "8", "--kv-heads", "16"], 2),
    ("kv_heads_zero", [*RUN, "--kv-heads", "0"], 2),
    # dtype, mask
    ("dtype_int4", [*RUN, "--dtype", "int4"], 2),
    ("dtype_fp8", [*RUN, "--dtype", "fp8"], 2),
    ("dtype_empty", [*RUN, "--dtype", ""], 2),
    ("causal_both", [*RUN, "--causal", "--no-causal"], 2),
    # devices
    ("device_tpu", ["run", "--device", "tpu"], 2),
    ("device_mps", ["run", "--device", "mps"], 2),
    ("device_gpu", ["run", "--device", "gpu"], 2),
    ("device_empty", ["run", "--device", ""], 2),
    ("device_cpu_index", ["run", "--device", "cpu:0"], 2),
    ("device_cuda_neg", ["run", "--device", "cuda:-1"], 2),
    ("device_cuda_word", ["run", "--device", "cuda:x"], 2),
    ("device_cuda", ["run", "--device", "cuda"], 2),
    ("device_cuda5", ["run", "--device", "cuda:5"], 2),
    ("device_cuda_upper", ["run", "--device", "CUDA:0"], 2),
    # --strict, --guess
    ("strict_alone", [*RUN, "--strict"], 2),
    ("guess_missing", [*RUN, "--guess", f"{D}/missing.toml"], 2),
    ("guess_dir", [*RUN, "--guess", D], 2),
    ("guess_bad_toml", [*RUN, "--guess", f"{D}/bad.toml"], 2),
    ("guess_empty", [*RUN, "--guess", f"{D}/empty.toml"], 2),
    ("guess_neg_kernels", [*RUN, "--guess", f"{D}/neg_kernels.toml"], 2),
    ("guess_nan_kernels", [*RUN, "--guess", f"{D}/nan_kernels.toml"], 2),
    ("guess_float_kernels", [*RUN, "--guess", f"{D}/float_kernels.toml"], 2),
    ("guess_neg_range", [*RUN, "--guess", f"{D}/neg_range.toml"], 2),
    ("guess_inf_range", [*RUN, "--guess", f"{D}/inf_range.toml"], 2),
    ("guess_nan_range", [*RUN, "--guess", f"{D}/nan_range.toml"], 2),
    ("guess_scalar_time", [*RUN, "--guess", f"{D}/scalar_time.toml"], 2),
    ("guess_lo_gt_hi", [*RUN, "--guess", f"{D}/lo_gt_hi.toml"], 2),
    ("guess_unknown_variant", [*RUN, "--guess", f"{D}/unknown_variant.toml"], 2),
    ("guess_unknown_key", [*RUN, "--guess", f"{D}/unknown_key.toml"], 2),
    ("guess_no_variant", [*RUN, "--guess", f"{D}/no_variant.toml"], 2),
    ("guess_nothing", [*RUN, "--guess", f"{D}/nothing.toml"], 2),
    ("guess_top_key", [*RUN, "--guess", f"{D}/top_key.toml"], 2),
    ("guess_bad_backend", [*RUN, "--guess", f"{D}/bad_backend.toml"], 2),
    ("guess_by_zero", [*RUN, "--guess", f"{D}/by_zero.toml"], 2),
    ("guess_by_neg", [*RUN, "--guess", f"{D}/by_neg.toml"], 2),
    ("guess_by_other", [*RUN, "--guess", f"{D}/by_other.toml"], 2),
    ("guess_by_shape", [*RUN, "--guess", f"{D}/by_shape.toml"], 2),
    ("guess_bool_str", [*RUN, "--guess", f"{D}/bool_str.toml"], 2),
    ("guess_bool_int", [*RUN, "--guess", f"{D}/bool_int.toml"], 2),
    ("guess_not_in_run", [*RUN, "--variants", "naive", "--guess", f"{D}/not_in_run.toml"], 2),
    # output paths: checked before any measurement
    ("json_proc", [*RUN, "--json", "/proc/attnscope-x.json"], 2),
    ("json_dir", [*RUN, "--json", D], 2),
    ("json_under_file", [*RUN, "--json", f"{D}/afile/out.json"], 2),
    ("json_dot", [*RUN, "--json", "."], 2),
    ("trace_dir_file", [*RUN, "--trace-dir", f"{D}/afile"], 2),
    ("trace_dir_proc", [*RUN, "--trace-dir", "/proc/attnscope-traces"], 2),
    ("trace_dir_under_file", [*RUN, "--trace-dir", f"{D}/afile/traces"], 2),
    # argparse itself, in one line
    ("run_unknown_flag", [*RUN, "--bogus"], 2),
    ("run_json_no_value", [*RUN, "--json"], 2),
    ("run_positional", [*RUN, "extra"], 2),
    # variants
    ("variants_cuda", ["variants", "--device", "cuda"], 2),
    ("variants_tpu", ["variants", "--device", "tpu"], 2),
    ("variants_batch_zero", ["variants", "--device", "cpu", "--batch", "0"], 2),
    ("variants_dtype", ["variants", "--device", "cpu", "--dtype", "x"], 2),
    ("variants_kv_heads", ["variants", "--device", "cpu", "--kv-heads", "3"], 2),
    # guess (the interactive command): every check before the first question
    ("guess_save_proc", ["guess", "--device", "cpu", "--save", "/proc/attnscope-x.toml"], 2),
    ("guess_save_dir", ["guess", "--device", "cpu", "--save", D], 2),
    ("guess_save_under_file", ["guess", "--device", "cpu", "--save", f"{D}/afile/p.toml"], 2),
    ("guess_cmd_variants", ["guess", "--device", "cpu", "--variants", ",,"], 2),
    ("guess_cmd_device", ["guess", "--device", "tpu"], 2),
    ("guess_cmd_budget", ["guess", "--device", "cpu", "--budget", "nan"], 2),
    ("guess_cmd_json_dir", ["guess", "--device", "cpu", "--json", D], 2),
    # analyze
    ("analyze_top_neg", ["analyze", f"{D}/good.json", "--top", "-1"], 2),
    ("analyze_top_zero", ["analyze", f"{D}/good.json", "--top", "0"], 2),
    ("analyze_jobs_zero", ["analyze", f"{D}/good.json", "--jobs", "0"], 2),
    ("analyze_jobs_neg", ["analyze", f"{D}/good.json", "--jobs", "-2"], 2),
    ("analyze_missing", ["analyze", f"{D}/missing.json"], 2),
    ("analyze_empty_dir", ["analyze", f"{D}/emptydir"], 2),
    ("analyze_not_json", ["analyze", f"{D}/not_json.json"], 2),
    ("analyze_empty_file", ["analyze", f"{D}/empty.json"], 2),
    ("analyze_binary", ["analyze", f"{D}/binary.json"], 2),
    ("analyze_list", ["analyze", f"{D}/list.json"], 2),
    ("analyze_events_str", ["analyze", f"{D}/events_str.json"], 2),
    ("analyze_events_empty", ["analyze", f"{D}/events_empty.json"], 2),
    ("analyze_truncated_gz", ["analyze", f"{D}/truncated.json.gz"], 2),
    ("analyze_not_a_trace", ["analyze", f"{D}/good.json"], 2),
    ("analyze_json_proc", ["analyze", f"{D}/good.json", "--json", "/proc/attnscope-x.json"], 2),
    ("analyze_json_dir", ["analyze", f"{D}/good.json", "--json", D], 2),
    ("analyze_no_args", ["analyze"], 2),
    # diff
    ("diff_threshold_neg", ["diff", f"{D}/good.json", f"{D}/good.json", "--threshold", "-5"], 2),
    ("diff_threshold_nan", ["diff", f"{D}/good.json", f"{D}/good.json", "--threshold", "nan"], 2),
    ("diff_threshold_inf", ["diff", f"{D}/good.json", f"{D}/good.json", "--threshold", "inf"], 2),
    ("diff_threshold_word", ["diff", f"{D}/good.json", f"{D}/good.json", "--threshold", "x"], 2),
    ("diff_metrics_bad", ["diff", f"{D}/good.json", f"{D}/good.json", "--metrics", "wall"], 2),
    ("diff_metrics_empty", ["diff", f"{D}/good.json", f"{D}/good.json", "--metrics", ","], 2),
    ("diff_json_proc", ["diff", f"{D}/good.json", f"{D}/good.json", "--json", "/proc/attnscope-x.json"], 2),
    ("diff_json_dir", ["diff", f"{D}/good.json", f"{D}/good.json", "--json", D], 2),
    ("diff_missing", ["diff", f"{D}/missing.json", f"{D}/good.json"], 2),
    ("diff_dir", ["diff", D, f"{D}/good.json"], 2),
    ("diff_results_str", ["diff", f"{D}/good.json", f"{D}/results_str.json"], 2),
    ("diff_schema_str", ["diff", f"{D}/schema_str.json", f"{D}/good.json"], 2),
    ("diff_schema_null", ["diff", f"{D}/good.json", f"{D}/schema_null.json"], 2),
    ("diff_schema_true", ["diff", f"{D}/good.json", f"{D}/schema_true.json"], 2),
    ("diff_schema_new", ["diff", f"{D}/good.json", f"{D}/schema_new.json"], 2),
    ("diff_schema_zero", ["diff", f"{D}/good.json", f"{D}/schema_zero.json"], 2),
    ("diff_results_ints", ["diff", f"{D}/good.json", f"{D}/results_ints.json"], 2),
    ("diff_results_novariant", ["diff", f"{D}/good.json", f"{D}/results_novariant.json"], 2),
    ("diff_results_nostatus", ["diff", f"{D}/good.json", f"{D}/results_nostatus.json"], 2),
    ("diff_env_str", ["diff", f"{D}/good.json", f"{D}/env_str.json"], 2),
    ("diff_case_list", ["diff", f"{D}/good.json", f"{D}/case_list.json"], 2),
    ("diff_list", ["diff", f"{D}/good.json", f"{D}/list.json"], 2),
    ("diff_not_json", ["diff", f"{D}/good.json", f"{D}/not_json.json"], 2),
    ("diff_empty", ["diff", f"{D}/good.json", f"{D}/empty.json"], 2),
    ("diff_binary", ["diff", f"{D}/good.json", f"{D}/binary.json"], 2),
    ("diff_plain_gz", ["diff", f"{D}/good.json", f"{D}/plain.gz"], 2),
    ("diff_one_arg", ["diff", f"{D}/good.json"], 2),
    ("diff_time_str", ["diff", f"{D}/good.json", f"{D}/time_str.json"], 2),
    ("diff_peak_bool", ["diff", f"{D}/good.json", f"{D}/peak_bool.json"], 2),
    ("diff_kernels_str", ["diff", f"{D}/good.json", f"{D}/kernels_str.json"], 2),
    ("diff_kernel_noname", ["diff", f"{D}/good.json", f"{D}/kernel_noname.json"], 2),
    ("diff_timing_list", ["diff", f"{D}/good.json", f"{D}/timing_list.json"], 2),
    # the HTML page: its path checked before any work, its inputs read as documents
    ("run_html_proc", [*RUN, "--html", "/proc/attnscope-x.html"], 2),
    ("run_html_dir", [*RUN, "--html", D], 2),
    ("analyze_html_proc", ["analyze", f"{D}/good.json", "--html", "/proc/attnscope-x.html"], 2),
    ("report_out_proc", ["report", f"{D}/good.json", "-o", "/proc/attnscope-x.html"], 2),
    ("report_out_dir", ["report", f"{D}/good.json", "-o", D], 2),
    ("report_missing", ["report", f"{D}/missing.json", "-o", f"{D}/r.html"], 2),
    ("report_not_json", ["report", f"{D}/not_json.json", "-o", f"{D}/r.html"], 2),
    ("report_no_out", ["report", f"{D}/good.json"], 2),
    # sweep: every axis, path and executor choice checked before a worker starts
    ("sweep_seq_backwards", [*SWEEP, "--seq", "512..64"], 2),
    ("sweep_seq_step_one", [*SWEEP, "--seq", "64..512x1"], 2),
    ("sweep_seq_step_zero", [*SWEEP, "--seq", "64..512+0"], 2),
    ("sweep_seq_zero", [*SWEEP, "--seq", "0,64"], 2),
    ("sweep_seq_word", [*SWEEP, "--seq", "long"], 2),
    ("sweep_seq_float", [*SWEEP, "--seq", "64.5"], 2),
    ("sweep_seq_hole", [*SWEEP, "--seq", "64,,128"], 2),
    ("sweep_seq_huge", [*SWEEP, "--seq", "100000000"], 2),
    ("sweep_seq_too_many", [*SWEEP, "--seq", "1..5000"], 2),
    ("sweep_grid_too_big", [*SWEEP, "--seq", "1..4000", "--head-dim", "1..64"], 2),
    ("sweep_head_dim_huge", [*SWEEP, "--head-dim", "100000"], 2),
    ("sweep_heads_neg", [*SWEEP, "--heads", "-8"], 2),
    ("sweep_kv_heads_not_divisor", [*SWEEP, "--heads", "8", "--kv-heads", "3"], 2),
    ("sweep_causal_maybe", [*SWEEP, "--causal", "maybe"], 2),
    ("sweep_causal_empty", [*SWEEP, "--causal", ""], 2),
    ("sweep_mode_bwd", [*SWEEP, "--mode", "bwd"], 2),
    ("sweep_mode_empty", [*SWEEP, "--mode", ""], 2),
    ("sweep_dtype_fp8", [*SWEEP, "--dtype", "bf16,fp8"], 2),
    ("sweep_budget_tokens_and_batch", [*SWEEP, "--budget-tokens", "4096", "--batch", "2"], 2),
    ("sweep_budget_tokens_not_multiple", [*SWEEP, "--budget-tokens", "1000", "--seq", "64"], 2),
    ("sweep_budget_tokens_zero", [*SWEEP, "--budget-tokens", "0"], 2),
    ("sweep_budget_nan", [*SWEEP, "--budget", "nan"], 2),
    ("sweep_variants_unknown", [*SWEEP, "--variants", "naive,turbo"], 2),
    ("sweep_variants_dupe", [*SWEEP, "--variants", "naive,naive"], 2),
    ("sweep_variants_all_plus", [*SWEEP, "--variants", "all,naive"], 2),
    ("sweep_executor_bad", [*SWEEP, "--executor", "slurm"], 2),
    ("sweep_timeout_inline", [*SWEEP, "--executor", "inline", "--timeout", "5"], 2),
    ("sweep_timeout_zero", [*SWEEP, "--timeout", "0"], 2),
    ("sweep_timeout_nan", [*SWEEP, "--timeout", "nan"], 2),
    ("sweep_ray_address_without_ray", [*SWEEP, "--ray-address", "auto"], 2),
    ("sweep_device_and_devices", [*SWEEP, "--devices", "cuda:0"], 2),
    ("sweep_devices_word", ["sweep", "--devices", "gpu0", "--out", f"{D}/s.jsonl"], 2),
    ("sweep_devices_dupe", ["sweep", "--devices", "cuda:0,cuda:0", "--out", f"{D}/s.jsonl"], 2),
    ("sweep_devices_cuda9", ["sweep", "--devices", "cuda:9", "--out", f"{D}/s.jsonl"], 2),
    ("sweep_device_tpu", ["sweep", "--device", "tpu", "--out", f"{D}/s.jsonl"], 2),
    ("sweep_workers_zero", [*SWEEP, "--workers", "0"], 2),
    ("sweep_inline_workers", [*SWEEP, "--executor", "inline", "--workers", "2"], 2),
    ("sweep_out_has_rows", ["sweep", "--device", "cpu", "--out", f"{D}/rows.jsonl"], 2),
    ("sweep_resume_not_rows", ["sweep", "--device", "cpu", "--out", f"{D}/notrows.jsonl", "--resume"], 2),
    ("sweep_out_dir", ["sweep", "--device", "cpu", "--out", D], 2),
    ("sweep_out_proc", ["sweep", "--device", "cpu", "--out", "/proc/attnscope-x.jsonl"], 2),
    ("sweep_out_under_file", ["sweep", "--device", "cpu", "--out", f"{D}/afile/s.jsonl"], 2),
    ("sweep_json_proc", [*SWEEP, "--json", "/proc/attnscope-x.json"], 2),
    ("sweep_json_is_out", [*SWEEP, "--json", f"{D}/s.jsonl"], 2),
    ("sweep_trace_dir_file", [*SWEEP, "--trace-dir", f"{D}/afile"], 2),
    ("sweep_positional", [*SWEEP, "extra"], 2),
    # the recommendation over sweep JSONL files
    ("recommend_no_file", ["recommend"], 2),
    ("recommend_missing", ["recommend", f"{D}/missing.jsonl"], 2),
    ("recommend_dir", ["recommend", f"{D}/emptydir"], 2),
    ("recommend_not_json", ["recommend", f"{D}/not_json.json"], 2),
    ("recommend_empty", ["recommend", f"{D}/empty.json"], 2),
    ("recommend_binary", ["recommend", f"{D}/binary.json"], 2),
    ("recommend_a_document", ["recommend", f"{D}/good.json"], 2),
    ("recommend_json_dir", ["recommend", f"{D}/good.json", "--json", D], 2),
    ("recommend_json_proc", ["recommend", f"{D}/good.json", "--json", "/proc/attnscope-x.json"], 2),
    # top level
    ("no_command", [], 2),
    ("unknown_command", ["profile"], 2),
    ("top_unknown_flag", ["--bogus"], 2),
    # controls: these must keep working
    ("version", ["--version"], 0),
    ("help", ["--help"], 0),
    ("diff_good", ["diff", f"{D}/good.json", f"{D}/good.json"], 0),
]


@pytest.fixture(scope="module")
def bad_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("bad")
    for name, content in FILES.items():
        (d / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    (d / "emptydir").mkdir()
    return d


def test_the_list_is_long_and_names_are_unique() -> None:
    assert len(CASES) >= 100
    assert len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize(("name", "argv", "rc"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_ends_in_one_line_and_exit_2(
    name: str, argv: list[str], rc: int, bad_dir: Path, capsys, monkeypatch
) -> None:
    def no_measurement(*_a: object, **_k: object) -> None:
        raise AssertionError("a measurement started before the input was checked")

    monkeypatch.setattr("attnscope.api.campaign.measure_jobs", no_measurement)
    monkeypatch.setattr("builtins.input", no_measurement)  # `guess` must fail before its first question
    if name.startswith(("device_cuda", "variants_cuda")):
        torch = pytest.importorskip("torch")
        if torch.cuda.is_available() and name not in ("device_cuda5", "device_cuda_neg", "device_cuda_word"):
            pytest.skip("a GPU is present: cuda is a valid device here")
    args = [a.replace(D, str(bad_dir)) for a in argv]
    got = main(args)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert got == rc, f"{name}: exit {got}, stderr {err!r}"
    if rc == 2:
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1, f"{name}: expected one line on stderr, got {lines}"
        assert "error" in lines[0] and "internal error" not in lines[0]
    # nothing was written where a bad path pointed, and no sweep began its file
    assert not Path("/proc/attnscope-x.json").exists()
    assert not (bad_dir / "s.jsonl").exists()


def test_json_keeps_the_users_umask(tmp_path: Path) -> None:
    import os
    import stat

    from attnscope.document.schema import write_atomic

    old = os.umask(0o027)
    try:
        write_atomic(tmp_path / "a.json", GOOD_DOC)
    finally:
        os.umask(old)
    # 0o666 & ~0o027 = 0o640, what open() would give; mkstemp alone gives 0o600
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o640
    old = os.umask(0o002)
    try:
        write_atomic(tmp_path / "b.json", GOOD_DOC)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "b.json").stat().st_mode) == 0o664


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--device", "tpu"],
        ["run", "--budget", "nan"],
        ["diff", "/nonexistent/a.json", "/nonexistent/b.json"],
        ["analyze", "/nonexistent/trace.json"],
    ],
    ids=["device", "budget", "diff", "analyze"],
)
def test_the_real_process_prints_one_line_too(argv: list[str]) -> None:
    """Through the interpreter as a user starts it: the same one line, exit 2, nothing on stdout."""
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "attnscope.cli.main", *argv], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert p.stdout == ""
