"""The sweep section: time and TFLOP/s against seq_len per variant (log axes, one panel per
head_dim/causal/mode and any other axis that varies), the fastest variant at each point, where it
changes along seq_len, and where PyTorch's default choice (sdpa_default) is not the fastest."""

from __future__ import annotations

import itertools
from collections import defaultdict
from pathlib import Path
from typing import Any

from attnscope.report.html import Markup, Page, join, plot_text, table, tag
from attnscope.report.sources import Source

# Axes a panel can be split by, in the order the panel title names them.
PANEL_AXES = (
    "mode",
    "head_dim",
    "causal",
    "mask",
    "softcap",
    "alibi",
    "dtype",
    "heads",
    "kv_heads",
    "batch",
    "seq_kv",
    "device",
)
DEFAULT = "sdpa_default"
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]


def colour(variant: str, variants: list[str]) -> str:
    """The same colour for a variant in every figure of the sweep."""
    return PALETTE[variants.index(variant) % len(PALETTE)] if variant in variants else "#333"


def params(row: dict[str, Any]) -> dict[str, Any]:
    """The case of a row, with its mode; seq_kv kept only where it differs from seq_q."""
    case = dict(row.get("case") or {})
    p = {k: case.get(k) for k in PANEL_AXES if k in case}
    p["mode"] = row.get("mode") or case.get("mode") or "fwd"
    if p.get("seq_kv") in (None, case.get("seq_q")):
        p.pop("seq_kv", None)
    p["seq_q"] = case.get("seq_q")
    return p


def panel_axes(ps: list[dict[str, Any]]) -> list[str]:
    """The axes that vary; batch is left out when it only follows seq_len (a fixed token budget)."""
    varying = [a for a in PANEL_AXES if len({repr(p.get(a)) for p in ps}) > 1]
    if "batch" in varying:
        rest = [a for a in varying if a != "batch"]
        seen: dict[tuple[Any, ...], set[Any]] = defaultdict(set)
        for p in ps:
            seen[(*(repr(p.get(a)) for a in rest), p.get("seq_q"))].add(p.get("batch"))
        if all(len(b) == 1 for b in seen.values()):
            varying = rest
    return varying


def _title(axes: list[str], key: tuple[Any, ...]) -> str:
    return ", ".join(f"{a}={v}" for a, v in zip(axes, key, strict=True)) or "all cases"


def _time_key(rows: list[dict[str, Any]]) -> tuple[str, str]:
    if any(r.get("gpu_time_us") is not None for r in rows):
        return "gpu_time_us", "GPU µs per call (median)"
    return "cpu_time_us", "wall µs per call on the CPU (median)"


def _usable(r: dict[str, Any], tkey: str) -> bool:
    return r.get("status") == "ok" and r.get(tkey) is not None and r.get("numerics_ok") is not False


def panel_figures(
    page: Page, rows: list[dict[str, Any]], tkey: str, tname: str, title: str, variants: list[str]
) -> Markup:
    by_var: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if _usable(r, tkey):
            by_var[r["variant"]].append(r)
    figs = []
    for ykey, yname in ((tkey, tname), ("tflops", "TFLOP/s")):
        data = []
        for v, rs in by_var.items():
            rs = sorted((r for r in rs if r.get(ykey) is not None), key=lambda r: params(r)["seq_q"])
            data.append(
                {
                    "type": "scatter",
                    "mode": "lines+markers",
                    "name": plot_text(v),
                    "x": [params(r)["seq_q"] for r in rs],
                    "y": [r[ykey] for r in rs],
                    "hovertemplate": plot_text(v) + ": S=%{x}, %{y:,.2f}<extra></extra>",
                    "line": {"color": colour(v, variants)},
                    "marker": {"color": colour(v, variants)},
                }
            )
        layout = {
            "height": 360,
            "title": {"text": plot_text(f"{yname} — {title}"), "font": {"size": 13}},
            "xaxis": {"type": "log", "title": {"text": "seq_len (log)"}},
            "yaxis": {"type": "log", "title": {"text": f"{yname} (log)"}},
        }
        figs.append(page.figure(data, layout))
    return tag("div", *figs, class_="grid2")


def _quartiles(r: dict[str, Any], tkey: str) -> tuple[float, float] | None:
    t = r.get(tkey.removesuffix("_us")) or {}
    return (t["p25_us"], t["p75_us"]) if t.get("p25_us") is not None and t.get("p75_us") is not None else None


