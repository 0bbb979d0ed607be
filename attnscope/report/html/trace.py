"""The analyze section: where a trace's GPU time went (categories, attention families, top kernels and
their launching ops, the steps and the CUDA graph replays, idle time, hidden copies and upcasts), from each result's
``trace_summary``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attnscope.core.units import fmt_mib, fmt_us
from attnscope.document.load import Source
from attnscope.report.html.markup import Markup, Page, join, plot_text, short, table, tag
from attnscope.report.html.run import (
    fingerprint_table,
    footnotes,
    insights_block,
    timeline_block,
    traces_block,
)
from attnscope.report.html.timeline import CATEGORY_COLOURS
from attnscope.report.text.summary import (
    FAMILY_COLUMNS,
    STEP_COLUMNS,
    collective_lines,
    families_note,
    graph_lines,
    step_cells,
    steps_note,
)


def summary_of(r: dict[str, Any]) -> dict[str, Any] | None:
    s = r.get("trace_summary") or (r.get("extra") or {}).get("trace_summary")
    return s if isinstance(s, dict) else None


def categories_figure(page: Page, cats: list[dict[str, Any]], title: str) -> Markup:
    rows = [c for c in cats if c.get("num_kernels")]
    data = [
        {
            "type": "bar",
            "orientation": "h",
            "y": [plot_text(c["category"]) for c in rows],
            "x": [c["time_us"] for c in rows],
            "text": [f"{c['share_pct']:.1f}%" for c in rows],
            "textposition": "outside",
            "marker": {"color": [CATEGORY_COLOURS.get(c["category"], "#7f7f7f") for c in rows]},
            "hovertemplate": "%{x:,.1f} µs (%{text})<extra></extra>",
        }
    ]
    layout = {
        "height": 80 + 28 * len(rows),
        "xaxis": {"title": {"text": "GPU µs"}},
        "yaxis": {"autorange": "reversed"},
        "margin": {"l": 110, "r": 60, "t": 10, "b": 40},
    }
    return page.figure(data, layout, title)


def families_block(page: Page, fams: list[dict[str, Any]]) -> Markup:
    if not fams:
        return tag("p", "no attention kernels found", class_="dim")
    rows = [
        [
            f["family"],
            ", ".join(f.get("implementations") or []),
            f"{f['num_kernels']:,}",
            "—"
            if f.get("num_forward_calls") is None
            else f"{f.get('num_forward_calls')}/{f.get('num_backward_calls', '—')}",
            fmt_us(f["time_us"]),
            f"{f['share_pct']:.1f}%",
            short((f.get("kernels") or [""])[0]),
        ]
        for f in fams
    ]
    heads = list(FAMILY_COLUMNS)
    data = [
        {
            "type": "bar",
            "x": [plot_text(f["family"]) for f in fams],
            "y": [f["share_pct"] for f in fams],
            "marker": {"color": CATEGORY_COLOURS["attention"]},
            "hovertemplate": "%{y:.1f}% of GPU time<extra></extra>",
        }
    ]
    if len(fams) < 2:  # one bar says nothing the table does not
        return table(heads, rows)
    fig = page.figure(data, {"height": 280, "yaxis": {"title": {"text": "% of GPU time"}}}, "Attention by family")
    return join([table(heads, rows), fig])


def top_kernels_table(rows: list[dict[str, Any]]) -> Markup:
    body = [
        [
            short(k["name"]),
            k["category"] + (f" ({k['attention_family']})" if k.get("attention_family") else ""),
            f"{k['num_calls']:,}",
            fmt_us(k["time_us"]),
            f"{k['share_pct']:.1f}%",
            ", ".join(f"{b['op']} ×{b['count']}" for b in k.get("launched_by") or []),
        ]
        for k in rows
    ]
    return table(["kernel", "category", "calls", "GPU time", "share", "launched by"], body)


def idle_block(idle: dict[str, Any] | None) -> Markup:
    if not idle:
        return tag("p", "no idle figures (no GPU events)", class_="dim")
    out = []
    for d in idle.get("devices") or []:
        gaps = ", ".join(f"{k}: {v:,}" for k, v in (d.get("gaps_by_length") or {}).items())
        out.append(
            tag(
                "p",
                f"device {d.get('device')}: span {fmt_us(d.get('span_us'))}, busy {fmt_us(d.get('busy_us'))}, "
                f"idle {fmt_us(d.get('idle_us'))} ({d.get('idle_pct', 0):.1f}%) "
                f"in {d.get('num_gaps', 0):,} gaps ({gaps})",
            )
        )
        big = d.get("largest_gaps") or []
        if big:
            rows = [[fmt_us(g.get("gap_us")), short(g.get("before")), short(g.get("next"))] for g in big]
            out.append(table(["gap", "after kernel", "before kernel"], rows))
    return join(out)


def ranked_block(sec: dict[str, Any] | None, what: str, keys: tuple[str, ...]) -> Markup:
    if not sec or not sec.get("num"):
        return tag("p", f"no {what}", class_="dim")
    head = tag(
        "p", f"{sec['num']:,} {what}, {fmt_mib(sec['bytes'], grouped=True)}, {fmt_us(sec.get('time_us'))} of GPU time"
    )
    rows = [
        [
            *(short(t.get(k)) for k in keys),
            f"{t.get('count', 1):,}",
            fmt_mib(t["bytes"], grouped=True),
            fmt_us(t.get("time_us")),
        ]
        for t in sec.get("top") or []
    ]
    return join([head, table([*keys, "count", "size", "GPU time"], rows)])


def steps_block(steps: dict[str, Any] | None) -> Markup:
    """Every step read from the trace's step ranges, as the terminal shows them (the page keeps all of them)."""
    if not steps:
        return tag("p", "no step ranges in this trace", class_="dim")
    rows = list(enumerate(steps["steps"], 1))
    return join(
        [
            tag("p", f"{steps['num_steps']:,} steps from {steps['source']}"),
            table(list(STEP_COLUMNS), step_cells(rows)),
            tag("p", steps_note(steps), class_="dim"),
        ]
    )


