"""``attnscope run``: the case's flags, their checks, and the command (also what ``guess`` runs)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from attnscope.cli.common import EXIT_FAIL, EXIT_OK, check_html, console, say_unwritten, traces_not_kept, write_outputs
from attnscope.core.arguments import (
    UsageError,
    check_input_file,
    check_output_dir,
    check_output_file,
    check_timeout,
    variant_names,
)
from attnscope.core.files import check_outputs, check_trace_names

# seconds per timer per variant when --budget is not given: a CPU's default study (six variants, one of them
# ~0.1 s a call) measures in ≤ 10 s of 2 cores with 0.2 (benchmarks/first_result.py); a GPU call is µs long
DEFAULT_BUDGET_S = {"cuda": 0.5, "cpu": 0.2}


def default_budget(device: str) -> float:
    return DEFAULT_BUDGET_S["cuda" if device.startswith("cuda") else "cpu"]


def _add_case_args(p: argparse.ArgumentParser) -> None:
    """The case's flags, from the table of its fields (attnscope.core.case)."""
    from attnscope.core.case import add_flags

    add_flags(p.add_argument_group("case (defaults depend on the device)"), "run")


def _case_from(args: argparse.Namespace) -> Any:
    from attnscope.api.checks import device
    from attnscope.core.cases import case_from_args

    return case_from_args(args, device(args.device))


def check_run_args(args: argparse.Namespace) -> None:
    """Everything about `run`/`guess` that can be wrong before a tensor exists."""
    if args.variants is not None:
        names = variant_names(args.variants)
        if "all" in names and len(names) > 1:
            raise UsageError("--variants: 'all' stands alone")
    if args.strict and args.command == "run" and not args.guess:
        raise UsageError("--strict judges predictions: give them with --guess FILE (or use attnscope guess)")
    check_timeout(args.executor, args.timeout)
    if getattr(args, "guess", None):
        check_input_file(args.guess, "--guess")
    check_output_file(args.json, "--json")
    check_output_dir(args.trace_dir, "--trace-dir")
    check_output_file(getattr(args, "save", None), "--save")
    check_outputs(
        [("--guess", getattr(args, "guess", None)), *user_code_files(args)],
        [("--json", args.json), ("--html", getattr(args, "html", None)), ("--save", getattr(args, "save", None))],
    )


def user_code_files(args: argparse.Namespace) -> list[tuple[str, str | None]]:
    """The files of ``--mask-mod``/``--score-mod FILE.py:FN``: inputs no output may replace."""
    given = (("--mask-mod", getattr(args, "mask_mod", None)), ("--score-mod", getattr(args, "score_mod", None)))
    return [(flag, spec.rsplit(":", 1)[0]) for flag, spec in given if spec]


def check_case_fits(case: Any, names: list[str], explicit: bool) -> None:
    """:func:`attnscope.api.running.check_case_fits`, imported when a command runs (the API's package is heavy)."""
    from attnscope.api.running import check_case_fits as fits

    fits(case, names, explicit)


def prepare_run(args: argparse.Namespace) -> tuple[Any, list[str], Any]:
    """The checked case, the chosen variants' names and the predictions of ``--guess``: everything a run refuses,
    refused before any tensor.  The user's ``--mask-mod`` / ``--score-mod`` file is imported (its code runs) last,
    only once every other check has passed."""
    from attnscope.api.checks import variant_names as chosen_names
    from attnscope.api.user_case import check_user_mods, with_user_variants

    check_run_args(args)
    case = _case_from(args)
    if getattr(args, "steps", None):
        if not case.is_serving:
            raise UsageError("--steps grows a serving cache: give --page-size and/or --kv-lens (docs/serving.md)")
        if case.seq_q != 1:
            raise UsageError(f"--steps decodes one new token per sequence per step: give --seq 1, not {case.seq_q}")
    chosen = chosen_names(with_user_variants(case, args.variants))  # unknown names fail first
    check_case_fits(case, chosen, explicit=args.variants is not None)
    check_html(args)
    outputs = [("--json", args.json), ("--html", getattr(args, "html", None)), ("--save", getattr(args, "save", None))]
    check_trace_names(args.trace_dir, (f"{n}.json" for n in chosen), outputs)
    preds = None
    if getattr(args, "guess", None):  # read and checked before any torch work
        from attnscope.api.checks import known_variants
        from attnscope.api.guesses import load_predictions

        preds = load_predictions(args.guess, chosen, known_variants())
    # last: this imports the user's file, which runs its code
    case, _ = check_user_mods(case, mask_given=args.mask is not None or args.causal is not None)
    return case, chosen, preds


