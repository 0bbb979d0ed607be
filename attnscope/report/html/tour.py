"""The tour's transcript as one self-contained page: each guess beside its measurement, the step's plots
(times per variant, the kernels in time order), the H200 figures, the score and the surprises.

Reads the transcript only: every number on the page is one the transcript holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from attnscope.core.files import write_atomic
from attnscope.core.host_line import host_line
from attnscope.report.html.markup import HtmlError, Markup, Page, esc, join, plot_text, render_page, table, tag
from attnscope.report.html.timeline import CATEGORY_COLOURS

COLORS = {"hit": "#1a7f37", "miss": "#cf222e", "close": "#9a6700", "unknown": "#6e7781", "skipped": "#6e7781"}
BAR_COLOUR = "#1f77b4"  # the run page's bars (plotly's first colour)
LABEL = {"hit": "hit", "miss": "miss", "close": "too close to call", "unknown": "not measurable", "skipped": "skipped"}


def prose(text: Any) -> Markup:
    """The steps' text as the reader meets it: each `code` span in backticks rendered as code, the rest escaped."""
    parts = str(text or "").split("`")
    if len(parts) % 2 == 0:  # an unmatched backtick: no code span to close, shown as written
        return esc(text or "")
    return join(tag("code", p) if i % 2 else esc(p) for i, p in enumerate(parts))


def _value(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:,.2f}"
    if isinstance(v, list):
        return " → ".join(map(str, v)) if v and isinstance(v[0], str) else "–".join(_value(x) for x in v)
    if isinstance(v, dict):
        return f"≥ {_value(v.get('by'))}× {v.get('variant', '')}"
    return str(v)


def _verdict(outcome: str) -> Markup:
    return tag("b", LABEL.get(outcome, outcome), style=f"color:{COLORS.get(outcome, '#000')}")


def _guess_table(step: dict[str, Any]) -> Markup:
    rows = [
        (
            prose(q["prompt"]),
            f"{q.get('answer') if q.get('answer') is not None else '—'} ({q.get('answer_source')})",
            q.get("text") or _value(q.get("measured")),
            _verdict(q["outcome"]),
            q.get("explanation") if q["outcome"] != "hit" else "",
        )
        for q in step["questions"]
    ]
    return table(("question", "your guess", "measured here", "verdict", "why"), rows)


def _times_figure(page: Page, step: dict[str, Any]) -> Markup | str:
    ok = [r for r in step["results"] if r.get("time_us") is not None]
    if not ok:
        return ""
    err = [
        [r["time_us"] - (r.get("timing") or {}).get("p25_us", r["time_us"]) for r in ok],
        [(r.get("timing") or {}).get("p75_us", r["time_us"]) - r["time_us"] for r in ok],
    ]
    data = [
        {
            "type": "bar",
            "orientation": "h",
            "y": [plot_text(r["variant"]) for r in ok],
            "x": [r["time_us"] for r in ok],
            "error_x": {"type": "data", "symmetric": False, "array": err[1], "arrayminus": err[0]},
            "hovertext": [plot_text(r.get("time_basis") or "") for r in ok],
            "marker": {"color": BAR_COLOUR},
        }
    ]
    layout = {
        "height": 90 + 40 * len(ok),
        "xaxis": {"title": "time per call (µs): median, bars p25–p75"},
        "yaxis": {"title": "variant", "automargin": True},
    }
    return page.figure(data, layout, "time per call on this machine, median with its quartiles")


