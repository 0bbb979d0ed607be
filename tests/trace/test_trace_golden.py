"""``attnscope analyze``'s JSON, every number, against goldens written by the reader it replaced.

The goldens under ``tests/data/golden/`` were produced by the previous reader (the single-module
``attnscope/trace.py``) before the new one was written, one per trace file in ``tests/data/``
(attnscope's own H200 traces, the Llama training trace, HolisticTraceAnalysis's test traces) and
one for the two-rank directory; a trace added later has its golden from the reader of that day.  Regenerate
only on purpose, with the reader you trust:

    python tests/trace/test_trace_golden.py              # every golden
    python tests/trace/test_trace_golden.py --missing    # only those of traces added since
"""

from __future__ import annotations

import contextlib
import io
import json
import lzma
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from attnscope.document.load import written_by_attnscope

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
            if p.name.endswith(".json") and written_by_attnscope(p):
                continue  # a document attnscope wrote (a run on a GPU kept for the rules' tests)
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
    if isinstance(got["document"], dict) and isinstance(want["document"], dict):
        # schema 2 only added ``timing`` and ``device_state`` (ADDED): the version is the one difference it makes
        assert got["document"].get("schema_version") == 2 and want["document"].get("schema_version") in (1, 2, None)
        got["document"]["schema_version"] = want["document"].get("schema_version")
    # the new reader may add a note (events its typed decoder refused were read by the safe path)
    assert _without_notes(got["stderr"]) == want["stderr"]
    want["document"] = _mode_from_calls(_reworded(want["document"]))
    assert _without_additions(got["document"], want["document"]) == _without_additions(
        want["document"], want["document"]
    )


# The FLOP formula's words changed after the goldens were written (the count is over batch and heads, so the factor
# is 4·D, not 4·H·D); the numbers it explains did not: the golden's text is read in today's words.
REWORDED = {
    "4·H·D·(score entries the mask keeps, summed over the batch): two GEMMs, 2 FLOP per multiply-add, counted only "
    "on kept scores (no mask keeps B·Sq·Sk)": "4·D·(score entries the mask keeps, over batch and heads): two GEMMs, "
    "2 FLOP per multiply-add, counted only on kept scores (no mask keeps B·H·Sq·Sk)",
    "forward 4·H·D·(kept score entries), backward": "forward 4·D·(score entries kept, over batch and heads), backward",
}


SHAPE = ("batch", "heads", "kv_heads", "seq_q", "seq_kv", "head_dim", "dtype", "causal")


def _mode_from_calls(doc: Any) -> Any:
    """The goldens were written when a case read from a trace was always "fwd"; it is "fwd_bwd" where the trace also
    holds a backward call of the forward calls' shape (a training step).  Read from the golden's own
    ``attention_calls``: the golden's row (and its case) in today's mode, every other number as written."""
    results = doc.get("results") if isinstance(doc, dict) else None
    for r in results or []:
        calls = r.get("attention_calls") or []
        fwd = [tuple(c.get(f) for f in SHAPE) for c in calls if c.get("direction") == "forward"]
        bwd = {tuple(c.get(f) for f in SHAPE) for c in calls if c.get("direction") == "backward"}
        if isinstance(r.get("case"), dict) and fwd and fwd[0] in bwd:
            r["mode"] = "fwd_bwd"
            r["case"]["mode"] = "fwd_bwd"
    return doc


def _reworded(doc: Any) -> Any:
    if isinstance(doc, dict):
        return {k: _reworded(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_reworded(v) for v in doc]
    if isinstance(doc, str):
        for old, new in REWORDED.items():
            doc = doc.replace(old, new)
    return doc


# Keys the schema gained after the goldens were written (additions; the reader's numbers are the goldens' own):
# dropped from the new output, at any depth, only where the golden lacks them.
ADDED = {
    "main_kernel",  # a row's main kernel, stored for the report
    "timing",  # graph replay warm and cold (schema 2; null for a trace)
    "device_state",  # NVML clocks, power and energy (schema 2; null for a trace)
    "eager_fallback",
    "model_split_insights",
    "step",  # model_split's step parts
    "roofline",
    "equivalent_case",
    "modifier_checks",
    "host",
    "unresolved",  # the recommendation's unresolved tie
    "peak_basis",  # which ceiling a row's %peak is of (the roofline's bound)
    "steps",  # a trace summary's steps, read from step ranges (ProfilerStep#N in HTA's traces)
    "cuda_graphs",  # a trace summary's CUDA graph replays
    "cpu_collectives",  # a trace summary's host collectives (gloo), and their time in flight in the per-rank rows
    "eager_attention",  # a row's matmul → softmax → matmul chains (attention written out as ops)
}


# The insights are the rules' words on the reader's numbers: issue-driven rule changes (occupancy verdicts by
# roofline bound, advice that reads the recommendation) reword them, and their own tests pin them; the reader's
# numbers stay compared whole.
RULES_OWN = {"insights"}


def _without_additions(got: Any, want: Any) -> Any:
    if isinstance(got, dict) and isinstance(want, dict):
        got = {k: v for k, v in got.items() if k not in RULES_OWN}
        want = {k: v for k, v in want.items() if k not in RULES_OWN}
        return {k: _without_additions(v, want.get(k)) for k, v in got.items() if k in want or k not in ADDED}
    if isinstance(got, list) and isinstance(want, list):
        return [_without_additions(g, w) for g, w in zip(got, want, strict=False)] + got[len(want) :]
    return got


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


def regenerate(missing_only: bool = False) -> None:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for paths in CASES:
        if missing_only and (GOLDEN / golden_name(paths)).exists():
            continue  # a trace added since: its golden from today's reader, the others left as they were
        got = analyze_doc(paths)
        got["stderr"] = _without_notes(got["stderr"])  # compared without notes: a golden holding one never matched
        blob = json.dumps(got, sort_keys=True, separators=(",", ":")).encode()
        (GOLDEN / golden_name(paths)).write_bytes(lzma.compress(blob, preset=9 | lzma.PRESET_EXTREME))
        print(f"{golden_name(paths)}: rc {got['rc']}, {len(blob)} bytes", file=sys.stderr)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    regenerate(missing_only="--missing" in sys.argv)
