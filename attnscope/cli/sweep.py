"""``attnscope sweep``: arguments, every check before any work, the progress bar, the closing summary.

The measuring is ``attnscope.execute.sweep`` (grid, plan, run_sweep) over an executor; rows go to an
append-only JSONL file as they come, so an interrupted sweep resumes where it stopped.
"""

from __future__ import annotations

import argparse
import importlib.util
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnscope.cli import stop
from attnscope.cli.flags import add_flags, check_output_dir, check_output_file, positive_int, seconds, timeout_seconds
from attnscope.cli.run import EXIT_WRITE, _check_html, add_assets_arg, say_unwritten, traces_not_kept
from attnscope.core.arguments import UsageError, check_timeout
from attnscope.core.case import AXIS_FIELDS
from attnscope.core.files import WriteError, check_fresh_store, check_outputs, check_trace_names
from attnscope.execute.executors import EXECUTORS

DEFAULT_OUT = "sweep.jsonl"
DEFAULT_TIMEOUT_S = 600.0
DEFAULT_BUDGET_S = 0.2
# What a sweep measures when an axis is not given (the table's sweep defaults): the GPU grid is the study's
# (~24 cases, B·S kept at 16384 tokens), the CPU grid stays small enough for 2 cores.
GPU_DEFAULTS: dict[str, Any] = {f.dest: f.sweep_default["cuda"] for f in AXIS_FIELDS if "cuda" in f.sweep_default}
GPU_DEFAULTS["budget_tokens"] = 16384
CPU_DEFAULTS: dict[str, Any] = {f.dest: f.sweep_default["cpu"] for f in AXIS_FIELDS if "cpu" in f.sweep_default}


def add_parser(sub: Any, help_text: str) -> None:
    """The full parser of the command; its help line is the top-level one (cli.LAZY_COMMANDS)."""
    s = sub.add_parser("sweep", help=help_text)
    g = s.add_argument_group("grid (each axis a comma list or a range: 512..16384x2, 64..256+64)")
    add_flags(g, "sweep", [f.name for f in AXIS_FIELDS])  # from the table of the case's fields
    s.add_argument("--variants", help="comma list, or 'all' (default: the device's default set)")
    w = s.add_argument_group("where jobs run")
    add_flags(w, "sweep", ["device"])
    w.add_argument("--devices", help="cuda:0,cuda:1 or all: one worker per GPU (process or ray executor)")
    w.add_argument(
        "--executor", choices=EXECUTORS, default="process", help="process (default: a worker per device), inline, ray"
    )
    w.add_argument(
        "--ray-address",
        help="join this running Ray cluster (host:port, ray://host:port or auto), after it answers within "
        "10 s (default: a local Ray started for the sweep, listening on 127.0.0.1 only; RAY_ADDRESS in the "
        "environment is ignored)",
    )
    w.add_argument("--workers", type=positive_int("workers", 1024), help="workers when no GPUs are named (default 1)")
    w.add_argument(
        "--timeout",
        type=timeout_seconds,
        help=f"seconds per job before its worker is stopped: a `timeout` row (default {DEFAULT_TIMEOUT_S:g})",
    )
    o = s.add_argument_group("output")
    o.add_argument("--out", default=DEFAULT_OUT, help=f"the JSONL file, one row per job (default {DEFAULT_OUT})")
    o.add_argument("--resume", action="store_true", help="measure only the jobs --out does not hold yet")
    o.add_argument(
        "--force",
        action="store_true",
        help="with --resume: resume although the settings recorded in <out>.settings.json differ",
    )
    o.add_argument("--json", metavar="PATH", help="write the recommendation as JSON here")
    o.add_argument(
        "--html", metavar="PATH", help="also write a self-contained HTML report of every row in --out here (at the end)"
    )
    add_assets_arg(o)
    o.add_argument("--trace-dir", help="keep one Perfetto-loadable trace per job here")
    o.add_argument("--quiet", action="store_true", help="no progress bar")
    m = s.add_argument_group("measurement")
    m.add_argument(
        "--budget",
        type=seconds("budget"),
        default=DEFAULT_BUDGET_S,
        help=f"seconds per timer per job (default {DEFAULT_BUDGET_S:g})",
    )
    m.add_argument("--no-peak", action="store_true", help="skip the matmul peak measurement (no %% peak)")
    m.add_argument("--flush-l2", action="store_true", help="flush L2 between timed GPU calls")
    s.set_defaults(func=cmd_sweep)


