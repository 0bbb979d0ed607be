"""run → document → insights → recommendation, live on the CPU: a small case is run now, its JSON
read back, and every derived number is checked against the measured rows of that same document
(never against a frozen document or the tool's earlier output)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from attnscope.variants import REGISTRY, Prepared, Variant  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# B=1 H=2 S=64 D=16 fp32 causal: kept scores per head 64·65/2 = 2080 → FLOPs 4·16·2·2080 = 266,240
CASE_ARGS = ["--device", "cpu", "--batch", "1", "--heads", "2", "--seq", "64", "--head-dim", "16", "--dtype", "fp32"]
FLOPS_BY_HAND = 4 * 16 * 2 * (64 * 65 // 2)
VARIANTS = "naive_inplace,sdpa_math,sdpa_flash"


@pytest.fixture(scope="module")
def live_doc(tmp_path_factory):
    out = tmp_path_factory.mktemp("live") / "run.json"
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "attnscope.cli.main", "run", *CASE_ARGS, "--variants", VARIANTS]
    p = subprocess.run(
        [*cmd, "--budget", "0.05", "--json", str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(out.read_text()), p.stdout


def _ok(doc):
    return [r for r in doc["results"] if r["status"] == "ok"]


def _overlap(a, b):
    return a["p75_us"] >= b["p25_us"] and b["p75_us"] >= a["p25_us"]


def test_every_variant_ran_and_its_numbers_are_the_case(live_doc):
    doc, _ = live_doc
    assert [r["variant"] for r in doc["results"]] == VARIANTS.split(",")
    for r in doc["results"]:
        assert r["status"] == "ok", (r["variant"], r["reason"])
        assert r["device_kind"] == "cpu" and r["gpu_time"] is None
        assert r["flops"] == FLOPS_BY_HAND
        assert r["error_tolerance"] == 1e-4  # fp32
        assert r["max_rel_error"] <= 1e-4 and r["numerics_ok"] is True and r["nonfinite"] is False


def test_timing_summary_is_consistent_with_its_quartiles(live_doc):
    doc, _ = live_doc
    for r in _ok(doc):
        t = r["cpu_time"]
        assert r["cpu_time_us"] == t["median_us"]
        assert t["min_us"] <= t["p25_us"] <= t["median_us"] <= t["p75_us"]
        assert t["num_samples"] >= 5
        assert t["iqr_rel"] == pytest.approx((t["p75_us"] - t["p25_us"]) / t["median_us"])
        assert t["noisy"] is (t["iqr_rel"] > 0.10)
        assert "wall time per call" in t["method"]


def test_rate_and_pct_of_peak_follow_from_the_rows(live_doc):
    doc, _ = live_doc
    peak = doc["peak"]["tflops"]
    assert peak > 0 and "matmul" in doc["peak"]["source"]
    for r in _ok(doc):
        rate = FLOPS_BY_HAND / (r["cpu_time_us"] * 1e-6) / 1e12
        assert r["tflops"] == pytest.approx(rate)
        assert r["pct_of_peak"] == pytest.approx(100 * rate / peak)


def test_recommendation_is_the_fastest_sound_row(live_doc):
    doc, _ = live_doc
    rows = sorted(_ok(doc), key=lambda r: r["cpu_time_us"])
    rec = doc["recommendation"]
    assert rec["best"] == rows[0]["variant"]
    assert rec["best_us"] == rows[0]["cpu_time_us"]
    # the runner-up is the next implementation: the fastest row that ran other compute kernels than the best
    names = [{k["name"] for k in r["kernels"] if k["category"] not in ("memcpy", "memset")} for r in rows]
    nxt = next(r for r, n in zip(rows[1:], names[1:], strict=True) if not names[0] or n != names[0])
    assert rec["runner_up"] == nxt["variant"]
    assert rec["margin"] == pytest.approx(nxt["cpu_time_us"] / rows[0]["cpu_time_us"])
    if _overlap(rows[0]["cpu_time"], nxt["cpu_time"]):
        assert rec["within_noise"] is True
    assert rec["excluded"] == []
    assert rec["basis"] == "wall time per call on the CPU (median)"


def test_slower_than_best_insights_agree_with_the_rows(live_doc):
    """A row gets slower_than_best exactly when it is ≥ 1.10× the best and their IQRs do not
    overlap; the insight's numbers are the rows' medians."""
    doc, _ = live_doc
    best = min(_ok(doc), key=lambda r: r["cpu_time_us"])
    for r in _ok(doc):
        got = [i for i in r["insights"] if i["id"] == "slower_than_best"]
        ratio = r["cpu_time_us"] / best["cpu_time_us"]
        due = r is not best and ratio >= 1.10 and not _overlap(r["cpu_time"], best["cpu_time"])
        assert bool(got) is due, (r["variant"], ratio)
        if got:
            ev = got[0]["evidence"]
            assert ev["best"] == best["variant"]
            assert ev["ratio"] == round(ratio, 2)
            assert ev["this_us"] == round(r["cpu_time_us"], 1)


def test_fingerprints_of_the_live_rows(live_doc):
    """What each CPU path did, from its own trace: math rebuilds the causal mask with aten::tril
    and flash runs one fused op; the hand-written path with masked_fill_ copies nothing."""
    doc, _ = live_doc
    r = {x["variant"]: x for x in doc["results"]}
    assert r["sdpa_math"]["mask_rebuilt"] is True and "aten::tril" in r["sdpa_math"]["mask_ops"]
    assert r["sdpa_flash"]["sdpa_backend"] == "flash" and r["sdpa_flash"]["num_kernels"] == 1
    assert r["naive_inplace"]["hidden_copies"] == []
    ids = {i["id"] for i in r["sdpa_math"]["insights"]}
    assert "mask_rebuilt" in ids


def test_the_table_marks_noisy_rows(live_doc):
    doc, stdout = live_doc
    assert "Recommendation: " + doc["recommendation"]["text"][:40] in " ".join(stdout.split())
    if any(r["cpu_time"]["noisy"] for r in _ok(doc)):
        assert "~" in stdout


# ---- a deliberately wrong variant, run live ------------------------------------------------------


def _wrong(case, x):
    # Returns V itself: the right shape, no work at all (so it is the fastest), and wrong.
    v = x.v
    return Prepared(fn=lambda: v.clone())


WRONG = Variant("wrong_fast", "naive", "returns V unchanged (deliberately wrong)", lambda c: None, _wrong)


def test_a_wrong_fast_variant_is_flagged_and_never_recommended(monkeypatch, tmp_path, capsys):
    from attnscope.cli.main import main

    monkeypatch.setitem(REGISTRY, "wrong_fast", WRONG)
    out = tmp_path / "run.json"
    rc = main(
        ["run", *CASE_ARGS, "--variants", "wrong_fast,sdpa_flash", "--budget", "0.02", "--no-peak", "--json", str(out)]
    )
    assert rc in (0, None)
    doc = json.loads(out.read_text())
    r = {x["variant"]: x for x in doc["results"]}
    w = r["wrong_fast"]
    assert w["status"] == "ok" and w["numerics_ok"] is False and w["max_rel_error"] > 1e-4
    (ins,) = [i for i in w["insights"] if i["id"] == "numerics_off"]
    assert ins["severity"] == "error"
    assert ins["evidence"]["tolerance"] == 1e-4 and ins["evidence"]["dtype"] == "fp32"
    assert not [i for i in w["insights"] if i["id"] == "slower_than_best"]
    rec = doc["recommendation"]
    assert rec["best"] == "sdpa_flash"
    assert rec["excluded"] == ["wrong_fast (numerics off)"]
    text = capsys.readouterr().out
    assert "✗" in text
