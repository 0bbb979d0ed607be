"""Thin command line: parse → call → render.  torch is imported only by commands that run."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from attnscope.cli.run import (  # noqa: F401  (re-exported: the command line's one vocabulary)
    EXIT_FAIL,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    Parser,
    _add_case_args,
    _case_from,
    _check_html,
    _console,
    _write_html,
    check_case_fits,
    check_run_args,
    cmd_run,
)
from attnscope.core.arguments import (
    UsageError,
    check_output_file,
    finite_float,
    positive_int,
    timeout_seconds,
)


def _cmd_guess(args: argparse.Namespace) -> int:
    from attnscope.cli.guess import cmd_guess

    return cmd_guess(args)


def cmd_variants(args: argparse.Namespace) -> int:
    from rich.table import Table

    from attnscope.execute.runner import make_inputs
    from attnscope.variants import REGISTRY, Unsupported

    case = _case_from(args)
    x = make_inputs(case, 0)
    t = Table(title=f"variants on {case.label()}", header_style="bold")
    for col in ("variant", "runs here", "what it is", "reason if not"):
        t.add_column(col, overflow="fold")
    dev = "cuda" if case.device.startswith("cuda") else "cpu"
    for v in REGISTRY.values():
        reason = v.check(case)
        state = "no" if reason else "yes"
        if not reason and dev in v.opt_in_on:
            state, reason = "opt-in", v.opt_in_reason
        elif not reason and not v.compiles:
            try:
                v.prepare(case, x)
            except Unsupported as e:
                state, reason = "no", str(e)
        t.add_row(v.name, state, v.description, reason or "")
    _console().print(t)
    return EXIT_OK


def cmd_analyze(args: argparse.Namespace) -> int:
    from attnscope.trace import no_gc

    with no_gc():  # a short process holding ~10^5 objects: full collections only cost time
        return _analyze_cmd(args)


def _analyze_cmd(args: argparse.Namespace) -> int:
    from attnscope.api.batch import analyze_many, expand

    check_output_file(args.json, "--json")

    _check_html(args)
    # A trace without GPU events is fingerprinted by its CPU ops: detected, no flag needed (--cpu is kept, harmless).
    results, errors = analyze_many(expand(args.traces), jobs=args.jobs, require_gpu=False)
    for e in errors:
        print(f"attnscope: error: {e}", file=sys.stderr)
    if not results:
        return EXIT_USAGE
    from attnscope.analysis.fingerprint.ranks import combine
    from attnscope.document.schema import document, write_atomic
    from attnscope.report.text.summary import render_overall, render_summary
    from attnscope.report.text.table import render

    named = [(r.variant, r.trace_summary) for r in results if r.trace_summary is not None]
    overall = combine(named) if len(named) > 1 else None
    from attnscope.api import annotate

    doc = annotate(document(None, results, **({"overall": overall} if overall else {})))
    if args.json:
        write_atomic(args.json, doc)
    _write_html(args, doc)
    console = _console()
    render(doc, console, kernels=args.kernels, title="attnscope analyze", verbose=getattr(args, "verbose", False))
    from attnscope.report.text.model import render_split

    for r in doc["results"]:
        render_summary(r, console, top=args.top)
        render_split(r, console)
    if overall:
        render_overall(overall, console)
    if args.json:
        console.print(f"  JSON written to {args.json}")
    if args.html:
        console.print(f"  HTML report written to {args.html}")
    return EXIT_USAGE if errors else EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from attnscope.api.report import write_html

    check_output_file(args.out, "-o")
    out = write_html(args.files, args.out, assets=getattr(args, "assets", None))
    size = out.stat().st_size
    how = f"plotly shared in {args.assets}" if args.assets else "one self-contained file"
    print(f"attnscope: report written to {out} ({size / 1e6:.1f} MB, {how})")
    return EXIT_OK


def cmd_diff(args: argparse.Namespace) -> int:
    from attnscope.api.diff import diff, load_side

    metrics = tuple(m.strip() for m in args.metrics.split(",") if m.strip())
    if not metrics or any(m not in ("gpu", "cpu") for m in metrics):
        raise UsageError(f"--metrics takes gpu, cpu or gpu,cpu; got {args.metrics!r}")
    check_output_file(args.json, "--json")
    a, b = load_side(args.a), load_side(args.b)
    d = diff(a, b, threshold_pct=args.threshold, metrics=metrics)
    if args.json:
        from attnscope.document.schema import SCHEMA_VERSION, write_atomic

        write_atomic(
            args.json,
            {
                "schema_version": SCHEMA_VERSION,
                "tool": "attnscope",
                "kind": "diff",
                "a": str(args.a),
                "b": str(args.b),
                **d,
            },
        )
    from attnscope.report.text.diff import render_diff

    render_diff(d, _console(), title=f"attnscope diff: {args.a} → {args.b}")
    return EXIT_FAIL if d["regressions"] else EXIT_OK


def load_sweep_rows(paths: list[str]) -> list[dict[str, Any]]:
    """Rows of sweep JSONL files (or the results of `run --json` documents), in order, each row checked
    like a document's results (DocumentError); a torn line left out is said on stderr."""
    from attnscope.document.load import result_rows

    rows, notes = result_rows(paths)
    for n in notes:
        print(f"attnscope: {n}", file=sys.stderr)
    return rows


