"""Terminal rendering of ``attnscope diff``."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from attnscope.core.units import fmt_mib, fmt_mib_cell
from attnscope.report.text.terminal import bullet, fit


def _time(d: dict[str, Any], threshold: float | None) -> Text:
    if d["a"] is None and d["b"] is None:
        return Text("—", style="dim")
    a = f"{d['a']:,.1f}" if d["a"] is not None else "—"
    b = f"{d['b']:,.1f}" if d["b"] is not None else "—"
    if d["delta_pct"] is None:
        return Text(f"{a} → {b}")
    style = ""
    if threshold is not None and d["delta_pct"] > threshold:
        style = "bold red"
    elif d["delta_pct"] < -5:
        style = "green"
    return Text(f"{a} → {b} ({d['delta_pct']:+.1f}%)", style=style)


def _mem(d: dict[str, Any]) -> str:
    if d["a"] is None and d["b"] is None:
        return "—"
    f = [fmt_mib_cell(v) if v is not None else "—" for v in (d["a"], d["b"])]
    return f"{f[0]} → {f[1]}"


def _kernels(k: dict[str, Any]) -> str:
    parts = [f"+{len(k['added'])}", f"-{len(k['removed'])}", f"~{len(k['renamed'])}"]
    return " ".join(parts) if any(k[x] for x in ("added", "removed", "renamed")) else "same"


def _flag_value(name: str, v: Any) -> str:
    """A flag's value as a reader says it: hidden copies as their count and size (the JSON's [count, bytes])."""
    if name == "hidden_copies" and isinstance(v, (list, tuple)) and len(v) == 2:
        n, size = v
        return f"{n} ({fmt_mib(size, grouped=True)})" if n else "none"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return "—" if v is None else str(v)


def _flags(f: dict[str, Any]) -> str:
    return "; ".join(f"{k}: {_flag_value(k, v['a'])} → {_flag_value(k, v['b'])}" for k, v in f.items()) or "—"


def _short(name: str, n: int = 80) -> str:
    return name if len(name) <= n else name[: n - 3] + "..."


def detail_lines(v: dict[str, Any], top: int = 5, *, named: bool = True) -> list[str]:
    """The kernels added, removed and renamed and the categories whose GPU time moved; each line opens with the
    variant's name where the diff has several (``named``), not where the table above holds one row."""
    k = v["kernels"]
    who = f"{v['variant']}: " if named else ""
    out = [f"{who}+ {_short(a['name'])} ({a['category']}, ×{a['count']})" for a in k["added"][:top]]
    out += [f"{who}- {_short(r['name'])} ({r['category']}, ×{r['count']})" for r in k["removed"][:top]]
    out += [f"{who}~ {_short(r['from'], 60)} → {_short(r['to'], 60)}" for r in k["renamed"][:top]]
    for c in v["categories"]:
        if c["delta_pct"] is not None and abs(c["delta_pct"]) >= 5 and abs(c["delta"] or 0) >= 1:
            out.append(f"{who}{c['category']} GPU time {c['a']:,.1f} → {c['b']:,.1f} µs ({c['delta_pct']:+.1f}%)")
    return out


def render_diff(d: dict[str, Any], console: Console, title: str) -> None:
    th = d["threshold_pct"]
    t = Table(title=title, header_style="bold")

    # a time neither side has (GPU µs of two CPU runs) is no column
    def has(key: str) -> bool:
        return any((v.get(key) or {}).get(side) is not None for v in d["variants"] for side in ("a", "b"))

    gpu, step = has("gpu_time_us"), has("step_time_us")
    cpu = has("cpu_time_us") or not step  # a model's rows have a step time and no CPU µs: no empty column
    times = [("GPU µs", "gpu_time_us")] * gpu + [("CPU µs", "cpu_time_us")] * cpu
    times += [("step µs", "step_time_us")] * step
    for col in ("variant", *(c for c, _ in times), "peak MiB", "kernels +/-/~", "flags changed"):
        t.add_column(col)
    for v in d["variants"]:
        t.add_row(
            v["variant"] + (" ~" if v["noisy"] else ""),
            *(_time(v[key], th) for _, key in times),
            _mem(v["peak_memory_bytes"]),
            _kernels(v["kernels"]),
            _flags(v["flags"]),
        )
    if d["variants"]:
        console.print(fit(t))  # one block per variant where the terminal cannot hold the columns' words
    else:  # a table of headers alone says nothing: say why nothing was compared
        console.print(title, highlight=False)
        console.print(bullet(console, "  • ", "no variant in both files (variants pair by name): nothing compared"))
    for line in d.get("context_changes") or []:
        said = Text(f"not the same setting: {line}", style="yellow")
        console.print(bullet(console, Text("  ≠ ", style="yellow"), said))
    for v in d["variants"]:
        for line in detail_lines(v, named=len(d["variants"]) > 1):
            console.print(bullet(console, "  • ", line), highlight=False)
    for side, names in (("A", d["only_in_a"]), ("B", d["only_in_b"])):
        if names:
            console.print(bullet(console, "  • ", f"only in {side}: {', '.join(names)}"), highlight=False)
    if th is not None:
        if d["regressions"]:
            for r in d["regressions"]:
                said = Text(
                    f"{r['variant']}: {r['metric']} {r['a']:,.1f} → {r['b']:,.1f} (+{r['delta_pct']:.1f}% > {th:g}%)",
                    style="bold red",
                )
                console.print(bullet(console, Text("  ✗ ", style="bold red"), said), highlight=False)
        else:
            console.print(f"  ✓ no time regression above {th:g}%", highlight=False)
    if any(v["noisy"] for v in d["variants"]):
        console.print("  '~' marks a variant with a noisy timing on either side (IQR/median > 10%)", highlight=False)
