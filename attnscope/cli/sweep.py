"""``attnscope sweep``: arguments, the checks that name flags, one call of ``attnscope.api.sweep`` (the grid
measured through the one campaign loop, rows appended to the JSONL file as they come, so an interrupted sweep
resumes where it stopped), then the closing summary.
"""

from __future__ import annotations

import argparse
import importlib.util
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnscope.api.checks import EXECUTORS
from attnscope.cli.common import add_assets_arg, say_unwritten
from attnscope.cli.flags import (
    add_flags,
    check_html,
    check_output_dir,
    check_output_file,
    positive_int,
    seconds,
    timeout_seconds,
)
from attnscope.core.arguments import UsageError, check_timeout
from attnscope.core.case import AXIS_FIELDS
from attnscope.core.files import check_outputs, check_trace_names

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
class Request:
    """What the flags ask for, checked: the arguments of one ``attnscope.api.sweep`` call and the header's counts."""

    cases: list[Any]
    variants: str | None
    num_variants: int
    devices: list[str] | None
    timeout: float | None
    workers: str
    options: dict[str, Any]
    left_out: str | None = None  # the line saying which default variants cannot run on this device
    notes: tuple[str, ...] = ()  # lines said once under the header (where Ray runs)


def _device(args: argparse.Namespace) -> tuple[str, list[str] | None]:
    """(the cases' device, the GPUs to pin one worker each to)."""
    from attnscope.api.checks import device as checked_device
    from attnscope.api.checks import devices as parse_devices
    from attnscope.api.checks import gpu_count

    if args.devices is not None and args.device is not None:
        raise UsageError("give --device (one) or --devices (one worker each), not both")
    if args.devices is None:
        device = checked_device(args.device)
        if args.executor == "ray" and device.startswith("cuda"):
            if device != "cuda":
                raise UsageError(f"--device {args.device}: Ray picks each actor's GPU; give --device cuda or --devices")
            return "cuda", ["0"]  # one actor asking Ray for one GPU
        return device, None
    devices = parse_devices(args.devices)
    if devices is None:
        return "cpu", None
    if not (args.executor == "ray" and args.ray_address):  # a cluster's GPUs are not ours to count
        n = gpu_count()
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


def check(args: argparse.Namespace) -> Request:
    """Everything about the flags that can be wrong before a worker starts; the request for the API."""
    from attnscope.api.checks import variant_names as chosen_names
    from attnscope.api.sweeping import default_variants, left_out_line, planned, settings_file
    from attnscope.core.arguments import variant_names
    from attnscope.core.cases import MAX_JOBS, grid

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
    from attnscope.api.running import cpu_timing_notes

    notes = (*notes, *cpu_timing_notes(args.flush_l2, device))  # said under the header: a setting with no effect
    if devices and args.workers:
        raise UsageError("--workers is for CPU workers; with --devices there is one worker per GPU")
    if args.executor == "inline" and ((devices and len(devices) > 1) or (args.workers or 1) > 1):
        raise UsageError("--executor inline runs one job at a time here: use process or ray for several workers")
    cases = grid(_axes(args, device), device)
    variants = chosen_names(args.variants)
    left_out = None
    if args.variants is None:  # the default set: only the built-ins that can run on this device
        variants, left = default_variants([device])
        left_out = left_out_line(left, device) if left else None
    if len(cases) * len(variants) > MAX_JOBS:
        raise UsageError(f"{len(cases)} cases × {len(variants)} variants is over {MAX_JOBS:,} jobs: narrow the grid")
    check_output_file(args.out, "--out")
    check_output_file(args.json, "--json")
    check_output_dir(args.trace_dir, "--trace-dir")
    check_html(args)  # --html's path and plotly, --assets' folder: as run and analyze check them
    outs = [("--out", args.out), ("--out's settings", settings_file(args.out)), ("--json", args.json)]
    check_outputs([], [*outs, ("--html", args.html)])
    options = {
        "flush_l2": args.flush_l2,
        "timing_budget_s": args.budget,
        "trace_dir": Path(args.trace_dir) if args.trace_dir else None,
        "measure_peak": not args.no_peak,
    }
    jobs = planned(cases, variants, explicit=args.variants is not None, done=set(), **options)
    check_trace_names(args.trace_dir, (j.trace_name for j in jobs if j.trace_name), [*outs, ("--html", args.html)])
    timeout = None if args.executor == "inline" else (args.timeout or DEFAULT_TIMEOUT_S)
    n = len(devices) if devices else (args.workers or 1)
    where = f"GPU(s) {','.join(devices)}" if devices else device
    workers = f"{args.executor} executor, {n} worker(s) on {where}" + (f", --timeout {timeout:g} s" if timeout else "")
    return Request(
        cases, args.variants, len(variants), devices, timeout, workers, options, left_out, notes
    )  # fmt: skip


def _ray_notes(args: argparse.Namespace) -> tuple[str, ...]:
    """Where the Ray executor runs, said once: a cluster named by --ray-address (checked to answer now, within a
    bound), or a local Ray on 127.0.0.1 (RAY_ADDRESS in the environment ignored, and said so)."""
    import os

    if args.executor != "ray":
        return ()
    from attnscope.api.checks import ray_reachable

    if args.ray_address:
        try:
            within = ray_reachable(args.ray_address)
        except ValueError as e:
            raise UsageError(f"--ray-address: {e}") from None
        return (f"Ray: joining the cluster at {args.ray_address} (it answered within {within:g} s)",)
    env = os.environ.get("RAY_ADDRESS")
    ignored = f"; RAY_ADDRESS={env} in the environment is ignored (give --ray-address to join it)" if env else ""
    return (f"Ray: a local Ray started for this sweep, listening on 127.0.0.1 only, no dashboard{ignored}",)


