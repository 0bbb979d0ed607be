"""One self-contained HTML page from result documents: a section per document, by its kind.  No network.

The building blocks and the page's safety rules (escaping, the JSON data block, the
Content-Security-Policy) are in :mod:`attnscope.report.html.markup`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from attnscope.core.files import WriteError, os_error_text, write_atomic
from attnscope.document.load import Source, as_sources
from attnscope.report.html.markup import (  # noqa: F401  (re-exported: the page's public helpers)
    HtmlError,
    Page,
    embed_json,
    esc,
    plot_text,
    plotly_asset_name,
    plotly_js,
    render_page,
    require_plotly,
    tag,
)
from attnscope.report.html.model import model_section
from attnscope.report.html.run import run_section
from attnscope.report.html.sweep import sweep_section
from attnscope.report.html.trace import analyze_section


def _title(sources: list[Source]) -> str:
    kinds = sorted({s.kind for s in sources})
    names = ", ".join(s.label for s in sources[:3]) + (" …" if len(sources) > 3 else "")
    return f"attnscope {'/'.join(kinds)} report — {names}"


def render_html(docs: Iterable[Any], out_dir: Path | None = None, plotly_src: str | None = None) -> str:
    """The page for documents (dicts), sweep rows (a list of dicts) or paths to them, as stored: what a document
    written by an older attnscope lacks is added by :func:`attnscope.api.report.sources` first."""
    sources = as_sources(docs)
    if not sources:
        raise HtmlError("nothing to report: no documents given")
    page = Page()
    render = {"run": run_section, "analyze": analyze_section, "sweep": sweep_section, "model": model_section}
    for i, s in enumerate(sources):
        page.add(tag("a", "", id=f"doc-{i}"))
        render[s.kind](page, s, out_dir)
    if len(sources) > 1:  # a contents line: the page can hold a run, a sweep and a model at once
        links = [tag("li", tag("a", f"{s.kind}: {s.label}", href=f"#doc-{i}")) for i, s in enumerate(sources)]
        page.parts.insert(0, tag("nav", tag("ul", *links)))
    return render_page(page, _title(sources), plotly_src)


def _write_asset(assets: Path, page: Path) -> str:
    """plotly written once into ``assets`` (kept when already there as written, rewritten otherwise); its URL
    relative to the page."""
    target = assets / plotly_asset_name()
    try:
        assets.mkdir(parents=True, exist_ok=True)
        if (
            target.is_symlink()
            or not target.is_file()
            or target.read_text(encoding="utf-8", errors="replace") != plotly_js()
        ):
            write_atomic(target, plotly_js())  # a link planted at the asset's name is replaced, never written through
    except WriteError:
        raise  # a full disk: said as the file that was not written
    except OSError as e:
        raise HtmlError(f"{assets}: cannot write the shared plotly asset: {os_error_text(e)}") from None
    return Path(os.path.relpath(target.resolve(), page.parent.resolve())).as_posix()


def write_html(docs: Iterable[Any] | Any, path: str | Path, *, assets: str | Path | None = None) -> Path:
    """Write the report for ``docs`` to ``path`` (atomically) and return the path.

    ``docs``: a result document (`run`, `analyze`, `model`), a list of sweep rows, a path to any of
    those files, or a list mixing them.  The page needs no network; with ``assets`` it needs plotly's file in
    that folder (linked by a relative URL; the file's name holds its hash), otherwise no other file.
    """
    p = Path(path)
    if isinstance(docs, dict | str | Path | Source):
        docs = [docs]
    src = _write_asset(Path(assets), p) if assets is not None else None
    text = render_html(docs, out_dir=p.parent.resolve(), plotly_src=src)
    write_atomic(p, text)  # WriteError (an OSError) names the page and the cause
    return p
