"""Terminal tables (rich).  Reads the JSON-shaped result dicts, so `run` and `analyze` share it."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from attnscope.core.units import fmt_bytes, fmt_mib_cell, fmt_us
from attnscope.report.text.explain import render_explanations
from attnscope.report.text.notes import case_lines, peak_lines
from attnscope.report.text.terminal import words_fit


def _fmt_us(t: dict[str, Any] | None) -> Text:
    if not t:
        return Text("—", style="dim")
    s = fmt_us(t["median_us"], unit=False)
    if t.get("noisy"):
        return Text(s + " ~", style="yellow")
    return Text(s)


def _occ(r: dict[str, Any]) -> str:
    k = r.get("main_kernel")  # stored by annotate
    if not k or k.get("theoretical_occupancy_pct") is None:
        return "—"
    lim = (k.get("occupancy_limiter") or "").replace("registers", "regs").replace("shared_memory", "smem")
    return f"{k['theoretical_occupancy_pct']:.1f}% {lim}"


def _yn(v: Any, yes: str = "yes", no: str = "no") -> Text:
    if v is None:
        return Text("?", style="dim")
    return Text(yes, style="bold") if v else Text(no)


def _tc_yes(r: dict[str, Any]) -> str:
    """'TF32' when the tensor-core work of the row is TF32 (fp32 inputs), else 'yes'."""
    tf32 = False
    for k in r.get("kernels") or []:  # stops at the first tensor-core kernel of another precision
        if k.get("tensor_cores"):
            if k.get("tensor_core_precision") != "TF32":
                return "yes"
            tf32 = True
    return "TF32" if tf32 else "yes"


def _err(r: dict[str, Any]) -> Text:
    if r.get("nonfinite"):
        return Text("NaN/Inf ✗", style="bold red")
    e = r.get("max_rel_error")
    if e is None:
        return Text("—", style="dim")
    ok = r.get("numerics_ok")
    return Text(f"{e:.1e} {'✓' if ok else '✗'}", style="" if ok else "bold red")


def _size(n: int) -> str:
    return fmt_bytes(n)


def _pct(pct: float | None) -> Text:
    if pct is None:
        return Text("—", style="dim")
    if pct > 100.0:  # impossible against a peak measured on the same device: never shown plain
        return Text(f"{pct:.1f} !", style="bold red")
    return Text(f"{pct:.1f}")


def _energy(r: dict[str, Any]) -> float | None:
    """Joules per call from NVML during the timed replays (``device_state``); None where not measured."""
    st = r.get("device_state")
    e = st.get("energy_j_per_call") if isinstance(st, dict) else None
    return float(e) if isinstance(e, int | float) and not isinstance(e, bool) else None


def _status(r: dict[str, Any]) -> Text:
    st = r["status"]
    style = {"ok": "green", "skipped": "yellow", "oom": "red", "error": "bold red"}.get(st, "")
    return Text(st, style=style)


# Columns left out, in this order, while the table is wider than the terminal: what the study teaches last goes
# first; its first findings (hidden copies, fp32 upcasts) and the time stay longest.  The time column (GPU µs on a
# GPU, CPU µs on a CPU) is never left out; a GPU table's CPU µs (host time per call) goes before the findings.
DROP_ORDER = (
    "mJ/call", "memcpy/set", "occupancy", "TC", "%peak", "TFLOP/s", "mem MiB", "error", "ops", "kernels", "CPU µs",
    "upcast", "hidden copy",
)  # fmt: skip
LESSONS = ("upcast", "hidden copy")  # kept while the table fits with its headers wrapped at word boundaries
NARROW = 120  # below this many columns, the default study is brief: --verbose prints the rest


def results_table(doc: dict[str, Any], title: str | None = None, drop: tuple[str, ...] = ()) -> Table:
    """The results, one row per variant; ``drop``: headers of columns left out (to fit a terminal)."""
    results = doc["results"]
    cpu_only = all((r.get("device_kind") or "cpu") == "cpu" for r in results if r["status"] == "ok")
    t = Table(title=title, header_style="bold", show_lines=False)
    # (header, justify, gpu-only): GPU-only columns are left out of an all-CPU table.
    columns = [
        ("variant", "left", False),
        ("status", "left", False),
        ("ops" if cpu_only else "kernels", "right", False),
        ("memcpy/set", "right", True),
        ("hidden copy", "left", False),
        ("upcast", "left", False),
        ("TC", "left", True),
        ("occupancy", "left", True),
        ("CPU µs", "right", False),
        ("GPU µs", "right", True),
        ("TFLOP/s", "right", False),
        ("%peak", "right", False),
        ("mJ/call", "right", True),
        ("mem MiB", "right", False),
        ("error", "left", False),
    ]
    energy = any(_energy(r) is not None for r in results)  # NVML measured: a GPU with nvidia-ml-py
    keep = [
        not (gpu_only and cpu_only) and name not in drop and (energy or name != "mJ/call")
        for name, _, gpu_only in columns
    ]
    for (name, justify, _), k in zip(columns, keep, strict=True):
        if k:
            t.add_column(name, justify=justify, no_wrap=name == "variant")  # type: ignore[arg-type]
    for r in results:
        if r["status"] != "ok":
            cells: list[Any] = [r["variant"], _status(r), *(["—"] * 13)]
        else:
            copies = r.get("hidden_copies") or []
            cells = [
                r["variant"],
                _status(r),
                f"{r['num_kernels']:,}",
                f"{r['num_memcpy']:,}/{r['num_memset']:,}",
                _yn(bool(copies), _size(sum(c["bytes"] for c in copies))),
                _yn(r.get("upcast_fp32"), f"yes ×{len(r.get('upcasts') or [])}"),
                _yn(r.get("tensor_cores"), _tc_yes(r)),
                _occ(r),
                _fmt_us(r.get("cpu_time")),
                _fmt_us(r.get("gpu_time")),
                f"{r['tflops']:.2f}" if r.get("tflops") is not None else "—",
                _pct((r.get("peak_basis") or {}).get("pct", r.get("pct_of_peak"))),
                f"{_energy(r) * 1e3:,.3f}" if _energy(r) is not None else "—",  # type: ignore[operator]
                fmt_mib_cell(r["peak_memory_bytes"]) if r.get("peak_memory_bytes") is not None else "—",
                _err(r),
            ]
        t.add_row(*(c for c, k in zip(cells, keep, strict=True) if k))
    return t


HOST_SIDE = ("context manager",)  # notes about host-side costs kept out of the timings: --verbose
LOST_NOTE = " malformed trace events skipped"  # a trace's events not read (analysis/fingerprint/build.py): never brief
# a GPU trace in which nothing was recorded on the GPU (analysis/fingerprint/build.py): every figure is the host's
NOTHING_ON_GPU = "every figure here is the host's"


def fitted_table(doc: dict[str, Any], title: str | None, console: Console) -> tuple[Table, list[str]]:
    """The results table with the fewest low-value columns left out (DROP_ORDER) for it to fit the terminal."""
    from rich.measure import Measurement

    wide = console.options.update(width=1 << 16, max_width=1 << 16)
    full = results_table(doc, title)
    heads = {str(c.header) for c in full.columns}
    time = "GPU µs" if "GPU µs" in heads else "CPU µs"
    order = [c for c in DROP_ORDER if c in heads and c != time]  # step k leaves out order[:k]
    tables = {0: full}

    def table(k: int) -> Table:
        if k not in tables:
            tables[k] = results_table(doc, title, tuple(order[:k]))
        return tables[k]

    fitting: dict[int, bool] = {}

    def fits(k: int) -> bool:
        if k not in fitting:
            fitting[k] = Measurement.get(console, wide, table(k)).maximum <= console.width
        return fitting[k]

    # Before the first of LESSONS, step k ends only where the table fits; a table's widest layout is the sum of its
    # columns' own widths and edges, so it narrows with every column left out: the first step that fits is found
    # by bisection (4 tables measured on an 80-column terminal instead of 9), after one look at the whole table.
    lessons = next((k for k, c in enumerate(order) if c in LESSONS), len(order))
    k = 0
    if lessons > 0 and not fits(0):
        lo, hi = 1, lessons
        while lo < hi:
            mid = (lo + hi) // 2
            if fits(mid):
                hi = mid
            else:
                lo = mid + 1
        k = lo
    while k < len(order) and not fits(k):  # from the first lesson: one column at a time, as they were dropped
        if order[k] in LESSONS and words_fit(table(k), console, console.options):  # the findings stay, headers wrapped
            break
        k += 1
    return table(k), order[:k]


def footnotes(
    doc: dict[str, Any], verbose: bool = True, brief: bool = False, shown: frozenset[str] | None = None
) -> list[str]:
    """The lines under the table; ``brief`` (a narrow terminal, no --verbose): skipped rows said in one line and
    the variants' own notes left to --verbose; ``shown``: the table's columns (None: every one), so that a line
    explains only a column the reader sees."""

    def has(*cols: str) -> bool:
        return shown is None or any(c in shown for c in cols)

    lines: list[str] = []
    failed = [r for r in doc["results"] if r["status"] != "ok"]
    if brief and len(failed) > 1:
        by: dict[str, list[str]] = {}
        for r in failed:
            by.setdefault(r["status"], []).append(r["variant"])
        said = "; ".join(f"{k}: {', '.join(v)}" for k, v in by.items())
        lines.append(f"{said} (--verbose says why)")
    else:
        lines += [f"{r['variant']} {r['status']}: {r.get('reason')}" for r in failed]
    for r in doc["results"]:
        # Hidden copies, upcasts, masks and SDPA's choice are told by the insights, with evidence.
        if r.get("compile_time_s") is not None:
            lines.append(f"{r['variant']}: compile time {r['compile_time_s']:.1f} s (outside the timings)")
        notes = [*(r.get("notes") or []), *(r.get("run_notes") or [])]
        # events lost, or a GPU trace with nothing of the GPU: always said
        for n in notes if not brief else [n for n in notes if n.endswith((LOST_NOTE, NOTHING_ON_GPU))]:
            if verbose or not any(h in n for h in HOST_SIDE):
                lines.append(f"{r['variant']}: {n}")
    lines += case_lines(doc)
    ok = [r for r in doc["results"] if r["status"] == "ok"]
    if has("TFLOP/s", "%peak"):  # the FLOP count is what those columns divide by
        lines += flop_lines(ok)
    if has("%peak"):
        lines += peak_lines(doc, ok)
    lines += device_state_lines(ok)
    if any(r.get("source") == "run" for r in ok):
        lines.append("timings: medians; '~' marks a noisy timing (IQR/median > 10%)")
    if not brief:  # how the host and the device were timed, and the counters: --verbose on a narrow terminal
        lines += _graph_lines(ok) if has("GPU µs") else []
        lines += host_lines(ok) if has("CPU µs") else []
        lines += ncu_lines(ok)
    if any(r.get("source") == "trace" for r in ok):
        parts = [
            *(["GPU µs is the sum of its GPU events"] if has("GPU µs") else []),
            *(["CPU µs is the host span of the traced region (one sample, profiler overhead included)"]
              if has("CPU µs") else []),
            *(["error needs a run"] if has("error") else []),
            *(["FLOPs and TFLOP/s come from the attention ops' recorded shapes where the trace has them "
               "(attention_calls in the JSON), over the GPU time launched inside those ops"]
              if has("TFLOP/s", "%peak") else []),
        ]  # fmt: skip
        if parts:
            lines.append("from a trace: " + "; ".join(parts))
    cpu_rows = [r for r in ok if r.get("device_kind") == "cpu"]
    if cpu_rows:
        traced = [r.get("source") == "trace" for r in cpu_rows]  # a trace may be a GPU job's, its kernels unrecorded
        why = "; ".join(
            w
            for w, on in (
                ("no device kernels exist", not all(traced)),
                ("a trace without GPU events holds no device kernel", any(traced)),
            )
            if on
        )
        parts = [
            *([f"'ops' counts leaf compute aten ops ({why})"] if has("ops") else []),
            *(["CPU µs is wall time per call"] if any(r.get("source") == "run" for r in cpu_rows) else []),
        ]
        if parts:
            lines.append("on CPU " + "; ".join(parts))
    return lines


def flop_lines(ok: list[dict[str, Any]]) -> list[str]:
    """The FLOP count under TFLOP/s and %peak: each formula once, with the count of every row it gives."""
    lines = []
    counted = [r for r in ok if r.get("flops")]
    by_formula: dict[Any, dict[int, list[str]]] = {}
    for r in counted:
        by_formula.setdefault(r.get("flop_formula"), {}).setdefault(r["flops"], []).append(r["variant"])
    for formula, counts in by_formula.items():
        if len(by_formula) == 1 and len(counts) == 1 and len(counted) == len(ok):
            lines.append(f"FLOPs: {formula} = {next(iter(counts)):,}")  # one count for every row
        elif len(counts) == 1:
            ((flops, names),) = counts.items()
            lines.append(f"FLOPs ({', '.join(names)}): {formula} = {flops:,}")
        else:
            each = "; ".join(f"{', '.join(names)} {flops:,}" for flops, names in counts.items())
            lines.append(f"FLOPs: {formula} = {each}")
    for r in ok:  # a trace whose attention calls could not be counted: which field it lacked, and why
        if not r.get("flops") and r.get("flops_unknown"):
            lines.append(f"FLOPs ({r['variant']}): not known, {r['flops_unknown']}")
    return lines


def _graph_lines(ok: list[dict[str, Any]]) -> list[str]:
    """Which time the GPU µs column is, and the device time by CUDA-graph replay beside it."""
    rows = [
        r
        for r in ok
        if r.get("source") == "run" and (r.get("gpu_time_graph") is not None or r.get("gpu_time_graph_why"))
    ]
    if not rows:
        return []
    out = ["GPU µs is stream time per call (CUDA events around each call); device time per call by CUDA-graph replay:"]
    for r in rows:
        la = r.get("launch")
        if la:
            gap = (
                f"launch/gap overhead {la['launch_gap_us']:,.1f} µs ({la['launch_gap_pct']:.1f}%)"
                if la["launch_gap_us"] >= 0
                else "graph replay slower than the stream: no launch overhead"
            )
            out.append(f"  {r['variant']}: device {la['device_us']:,.1f} µs, stream {la['stream_us']:,.1f} µs, {gap}")
        else:
            out.append(f"  {r['variant']}: {r.get('gpu_time_graph_why') or 'no graph timing'}")
        cold = graph_figure_line(r)
        if cold:
            out.append(f"    {cold}")
    return out


def device_state_lines(ok: list[dict[str, Any]]) -> list[str]:
    """Energy per call (per token at decode), the SM clock, power and temperature of each GPU row, its % of
    the compute peak at the sampled clock, and the flags (throttled, over 100%); one line for CPU rows."""
    out: list[str] = []
    cpu = [r for r in ok if r.get("source") == "run" and r.get("device_kind") == "cpu" and r.get("device_state")]
    if cpu:
        out.append(f"energy and clocks: null on this CPU ({cpu[0]['device_state'].get('why')})")
    for r in ok:
        st = r.get("device_state")
        if r.get("device_kind") == "cpu" or not isinstance(st, dict):
            continue
        if not st.get("num_samples"):
            out.append(f"{r['variant']}: energy and clocks not measured ({st.get('why')})")
            continue
        bits = []
        e = st.get("energy_j_per_call")
        if e is not None:
            tok = st.get("energy_j_per_token")
            bits.append(
                f"{e * 1e3:,.3f} mJ per call" + (f" ({tok * 1e3:,.3f} mJ per token)" if tok is not None else "")
            )
        sm = st.get("sm_clock_mhz") or {}
        if sm:
            bits.append(f"SM {sm['median']:,.0f} MHz (min {sm['min']:,.0f}, max {sm['max']:,.0f})")
        for key, unit in (("power_w", "W"), ("temp_c", "°C")):
            v = st.get(key) or {}
            if v:
                bits.append(f"{v['median']:,.0f} {unit}")
        pct = st.get("pct_of_peak_at_clock")
        if pct is not None:
            mark = " ⚠ >100%: inconsistent" if st.get("over_100") else ""
            bits.append(f"{pct:.1f}% of the peak at that clock ({st.get('peak_formula')}){mark}")
        out.append(f"{r['variant']}: " + ", ".join(bits) + f" [{st.get('num_samples')} NVML samples]")
        for flag in st.get("flags") or []:
            out.append(f"  {r['variant']} ⚠ {flag}")
    return out


def graph_figure_line(r: dict[str, Any]) -> str | None:
    """Which graph figure a row's rates carry (``timing.graph_used``) and the other beside it."""
    t = r.get("timing")
    if not isinstance(t, dict):
        return None
    warm, cold = t.get("graph_warm") or {}, t.get("graph_cold") or {}
    if t.get("graph_used") == "cold" and cold.get("median_us") and warm.get("median_us"):
        return (
            f"graph figure used: cold L2 {cold['median_us']:,.1f} µs ({t.get('rotation')}); warm L2 (the same "
            f"inputs every call) {warm['median_us']:,.1f} µs, cold/warm {cold['median_us'] / warm['median_us']:.2f}"
        )
    return f"graph figure used: warm ({t.get('rotation')})" if t.get("rotation") else None


