"""`attnscope analyze`: fingerprint Kineto traces captured anywhere (api.analyze_traces), then print and write."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from attnscope.cli import common
from attnscope.cli.common import EXIT_OK, EXIT_USAGE, add_assets_arg, say_unwritten, write_outputs
from attnscope.cli.flags import check_html, check_output_file, positive_int
from attnscope.core.arguments import MAX_PROCESSES, UsageError
from attnscope.core.files import check_outputs


def add_parser(sub: Any, text: str) -> None:
    a = sub.add_parser("analyze", help=text)
    a.add_argument("traces", nargs="+", help=".json or .json.gz Kineto traces, or directories of them (one per rank)")
    a.add_argument(
        "--capture",
        metavar="TRACE",
        help="a trace of the capture of the CUDA graphs the traces replay: replayed kernels are matched to its ops",
    )
    a.add_argument("--json", help="write the versioned JSON document here")
    a.add_argument("--html", metavar="PATH", help="also write a self-contained HTML report here")
    add_assets_arg(a)
    a.add_argument("--kernels", action="store_true", help="also list each trace's kernels")
    a.add_argument("--verbose", action="store_true", help="also the rules not checked on this evidence, and why")
    a.add_argument(
        "--jobs",
        type=positive_int("jobs", MAX_PROCESSES),
        help="processes for several traces (default: one per idle core by the load average; this one alone for under "
        "16 MiB of JSON in all, or where fewer than two cores are idle)",
    )
    a.add_argument(
        "--top", type=positive_int("top", 100_000), default=10, help="rows in the top-kernel tables (default 10)"
    )
    a.add_argument(
        "--cpu", action="store_true", help="kept for old scripts: traces without GPU events are detected by themselves"
    )
    a.set_defaults(func=cmd_analyze)


def cmd_analyze(args: argparse.Namespace) -> int:
    from attnscope.api.batch import light_gc  # not api.checks: that imports the sweep's executors

    with light_gc():  # a short process holding ~10^5 objects: full collections only cost time
        return _analyze(args)


def _analyze(args: argparse.Namespace) -> int:
    check_output_file(args.json, "--json")
    check_html(args)
    capture = getattr(args, "capture", None)
    if capture is not None and not Path(capture).is_file():
        why = "a directory: name the capture's trace file" if Path(capture).is_dir() else "no such file"
        print(f"attnscope: error: --capture {capture}: {why}", file=sys.stderr)
        return EXIT_USAGE
    # A trace without GPU events is fingerprinted by its CPU ops: detected, no flag needed (--cpu is kept, harmless).
    check_outputs(
        [("input", t) for t in [*args.traces, *([capture] if capture else [])]],
        [("--json", args.json), ("--html", args.html)],
    )
    from attnscope.document.load import written_by_attnscope

    if capture is not None and written_by_attnscope(Path(capture)):
        raise UsageError(f"--capture {capture}: a result file attnscope wrote, not the Kineto trace of a capture")
    for t in args.traces:  # what attnscope wrote is read by the readers of results, never as a trace
        if not Path(t).exists():  # before any trace is read: one missing among several too
            raise UsageError(f"{t}: no such file")
        if Path(t).is_file() and written_by_attnscope(Path(t)):
            raise UsageError(
                f"{t}: a result file attnscope wrote (a document or a sweep's rows), not a Kineto trace: "
                "attnscope report, diff or recommend read it"
            )
    from attnscope.api.batch import results_in

    for t in args.traces:  # in a folder, attnscope's own files are passed over (api.batch.expand), and said
        for f in results_in(Path(t)) if Path(t).is_dir() else ():
            print(f"attnscope: note: {f}: a result file attnscope wrote, not a trace: passed over", file=sys.stderr)
    # one trace file: a second core may read its first part (trace/parallel.py, off unless ATTNSCOPE_READ_CORES asks)
    if len(args.traces) == 1 and os.environ.get("ATTNSCOPE_READ_CORES") in ("2", "auto"):
        from attnscope.api.batch import read_ahead

        read_ahead(args.traces[0])
    from attnscope.api import analyze_traces

    doc, errors = analyze_traces(args.traces, jobs=args.jobs, capture=capture)
    from attnscope.report.text.terminal import one_line

    for e in errors:
        print(f"attnscope: error: {one_line(str(e))}", file=sys.stderr)
    if doc is None:
        return EXIT_USAGE
    unwritten = write_outputs(args, doc)  # a full disk: said after the tables, exit 74
    from attnscope.report.text.model import render_split
    from attnscope.report.text.summary import render_overall, render_summary
    from attnscope.report.text.table import render

    console = common.console()
    render(doc, console, kernels=args.kernels, title="attnscope analyze", verbose=getattr(args, "verbose", False))
    for r in doc["results"]:
        render_summary(r, console, top=args.top)
        render_split(r, console)
    if doc.get("overall"):
        render_overall(doc["overall"], console)
    if args.json and "--json" not in unwritten:
        console.print(f"  JSON written to {args.json}")
    if args.html and "--html" not in unwritten:
        console.print(f"  HTML report written to {args.html}")
    if unwritten:
        return say_unwritten(unwritten)
    return EXIT_USAGE if errors else EXIT_OK
