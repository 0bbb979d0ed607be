"""Model documents of every layout and version: one written before its rows carried their point (the committed
Llama-3-8B document of docs/results, schema_version 1 like today's) is read as one written now by diff, recommend and
report; a model document of a newer version is refused by each in one line that names its version and the versions
read, exit 2.  Expected values are read from the files with the ``json`` module, or worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from attnscope.cli.main import main
from attnscope.document.load import load

ROOT = Path(__file__).resolve().parents[2]
OLD = ROOT / "docs" / "results" / "raw" / "model" / "llama3_8b_h200.json"


def _timing(median: float) -> dict[str, Any]:
    return {"median_us": median, "p25_us": median - 1, "p75_us": median + 1, "min_us": median - 2, "noisy": False}


def _old_doc(sdpa_us: float) -> dict[str, Any]:
    """A model document as `attnscope model` wrote it before its --batch/--seq grids: the point in the document's
    case only, rows without variant, case, batch, seq or quartiles."""
    rows = [
        {"impl": impl, "mode": "prefill", "status": "ok", "reason": None, "step_time_us": t, "step_time": _timing(t)}
        for impl, t in (("eager", 200.0), ("sdpa", sdpa_us))
    ]
    return {
        "schema_version": 1,
        "tool": "attnscope",
        "kind": "model",
        "partial": False,
        "env": {"device_name": "cpu"},
        "config": {"name": "tiny", "model_type": "llama", "num_hidden_layers": 2},
        "case": {"device": "cpu", "dtype": "fp32", "batch": 1, "seq": 16, "impls": ["eager", "sdpa"]},
        "results": rows,
        "recommendations": {},
    }


def test_the_committed_older_document_reads_as_one_written_now():
    raw = json.loads(OLD.read_text())
    assert raw["schema_version"] == 1 and all("variant" not in r for r in raw["results"])  # the older layout
    src = load(OLD)
    assert src.kind == "model"
    case = raw["case"]
    point = {"config": raw["config"]["name"], "layers": raw["config"]["num_hidden_layers"]}
    point |= {"batch": case["batch"], "seq": case["seq"], "dtype": case["dtype"], "device": case["device"]}
    assert point == {"config": "llama-3-8b", "layers": 2, "batch": 2, "seq": 2048, "dtype": "bf16", "device": "cuda"}
    assert src.doc["case"]["points"] == [{"batch": 2, "seq": 2048}]
    assert len(src.doc["results"]) == len(raw["results"]) == 12
    for got, was in zip(src.doc["results"], raw["results"], strict=True):
        assert got["variant"] == was["impl"] and got["case"] == {**point, "mode": was["mode"]}
        assert (got["batch"], got["seq"]) == (2, 2048)
        t = was["step_time"] or {}
        quartiles = ("median_us", "p25_us", "p75_us")
        assert [got[k] for k in quartiles] == [t.get(k) for k in quartiles]
        assert {k: got[k] for k in was} == was  # every field it had, kept as it was


@pytest.mark.parametrize("command", [["diff", str(OLD), str(OLD)], ["recommend", str(OLD)]])
def test_diff_and_recommend_read_the_older_document(capsys, command):
    assert main(command) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "eager prefill batch=2 seq=2048" in out if command[0] == "diff" else "Recommendation (prefill)" in out


def test_report_reads_the_older_document(tmp_path, capsys):
    page = tmp_path / "m.html"
    assert main(["report", str(OLD), "-o", str(page)]) == 0, capsys.readouterr().err
    assert page.stat().st_size > 0


def test_a_hand_made_older_pair_is_diffed_by_step_time(tmp_path, capsys):
    """sdpa 100 → 130 µs per step: +30 µs, +30 % (130 − 100 over 100), past a 10 % threshold: exit 1; eager the same."""
    a, b, out = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "d.json"
    a.write_text(json.dumps(_old_doc(100.0)))
    b.write_text(json.dumps(_old_doc(130.0)))
    assert main(["diff", str(a), str(b), "--threshold", "10", "--json", str(out)]) == 1
    d = json.loads(out.read_text())
    by = {v["variant"]: v for v in d["variants"]}
    assert by["sdpa"]["step_time_us"] == {"a": 100.0, "b": 130.0, "delta": 30.0, "delta_pct": 30.0}
    assert by["eager"]["step_time_us"]["delta"] == 0.0
    assert [(r["variant"], r["metric"]) for r in d["regressions"]] == [("sdpa", "step_time_us")]


@pytest.mark.parametrize("version", [2, 7])
@pytest.mark.parametrize("command", ["diff", "recommend", "report"])
def test_a_newer_model_document_is_refused_naming_its_version(tmp_path, capsys, version, command):
    doc = tmp_path / "new.json"
    doc.write_text(json.dumps({**_old_doc(100.0), "schema_version": version}))
    argv = {"diff": ["diff", str(doc), str(doc)], "recommend": ["recommend", str(doc)]}.get(
        command, ["report", str(doc), "-o", str(tmp_path / "p.html")]
    )
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == (
        f"attnscope: error: {doc}: a model document of schema_version {version}, newer than this attnscope reads "
        "(model documents of schema_version 1): a newer attnscope reads it\n"
    )
    assert not (tmp_path / "p.html").exists()


@pytest.mark.parametrize("version", [0, "1", True, None])
def test_a_model_document_whose_version_is_no_version_is_refused(tmp_path, capsys, version):
    doc = tmp_path / "bad.json"
    doc.write_text(json.dumps({**_old_doc(100.0), "schema_version": version}))
    assert main(["recommend", str(doc)]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith(f"attnscope: error: {doc}: schema_version must be a positive integer, got ")
        and err.count("\n") == 1
    )
