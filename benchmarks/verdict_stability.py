"""Run one guess file N times on this (busy) CPU and count verdict flips, old rule against new.

    python benchmarks/verdict_stability.py [N] [GUESS_FILE]

The old rule judged a timed prediction by its median alone (hit or miss); the new one judges its
noise band (quartiles and fastest sample, at least ±10% on a CPU) and says "too close to call" inside it.  Both are
computed from the same runs' JSON, so the difference is the rule, not the load.  Prints markdown.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from attnscope.analysis.predict import matches
from attnscope.cli.main import main


def old_outcome(v: dict) -> str:
    if v["outcome"] == "unknown":
        return "unknown"
    p = v["prediction"]
    return "hit" if matches(p["expected"], v["measured"], p["kind"]) else "miss"


def main_(n: int, guess: str) -> None:
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(os.environ.get("ATTNSCOPE_KEEP", tmp))
        d.mkdir(parents=True, exist_ok=True)
        for i in range(n):
            out = d / f"{i}.json"
            rc = main(["run", "--device", "cpu", "--guess", guess, "--json", str(out), "--strict"])
            doc = json.loads(out.read_text())
            runs.append((rc, doc["verdicts"]))
    preds = [f"{v['prediction']['variant']} {v['prediction']['kind']}" for v in runs[0][1]]
    print(f"| prediction | old rule, runs 1–{n} | new rule, runs 1–{n} |\n|---|---|---|")
    flips_old = flips_new = 0
    for j, name in enumerate(preds):
        old = [old_outcome(r[1][j]) for r in runs]
        new = [r[1][j]["outcome"] for r in runs]
        bands = [r[1][j]["text"].partition("noise band ")[2].rstrip(")") for r in runs]
        flips_old += len(set(old) & {"hit", "miss"}) == 2
        flips_new += len(set(new) & {"hit", "miss"}) == 2
        band = f" ({'; '.join(bands)})" if any(bands) else ""
        print(f"| {name} | {' '.join(old)} | {' '.join(new)}{band} |")
    counts = [sum(old_outcome(v) == "hit" for v in r[1]) for r in runs]
    print(f"\nold rule: hits per run {counts}; predictions flipping between hit and miss: {flips_old}")
    counts = [sum(v["outcome"] == "hit" for v in r[1]) for r in runs]
    print(f"new rule: hits per run {counts}; predictions flipping between hit and miss: {flips_new}")
    print(f"--strict exit codes (new rule): {[r[0] for r in runs]}")


if __name__ == "__main__":
    args = sys.argv[1:]
    main_(int(args[0]) if args else 5, args[1] if len(args) > 1 else "examples/guess_study.toml")