@dataclass
class Plan:
    jobs: list[Any]
    num_cases: int
    num_variants: int
    num_done: int
    num_torn: int
    executor: Any
    workers: str
    settings: dict[str, Any] | None = None  # to record in <out>.settings.json (None: keep the file as it is)
    left_out: str | None = None  # the line saying which default variants cannot run on this device
    notes: tuple[str, ...] = ()  # lines said once under the header (where Ray runs)


def _device(args: argparse.Namespace) -> tuple[str, list[str] | None]:
    """(the cases' device, the GPUs to pin one worker each to)."""
    from attnscope.execute.executors import parse_devices
    from attnscope.measure.env import check_device

    if args.devices is not None and args.device is not None:
        raise UsageError("give --device (one) or --devices (one worker each), not both")
    if args.devices is None:
        device = check_device(args.device)
        if device is None:
            from attnscope.measure.env import default_device

            device = default_device()
        if args.executor == "ray" and device.startswith("cuda"):
            if device != "cuda":
                raise UsageError(f"--device {args.device}: Ray picks each actor's GPU; give --device cuda or --devices")
            return "cuda", ["0"]  # one actor asking Ray for one GPU
        return device, None
    devices = parse_devices(args.devices)
    if devices is None:
        return "cpu", None
    if not (args.executor == "ray" and args.ray_address):  # a cluster's GPUs are not ours to count
        import torch

        n = torch.cuda.device_count()
        over = [d for d in devices if int(d) >= n]
        if over:
            raise UsageError(f"--devices {args.devices}: {n} CUDA device(s) here; cuda:{over[0]} is not one")
    return "cuda", devices


def _axes(args: argparse.Namespace, device: str) -> Any:
    from attnscope.core.cases import axes_from

    defaults = GPU_DEFAULTS if device.startswith("cuda") else CPU_DEFAULTS
    ns = argparse.Namespace(**vars(args))
    given = {k for k, v in vars(args).items() if v is not None}
    for k, v in defaults.items():
        # batch and --budget-tokens are two ways to one axis: a default never joins the one given
        # and a --mask replaces the causal axis
        if (
            k not in given
            and not ({k, *given} >= {"batch", "budget_tokens"})
            and not (k == "causal" and args.mask is not None)
        ):
            setattr(ns, k, v)
    return axes_from(ns)