def cmd_recommend(args: argparse.Namespace) -> int:
    from attnscope.analysis.recommend.sweep import recommend
    from attnscope.report.text.sweep import render

    check_output_file(args.json, "--json")
    rows = load_sweep_rows(args.files)
    if rows and all("impl" in r and "config" in (r.get("case") or {}) for r in rows):  # `model --out` rows
        from attnscope.cli.model_jobs import recommend_rows

        return recommend_rows(rows, args.files, args.json, _console())
    rec = recommend(rows)
    if not rec["best"] and not rec.get("unresolved"):
        by = ", ".join(f"{k} {v}" for k, v in rec["counts"]["by_status"].items())
        why = (
            f"{', '.join(args.files)}: no row to compare (one needs status ok, numerics_ok true, a case and a "
            f"time; rows by status: {by})"
        )
        if not rows or any(r.get("status") == "ok" for r in rows):  # no rows, or "ok" rows lacking a case or time
            raise UsageError(why)
        print(f"attnscope: nothing measured to recommend from: {why}", file=sys.stderr)
        return EXIT_FAIL
    if args.json:
        from attnscope.document.schema import SCHEMA_VERSION, write_atomic

        write_atomic(args.json, {"schema_version": SCHEMA_VERSION, "tool": "attnscope", "files": args.files, **rec})
    _console().print(render(rec), highlight=False)
    return EXIT_OK


# Commands whose parsers live in their own modules, imported only when that command runs (an
# analyze of a trace never imports the sweep's executors or the model's benchmark code).
LAZY_COMMANDS = {
    "sweep": (
        "attnscope.cli.sweep",
        "every variant over a grid of cases, one job each (crash/OOM/hang isolated), resumable, "
        "then the best variant per case",
    ),
    "model": (
        "attnscope.cli.model",
        "where a transformer's step time goes: attention against the rest, per implementation",
    ),
    "tour": ("attnscope.cli.tour", "the study replayed on this machine: a guess before every reveal, then a score"),
}


def _command_in(argv: list[str] | None) -> str | None:
    """The subcommand argv names (its first word that is not an option), or None."""
    for a in sys.argv[1:] if argv is None else argv:
        if not a.startswith("-"):
            return a
    return None


# What each exit status means, per command (docs/cli.md says the same): printed under every --help.
_INTERRUPTED = "130/143 interrupted (SIGINT/SIGTERM), after saving what was finished and naming the file"
_MEASURES = "0 measured; 1 nothing could be measured (every variant skipped or failed: the reasons are printed)"
EXIT_CODES = {
    "run": f"{_MEASURES}, or with --strict a clearly missed prediction; 2 bad input; {_INTERRUPTED}",
    "guess": f"{_MEASURES}, or with --strict a clearly missed prediction; 2 bad input; {_INTERRUPTED}",
    "sweep": f"{_MEASURES} in this run; 2 bad input; {_INTERRUPTED}",
    "variants": "0 listed; 2 bad input",
    "analyze": "0 every trace fingerprinted; 2 bad input (a file that is not a readable trace, an unwritable path)",
    "report": "0 page written; 2 bad input",
    "recommend": "0 recommended; 1 the rows hold nothing measured to compare (the statuses are printed); 2 bad input",
    "diff": "0 compared; 1 a regression past --threshold; 2 bad input",
    "tour": "0 toured; 2 bad input; 130 interrupted",
}