def tied(a: dict[str, Any], b: dict[str, Any], tkey: str) -> bool:
    """Inside the noise: the slower one's lower quartile reaches the faster one's upper quartile."""
    qa, qb = _quartiles(a, tkey), _quartiles(b, tkey)
    return bool(qa and qb and qb[0] <= qa[1])


def best_at(rows: list[dict[str, Any]], tkey: str) -> dict[str, Any] | None:
    """The fastest numerically sound variant at one point, the runner-up, and sdpa_default's gap."""
    ok = sorted((r for r in rows if _usable(r, tkey)), key=lambda r: r[tkey])
    if not ok:
        return None
    best = ok[0]
    second = ok[1] if len(ok) > 1 else None
    dflt = next((r for r in ok if r["variant"] == DEFAULT), None)
    return {
        "seq_q": params(best)["seq_q"],
        "best": best["variant"],
        "best_us": best[tkey],
        "runner_up": second["variant"] if second else None,
        "margin": second[tkey] / best[tkey] if second and best[tkey] else None,
        "tied": bool(second and tied(best, second, tkey)),
        "default_ratio": dflt[tkey] / best[tkey] if dflt and best[tkey] else None,
        "default_tied": bool(dflt and dflt is not best and tied(best, dflt, tkey)),
    }


def points(rows: list[dict[str, Any]], tkey: str) -> list[dict[str, Any]]:
    by_seq: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_seq[params(r)["seq_q"]].append(r)
    return [b for s in sorted(by_seq) if (b := best_at(by_seq[s], tkey))]


def policy(pts: list[dict[str, Any]]) -> str:
    """Runs of measured seq_len with the same fastest variant: 'S 128 → flash; S 512–8192 → cudnn'."""
    runs: list[list[dict[str, Any]]] = []
    for p in pts:
        if runs and runs[-1][-1]["best"] == p["best"]:
            runs[-1].append(p)
        else:
            runs.append([p])
    parts = []
    for run in runs:
        lo, hi = run[0]["seq_q"], run[-1]["seq_q"]
        span = f"S {lo}" if lo == hi else f"S {lo}–{hi}"
        ties = " (tied at some points)" if any(p["tied"] for p in run) else ""
        parts.append(f"{span} → {run[0]['best']}{ties}")
    return "; ".join(parts)


def winners_block(page: Page, rows: list[dict[str, Any]], tkey: str, title: str) -> Markup:
    pts = points(rows, tkey)
    if not pts:
        return tag("p", "no successful measurements here", class_="dim")
    body = [
        [
            p["seq_q"],
            p["best"],
            f"{p['best_us']:,.1f}",
            p["runner_up"] or "—",
            (f"{p['margin']:.2f}×" + (" (tied: quartiles overlap)" if p["tied"] else "")) if p["margin"] else "—",
            _default_cell(p),
        ]
        for p in pts
    ]
    cross = [
        f"between S={a['seq_q']} and S={b['seq_q']}: {a['best']} → {b['best']}"
        for a, b in itertools.pairwise(pts)
        if a["best"] != b["best"]
    ]
    heads = ["seq_len", "fastest", "µs", "runner-up", "margin", f"{DEFAULT} vs fastest"]
    parts = [table(heads, body), tag("p", tag("b", "Policy: "), policy(pts))]
    parts.append(tag("p", "Crossovers: " + ("; ".join(cross) if cross else "none (one variant is fastest throughout)")))
    ratios = [(p["seq_q"], 1.0 if p["default_tied"] else p["default_ratio"]) for p in pts if p["default_ratio"]]
    if ratios:
        data = [
            {
                "type": "bar",
                "x": [str(s) for s, _ in ratios],
                "y": [(r - 1) * 100 for _, r in ratios],
                "marker": {"color": ["#d62728" if r > 1.0 else "#2ca02c" for _, r in ratios]},
                "hovertemplate": "S=%{x}: default is %{y:.1f}% slower than the fastest<extra></extra>",
            }
        ]
        layout = {
            "height": 260,
            "title": {"text": plot_text(f"{DEFAULT} against the fastest — {title}"), "font": {"size": 13}},
            "xaxis": {"type": "category", "title": {"text": "seq_len"}},
            "yaxis": {"title": {"text": "% slower than the fastest"}},
        }
        cap = "0: PyTorch's default choice is the fastest here, or tied with it (quartiles overlap)."
        parts.append(page.figure(data, layout, cap))
    return join(parts)


