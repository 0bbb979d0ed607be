"""The reveal of one step and the tour's end, as rich markup lines.  Reads a transcript's records only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.markup import escape

from attnscope.core.units import fmt_us
from attnscope.tour.strip import legend, rich_strip

MARK = {
    "hit": "[bold green]hit[/bold green]",
    "miss": "[bold red]miss[/bold red]",
    "close": "[yellow]too close to call[/yellow]",
    "unknown": "[dim]not measurable here[/dim]",
    "skipped": "[dim]skipped[/dim]",
}


def fingerprint_line(r: dict[str, Any]) -> str:
    if r.get("status") != "ok":
        return f"{r['variant']}: {r.get('status')} ({r.get('reason')})"
    unit = "ops" if r.get("device_kind") == "cpu" else "kernels"
    parts = [f"{r.get('num_kernels')} {unit}"] if r.get("num_kernels") is not None else []
    if r.get("accounting"):
        parts.append(str(r["accounting"]))
    if r.get("backend"):
        parts.append(f"backend {r['backend']}")
    if r.get("tflops") is not None:
        parts.append(f"{r['tflops']:.2f} TFLOP/s")
    if r.get("device_kind") == "gpu" and r.get("cpu_time_us") and r.get("gpu_time_us"):
        parts.append(f"host {fmt_us(r['cpu_time_us'])} per call against {fmt_us(r['gpu_time_us'])} on the GPU")
    return f"{r['variant']}: {fmt_us(r.get('time_us'))} ({r.get('time_basis')}); " + "; ".join(parts)


def show(rec: dict[str, Any], say: Callable[[str], None]) -> None:
    for q in rec["questions"]:
        guess = "no answer" if q.get("answer") is None else escape(str(q["answer"]))
        say(f"  [bold]{escape(q['prompt'])}[/bold] you said {guess} ({q['answer_source']}) → {MARK[q['outcome']]}")
        if q.get("text"):
            say(f"    {escape(str(q['text']))}")
        if q.get("outcome") in ("miss", "close", "unknown") and q.get("explanation"):
            say(f"    [dim]why: {escape(str(q['explanation']))}[/dim]")
    say("  [bold]Evidence[/bold]")
    shown = [r for r in rec["results"] if r["variant"] in rec["evidence"]] or rec["results"]
    for r in shown:
        say(f"    {escape(fingerprint_line(r))}")
        if r.get("kernels"):
            say(f"      {rich_strip(r['kernels'])}   [dim]{escape(legend(r['kernels']))}[/dim]")
        for i in r.get("insights") or []:
            if i["id"] in {q["insight"] for q in rec["questions"]}:
                say(f"      [dim]insight {i['id']}: {escape(i['message'])}[/dim]")
        refusals = _refusals(r)
        if refusals:
            say(f"      [dim]{escape(refusals)}[/dim]")
    for d in rec.get("differs") or []:
        say(f"  [yellow]Here vs the H200:[/yellow] {escape(d)}")
    for f in rec["h200"]["figures"]:
        say(f"  [cyan]H200:[/cyan] {escape(f)} [dim](source: {escape(rec['h200']['source'])})[/dim]")
    say(f"  [bold]Why:[/bold] {escape(rec['why'])}")


def _refusals(r: dict[str, Any]) -> str:
    why = r.get("sdpa_why")
    if not isinstance(why, dict):
        return ""
    parts = [
        f"{c['backend']}: {'; '.join(c.get('reasons') or ['refused'])}"
        for c in why.get("checks") or []
        if not c.get("usable")
    ]
    head = f"torch chose {why.get('chosen')} (order {', '.join(why.get('order') or [])})"
    return head + (f"; refused: {' | '.join(parts)}" if parts else "; nothing refused before it")


def show_end(t: dict[str, Any], say: Callable[[str], None]) -> None:
    s = t.get("score") or {}
    say(f"\n[bold]Score:[/bold] {escape(str(s.get('text', '')))}")
    sur = t.get("surprises") or []
    if not sur:
        say("No clear miss: nothing surprised you.")
    for i, x in enumerate(sur, 1):
        say(f"  {i}. [bold]{escape(x['prompt'])}[/bold] {escape(str(x.get('text')))}")
        head = f"insight [cyan]{x['insight']}[/cyan]" if x.get("insight") else "why"
        say(f"     {head}: {escape(str(x.get('insight_message') or ''))}")
