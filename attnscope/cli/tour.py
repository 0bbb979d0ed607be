"""`attnscope tour`: the study replayed on this machine, a guess before every reveal.

Answers come from the terminal (rich prompts), from ``--answers FILE`` (TOML: ``[[predict]]`` blocks as in
``run --guess`` files, plus a ``[tour]`` table keyed by question id for the questions ``--guess`` has no
key for) or from ``--auto`` (the study's own guesses).
"""

from __future__ import annotations

import argparse
import os
import tomllib
from pathlib import Path
from typing import Any

from attnscope.cli.flags import check_output_file
from attnscope.core.arguments import UsageError

SIZES = ("gpu", "cpu", "tiny")


def add_parser(sub: Any, text: str) -> None:
    t = sub.add_parser("tour", help=text)
    t.add_argument("--device", default=None, help="cpu or cuda[:N] (default: cuda if available, else cpu)")
    t.add_argument("--answers", metavar="FILE", help="answers as TOML ([[predict]] blocks and a [tour] table)")
    t.add_argument("--auto", action="store_true", help="answer with the study's own guesses")
    t.add_argument("--out", default="attnscope-tour.json", help="the transcript JSON (default attnscope-tour.json)")
    t.add_argument("--html", metavar="PATH", help="also write the transcript as a self-contained HTML page")
    t.add_argument("--resume", action="store_true", help="continue the transcript in --out")
    t.add_argument(
        "--size",
        choices=SIZES,
        default=os.environ.get("ATTNSCOPE_TOUR_SIZE") or None,
        help="case sizes: gpu (the study's), cpu (≤ 3 min on 2 cores), tiny (tests); default by device",
    )
    t.add_argument(
        "--model",
        metavar="CONFIG",
        help="an optional last step: your model (a preset, a config.json or a model type, as attnscope model takes)",
    )
    t.set_defaults(func=cmd_tour)


def _text(v: Any) -> str:
    """A TOML value as the text a person would type."""
    if isinstance(v, bool):
        return "y" if v else "n"
    if isinstance(v, list) and v and all(isinstance(x, str) for x in v):
        return ",".join(v)
    if isinstance(v, list) and len(v) == 2:
        return f"{v[0]}-{v[1]}"
    return str(v)


def _from_prediction(q: Any, p: Any) -> str:
    """A ``[[predict]]`` entry → the question's typed answer (faster_than turned round where asked as slower)."""
    if p.kind in ("faster_than", "slower_than"):
        by = p.expected["by"]
        if p.kind == q.predict[1]:
            return f"{by}+" if not isinstance(by, list) else f"{by[0]}-{by[1]}"
        if not isinstance(by, list):
            return f"0.001-{1 / by:.4g}"
        return f"{1 / by[1]:.4g}-{1 / by[0]:.4g}"
    return _text(p.expected)


def _toml(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml(x)}" for k, x in v.items()) + " }"
    return repr(v)


def _predict_toml(blocks: Any) -> str:
    """The ``[[predict]]`` blocks alone, as TOML again, for ``run --guess``'s own reader and its checks."""
    if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
        return "predict = 1"  # the reader says what is wrong
    return "\n".join("[[predict]]\n" + "\n".join(f'"{k}" = {_toml(v)}' for k, v in b.items()) for b in blocks)


def load_answers(path: str) -> dict[str, str]:
    """question id → typed answer, from an answers file; PredictionError/UsageError name what is wrong."""
    from attnscope.api.checks import known_variants
    from attnscope.api.guesses import parse_predictions
    from attnscope.tour.model_step import MODEL_STEP
    from attnscope.tour.steps import STEPS

    p = Path(path)
    try:
        doc = tomllib.loads(p.read_text())
    except OSError as e:
        raise UsageError(f"--answers {p}: cannot read ({e.strerror})") from None
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"--answers {p}: not valid TOML ({e})") from None
    except UnicodeDecodeError:
        raise UsageError(f"--answers {p}: not valid TOML (not UTF-8 text)") from None
    except RecursionError:
        raise UsageError(f"--answers {p}: not valid TOML (nested too deeply to read)") from None
    extra = set(doc) - {"predict", "tour"}
    if extra:
        raise UsageError(f"--answers {p}: unknown top-level key(s) {', '.join(sorted(extra))}")
    questions = {q.id: q for s in (*STEPS, MODEL_STEP) for q in s.questions}
    out: dict[str, str] = {}
    preds = (
        parse_predictions(_predict_toml(doc["predict"]), known_variants(), source=str(p)) if "predict" in doc else []
    )
    for pred in preds:
        for q in questions.values():
            if not q.predict or q.predict[0] != pred.variant:
                continue
            other = pred.expected.get("variant") if isinstance(pred.expected, dict) else None
            same = pred.kind == q.predict[1] or {pred.kind, q.predict[1]} == {"faster_than", "slower_than"}
            if same and other == q.predict[2]:
                out[q.id] = _from_prediction(q, pred)
    table = doc.get("tour") or {}
    if not isinstance(table, dict):
        raise UsageError(f"--answers {p}: [tour] must be a table of question id = answer")
    for k, v in table.items():
        if k not in questions:
            raise UsageError(f"--answers {p}: [tour] {k}: no such question; known: {', '.join(questions)}")
        out[k] = _text(v)
    return out


