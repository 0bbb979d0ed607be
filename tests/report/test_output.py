"""The default terminal output: insights grouped by what to do (each advice once), host-side notes and
rules not checked only with --verbose, jargon explained where it appears, odd-looking rows explained."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from attnscope.analysis.annotate import annotate
from attnscope.cli.main import main
from attnscope.report.text.table import render

CPU_RUN = Path(__file__).parents[1] / "data" / "cpu" / "run_all.json"  # a real CPU run of every variant
H200_RUN = Path(__file__).parents[1] / "data" / "h200" / "run.json"


def _text(doc: dict, verbose: bool = False) -> str:
    buf = io.StringIO()
    render(annotate(doc), Console(file=buf, width=400, color_system=None, soft_wrap=True), verbose=verbose)
    return buf.getvalue()


def _cpu_doc() -> dict:
    doc = json.loads(CPU_RUN.read_text())
    # a host-side note as the runner writes it for a variant entered through a context manager
    for r in doc["results"]:
        if r["variant"] == "sdpa_flash":
            r["notes"] = ["entering+leaving its context manager costs 8.0 µs per use (kept out of CPU µs)"]
    return doc


def test_each_advice_once_with_every_finding_under_it() -> None:
    doc = annotate(_cpu_doc())
    out = _text(doc)
    advices = [i["advice"] for r in doc["results"] for i in r["insights"]]
    assert len(advices) > len(set(advices))  # the run repeats advice across variants …
    for a in set(advices):
        assert out.count(f"→ {a}") == 1  # … the output says each once
    n = len(advices)
    assert f"Insights: {n}, grouped by what to do" in out
    loud = _text(_cpu_doc(), verbose=True)
    for r in doc["results"]:
        for i in r["insights"]:
            assert f"{r['variant']} [{i['id']}] {i['message']}" in loud  # --verbose: every finding in full
            if i["id"] == "score_matrix":  # default: one line, each variant's own numbers
                ev = i["evidence"]
                assert f"{r['variant']} {ev['peak_mib']:.1f} MiB ({ev['peak_over_score']:.1f}×)" in out
            elif i["id"] == "slower_than_best":
                assert f"{r['variant']} {i['evidence']['ratio']:.2f}×" in out
            else:
                assert i["message"] in out


def test_host_side_notes_and_unchecked_rules_only_with_verbose() -> None:
    quiet, loud = _text(_cpu_doc()), _text(_cpu_doc(), verbose=True)
    assert "context manager" not in quiet and "context manager costs 8.0 µs" in loud
    trace_doc = copy.deepcopy(_cpu_doc())
    for r in trace_doc["results"]:
        r["source"] = "trace"  # a trace cannot check numerics: a rule not checked
    quiet, loud = _text(trace_doc), _text(trace_doc, verbose=True)
    assert "not checked: numerics_off" not in quiet and "--verbose says which and why" in quiet
    assert "not checked: numerics_off" in loud


def test_jargon_explained_only_where_it_appears() -> None:
    cpu = _text(_cpu_doc())
    assert '"safe" softmax: softmax plus guard passes' in cpu  # sdpa_math's safe_softmax insight
    assert "O(S·D) minimum: the output itself" in cpu  # naive's score_matrix insight
    assert "regs+smem (occupancy)" not in cpu  # no occupancy on CPU
    gpu = _text(json.loads(H200_RUN.read_text()))
    assert "regs+smem (occupancy)" in gpu  # cuDNN's kernel is limited by both on the H200
    only_flash = {
        "schema_version": 1,
        "results": [r for r in json.loads(CPU_RUN.read_text())["results"] if r["variant"] == "sdpa_flash"],
    }
    assert "safe" not in _text(only_flash) and "O(S·D) minimum" not in _text(only_flash)


def test_equal_peaks_and_zero_ops_are_explained() -> None:
    out = _text(_cpu_doc())
    # the CPU run measured 1,377,920 B for both naive variants
    assert "naive and naive_inplace reach the same peak memory" in out
    assert "flex_compiled: 0 ops: no aten compute op ran inside the call" in out
    doc = json.loads(H200_RUN.read_text())  # GPU rows have kernels: no 0-ops line
    assert "0 ops" not in _text(doc)


@pytest.mark.slow
def test_analyze_detects_cpu_only_traces_without_the_flag(tmp_path, capsys) -> None:
    pytest.importorskip("torch")
    tdir = tmp_path / "tr"
    argv = ["run", "--device", "cpu", "--batch", "1", "--heads", "2", "--seq", "64", "--head-dim", "16"]
    assert (
        main([*argv, "--variants", "naive,sdpa_flash", "--budget", "0.02", "--no-peak", "--trace-dir", str(tdir)]) == 0
    )
    capsys.readouterr()
    assert main(["analyze", str(tdir)]) == 0
    out = capsys.readouterr().out
    assert "naive" in out and "sdpa_flash" in out and "ops" in out
    assert main(["analyze", str(tdir), "--cpu"]) == 0  # the old flag stays harmless


def test_version(capsys) -> None:
    from attnscope import __version__

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"attnscope {__version__}"
