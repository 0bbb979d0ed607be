"""``attnscope run``: the flags read into one request (the checks that name flags on the way), one API call that
checks every value and measures, then what it measured rendered (also what ``guess`` does around its questions)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from attnscope.cli.common import EXIT_FAIL, EXIT_OK, Progress, console, say_unwritten, stopping
from attnscope.cli.flags import case_fields, check_paths
from attnscope.core.arguments import UsageError


def _add_case_args(p: argparse.ArgumentParser) -> None:
    """The case's flags, from the table of its fields (attnscope.core.case)."""
    from attnscope.cli.flags import add_flags

    add_flags(p.add_argument_group("case (defaults depend on the device)"), "run")


def request_of(args: argparse.Namespace) -> Any:
    """The flags of `run` or `guess` as one :class:`attnscope.api.running.RunRequest`, after the checks that are the
    command line's own: --strict's partner, and every path a flag names (each probed, then the output guard: the
    --guess file and the user's --mask-mod/--score-mod files are inputs no output may replace)."""
    from attnscope.api.running import RunRequest

    fields = case_fields(args)
    guess, save = getattr(args, "guess", None), getattr(args, "save", None)
    if args.strict and args.command == "run" and not guess:
        raise UsageError("--strict judges predictions: give them with --guess FILE (or use attnscope guess)")
    if getattr(args, "bucket", None) is not None and not getattr(args, "steps", None):
        raise UsageError("--bucket sizes the CUDA graphs of a decode loop: give it with --steps N, or leave it out")
    code = [(flag, fields[name].rsplit(":", 1)[0]) for flag, name in CODE_FLAGS if fields[name]]
    outputs = [("--json", args.json), ("--save", save)]
    check_paths(args, [("--guess", guess)], outputs, [("--trace-dir", args.trace_dir)], read_later=code)
    return RunRequest(
        case=fields,
        device=args.device,
        mask_given=args.mask is not None or args.causal is not None,  # --causal/--no-causal state a mask too
        variants=args.variants,
        guess=guess,
        json=args.json,
        html=args.html,
        assets=args.assets,
        trace_dir=args.trace_dir,
        executor=args.executor,
        timeout_s=args.timeout,
        ncu=args.ncu,
        flush_l2=args.flush_l2,
        timing_budget_s=args.budget,
        measure_peak=not args.no_peak,
        steps=getattr(args, "steps", None) or 0,  # guess has no --steps nor --bucket
        bucket=getattr(args, "bucket", None) or 256,
    )


# the flags naming a user's code file (FILE.py:FN) and the case's field each sets
CODE_FLAGS = (("--mask-mod", "mask_mod"), ("--score-mod", "score_mod"))


def cmd_run(args: argparse.Namespace) -> int:
    """`attnscope run`: the flags read into one request, one API call (every check, the measurement, the files),
    then the study rendered."""
    from attnscope import api

    request = request_of(args)
    return measure_and_render(lambda **hooks: api.run_request(request, **hooks), args)


def measure_and_render(measure: Callable[..., Any], args: argparse.Namespace) -> int:
    """How `run` and `guess` measure: ``measure(on_event=, on_note=)``, their one API call, under a spinner with the
    elapsed time (no bar, no line per variant), stopped by SIGTERM or SIGHUP as by Ctrl-C (:func:`stopping`), each
    note the API has for the user printed in yellow as it comes; then the study rendered (:func:`render_run`), whose
    exit status it returns."""
    out = console()
    with stopping(), Progress(bar=False, lines=False) as bar:
        doc = measure(on_event=bar, on_note=lambda text: out.print(text, style="yellow"))
    return render_run(doc, args, out)


# the request's fields that name what the API writes, as their flags (what was not written is said by its flag)
FILE_FLAGS = {"json": "--json", "html": "--html", "trace_dir": "--trace-dir"}


def render_run(doc: Any, args: argparse.Namespace, console: Any) -> int:
    """Print the study (:func:`attnscope.report.text.run.print_run`) and what was written, then the exit status:
    74 when a file could not be written (said after the study, which is never lost), 1 when nothing was measured or
    (--strict) a prediction was clearly missed."""
    from attnscope.api.guesses import strict_failure
    from attnscope.report.text.run import print_run

    print_run(dict(doc), console, kernels=args.kernels, verbose=args.verbose)
    unwritten = {FILE_FLAGS[k]: why for k, why in doc.unwritten.items()}
    if args.json and "--json" not in unwritten:
        console.print(f"  JSON written to {args.json}")
    if args.trace_dir:
        console.print(f"  traces (Perfetto / chrome://tracing) in {args.trace_dir}/")
    if args.html and "--html" not in unwritten:
        console.print(f"  HTML report written to {args.html}")
    if unwritten:
        return say_unwritten(unwritten)
    if not any(r.get("status") == "ok" for r in doc["results"]):
        console.print("  nothing was measured: exit 1", style="bold red")
        for r in doc["results"]:
            console.print(f"    {r['variant']} {r['status']}: {r.get('reason')}", highlight=False, markup=False)
        return EXIT_FAIL
    failed = strict_failure(doc) if args.strict else None
    if failed:
        console.print(f"  {failed}: exit 1", style="bold red")
        return EXIT_FAIL
    return EXIT_OK
