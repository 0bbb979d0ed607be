"""The report reads documents only: what a page shows is stored by annotate (or, for an older document, added by
attnscope.api.report before the page); the page itself imports no analysis and computes none of it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from attnscope.api import annotate
from attnscope.api.report import UPDATED, render_html, sources
from attnscope.report.html.page import render_html as render_stored
from tests.htmldocs import h200_run, sweep_rows
from tests.rawtrace import H200

pytest.importorskip("plotly")
ROOT = Path(__file__).resolve().parents[2]
CPU_RUN = ROOT / "tests/data/cpu/run_all.json"


def _heads(page: str) -> list[str]:
    table = re.search(r'<table class="data fingerprint">(.*?)</thead>', page, re.S).group(1)
    return re.findall(r"<th>(.*?)</th>", table)


def test_annotate_stores_the_main_kernel_the_longest_compute_kernel():
    doc = h200_run()
    for r in annotate(doc)["results"]:
        compute = [k for k in r.get("kernels") or [] if k["category"] not in ("memcpy", "memset")]
        if not compute:
            assert r["main_kernel"] is None
            continue
        longest = max(k["duration_us"] for k in compute)
        assert r["main_kernel"]["duration_us"] == longest
        assert r["main_kernel"]["category"] not in ("memcpy", "memset")


def _flex_row(kernels: list[dict]) -> dict:
    case = {"batch": 1, "heads": 2, "seq_q": 64, "head_dim": 16, "device": "cuda"}
    return {"variant": "flex_compiled", "status": "ok", "family": "flex", "compile_time_s": 2.0, "case": case} | {
        "device_kind": "gpu",
        "kernels": kernels,
    }


def test_annotate_stores_why_a_compiled_row_ran_eager_code():
    eager = [{"name": "flex_attention_fwd_eager", "category": "attention", "duration_us": 5.0}]
    compiled = [{"name": "triton_tem_fused_0", "category": "attention", "duration_us": 5.0}]
    doc = {"schema_version": 1, "results": [_flex_row(eager), _flex_row(compiled)]}
    rows = annotate(doc)["results"]
    assert "1 kernel(s)" in rows[0]["eager_fallback"] and "no triton_* kernel" in rows[0]["eager_fallback"]
    assert rows[1]["eager_fallback"] is None


def test_the_page_modules_import_no_analysis(tmp_path):
    """Render a prepared document in a fresh interpreter and list what got imported."""
    prepared = sources([H200 / "run.json", sweep_rows()])
    (tmp_path / "docs.json").write_text(json.dumps([{"kind": s.kind, "doc": s.doc} for s in prepared]))
    code = f"""
import json, sys
from attnscope.document.load import Source
from attnscope.report.html.page import render_html
import attnscope.report.text.table, attnscope.report.text.sweep, attnscope.report.text.model
docs = [Source(d["kind"], d["doc"]) for d in json.load(open({str(tmp_path / "docs.json")!r}))]
assert "Recommendation" in render_html(docs)
bad = sorted(m for m in sys.modules if m.split(".")[:2] in (["attnscope", p] for p in
      ("analysis", "trace", "execute", "measure", "workloads", "variants", "api", "cli")))
print(json.dumps(bad))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_an_older_document_is_brought_up_to_date_and_the_page_says_so():
    assert all("insights" not in r for r in h200_run()["results"])  # written before insights were stored
    page = render_html([H200 / "run.json"])
    assert UPDATED in page
    assert re.search(r"\d+\.\d% (registers|shared_memory|warps|blocks)", page)  # occupancy of the main kernel


def test_an_older_document_given_to_the_page_as_it_is_renders_and_says_what_is_missing():
    page = render_stored([h200_run()])  # no annotation, no trace lookup: the page alone
    assert "no insights in this document" in page
    assert UPDATED not in page


def test_a_sweep_without_its_recommendation_says_so_and_the_api_adds_it():
    assert "No recommendation in this document" in render_stored([sweep_rows()])
    page = render_html([sweep_rows()])
    assert "No recommendation in this document" not in page and "Recommendation (the same as" in page


def test_a_cpu_run_shows_no_gpu_only_column():
    cpu, gpu = _heads(render_html([CPU_RUN])), _heads(render_html([H200 / "run.json"]))
    assert {"GPU µs", "TC", "occupancy", "memcpy/set"} & set(cpu) == set()
    assert {"GPU µs", "TC", "occupancy", "memcpy/set"} <= set(gpu)
    assert "ops" in cpu and "kernels" in gpu and "CPU µs" in cpu


def test_timing_captions_are_labelled_and_trace_links_said_to_be_relative():
    page = render_html([H200 / "run.json"])
    doc = h200_run()
    methods = {r["gpu_time"]["method"] for r in doc["results"] if r.get("gpu_time")}
    for m in methods:
        assert f"gpu time: {m}" in page.replace("GPU time", "gpu time")
    assert "relative to where this page was written" in page


def test_a_trace_given_to_the_report_is_analysed_by_the_api_first():
    page = render_html([H200 / "flex.json"])
    assert "Analyze: flex.json" in page
    assert "no insights in this document" not in page
