"""Guess first, then profile: the predictions file for `run --guess`, and the interactive `attnscope guess`.

The interactive part asks a few questions about the case *before* anything runs, writes the
answers as a predictions file (the same TOML `run --guess` reads), then runs and shows the
mismatches.  ``ask`` takes its input and output functions as arguments, so tests drive it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from attnscope.analysis.predict import BACKENDS, PredictionError, to_toml
from attnscope.api.guesses import load_predictions, strict_failure, with_verdicts  # noqa: F401
from attnscope.core.types import Case, Prediction

MAX_TRIES = 3


# ---- interactive -------------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    variant: str
    kind: str
    prompt: str
    answer: str  # count | bool | ratio | range | choice
    other: str | None = None  # the variant a ratio compares with


def questions(case: Case, variants: list[str]) -> list[Question]:
    """A few questions the study teaches to ask before profiling, for the variants this run measures."""
    gpu = case.device.startswith("cuda")
    unit = "kernels" if gpu else "leaf compute ops"
    half = case.dtype in ("bf16", "fp16")
    choices = "flash, efficient, cudnn or math" if gpu else "flash or math"
    qs = [
        Question("naive", "kernels", f"How many {unit} will naive launch per call? (n or lo-hi)", "count"),
        Question("naive", "hidden_copy", "Will naive copy a full tensor behind your back? (y/n)", "bool"),
        Question("sdpa_math", "kernels", f"How many {unit} will sdpa_math launch per call? (n or lo-hi)", "count"),
        Question(
            "sdpa_math",
            "slower_than",
            "sdpa_math is slower than naive by at least what ratio? (e.g. 1.5)",
            "ratio",
            "naive",
        ),
        Question("sdpa_default", "backend", f"Which backend will default SDPA pick? ({choices})", "choice"),
        Question(
            "sdpa_flash",
            "faster_than",
            "sdpa_flash is faster than naive by at least what ratio? (e.g. 5)",
            "ratio",
            "naive",
        ),
    ]
    if half:
        qs.insert(4, Question("sdpa_math", "upcast", f"Will sdpa_math upcast {case.dtype} to fp32? (y/n)", "bool"))
    if gpu:
        qs.append(
            Question(
                "sdpa_flash",
                "occupancy_pct",
                "Theoretical occupancy of sdpa_flash's kernel, in % (lo-hi, e.g. 25-50)?",
                "range",
            )
        )
    return [q for q in qs if q.variant in variants and (q.other is None or q.other in variants)]


def _number(s: str) -> float:
    v = float(s)
    if v < 0:
        raise ValueError("negative")
    return v


def parse_answer(q: Question, text: str) -> Any:
    """The prediction value for one answer; raises ValueError with a hint when it does not parse."""
    s = text.strip().lower().replace("..", "-").replace(" to ", "-").replace(" ", "")
    if q.answer == "bool":
        if s in ("y", "yes", "true"):
            return True
        if s in ("n", "no", "false"):
            return False
        raise ValueError("answer y or n")
    if q.answer == "choice":
        if s in BACKENDS:
            return s
        raise ValueError(f"answer one of {', '.join(BACKENDS)}")
    lo, sep, hi = s.partition("-")
    if q.answer == "count":
        if sep:
            return [int(lo), int(hi)] if int(lo) <= int(hi) else _bad("lo must be <= hi")
        return int(s)
    if q.answer == "range":
        if not sep:
            raise ValueError("give a range lo-hi")
        return [_number(lo), _number(hi)] if _number(lo) <= _number(hi) else _bad("lo must be <= hi")
    by: Any = [_number(lo), _number(hi)] if sep else _number(s)
    if (by[0] if isinstance(by, list) else by) <= 0:
        raise ValueError("a ratio is > 0")
    return {"variant": q.other, "by": by}


def _bad(msg: str) -> Any:
    raise ValueError(msg)


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
                out.append(Prediction(q.variant, q.kind, parse_answer(q, text), note="asked by attnscope guess"))
                break
            except ValueError as e:
                print_fn(f"    could not read {text.strip()!r}: {e}")
    return out


def cmd_guess(args: Any) -> int:
    """`attnscope guess`: ask first, then run through the API as `attnscope run` does, the answers as predictions."""
    from attnscope.cli.run import prepare_run, run_and_render

    case, chosen, _ = prepare_run(args)  # paths, names and the case's size before the questions, not after them
    from attnscope.report.text.terminal import clean

    print(clean(f"attnscope guess — {case.label()} — variants: {', '.join(chosen)}"))
    preds = ask(questions(case, chosen), input, print)
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
    return run_and_render(args, case, preds)