def host_lines(ok: list[dict[str, Any]]) -> list[str]:
    """Which time the CPU µs column is on a GPU, and the rows timed one call per sample instead."""
    rows = [r for r in ok if r.get("source") == "run" and r.get("device_kind") == "gpu" and r.get("cpu_time")]
    if not rows:
        return []
    out = [
        "CPU µs is host time per call: samples of ~1 ms of back-to-back calls, the device drained before each by "
        "spinning on an event, one core pinned, gc off (measure.time_host_cuda)"
    ]
    single = [r["variant"] for r in rows if "batches" not in (r["cpu_time"].get("method") or "")]
    if single:
        out.append(
            f"  one call per sample after a drained device for {', '.join(single)}: back-to-back, each call waited "
            "for the ones before it (a synchronize or pageable copy inside the call; cpu_time.method in the JSON)"
        )
    return out


def ncu_lines(ok: list[dict[str, Any]]) -> list[str]:
    """What --ncu measured and how, where the counters overrode the name table, and rows ncu did not cover."""
    asked = [r for r in ok if r.get("ncu")]
    if not asked:
        return []
    out = []
    if any(r["ncu"].get("status") == "ok" for r in asked):
        out.append(
            "Nsight Compute (--ncu): each variant's call once more under ncu, clocks as found and caches flushed "
            "before each kernel's replay, so its µs is not the run's timing; TC of the profiled kernels from "
            "their counters (matrix MMA = HMMA − HFMA2.MMA, wgmma included), not from the name table"
        )
    missing: dict[str, list[str]] = {}  # one line per reason, with every variant it applies to
    for r in asked:
        if r["ncu"].get("status") != "ok":
            missing.setdefault(str(r["ncu"].get("reason")), []).append(r["variant"])
    out += [f"{', '.join(vs)}: no Nsight Compute data: {why}" for why, vs in missing.items()]
    for r in asked:
        deep = r["ncu"]
        for d in deep.get("name_table_disagrees") or []:
            said = {True: "tensor cores", False: "no tensor cores", None: "unknown"}
            out.append(
                f"{r['variant']}: {_short(d['kernel'])}: the name table said {said[d['name_table']]}, "
                f"the counters {said[d['counters']]} ({d.get('why')})"
            )
    return out