def check(args: argparse.Namespace) -> Plan:
    """Everything that can be wrong before a worker starts; the jobs still to measure."""
    from attnscope.core.arguments import variant_names
    from attnscope.core.cases import MAX_JOBS, grid
    from attnscope.execute.executors import make_executor
    from attnscope.execute.job import Options
    from attnscope.execute.store import Store
    from attnscope.execute.sweep import default_variants, left_out_line, plan
    from attnscope.variants import resolve

    if args.ray_address and args.executor != "ray":
        raise UsageError("--ray-address is for --executor ray")
    check_timeout(args.executor, args.timeout)
    if getattr(args, "force", False) and not args.resume:
        raise UsageError("--force is for --resume (it resumes although the recorded settings differ)")
    if args.executor == "ray" and importlib.util.find_spec("ray") is None:
        raise UsageError("--executor ray needs Ray: pip install -e '.[ray]' in the attnscope clone")
    notes = _ray_notes(args)
    if args.variants is not None:
        names = variant_names(args.variants)
        if "all" in names and len(names) > 1:
            raise UsageError("--variants: 'all' stands alone")
    device, devices = _device(args)
    if devices and args.workers:
        raise UsageError("--workers is for CPU workers; with --devices there is one worker per GPU")
    if args.executor == "inline" and ((devices and len(devices) > 1) or (args.workers or 1) > 1):
        raise UsageError("--executor inline runs one job at a time here: use process or ray for several workers")
    cases = grid(_axes(args, device), device)
    variants = [v.name for v in resolve(args.variants)]
    left_out = None
    if args.variants is None:  # the default set: only the built-ins that can run on this device
        variants, left = default_variants([device])
        left_out = left_out_line(left, device) if left else None
    if len(cases) * len(variants) > MAX_JOBS:
        raise UsageError(f"{len(cases)} cases × {len(variants)} variants is over {MAX_JOBS:,} jobs: narrow the grid")
    check_output_file(args.out, "--out")
    check_output_file(args.json, "--json")
    check_output_dir(args.trace_dir, "--trace-dir")
    _check_html(args)  # --html's path and plotly, --assets' folder: as run and analyze check them
    from attnscope.execute.sweep_settings import settings_path

    outs = [("--out", args.out), ("--out's settings", settings_path(args.out)), ("--json", args.json)]
    check_outputs([], [*outs, ("--html", args.html)])
    store = Store(args.out)
    done: set[tuple[str, str, str]] = set()
    if store.path.exists() and store.path.stat().st_size > 0:
        rows = store.rows()
        check_fresh_store(args.out, resume=args.resume, count=lambda: len(rows))
        if not rows and store.num_torn > 1:
            raise UsageError(f"--out {args.out}: not an attnscope sweep file (no result rows); choose another file")
        done = store.done()
    settings = _check_settings(args, device, resuming=bool(done) or store.num_torn > 0)
    opts = Options(
        flush_l2=args.flush_l2,
        timing_budget_s=args.budget,
        trace_dir=Path(args.trace_dir) if args.trace_dir else None,
        measure_peak=not args.no_peak,
    )
    jobs = plan(cases, variants, opts, explicit=args.variants is not None, done=done)
    check_trace_names(args.trace_dir, (j.trace_name for j in jobs if j.trace_name), [*outs, ("--html", args.html)])
    timeout = None if args.executor == "inline" else (args.timeout or DEFAULT_TIMEOUT_S)
    ex = make_executor(
        args.executor, devices=devices, timeout_s=timeout, ray_address=args.ray_address, workers=args.workers
    )
    n = len(devices) if devices else (args.workers or 1)
    where = f"GPU(s) {','.join(devices)}" if devices else device
    workers = f"{args.executor} executor, {n} worker(s) on {where}" + (f", --timeout {timeout:g} s" if timeout else "")
    total = len(cases) * len(variants)
    return Plan(
        jobs, len(cases), len(variants), total - len(jobs), store.num_torn, ex, workers, settings, left_out, notes
    )


def _ray_notes(args: argparse.Namespace) -> tuple[str, ...]:
    """Where the Ray executor runs, said once: a cluster named by --ray-address (checked to answer now, within a
    bound), or a local Ray on 127.0.0.1 (RAY_ADDRESS in the environment ignored, and said so)."""
    import os

    if args.executor != "ray":
        return ()
    from attnscope.execute.executors.ray import CONNECT_TIMEOUT_S, check_reachable

    if args.ray_address:
        try:
            check_reachable(args.ray_address)
        except ValueError as e:
            raise UsageError(f"--ray-address: {e}") from None
        return (f"Ray: joining the cluster at {args.ray_address} (it answered within {CONNECT_TIMEOUT_S:g} s)",)
    env = os.environ.get("RAY_ADDRESS")
    ignored = f"; RAY_ADDRESS={env} in the environment is ignored (give --ray-address to join it)" if env else ""
    return (f"Ray: a local Ray started for this sweep, listening on 127.0.0.1 only, no dashboard{ignored}",)