def graphs_block(graphs: dict[str, Any] | None) -> Markup:
    """The CUDA graph replays and how their kernels were matched to the ops of the capture."""
    lines = graph_lines(graphs)
    if not lines:
        return tag("p", "no CUDA graph launches in this trace", class_="dim")
    return join([tag("p", line.strip()) for line in lines])


def summary_block(page: Page, name: str, s: dict[str, Any]) -> Markup:
    hosts = collective_lines(s.get("cpu_collectives"))  # gloo's: on the CPU, said as the terminal says them
    return join(
        [
            tag("h3", f"{name}: {fmt_us(s.get('gpu_time_us'))} of GPU events, {s.get('num_gpu_events', 0):,} events"),
            categories_figure(page, s.get("categories") or [], "GPU time by category"),
            tag("h4", "Attention by family"),
            families_block(page, s.get("attention_families") or []),
            *([tag("p", note, class_="dim")] if (note := families_note(s)) else []),
            tag("h4", "Top kernels and the ops that launched them"),
            top_kernels_table(s.get("top_kernels") or []),
            tag("h4", "Steps"),
            steps_block(s.get("steps")),
            tag("h4", "CUDA graphs"),
            graphs_block(s.get("cuda_graphs")),
            *([tag("h4", "Collectives on the CPU"), join([tag("p", line.strip()) for line in hosts])] if hosts else []),
            tag("h4", "GPU idle time"),
            idle_block(s.get("idle")),
            tag("h4", "Hidden copies"),
            ranked_block(s.get("hidden_copies"), "hidden copies", ("op", "copy_op", "device_event")),
            tag("h4", "fp32 upcasts"),
            ranked_block(s.get("upcasts"), "upcasts", ("op", "src_dtype", "dst_dtype")),
        ]
    )


def analyze_section(page: Page, src: Source, out_dir: Path | None) -> None:
    doc = src.doc  # annotated: attnscope.api.report.prepare brings an older document up to date
    results = doc.get("results") or []
    page.add(tag("h2", f"Analyze: {src.label}"))
    for note in src.notes:
        page.add(tag("p", note, class_="dim"))
    page.add(fingerprint_table(results), tag("ul", *(tag("li", n) for n in footnotes(doc)), class_="notes"))
    page.add(timeline_block(page, src, results))
    for r in results:
        s = summary_of(r)
        if s:
            page.add(summary_block(page, r["variant"], s))
    overall = doc.get("overall")
    if isinstance(overall, dict) and overall.get("categories"):
        page.add(categories_figure(page, overall["categories"], "All ranks: GPU time by category"))
    page.add(tag("h3", "Insights"), insights_block(results), traces_block(src, results, out_dir))
