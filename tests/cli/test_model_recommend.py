"""`recommend` reads the rows of `model --out` and agrees with the model's own recommendation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from attnscope.analysis.recommend.model_points import as_generic
from attnscope.cli.main import main


def test_recommend_on_model_rows_matches_the_model_document(tmp_path: Path):
    out, doc, rec = tmp_path / "m.jsonl", tmp_path / "m.json", tmp_path / "rec.json"
    argv = ["model", "--config", "tiny", "--impl", "eager,sdpa", "--mode", "prefill", "--seq", "16,24"]
    assert main([*argv, "--budget", "0.01", "--executor", "inline", "--out", str(out), "--json", str(doc)]) == 0
    assert main(["recommend", str(out), "--json", str(rec)]) == 0
    d, r = json.loads(doc.read_text()), json.loads(rec.read_text())
    assert set(d["recommendations"]) == {"prefill B1 S16", "prefill B1 S24"}
    for k, v in d["recommendations"].items():
        assert r["recommendations"][k]["best"] == v["best"] and r["recommendations"][k]["best_us"] == v["best_us"]
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    for row in rows:  # the best of each point is the lowest median of the timed steps, read from the rows here
        here = [x for x in rows if x["seq"] == row["seq"]]
        best = min(here, key=lambda x: x["step_time"]["median_us"])
        assert d["recommendations"][f"prefill B1 S{row['seq']}"]["best"] == best["impl"]


def test_generic_row_by_hand():
    row = {
        "impl": "sdpa",
        "mode": "train",
        "status": "ok",
        "batch": 4,
        "seq": 512,
        "case": {"config": "tiny", "batch": 4, "seq": 512, "mode": "train"},
        "step_time": {"median_us": 10.0, "p25_us": 9.0, "p75_us": 12.0, "noisy": True, "method": "m"},
    }
    g = as_generic(row)
    assert g["variant"] == "sdpa" and (g["median_us"], g["p25_us"], g["p75_us"]) == (10.0, 9.0, 12.0)
    assert g["point"] == {"config": "tiny", "seq": 512, "batch": 4, "mode": "train"} and g["status"] == "ok"


def test_report_reads_model_rows_as_a_model_page(tmp_path: Path):
    from attnscope.document.load import load_source

    out = tmp_path / "m.jsonl"
    argv = ["model", "--config", "tiny", "--impl", "sdpa", "--mode", "prefill", "--seq", "16,24", "--budget", "0.01"]
    assert main([*argv, "--executor", "inline", "--out", str(out)]) == 0
    src = load_source(out)
    assert src.kind == "model" and [p["seq"] for p in src.doc["case"]["points"]] == [16, 24]
    assert len(src.doc["results"]) == 2 and src.doc["config"]["name"] == "tiny"
    assert main(["report", str(out), "-o", str(tmp_path / "r.html")]) == 0
    assert "sdpa" in (tmp_path / "r.html").read_text()