def _check_settings(args: argparse.Namespace, device: str, *, resuming: bool) -> dict[str, Any] | None:
    """The settings to record, after refusing a resume whose settings differ from the recorded ones (unless
    --force).  None: the file stays as it is (a forced resume keeps the first run's record)."""
    from attnscope.execute import sweep_settings

    now = sweep_settings.current(args.budget, args.flush_l2, device)
    if not resuming:
        return now
    try:
        recorded = sweep_settings.load(args.out)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if recorded is None:
        return now  # rows from before settings were recorded: nothing to compare with
    diff = sweep_settings.differences(recorded, now)
    if diff and not getattr(args, "force", False):
        raise UsageError(
            f"--resume: the rows in {args.out} were measured with other settings ({'; '.join(diff)}, as recorded in "
            f"{sweep_settings.settings_path(args.out)}): give the same settings, another --out, or --resume --force "
            "to add rows measured otherwise"
        )
    return None if diff else now


class _Bar:
    """The rich progress bar: done/total, elapsed, ETA, counts by status, the job just started.

    Where stderr is not a terminal (a log file, CI) it prints one plain line per finished job instead.
    """

    def __init__(self, total: int, quiet: bool) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        from attnscope.report.text.terminal import console as terminal_console

        console = terminal_console(stderr=True)
        self.plain = not quiet and not console.is_terminal
        self.total, self.done = total, 0
        self.counts: dict[str, int] = {}
        self.progress = Progress(
            SpinnerColumn(),
            BarColumn(bar_width=30),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[counts]}", markup=False),
            TextColumn("{task.description}", markup=False),
            console=console,
            disable=quiet or self.plain,
        )
        self.task = self.progress.add_task("", total=total, counts="")

    def started(self, job: Any) -> None:
        self.progress.update(self.task, description=f"{job.variant} · {job.case.label()}")

    def finished(self, r: Any) -> None:
        import sys

        from attnscope.report.text.sweep_summary import counts_text
        from attnscope.report.text.terminal import clean

        self.done += 1
        self.counts[r.status] = self.counts.get(r.status, 0) + 1
        self.progress.update(self.task, advance=1, counts=counts_text(self.counts))
        if self.plain:
            t = r.gpu_time or r.cpu_time
            what = f"{t.median_us:,.1f} µs" if r.status == "ok" and t else " ".join((r.reason or "").split())[:160]
            case = r.case.label() if r.case else "?"
            line = clean(f"[{self.done}/{self.total}] {r.status} {r.variant} {case}: {what}")
            print(line, file=sys.stderr, flush=True)


def _resume_command(args: argparse.Namespace) -> str:
    argv = list(getattr(args, "argv", None) or [])
    if not argv:
        return "the same command with --resume"
    return shlex.join(["attnscope", *argv, *([] if "--resume" in argv else ["--resume"])])


def cmd_sweep(args: argparse.Namespace) -> int:
    """The sweep, with --out locked from before it is read until the command ends (a second writer is refused)."""
    from attnscope.core.files import lock_store

    check_output_file(args.out, "--out")  # its own one-line refusals come before the lock's
    with lock_store(args.out, "--out"):
        return _sweep(args)


