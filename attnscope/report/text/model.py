"""The printed output of ``attnscope model``: one table of rows, the split, insights, recommendations (rich)."""

from __future__ import annotations

import re
from typing import Any

from rich.text import Text

from attnscope.core.scopes import AROUND_PARTS
from attnscope.core.units import fmt_us
from attnscope.report.text.terminal import fit, hung


def _pct(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.1f}" if whole > 0 else "—"


def _time(r: dict[str, Any]) -> str:
    t = r.get("step_time")
    if not t:
        return "—"
    return f"{t['median_us']:,.1f}" + (" ~" if t.get("noisy") else "")


def render(doc: dict[str, Any], console: Any, *, title: str) -> None:
    from rich.table import Table

    t = Table(title=title, header_style="bold")
    cols = (
        "impl",
        "mode",
        "status",
        "step µs",
        "attn %",
        "kernel %",
        "proj %",
        "around %",
        "rest %",
        "unattr %",
        "idle %",
        "cpu-only %",
        "top of the rest",
    )
    for c in cols:
        t.add_column(c, justify="right" if c.endswith("%") or c.endswith("µs") else "left")
    grid = len(doc["case"].get("points") or []) > 1
    for r in doc["results"]:
        a, rest = r.get("attention"), r.get("rest")
        mode = f"{r['mode']} B{r.get('batch')} S{r.get('seq')}" if grid else r["mode"]
        if isinstance(r.get("steps"), dict):  # a decode loop: its split per step is in render_decode_steps
            mode += f" ×{r['steps']['num_steps']} {r['steps']['replay']}"
        elif r.get("replay"):
            mode += f" ({r['replay']})"
        if r["status"] != "ok" or a is None or rest is None:
            t.add_row(r["impl"], mode, r["status"], _time(r), *["—"] * 8, "")
            continue
        st = r["breakdown"].get("step") or {}
        total = st.get("step_us") or r["breakdown"]["total_us"]  # the profiled step: its parts add up to it
        top = sorted(rest["parts"].items(), key=lambda kv: -kv[1])[:2]
        t.add_row(
            r["impl"],
            mode,
            "ok",
            _time(r),
            _pct(a["time_us"], total),
            _pct(a["kernel_us"], total),
            _pct(a["projections_us"], total),
            _pct(a["around_us"], total),
            _pct(rest["time_us"], total),
            _pct(r["breakdown"].get("unattributed_us") or 0.0, total),
            _pct(st.get("gpu_idle_us") or 0.0, total),
            _pct(st.get("cpu_only_us") or 0.0, total),
            ", ".join(f"{k} {_pct(v, total)}%" for k, v in top if v > 0),
        )
    console.print(fit(t))  # one block per row where the terminal cannot hold the columns' words
    methods = {
        re.sub(r"median of \d+", "median", r["step_time"]["method"]) for r in doc["results"] if r.get("step_time")
    }
    for m in sorted(methods):
        hung(console, "  ", f"step µs: {m}; ~ marks a noisy timing (IQR/median > 10%)")
    splits = {r["breakdown"]["method"] for r in doc["results"] if r.get("breakdown")}
    for m in sorted(splits):
        hung(console, "  ", f"shares: {m}")
    for r in doc["results"]:
        prof = (r.get("breakdown") or {}).get("profile") or {}
        if prof.get("scaled"):
            hung(console, "  ", f"{r['impl']} {r['mode']}: {prof['method']}")
    loops = [
        f"{r['impl']} {r['mode']}" for r in doc["results"] if r["status"] == "ok" and isinstance(r.get("steps"), dict)
    ]
    if loops:  # their shares are '—' in the table above: said per step in the table below
        hung(
            console,
            "  ",
            f"{', '.join(loops)}: a decode loop, split per step (decode over a growing static cache, below)",
        )
    if any((r.get("breakdown") or {}).get("step") for r in doc["results"]):
        hung(
            console,
            "  ",
            "% of the profiled step: attn + rest + unattr + idle (GPU waiting inside the step) + cpu-only (host "
            "work before the first and after the last GPU event) = 100, less any overlap of streams",
        )
    _render_around(doc, console)
    _render_skips(doc, console)
    _render_insights(doc, console)
    for mode, rec in (doc.get("recommendations") or {}).items():
        console.print(Text.assemble((f"Recommendation ({mode}):", "bold"), f" {rec['text']}"))


def _units(rows: list[dict[str, Any]]) -> str:
    """What the split's µs are: profiled, or (some rows) scaled to the timed step (model_split.fit_to_timed)."""
    scaled = [r for r in rows if ((r.get("breakdown") or {}).get("profile") or {}).get("scaled")]
    if not scaled:
        return "µs in the profiled step"
    if len(scaled) == len([r for r in rows if r.get("breakdown")]):
        return "µs: the profiled step's shares of the timed median"
    names = ", ".join(f"{r['impl']} {r['mode']}" for r in scaled)
    return f"µs in the profiled step; {names}: its shares of the timed median"


def _render_around(doc: dict[str, Any], console: Any) -> None:
    rows = [r for r in doc["results"] if r.get("attention")]
    if not rows:
        return
    console.print(f"Work around the attention kernel ({_units(rows)})")
    for r in rows:
        parts = r["attention"]["parts"]
        bits = [f"{p} {parts[p]:,.1f}" for p in AROUND_PARTS if parts.get(p, 0) > 0]
        hung(console, f"  {r['impl']:<16} {r['mode']:<8} ", ", ".join(bits) or "none")


