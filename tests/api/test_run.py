"""`attnscope.run` does all that `attnscope run` does and returns the annotated document: insights per row,
the recommendation, verdicts of predictions, the timeout's rule; the command line only parses and renders."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import attnscope
from attnscope.core.types import Case, Prediction

ROOT = Path(__file__).resolve().parents[2]
CASE = Case(batch=1, heads=1, seq_q=16, head_dim=8, dtype="fp32", causal=True, device="cpu")
FAST = {"timing_budget_s": 0.01, "measure_peak": False}


@pytest.fixture(scope="module")
def doc():
    pytest.importorskip("torch")
    preds = [Prediction("naive", "kernels", 1, note="one op"), Prediction("sdpa_math", "upcast", False)]
    return attnscope.run(CASE, "naive,sdpa_math", predictions=preds, **FAST)


def test_the_document_is_annotated_as_run_json_writes_it(doc):
    assert doc["schema_version"] and [r["variant"] for r in doc["results"]] == ["naive", "sdpa_math"]
    assert all(isinstance(r["insights"], list) for r in doc["results"])
    # a best, or (on a loaded machine, quartiles overlapping across more than 1.5×) the point said unresolved
    rec = doc["recommendation"]
    if rec.get("unresolved"):
        assert rec["text"].startswith("unresolved: ")
    else:
        assert rec["text"].startswith("best for this case:") and rec["best"] in ("naive", "sdpa_math")
    # the verdicts of both predictions; naive computes Q·Kᵀ and P·V as two matmuls at least, so "1" is a clear miss
    verdicts = {(v["prediction"]["variant"], v["prediction"]["kind"]): v for v in doc["verdicts"]}
    assert set(verdicts) == {("naive", "kernels"), ("sdpa_math", "upcast")}
    assert verdicts[("naive", "kernels")]["outcome"] == "miss" and verdicts[("naive", "kernels")]["measured"] >= 2
    json.dumps(dict(doc))  # plain data, as written to --json


def test_the_run_objects_are_still_there(doc):
    """Code written against the RunReport this call used to return keeps working."""
    assert [r.variant for r in doc.results] == ["naive", "sdpa_math"]
    assert doc.env.torch and doc.case == CASE and doc.peak is None


def test_a_timeout_is_refused_where_it_cannot_be_enforced():
    with pytest.raises(ValueError, match="timeout_s needs a worker it can stop, and executor inline"):
        attnscope.run(CASE, "naive", executor="inline", timeout_s=5.0, **FAST)
    for bad in (0.0, -5.0):
        with pytest.raises(ValueError, match="> 0"):
            attnscope.run(CASE, "naive", executor="process", timeout_s=bad, **FAST)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names |= {f"{node.module}.{a.name}" for a in node.names}
    return names


def test_run_and_guess_measure_through_the_api():
    """The command modules call attnscope.api.run; neither runs the executor nor annotates by itself."""
    for name in ("run", "guess"):
        got = _imports(ROOT / "attnscope" / "cli" / f"{name}.py")
        assert not any(i.startswith(("attnscope.execute.", "attnscope.analysis.annotate")) for i in got), got
        assert "attnscope.cli.run.cmd_run" not in got
    assert "attnscope.api.run_request" in _calls(ROOT / "attnscope" / "cli" / "run.py")
    assert "attnscope.api.running.run_checked" in _imports(ROOT / "attnscope" / "cli" / "guess.py")
    assert "attnscope.cli.run.measure_and_render" in _imports(ROOT / "attnscope" / "cli" / "guess.py")


def _calls(path: Path) -> set[str]:
    """``attnscope.api.X`` for each ``api.X(...)`` of a module that imports ``from attnscope import api``."""
    tree = ast.parse(path.read_text())
    return {
        f"attnscope.api.{node.func.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "api"
    }


def test_the_documents_peak_carries_the_measured_read_bandwidth_where_there_is_one():
    from attnscope.api.running import _peak
    from attnscope.core.types import PeakRate

    assert _peak(None) is None
    cpu = PeakRate(0.9, "1024³ bf16 matmul")
    assert _peak(cpu) == {"tflops": 0.9, "source": "1024³ bf16 matmul"}  # no read probe on a CPU: no key
    gpu = PeakRate(808.0, "8192³ bf16 matmul", 4.255, "x.sum() in fp32 over 2,147,483,648 B of bf16")
    assert _peak(gpu)["bandwidth_tbps"] == 4.255 and _peak(gpu)["bandwidth_source"].startswith("x.sum()")


def test_annotate_reads_the_measured_bandwidth_into_the_roofline():
    """268,566,528 B in 70.3 µs = 3.820 TB/s; against a measured 4.255 TB/s read ceiling that is 89.8 %."""
    from attnscope.analysis.roofline import row_roofline

    row = {
        "variant": "sdpa_cudnn",
        "status": "ok",
        "case": {"batch": 8, "heads": 32, "kv_heads": 8, "seq_q": 1, "seq_kv": 8192, "head_dim": 128, "dtype": "bf16",
                 "device": "cuda", "mode": "fwd", "mask": "none"},
        "gpu_time_us": 70.3,
        "flops": 2 * 2 * 8 * 32 * 1 * 8192 * 128,
        "device_name": "NVIDIA H200",
    }  # fmt: skip
    rf = row_roofline(row, 808.0, 4.255)
    assert rf is not None and rf["bytes"] == 2 * 8 * 32 * 1 * 128 * 2 + 2 * 8 * 8 * 8192 * 128 * 2
    assert abs(rf["pct_bandwidth_measured"] - 100 * (rf["bytes"] / 70.3e-6 / 1e12) / 4.255) < 1e-6
