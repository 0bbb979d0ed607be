"""The kernel timeline: one Gantt strip per variant on a shared time axis.

Start times come from the document (``start_us`` of each kernel record) or, for a document written
before they were kept, from the variant's trace file, read with attnscope's own trace reader.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

from attnscope.document.load import Source
from attnscope.report.html.markup import Markup, Page, plot_text, wrap_plot_text

# One colour per category, the same in every plot of the page.
CATEGORY_COLOURS = {
    "attention": "#d62728",
    "gemm": "#1f77b4",
    "softmax": "#9467bd",
    "elementwise": "#2ca02c",
    "reduction": "#8c564b",
    "copy": "#ff7f0e",
    "memcpy": "#e377c2",
    "memset": "#bcbd22",
    "communication": "#17becf",
    "other": "#7f7f7f",
}
MAX_TIMELINE_EVENTS = 5000  # a whole training step: the trace in Perfetto serves better than a plot


def trace_candidates(r: dict[str, Any], src: Source) -> list[Path]:
    """Where the variant's trace may be: as written, or beside the document (a copied result folder)."""
    tp = r.get("trace_path")
    if not tp:
        return []
    out = [Path(tp)]
    if src.path is not None:
        out.append(src.path.parent / Path(tp).name)
    return out


def find_trace(r: dict[str, Any], src: Source) -> Path | None:
    return next((p for p in trace_candidates(r, src) if p.is_file()), None)


def timed_kernels(r: dict[str, Any], src: Source) -> tuple[list[dict[str, Any]], str | None]:
    """The result's kernels with start times, or none and the reason."""
    ks = list(r.get("kernels") or [])
    if not ks:
        return [], "no kernels (or, on CPU, ops) recorded in the call"
    if all(k.get("start_us") is not None for k in ks):
        return ks, None
    path = find_trace(r, src)
    where = f"open {path.name} in Perfetto for the timeline" if path else "no trace file found beside it"
    # the report reads documents only: it does not fingerprint the trace again
    return [], f"no start times in this document (written before they were stored); {where}"


def _dim(v: Any) -> str:
    return "×".join(str(x) for x in v) if v else "—"


def hover(k: dict[str, Any], rel_start_us: float) -> str:
    occ = k.get("theoretical_occupancy_pct")
    lines = [
        "<b>" + wrap_plot_text(k["name"]) + "</b>",
        plot_text(f"{k['category']} · {k['duration_us']:,.2f} µs · starts at +{rel_start_us:,.2f} µs"),
        plot_text(f"grid {_dim(k.get('grid'))}  block {_dim(k.get('block'))}"),
        plot_text(
            f"registers/thread {k.get('registers_per_thread') if k.get('registers_per_thread') is not None else '—'}"
            f"  shared memory {k.get('shared_memory_bytes') if k.get('shared_memory_bytes') is not None else '—'} B"
        ),
        plot_text(
            f"theoretical occupancy {occ:.1f}% ({k.get('occupancy_limiter') or '?'})"
            if occ is not None
            else "theoretical occupancy —"
        ),
        plot_text(f"launched by {k.get('launched_by') or '—'}"),
    ]
    if k.get("bytes") is not None:
        lines.append(plot_text(f"{k['bytes']:,} bytes"))
    return "<br>".join(lines)


def timeline_figure(page: Page, strips: list[tuple[str, list[dict[str, Any]]]], device: str) -> Markup:
    """Bars (true durations) plus a tick at each start, so a sub-pixel kernel is still seen and counted."""
    per_cat: dict[str, dict[str, list[Any]]] = {}
    labels = [plot_text(v) for v, _ in strips]
    for label, (_, ks) in zip(labels, strips, strict=True):
        t0 = min(k["start_us"] for k in ks)
        for k in ks:
            c = per_cat.setdefault(k["category"], {"y": [], "x": [], "base": [], "text": []})
            rel = k["start_us"] - t0
            c["y"].append(label)
            c["x"].append(k["duration_us"])
            c["base"].append(rel)
            c["text"].append(hover(k, rel))
    data: list[dict[str, Any]] = []
    for cat, c in per_cat.items():
        colour = CATEGORY_COLOURS.get(cat, "#7f7f7f")
        common = {"y": c["y"], "hovertext": c["text"], "hoverinfo": "text", "legendgroup": cat}
        data.append(
            {"type": "bar", "orientation": "h", "x": c["x"], "base": c["base"], "name": plot_text(cat), **common}
            | {"marker": {"color": colour}, "width": 0.6}
        )
        data.append(
            {"type": "scatter", "mode": "markers", "x": c["base"], "showlegend": False, **common}
            | {"marker": {"symbol": "line-ns-open", "size": 14, "color": colour, "line": {"width": 1}}}
        )
    unit = "GPU event" if device == "gpu" else "op"
    layout = {
        "barmode": "overlay",
        "height": 90 + 42 * len(strips),
        "xaxis": {"title": {"text": f"µs since the call's first {unit}"}, "zeroline": True},
        "yaxis": {"autorange": "reversed", "type": "category", "categoryorder": "array", "categoryarray": labels},
        "legend": {"orientation": "h", "y": -0.25 if len(strips) > 3 else -0.6},
        "margin": {"l": 130, "r": 20, "t": 20, "b": 60},
    }
    what = "kernel, memcpy and memset" if device == "gpu" else "leaf aten op (no device kernels on CPU)"
    return page.figure(
        data,
        layout,
        f"One strip per variant: each {what} of the captured call, in its category's colour, at its start "
        "on the trace's clock; a tick marks each start so short ones stay visible. Strips share the time axis. "
        "Hover for name, duration, grid, block, registers, shared memory, occupancy and launching op.",
    )


def rel_link(path: Path, out_dir: Path | None) -> str:
    """A link that works where the page is written (relative), or the absolute path."""
    if out_dir is None:
        return path.resolve().as_uri()
    try:
        rel = Path(os.path.relpath(path.resolve(), out_dir)).as_posix()
    except ValueError:  # another drive
        return path.resolve().as_uri()
    # "./" first: a file named "javascript:…" stays a path, never a scheme.
    return "./" + quote(rel) if not rel.startswith("../") else quote(rel)
