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