def _strip_figure(page: Page, step: dict[str, Any]) -> Markup | str:
    shown = [r for r in step["results"] if r.get("kernels") and r["variant"] in step.get("evidence", [])]
    if not shown:
        return ""
    data: list[dict[str, Any]] = []
    seen: set[str] = set()
    for r in shown:
        for k in r["kernels"]:
            cat = k.get("category") or "other"
            data.append(
                {
                    "type": "bar",
                    "orientation": "h",
                    "y": [plot_text(r["variant"])],
                    "x": [max(float(k.get("duration_us") or 0.0), 0.0)],
                    "name": cat,
                    "legendgroup": cat,
                    "showlegend": cat not in seen,
                    "marker": {
                        "color": CATEGORY_COLOURS.get(cat, CATEGORY_COLOURS["other"]),
                        "line": {"color": "#fff", "width": 1},
                    },
                    "hovertext": plot_text(f"{k.get('name')} ({cat}, {float(k.get('duration_us') or 0):,.1f} µs)"),
                    "hoverinfo": "text",
                }
            )
            seen.add(cat)
    layout = {
        "barmode": "stack",
        "height": 150 + 45 * len(shown),
        "xaxis": {"title": "kernel time (µs), kernels in time order, idle gaps left out"},
        "yaxis": {"title": "variant", "automargin": True},
        "legend": {"orientation": "h", "y": -0.6},
    }
    return page.figure(data, layout, "the kernels of one call in time order, coloured by category")


def _step_section(page: Page, i: int, step: dict[str, Any]) -> Markup:
    h200 = tag(
        "ul",
        *(
            tag("li", tag("b", "H200: "), prose(f), " ", tag("small", f"(source: {step['h200']['source']})"))
            for f in step["h200"]["figures"]
        ),
    )
    differs = tag("ul", *(tag("li", d) for d in step.get("differs") or [])) if step.get("differs") else ""
    return tag(
        "section",
        tag("h2", f"Step {i}: {step['title']}", id=f"step-{step['id']}"),
        tag("p", prose(step["setup"])),
        _guess_table(step),
        _times_figure(page, step),
        _strip_figure(page, step),
        tag("h3", "Here vs the H200"),
        differs,
        h200,
        tag("h3", "Why"),
        tag("p", prose(step["why"])),
    )


def tour_page(t: dict[str, Any]) -> str:
    if not isinstance(t, dict) or t.get("kind") != "tour" or not isinstance(t.get("steps"), list):
        raise HtmlError("not an attnscope tour transcript")
    page = Page()
    env = t.get("env") or {}
    page.notes.append(
        f"device {t.get('device')} ({env.get('device_name') or '?'}), torch {env.get('torch') or '?'}, "
        f"{t.get('size')} sizes; started {t.get('started')}, "
        + ("complete" if t.get("complete") else "incomplete (interrupted: resume with --resume)")
    )
    page.notes.append(f"scoring: {t.get('noise_rule', '')}")
    busy = host_line(t.get("host"))
    if busy:
        page.add(tag("p", tag("b", "⚠ "), busy, class_="warn host-loaded"))
    score = t.get("score") or {}
    if score:
        page.add(tag("h2", "Score"), tag("p", score.get("text", "")))
    sur = t.get("surprises") or []
    if sur:
        items = [
            tag(
                "li",
                tag("a", prose(x["prompt"]), href=f"#step-{x['step']}"),
                f": {x.get('text') or ''} ",
                join(
                    [" — insight ", tag("code", x["insight"], id=f"insight-{x['insight']}"), ": "]
                    if x.get("insight")
                    else [" — why: "]
                ),
                prose(x.get("insight_message") or ""),
            )
            for x in sur
        ]
        page.add(tag("h2", "The three biggest surprises"), tag("ol", *items))
    for i, step in enumerate(t["steps"], 1):
        page.add(_step_section(page, i, step))
    return render_page(page, f"attnscope tour — {t.get('device')} — {score.get('text', 'in progress')}")


def write_tour_html(transcript: dict[str, Any] | str | Path, path: str | Path) -> Path:
    """The page for a transcript (a dict or the path of its JSON), written atomically."""
    t = transcript
    if not isinstance(t, dict):
        try:
            t = json.loads(Path(t).read_text())
        except (OSError, ValueError) as e:
            raise HtmlError(f"{transcript}: cannot read the transcript ({e})") from None
        except RecursionError:
            raise HtmlError(f"{transcript}: cannot read the transcript (nested too deeply)") from None
    text = tour_page(t)
    p = Path(path)
    write_atomic(p, text)  # WriteError (an OSError) names the page and the cause
    return p
