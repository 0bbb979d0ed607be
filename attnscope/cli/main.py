"""Thin command line: parse → call → render.  torch is imported only by commands that run."""

# This module assembles the parser and dispatches; each command is a module of this package that parses its
# arguments, calls one function of attnscope.api and prints or writes what it returns.

from __future__ import annotations

import argparse
import gc
import os
import sys
from typing import Any

# The console script's entry() installs the stopping signals' handlers first thing; what this module imports before
# that is kept light (no torch, no rich, no analysis: ~10 ms), so a signal at any moment ends in one line.
from attnscope.cli import stop
from attnscope.cli.common import EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, EXIT_WRITE, Parser, add_assets_arg
from attnscope.cli.flags import positive_int, seconds, timeout_seconds
from attnscope.core.arguments import MAX_BUCKET, MAX_STEPS
from attnscope.core.files import WriteError

# The top-level --help's description: what the tool does, for its user (the docstring above is for its developers).
DESCRIPTION = (
    "What attention implementations really do on the hardware in front of you: run every variant on one case, "
    "sweep a grid, measure inside a transformers model, fingerprint traces captured anywhere, compare, recommend."
)


def _cmd_guess(args: argparse.Namespace) -> int:
    from attnscope.cli.guess import cmd_guess

    return cmd_guess(args)


# Commands whose parsers live in their own modules (attnscope/cli/<command>.py: add_parser, then the command),
# imported only when that command runs (an analyze of a trace never imports the sweep's executors or the model's
# benchmark code).  In the order --help lists them, after run and guess.
LAZY_COMMANDS = {
    "variants": ("attnscope.cli.variants", "list every variant and whether it can run here"),
    "analyze": (
        "attnscope.cli.analyze",
        "fingerprint Kineto trace files captured anywhere (any size, many ranks)",
    ),
    "report": ("attnscope.cli.report", "one self-contained HTML page from run, analyze, sweep or model results"),
    "recommend": (
        "attnscope.cli.recommend",
        "the best variant per case of a sweep, crossovers, a policy, sdpa_default's gaps",
    ),
    "diff": ("attnscope.cli.diff", "compare two result JSONs or two traces, variant by variant"),
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
_INTERRUPTED = "130/143/129 interrupted (SIGINT/SIGTERM/SIGHUP), after saving what was finished and naming the file"
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
    "tour": "0 toured; 2 bad input; 130/143/129 interrupted (SIGINT/SIGTERM/SIGHUP), the steps done saved",
}


# Every command that writes a file: a full disk after the work (docs/cli.md, "Full disk").
_WRITE = "74 a file could not be written (a full disk): what was measured is printed first, the file and cause named"
EXIT_CODES = {k: v if k == "variants" else f"{v}; {_WRITE}" for k, v in EXIT_CODES.items()}