def _short(name: str, n: int = 48) -> str:
    name = name.removeprefix("void ")
    return name if len(name) <= n else name[: n - 1] + "…"


def _num(v: Any, fmt: str) -> str:
    return fmt.format(v) if v is not None else ""


NCU_TOP = 3  # kernels per variant in the terminal table (the longest under ncu); the JSON holds every one


def _pair(a: Any, b: Any, fmt: str) -> str:
    return f"{_num(a, fmt)}/{_num(b, fmt)}" if a is not None or b is not None else ""


def ncu_table(doc: dict[str, Any]) -> Table | None:
    """Nsight Compute's reading of each variant's main kernels (run --ncu); None without any."""
    rows = []
    for r in doc["results"]:
        deep = r.get("ncu") or {}
        if deep.get("status") != "ok":
            continue
        ks = sorted(deep.get("kernels") or [], key=lambda d: -(d.get("duration_ns") or 0))
        rows += [(r, d, i == 0, len(ks)) for i, d in enumerate(ks[:NCU_TOP])]
    if not rows:
        return None
    t = Table(
        title=f"Nsight Compute (--ncu): each variant's {NCU_TOP} longest kernels under ncu (every one in the JSON)",
        header_style="bold",
    )
    heads = ("variant", "kernel", "TC", "occ. % ach./theor.", "SM/mem %", "tensor pipe %", "DRAM MB R/W",
             "L2 hit %", "top stall", "ncu µs")  # fmt: skip
    for col in heads:
        t.add_column(
            col, no_wrap=col in ("kernel", "variant"), overflow="ellipsis", max_width=34 if col == "kernel" else None
        )
    for r, d, first, total in rows:
        stall = (d.get("top_stalls") or [{}])[0]
        rd, wr = d.get("dram_read_bytes"), d.get("dram_write_bytes")
        name = r["variant"] + (f" ({total})" if first and total > NCU_TOP else "")
        t.add_row(
            name if first else "",
            _short(d.get("name") or "", 34),
            "TF32"
            if d.get("tensor_cores") and "TF32" in (d.get("tensor_cores_why") or "")
            else {True: "yes", False: "no", None: "?"}[d.get("tensor_cores")],
            _pair(d.get("achieved_occupancy_pct"), d.get("theoretical_occupancy_pct"), "{:.1f}"),
            _pair(d.get("sm_throughput_pct"), d.get("memory_throughput_pct"), "{:.0f}"),
            _num(d.get("tensor_pipe_pct"), "{:.1f}"),
            _pair(rd and rd / 1e6, wr and wr / 1e6, "{:,.1f}"),
            _num(d.get("l2_hit_rate_pct"), "{:.1f}"),
            f"{stall['reason']} {stall['warps_per_issue']:.2f}" if stall.get("reason") else "",
            _num(d.get("duration_ns") and d["duration_ns"] / 1e3, "{:,.1f}"),
        )
    return t


def render(
    doc: dict[str, Any], console: Console, *, kernels: bool = False, title: str | None = None, verbose: bool = False
) -> None:
    from attnscope.report.text.notes import reading_lines
    from attnscope.report.text.terminal import bullet

    table, dropped = fitted_table(doc, title, console)
    console.print(table)
    deep = ncu_table(doc)
    if deep is not None:
        console.print(deep)
    brief = not verbose and console.width < NARROW
    if dropped:
        gone = ", ".join(dropped)
        console.print(
            bullet(console, "  ", f"({console.width} columns: {gone} left out; a wider terminal or --json has them)"),
            highlight=False,
        )
    shown = frozenset(str(c.header) for c in table.columns)
    for line in footnotes(doc, verbose, brief, shown) + ([] if brief else reading_lines(doc)):
        console.print(bullet(console, "  • ", line), highlight=False)
    render_explanations(doc, console, verbose=verbose, brief=brief)
    if kernels:
        from attnscope.report.text.kernels import print_kernels

        print_kernels(doc, console)
