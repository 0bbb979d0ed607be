"""The command line as a user types it: run, variants, analyze."""

from __future__ import annotations

import json

import pytest

from attnscope.cli.main import main
from tests.rawtrace import H200

pytest.importorskip("torch")


def test_run_cli_writes_json_and_traces(tmp_path, capsys):
    out = tmp_path / "out.json"
    tdir = tmp_path / "tr"
    rc = main(
        [
            "run",
            "--device",
            "cpu",
            "--batch",
            "1",
            "--heads",
            "2",
            "--seq",
            "64",
            "--head-dim",
            "16",
            "--dtype",
            "fp32",
            "--causal",
            "--variants",
            "naive,naive_inplace,sdpa_flash,sdpa_cudnn",
            "--json",
            str(out),
            "--trace-dir",
            str(tdir),
            "--kernels",
            "--budget",
            "0.02",
            "--no-peak",
        ]
    )
    assert rc == 0
    text = capsys.readouterr().out
    assert "naive_inplace" in text and "sdpa_cudnn skipped" in text and "naive: kernels" in text
    doc = json.loads(out.read_text())
    assert doc["case"]["dtype"] == "fp32" and doc["case"]["seq_q"] == 64
    assert [r["variant"] for r in doc["results"]] == ["naive", "naive_inplace", "sdpa_flash", "sdpa_cudnn"]
    assert sorted(p.name for p in tdir.iterdir()) == ["naive.json", "naive_inplace.json", "sdpa_flash.json"]
    assert "partial" not in doc  # the final document replaces the per-variant partial one


def test_run_cli_rejects_bad_input(capsys):
    assert main(["run", "--device", "cpu", "--variants", "nope"]) == 2
    assert "unknown variant" in capsys.readouterr().err
    assert main(["run", "--device", "cpu", "--dtype", "int4"]) == 2
    assert "error: --dtype 'int4': use one of bf16, fp16, fp32" in capsys.readouterr().err  # the flag typed
    assert main(["run", "--device", "cpu", "--heads", "6", "--kv-heads", "4"]) == 2


def test_variants_cli_lists_every_variant_with_reasons(capsys):
    assert main(["variants", "--device", "cpu", "--batch", "1", "--heads", "2", "--seq", "32", "--head-dim", "16"]) == 0
    out = capsys.readouterr().out
    for name in ("naive", "sdpa_efficient", "sdpa_cudnn", "flex_compiled"):
        assert name in out
    assert "no CPU kernel" in out and "opt-in" in out


def test_analyze_cli_on_h200_traces(tmp_path):
    out = tmp_path / "a.json"
    assert main(["analyze", str(H200 / "naive.json"), str(H200 / "sdpa_math.json"), "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    naive, math_ = doc["results"]
    assert naive["source"] == "trace" and naive["case"] is None
    assert naive["num_memcpy"] == 1 and naive["hidden_copies"][0]["op"] == "aten::masked_fill"
    assert math_["upcast_fp32"] is True and math_["mask_rebuilt"] is True and math_["num_kernels"] == 20
    # what a trace alone cannot tell stays None
    assert naive["max_rel_error"] is None and naive["flops"] is None
