"""Guesses made before a run, checked against what it measured: the predictions file of
``run --guess`` read against the run's variants, verdicts added to the document, and what ``--strict``
fails on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attnscope.analysis.annotate import verdict_counts
from attnscope.analysis.predict import (
    BACKENDS,
    PredictionError,
    check_predictions,
    judge,
    kernel_accounting,
    noise_band,
    parse_predictions,
    to_toml,
)
from attnscope.analysis.rules.peers import timing_of
from attnscope.core.types import Prediction

# the predictions' vocabulary, for the command line and the tour (which import the API, not the analysis)
__all__ = [
    "BACKENDS",
    "PredictionError",
    "check_predictions",
    "judge",
    "kernel_accounting",
    "load_predictions",
    "noise_band",
    "parse_predictions",
    "strict_failure",
    "timing_of",
    "to_toml",
]


def load_predictions(path: str | Path, run_variants: list[str], known: set[str]) -> list[Prediction]:
    """Read and validate a predictions file against the variants this run will measure."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise PredictionError(f"{p}: cannot read ({e.strerror})") from None
    except UnicodeDecodeError:
        raise PredictionError(f"{p}: not valid TOML (not UTF-8 text)") from None
    preds = parse_predictions(text, known, source=str(p))
    needed = {x.variant for x in preds} | {
        x.expected["variant"] for x in preds if x.kind in ("faster_than", "slower_than")
    }
    missing = sorted(needed - set(run_variants))
    if missing:
        raise PredictionError(
            f"{p}: predictions name {', '.join(missing)}, which this run does not include; "
            f"add them to variants (running: {', '.join(run_variants)})",
            fields=("variants",),
        )
    return preds


def strict_failure(doc: dict[str, Any]) -> str | None:
    """Why `--strict` fails this run: a clear miss.  Verdicts inside the noise ("too close to call")
    and predictions nothing here could measure do not fail it: they would flap in CI."""
    c = verdict_counts(doc)
    if c["miss"]:
        return f"--strict: {c['miss']} clear miss(es) ({c['close']} too close to call, {c['unknown']} not measurable)"
    return None
