"""The fuzzer in CI: a few hundred seeded random specs (benchmarks/fuzz.py) through the checks of the library and
the command line, and a share of them measured through ``api.run``, ``api.sweep`` and ``attnscope run``, within
a time budget.  Nothing may end in a traceback, an exit outside 0/1/2, a sweep that loses a job, a library and a
command line that disagree on a case, or an ok row off the fp64 reference without a reason."""

from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")

FUZZ = Path(__file__).resolve().parents[2] / "benchmarks" / "fuzz.py"
SEED = 20261205
BUDGET_S = 50.0  # the whole test stays within about a minute on 2 busy cores


def _fuzz_module():
    spec = importlib.util.spec_from_file_location("attnscope_fuzz", FUZZ)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_specs_are_reproducible_one_by_one():
    fuzz = _fuzz_module()
    assert fuzz.make_spec(SEED, 17) == fuzz.make_spec(SEED, 17)
    assert fuzz.make_spec(SEED, 17) != fuzz.make_spec(SEED, 18)
    drawn = [fuzz.make_spec(SEED, i) for i in range(400)]
    # the generator reaches what it promises: every mask form, GQA, decode, soft-cap, ALiBi, dtypes, fwd_bwd
    masks = {(s["case"]["mask"] or "default").split(":")[0].split("@")[0] for s in drawn}
    assert masks >= {"default", "none", "causal", "causal_lower_right", "sliding", "prefix", "document", "padding"}
    assert any(s["case"]["kv_heads"] not in (None, s["case"]["heads"]) for s in drawn)
    assert any(s["case"]["seq_q"] == 1 and (s["case"]["seq_kv"] or 1) > 1 for s in drawn)
    assert {s["case"]["dtype"] for s in drawn} == {"fp32", "bf16", "fp16"}
    assert any(s["case"]["softcap"] for s in drawn) and any(s["case"]["alibi"] for s in drawn)
    assert any(s["case"]["mode"] == "fwd_bwd" for s in drawn)
    assert any("timeout_s" in s["options"] or s["options"]["timing_budget_s"] != 0.002 for s in drawn)


@pytest.mark.slow
def test_a_few_hundred_random_specs_end_well():
    fuzz = _fuzz_module()
    t0 = time.monotonic()
    counts, bad = fuzz.fuzz(
        list(range(300)), SEED, deadline=t0 + BUDGET_S, cli_every=5, sweep_every=10, measure_every=12
    )
    assert not bad, bad[:3]
    assert counts["specs"] >= 100, counts  # a few hundred on an idle machine; never a handful
    assert counts["checked: accepted"] and counts["checked: refused"]  # both sides of the checks were reached
    assert counts["measured"] and counts["ok rows matching fp64"]
    assert time.monotonic() - t0 < BUDGET_S + 30


def test_shards_of_a_run_add_up_to_the_run(tmp_path):
    """--start splits one run into shards that draw the same specs; --merge counts them as the one run (checked
    against that run made whole), and refuses shards that overlap or come from another seed."""
    fuzz = _fuzz_module()
    common = ["--seed", str(SEED), "--workers", "1", "--measure-every", "1000", "--cli-every", "0"]
    parts = [tmp_path / "a.json", tmp_path / "b.json"]
    assert fuzz.main([*common, "--start", "1", "--specs", "4", "--out", str(parts[0])]) == 0
    assert fuzz.main([*common, "--start", "5", "--specs", "4", "--out", str(parts[1])]) == 0
    assert fuzz.main([*common, "--start", "1", "--specs", "8", "--out", str(tmp_path / "whole.json")]) == 0
    assert fuzz.main(["--merge", *map(str, parts), "--out", str(tmp_path / "m.json")]) == 0
    merged = json.loads((tmp_path / "m.json").read_text())
    whole = json.loads((tmp_path / "whole.json").read_text())
    assert merged["counts"] == whole["counts"] and merged["counts"]["specs"] == 8
    assert merged["ranges"] == [[1, 5], [5, 9]]
    assert fuzz.main(["--merge", str(parts[0]), str(parts[0]), "--out", str(tmp_path / "x.json")]) == 2
    other = json.loads(parts[1].read_text()) | {"seed": SEED + 1}
    (tmp_path / "c.json").write_text(json.dumps(other))
    assert fuzz.main(["--merge", str(parts[0]), str(tmp_path / "c.json"), "--out", str(tmp_path / "y.json")]) == 2


def test_a_sweep_failure_keeps_the_rows_own_case():
    # a sweep crosses the cases of several specs with their variants: the spec indices alone cannot replay the
    # failing row, so the row's case and its per-tensor errors travel with the failure
    from collections import Counter

    fuzz = _fuzz_module()
    case = {"batch": 1, "heads": 6, "seq_q": 16, "head_dim": 64, "dtype": "fp16", "softcap": 10000.0}
    row = {
        "status": "ok",
        "variant": "naive",
        "case": case,
        "numerics_ok": False,
        "nonfinite": True,
        "max_rel_error": None,
        "rel_errors": {"out": 5e-4, "dq": None},
        "error_tolerance": 0.005,
    }
    counts: Counter[str] = Counter()
    bad: list[dict] = []
    fuzz._classify_rows([row], counts, bad, [4727, 4751])
    assert counts["ok rows mismatching fp64"] == 1
    assert bad == [
        {
            "kind": "mismatch",
            "spec": [4727, 4751],
            "case": case,
            "variant": "naive",
            "error": None,
            "errors": {"out": 5e-4, "dq": None},
            "nonfinite": True,
            "tolerance": 0.005,
        }
    ]
