"""The sweep recommendation in the terminal (rich): the best variant per case as a grid, crossovers,
the policy, where sdpa_default is not the best, and what was left out.  Reads the dict of
:func:`attnscope.analysis.recommend.recommend`; computes nothing of its own."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from attnscope.core.units import fmt_us
from attnscope.document.recommendation import (
    DEFAULT,
    SYMBOL,
    axes_of,
    crossover_best_text,
    crossover_note,
    default_summary_text,
    exception_text,
    group_text,
    impl_text,
    label,
    noise_changes_text,
    real_crossovers,
    rule_variant_text,
    same_masks_text,
)
from attnscope.report.text.terminal import fit

LIMIT = 30  # rows per long table; the JSON holds every one


def _ratio(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}×"


def _axis_name(a: str) -> str:
    return SYMBOL.get(a, a)


def _values(vals: list[Any]) -> str:
    return ", ".join("none" if v is None else str(v) for v in vals)


def _short(variants: list[str]) -> str:
    """One implementation's variants, stable whichever was timed fastest, without the sdpa_ prefix: 'cudnn=default'."""
    return group_text(variants).replace("sdpa_", "").replace(" = ", "=")


def _cell(b: dict[str, Any]) -> Text:
    t = Text(_short([b["variant"], *b["same_as"]]), style="bold")
    if b["preferred_over"]:
        t.append(" *")
    t.append(f"\n{fmt_us(b['median_us'])}")
    if b["runner_up"]:
        t.append(f"\n{_short([b['runner_up'], *b['runner_up_same_as']])} {_ratio(b['margin'])}")
        if b["tied"]:
            t.append(" ≈", style="yellow")
        elif b["noisy"]:
            t.append(" ~", style="yellow")
    return t


def best_grid(rec: dict[str, Any]) -> Table:
    """One row per combination of the other axes, one column per value of seq_q (or the first axis)."""
    axes = rec["axes"]
    col = "seq_q" if "seq_q" in axes else (axes[0] if axes else None)
    rows_of = [a for a in axes if a != col]
    cols: list[Any] = rec["measured"].get(col, []) if col else [None]
    t = Table(
        title="Best implementation per case: µs per call; the next implementation and its margin (≈ tied)",
        header_style="bold",
    )
    t.add_column(" ".join(_axis_name(a) for a in rows_of) or "case", no_wrap=True)
    for v in cols:
        t.add_column(f"{_axis_name(col)}={v}" if col else "best", justify="left")
    grid: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    order: list[str] = []
    for b in rec["best"]:
        ax = axes_of({"case": b["case"], "mode": b["mode"]})
        name = label(ax, rows_of) if rows_of else "all cases"
        if name not in grid:
            order.append(name)
        grid[name][json.dumps(ax.get(col)) if col else "null"] = b
    for name in order:
        cells: list[Text | str] = [name]
        for v in cols:
            b = grid[name].get(json.dumps(v))
            cells.append(_cell(b) if b else Text("—", style="dim"))
        t.add_row(*cells)
    return t


def _crossovers(rec: dict[str, Any]) -> list[RenderableType]:
    xs, noise = real_crossovers(rec)
    more = [Text(noise_changes_text(noise), style="dim")] if noise else []
    if not xs:
        return [
            Text(
                "Crossovers: none beyond the noise (the best implementation never changes clearly between "
                "adjacent measured values)"
            ),
            *more,
        ]
    t = Table(title=f"Crossovers: where the best implementation changes ({len(xs)})", header_style="bold")
    for h in ("axis", "between", "best", "other axes held", "note"):
        t.add_column(h)
    for x in xs[:LIMIT]:
        a = x["axis"]
        held = label(x["fixed"], list(x["fixed"])) if x["fixed"] else "—"
        t.add_row(
            _axis_name(a), f"{x['between'][0]} → {x['between'][1]}", crossover_best_text(x), held, crossover_note(x)
        )
    out: list[RenderableType] = [t]
    if len(xs) > LIMIT:
        out.append(Text(f"… {len(xs) - LIMIT} more beyond the noise in the JSON (--json)", style="dim"))
    return out + more


def _policy(rec: dict[str, Any]) -> RenderableType:
    t = Table(title="Policy over the measured points (the first rule that matches applies)", header_style="bold")
    for h in ("when", "use", "points", "agree (of which only tied with the best)", "exceptions"):
        t.add_column(h)
    for r in rec["policy"]:
        t.add_row(
            r["text"],
            Text(rule_variant_text(r), style="bold"),
            str(r["points"]),
            f"{r['agree']} ({r['agree_via_tie']})",
            exception_text(r),
        )
    return t


