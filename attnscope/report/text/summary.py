"""Terminal rendering of ``trace_summary`` (one trace) and ``overall`` (several ranks).

Reads the JSON-shaped dicts only, so a saved document renders the same as a fresh one.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from attnscope.core.units import fmt_mib, fmt_us
from attnscope.report.text.plain_table import plain_table
from attnscope.report.text.terminal import Blocks, bullet, fit, words_fit


def _short(name: str, n: int = 90) -> str:
    """A kernel name cut to ``n`` characters, without the return type "void " that most CUDA kernels' names open
    with (as the insights' names): a narrow terminal wrapped after it, a line holding "void" alone."""
    name = name.removeprefix("void ")
    return name if len(name) <= n else name[: n - 3] + "..."


CATEGORY_COLUMNS = (("category", "left"), ("kernels", "right"), ("GPU time", "right"), ("share", "right"))
# "kernel kinds": each kind of kernel the family ran, several where it ran several (attention_families'
# implementations: a named implementation's kernels, a helper kernel, or generic kernels an op decomposed into)
FAMILY_COLUMNS = ("family", "kernel kinds", "kernels", "fwd/bwd calls", "GPU time", "share", "main kernel")
TOP_COLUMNS = ("kernel", "category", "calls", "GPU time", "share", "launched by")


def _category_cells(rows: list[dict[str, Any]]) -> list[list[str]]:
    return [
        [c["category"], f"{c['num_kernels']:,}", fmt_us(c["time_us"]), f"{c['share_pct']:.1f}%"]
        for c in rows
        if c["num_kernels"]
    ]


def _categories_of(title: str | None, cells: list[list[str]]) -> Table:
    t = Table(title=title, header_style="bold")
    for col, j in CATEGORY_COLUMNS:
        t.add_column(col, justify=j)  # type: ignore[arg-type]
    for row in cells:
        t.add_row(*row)
    return t


def categories_table(rows: list[dict[str, Any]], title: str) -> Table:
    return _categories_of(title, _category_cells(rows))


def _family_cells(rows: list[dict[str, Any]]) -> list[list[str]]:
    out = []
    for f in rows:
        calls = (
            ("—" if f["num_forward_calls"] is None else f"{f['num_forward_calls']}/{f['num_backward_calls']}")
            if "num_forward_calls" in f
            else ""
        )
        out.append(
            [
                f["family"],
                ", ".join(f.get("implementations") or []),
                f"{f['num_kernels']:,}",
                calls,
                fmt_us(f["time_us"]),
                f"{f['share_pct']:.1f}%",
                _short((f.get("kernels") or [""])[0], 70),
            ]
        )
    return out


def _folded_of(columns: tuple[str, ...], title: str, cells: list[list[str]]) -> Table:
    t = Table(title=title, header_style="bold")
    for col in columns:
        t.add_column(col, overflow="fold")
    for row in cells:
        t.add_row(*row)
    return t


def families_table(rows: list[dict[str, Any]], title: str) -> Table:
    return _folded_of(FAMILY_COLUMNS, title, _family_cells(rows))


def _top_cells(rows: list[dict[str, Any]]) -> list[list[str]]:
    out = []
    for k in rows:
        by = ", ".join(f"{b['op']} ×{b['count']}" for b in k["launched_by"])
        cat = k["category"] + (f" ({k['attention_family']})" if k.get("attention_family") else "")
        out.append([_short(k["name"]), cat, f"{k['num_calls']:,}", fmt_us(k["time_us"]), f"{k['share_pct']:.1f}%", by])
    return out


def top_kernels_table(rows: list[dict[str, Any]], title: str) -> Table:
    return _folded_of(TOP_COLUMNS, title, _top_cells(rows))


def _launch_lines(launch: dict[str, Any], att: dict[str, int]) -> list[str]:
    d = launch["launch_to_start_us"]
    apis = ", ".join(f"{a['name']} ×{a['num']:,} {fmt_us(a['total_us'])}" for a in launch["runtime_calls"][:4])
    linked = sum(att.values()) - att.get("none", 0)
    return [
        f"launching op found for {linked:,} of {sum(att.values()):,} GPU events "
        f"({att.get('correlation', 0):,} by their launch call's External id, "
        f"{att.get('time', 0):,} by the op around the launch call on its thread, "
        f"{att.get('external_id', 0):,} by their own External id"
        + (f", {att['graph']:,} by the op of a CUDA graph's capture" if att.get("graph") else "")
        + ")",
        f"runtime calls: {fmt_us(launch['runtime_total_us'])} in all; {apis}",
        f"launch → kernel start: median {fmt_us(d['p50_us'])}, p95 {fmt_us(d['p95_us'])}, max {fmt_us(d['max_us'])}; "
        f"{launch['num_shorter_than_launch']:,} GPU events ran shorter than their launch call",
    ]


def graph_lines(g: dict[str, Any] | None) -> list[str]:
    """The CUDA graph replays: how many, what share of GPU time, how their events were matched to the capture."""
    if not g:
        return []
    methods = ", ".join(f"{m} {n:,}" for m, n in g["methods"].items())
    cap = g["capture"]
    src = "this trace" if cap["source"] == "this trace" else cap["source"]
    kind = f"{cap['num_captures']:,} capture(s) of {cap['kind']} in {src}" if cap["kind"] else f"no capture in {src}"
    out = [
        f"CUDA graphs: {g['launches']:,} graph launch(es) replayed {g['replayed_events']:,} GPU events "
        f"({fmt_us(g['replayed_time_us'])}, {g['replayed_share_pct']:.1f}% of GPU time); "
        f"{g['matched_events']:,} matched to the op of the capture ({fmt_us(g['matched_time_us'])}), "
        f"{g['unmatched_events']:,} linked to their launch alone",
        f"   matched against {kind}; replays ordered by {g['order']}; launches by method: {methods}",
    ]
    for op in g["ops"][:5]:
        out.append(
            f"   {op['op']}: {op['num_events']:,} replayed events, {fmt_us(op['time_us'])} ({op['share_pct']:.1f}%)"
        )
    for u in g["notes"][:3]:
        out.append(f"   launch at {u['launch_ts']:,.0f}: {u['why']}")
    return out


STEP_COLUMNS = ("#", "kind", "GPU", "attention", "rest", "unattr.", "attn %", "Sk", "TB/s", "%spec")


def step_cells(steps: list[tuple[int, dict[str, Any]]]) -> list[list[str]]:
    """One row of STEP_COLUMNS per (position, step) (the terminal's table and the page's)."""
    out = []
    for pos, st in steps:
        sk = sorted({c["seq_kv"] for c in st.get("attention_calls") or [] if c.get("seq_kv") is not None})
        kv = ",".join(map(str, sk)) or (
            ",".join(map(str, st["kv_annotated"])) + " (named)" if st.get("kv_annotated") else "—"
        )
        rf = st.get("roofline") or {}
        pct = rf.get("pct_bandwidth_spec")
        share = st.get("attention_share_pct")
        out.append(
            [
                str(pos),
                st["kind"],
                fmt_us(st["gpu_time_us"]),
                fmt_us(st["attention_us"]),
                fmt_us(st["rest_us"]),
                fmt_us(st["unattributed_us"]),
                "—" if share is None else f"{share:.1f}%",
                kv,
                "—" if rf.get("tbps") is None else f"{rf['tbps']:.3f}",
                "—" if pct is None else f"{pct:.1f}%" + (" ⚠ impossible" if pct > 100 else ""),
            ]
        )
    return out


def render_steps(s: dict[str, Any] | None, console: Console, title: str, top: int = 10) -> None:
    """The steps read from step ranges: attention, the rest and the unattributed (they sum to the step's GPU time),
    and each step's roofline (TB/s on its attention time; % of the spec's bandwidth)."""
    if not s:
        return
    rows = list(enumerate(s["steps"], 1))
    shown = rows if len(rows) <= top else rows[: top - 1] + rows[-1:]
    make = partial(_folded_of, STEP_COLUMNS, f"{title}: {s['num_steps']:,} steps from {s['source']}")
    console.print(_grid(make, step_cells(shown), console))
    more = f" (the first {top - 1} and the last shown; names in the JSON)" if len(rows) > top else ""
    console.print(bullet(console, "  • ", steps_note(s, more)), highlight=False)


def families_note(s: dict[str, Any]) -> str | None:
    """Why the families' kernels and time exceed the category table's attention row, where they do: a family counts
    every GPU event its attention ops launched (cuDNN's backward memsets in the Llama trace), which the category
    table files under their own category."""
    fams = s.get("attention_families") or []
    row = next((c for c in s.get("categories") or [] if c["category"] == "attention"), None)
    n, t = sum(f["num_kernels"] for f in fams), sum(f["time_us"] for f in fams)
    if row is None or n <= row["num_kernels"]:
        return None
    return (
        f"the families count every GPU event launched inside their attention ops: {n:,}, {fmt_us(t)}, against the "
        f"category table's attention row ({row['num_kernels']:,}, {fmt_us(row['time_us'])}): the other "
        f"{n - row['num_kernels']:,} ran inside those ops and are counted there under their own category"
    )


def steps_note(s: dict[str, Any], more: str = "") -> str:
    """What the steps table shows and how its columns add up."""
    kinds = ", ".join(f"{k} {n:,}" for k, n in s["by_kind"].items())
    specs = sorted(
        {
            str(rf.get("spec_source"))
            for st in s["steps"]
            if (rf := st.get("roofline") or {}).get("pct_bandwidth_spec") is not None
        }
    )
    spec = f"; %spec: TB/s over the device's spec memory bandwidth ({'; '.join(specs)})" if specs else ""
    return (
        f"steps by kind: {kinds}{more}; GPU time launched outside any step: {fmt_us(s['outside_steps_us'])}; "
        "attention + rest + unattr. = the step's GPU time; TB/s: the attention calls' bytes (Q, K, V read, O "
        f"written) over the step's attention time{spec}"
    )


def _idle_lines(idle: dict[str, Any] | None) -> list[str]:
    if not idle:
        return []
    out = []
    for d in idle["devices"]:
        buckets = ", ".join(f"{k} {v:,}" for k, v in d["gaps_by_length"].items())
        out.append(
            f"GPU {d['device']}: busy {fmt_us(d['busy_us'])} of {fmt_us(d['span_us'])}, idle {d['idle_pct']:.1f}% "
            f"in {d['num_gaps']:,} gaps ({buckets})"
        )
        for g in d["largest_gaps"][:3]:
            out.append(f"   gap of {fmt_us(g['gap_us'])} at +{fmt_us(g['after_us'])} before {_short(g['next'], 70)}")
    return out


def _offender_lines(s: dict[str, Any], top: int) -> list[str]:
    out = []
    hc, up = s["hidden_copies"], s["upcasts"]
    if hc["num"]:
        out.append(
            f"hidden copies: {hc['num']:,}, {fmt_mib(hc['bytes'], grouped=True)}, {fmt_us(hc['time_us'])} on the GPU"
        )
        for c in hc["top"][:top]:
            out.append(
                f"   {c['count']:,}× {c['copy_op']} caused by {c['op']}: {fmt_mib(c['bytes'], grouped=True)}, "
                f"{fmt_us(c['time_us'])}" + (f" ({_short(c['device_event'], 70)})" if c.get("device_event") else "")
            )
    if up["num"]:
        out.append(
            f"fp32 upcasts: {up['num']:,}, {fmt_mib(up['bytes'], grouped=True)} written, {fmt_us(up['time_us'])}"
        )
        for u in up["top"][:top]:
            out.append(
                f"   {u['count']:,}× {u['src_dtype']} → {u['dst_dtype']} inside {u['op']}: "
                f"{fmt_mib(u['bytes'], grouped=True)}, {fmt_us(u['time_us'])}"
            )
    return out


def render_summary(r: dict[str, Any], console: Console, *, top: int = 10) -> None:
    s = r.get("trace_summary")
    if not s:
        return
    pos = s.get("rank_source") == "position on the command line"  # not a rank: the trace's place in the list
    name = r["variant"] + (f" ({'trace' if pos else 'rank'} {s['rank']})" if s.get("rank") is not None else "")
    console.print()
    console.print(
        Text.assemble(
            (name, "bold"),
            f": {s['num_gpu_events']:,} GPU events, {fmt_us(s['gpu_time_us'])} of GPU time, "
            f"{s['num_cpu_ops']:,} CPU ops, {s['num_events']:,} trace events",
            (f", {s['num_skipped_events']:,} malformed events skipped", "yellow") if s["num_skipped_events"] else "",
        )
    )
    # each table as rich draws it, its rows without rich laying out each cell (report/text/plain_table.py)
    v = r["variant"]
    cells = _category_cells(s["categories"])
    title: str | None = f"{v}: GPU time by category"
    if cell_len(str(title)) > Measurement.get(console, console.options, _categories_of(None, cells)).maximum:
        # wider than the table (a trace's long file name): a line of its own, as fit() prints a long title; rich
        # would wrap it to the table's width ("…_kineto" then ": GPU time by category" on a line of its own)
        console.print(Text(str(title), style="table.title"), highlight=False)
        title = None
    console.print(plain_table(partial(_categories_of, title), cells, console))
    if s["attention_families"]:
        make = partial(_folded_of, FAMILY_COLUMNS, f"{v}: attention")
        console.print(_grid(make, _family_cells(s["attention_families"]), console))
        note = families_note(s)
        if note:
            console.print(bullet(console, "  • ", note), highlight=False)
    make = partial(_folded_of, TOP_COLUMNS, f"{v}: top kernels and their launching ops")
    console.print(_grid(make, _top_cells(s["top_kernels"][:top]), console))
    render_steps(s.get("steps"), console, v, top)
    lines = _launch_lines(s["launch"], s["attribution"]) + graph_lines(s.get("cuda_graphs"))
    lines += collective_lines(s.get("cpu_collectives"))
    for line in lines + _idle_lines(s["idle"]) + _offender_lines(s, 5):
        console.print(_line_of(console, line), highlight=False)


SUB = "   "  # a line that opens so belongs to the bullet above it (a graph's capture, a gap, a copy's cause)


def _line_of(console: Console, line: str) -> Any:
    """A bullet, or a sub-line under the bullet above: its text indented two past the bullet's, wrapped under
    itself, with no bullet of its own."""
    if line.startswith(SUB):
        return bullet(console, "      ", line.lstrip(" "))
    return bullet(console, "  • ", line)


def _grid(make: Any, cells: list[list[str]], console: Console) -> Any:
    """A table of wide cells (kernel names, launching ops): drawn row by row where the terminal holds every
    column's longest word, else one block per row (never a name shredded into pieces of a few characters)."""
    table = make(cells)
    if words_fit(table, console, console.options):
        return plain_table(make, cells, console)
    return Blocks(table)


def _comm_cell(p: dict[str, Any]) -> str:
    """The communication kernels' share of GPU time, and beside it a host backend's collectives in flight."""
    cell = f"{p['communication_share_pct']:.1f}%"
    c = p.get("cpu_collectives")
    if c and c.get("in_flight_pct") is not None:
        cell += f" GPU; {c['backend']} on CPU {c['in_flight_pct']:.1f}%"
    return cell


def collective_lines(c: dict[str, Any] | None) -> list[str]:
    """What a trace's host collectives (gloo) did: each op, their time in flight, the device copies that staged
    them (analysis/fingerprint/collectives.py)."""
    if not c:
        return []
    ops = ", ".join(f"{o['count']:,} {o['op']} ({fmt_us(o['host_us'])})" for o in c["ops"])
    span = (
        f", {c['in_flight_pct']:.1f}% of the host span {fmt_us(c['host_span_us'])}"
        if c.get("in_flight_pct") is not None
        else ""
    )
    d = c["device_copies"]
    copies = ", ".join(f"{x['count']:,}× {x['name']}" for x in d["by_name"]) or "none"
    share = f", {d['memcpy_share_pct']:.1f}% of the memcpy time" if d.get("memcpy_share_pct") is not None else ""
    return [
        f"collectives: {c['backend']} runs them on the CPU ({c['num']:,} on {c['threads']} worker thread(s), backend "
        f"from {c['backend_source']}): {ops}; in flight {fmt_us(c['in_flight_us'])}{span}; timing: {c['timing']}",
        f"   no communication kernel on the device: the copies that stage them through host memory are counted as "
        f"memcpy: {copies}, {fmt_us(d['time_us'])}{share}",
    ]


def render_overall(o: dict[str, Any], console: Console) -> None:
    ranks = o.get("ranks_known", True)
    unit = "rank" if ranks else "trace"
    title = (
        f"{o['num_ranks']} ranks"
        if ranks
        else f"{o['num_ranks']} traces (no rank in the traces or their names: numbered by their order)"
    )
    t = Table(title=title, header_style="bold")
    cols: tuple[str, ...] = (unit if ranks else "#", "trace", "GPU events", "GPU time", "busy", "idle")
    cols += ("attention", "comm.", "hidden copy", "upcasts")
    for col in cols:
        t.add_column(col, justify="left" if col == "trace" else "right")
    for p in o["per_rank"]:
        t.add_row(
            str(p["rank"]),
            p["variant"],
            f"{p['num_gpu_events']:,}",
            fmt_us(p["gpu_time_us"]),
            fmt_us(p["busy_us"]),
            f"{p['idle_pct']:.1f}%" if p.get("idle_pct") is not None else "—",
            f"{p['attention_share_pct']:.1f}%",
            _comm_cell(p),
            fmt_mib(p["hidden_copy_bytes"], grouped=True),
            f"{p['num_upcasts']:,}",
        )
    console.print()
    console.print(fit(t))
    console.print(categories_table(o["categories"], f"all {unit}s: GPU time by category"))
    b = o.get("busy_us")
    if b:
        console.print(
            bullet(
                console,
                "  • ",
                f"GPU busy time per {unit}: {fmt_us(b['min'])} ({unit} {b['min_rank']}) to {fmt_us(b['max'])} "
                f"({unit} {b['max_rank']}), spread {b['spread_pct']:.1f}% of the mean"
                + ("" if ranks else " (a load imbalance only if these are ranks of one job)"),
            ),
            highlight=False,
        )
    hosts = sorted({c["backend"] for p in o["per_rank"] if (c := p.get("cpu_collectives"))})
    if hosts:
        console.print(
            bullet(
                console,
                "  • ",
                f"comm.: communication kernels' share of GPU time; {', '.join(hosts)} runs its collectives on the "
                "CPU (no kernel: the copies that stage them are in memcpy), so beside it: the share of the host span "
                "with a collective in flight (the union of its gloo:<op> ranges, host wall time)",
            ),
            highlight=False,
        )