def hanging_say(console: Any) -> Any:
    """The tour's ``say``: a line of markup whose continuation, where the terminal is narrower than the line, goes
    under its own text (after its leading spaces), not back at column 0."""
    from attnscope.report.text.terminal import indented

    def say(line: str) -> None:
        body = line.lstrip("\n")
        for _ in range(len(line) - len(body)):  # a step's heading starts with a blank line
            console.print()
        indented(console, body, markup=True)

    return say


def _interactive(console: Any) -> Any:
    from rich.markup import escape

    from attnscope.cli.common import answer_reader
    from attnscope.core.answers import AnswerError, read_answer

    # answers piped in: each printed after its prompt (as data: the console reads markup)
    typed = answer_reader(console.input, lambda text: console.print(text, markup=False, highlight=False))

    def ask(step: Any, q: Any, items: tuple[str, ...]) -> tuple[str | None, str]:
        hint = f" [{', '.join(items)}]" if q.answer == "ranking" or q.judge == "winner" else ""
        for _ in range(3):
            try:
                text = typed(f"  [bold]?[/bold] {escape(q.prompt)}{escape(hint)} ")  # [a, b]: no tag
            except EOFError:
                return None, "skipped"
            if not text.strip():
                return None, "skipped"
            try:
                read_answer(q, text, items)
                return text.strip(), "typed"
            except AnswerError as e:
                console.print(f"    could not read {text.strip()!r}: {e}", markup=False)  # the user's own text
        return None, "skipped"

    return ask


def _answer_fn(args: argparse.Namespace, console: Any, gpu: bool) -> Any:
    from attnscope.core.answers import AnswerError, read_answer
    from attnscope.tour.model_step import MODEL_STEP
    from attnscope.tour.steps import STEPS, study_answer, variants_for

    if args.auto:
        return lambda step, q, items: (str(study_answer(q, gpu)), "study")
    if not args.answers:
        return _interactive(console)
    answers = load_answers(args.answers)
    for s in (*STEPS, MODEL_STEP):  # every answer is read before anything is measured
        for q in s.questions:
            if q.id in answers:
                try:
                    read_answer(q, answers[q.id], variants_for(s, gpu))
                except AnswerError as e:
                    raise UsageError(f"--answers {args.answers}: {q.id} = {answers[q.id]!r}: {e}") from None
    return lambda step, q, items: (answers.get(q.id), "file" if q.id in answers else "skipped")


def cmd_tour(args: argparse.Namespace) -> int:
    from attnscope.cli import common
    from attnscope.tour.reveal import show_end
    from attnscope.tour.session import Session, load_transcript

    if args.auto and args.answers:
        raise UsageError("--auto and --answers are exclusive: the study's guesses or yours")
    check_output_file(args.out, "--out")
    if args.html:
        from attnscope.report.html.page import require_plotly

        check_output_file(args.html, "--html")
        require_plotly()
    from attnscope.core.files import check_outputs

    check_outputs([("--answers", args.answers)], [("--out", args.out), ("--html", args.html)])
    resume = load_transcript(Path(args.out)) if args.resume and Path(args.out).exists() else None
    if args.resume and resume is None:
        raise UsageError(f"--resume: {args.out} does not exist (nothing to resume)")
    if not args.resume and Path(args.out).exists() and Path(args.out).stat().st_size > 0:
        raise UsageError(f"--out {args.out} already exists: pass --resume to continue it, or another --out")
    from attnscope.api.checks import device as checked_device

    given = args.device or (resume or {}).get("device")
    device = str(given) if given else checked_device(None)  # the default: cuda where torch sees a GPU, else cpu
    checked_device(device)  # cpu or cuda[:N] that torch can reach (an index past the GPUs here refused)
    gpu = device.startswith("cuda")
    size: Any = args.size or (resume or {}).get("size") or ("gpu" if gpu else "cpu")
    model = args.model or (resume or {}).get("model")
    if model:  # the config is checked now, not after the other steps
        from attnscope.api.modeling import check_config

        check_config(model)
    from rich.markup import escape

    console = common.console(markup=True)  # the tour's text escapes every name it prints
    answer = _answer_fn(args, console, gpu)
    console.print(
        "[bold]attnscope tour[/bold]: the attention study replayed here. Guess first, then look for what does "
        f"not match. Device {escape(device)}, {size} sizes; the transcript is saved to {escape(args.out)} after every "
        "step."
    )
    say = hanging_say(console)
    sess = Session(device, size, answer, Path(args.out), say, model=model)
    sess.start(resume)
    sess.transcript["model"] = model
    from attnscope.cli import stop

    old = stop.install()  # SIGTERM and SIGHUP save the steps done, as Ctrl-C does
    try:
        transcript = sess.run()
    except KeyboardInterrupt as e:
        stop.restore(old)
        if not Path(args.out).exists():  # stopped inside the first step: nothing saved, no file to name
            return stop.interrupted(e, "nothing measured yet")
        return stop.interrupted(e, f"the steps done are saved in {args.out}; continue with --resume")
    stop.restore(old)
    show_end(transcript, say)
    from attnscope.report.text.terminal import host_caveat

    host_caveat(console, transcript.get("host"))
    console.print(f"  transcript written to {args.out}", markup=False)
    if args.html:
        from attnscope.report.html.tour import write_tour_html

        write_tour_html(transcript, args.html)
        console.print(f"  HTML page written to {args.html}", markup=False)
    return 0
