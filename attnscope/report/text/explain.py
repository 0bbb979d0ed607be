"""Terminal rendering of insights, the recommendation and guess-first verdicts (reads the JSON-shaped doc)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from attnscope.core.units import fmt_mib

SEVERITY_STYLE = {"error": ("✗", "bold red"), "warning": ("!", "yellow"), "info": ("·", "cyan")}
OUTCOME_STYLE = {
    "hit": ("hit", "green"),
    "miss": ("MISS", "bold red"),
    "close": ("too close", "yellow"),
    "unknown": ("?", "yellow"),
}


SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


def advice_groups(doc: dict[str, Any]) -> list[tuple[str, list[tuple[str, dict[str, Any]]]]]:
    """Insights grouped by their advice (what to do), each advice once; the most severe groups first."""
    groups: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for r in doc.get("results") or []:
        for i in r.get("insights") or []:
            groups.setdefault(i["advice"], []).append((r["variant"], i))

    def worst(item: tuple[str, list[tuple[str, dict[str, Any]]]]) -> int:
        return min(SEVERITY_ORDER[i["severity"]] for _, i in item[1])

    return sorted(groups.items(), key=worst)  # stable: first appearance within a severity


def _slower_line(found: list[tuple[str, dict[str, Any]]]) -> str:
    ev0 = found[0][1]["evidence"]
    each = ", ".join(f"{v} {i['evidence']['ratio']:.2f}×" for v, i in found)
    return f"slower than {ev0['best']} ({ev0['best_us']:,.1f} µs, {ev0['basis']}): {each}"


# the score_matrix evidence's sizes: (its bytes, its MiB, which an older document may hold alone)
_SIZES = {
    "peak": ("peak_memory_bytes", "peak_mib"),
    "score": ("score_matrix_bytes", "score_mib"),
    "minimum": ("minimum_bytes", "minimum_mib"),
}


def _size(ev: dict[str, Any], key: str) -> str:
    """One of the evidence's sizes (KiB below 1 MiB, never 0.0 MiB); from its MiB where the bytes are missing."""
    nbytes, mib = _SIZES[key]
    return fmt_mib(ev[nbytes]) if ev.get(nbytes) is not None else f"{ev[mib]:.1f} MiB"


def _scores_line(found: list[tuple[str, dict[str, Any]]]) -> str:
    ev0 = found[0][1]["evidence"]
    each = ", ".join(f"{v} {_size(i['evidence'], 'peak')} ({i['evidence']['peak_over_score']:.1f}×)" for v, i in found)
    return (
        f"the score matrix is materialised: peak extra memory against one score matrix ({_size(ev0, 'score')}, "
        f"grows with S²; the O(S·D) minimum is {_size(ev0, 'minimum')}): {each}"
    )


# Findings of one rule under one advice, said in one line (numbers from each one's evidence).
CONDENSED = {"slower_than_best": _slower_line, "score_matrix": _scores_line}


def _finding(variant: str, i: dict[str, Any], message: str) -> Text:
    mark, style = SEVERITY_STYLE[i["severity"]]
    t = Text("      ")
    t.append(f"{mark} ", style=style)
    t.append(f"{variant} ", style="bold")
    t.append(f"[{i['id']}] ", style=style)
    t.append(message)
    return t


def insight_lines(doc: dict[str, Any], verbose: bool = True) -> list[Text]:
    lines: list[Text] = []
    for advice, found in advice_groups(doc):
        head = Text("  → ", style="bold")
        head.append(advice, style="bold")
        lines.append(head)
        ids = {i["id"] for _, i in found}
        if not verbose and len(found) > 1 and len(ids) == 1:
            worst = min(found, key=lambda f: SEVERITY_ORDER[f[1]["severity"]])[1]
            variants = ", ".join(v for v, _ in found)
            if worst["id"] in CONDENSED:
                lines.append(_finding(f"{len(found)} variants", worst, CONDENSED[worst["id"]](found)))
                continue
            if len({i["message"] for _, i in found}) == 1:  # the same finding in several variants: said once
                lines.append(_finding(variants, worst, worst["message"]))
                continue
        for variant, i in found:
            lines.append(_finding(variant, i, i["message"]))
    return lines


def not_checked_lines(doc: dict[str, Any]) -> list[str]:
    """Rules a trace alone cannot answer, said once per rule and reason (not once per trace)."""
    seen: dict[tuple[str, str], list[str]] = {}
    for r in doc.get("results") or []:
        for n in r.get("insights_not_checked") or []:
            seen.setdefault((n["id"], n["why"]), []).append(r["variant"])
    n_ok = sum(1 for r in doc.get("results") or [] if r.get("status") == "ok")
    out = []
    for (rid, why), variants in seen.items():
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


def _hung(line: Text) -> Any:
    """``line`` with its leading marks ("  → ", "      ! ") as a hanging indent."""
    from attnscope.report.text.terminal import hanging

    plain = line.plain
    body = plain.lstrip(" →·!✗✓⚠•")
    at = len(plain) - len(body)
    return hanging(line[:at], line[at:]) if 0 < at < len(plain) else line


def render_explanations(doc: dict[str, Any], console: Console, *, verbose: bool = False, brief: bool = False) -> None:
    """``brief`` (a narrow terminal): each advice once, its findings left to --verbose.  Lines wrap at the width."""
    lines = insight_lines(doc, verbose)
    if brief:
        lines = [line for line in lines if line.plain.startswith("  → ")]
    if lines:
        n = sum(len(r.get("insights") or []) for r in doc.get("results") or [])
        more = "; --verbose shows the findings under each" if brief else ""
        console.print(Text(f"Insights: {n}, grouped by what to do (each advice once){more}", style="bold"))
        for line in lines:  # wrapped under its own text (never cut): "  → " or "      ! " stays in the margin
            console.print(line if console.soft_wrap else _hung(line), highlight=False)
    unchecked = not_checked_lines(doc)
    if verbose:
        for note in unchecked:  # wrapped under its own text, as the insights are
            line = Text(note, style="dim")
            console.print(line if console.soft_wrap else _hung(line), highlight=False)
    elif unchecked:
        from attnscope.report.text.terminal import indented

        indented(
            console, f"  {len(unchecked)} rule(s) not checked on this evidence: --verbose says which and why", "dim"
        )
    rec = doc.get("recommendation")
    if rec:
        console.print(Text.assemble(("Recommendation: ", "bold"), rec["text"]), highlight=False)
    if doc.get("verdicts"):
        console.print(verdict_table(doc))
        counts = {"hit": 0, "miss": 0, "close": 0, "unknown": 0}
        for v in doc["verdicts"]:
            counts[v["outcome"]] += 1
        from attnscope.report.text.terminal import indented

        indented(
            console,
            f"  {counts['hit']} hit, {counts['miss']} miss, {counts['close']} too close to call, "
            f"{counts['unknown']} not measurable — every miss is an insight",
        )