def _exit_epilog(sub: Any) -> None:
    """Every command's --help ends with its exit statuses (a parser that says them itself is left as it is)."""
    for name, parser in sub.choices.items():
        if name in EXIT_CODES and not parser.epilog:
            parser.epilog = f"exit status: {EXIT_CODES[name]}"


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; the commands of LAZY_COMMANDS get their full parser only when argv runs them."""
    from attnscope import __version__

    p = Parser(prog="attnscope", description=DESCRIPTION)
    p.add_argument("--version", action="version", version=f"attnscope {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    command = _command_in(argv)
    r = sub.add_parser("run", help=RUN_HELP)
    g = sub.add_parser("guess", help=GUESS_HELP)
    if command in ("run", "guess"):  # another command never parses their ~50 flags (nor imports cli.run)
        _add_run_and_guess(r, g)

    import importlib

    for name, (module, text) in LAZY_COMMANDS.items():
        if command == name:
            importlib.import_module(module).add_parser(sub, text)
        else:  # listed in --help; never parsed (argv does not run it)
            sub.add_parser(name, help=text)
    _exit_epilog(sub)
    p.epilog = (
        "exit status: 0 measured (or done); 1 a regression, a --strict miss, or nothing could be measured (with the "
        "reason); 2 bad input; 130/143/129 interrupted (SIGINT/SIGTERM/SIGHUP) after saving; 141 the output pipe "
        "closed (| head); 74 a file could not be written after the work (a full disk). Each command's --help says "
        "which apply; docs/cli.md"
    )
    return p


RUN_HELP = "run and fingerprint every attention variant on one case"
GUESS_HELP = "guess first: answer a few questions, then run and see every mismatch"


def _add_run_and_guess(r: argparse.ArgumentParser, g: argparse.ArgumentParser) -> None:
    """The flags of run and guess (the case's, from its table, and their own)."""
    from attnscope.cli.run import _add_case_args, cmd_run

    for sp in (r, g):
        _add_case_args(sp)
        sp.add_argument("--variants", help="comma list, or 'all' (default: the device's default set)")
        sp.add_argument("--kernels", action="store_true", help="also list each variant's kernels")
        sp.add_argument("--verbose", action="store_true", help="also host-side notes and the rules not checked")
        sp.add_argument("--json", help="write the versioned JSON document here")
        sp.add_argument("--html", metavar="PATH", help="also write a self-contained HTML report here")
        add_assets_arg(sp)
        sp.add_argument("--trace-dir", help="keep one Perfetto-loadable trace per variant here")
        sp.add_argument("--flush-l2", action="store_true", help="flush L2 between timed GPU calls")
        sp.add_argument(
            "--ncu",
            action="store_true",
            help="also run each variant's call under Nsight Compute: achieved occupancy, throughput, DRAM, L2, stalls",
        )
        sp.add_argument(
            "--budget",
            type=seconds("budget"),
            default=None,
            help="seconds per timer per variant (default 0.5 on a GPU, 0.2 on a CPU)",
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
    r.add_argument(
        "--steps",
        type=positive_int("steps", MAX_STEPS),
        help="also decode N steps over a growing cache per variant (a serving case, seq 1): each step timed eagerly "
        "and, on CUDA, replayed from a graph per shape bucket (docs/serving.md)",
    )
    r.add_argument(
        "--bucket",
        type=positive_int("bucket", MAX_BUCKET),
        help="with --steps: tokens per shape bucket, one CUDA graph (and one plan) each (default 256)",
    )
    r.set_defaults(func=cmd_run)
    g.add_argument("--save", metavar="FILE", help="also write the answers as a predictions file for run --guess")
    g.set_defaults(func=_cmd_guess, guess=None)


EXIT_PIPE = 141  # stdout closed by its reader (`attnscope … | head`): 128 + SIGPIPE, as a shell reports it


def _columns() -> None:
    """COLUMNS that cannot be a terminal's width (0, negative, not a number, past 65535) counts as unset: rich would
    print nothing at a width of 0, and the terminal's own size (or 80) is what the user has."""
    v = os.environ.get("COLUMNS")
    if v is not None and not (v.strip().isdigit() and 1 <= int(v) <= 65535):
        del os.environ["COLUMNS"]


def check_environment(args: argparse.Namespace) -> None:
    """The documented environment variables that set a flag's default are checked as that flag is."""
    size = os.environ.get("ATTNSCOPE_TOUR_SIZE")
    if args.command == "tour" and size and args.size == size:
        from attnscope.cli.tour import SIZES

        if size not in SIZES:
            from attnscope.core.arguments import UsageError

            raise UsageError(
                f"ATTNSCOPE_TOUR_SIZE={size!r}: not one of {', '.join(SIZES)} (it sets --size; unset it or pass --size)"
            )
    cores = os.environ.get("ATTNSCOPE_READ_CORES")
    if cores and cores not in ("1", "2", "auto"):
        from attnscope.core.arguments import UsageError

        raise UsageError(
            f"ATTNSCOPE_READ_CORES={cores[:40]!r}: not 1 (one process), 2 (a second core) or auto; or unset it"
        )
    cache = os.environ.get("ATTNSCOPE_TRACE_CACHE")
    if cache and os.path.exists(cache) and not os.path.isdir(cache):
        from attnscope.core.arguments import UsageError

        raise UsageError(f"ATTNSCOPE_TRACE_CACHE={cache[:200]!r}: not a directory (the trace cache is kept in one)")


# Commands that measure: interrupted before they saved anything, they say "nothing measured yet".
MEASURING = frozenset({"run", "guess", "sweep", "model", "tour"})


def _not_yet(argv: list[str] | None) -> str:
    """What an interruption before the command saved anything leaves: nothing (its files are written atomically)."""
    return "nothing measured yet" if _command_in(argv) in MEASURING else "stopped before anything was written"


def _parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """``parser.parse_args(argv)``, but a flag the command does not know is refused by that command's parser: its
    line names the command (`attnscope model: error: … (see attnscope model --help)`), not the top level."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        command = subs[0].choices.get(getattr(args, "command", None) or "") if subs else None
        (command or parser).error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")  # silence Kineto's stderr chatter
    _columns()
    try:
        args = _parse(build_parser(argv), argv)
    except SystemExit as e:  # --help, --version, or a bad argument (already reported in one line)
        return EXIT_OK if e.code is None else e.code if isinstance(e.code, int) else EXIT_USAGE
    except KeyboardInterrupt as e:  # a signal while the command line is read (its modules imported)
        return stop.interrupted(e, _not_yet(argv))
    args.argv = list(sys.argv[1:] if argv is None else argv)  # what to print when telling how to resume
    try:
        check_environment(args)
        return int(args.func(args))
    except BrokenPipeError:  # the reader of stdout is gone (`| head`): nothing more can be said, and no error
        from attnscope.report.text.terminal import pipe_closed

        return pipe_closed()
    except ValueError as e:  # UsageError, TraceError, DocumentError, PredictionError, Case checks
        from attnscope.cli.errors import as_flags  # the values the library's message names, said as their flags

        print(f"attnscope: error: {_one_line(as_flags(e))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as e:  # the measuring loop's Interrupted says what it saved; before it, nothing was
        return stop.interrupted(e, getattr(e, "what", None) or _not_yet(argv))
    except WriteError as e:  # a full disk after the work: the file and the cause, never a traceback
        print(f"attnscope: error: {_one_line(e)}", file=sys.stderr)
        return EXIT_WRITE
    except Exception as e:  # a bug must still end in one line, never a traceback
        if os.environ.get("ATTNSCOPE_DEBUG"):
            raise
        print(
            f"attnscope: internal error: {type(e).__name__}: {_one_line(e)} "
            "(set ATTNSCOPE_DEBUG=1 for the traceback, and please report it)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


def _one_line(e: BaseException | str) -> str:
    from attnscope.report.text.terminal import one_line  # a name in the message is printed as data

    return one_line(str(e))


# Commands that import no torch and leave no thread or process running once they return: after
# their output is flushed, the interpreter's teardown is skipped (freeing the ~10^5 objects of a
# model-scale trace one by one took ~30 ms of a 0.5 s analyze).
PURE_COMMANDS = frozenset({"analyze", "diff", "recommend", "report"})


def entry() -> None:
    """The console script: main(), then exit (at once for PURE_COMMANDS, their files closed and output flushed)."""
    stop.install()  # SIGINT, SIGTERM and SIGHUP end every command in one line from here on
    argv = sys.argv[1:]
    try:
        pure = _command_in(argv) in PURE_COMMANDS
        if pure:  # short runs over acyclic data: the cyclic GC's passes (29, ~5 ms, in an analyze) find nothing to free
            gc.disable()
        rc = main(argv)
    except KeyboardInterrupt as e:  # between two of main's own handlers
        rc, pure = stop.interrupted(e, _not_yet(argv)), False
    if pure:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except OSError:  # a closed pipe: nothing more can be said
            pass
        os._exit(rc)
    sys.exit(rc)


if __name__ == "__main__":
    entry()
