"""A CPU sweep's default set leaves out the built-ins that cannot run there (no CPU kernels: sdpa_efficient,
sdpa_cudnn; opt-in on the CPU: flex_compiled), and says so once; naming one still measures it."""

from __future__ import annotations

import json

import pytest

from attnscope.cli.main import main

pytest.importorskip("torch")

GRID = ["--device", "cpu", "--seq", "16", "--heads", "1", "--head-dim", "8", "--dtype", "fp32", "--batch", "1"]
FAST = ["--budget", "0.01", "--no-peak", "--executor", "inline", "--quiet"]
CANNOT = {"sdpa_efficient", "sdpa_cudnn", "flex_compiled"}


def test_the_cpu_default_set_leaves_out_what_cannot_run_there_and_says_so_once():
    from attnscope.execute.sweep_plan import default_variants
    from attnscope.variants import REGISTRY

    kept, left = default_variants(["cpu"])
    assert CANNOT <= set(left) and not CANNOT & set(kept)
    # read off the declarations: every one left out has no CPU kernels or is opt-in on the CPU
    assert all("cpu" not in REGISTRY[n].devices or "cpu" in REGISTRY[n].opt_in_on for n in left)
    assert {"naive", "sdpa_math", "sdpa_default", "flex"} <= set(kept)
    kept_gpu, left_gpu = default_variants(["cuda"])
    assert CANNOT <= set(kept_gpu) and not left_gpu.keys() & CANNOT


@pytest.mark.slow
def test_a_cpu_sweep_measures_no_row_that_could_only_be_skipped(tmp_path, capsys):
    out = tmp_path / "s.jsonl"
    assert main(["sweep", *GRID, *FAST, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.count("left out of the default set on cpu") == 1
    assert all(n in printed for n in CANNOT)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert not {r["variant"] for r in rows} & CANNOT
    assert not [r for r in rows if r["status"] == "skipped"], [(r["variant"], r["reason"]) for r in rows]


@pytest.mark.slow
def test_naming_one_still_measures_it(tmp_path, capsys):
    out = tmp_path / "s.jsonl"
    assert main(["sweep", *GRID, *FAST, "--out", str(out), "--variants", "naive,sdpa_cudnn"]) == 0
    assert "left out of the default set" not in capsys.readouterr().out
    rows = {json.loads(line)["variant"]: json.loads(line)["status"] for line in out.read_text().splitlines()}
    assert rows == {"naive": "ok", "sdpa_cudnn": "skipped"}
