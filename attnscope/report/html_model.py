"""The model section: for each attention implementation and mode, the step time, attention's share of it
(the attention kernel and the work around it), the share per layer, hidden copies, upcasts and insights."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attnscope.report.html import Markup, Page, join, plot_text, table, tag
from attnscope.report.html_run import env_table, insights_block
from attnscope.report.sources import Source

MIB = 1024 * 1024


def _num(d: dict[str, Any], *keys: str) -> float | None:
    for k in keys:
        v = d.get(k)
        if isinstance(v, int | float) and not isinstance(v, bool):
            return float(v)
    return None


def _label(r: dict[str, Any]) -> str:
    return f"{r.get('impl', r.get('variant', '?'))} · {r.get('mode', '?')}"


def _share_pct(att: dict[str, Any]) -> float | None:
    s = _num(att, "share_pct", "share")
    if s is None:
        return None
    return s * 100 if "share_pct" not in att and s <= 1.0 else s


def _count_bytes(v: Any) -> str:
    """hidden_copies / upcasts: a list of records, or a summary with num and bytes."""
    if isinstance(v, list):
        b = sum(x.get("bytes") or 0 for x in v if isinstance(x, dict))
        return f"{len(v)} ({b / MIB:,.1f} MiB)" if v else "none"
    if isinstance(v, dict):
        return f"{v.get('num', '?')} ({(v.get('bytes') or 0) / MIB:,.1f} MiB)"
    return "—" if v is None else str(v)


def results_table(results: list[dict[str, Any]]) -> Markup:
    rows = []
    for r in results:
        att = r.get("attention") or {}
        share = _share_pct(att)
        rows.append(
            [
                r.get("impl", r.get("variant")),
                r.get("mode"),
                tag("span", r.get("status"), class_="st-" + str(r.get("status"))),
                _fmt(_num(r, "step_time_us")),
                f"{share:.1f}%" if share is not None else "—",
                _fmt(_num(att, "time_us")),
                _fmt(_num(att, "kernel_us")),
                _fmt(_num(att, "around_us")),
                _count_bytes(att.get("hidden_copies")),
                _count_bytes(att.get("upcasts")),
                r.get("reason") or "",
            ]
        )
    heads = ["implementation", "mode", "status", "step µs", "attention share", "attention µs"]
    heads += ["attention kernels µs", "around attention µs", "hidden copies", "upcasts", "reason"]
    return table(heads, rows)


def _fmt(v: float | None) -> str:
    return "—" if v is None else f"{v:,.1f}"


def share_figure(page: Page, results: list[dict[str, Any]]) -> Markup:
    """Stacked bars per (implementation, mode): attention kernels, the work around them, the rest."""
    ok = [r for r in results if r.get("status") == "ok" and _num(r, "step_time_us")]
    if not ok:
        return tag("p", "no successful step to plot", class_="dim")
    x = [plot_text(_label(r)) for r in ok]
    parts: dict[str, list[float | None]] = {"attention kernels": [], "around attention": [], "rest of the step": []}
    for r in ok:
        att = r.get("attention") or {}
        step = _num(r, "step_time_us") or 0.0
        total = _num(att, "time_us")
        kern = _num(att, "kernel_us")
        around = _num(att, "around_us")
        if kern is None and around is None:
            kern = total
        parts["attention kernels"].append(kern)
        parts["around attention"].append(around)
        parts["rest of the step"].append(step - (total if total is not None else (kern or 0) + (around or 0)))
    colours = {"attention kernels": "#d62728", "around attention": "#ff7f0e", "rest of the step": "#90a4ae"}
    data = [
        {"type": "bar", "name": name, "x": x, "y": ys, "marker": {"color": colours[name]}}
        | {"hovertemplate": "%{y:,.1f} µs<extra>" + name + "</extra>"}
        for name, ys in parts.items()
    ]
    layout = {"barmode": "stack", "height": 380, "yaxis": {"title": {"text": "µs per step"}}}
    return page.figure(
        data,
        layout,
        "Step time split: the attention kernels, the work around them (masks, "
        "repeat_kv copies, upcasts, transposes), and everything else.",
    )


def _layer_value(layer: dict[str, Any]) -> float | None:
    share = _num(layer, "share_pct", "attention_share_pct")
    if share is not None:
        return share
    s = _num(layer, "share", "attention_share")
    return s * 100 if s is not None and s <= 1.0 else s


def layers_figure(page: Page, results: list[dict[str, Any]]) -> Markup:
    data = []
    for r in results:
        layers = [x for x in r.get("layers") or [] if isinstance(x, dict)]
        vals = [_layer_value(x) for x in layers]
        if not layers or all(v is None for v in vals):
            continue
        names = [str(x.get("layer", x.get("index", x.get("name", i)))) for i, x in enumerate(layers)]
        data.append(
            {"type": "bar", "name": plot_text(_label(r)), "x": [plot_text(n) for n in names], "y": vals}
            | {"hovertemplate": "layer %{x}: %{y:.1f}%<extra></extra>"}
        )
    if not data:
        return Markup("")
    layout = {"barmode": "group", "height": 340, "xaxis": {"type": "category", "title": {"text": "layer"}}}
    layout["yaxis"] = {"title": {"text": "attention share of the layer, %"}}
    return join([tag("h3", "Attention per layer"), page.figure(data, layout)])


def _rec_block(doc: dict[str, Any]) -> Markup:
    rec = doc.get("recommendation") or doc.get("recommendations")
    if not rec:
        return Markup("")
    items = (
        rec if isinstance(rec, list) else list(rec.values()) if isinstance(rec, dict) and "text" not in rec else [rec]
    )
    texts = [i.get("text") if isinstance(i, dict) else str(i) for i in items]
    return tag("ul", *(tag("li", t) for t in texts if t), class_="rec")


def model_section(page: Page, src: Source, out_dir: Path | None) -> None:
    doc = src.doc
    results = [r for r in doc.get("results") or [] if isinstance(r, dict)]
    name = doc.get("model") or (doc.get("config") or {}).get("name") or (doc.get("config") or {}).get("model_type")
    page.add(tag("h2", f"Model: {name or src.label}"), env_table(doc.get("env"), None))
    cfg = doc.get("config")
    if isinstance(cfg, dict):
        scalars = [(k, v) for k, v in cfg.items() if isinstance(v, str | int | float | bool) or v is None]
        page.add(tag("details", tag("summary", "config"), table(["", ""], scalars, cls="kv")))
    page.add(
        _rec_block(doc),
        tag("h3", "Where the step goes, per implementation"),
        results_table(results),
        share_figure(page, results),
        layers_figure(page, results),
        tag("h3", "Insights"),
        insights_block([{**r, "variant": _label(r)} for r in results]),
    )
