"""``attnscope run``: the case's flags, their checks, and the command (also what ``guess`` runs)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from attnscope.cli import stop
from attnscope.cli.flags import check_input_file, check_output_dir, check_output_file
from attnscope.core.arguments import UsageError, check_timeout, variant_names
from attnscope.core.files import check_outputs, check_trace_names

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
EXIT_INTERNAL = 70  # a bug, not bad input (sysexits' EX_SOFTWARE)
EXIT_WRITE = 74  # a file could not be written after the work was done: a full disk (sysexits' EX_IOERR)


class Parser(argparse.ArgumentParser):
    """argparse that reports a bad argument in one line (no usage block) and exits 2."""

    def error(self, message: str) -> Any:  # type: ignore[override]
        from attnscope.report.text.terminal import clean  # the message quotes what was typed

        self.exit(EXIT_USAGE, f"{self.prog}: error: {clean(message)} (see {self.prog} --help)\n")


# seconds per timer per variant when --budget is not given: a CPU's default study (six variants, one of them
# ~0.1 s a call) measures in ≤ 10 s of 2 cores with 0.2 (benchmarks/first_result.py); a GPU call is µs long
DEFAULT_BUDGET_S = {"cuda": 0.5, "cpu": 0.2}


def default_budget(device: str) -> float:
    return DEFAULT_BUDGET_S["cuda" if device.startswith("cuda") else "cpu"]


def _console(*, markup: bool = False) -> Any:
    """The terminal's Console: its width (COLUMNS where set; tables fit it, report/text/table.py), names printed
    as data (no markup, control characters removed: report/text/terminal.py).  ``markup``: for text whose every
    name is escaped with rich.markup.escape (the tour's)."""
    from attnscope.report.text.terminal import console

    return console(markup=markup)


def _add_case_args(p: argparse.ArgumentParser) -> None:
    """The case's flags, from the table of its fields (attnscope.core.case)."""
    from attnscope.cli.flags import add_flags

    add_flags(p.add_argument_group("case (defaults depend on the device)"), "run")


def _case_from(args: argparse.Namespace) -> Any:
    from attnscope.core.cases import case_from_args
    from attnscope.measure.env import check_device, default_device

    return case_from_args(args, check_device(args.device) or default_device())


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
    from attnscope.api.user_mods import check_user_mods, with_user_variants
    from attnscope.variants import resolve

    check_run_args(args)
    case = _case_from(args)
    if getattr(args, "steps", None):
        if not case.is_serving:
            raise UsageError("--steps grows a serving cache: give --page-size and/or --kv-lens (docs/serving.md)")
        if case.seq_q != 1:
            raise UsageError(f"--steps decodes one new token per sequence per step: give --seq 1, not {case.seq_q}")
    chosen = [v.name for v in resolve(with_user_variants(case, args.variants))]  # unknown names fail first
    check_case_fits(case, chosen, explicit=args.variants is not None)
    _check_html(args)
    outputs = [("--json", args.json), ("--html", getattr(args, "html", None)), ("--save", getattr(args, "save", None))]
    check_trace_names(args.trace_dir, (f"{n}.json" for n in chosen), outputs)
    preds = None
    if getattr(args, "guess", None):  # read and checked before any torch work
        from attnscope.api.guesses import load_predictions
        from attnscope.variants import REGISTRY

        preds = load_predictions(args.guess, chosen, set(REGISTRY))
    # last: this imports the user's file, which runs its code
    case, _ = check_user_mods(case, mask_given=args.mask is not None or args.causal is not None)
    return case, chosen, preds


def cmd_run(args: argparse.Namespace) -> int:
    """`attnscope run`: parse and check, call the API, render."""
    case, _, preds = prepare_run(args)
    return run_and_render(args, case, preds)


def run_and_render(args: argparse.Namespace, case: Any, preds: Any) -> int:
    """Call ``attnscope.api.run`` with the progress shown and each row saved, then render (run and guess)."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from attnscope.api import run
    from attnscope.api.running import partial_document
    from attnscope.core.files import WriteError
    from attnscope.core.types import Result
    from attnscope.document.schema import write_atomic

    console = _console()
    done: list[Result] = []
    saved = [0]  # variants in the JSON as last written (a full disk stops the rewrites, never the run)

    def save(r: Result) -> None:
        done.append(r)
        if args.json:  # rewritten atomically after every variant: a crash never loses finished results
            try:
                write_atomic(args.json, partial_document(case, done))
                saved[0] = len(done)
            except WriteError:
                pass  # said after the table, when the whole document is written (or fails) once more

    old = stop.install()  # SIGTERM (`timeout`, job schedulers), SIGHUP (a closed terminal) save as Ctrl-C does
    try:
        with Progress(
            SpinnerColumn(),
            TextColumn("{task.description}", markup=False),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        ) as prog:
            task = prog.add_task(f"attnscope run: {case.label()}")
            doc = run(
                case,
                args.variants,
                executor=args.executor,
                timeout_s=args.timeout,
                ncu=getattr(args, "ncu", False),
                predictions=preds,
                on_result=save,
                on_start=lambda name: prog.update(task, description=f"{case.label()}: {name}"),
                on_note=lambda text: console.print(text, style="yellow"),
                flush_l2=args.flush_l2,
                timing_budget_s=args.budget if args.budget is not None else default_budget(case.device),
                trace_dir=Path(args.trace_dir) if args.trace_dir else None,
                measure_peak=not args.no_peak,
                steps=getattr(args, "steps", None) or 0,
                bucket=getattr(args, "bucket", 256),
            )
    except KeyboardInterrupt as e:
        stop.restore(old)
        if args.json and saved[0]:
            what = f"{saved[0]} finished variant(s) saved in {args.json} (marked partial)"
        elif args.json and done:
            what = f"{len(done)} finished variant(s) not saved: {args.json} could not be written"
        elif not done:
            what = "nothing measured yet"  # and no file written: --json is written after the first variant
        else:
            what = f"{len(done)} finished variant(s) not saved (no --json was given)"
        return stop.interrupted(e, what)
    stop.restore(old)
    return render_run(args, case, doc, console, saved=saved[0])


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
    from attnscope.measure import host
    from attnscope.workloads.sensitivity import summary_line

    checked = summary_line(next((r.get("modifier_checks") for r in doc["results"] if r.get("modifier_checks")), None))
    if checked:
        console.print(f"  {checked}", style="yellow" if "BLIND" in checked else None, highlight=False, markup=False)
    from attnscope.report.text.serving import decode_loop_lines

    for line in decode_loop_lines(dict(doc)):
        console.print(f"  {line}", highlight=False, markup=False)
    busy = host.line(doc.get("host") or {})
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


ASSETS_HELP = (
    "write plotly once into DIR (shared by every page that names the same DIR) and link it, instead of inlining it: "
    "a page of ~0.1 MB instead of ~4.8 MB; it then opens only beside DIR (see docs/report.md)"
)


def add_assets_arg(parser: Any, with_html: bool = True) -> None:
    """``--assets DIR`` for a command that writes an HTML page (with ``--html`` where the page is optional)."""
    parser.add_argument("--assets", metavar="DIR", help=("with --html: " if with_html else "") + ASSETS_HELP)


def _check_html(args: argparse.Namespace) -> None:
    """--html needs plotly and a writable path, --assets a page and a folder it can fill: say so before any work,
    not after a long run."""
    check_assets(args)
    if getattr(args, "html", None):
        from attnscope.report.html.page import require_plotly

        check_output_file(args.html, "--html")
        require_plotly()


def check_assets(args: argparse.Namespace) -> None:
    """``--assets`` names a folder that can be made and written, and comes with ``--html``."""
    assets = getattr(args, "assets", None)
    if assets is None:
        return
    if not getattr(args, "html", None):
        raise UsageError("--assets holds the plotly of an HTML page: give --html PATH too")
    check_output_dir(assets, "--assets")


def write_outputs(args: argparse.Namespace, doc: dict[str, Any]) -> dict[str, str]:
    """The document to --json, then the page to --html, each tried whatever became of the other; what could not be
    written: {flag: why} (a WriteError's one line), said by :func:`say_unwritten` after the study is printed."""
    from attnscope.core.files import WriteError
    from attnscope.document.schema import write_atomic

    unwritten: dict[str, str] = {}
    if getattr(args, "json", None):
        try:
            write_atomic(args.json, doc)
        except WriteError as e:
            unwritten["--json"] = str(e)
    try:
        _write_html(args, doc)
    except WriteError as e:
        unwritten["--html"] = str(e)
    return unwritten


def traces_not_kept(rows: list[dict[str, Any]], trace_dir: str) -> dict[str, str]:
    """--trace-dir's rows whose trace could not be moved there (the row itself measured): their note."""
    notes = [n for r in rows for n in (r.get("run_notes") or r.get("notes") or [])]
    lost = [n for n in notes if str(n).startswith("trace not kept")]
    if not lost:
        return {}
    return {"--trace-dir": f"{len(lost)} trace(s) not kept in {trace_dir}: {str(lost[0]).split(': ', 1)[-1]}"}


def say_unwritten(unwritten: dict[str, str]) -> int:
    """One line per file not written (the measurement above is kept in the others, or only on screen); exit 74."""
    import sys

    for why in unwritten.values():
        print(f"attnscope: error: {why}", file=sys.stderr)
    return EXIT_WRITE


def _write_html(args: argparse.Namespace, doc: Any) -> None:
    """After the JSON: a failing page never costs the results."""
    if getattr(args, "html", None):
        from attnscope.api.report import write_html

        write_html(doc, args.html, assets=getattr(args, "assets", None))
