"""Terminal rendering of insights, the recommendation and guess-first verdicts (reads the JSON-shaped doc)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

SEVERITY_STYLE = {"error": ("✗", "bold red"), "warning": ("!", "yellow"), "info": ("·", "cyan")}
OUTCOME_STYLE = {
    "hit": ("hit", "green"),
    "miss": ("MISS", "bold red"),
    "close": ("too close", "yellow"),
    "unknown": ("?", "yellow"),
}


def insight_lines(doc: dict[str, Any]) -> list[Text]:
    lines: list[Text] = []
    for r in doc.get("results") or []:
        for i in r.get("insights") or []:
            mark, style = SEVERITY_STYLE[i["severity"]]
            t = Text("  ")
            t.append(f"{mark} ", style=style)
            t.append(f"{r['variant']} ", style="bold")
            t.append(f"[{i['id']}] ", style=style)
            t.append(i["message"])
            t.append(f"\n      → {i['advice']}", style="dim")
            lines.append(t)
    return lines


def not_checked_lines(doc: dict[str, Any]) -> list[str]:
    """Rules a trace alone cannot answer, said once per rule (not once per trace)."""
    seen: dict[str, tuple[str, list[str]]] = {}
    for r in doc.get("results") or []:
        for n in r.get("insights_not_checked") or []:
            seen.setdefault(n["id"], (n["why"], []))[1].append(r["variant"])
    n_ok = sum(1 for r in doc.get("results") or [] if r.get("status") == "ok")
    out = []
    for rid, (why, variants) in seen.items():
        who = "all" if len(variants) == n_ok else ", ".join(variants)
        out.append(f"  not checked: {rid} ({who}): {why}")
    return out


def verdict_table(doc: dict[str, Any]) -> Table:
    t = Table(title="guess first: predictions against the measurement", header_style="bold", show_lines=True)
    t.add_column("")
    t.add_column("prediction → measured", overflow="fold", max_width=70)
    t.add_column("why (from the insights)", overflow="fold")
    for v in doc.get("verdicts") or []:
        label, style = OUTCOME_STYLE[v["outcome"]]
        t.add_row(Text(label, style=style), v["text"], v.get("explanation") or "")
    return t


def render_explanations(doc: dict[str, Any], console: Console) -> None:
    lines = insight_lines(doc)
    if lines:
        console.print(Text("Insights", style="bold"))
        for line in lines:
            console.print(line, highlight=False, soft_wrap=True)
    for note in not_checked_lines(doc):
        console.print(note, style="dim", highlight=False, soft_wrap=True)
    rec = doc.get("recommendation")
    if rec:
        console.print(Text.assemble(("Recommendation: ", "bold"), rec["text"]), highlight=False, soft_wrap=True)
    if doc.get("verdicts"):
        console.print(verdict_table(doc))
        counts = {"hit": 0, "miss": 0, "close": 0, "unknown": 0}
        for v in doc["verdicts"]:
            counts[v["outcome"]] += 1
        console.print(
            f"  {counts['hit']} hit, {counts['miss']} miss, {counts['close']} too close to call, "
            f"{counts['unknown']} not measurable — every miss is an insight",
            highlight=False,
        )
