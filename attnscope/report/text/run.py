"""A run document on the terminal (``attnscope run`` and ``attnscope guess``): the title, the results table with its
notes and explanations, then the lines under it (what the error check could see of the case's modifiers, each decode
loop, a loaded host).  Reads documents only: what the command wrote, and whether it exits 0, is the command's."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from attnscope.core.case import Case


def run_title(doc: dict[str, Any]) -> str:
    """'attnscope run — <case> — <device> — torch X, CUDA Y, cuDNN Z' (CUDA's versions only for a GPU case)."""
    case, env = Case.from_dict(doc["case"]), doc.get("env") or {}
    versions = f", CUDA {env.get('cuda')}, cuDNN {env.get('cudnn')}" if env.get("cuda") and case.device != "cpu" else ""
    return f"attnscope run — {case.label()} — {env.get('device_name')} — torch {env.get('torch')}{versions}"


def modifier_line(rows: list[dict[str, Any]]) -> str | None:
    """What the error check could see of the case's modifiers, in one line, from the first row that checked them
    (each check: ``{modifier, difference, tolerance, needed, visible}``, and ``q_scale``/``probe_difference``
    where a probe was drawn); None when nothing was checked."""
    checks = next((r.get("modifier_checks") for r in rows if r.get("modifier_checks")), None)
    if not checks:
        return None
    seen = [f"{c['modifier']} ({c['difference']:.1e})" for c in checks if c["visible"]]
    probed = [
        f"{c['modifier']} (by a probe, q×{c['q_scale']:g}: {c['probe_difference']:.1e})"
        for c in checks
        if "q_scale" in c
    ]
    blind = [
        f"{c['modifier']} ({c['difference']:.1e} < {c['needed']:.0e})"
        for c in checks
        if not c["visible"] and "q_scale" not in c
    ]
    parts = []
    if seen or probed:
        parts.append("sees " + ", ".join(seen + probed))
    if blind:
        parts.append("is BLIND to " + ", ".join(blind) + ": a variant ignoring it would pass")
    margin = checks[0]["needed"] / checks[0]["tolerance"]  # one margin per check; :g shows 4.000000000000001 as 4
    return (
        f"error check (reference without each modifier against with it, {margin:g}× the tolerance "
        "needed): " + "; ".join(parts)
    )


def print_run(doc: dict[str, Any], console: Console, *, kernels: bool = False, verbose: bool = False) -> None:
    """The study as ``attnscope run`` prints it, before the files written and the exit status."""
    from attnscope.report.text.serving import decode_loop_lines
    from attnscope.report.text.table import render
    from attnscope.report.text.terminal import host_caveat, indented

    render(doc, console, kernels=kernels, title=run_title(doc), verbose=verbose)
    rows = doc.get("results") or []
    checked = modifier_line(rows)
    if checked:  # each line under its own text where the terminal is narrower (not back at column 0)
        indented(console, f"  {checked}", style="yellow" if "BLIND" in checked else None)
    for line in decode_loop_lines(doc):
        indented(console, f"  {line}")
    host_caveat(console, doc.get("host"))
