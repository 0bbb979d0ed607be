"""The building blocks of the one-file HTML page: escaping, tags, tables, the plot data block, the page shell.

Every string that comes from a document (variant, kernel, op and file names, labels) reaches the page in
one of two ways, and never as code:

- escaped into the HTML by :func:`esc` (tables, insights, paths);
- inside the one JSON data block, with ``<``, ``>`` and ``&`` written as ``\\u003c``, ``\\u003e``,
  ``\\u0026`` (:func:`embed_json`), read with ``JSON.parse`` and handed to plotly; plotly draws text
  as SVG text nodes but reads a few tags (``<b>``, ``<br>``, ``<a>``), so strings bound for a plot are
  written with HTML entities first (:func:`plot_text`), which plotly shows as the characters.

A Content-Security-Policy admits only the page's own two scripts (by hash) and no fetch of any kind,
so even a tag that slipped through could neither run nor load anything.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
from collections.abc import Iterable, Sequence
from functools import lru_cache
from importlib import resources
from typing import Any


class HtmlError(ValueError):
    """The page cannot be written (plotly missing, bad input); one line for the user."""


class Markup(str):
    """A string that is already HTML: :func:`esc` passes it through."""


def esc(x: Any) -> Markup:
    if isinstance(x, Markup):
        return x
    return Markup(html.escape("" if x is None else str(x), quote=True))


def tag(name: str, *body: Any, **attrs: Any) -> Markup:
    """``<name attrs>body</name>``; body parts and attribute values are escaped unless Markup."""
    a = "".join(f' {k.rstrip("_").replace("_", "-")}="{esc(v)}"' for k, v in attrs.items() if v is not None)
    return Markup(f"<{name}{a}>{''.join(esc(b) for b in body)}</{name}>")


def join(parts: Iterable[Any]) -> Markup:
    return Markup("".join(esc(p) for p in parts))


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], cls: str = "data", **attrs: Any) -> Markup:
    head = tag("tr", *(tag("th", h) for h in headers))
    body = join(tag("tr", *(tag("td", c) for c in row)) for row in rows)
    return tag("table", tag("thead", head), tag("tbody", body), class_=cls, **attrs)


def short(name: Any, n: int = 110) -> Markup:
    """A long C++ kernel name cut for a table cell; the whole name on hover (title)."""
    s = "" if name is None else str(name)
    if len(s) <= n:
        return esc(s)
    return tag("span", s[: n - 1] + "…", title=s)


def plot_text(x: Any) -> str:
    """A string for plotly to show as is: its pseudo-HTML reads tags, so write <, > and & as entities."""
    return html.escape("" if x is None else str(x), quote=False)


def wrap_plot_text(x: Any, width: int = 90) -> str:
    """Long kernel names cut into lines for a hover box (cut before escaping: never inside an entity)."""
    s = "" if x is None else str(x)
    return "<br>".join(plot_text(s[i : i + width]) for i in range(0, max(len(s), 1), width))


def _finite(o: Any) -> Any:
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {k: _finite(v) for k, v in o.items()}
    if isinstance(o, list | tuple):
        return [_finite(v) for v in o]
    return o


def embed_json(obj: Any) -> str:
    """JSON safe inside <script type="application/json">: no '</script>', no '<!--', no '&' entity tricks."""
    # NaN/Inf as null (JSON has neither; a fresh in-memory document may hold them); anything odd as text
    s = json.dumps(_finite(obj), ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=str)
    return s.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


class Page:
    """Collects the sections and the figures of one report."""

    def __init__(self) -> None:
        self.parts: list[Markup] = []
        self.figures: list[dict[str, Any]] = []
        self.notes: list[str] = []

    def add(self, *parts: Any) -> None:
        self.parts.extend(esc(p) for p in parts)

    def figure(self, data: list[dict[str, Any]], layout: dict[str, Any], caption: str | None = None) -> Markup:
        """Register a plotly figure; returns the placeholder that the page script fills."""
        fid = f"fig-{len(self.figures)}"
        base = {"margin": {"l": 60, "r": 20, "t": 40, "b": 50}, "font": {"size": 12}, "hovermode": "closest"}
        layout = {**base, **layout}
        for axis in ("xaxis", "yaxis"):
            spec = layout.get(axis)
            if isinstance(spec, dict) and spec.get("type") == "log" and "tickvals" not in spec:
                layout[axis] = {**spec, **log_ticks(_values(data, axis[0]), few_exact=axis == "xaxis")}
        self.figures.append({"id": fid, "data": data, "layout": layout})
        cap = tag("figcaption", caption) if caption else ""
        return tag("figure", tag("div", "", id=fid, class_="plot"), cap)


def _values(data: list[dict[str, Any]], axis: str) -> list[float]:
    """The positive numbers a figure places on its ``x`` or ``y`` axis."""
    out = []
    for trace in data:
        if str(trace.get("xaxis" if axis == "x" else "yaxis", axis)) not in (axis, axis + "1"):
            continue
        for v in trace.get(axis) or []:
            if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v > 0:
                out.append(float(v))
    return out


def tick_text(v: float) -> str:
    """'0.05', '2', '500', '20k', '5M': a tick label a reader takes in at a glance."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if v >= scale:
            return f"{v / scale:g}{suffix}"
    return f"{v:g}"