def _exit_epilog(sub: Any) -> None:
    """Every command's --help ends with its exit statuses (a parser that says them itself is left as it is)."""
    for name, parser in sub.choices.items():
        if name in EXIT_CODES and not parser.epilog:
            parser.epilog = f"exit status: {EXIT_CODES[name]}"


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; the commands of LAZY_COMMANDS get their full parser only when argv runs them."""
    from attnscope import __version__

    p = Parser(prog="attnscope", description=__doc__)
    p.add_argument("--version", action="version", version=f"attnscope {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="run and fingerprint every attention variant on one case")
    g = sub.add_parser("guess", help="guess first: answer a few questions, then run and see every mismatch")
    for sp in (r, g):
        _add_case_args(sp)
        sp.add_argument("--variants", help="comma list, or 'all' (default: the device's default set)")
        sp.add_argument("--kernels", action="store_true", help="also list each variant's kernels")
        sp.add_argument("--verbose", action="store_true", help="also host-side notes and the rules not checked")
        sp.add_argument("--json", help="write the versioned JSON document here")
        sp.add_argument("--html", metavar="PATH", help="also write a self-contained HTML report here")
        sp.add_argument("--trace-dir", help="keep one Perfetto-loadable trace per variant here")
        sp.add_argument("--flush-l2", action="store_true", help="flush L2 between timed GPU calls")
        sp.add_argument(
            "--ncu",
            action="store_true",
            help="also run each variant's call under Nsight Compute: achieved occupancy, throughput, DRAM, L2, stalls",
        )
        sp.add_argument(
            "--budget",
            type=finite_float("budget", minimum=0.0, strict=True),
            default=0.5,
            help="seconds per timer per variant (default 0.5)",
        )
        sp.add_argument("--no-peak", action="store_true", help="skip the matmul peak measurement (no %% peak)")
        sp.add_argument(
            "--strict",
            action="store_true",
            help="exit 1 when a prediction is clearly missed (CI); an unmeasurable or unclear one does not fail",
        )
        sp.add_argument(
            "--executor",
            choices=("inline", "process"),
            default="inline",
            help="inline (this process, default) or process (a worker process: a crash becomes a row)",
        )
        sp.add_argument(
            "--timeout",
            type=timeout_seconds,
            help="seconds (> 0) per variant before its worker is stopped: a `timeout` row (process executor only)",
        )
    r.add_argument("--guess", metavar="FILE", help="predictions (TOML) written before the run: a verdict for each")
    r.set_defaults(func=cmd_run)
    g.add_argument("--save", metavar="FILE", help="also write the answers as a predictions file for run --guess")
    g.set_defaults(func=_cmd_guess, guess=None)

    v = sub.add_parser("variants", help="list every variant and whether it can run here")
    _add_case_args(v)
    v.set_defaults(func=cmd_variants)

    a = sub.add_parser("analyze", help="fingerprint Kineto trace files captured anywhere (any size, many ranks)")
    a.add_argument("traces", nargs="+", help=".json or .json.gz Kineto traces, or directories of them (one per rank)")
    a.add_argument("--json", help="write the versioned JSON document here")
    a.add_argument("--html", metavar="PATH", help="also write a self-contained HTML report here")
    a.add_argument("--kernels", action="store_true", help="also list each trace's kernels")
    a.add_argument("--verbose", action="store_true", help="also the rules not checked on this evidence, and why")
    a.add_argument(
        "--jobs", type=positive_int("jobs", 1024), help="processes for several traces (default: one per core)"
    )
    a.add_argument(
        "--top", type=positive_int("top", 100_000), default=10, help="rows in the top-kernel tables (default 10)"
    )
    a.add_argument(
        "--cpu", action="store_true", help="kept for old scripts: traces without GPU events are detected by themselves"
    )
    a.set_defaults(func=cmd_analyze)

    rp = sub.add_parser("report", help="one self-contained HTML page from run, analyze, sweep or model results")
    rp.add_argument("files", nargs="+", help="run/analyze/model JSON documents or sweep JSONL files (sniffed)")
    rp.add_argument("-o", "--out", required=True, metavar="PATH", help="the HTML file to write")
    rp.add_argument(
        "--assets",
        metavar="DIR",
        help="write plotly once into DIR (shared by every page that names the same DIR) and link it, instead of "
        "inlining it: a page of ~0.1 MB instead of ~4.8 MB; it then opens only beside DIR (see docs/report.md)",
    )
    rp.set_defaults(func=cmd_report)

    rc = sub.add_parser(
        "recommend", help="the best variant per case of a sweep, crossovers, a policy, sdpa_default's gaps"
    )
    rc.add_argument(
        "files",
        nargs="+",
        help="sweep JSONL files or run --json documents (a later row of the same variant, case and mode stands)",
    )
    rc.add_argument("--json", help="write the recommendation as JSON here")
    rc.set_defaults(func=cmd_recommend)

    d = sub.add_parser("diff", help="compare two result JSONs or two traces, variant by variant")
    d.add_argument("a", help="baseline: an attnscope JSON document or a Kineto trace")
    d.add_argument("b", help="candidate: an attnscope JSON document or a Kineto trace")
    d.add_argument(
        "--threshold",
        type=finite_float("threshold", minimum=0.0),
        help="exit 1 when a time grows by more than this many percent",
    )
    d.add_argument("--metrics", default="gpu,cpu", help="times the threshold applies to: gpu, cpu (default gpu,cpu)")
    d.add_argument("--json", help="write the diff as JSON here")
    d.set_defaults(func=cmd_diff)

    import importlib

    command = _command_in(argv)
    for name, (module, text) in LAZY_COMMANDS.items():
        if command == name:
            importlib.import_module(module).add_parser(sub, text)
        else:  # listed in --help; never parsed (argv does not run it)
            sub.add_parser(name, help=text)
    _exit_epilog(sub)
    p.epilog = (
        "exit status: 0 measured (or done); 1 a regression, a --strict miss, or nothing could be measured (with the "
        "reason); 2 bad input; 130/143 interrupted after saving. Each command's --help says which apply; docs/cli.md"
    )
    return p


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")  # silence Kineto's stderr chatter
    try:
        args = build_parser(argv).parse_args(argv)
    except SystemExit as e:  # --help, --version, or a bad argument (already reported in one line)
        return EXIT_OK if e.code is None else e.code if isinstance(e.code, int) else EXIT_USAGE
    args.argv = list(sys.argv[1:] if argv is None else argv)  # what to print when telling how to resume
    try:
        return int(args.func(args))
    except ValueError as e:  # UsageError, TraceError, DocumentError, PredictionError, Case checks
        print(f"attnscope: error: {_one_line(e)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("attnscope: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # a bug must still end in one line, never a traceback
        if os.environ.get("ATTNSCOPE_DEBUG"):
            raise
        print(
            f"attnscope: internal error: {type(e).__name__}: {_one_line(e)} "
            "(set ATTNSCOPE_DEBUG=1 for the traceback, and please report it)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split())[:500]


# Commands that import no torch and leave no thread or process running once they return: after
# their output is flushed, the interpreter's teardown is skipped (freeing the ~10^5 objects of a
# model-scale trace one by one took ~30 ms of a 0.5 s analyze).
PURE_COMMANDS = frozenset({"analyze", "diff", "recommend", "report"})


def entry() -> None:
    """The console script: main(), then exit (at once for PURE_COMMANDS, their files closed and output flushed)."""
    argv = sys.argv[1:]
    rc = main(argv)
    if _command_in(argv) in PURE_COMMANDS:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except OSError:  # a closed pipe: nothing more can be said
            pass
        os._exit(rc)
    sys.exit(rc)


if __name__ == "__main__":
    entry()