def _render_skips(doc: dict[str, Any], console: Any) -> None:
    for r in doc["results"]:
        if r["status"] != "ok":
            hung(console, "  ", f"{r['impl']} {r['mode']}: {r['status']} — {r['reason']}", style="dim")


def _render_insights(doc: dict[str, Any], console: Any) -> None:
    found = [(r, i) for r in doc["results"] for i in r.get("insights", [])]
    if not found:
        return
    console.print("Insights")
    for r, i in found:
        mark = "!" if i["severity"] == "warning" else "·"
        hung(console, f"  {mark} ", f"{r['impl']} {r['mode']} [{i['id']}] {i['message']}")
        hung(console, "      → ", i["advice"])


def _sample(n: int, most: int) -> list[int]:
    """Up to ``most`` step indices evenly spread over ``n``, the first and the last among them."""
    if n <= most:
        return list(range(n))
    return sorted({round(k * (n - 1) / (most - 1)) for k in range(most)})


def _share(v: float | None) -> str:
    return "—" if v is None else f"{100 * v:.1f}"


def render_decode_steps(doc: dict[str, Any], console: Any, most: int = 12) -> None:
    """The decode loops (``--steps``): per step, the KV length, the step time and attention's share as the cache
    grows (attention, the rest and the unattributed of the profiled step, which sum to its total)."""
    from rich.table import Table

    rows = [r for r in doc["results"] if r.get("status") == "ok" and isinstance(r.get("steps"), dict)]
    if not rows:
        return
    t = Table(title="decode over a growing static cache, per step", header_style="bold")
    modules = any(p.get("module_attention_share") is not None for r in rows for p in r["steps"]["series"])
    cols = ("impl", "replay", "step", "KV", "step µs", "attn %", "rest %", "unattr %") + (
        ("attn module %",) if modules else ()
    )
    for c in cols:
        t.add_column(c, justify="left" if c in ("impl", "replay") else "right")
    for r in rows:
        st = r["steps"]
        series = st["series"]
        for i in _sample(len(series), most):
            p = series[i]
            total = p.get("total_us") or 0.0
            cells = (p.get(k) for k in ("attention_us", "rest_us", "unattributed_us"))
            t.add_row(
                r["impl"],
                st["replay"],
                str(p["step"]),
                str(p["kv_len"]),
                fmt_us(p["time_us"]),
                *(_pct(v, total) if v is not None else "—" for v in cells),
                *((_share(p.get("module_attention_share")),) if modules else ()),
            )
    console.print(t)
    for m in sorted({r["steps"]["time_method"] for r in rows}):
        hung(console, "  ", f"step µs: each step's median over its passes; {m}")
    for m in sorted({r["steps"]["split_method"] for r in rows}):
        hung(console, "  ", f"shares: {m}; of the profiled step's total (attention + rest + unattributed)")
    if modules:
        hung(
            console,
            "  ",
            "attn module %: the attention modules' share of the eager step (projections, rotary and K/V copies"
            " included); a graph's replay has no modules to split by",
        )


def render_layers(doc: dict[str, Any], console: Any) -> None:
    """The split per layer of every row that has one; nothing where none has (a decode loop's rows are split per
    step instead): a table of headers alone says nothing."""
    from rich.table import Table

    if not any(r.get("layers") for r in doc["results"]):
        return
    t = Table(title=f"per layer ({_units(doc['results'])})", header_style="bold")
    for c in ("impl", "mode", "layer", "total", "attention", "kernel", "proj", "around", "mlp"):
        t.add_column(c, justify="left" if c in ("impl", "mode", "layer") else "right")
    for r in doc["results"]:
        for lay in r.get("layers", []):
            t.add_row(
                r["impl"],
                r["mode"],
                str(lay["layer"]),
                *(
                    fmt_us(lay.get(k), unit=False)
                    for k in ("total_us", "attention_us", "kernel_us", "projections_us", "around_us", "mlp_us")
                ),
            )
    console.print(fit(t))


def render_split(r: dict[str, Any], console: Any) -> None:
    """`attnscope analyze`: the split of a model step whose trace names its modules (nothing otherwise)."""
    split = r.get("model_split")
    if not split:
        return
    a, rest, total = split["attention"], split["rest"], split["total_us"]
    sc = split["scopes"]
    console.print(
        Text.assemble(
            ("Attention inside the model", "bold"), f" ({r.get('variant')}; from {sc['source']}; {split['method']})"
        ),
        highlight=False,
    )
    hung(
        console,
        "  ",
        f"attention {_pct(a['time_us'], total)}% of {total:,.1f} µs: kernel {_pct(a['kernel_us'], total)}%, "
        f"projections {_pct(a['projections_us'], total)}%, around {_pct(a['around_us'], total)}% "
        f"({', '.join(f'{k} {v:,.1f} µs' for k, v in a['parts'].items() if v > 0 and k in AROUND_PARTS) or 'none'})",
    )
    parts = ", ".join(f"{k} {_pct(v, total)}%" for k, v in rest["parts"].items() if v > 0)
    hung(console, "  ", f"the rest {_pct(rest['time_us'], total)}%: {parts}")
    if not sc.get("backward"):
        console.print("  the module ranges cover the forward pass only: backward time counts as backward_other")
    if "model_split_insights" not in r:
        console.print("  insights: not in this document (written before they were stored)")
    for i in r.get("model_split_insights") or []:
        mark = "!" if i["severity"] == "warning" else "·"
        hung(console, f"  {mark} ", f"[{i['id']}] {i['message']}")
        hung(console, "      → ", i["advice"])
