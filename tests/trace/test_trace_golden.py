"""``attnscope analyze``'s JSON, every number, against goldens written by the reader it replaced.

The goldens under ``tests/data/golden/`` were produced by the previous reader (the single-module
``attnscope/trace.py``) before the new one was written, one per trace file in ``tests/data/``
(attnscope's own H200 traces, the Llama training trace, HolisticTraceAnalysis's test traces) and
one for the two-rank directory.  Regenerate only on purpose, with the reader you trust:

    python tests/trace/test_trace_golden.py
"""

from __future__ import annotations

import contextlib
import io
import json
import lzma
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
GOLDEN = DATA / "golden"
# two ranks of one HTA job, analysed together: the per-rank table and the skew summary
RANKS = ["tests/data/hta/trace_filter_sampled_rank-0.json.gz", "tests/data/hta/trace_filter_sampled_rank-1.json.gz"]


def traces() -> list[str]:
    """Every Kineto trace file under tests/data, relative to the repository root."""
    out = []
    for p in sorted(DATA.rglob("*")):
        if p.is_file() and p.name.endswith((".json", ".json.gz")) and GOLDEN not in p.parents:
            if p.parent.name == "ncu" or p.name in ("run.json", "run_all.json", "sdpa_why_torch211.json"):
                continue  # not traces (attnscope's own documents, ncu sections)
            out.append(str(p.relative_to(ROOT)))
    return out


def golden_name(paths: list[str]) -> str:
    return "__".join(p.removeprefix("tests/data/").replace("/", "_") for p in paths) + ".json.xz"


def analyze_doc(paths: list[str]) -> dict:
    """What ``attnscope analyze PATHS --json`` writes (in this process, one worker), or its error lines."""
    from attnscope.cli.main import main

    cwd = os.getcwd()
    os.chdir(ROOT)  # relative trace paths: the document names them as given
    out = ROOT / ".golden_out.json"
    err = io.StringIO()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            rc = main(["analyze", *paths, "--json", str(out), "--jobs", "1"])
        doc = json.loads(out.read_text()) if out.exists() else None
    finally:
        out.unlink(missing_ok=True)
        os.chdir(cwd)
    return {"rc": rc, "stderr": err.getvalue(), "document": doc}


CASES = [[p] for p in traces()] + [RANKS]


@pytest.mark.parametrize("paths", CASES, ids=["+".join(Path(p).name for p in c) for c in CASES])
def test_analyze_output_matches_golden(paths):
    gold = GOLDEN / golden_name(paths)
    assert gold.exists(), f"no golden for {paths}: every trace under tests/data needs one"
    want = json.loads(lzma.decompress(gold.read_bytes()))
    got = analyze_doc(paths)
    assert got["rc"] == want["rc"]
    # the new reader may add a note (events its typed decoder refused were read by the safe path)
    assert _without_notes(got["stderr"]) == want["stderr"]
    assert _without_additions(got["document"], want["document"]) == want["document"]


# Keys a result gained after the goldens were written (additions to the schema; the reader's numbers are the
# goldens' own): dropped from the new output only where the golden lacks them.
ADDED = {"main_kernel", "eager_fallback", "model_split_insights", "roofline", "equivalent_case", "modifier_checks"}


def _without_additions(got: dict | None, want: dict | None) -> dict | None:
    if got is None or want is None:
        return got
    out = dict(got)
    out["results"] = [
        _result_without(g, w) for g, w in zip(got.get("results", []), want.get("results", []), strict=False)
    ]
    out["results"] += got.get("results", [])[len(want.get("results", [])) :]
    return out


def _result_without(g: dict, w: dict) -> dict:
    r = {k: v for k, v in g.items() if k in w or k not in ADDED}
    split, old = r.get("model_split"), w.get("model_split")
    if isinstance(split, dict) and isinstance(old, dict) and "step" not in old:  # the step's parts, added later
        r["model_split"] = {k: v for k, v in split.items() if k != "step"}
    return r


def _without_notes(err: str) -> str:
    return "".join(line for line in err.splitlines(keepends=True) if not line.startswith("attnscope: note: "))


def test_goldens_cover_real_traces():
    """The goldens are not empty shells: the Llama trace's golden holds its kernels, counted by hand."""
    import gzip

    raw = json.loads(gzip.open(DATA / "llama_train_sdpa.json.gz").read())
    n_kernels = sum(1 for e in raw["traceEvents"] if e.get("cat") == "kernel")
    want = json.loads(lzma.decompress((GOLDEN / golden_name(["tests/data/llama_train_sdpa.json.gz"])).read_bytes()))
    cats = want["document"]["results"][0]["trace_summary"]["categories"]
    n_gpu = sum(1 for e in raw["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    time_us = sum(e["dur"] for e in raw["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    assert sum(c["num_kernels"] for c in cats if c["category"] not in ("memcpy", "memset")) == n_kernels
    summary = want["document"]["results"][0]["trace_summary"]
    assert sum(c["num_kernels"] for c in cats) == n_gpu == summary["num_gpu_events"]
    assert abs(sum(c["time_us"] for c in cats) - time_us) < 1e-3 * len(cats)


def regenerate() -> None:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for paths in CASES:
        got = analyze_doc(paths)
        blob = json.dumps(got, sort_keys=True, separators=(",", ":")).encode()
        (GOLDEN / golden_name(paths)).write_bytes(lzma.compress(blob, preset=9 | lzma.PRESET_EXTREME))
        print(f"{golden_name(paths)}: rc {got['rc']}, {len(blob)} bytes", file=sys.stderr)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    regenerate()
