"""``attnscope run``: the case's flags, their checks, and the command (also what ``guess`` runs)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnscope.cli.common import EXIT_FAIL, EXIT_OK, check_html, console, say_unwritten, traces_not_kept, write_outputs
from attnscope.cli.flags import check_input_file, check_output_dir, check_output_file
from attnscope.core.arguments import UsageError, check_timeout, variant_names
from attnscope.core.files import check_outputs, check_trace_names

# seconds per timer per variant when --budget is not given: a CPU's default study (six variants, one of them
# ~0.1 s a call) measures in ≤ 10 s of 2 cores with 0.2 (benchmarks/first_result.py); a GPU call is µs long
DEFAULT_BUDGET_S = {"cuda": 0.5, "cpu": 0.2}


def default_budget(device: str) -> float:
    return DEFAULT_BUDGET_S["cuda" if device.startswith("cuda") else "cpu"]


def _add_case_args(p: argparse.ArgumentParser) -> None:
    """The case's flags, from the table of its fields (attnscope.core.case)."""
    from attnscope.cli.flags import add_flags

    add_flags(p.add_argument_group("case (defaults depend on the device)"), "run")


@dataclass(frozen=True)
class RunRequest:
    """What `run` or `guess` was asked, read from the flags in one place (:func:`request_of`): the case, built from
    the case's flags, and plain values.  Every check before work and the one ``attnscope.api.run`` call read this,
    never the parser's namespace."""

    command: str
    case: Any  # attnscope.Case
    mask_given: bool  # --mask or --causal given: a user's --mask-mod is then measured as stated
    variants: str | None = None
    guess: str | None = None
    strict: bool = False
    json: str | None = None
    html: str | None = None
    assets: str | None = None
    save: str | None = None
    trace_dir: str | None = None
    executor: str = "inline"
    timeout: float | None = None
    ncu: bool = False
    flush_l2: bool = False
    budget: float | None = None
    no_peak: bool = False
    steps: int | None = None
    bucket: int = 256
    kernels: bool = False
    verbose: bool = False
    mask_mod: str | None = None
    score_mod: str | None = None
    argv: tuple[str, ...] = ()


def request_of(args: argparse.Namespace) -> RunRequest:
    """The flags of `run` or `guess` as a :class:`RunRequest` (the case built on the one device parser's device)."""
    flags = {f: getattr(args, f, None) for f in RunRequest.__dataclass_fields__ if f not in ("case", "mask_given")}
    given = {k: v for k, v in flags.items() if v is not None}
    given["argv"] = tuple(given.get("argv", ()))
    mask_given = getattr(args, "mask", None) is not None or getattr(args, "causal", None) is not None
    return RunRequest(case=_case_from(args), mask_given=mask_given, **given)


def _case_from(args: argparse.Namespace) -> Any:
    from attnscope.api.checks import device
    from attnscope.core.cases import case_from_args

    return case_from_args(args, device(args.device))


def check_run_args(req: RunRequest) -> None:
    """Everything about `run`/`guess` that can be wrong before a tensor exists."""
    if req.variants is not None:
        names = variant_names(req.variants)
        if "all" in names and len(names) > 1:
            raise UsageError("--variants: 'all' stands alone")
    if req.strict and req.command == "run" and not req.guess:
        raise UsageError("--strict judges predictions: give them with --guess FILE (or use attnscope guess)")
    check_timeout(req.executor, req.timeout)
    if req.guess:
        check_input_file(req.guess, "--guess")
    check_output_file(req.json, "--json")
    check_output_dir(req.trace_dir, "--trace-dir")
    check_output_file(req.save, "--save")
    check_outputs(
        [("--guess", req.guess), *user_code_files(req)],
        [("--json", req.json), ("--html", req.html), ("--save", req.save)],
    )


def user_code_files(req: RunRequest) -> list[tuple[str, str | None]]:
    """The files of ``--mask-mod``/``--score-mod FILE.py:FN``: inputs no output may replace."""
    given = (("--mask-mod", req.mask_mod), ("--score-mod", req.score_mod))
    return [(flag, spec.rsplit(":", 1)[0]) for flag, spec in given if spec]


def check_case_fits(case: Any, names: list[str], explicit: bool) -> None:
    """:func:`attnscope.api.running.check_case_fits`, imported when a command runs (the API's package is heavy)."""
    from attnscope.api.running import check_case_fits as fits

    fits(case, names, explicit)


