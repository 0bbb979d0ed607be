"""The sweep section: time and TFLOP/s against seq_len per variant (log axes, one panel per
head_dim/causal/mode and any other axis that varies), and the recommendation: the best variant at each
point, where it changes, the policy, and where PyTorch's default choice (sdpa_default) is not the best.
Winners, ties, crossovers, the policy and the default's gaps all come from
:func:`attnscope.analysis.recommend.recommend`, the dict ``attnscope recommend`` prints, stored in the
source by :func:`attnscope.api.report.prepare` (the page computes none of it)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from attnscope.document.load import Source
from attnscope.document.recommendation import (
    DEFAULT,
    SYMBOL,
    crossover_best_text,
    crossover_note,
    default_summary_text,
    exception_text,
    group_text,
    label,
    noise_changes_text,
    real_crossovers,
    rule_variant_text,
    same_masks_text,
    tie_text,
    value_order,
)
from attnscope.report.html.markup import Markup, Page, join, plot_text, table, tag

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
    "page_size",
    "kv_lens",
    "device",
)
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]


def colour(variant: str, variants: list[str]) -> str:
    """The same colour for a variant in every figure of the sweep."""
    return PALETTE[variants.index(variant) % len(PALETTE)] if variant in variants else "#333"


def _scalar(v: Any) -> Any:
    return json.dumps(v, sort_keys=True, default=str) if isinstance(v, (dict, list)) else v


def params(row: dict[str, Any]) -> dict[str, Any]:
    """The case of a row, with its mode; seq_kv kept only where it differs from seq_q."""
    case = dict(row.get("case") or {})
    # a value that is not a scalar (a hand-edited or foreign row) is shown as its JSON text: panels key on it
    p = {k: _scalar(case.get(k)) for k in PANEL_AXES if k in case}
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
    """A point of a variant's line: ok, numerics not off, and not a compiled row that ran eager code (its time is
    another implementation's: left out of the plot as of the ranking)."""
    return (
        r.get("status") == "ok"
        and r.get(tkey) is not None
        and r.get("numerics_ok") is not False
        and not r.get("eager_fallback")  # stored by the API when the report is written
    )


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
            rs = sorted((r for r in rs if r.get(ykey) is not None), key=lambda r: value_order(params(r)["seq_q"]))
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


def _panel_of(b: dict[str, Any], axes: list[str]) -> tuple[Any, ...]:
    p = params({"case": b["case"], "mode": b["mode"]})
    return tuple(p.get(a) for a in axes)


def _seq(b: dict[str, Any]) -> Any:
    return (b["case"] or {}).get("seq_q")


def _margin_cell(b: dict[str, Any]) -> str:
    if b["margin"] is None:
        return "—"
    return f"{b['margin']:.2f}×" + (f" (tied: {tie_text(b)})" if b["tied"] else "")


def _default_cell(b: dict[str, Any]) -> Markup | str:
    d = b["default"]
    if d is None:
        return "—"
    if not d["measured"]:
        return f"not compared: {d['why']}"
    if d["same_kernels_as_best"]:
        return f"best (the same kernels as {b['variant']}, {d['ratio']:.2f}×)"
    if d["is_best"]:
        return "best"
    if d["tied"]:
        return f"{d['ratio']:.2f}× (tied: {d['tie_reason']})"
    return tag("span", f"{d['ratio']:.2f}× slower", class_="bad" if d["ratio"] > 1.05 else "")


def _default_ratio(b: dict[str, Any]) -> float | None:
    """sdpa_default over the best for the bar chart: 1 when it is the best or tied with it."""
    d = b["default"]
    if not d or not d["measured"] or d["ratio"] is None:
        return None
    return 1.0 if d["is_best"] or d["tied"] else float(d["ratio"])


