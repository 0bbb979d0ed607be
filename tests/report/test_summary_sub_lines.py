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