def _resume_command(args: argparse.Namespace) -> str:
    argv = list(getattr(args, "argv", None) or [])
    if not argv:
        return "the same command with --resume"
    return shlex.join(["attnscope", *argv, *([] if "--resume" in argv else ["--resume"])])


def cmd_sweep(args: argparse.Namespace) -> int:
    """The flags checked, one ``attnscope.api.sweep`` call (--out locked from before it is read until the command
    ends: a second writer is refused), then the summary, the recommendation and the files."""
    from attnscope.api import sweep
    from attnscope.api.campaign import Planned
    from attnscope.api.sweeping import recommendation
    from attnscope.cli.common import Progress, stopping, store_in_flag_words
    from attnscope.core.files import lock_store
    from attnscope.report.text.terminal import console, indented

    check_output_file(args.out, "--out")  # its own one-line refusals come before the lock's
    with lock_store(args.out, "--out"):
        req = check(args)
        out, bar = console(), Progress(quiet=args.quiet)

        def shown(event: Any) -> None:
            if isinstance(event, Planned):  # after the lock, before the first job
                for line in header(args, req, event):
                    indented(out, line)
            bar(event)

        with store_in_flag_words(), stopping(), bar:
            new = sweep(
                req.cases, req.variants, out=args.out, resume=args.resume, force=args.force, lock=False,
                executor=args.executor, devices=req.devices, timeout_s=req.timeout, ray_address=args.ray_address,
                workers=args.workers, on_event=shown, resume_with=_resume_command(args), **req.options,
            )  # fmt: skip
        rec = recommendation(rows := _rows(args.out))  # its same_masks read from the rows, as recommend reads them
        return render_sweep(args, new, rows, {**rec, "host": new.host}, out)


def header(args: argparse.Namespace, req: Request, planned: Any) -> list[str]:
    """The lines said before the first job (``planned``: the campaign's Planned event): the grid, what the store
    holds, where the jobs run."""
    n = len(req.cases) * req.num_variants
    jobs = planned.done_before + planned.total  # the grid's jobs: the pairs of the default set that apply
    apply = (
        f"{jobs} job(s) ({n - jobs} pair(s) of a serving variant and a dense case, or the reverse, do not apply)"
        if jobs < n
        else f"{n} job(s)"
    )
    torn = f"; {planned.torn} unreadable line(s) in it skipped (a write cut short, or not a row)"
    first = (
        f"attnscope sweep: {len(req.cases)} case(s) × {req.num_variants} variant(s) = {apply}; "
        f"{planned.done_before} already in {args.out}, {planned.total} to measure ({req.workers})"
        + (torn if planned.torn else "")
    )
    return [first, *(f"  {line}" for line in (*req.notes, *([req.left_out] if req.left_out else [])))]


def _rows(out: str) -> list[dict[str, Any]]:
    from attnscope.api.checks import store_rows

    return store_rows(out)[0]


def render_sweep(args: argparse.Namespace, new: Any, rows: list[dict[str, Any]], rec: dict[str, Any], out: Any) -> int:
    """The summary, the recommendation, the host's verdict, the --json and --html files; the exit status."""
    from attnscope.api.report import traces_not_kept
    from attnscope.document.schema import result_to_dict
    from attnscope.report.text.sweep import render
    from attnscope.report.text.sweep_summary import summary_lines
    from attnscope.report.text.terminal import host_caveat, indented

    for line in summary_lines([result_to_dict(r) for r in new], rows, args.out, new.elapsed_s if new else None):
        indented(out, line)
    if not rec["best"] and not rec.get("unresolved"):
        out.print("recommendation: no row to compare yet (one needs status ok, numerics within tolerance, a time)")
    else:
        out.print(render(rec), highlight=False)
    host_caveat(out, rec["host"])
    unwritten = _write_files(args, rec, out)  # a full disk: each file tried, each failure said after (exit 74)
    if args.trace_dir:
        unwritten.update(traces_not_kept([result_to_dict(r) for r in new], args.trace_dir))
    if unwritten:
        return say_unwritten(unwritten)
    if new and not any(r.status == "ok" for r in new):  # every job of this run skipped, failed or timed out
        out.print(f"  nothing was measured in this run ({len(new)} row(s), none ok): exit 1", style="bold red")
        return 1
    return 0


def _write_files(args: argparse.Namespace, rec: dict[str, Any], out: Any) -> dict[str, str]:
    """The recommendation to --json (the document `attnscope recommend --json` writes), the page of every row to
    --html (after the rows and the JSON: a failing page never costs the results); what could not be written."""
    from attnscope.core.files import WriteError
    from attnscope.document.schema import SCHEMA_VERSION, write_atomic

    unwritten: dict[str, str] = {}
    if args.json:
        doc = {"schema_version": SCHEMA_VERSION, "tool": "attnscope", "files": [args.out], **rec}
        try:
            write_atomic(args.json, doc)
            out.print(f"  recommendation JSON written to {args.json}", highlight=False)
        except WriteError as e:
            unwritten["--json"] = str(e)
    if args.html:
        from attnscope.api.report import write_html

        try:
            write_html(Path(args.out), args.html, assets=args.assets)  # the JSONL, sniffed as a sweep
            out.print(f"  HTML report written to {args.html}", highlight=False)
        except WriteError as e:
            unwritten["--html"] = str(e)
    return unwritten
