"""The run section: environment, fingerprint table, kernel timelines, times, rates, memory, insights,
predictions and traces.  Reads the JSON-shaped document only, so a saved run renders like a fresh one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attnscope.core.host_line import host_line
from attnscope.core.units import fmt_bytes, fmt_mib
from attnscope.document.load import Source
from attnscope.report.html.markup import Markup, Page, esc, join, plot_text, short, table, tag
from attnscope.report.html.timeline import (
    MAX_TIMELINE_EVENTS,
    find_trace,
    rel_link,
    timed_kernels,
    timeline_figure,
    trace_candidates,
)

MIB = 1024 * 1024


def fmt(v: float | None, spec: str = ",.1f", unit: str = "") -> str:
    return "—" if v is None else f"{v:{spec}}{unit}"


def _timing(t: dict[str, Any] | None) -> Markup:
    if not t:
        return esc("—")
    s = fmt(t.get("median_us"))
    if t.get("noisy"):
        return tag("span", s + " ~", class_="warn", title=f"noisy: IQR/median {t.get('iqr_rel', 0):.0%}")
    return esc(s)


def _pct_peak(r: dict[str, Any]) -> Markup:
    p = r.get("pct_of_peak")
    if p is None:
        return esc("—")
    if p > 100:  # a rate above the measured peak: the time, the FLOP count or the peak is wrong
        return tag("span", f"{p:.1f} ⚠ >100%: inconsistent", class_="bad")
    return esc(f"{p:.1f}")


def _error(r: dict[str, Any]) -> Markup:
    if r.get("nonfinite"):
        return tag("span", "NaN/Inf ✗", class_="bad")
    e = r.get("max_rel_error")
    if e is None:
        return esc("—")
    ok = r.get("numerics_ok")
    return tag("span", f"{e:.1e} {'✓' if ok else '✗'}", class_="" if ok else "bad")


def _occ(r: dict[str, Any]) -> str:
    k = r.get("main_kernel")  # stored by annotate
    if not k or k.get("theoretical_occupancy_pct") is None:
        return "—"
    return f"{k['theoretical_occupancy_pct']:.1f}% {k.get('occupancy_limiter') or ''}"


def _yn(v: Any, yes: str = "yes") -> str:
    return "?" if v is None else (yes if v else "no")


GPU_ONLY = frozenset({"memcpy/set", "TC", "occupancy", "GPU µs"})  # nothing to show for a run on the CPU


def _cells(r: dict[str, Any]) -> dict[str, Any]:
    copies = r.get("hidden_copies") or []
    mem = r.get("peak_memory_bytes")
    return {
        "kernels": r.get("num_kernels"),
        "memcpy/set": f"{r.get('num_memcpy')}/{r.get('num_memset')}",
        "hidden copy": _yn(bool(copies), fmt_bytes(sum(c["bytes"] for c in copies))),
        "upcast": _yn(r.get("upcast_fp32"), f"yes ×{len(r.get('upcasts') or [])}"),
        "TC": _yn(r.get("tensor_cores")),
        "occupancy": _occ(r),
        "CPU µs": _timing(r.get("cpu_time")),
        "GPU µs": _timing(r.get("gpu_time")),
        "TFLOP/s": fmt(r.get("tflops"), ".2f"),
        "% peak": _pct_peak(r),
        "peak mem": "—" if mem is None else fmt_mib(mem, grouped=True),
        "error": _error(r),
    }


def fingerprint_table(results: list[dict[str, Any]]) -> Markup:
    """One row per variant; a run on the CPU (no row ran on a GPU) shows no GPU-only column."""
    cpu_only = all((r.get("device_kind") or "cpu") == "cpu" for r in results if r["status"] == "ok")
    middle = [h for h in _cells({}) if not (cpu_only and h in GPU_ONLY)]
    heads = ["variant", "status", *(("ops" if cpu_only and h == "kernels" else h) for h in middle), "reason"]
    rows = []
    for r in results:
        status = tag("span", r["status"], class_="st-" + r["status"])
        if r["status"] != "ok":
            rows.append([r["variant"], status, *["—"] * len(middle), r.get("reason")])
            continue
        cells = _cells(r)
        rows.append([r["variant"], status, *(cells[h] for h in middle), ""])
    return table(heads, rows, cls="data fingerprint")


def env_table(env: dict[str, Any] | None, case: dict[str, Any] | None) -> Markup:
    env = env or {}
    rows = [
        ("GPU / device", env.get("device_name")),
        ("driver", env.get("driver")),
        ("torch", env.get("torch")),
        ("CUDA", env.get("cuda")),
        ("cuDNN", env.get("cudnn")),
        ("date", env.get("date")),
        ("python", env.get("python")),
        ("platform", env.get("platform")),
    ]
    if case:
        rows.append(("case", ", ".join(f"{k}={v}" for k, v in case.items() if v is not None)))
    return table(["", ""], [(k, "—" if v is None else v) for k, v in rows], cls="kv")


def _ok(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in results if r["status"] == "ok"]


def timeline_block(page: Page, src: Source, results: list[dict[str, Any]]) -> Markup:
    strips, notes = [], []
    for r in _ok(results):
        if len(r.get("kernels") or []) > MAX_TIMELINE_EVENTS:
            notes.append(f"{r['variant']}: {len(r['kernels']):,} events, too many for a strip; open its trace")
            continue
        ks, note = timed_kernels(r, src)
        if note:
            notes.append(f"{r['variant']}: {note}")
        if ks:
            strips.append((r["variant"], ks))
    device = next((r.get("device_kind") or "gpu" for r in _ok(results)), "gpu")
    if not strips:
        return join([tag("h3", "Kernel timeline"), tag("p", "no timeline drawn:", class_="dim"), _notes(notes)])
    return join([tag("h3", "Kernel timeline of one call"), timeline_figure(page, strips, device), _notes(notes)])


def _notes(notes: list[str]) -> Markup:
    return tag("ul", *(tag("li", n) for n in notes), class_="notes") if notes else Markup("")


def _bar(name: str, x: list[str], y: list[Any], **kw: Any) -> dict[str, Any]:
    return {"type": "bar", "name": plot_text(name), "x": x, "y": y, **kw}


def times_figure(page: Page, ok: list[dict[str, Any]]) -> Markup:
    x = [plot_text(r["variant"]) for r in ok]
    data = []
    for key, name in (("gpu_time", "GPU µs per call"), ("cpu_time", "CPU µs per call")):
        ts = [r.get(key) or {} for r in ok]
        if not any(t.get("median_us") for t in ts):
            continue
        med = [t.get("median_us") for t in ts]
        err = {
            "type": "data",
            "symmetric": False,
            "array": [(t["p75_us"] - t["median_us"]) if t.get("p75_us") else None for t in ts],
            "arrayminus": [(t["median_us"] - t["p25_us"]) if t.get("p25_us") else None for t in ts],
        }
        data.append(_bar(name, x, med, error_y=err, hovertemplate="%{y:,.1f} µs<extra>" + name + "</extra>"))
    layout = {"barmode": "group", "height": 380, "yaxis": {"type": "log", "title": {"text": "µs per call (log)"}}}
    return page.figure(data, layout, "Median per call; whiskers: quartiles. " + timing_caption(ok))


def timing_caption(rows: list[dict[str, Any]], keys: tuple[str, ...] = ("gpu_time", "cpu_time")) -> str:
    """How each time was taken, labelled: 'GPU time: CUDA events, median of 12 (naive, sdpa_flash). CPU time: …'."""
    parts = []
    for key in keys:
        by_method: dict[str, list[str]] = {}
        for r in rows:
            if m := (r.get(key) or {}).get("method"):
                by_method.setdefault(str(m), []).append(str(r.get("variant") or r.get("impl")))
        name = key.replace("_", " ").replace("gpu", "GPU").replace("cpu", "CPU")
        parts += [f"{name}: {m} ({', '.join(vs)})." for m, vs in by_method.items()]
    return " ".join(parts)


def rate_figure(page: Page, ok: list[dict[str, Any]], peak: dict[str, Any] | None) -> Markup:
    rows = [r for r in ok if r.get("tflops") is not None]
    if not rows:
        return tag("p", "no TFLOP/s: FLOPs or times unknown here", class_="dim")
    over = [r.get("pct_of_peak") is not None and r["pct_of_peak"] > 100 for r in rows]
    labels = [
        (f"{r['pct_of_peak']:.1f}% of peak" + (" ⚠ inconsistent" if o else "")) if r.get("pct_of_peak") else ""
        for r, o in zip(rows, over, strict=True)
    ]
    data = [
        _bar(
            "TFLOP/s",
            [plot_text(r["variant"]) for r in rows],
            [r["tflops"] for r in rows],
            text=labels,
            textposition="outside",
            marker={"color": ["#d62728" if o else "#1f77b4" for o in over]},
            hovertemplate="%{y:,.2f} TFLOP/s, %{text}<extra></extra>",
        )
    ]
    layout: dict[str, Any] = {"height": 380, "yaxis": {"title": {"text": "TFLOP/s"}}}
    cap = f"FLOPs: {rows[0].get('flop_formula') or '?'} over the median time. "
    if peak and peak.get("tflops"):
        layout["shapes"] = [
            {"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": peak["tflops"], "y1": peak["tflops"]}
            | {"line": {"dash": "dash", "color": "#555"}}
        ]
        cap += f"Dashed: the measured peak, {peak['tflops']:.1f} TFLOP/s ({peak.get('source')}). "
    cap += "Above 100% of it is flagged in red as inconsistent."
    return page.figure(data, layout, cap)


def memory_figure(page: Page, ok: list[dict[str, Any]]) -> Markup:
    rows = [r for r in ok if r.get("peak_memory_bytes") is not None]
    if not rows:
        return Markup("")
    data = [
        _bar(
            "peak MiB",
            [plot_text(r["variant"]) for r in rows],
            [r["peak_memory_bytes"] / MIB for r in rows],
            hovertemplate="%{y:,.1f} MiB<extra></extra>",
        )
    ]
    src = sorted({str(r["peak_memory_source"]) for r in rows if r.get("peak_memory_source")})
    layout = {"height": 340, "yaxis": {"type": "log", "title": {"text": "extra peak memory, MiB (log)"}}}
    return page.figure(data, layout, "Extra peak memory of one call. " + "; ".join(str(s) for s in src))


def insights_block(results: list[dict[str, Any]]) -> Markup:
    items = []
    for r in results:
        for i in r.get("insights") or []:
            ev = table(
                ["evidence", "value"], [(k, _evidence(v)) for k, v in (i.get("evidence") or {}).items()], cls="kv"
            )
            sev = "!" if i.get("severity") in ("warning", "error") else "·"
            items.append(
                tag(
                    "li",
                    tag("span", sev, class_="sev-" + str(i.get("severity"))),
                    " ",
                    tag("b", r["variant"]),
                    f" [{i.get('id')}] {i.get('message')}",
                    tag("div", "→ ", i.get("advice") or "", class_="advice"),
                    tag("details", tag("summary", "evidence"), ev),
                )
            )
    if not items:
        return tag("p", "no insights in this document", class_="dim")
    return tag("ul", *items, class_="insights")


def _evidence(v: Any) -> str:
    """An evidence value as the page says it: "—" where there is none (never Python's None), a list's items
    joined, a dict's keys beside their values."""
    if v is None:
        return "—"
    if isinstance(v, list):
        return ", ".join(_evidence(x) if isinstance(x, dict) or x is None else str(x) for x in v)
    if isinstance(v, dict):
        return "; ".join(f"{k}: {_evidence(x)}" for k, x in v.items())
    return str(v)


def _plain(v: Any) -> str:
    """A predicted or measured value in words: yes/no, lo–hi, 'variant X by N'."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, list):
        return "–".join(_plain(x) for x in v) if len(v) == 2 else ", ".join(_plain(x) for x in v)
    if isinstance(v, dict):
        return ", ".join(f"{k} {_plain(x)}" for k, x in v.items())
    return "—" if v is None else str(v)


def predictions_block(doc: dict[str, Any]) -> Markup:
    vs = doc.get("verdicts") or []
    if not vs:
        return Markup("")
    rows = []
    for v in vs:
        p = v.get("prediction") or {}
        out = v.get("outcome")
        rows.append(
            [
                p.get("variant"),
                p.get("kind"),
                _plain(p.get("expected")),
                _plain(v.get("measured")),
                tag("span", out, class_={"hit": "st-ok", "miss": "bad"}.get(str(out), "dim")),
                v.get("explanation") or "",
            ]
        )
    hits = sum(1 for v in vs if v.get("outcome") == "hit")
    head = tag("h3", f"Predictions written before the run: {hits} hit of {len(vs)}")
    return join([head, table(["variant", "kind", "predicted", "measured", "verdict", "why"], rows)])


def traces_block(src: Source, results: list[dict[str, Any]], out_dir: Path | None) -> Markup:
    rows = []
    for r in results:
        if not r.get("trace_path"):
            continue
        p = find_trace(r, src)
        where = tag("a", p.name, href=rel_link(p, out_dir)) if p else tag("span", "not found here", class_="dim")
        rows.append([r["variant"], r["trace_path"], where])
    if not rows:
        return Markup("")
    how = (
        "Each trace is a Kineto (Chrome trace) JSON of the profiled call. To look inside: open "
        "https://ui.perfetto.dev, choose “Open trace file” and pick the file (it is read in your browser, "
        "not uploaded), or load it in chrome://tracing. The links are relative to where this page was written: "
        "moved elsewhere, the page keeps working but a link opens only if the trace files move with it (keep the "
        "folder together, or copy the traces beside the page)."
    )
    heads = ["variant", "written to", "link (relative to this page)"]
    return join([tag("h3", "Traces"), tag("p", how), table(heads, rows)])


def kernels_details(results: list[dict[str, Any]]) -> Markup:
    out = []
    for r in _ok(results):
        ks = r.get("kernels") or []
        if not ks or len(ks) > MAX_TIMELINE_EVENTS:
            continue
        rows = [
            [
                i,
                short(k["name"], 140),
                k["category"],
                fmt(k["duration_us"], ",.2f"),
                _yn(k.get("tensor_cores")),
                "×".join(map(str, k["grid"])) if k.get("grid") else "",
                "×".join(map(str, k["block"])) if k.get("block") else "",
                k.get("registers_per_thread") or "",
                k.get("shared_memory_bytes") if k.get("shared_memory_bytes") is not None else "",
                fmt(k.get("theoretical_occupancy_pct"), ".1f", "%") if k.get("theoretical_occupancy_pct") else "",
                k.get("launched_by") or "",
            ]
            for i, k in enumerate(ks)
        ]
        heads = ["#", "name", "category", "µs", "TC", "grid", "block", "regs", "smem B", "occ.", "launched by"]
        out.append(tag("details", tag("summary", f"{r['variant']}: {len(ks)} events"), table(heads, rows)))
    return join(out)


def host_banner(doc: dict[str, Any]) -> Markup | str:
    """The loaded-host caveat the terminal and the JSON carry, at the top of a section; "" on a quiet host."""
    line = host_line(doc.get("host"))
    return tag("p", tag("b", "⚠ "), line, class_="warn host-loaded") if line else ""


def footnotes(doc: dict[str, Any]) -> list[str]:
    from attnscope.report.text.table import footnotes as terminal_footnotes

    return terminal_footnotes(doc)


def run_section(page: Page, src: Source, out_dir: Path | None) -> None:
    doc = src.doc  # annotated: attnscope.api.report.prepare brings an older document up to date
    results = doc.get("results") or []
    ok = _ok(results)
    rec = (doc.get("recommendation") or {}).get("text")
    case = doc.get("case")
    page.add(
        tag("h2", f"Run: {src.label}"),
        host_banner(doc),
        env_table(doc.get("env"), case),
        _notes(src.notes),
        tag("p", tag("b", "Recommendation: "), rec, class_="rec") if rec else "",
        tag("h3", "Fingerprints"),
        fingerprint_table(results),
        _notes(footnotes(doc)),
        timeline_block(page, src, results),
        tag("h3", "Time per call: GPU and CPU"),
        times_figure(page, ok) if ok else "",
        tag("h3", "Rate against the measured peak"),
        rate_figure(page, ok, doc.get("peak")),
        tag("h3", "Peak memory"),
        memory_figure(page, ok),
        tag("h3", "Insights"),
        insights_block(results),
        predictions_block(doc),
        traces_block(src, results, out_dir),
        tag("h3", "Kernels"),
        kernels_details(results),
    )


__all__ = ["fingerprint_table", "host_banner", "insights_block", "run_section", "trace_candidates"]