def cmd_run(args: argparse.Namespace) -> int:
    """`attnscope run`: parse and check, call the API, render."""
    case, _, preds = prepare_run(args)
    return run_and_render(args, case, preds)


def run_and_render(args: argparse.Namespace, case: Any, preds: Any) -> int:
    """Call ``attnscope.api.run`` with the progress shown and each row saved to --json as it comes, then render
    (run and guess).  A stop saves and is said by the command line's handler (attnscope.api.campaign.Interrupted)."""
    from attnscope.api import run
    from attnscope.cli.common import Progress, stopping

    out = console()
    with stopping(), Progress(case.label(), bar=False, lines=False) as bar:
        doc = run(
            case,
            args.variants,
            executor=args.executor,
            timeout_s=args.timeout,
            ncu=getattr(args, "ncu", False),
            predictions=preds,
            on_event=bar,
            on_note=lambda text: out.print(text, style="yellow"),
            partial_to=args.json,
            flush_l2=args.flush_l2,
            timing_budget_s=args.budget if args.budget is not None else default_budget(case.device),
            trace_dir=Path(args.trace_dir) if args.trace_dir else None,
            measure_peak=not args.no_peak,
            steps=getattr(args, "steps", None) or 0,
            bucket=getattr(args, "bucket", 256),
        )
    return render_run(args, case, doc, out, saved=doc.partial_saved)


def render_run(args: argparse.Namespace, case: Any, doc: Any, console: Any, saved: int = 0) -> int:
    """Write the JSON and HTML, print the study, and the exit status (--strict).  A file that cannot be written (a
    full disk) costs neither the other file nor the printed study: it is said after the study, exit 74."""
    from attnscope.report.text.table import render

    unwritten = write_outputs(args, dict(doc))
    if "--json" in unwritten and saved:
        unwritten["--json"] += f"; it holds the {saved} variant(s) written before (marked partial)"
    env = doc.env
    title = f"attnscope run — {case.label()} — {env.device_name} — torch {env.torch}" + (
        f", CUDA {env.cuda}, cuDNN {env.cudnn}" if env.cuda and case.device != "cpu" else ""
    )
    render(dict(doc), console, kernels=args.kernels, title=title, verbose=getattr(args, "verbose", False))
    from attnscope.api.checks import modifier_line
    from attnscope.core.host_line import host_line

    checked = modifier_line(doc["results"])
    if checked:
        console.print(f"  {checked}", style="yellow" if "BLIND" in checked else None, highlight=False, markup=False)
    from attnscope.report.text.serving import decode_loop_lines

    for line in decode_loop_lines(dict(doc)):
        console.print(f"  {line}", highlight=False, markup=False)
    busy = host_line(doc.get("host") or {})
    if busy:
        console.print(f"  {busy}", style="yellow", highlight=False, markup=False)
    if args.json and "--json" not in unwritten:
        console.print(f"  JSON written to {args.json}")
    if args.trace_dir:
        console.print(f"  traces (Perfetto / chrome://tracing) in {args.trace_dir}/")
        unwritten.update(traces_not_kept(doc["results"], args.trace_dir))
    if getattr(args, "html", None) and "--html" not in unwritten:
        console.print(f"  HTML report written to {args.html}")
    if unwritten:
        return say_unwritten(unwritten)
    if not any(r.get("status") == "ok" for r in doc["results"]):
        console.print("  nothing was measured: exit 1", style="bold red")
        for r in doc["results"]:
            console.print(f"    {r['variant']} {r['status']}: {r.get('reason')}", highlight=False, markup=False)
        return EXIT_FAIL
    if args.strict:
        from attnscope.api.guesses import strict_failure

        failed = strict_failure(doc)
        if failed:
            console.print(f"  {failed}: exit 1", style="bold red")
            return EXIT_FAIL
    return EXIT_OK