def winners_block(page: Page, bests: list[dict[str, Any]], crossings: list[dict[str, Any]], title: str) -> Markup:
    """The panel's points as the recommendation ranked them: best, runner-up, margin, sdpa_default."""
    if not bests:
        return tag("p", "no ok, numerically sound measurements here", class_="dim")
    pts = sorted(bests, key=lambda b: value_order(_seq(b)))
    body = [
        [
            _seq(b),
            group_text([b["variant"], *b["same_as"]], b["ran"]),
            f"{b['median_us']:,.1f}",
            group_text([b["runner_up"], *b["runner_up_same_as"]], b["runner_up_ran"]) if b["runner_up"] else "—",
            _margin_cell(b),
            _default_cell(b),
        ]
        for b in pts
    ]
    real = [x for x in crossings if not x["within_noise"]]
    cross = [
        f"between S={x['between'][0]} and S={x['between'][1]}: {crossover_best_text(x)}"
        + (f" ({crossover_note(x)})" if crossover_note(x) else "")
        for x in real
    ]
    if len(crossings) > len(real):
        cross.append(noise_changes_text(len(crossings) - len(real)))
    heads = ["seq_len", "best (variants that ran the same kernels)", "µs", "next implementation", "margin"]
    parts = [table([*heads, f"{DEFAULT} vs best"], body)]
    none = "none (one implementation is best throughout)"
    parts.append(tag("p", "Crossovers: " + ("; ".join(cross) if cross else none)))
    ratios = [(_seq(b), r) for b in pts if (r := _default_ratio(b)) is not None]
    if ratios:
        data = [
            {
                "type": "bar",
                "x": [str(s) for s, _ in ratios],
                "y": [(r - 1) * 100 for _, r in ratios],
                "marker": {"color": ["#d62728" if r > 1.0 else "#2ca02c" for _, r in ratios]},
                "hovertemplate": "S=%{x}: default is %{y:.1f}% slower than the best<extra></extra>",
            }
        ]
        layout = {
            "height": 260,
            "title": {"text": plot_text(f"{DEFAULT} against the best — {title}"), "font": {"size": 13}},
            "xaxis": {"type": "category", "title": {"text": "seq_len"}},
            "yaxis": {"title": {"text": "% slower than the best"}},
        }
        cap = "0: PyTorch's default choice is the best here, or tied with it (the recommendation's tie rule)."
        parts.append(page.figure(data, layout, cap))
    return join(parts)


def crossover_map(page: Page, panels: dict[str, list[dict[str, Any]]], variants: list[str]) -> Markup:
    """One row per panel, one square per seq_len, coloured by the best variant: crossovers at a glance."""
    by_variant: dict[str, dict[str, list[Any]]] = defaultdict(lambda: {"x": [], "y": [], "text": []})
    titles = []
    for title, bests in panels.items():
        titles.append(plot_text(title))
        for b in sorted(bests, key=lambda b: value_order(_seq(b))):
            s = _seq(b)
            impl = group_text([b["variant"], *b["same_as"]])  # one colour per implementation, whichever timed faster
            t = by_variant[impl]
            t["x"].append(s)
            t["y"].append(plot_text(title))
            margin = f", {b['margin']:.2f}× ahead of {b['runner_up']}" if b["margin"] else ""
            t["text"].append(plot_text(f"S={s}: {impl} {b['median_us']:,.1f} µs{margin}"))
    if not by_variant:
        return Markup("")
    data = [
        {"type": "scatter", "mode": "markers", "name": plot_text(v), "x": t["x"], "y": t["y"]}
        | {"hovertext": t["text"], "hoverinfo": "text"}
        | {"marker": {"symbol": "square", "size": 22, "color": colour(v.split(" = ")[0], variants)}}
        for v, t in sorted(by_variant.items())
    ]
    layout = {
        "height": 120 + 40 * len(titles),
        "xaxis": {"type": "log", "title": {"text": "seq_len (log)"}},
        "yaxis": {"type": "category", "categoryorder": "array", "categoryarray": titles, "autorange": "reversed"},
        "margin": {"l": 260, "r": 20, "t": 20, "b": 50},
    }
    return page.figure(
        data,
        layout,
        "The recommended implementation at each point of each panel (numerically sound rows; a = b: the variants "
        "ran the same kernels there).",
    )


