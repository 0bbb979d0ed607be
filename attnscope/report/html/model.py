"""The model section: per attention implementation and mode, the step time, attention's share of the
profiled step (its kernel, the q/k/v/o projections and the work around it: masks, repeat_kv, upcasts,
copies, rotary, KV cache) against the rest, the share per layer, the copies and upcasts inside
attention, the insights and the recommendation per mode.  Reads what `attnscope model` writes."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from attnscope.core.units import fmt_mib
from attnscope.document.load import Source
from attnscope.report.html.markup import Markup, Page, join, plot_text, table, tag
from attnscope.report.html.run import env_table, host_banner, insights_block, timing_caption
from attnscope.report.html.timeline import rel_link

# Stack order and colours: attention's own parts in warm colours, the rest of the step in cool ones.
ATTENTION_PARTS = {
    "kernel": "#b71c1c",
    "projections": "#e57373",
    "mask": "#ff9800",
    "repeat_kv": "#ffb74d",
    "upcasts": "#fdd835",
    "copies": "#f06292",
    "rotary": "#ba68c8",
    "kv_cache": "#8d6e63",
    "other": "#ffccbc",
}
REST_COLOURS = ["#1565c0", "#42a5f5", "#26a69a", "#78909c", "#5c6bc0", "#9ccc65", "#546e7a", "#b0bec5"]


def _label(r: dict[str, Any]) -> str:
    return f"{r.get('impl', '?')} · {r.get('mode', '?')}"


def _total(r: dict[str, Any]) -> float | None:
    t = (r.get("breakdown") or {}).get("total_us")
    return float(t) if isinstance(t, int | float) and t > 0 else None


def _pct(part: Any, whole: float | None) -> str:
    return f"{100.0 * part / whole:.1f}%" if isinstance(part, int | float) and whole else "—"


def _step(r: dict[str, Any]) -> Markup | str:
    t = r.get("step_time") or {}
    if t.get("median_us") is None:
        return "—" if r.get("step_time_us") is None else f"{r['step_time_us']:,.1f}"
    s = f"{t['median_us']:,.1f}"
    return tag("span", s + " ~", class_="warn", title="noisy: IQR/median > 10%") if t.get("noisy") else s


def results_table(results: list[dict[str, Any]]) -> Markup:
    rows = []
    for r in results:
        a, rest, total = r.get("attention") or {}, r.get("rest") or {}, _total(r)
        top = sorted((rest.get("parts") or {}).items(), key=lambda kv: -kv[1])[:2]
        mem = r.get("peak_memory_bytes")
        rows.append(
            [
                r.get("impl"),
                r.get("mode"),
                tag("span", r.get("status"), class_="st-" + str(r.get("status"))),
                _step(r),
                _pct(a.get("time_us"), total),
                _pct(a.get("kernel_us"), total),
                _pct(a.get("projections_us"), total),
                _pct(a.get("around_us"), total),
                _pct(rest.get("time_us"), total),
                ", ".join(f"{k} {_pct(v, total)}" for k, v in top if v > 0),
                "—" if mem is None else fmt_mib(mem, grouped=True),
                r.get("reason") or "",
            ]
        )
    heads = ["impl", "mode", "status", "step µs", "attention", "kernel", "projections", "around", "rest"]
    heads += ["top of the rest", "peak mem", "reason"]
    return table(heads, rows, cls="data fingerprint")


def split_figure(page: Page, ok: list[dict[str, Any]]) -> Markup:
    """One stacked bar per (implementation, mode): every part as a % of the profiled step."""
    y = [plot_text(_label(r)) for r in ok]
    rest_names = list(dict.fromkeys(k for r in ok for k in ((r.get("rest") or {}).get("parts") or {})))
    series: list[tuple[str, str, list[float]]] = []
    for part, colour in ATTENTION_PARTS.items():
        vals = [((r.get("attention") or {}).get("parts") or {}).get(part, 0.0) for r in ok]
        series.append((f"attention: {part}", colour, vals))
    for i, part in enumerate(rest_names):
        vals = [((r.get("rest") or {}).get("parts") or {}).get(part, 0.0) for r in ok]
        series.append((f"rest: {part}", REST_COLOURS[i % len(REST_COLOURS)], vals))
    series.append(("unattributed", "#e0e0e0", [(r.get("breakdown") or {}).get("unattributed_us") or 0.0 for r in ok]))
    totals = [_total(r) or 1.0 for r in ok]
    data = []
    for name, colour, vals in series:
        if not any(vals):
            continue
        data.append(
            {"type": "bar", "orientation": "h", "name": plot_text(name), "y": y, "marker": {"color": colour}}
            | {"x": [100.0 * v / t for v, t in zip(vals, totals, strict=True)], "customdata": vals}
            | {"hovertemplate": "%{x:.1f}% (%{customdata:,.1f} µs)<extra>" + plot_text(name) + "</extra>"}
        )
    layout = {
        "barmode": "stack",
        # a legend taller than the plot is clipped (plotly scrolls it): the figure is as tall as its legend
        "height": max(120 + 34 * len(ok), 60 + 22 * len(data)),
        "xaxis": {"title": {"text": "% of the profiled step"}, "range": [0, 100]},
        "yaxis": {"autorange": "reversed"},
        "margin": {"l": 170, "r": 20, "t": 20, "b": 50},
        "legend": {"font": {"size": 11}},
    }
    methods = sorted({str((r.get("breakdown") or {}).get("method")) for r in ok if r.get("breakdown")})
    return page.figure(data, layout, "Where the step goes. " + " ".join(f"Split: {m}." for m in methods))


def step_figure(page: Page, ok: list[dict[str, Any]]) -> Markup:
    by_impl: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in ok:
        by_impl[str(r.get("impl"))].append(r)
    data = []
    for impl, rs in by_impl.items():
        ts = [r.get("step_time") or {} for r in rs]
        data.append(
            {"type": "bar", "name": plot_text(impl), "x": [plot_text(r.get("mode")) for r in rs]}
            | {"y": [t.get("median_us") for t in ts], "hovertemplate": "%{y:,.1f} µs<extra></extra>"}
            | {
                "error_y": {
                    "type": "data",
                    "symmetric": False,
                    "array": [t["p75_us"] - t["median_us"] if t.get("p75_us") else None for t in ts],
                    "arrayminus": [t["median_us"] - t["p25_us"] if t.get("p25_us") else None for t in ts],
                }
            }
        )
    layout = {"barmode": "group", "height": 340, "yaxis": {"type": "log", "title": {"text": "µs per step (log)"}}}
    return page.figure(data, layout, "Step time, median; whiskers: quartiles. " + timing_caption(ok, ("step_time",)))


def layers_figure(page: Page, ok: list[dict[str, Any]]) -> Markup:
    data = []
    for r in ok:
        layers = [x for x in r.get("layers") or [] if isinstance(x, dict) and x.get("total_us")]
        if not layers:
            continue
        data.append(
            {"type": "bar", "name": plot_text(_label(r)), "x": [plot_text(x.get("layer")) for x in layers]}
            | {"y": [100.0 * (x.get("attention_us") or 0.0) / x["total_us"] for x in layers]}
            | {"hovertemplate": "%{x}: %{y:.1f}% of the layer<extra></extra>"}
        )
    if not data:
        return Markup("")
    layout = {"barmode": "group", "height": 340, "xaxis": {"type": "category"}}
    layout["yaxis"] = {"title": {"text": "attention, % of the layer's time"}, "range": [0, 100]}
    return join([tag("h3", "Attention per layer"), page.figure(data, layout, "Attention's share of each layer.")])


def copies_block(results: list[dict[str, Any]]) -> Markup:
    agg: dict[tuple[str, ...], list[int]] = defaultdict(lambda: [0, 0])
    for r in results:
        a = r.get("attention") or {}
        for what in ("hidden_copies", "upcasts"):
            for c in a.get(what) or []:
                key = (_label(r), what.replace("_", " "), str(c.get("part", "")), str(c.get("op", "")))
                agg[key][0] += 1
                agg[key][1] += int(c.get("bytes") or 0)
    if not agg:
        return tag("p", "no copies or upcasts inside attention", class_="dim")
    rows = [[*k, n, fmt_mib(b, grouped=True)] for k, (n, b) in sorted(agg.items())]
    return table(["impl · mode", "kind", "part", "op", "count", "size"], rows)


def _traces(src: Source, results: list[dict[str, Any]], out_dir: Path | None) -> Markup:
    rows = []
    for r in results:
        tp = r.get("trace_path")
        if not tp:
            continue
        p = next((c for c in (Path(tp), *([src.path.parent / Path(tp).name] if src.path else [])) if c.is_file()), None)
        rows.append([_label(r), tp, tag("a", p.name, href=rel_link(p, out_dir)) if p else "not found here"])
    if not rows:
        return Markup("")
    how = "Open https://ui.perfetto.dev, choose “Open trace file” and pick the file (read in your browser)."
    return join([tag("h3", "Traces"), tag("p", how), table(["impl · mode", "written to", "file"], rows)])


def model_section(page: Page, src: Source, out_dir: Path | None) -> None:
    doc = src.doc
    results = [r for r in doc.get("results") or [] if isinstance(r, dict)]
    ok = [r for r in results if r.get("status") == "ok" and _total(r)]
    cfg: dict[str, Any] = doc["config"] if isinstance(doc.get("config"), dict) else {}
    page.add(
        tag("h2", f"Model: {cfg.get('name') or src.label}"),
        host_banner(doc),
        env_table(doc.get("env"), doc.get("case")),
    )
    if cfg:
        scalars = [(k, v) for k, v in cfg.items() if isinstance(v, str | int | float | bool) or v is None]
        page.add(tag("details", tag("summary", "model config"), table(["", ""], scalars, cls="kv")))
    recs = doc.get("recommendations") or {}
    items = [tag("li", tag("b", f"{mode}: "), rec.get("text")) for mode, rec in recs.items() if isinstance(rec, dict)]
    page.add(tag("ul", *items, class_="rec") if items else "")
    page.add(tag("h3", "Where the step goes, per implementation and mode"), results_table(results))
    if ok:
        page.add(split_figure(page, ok), step_figure(page, ok), layers_figure(page, ok))
    page.add(tag("h3", "Copies and upcasts inside attention"), copies_block(results))
    page.add(tag("h3", "Insights"), insights_block([{**r, "variant": _label(r)} for r in results]))
    page.add(_traces(src, results, out_dir))