def log_ticks(values: list[float], *, few_exact: bool = False) -> dict[str, Any]:
    """Labelled ticks for a log axis: 1-2-5 in each decade the values span (only the 1s past 12 ticks), or the
    values themselves on an x axis of at most 8 of them (seq_len 128 … 4096); plotly's own minor ticks read
    as bare '2 … 5'."""
    if not values:
        return {}
    distinct = sorted(set(values))
    if few_exact and len(distinct) <= 8:
        return {"tickvals": distinct, "ticktext": [tick_text(v) for v in distinct]}
    lo, hi = distinct[0] / 1.5, distinct[-1] * 1.5
    ticks: list[float] = []
    for steps in ((1, 2, 5), (1,)):
        ticks = [
            m * 10.0**k
            for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
            for m in steps
            if lo <= m * 10.0**k <= hi
        ]
        if len(ticks) <= 12:
            break
    if len(ticks) < 2:  # within one 1-2-5 step: the ends, as measured
        ticks = [distinct[0], distinct[-1]] if len(distinct) > 1 else distinct
    ticks = [float(f"{t:.6g}") for t in ticks]
    return {"tickvals": ticks, "ticktext": [tick_text(t) for t in ticks]}


@lru_cache(maxsize=1)
def plotly_js() -> str:
    try:
        from plotly.offline import get_plotlyjs
    except ImportError:
        raise HtmlError("the HTML report needs plotly: pip install -e '.[html]' in the attnscope clone") from None
    js = get_plotlyjs()
    if "</script" in js.lower():  # would end the inline script early
        raise HtmlError("this plotly.js bundle holds '</script': cannot inline it safely")
    return js


def require_plotly() -> None:
    """Fail before a long run rather than after it."""
    plotly_js()


def _asset(name: str) -> str:
    return resources.files("attnscope.report.html").joinpath("assets", name).read_text()


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def _csp(scripts: list[str], linked: bool = False) -> str:
    hashes = " ".join(f"'{_sha256(s)}'" for s in scripts)
    # connect/img/font/frame: nothing from outside; plotly's styles are inline; its toImage makes data: URLs.
    # A linked plotly (--assets) is admitted as a script of the page's own origin ('self'): a browser cannot check
    # a file: script's integrity (it needs CORS), so the asset's name carries its hash instead.
    src = f"{hashes} 'self'" if linked else hashes
    return f"default-src 'none'; script-src {src}; style-src 'unsafe-inline'; img-src data: blob:; font-src data:"


def plotly_asset_name() -> str:
    """The shared asset's file name, by content: pages written by another plotly version name their own."""
    return f"plotly-{hashlib.sha256(plotly_js().encode()).hexdigest()[:12]}.min.js"


def render_page(page: Page, title: str, plotly_src: str | None = None) -> str:
    """The page; plotly inline, or with ``plotly_src`` (a relative URL) linked."""
    scripts = [_asset("report.js")] if plotly_src else [plotly_js(), _asset("report.js")]
    data = embed_json({"figures": page.figures})
    head = (
        '<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(_csp(scripts, plotly_src is not None))}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{esc(title)}</title>\n<style>{_asset('report.css')}</style>\n"
    )
    notes = tag("ul", *(tag("li", n) for n in page.notes), class_="notes") if page.notes else ""
    linked_tag = f'<script src="{esc(plotly_src)}"></script>\n' if plotly_src else ""
    body = (
        f"<header><h1>{esc(title)}</h1>{notes}</header>\n<main>\n"
        + "\n".join(page.parts)
        + "\n</main>\n"
        + f'<script type="application/json" id="attnscope-data">{data}</script>\n'
        + linked_tag
        + "".join(f"<script>{s}</script>\n" for s in scripts)
    )
    return f'<!DOCTYPE html>\n<html lang="en">\n<head>\n{head}</head>\n<body>\n{body}</body>\n</html>\n'