def _default_cell(p: dict[str, Any]) -> Markup | str:
    r = p["default_ratio"]
    if r is None:
        return "—"
    if p["best"] == DEFAULT:
        return "fastest"
    if p["default_tied"]:
        return f"{r:.2f}× (tied: quartiles overlap)"
    return tag("span", f"{r:.2f}× slower", class_="bad" if r > 1.05 else "")


def crossover_map(
    page: Page, panels: dict[tuple[Any, ...], list[dict[str, Any]]], axes: list[str], tkey: str, variants: list[str]
) -> Markup:
    """One row per panel, one square per seq_len, coloured by the fastest variant there: crossovers at a glance."""
    by_variant: dict[str, dict[str, list[Any]]] = defaultdict(lambda: {"x": [], "y": [], "text": []})
    titles = []
    for key in sorted(panels, key=repr):
        title = plot_text(_title(axes, key))
        titles.append(title)
        for b in points(panels[key], tkey):
            s = b["seq_q"]
            t = by_variant[b["best"]]
            t["x"].append(s)
            t["y"].append(title)
            margin = f", {b['margin']:.2f}× ahead of {b['runner_up']}" if b["margin"] else ""
            t["text"].append(plot_text(f"S={s}: {b['best']} {b['best_us']:,.1f} µs{margin}"))
    if not by_variant:
        return Markup("")
    data = [
        {"type": "scatter", "mode": "markers", "name": plot_text(v), "x": t["x"], "y": t["y"]}
        | {"hovertext": t["text"], "hoverinfo": "text"}
        | {"marker": {"symbol": "square", "size": 22, "color": colour(v, variants)}}
        for v, t in sorted(by_variant.items())
    ]
    layout = {
        "height": 120 + 40 * len(titles),
        "xaxis": {"type": "log", "title": {"text": "seq_len (log)"}},
        "yaxis": {"type": "category", "categoryorder": "array", "categoryarray": titles, "autorange": "reversed"},
        "margin": {"l": 260, "r": 20, "t": 20, "b": 50},
    }
    return page.figure(data, layout, "The fastest numerically sound variant at each point of each panel.")


def status_block(rows: list[dict[str, Any]]) -> Markup:
    counts: dict[tuple[str, str], int] = defaultdict(int)
    reasons: dict[tuple[str, str], str] = {}
    for r in rows:
        k = (r["variant"], str(r.get("status")))
        counts[k] += 1
        if r.get("reason") and k not in reasons:
            reasons[k] = str(r["reason"])
    body = [[v, st, n, reasons.get((v, st), "")] for (v, st), n in sorted(counts.items())]
    return table(["variant", "status", "rows", "first reason"], body)


def sweep_section(page: Page, src: Source, out_dir: Path | None) -> None:
    rows = [r for r in src.doc["rows"] if isinstance(r.get("case"), dict)]
    page.add(tag("h2", f"Sweep: {src.label} ({len(rows):,} rows)"))
    if src.notes:
        page.add(tag("ul", *(tag("li", n) for n in src.notes), class_="notes"))
    env = next((r["env"] for r in rows if isinstance(r.get("env"), dict)), None)
    if env:
        from attnscope.report.html_run import env_table

        page.add(env_table(env, None))
    tkey, tname = _time_key(rows)
    ps = [params(r) for r in rows]
    axes = panel_axes(ps)
    panels: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for r, p in zip(rows, ps, strict=True):
        panels[tuple(p.get(a) for a in axes)].append(r)
    variants = sorted({str(r["variant"]) for r in rows})
    pol = [(_title(axes, k), policy(points(panels[k], tkey))) for k in sorted(panels, key=repr)]
    page.add(
        tag("h3", "Policy: the fastest variant by seq_len, per panel"),
        table(["panel", "policy (measured points; numerically sound rows only)"], pol, cls="data policy"),
        tag("h3", "Crossover map"),
        crossover_map(page, panels, axes, tkey, variants),
    )
    for key in sorted(panels, key=repr):
        title = _title(axes, key)
        page.add(
            tag("h3", title),
            panel_figures(page, panels[key], tkey, tname, title, variants),
            tag("h4", "Fastest at each seq_len (numerically sound rows only)"),
            winners_block(page, panels[key], tkey, title),
        )
    page.add(tag("h3", "Rows by status"), status_block(rows))