def _sweep(args: argparse.Namespace) -> int:
    import sys

    from attnscope.document.schema import result_to_dict, write_atomic
    from attnscope.execute import sweep
    from attnscope.execute.store import Store
    from attnscope.report.text.sweep_summary import summary_lines
    from attnscope.report.text.terminal import console as terminal_console

    p = check(args)
    console = terminal_console()  # the terminal's width; names printed as data
    store = Store(args.out)
    console.print(
        f"attnscope sweep: {p.num_cases} case(s) × {p.num_variants} variant(s) = {p.num_cases * p.num_variants} "
        f"job(s); {p.num_done} already in {args.out}, {len(p.jobs)} to measure ({p.workers})"
        + (f"; {p.num_torn} unreadable line(s) in it skipped (a write cut short, or not a row)" if p.num_torn else ""),
        highlight=False,
    )
    for line in (*p.notes, *([p.left_out] if p.left_out else [])):
        console.print(f"  {line}", highlight=False, markup=False)
    bar = _Bar(len(p.jobs), args.quiet)
    new: list[Any] = []

    def finished(r: Any) -> None:
        new.append(r)
        bar.finished(r)

    def env() -> Any:  # for rows whose worker died before it could say: a worker's, else this process's
        seen = next((r.env for r in reversed(new) if r.env is not None), None)
        return seen or _parent_env(p.jobs)

    if p.settings is not None:
        from attnscope.execute.sweep_settings import settings_path

        write_atomic(settings_path(args.out), p.settings)
    from attnscope.measure import host

    load = host.read_load()  # before the workers add their own threads to the load
    t0 = time.monotonic()
    old = stop.install()  # SIGTERM (`timeout`, job schedulers), SIGHUP (a closed terminal) save as Ctrl-C does
    try:
        with bar.progress:
            sweep.run_sweep(p.jobs, store, p.executor, env=env, on_start=bar.started, on_result=finished)
    except KeyboardInterrupt as e:
        stop.restore(old)
        saved = len(store.rows())
        if saved:
            what = (
                f"{saved} row(s) saved in {args.out} ({len(new)} measured in this run); "
                f"resume with: {_resume_command(args)}"
            )
        else:  # no row yet: the file may not exist, and is not named
            what = f"nothing measured yet; start again with: {_resume_command(args)}"
        return stop.interrupted(e, what)
    except WriteError as e:  # the store itself cannot grow (a full disk): what it holds, and how to go on
        stop.restore(old)
        print(
            f"attnscope: error: {e}; {len(store.rows())} row(s) are saved in {args.out}: free space, then resume "
            f"with: {_resume_command(args)}",
            file=sys.stderr,
        )
        return EXIT_WRITE
    stop.restore(old)
    elapsed = time.monotonic() - t0
    all_rows = store.rows()
    for line in summary_lines([result_to_dict(r) for r in new], all_rows, args.out, elapsed if new else None):
        console.print(line, highlight=False, markup=False)
    rec, text = sweep.recommendation(all_rows)
    console.print(text, highlight=False)
    busy = host.assess(*load, host.timings_of(new))
    if host.line(busy):
        console.print(f"  {host.line(busy)}", style="yellow", highlight=False, markup=False)
    rec = {**rec, "host": busy}
    unwritten: dict[str, str] = {}  # a full disk: each file tried, each failure said after the summary (exit 74)
    if args.json:  # the document `attnscope recommend --json` writes
        from attnscope.document.schema import SCHEMA_VERSION

        doc = {"schema_version": SCHEMA_VERSION, "tool": "attnscope", "files": [args.out], **rec}
        try:
            write_atomic(args.json, doc)
            console.print(f"  recommendation JSON written to {args.json}", highlight=False)
        except WriteError as e:
            unwritten["--json"] = str(e)
    if args.html:  # after the rows and the JSON: a failing page never costs the results
        from attnscope.api.report import write_html

        try:
            write_html(Path(args.out), args.html, assets=args.assets)  # the JSONL, sniffed as a sweep
            console.print(f"  HTML report written to {args.html}", highlight=False)
        except WriteError as e:
            unwritten["--html"] = str(e)
    if args.trace_dir:
        unwritten.update(traces_not_kept([result_to_dict(r) for r in new], args.trace_dir))
    if unwritten:
        return say_unwritten(unwritten)
    if new and not any(r.status == "ok" for r in new):  # every job of this run skipped, failed or timed out
        console.print(f"  nothing was measured in this run ({len(new)} row(s), none ok): exit 1", style="bold red")
        return 1
    return 0


def _parent_env(jobs: list[Any]) -> Any:
    from attnscope.measure import env

    return env.collect(jobs[0].case.device) if jobs else None
