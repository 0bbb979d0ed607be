"""Guess first, then profile: the predictions file for `run --guess`, and the interactive `attnscope guess`.

The interactive part asks a few questions about the case *before* anything runs, writes the
answers as a predictions file (the same TOML `run --guess` reads), then runs and shows the
mismatches.  ``ask`` takes its input and output functions as arguments, so tests drive it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from attnscope.api.guesses import BACKENDS, PredictionError, to_toml
from attnscope.core.answers import Answer, AnswerError, Question, read_answer
from attnscope.core.types import Case, Prediction

MAX_TRIES = 3


# ---- interactive -------------------------------------------------------------------------


def questions(case: Case, variants: list[str]) -> list[Question]:
    """A few questions the study teaches to ask before profiling, for the variants this run measures."""
    gpu = case.device.startswith("cuda")
    unit = "kernels" if gpu else "leaf compute ops"
    half = case.dtype in ("bf16", "fp16")
    choices = "flash, efficient, cudnn or math" if gpu else "flash or math"
    qs = [
        guess_question("naive", "kernels", f"How many {unit} will naive launch per call? (n or lo-hi)", "count"),
        guess_question("naive", "hidden_copy", "Will naive copy a full tensor behind your back? (y/n)", "yesno"),
        guess_question(
            "sdpa_math", "kernels", f"How many {unit} will sdpa_math launch per call? (n or lo-hi)", "count"
        ),
        guess_question(
            "sdpa_math",
            "slower_than",
            "sdpa_math is slower than naive by at least what ratio? (e.g. 1.5)",
            "at_least",
            "naive",
        ),
        guess_question("sdpa_default", "backend", f"Which backend will default SDPA pick? ({choices})", "choice"),
        guess_question(
            "sdpa_flash",
            "faster_than",
            "sdpa_flash is faster than naive by at least what ratio? (e.g. 5)",
            "at_least",
            "naive",
        ),
    ]
    if half:
        qs.insert(
            4, guess_question("sdpa_math", "upcast", f"Will sdpa_math upcast {case.dtype} to fp32? (y/n)", "yesno")
        )
    if gpu:
        qs.append(
            guess_question(
                "sdpa_flash",
                "occupancy_pct",
                "Theoretical occupancy of sdpa_flash's kernel, in % (lo-hi, e.g. 25-50)?",
                "range",
            )
        )
    return [q for q in qs if q.predict and all(v in variants for v in (q.predict[0], q.predict[2]) if v)]


def guess_question(variant: str, kind: str, prompt: str, answer: Answer, other: str | None = None) -> Question:
    """A question whose answer is the ``run --guess`` prediction (variant, kind[, other])."""
    choices = BACKENDS if answer == "choice" else ()
    return Question(f"{variant}_{kind}", prompt, answer=answer, predict=(variant, kind, other), choices=choices)


def prediction(q: Question, text: str) -> Prediction:
    """The prediction one typed answer is (a ratio names the variant it compares with); raises AnswerError."""
    assert q.predict is not None  # every question of :func:`questions` is a prediction
    variant, kind, other = q.predict
    value = read_answer(q, text)
    return Prediction(
        variant, kind, {"variant": other, "by": value} if other else value, note="asked by attnscope guess"
    )


def ask(qs: list[Question], input_fn: Callable[[str], str], print_fn: Callable[[str], None]) -> list[Prediction]:
    """Ask each question; an empty answer skips it, end of input stops asking."""
    print_fn("Guess first: write down what you expect before you look. An empty answer skips a question.")
    out: list[Prediction] = []
    for q in qs:
        for _ in range(MAX_TRIES):
            try:
                text = input_fn(f"  {q.prompt} ")
            except EOFError:
                print_fn("")
                return out
            if not text.strip():
                break
            try:
                out.append(prediction(q, text))
                break
            except AnswerError as e:
                print_fn(f"    could not read {text.strip()!r}: {e}")
    return out


def cmd_guess(args: Any) -> int:
    """`attnscope guess`: ask first, then run through the API as `attnscope run` does, the answers as predictions."""
    from attnscope.api.running import check_run, run_checked
    from attnscope.cli.run import measure_and_render, request_of
    from attnscope.core.files import check_trace_names

    checked = check_run(request_of(args))  # paths, names and the case's size before the questions, not after them
    case, chosen = checked.case, list(checked.variants)
    check_trace_names(args.trace_dir, (f"{n}.json" for n in chosen), [("--save", args.save)])
    from attnscope.report.text.terminal import clean

    print(clean(f"attnscope guess — {case.label()} — variants: {', '.join(chosen)}"))
    from attnscope.cli.common import answer_reader

    preds = ask(questions(case, chosen), answer_reader(input, print), print)  # piped answers: each after its prompt
    if not preds:
        print("No predictions given: running without verdicts.")
    elif args.save:
        from attnscope.core.files import os_error_text, write_atomic

        try:
            write_atomic(args.save, to_toml(preds))
        except OSError as e:
            raise PredictionError(f"--save {args.save}: cannot write: {os_error_text(e)}") from None
        print(f"Your {len(preds)} predictions are saved in {args.save} (reuse them with `attnscope run --guess`).")
    print("Now measuring…", flush=True)
    return measure_and_render(lambda **hooks: run_checked(checked, predictions=preds, **hooks), args)