def recommendation_block(rec: dict[str, Any]) -> Markup:
    """What `attnscope recommend` prints, from the same dict: the policy, every crossover, sdpa_default."""
    if not rec["best"]:
        if rec.get("unresolved"):
            return join([tag("p", "Every point is unresolved: no best named.", class_="dim"), _unresolved(rec)])
        return tag("p", "No row is ok with sound numerics: nothing to compare.", class_="dim")
    meas = "; ".join(f"{SYMBOL.get(a, a)} {', '.join(map(str, v))}" for a, v in rec["measured"].items())
    rules = [
        [r["text"], rule_variant_text(r), r["points"], f"{r['agree']} ({r['agree_via_tie']})", exception_text(r, 10)]
        for r in rec["policy"]
    ]
    parts = [
        tag(
            "p",
            f"Time: {rec['time_source']}; variants that ran the same compute kernels at a point are one "
            "implementation there; margin = the next implementation (the fastest variant that ran other kernels) / "
            f"the best; ties: {rec['tie_rule']}. "
            f"Measured: {meas or 'one case'}; the policy says nothing beyond these values.",
        ),
        *(tag("p", same_masks_text(e), class_="dim") for e in rec.get("same_masks") or []),  # as recommend says
        tag("p", tag("b", "Policy: "), rec["policy_text"]),
        table(
            ["when (first match applies)", "use", "points", "agree (of which only tied with the best)", "exceptions"],
            rules,
            cls="data policy",
        ),
    ]
    real, noise = real_crossovers(rec)
    xs = [
        [
            SYMBOL.get(x["axis"], x["axis"]),
            f"{x['between'][0]} → {x['between'][1]}",
            crossover_best_text(x),
            label(x["fixed"], list(x["fixed"])) if x["fixed"] else "—",
            crossover_note(x),
        ]
        for x in real
    ]
    parts.append(tag("h4", f"Crossovers along every axis: where the best implementation changes ({len(xs)})"))
    parts.append(
        table(["axis", "between", "best", "other axes held", "note"], xs)
        if xs
        else tag("p", "none beyond the noise: the best implementation never changes clearly between adjacent values")
    )
    if noise:
        parts.append(tag("p", noise_changes_text(noise).replace("--json", "attnscope recommend --json"), class_="dim"))
    parts.append(tag("p", default_summary_text(rec)))
    if rec.get("unresolved"):
        parts.append(_unresolved(rec))
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for e in rec["excluded"]:
        groups[(str(e["variant"]), e["why"])].append(e)
    if groups:
        body = [[v, why, len(es), es[0]["label"] or "—"] for (v, why), es in sorted(groups.items())]
        n = len(rec["excluded"])
        parts.append(tag("h4", f"Left out of the comparison ({n} row{'s' * (n != 1)})"))
        parts.append(table(["variant", "why", "rows", "first case"], body))
    return join(parts)


def _unresolved(rec: dict[str, Any]) -> Markup:
    """Points whose tie spans too wide a gap to trust: no best named there."""
    body = [[u["label"], u["why"]] for u in rec["unresolved"]]
    return join([tag("h4", f"Unresolved points ({len(body)})"), table(["case", "why"], body)])


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
        from attnscope.report.html.run import env_table

        page.add(env_table(env, None))
    tkey, tname = _time_key(rows)
    ps = [params(r) for r in rows]
    axes = panel_axes(ps)
    panels: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for r, p in zip(rows, ps, strict=True):
        panels[tuple(p.get(a) for a in axes)].append(r)
    variants = sorted({str(r["variant"]) for r in rows})
    rec = src.doc.get("recommendation")
    if not isinstance(rec, dict):
        page.add(tag("p", "No recommendation in this document: run attnscope recommend on its rows."))
        page.add(tag("h3", "Rows by status"), status_block(rows))
        return
    bests: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for b in rec["best"]:
        bests[_panel_of(b, axes)].append(b)
    crossings: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for x in rec["crossovers"]:
        if x["axis"] == "seq_q":
            crossings[_panel_of(rec["best"][x["points"][0]], axes)].append(x)
    keys = sorted(panels, key=repr)
    page.add(
        tag("h3", "Recommendation (the same as attnscope recommend)"),
        recommendation_block(rec),
        tag("h3", "Crossover map"),
        crossover_map(page, {_title(axes, k): bests[k] for k in keys}, variants),
    )
    for key in keys:
        title = _title(axes, key)
        page.add(
            tag("h3", title),
            panel_figures(page, panels[key], tkey, tname, title, variants),
            tag("h4", "Best at each seq_len (ok, numerically sound rows; the recommendation's ranking)"),
            winners_block(page, bests[key], crossings[key], title),
        )
    page.add(tag("h3", "Rows by status"), status_block(rows))
