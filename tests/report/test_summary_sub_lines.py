"""``analyze``'s summary: a line that belongs to the bullet above it (a graph's capture and its ops, the largest idle
gaps, a copy's cause) is drawn under that bullet's text, not as a bullet of its own."""

from __future__ import annotations

import io

from rich.console import Console

from attnscope.api import analyze_traces
from attnscope.report.text.summary import render_summary
from tests.rawtrace import DATA, raw_gz_events

REPLAY = DATA / "h100/serving/decode_graph_replay.json.gz"


def _text(width: int) -> list[str]:
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None)
    doc, errors = analyze_traces([str(REPLAY)], jobs=1)
    assert doc is not None and not errors
    render_summary(doc["results"][0], console)
    return buf.getvalue().splitlines()


def test_sub_lines_sit_under_their_bullet():
    """The replay trace has 16 graph launches (cudaGraphLaunch runtime calls, counted here from the raw JSON) and
    3 largest gaps: the CUDA-graph bullet and the GPU bullet each carry their sub-lines, indented past the bullet's
    text, and no bullet opens with blank space (it once printed "•    matched against …" and "•    gap of …")."""
    launches = sum(1 for e in raw_gz_events(REPLAY) if e.get("name") == "cudaGraphLaunch")
    assert launches == 16
    for width in (80, 120):
        lines = _text(width)
        assert not [s for s in lines if s.lstrip().startswith("•  ")]
        graph = next(i for i, s in enumerate(lines) if s.startswith(f"  • CUDA graphs: {launches} graph launch"))
        sub = next(i for i, s in enumerate(lines) if "matched against" in s)
        assert sub > graph and lines[sub].startswith("      matched against")
        gaps = [s for s in lines if s.strip().startswith("gap of")]
        assert len(gaps) == 3 and all(s.startswith("      gap of") for s in gaps)
        assert all(len(s.rstrip()) <= width for s in lines)


def test_kernel_names_are_shown_without_their_void_return_type():
    """Every kernel of the H200 flash trace is named "void pytorch_flash::…" in the raw JSON: at 80 columns the top
    kernels' heading wrapped after "void", a line holding that word alone; the name opens the line now."""
    from tests.rawtrace import H200, raw_events

    path = H200 / "sdpa_flash.json"
    (name,) = {e["name"] for e in raw_events(path) if e.get("cat") == "kernel"}
    assert name.startswith("void pytorch_flash::flash_fwd_kernel<")
    buf = io.StringIO()
    doc, _ = analyze_traces([str(path)], jobs=1)
    assert doc is not None
    render_summary(doc["results"][0], Console(file=buf, width=80, color_system=None))
    lines = buf.getvalue().splitlines()
    assert not [s for s in lines if s.rstrip().endswith(" void")]
    top = lines.index("sdpa_flash: top kernels and their launching ops")
    assert lines[top + 1].startswith("• " + name.removeprefix("void ")[:40])


def test_a_category_title_wider_than_its_table_is_a_line_of_its_own():
    """HTA's MI250 trace is named by its file (44 characters): its "…: GPU time by category" title (66) is wider
    than the four-column table, which rich wrapped to the table's width, ": GPU time by category" on a second
    line. The width of the table is counted here from its widest cells: 13 + 9 + 10 + 7 and five bars = 44."""
    from tests.rawtrace import DATA

    path = DATA / "hta/amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz"
    name = path.name.removesuffix(".json.gz")
    assert len(name) == 44
    doc, _ = analyze_traces([str(path)], jobs=1)
    assert doc is not None
    for width in (80, 120):
        buf = io.StringIO()
        render_summary(doc["results"][0], Console(file=buf, width=width, color_system=None))
        lines = buf.getvalue().splitlines()
        at = [s.rstrip() for s in lines].index(f"{name}: GPU time by category")
        assert lines[at + 1].startswith("┏") and len(lines[at + 1]) == 44
    # a title that fits its table stays centred above it, as rich draws it
    flash = DATA / "h200" / "sdpa_flash.json"
    doc, _ = analyze_traces([str(flash)], jobs=1)
    assert doc is not None
    buf = io.StringIO()
    render_summary(doc["results"][0], Console(file=buf, width=80, color_system=None))
    assert "     sdpa_flash: GPU time by category" in [s.rstrip() for s in buf.getvalue().splitlines()]


def test_a_copy_under_a_mib_is_said_in_kib_not_as_zero_mib():
    """The H200 Llama training step's aten::flatten copies one [2, 2047] long int tensor (the raw trace's aten::copy_
    inside aten::flatten): 2·2047·8 = 32,752 bytes = 31.98 KiB, once listed as "0.0 MiB"."""
    from attnscope.report.text.summary import _offender_lines
    from tests.rawtrace import DATA, raw_gz_events

    path = DATA / "h200/model/model_sdpa_train.json.gz"
    ops = [e for e in raw_gz_events(path) if e.get("cat") == "cpu_op"]
    copies = [
        o
        for f in ops
        if f["name"] == "aten::flatten"
        for o in ops
        if o["name"] == "aten::copy_" and o["tid"] == f["tid"] and f["ts"] <= o["ts"] <= f["ts"] + f["dur"]
    ]
    assert [(c["args"]["Input Dims"][0], c["args"]["Input type"][0]) for c in copies] == [([2, 2047], "long int")]
    nbytes = 2 * 2047 * 8
    doc, _ = analyze_traces([str(path)], jobs=1)
    assert doc is not None
    lines = _offender_lines(doc["results"][0]["trace_summary"], 5)
    (line,) = [s for s in lines if "caused by aten::flatten" in s]
    assert f"caused by aten::flatten: {nbytes / 1024:.1f} KiB," in line and "0.0 MiB" not in line