def prepare_run(req: RunRequest) -> tuple[Any, list[str], Any]:
    """The checked case, the chosen variants' names and the predictions of ``--guess``: everything a run refuses,
    refused before any tensor.  The user's ``--mask-mod`` / ``--score-mod`` file is imported (its code runs) last,
    only once every other check has passed."""
    from attnscope.api.checks import variant_names as chosen_names
    from attnscope.api.user_case import check_user_mods, with_user_variants

    check_run_args(req)
    case = req.case
    if req.steps:
        if not case.is_serving:
            raise UsageError("--steps grows a serving cache: give --page-size and/or --kv-lens (docs/serving.md)")
        if case.seq_q != 1:
            raise UsageError(f"--steps decodes one new token per sequence per step: give --seq 1, not {case.seq_q}")
    chosen = chosen_names(with_user_variants(case, req.variants))  # unknown names fail first
    check_case_fits(case, chosen, explicit=req.variants is not None)
    check_html(req)
    outputs = [("--json", req.json), ("--html", req.html), ("--save", req.save)]
    check_trace_names(req.trace_dir, (f"{n}.json" for n in chosen), outputs)
    preds = None
    if req.guess:  # read and checked before any torch work
        from attnscope.api.checks import known_variants
        from attnscope.api.guesses import load_predictions

        preds = load_predictions(req.guess, chosen, known_variants())
    # last: this imports the user's file, which runs its code
    case, _ = check_user_mods(case, mask_given=req.mask_given)
    return case, chosen, preds


def cmd_run(args: argparse.Namespace) -> int:
    """`attnscope run`: the flags read into one request, checked, one API call, rendered."""
    request = request_of(args)
    case, _, preds = prepare_run(request)
    return run_and_render(request, case, preds)


def run_and_render(req: RunRequest, case: Any, preds: Any) -> int:
    """Call ``attnscope.api.run`` with the progress shown and each row saved to --json as it comes, then render
    (run and guess).  A stop saves and is said by the command line's handler (attnscope.api.campaign.Interrupted)."""
    from attnscope.api import run
    from attnscope.cli.common import Progress, stopping

    out = console()
    with stopping(), Progress(case.label(), bar=False, lines=False) as bar:
        doc = run(
            case,
            req.variants,
            executor=req.executor,
            timeout_s=req.timeout,
            ncu=req.ncu,
            predictions=preds,
            on_event=bar,
            on_note=lambda text: out.print(text, style="yellow"),
            partial_to=req.json,
            flush_l2=req.flush_l2,
            timing_budget_s=req.budget if req.budget is not None else default_budget(case.device),
            trace_dir=Path(req.trace_dir) if req.trace_dir else None,
            measure_peak=not req.no_peak,
            steps=req.steps or 0,
            bucket=req.bucket,
        )
    return render_run(req, case, doc, out, saved=doc.partial_saved)


def render_run(req: RunRequest, case: Any, doc: Any, console: Any, saved: int = 0) -> int:
    """Write the JSON and HTML, print the study, and the exit status (--strict).  A file that cannot be written (a
    full disk) costs neither the other file nor the printed study: it is said after the study, exit 74."""
    from attnscope.report.text.table import render

    unwritten = write_outputs(req, dict(doc))
    if "--json" in unwritten and saved:
        unwritten["--json"] += f"; it holds the {saved} variant(s) written before (marked partial)"
    env = doc.env
    title = f"attnscope run — {case.label()} — {env.device_name} — torch {env.torch}" + (
        f", CUDA {env.cuda}, cuDNN {env.cudnn}" if env.cuda and case.device != "cpu" else ""
    )
    render(dict(doc), console, kernels=req.kernels, title=title, verbose=req.verbose)
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
    if req.json and "--json" not in unwritten:
        console.print(f"  JSON written to {req.json}")
    if req.trace_dir:
        console.print(f"  traces (Perfetto / chrome://tracing) in {req.trace_dir}/")
        unwritten.update(traces_not_kept(doc["results"], req.trace_dir))
    if req.html and "--html" not in unwritten:
        console.print(f"  HTML report written to {req.html}")
    if unwritten:
        return say_unwritten(unwritten)
    if not any(r.get("status") == "ok" for r in doc["results"]):
        console.print("  nothing was measured: exit 1", style="bold red")
        for r in doc["results"]:
            console.print(f"    {r['variant']} {r['status']}: {r.get('reason')}", highlight=False, markup=False)
        return EXIT_FAIL
    if req.strict:
        from attnscope.api.guesses import strict_failure

        failed = strict_failure(doc)
        if failed:
            console.print(f"  {failed}: exit 1", style="bold red")
            return EXIT_FAIL
    return EXIT_OK