def _defaults(rec: dict[str, Any]) -> list[RenderableType]:
    head = Text(default_summary_text(rec))
    gaps = sorted(rec["default_gaps"], key=lambda g: -(g["ratio"] or 0))
    if not gaps:
        return [head]
    t = Table(title=f"Where {DEFAULT} is not the best (ratio = {DEFAULT} / best, median per call)", header_style="bold")
    for h in ("case", "best", "best µs", f"{DEFAULT} µs", "ratio", "lost µs", f"{DEFAULT} ran"):
        t.add_column(h, justify="right" if "µs" in h or h == "ratio" else "left")
    for g in gaps[:LIMIT]:
        ran = g["ran"] or "?"
        if g["kernel"]:
            ran += f" ({g['kernel'][:48]})"
        t.add_row(
            g["label"],
            impl_text(g["best"], g["best_same_as"], None),
            fmt_us(g["best_us"], unit=False),
            fmt_us(g["default_us"], unit=False),
            _ratio(g["ratio"]),
            fmt_us(g["lost_us"], unit=False),
            ran,
        )
    out: list[RenderableType] = [head, t]
    if len(gaps) > LIMIT:
        out.append(Text(f"… {len(gaps) - LIMIT} more in the JSON (--json)", style="dim"))
    return out


def _excluded(rec: dict[str, Any]) -> list[RenderableType]:
    c = rec["counts"]
    line = Text(
        f"Rows: {c['rows']} ({', '.join(f'{k} {v}' for k, v in c['by_status'].items())}); "
        f"{c['compared']} compared at {c['points']} point{'' if c['points'] == 1 else 's'}; {c['excluded']} left out"
        + (f"; {c['superseded']} replaced by a later row of the same (variant, case, mode)" if c["superseded"] else "")
    )
    lines: list[RenderableType] = [line]
    for u in (rec.get("unresolved") or [])[:LIMIT]:  # documents written before the key have none
        lines.append(Text.assemble(("unresolved ", "bold yellow"), f"{u['label']}: {u['why']}"))
    if len(rec.get("unresolved") or []) > LIMIT:
        lines.append(Text(f"… {len(rec['unresolved']) - LIMIT} more unresolved points in the JSON", style="dim"))
    groups: dict[tuple[Any, str], list[dict[str, Any]]] = defaultdict(list)
    for e in rec["excluded"]:
        groups[(e["variant"], e["why"])].append(e)
    if not groups:
        return lines
    t = Table(title="Left out of the comparison", header_style="bold")
    for h in ("variant", "why", "rows", "first case"):
        t.add_column(h)
    for (v, why), es in sorted(groups.items(), key=lambda kv: (str(kv[0][0]), kv[0][1]))[:LIMIT]:
        fast = sum(1 for e in es if e.get("faster_than_best"))
        w = Text(why)
        if fast:
            w.append(f" — faster than the best at {fast} point(s), but its output is not trusted", style="bold red")
        t.add_row(str(v), w, str(len(es)), es[0]["label"] or "—")
    return [*lines, t]


def render(rec: dict[str, Any]) -> RenderableType:
    """The recommendation as one rich renderable (print it with a rich Console)."""
    if not rec["best"]:
        why = (
            "every point is unresolved (ties across gaps too wide to trust): no best named"
            if rec.get("unresolved")
            else "no row is ok with sound numerics: nothing to compare"
        )
        return Group(Text(f"Recommendation: {why}", style="bold"), *_excluded(rec))
    c = rec["counts"]
    meas = "; ".join(f"{_axis_name(a)} {_values(v)}" for a, v in rec["measured"].items()) or "one case"
    head = Text.assemble(
        ("Recommendation ", "bold"),
        f"over {c['points']} point{'' if c['points'] == 1 else 's'} (case × mode) — time: {rec['time_source']}; "
        "variants that ran the same compute kernels at a point are one implementation there; margin = the next "
        "implementation (the fastest variant "
        f"that ran other kernels) / the best; ties: {rec['tie_rule']}",
    )
    notes = [Text(f"Measured: {meas}; the policy says nothing beyond these values", style="dim")]
    grid_note = "In the grid: names without their sdpa_ prefix"
    if any(b["same_as"] or b["runner_up_same_as"] for b in rec["best"]):
        grid_note += (
            "; a=b: both ran the same kernels (one implementation, named in a fixed order; the JSON's variant is "
            "the one timed faster)"
        )
    notes.append(Text(grid_note, style="dim"))
    for a, why in rec["derived_axes"].items():
        notes.append(Text(f"{_axis_name(a)}: {why}", style="dim"))
    if any(b["preferred_over"] for b in rec["best"]):
        notes.append(
            Text(
                "* tied with a faster variant that writes the S×S score matrix out: the fused one is recommended",
                style="dim",
            )
        )
    if any(b["noisy"] for b in rec["best"]):
        notes.append(Text("~ noisy timing (IQR/median > 10%): confirm with a larger --budget", style="dim"))
    same = [Text(same_masks_text(e), style="dim") for e in rec.get("same_masks") or []]  # the sweep's own key
    parts: list[RenderableType] = [head, *notes, best_grid(rec), *same, *_crossovers(rec), _policy(rec)]
    parts.append(Text.assemble(("Policy: ", "bold"), rec["policy_text"]))
    parts += _defaults(rec)
    parts += _excluded(rec)
    # each grid as a table where the terminal holds its words, else one block per row (report/text/terminal.py)
    return Group(*(fit(p) if isinstance(p, Table) else p for p in parts))
