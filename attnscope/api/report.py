"""The report's entry point: load the documents, bring an older one up to date, and hand plain documents to
the page.  The page (:mod:`attnscope.report`) reads documents only; whatever it shows that a document written by
an older attnscope lacks is computed here, once, by the same functions `run`, `analyze` and `recommend` use."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from attnscope.document.load import Source, as_sources, load

UPDATED = "insights, recommendation and main kernels computed by this attnscope from the stored results"


def _needs_annotating(doc: dict[str, Any]) -> bool:
    rows = [r for r in doc.get("results") or [] if isinstance(r, dict)]
    return any(k not in r for r in rows for k in ("insights", "main_kernel", "eager_fallback"))


def _start_times(r: dict[str, Any], source: Source) -> dict[str, Any]:
    """A row written before kernels carried their start times gets them from its trace (as written, or beside the
    document), when the trace's kernels are the row's; otherwise the row is left as it is."""
    ks = r.get("kernels") or []
    if not ks or all(k.get("start_us") is not None for k in ks):
        return r
    from attnscope.analysis.fingerprint.build import fingerprint
    from attnscope.report.html.timeline import find_trace
    from attnscope.trace import TraceError, load_trace

    path = find_trace(r, source)
    if path is None:
        return r
    try:
        got = fingerprint(load_trace(path)).kernels
    except TraceError:
        return r
    if [k.name for k in got] != [k.get("name") for k in ks]:
        return r
    return {**r, "kernels": [{**k, "start_us": g.start_us} for k, g in zip(ks, got, strict=True)]}


def prepare(source: Source) -> Source:
    """A source with everything its section shows stored in it (a copy; the file is left as it is); a trace is
    analysed into an analyze document, as `attnscope analyze` writes it."""
    if source.kind == "trace" and source.path is not None:
        from attnscope.api import analyze, annotate
        from attnscope.document.schema import document

        doc = annotate(document(None, [analyze(source.path, require_gpu=False)]))
        return Source("analyze", doc, source.path, source.notes)
    if source.kind in ("run", "analyze"):
        doc, notes = source.doc, source.notes
        if _needs_annotating(doc):
            from attnscope.api import annotate

            doc, notes = annotate(doc), [*notes, UPDATED]
        rows = [_start_times(r, source) if isinstance(r, dict) else r for r in doc.get("results") or []]
        return Source(source.kind, {**doc, "results": rows}, source.path, notes)
    if source.kind == "sweep" and not isinstance(source.doc.get("recommendation"), dict):
        from attnscope.analysis.fingerprint.compiled import fell_back_to_eager
        from attnscope.analysis.recommend import recommend  # the one recommender

        rows = [{**r, "eager_fallback": r.get("eager_fallback", fell_back_to_eager(r))} for r in source.doc["rows"]]
        with_case = [r for r in rows if isinstance(r.get("case"), dict)]
        doc = {**source.doc, "rows": rows, "recommendation": recommend(with_case)}
        return Source("sweep", doc, source.path, source.notes)  # as the page computed it before: no note
    return source


def sources(docs: Iterable[Any] | Any) -> list[Source]:
    """Documents, sweep rows or paths (or a list mixing them), loaded and brought up to date."""
    if isinstance(docs, dict | str | Path | Source):
        docs = [docs]
    return [prepare(s) for s in as_sources(load(d) if isinstance(d, str | Path) else d for d in docs)]


def write_html(docs: Iterable[Any] | Any, path: str | Path, *, assets: str | Path | None = None) -> Path:
    """The HTML report for ``docs`` at ``path``; with ``assets``, plotly is one shared file in that folder
    instead of inside the page (see docs/report.md for the sizes measured)."""
    from attnscope.report.html.page import write_html as write_page

    return write_page(sources(docs), path, assets=assets)


def render_html(docs: Iterable[Any] | Any, out_dir: Path | None = None) -> str:
    """The page's text for ``docs`` (as :func:`write_html` writes it, plotly inline)."""
    from attnscope.report.html.page import render_html as render_page

    return render_page(sources(docs), out_dir)


def write_outputs(
    doc: dict[str, Any], *, json: str | None = None, html: str | None = None, assets: str | None = None
) -> dict[str, str]:
    """The document to ``json``, then the page to ``html`` (plotly in ``assets`` where given), each tried whatever
    became of the other: what could not be written (a full disk), ``{"json" | "html": why}`` (a WriteError's one
    line, naming the file and the cause), for the caller to say after the results, which are never lost."""
    from attnscope.core.files import WriteError
    from attnscope.document.schema import write_atomic

    unwritten: dict[str, str] = {}
    if json:
        try:
            write_atomic(json, doc)
        except WriteError as e:
            unwritten["json"] = str(e)
    if html:  # after the JSON: a failing page never costs the results
        try:
            write_html(doc, html, assets=assets)
        except WriteError as e:
            unwritten["html"] = str(e)
    return unwritten


def traces_not_kept(rows: list[dict[str, Any]], trace_dir: str) -> dict[str, str]:
    """The rows whose profiler trace could not be moved into ``trace_dir`` (the rows themselves measured):
    ``{"trace_dir": why}`` in :func:`write_outputs`' form (how many, where, the first row's cause), or ``{}``."""
    notes = [n for r in rows for n in (r.get("run_notes") or r.get("notes") or [])]
    lost = [n for n in notes if str(n).startswith("trace not kept")]
    if not lost:
        return {}
    return {"trace_dir": f"{len(lost)} trace(s) not kept in {trace_dir}: {str(lost[0]).split(': ', 1)[-1]}"}
