"""Random attention specs through the library and the command line: no traceback, no exit outside 0/1/2, every ok
row matching the fp64 reference or saying why not.

    python benchmarks/fuzz.py [--specs N] [--start I] [--seed S] [--workers W] [--time-limit SEC] [--out FILE]
                              [--cli-every K] [--sweep-every K] [--measure-every M] [--subprocess] [--only INDEX]
    python benchmarks/fuzz.py --merge PART.json ... [--out FILE]    # shards of one run (--start) counted as one

Each spec is drawn from its own seeded generator (``Random(seed · 1,000,003 + index)``), so a run is reproducible
spec by spec, whatever the number of workers, and any failure is replayed with ``--only INDEX``.  A spec is a case
(batch, heads, GQA, query and key lengths: decode and chunked prefill among them, head dim, dtype, a mask in every
form of the grammar including the edge ones, soft-cap, ALiBi, fwd or fwd_bwd), one to three variants, and now and
then a number that is no usable number (NaN, an infinity, past a week of seconds).  One spec in about seven is a
serving case: a paged and/or ragged KV cache (``page_size``, ``kv_lens`` as a list or a seeded draw, now and then
one that is no cache) read at decode or by a chunk of prefill, with the paged variants.  Every spec goes through the
checks before work twice, the library's (its Case) and the command line's (``attnscope run``'s parser and every
check it makes before a tensor exists), which must agree; one spec in ``--measure-every`` is then measured through
one channel:

- ``run``: ``attnscope.api.run`` in this process (inline executor, the case as built, or refused as it must be);
- ``sweep``: ``attnscope.api.sweep`` over a small grid of such cases, which must write every job it plans exactly
  once;
- ``cli``: every K-th spec as ``attnscope run`` flags, in-process (``main``) or, with ``--subprocess``, as a new
  ``python -m attnscope`` process: its exit status must be 0, 1 or 2, with no traceback.

Outcomes counted: ``refused`` (a one-line ValueError, or exit 2), ``measured`` (rows by status), ``ok`` rows by
numerics (``match``: within the tolerance of the fp64 reference; ``unchecked``: no reference, with the reason;
``mismatch``: outside it), and failures: ``traceback`` (any other exception, or a multi-line refusal), ``exit``
(a status outside 0/1/2), ``lost`` (a sweep whose file does not hold each planned job once), ``disagree`` (the
library and the command line judge a case differently).  The counts and the
first examples of each failure go to ``--out`` (JSON); the summary is printed as markdown.

Workers are processes (``--workers``, default the CPU count): each takes every W-th spec and runs with one torch
thread, so a 16-core machine runs 16 specs at once.  One run can be split into shards, for machines that may only be
held for a few minutes at a time: ``--start 0 --specs 5000`` and ``--start 5000 --specs 5000`` draw the same specs as
one ``--specs 10000`` run, and ``--merge`` adds up their counts (refusing shards of other seeds or overlapping
ranges).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import json
import math
import os
import random
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

# The variants a spec picks from: the CPU built-ins that run in seconds (compiled flex compiles for ~20 s a case).
FAST_VARIANTS = ("naive", "naive_inplace", "sdpa_math", "sdpa_flash", "sdpa_default", "flex", "sdpa_efficient")
SERVING_VARIANTS = ("paged_gather_sdpa", "paged_flex", "paged_varlen", "paged_gather_flash")  # the last two: skipped
SERVING_SHARE = 0.15  # of the specs, made serving ones
HOSTILE_NUMBERS = (float("nan"), float("inf"), -float("inf"), 1e308, -1.0, 0.0)
EXAMPLES = 5  # failures kept per kind in the output file


def _lengths(rng: random.Random, total: int) -> list[int]:
    """A random split of ``total`` into positive parts (document lengths)."""
    cuts = sorted(rng.sample(range(1, total), min(total - 1, rng.randint(0, 3)))) if total > 1 else []
    edges = [0, *cuts, total]
    return [b - a for a, b in itertools.pairwise(edges)]


def _mask(rng: random.Random, batch: int, sq: int, sk: int) -> str | None:
    kind = rng.choice(["default", "none", "causal", "lower", "sliding", "prefix", "document", "padding"])
    align = rng.choice(["", "", "@top_left", "@lower_right"])
    if kind == "default":
        return None
    if kind == "lower":
        return "causal_lower_right"
    if kind in ("none", "causal"):
        return kind + align
    if kind == "sliding":
        w = rng.choice([1, 2, max(1, sk // 2), sk, sk + 1, 10**20, 0, -3])
        return f"sliding:{w}{align}"
    if kind == "prefix":
        p = rng.choice([0, 1, max(1, sk // 3), sk, sk + 5, 10**20, -1])
        return f"prefix:{p}{align}"
    if kind == "document":
        parts = _lengths(rng, sq) if rng.random() < 0.85 else [sq + 1]
        return "document:" + ",".join(map(str, parts))
    lengths = [rng.randint(1, sk) for _ in range(batch)] if rng.random() < 0.85 else [sk + 1] * batch
    return "padding:" + ",".join(map(str, lengths))


def make_spec(seed: int, index: int) -> dict[str, Any]:
    """The spec of ``index`` under ``seed``: plain data (it crosses processes and goes into the output file)."""
    rng = random.Random(seed * 1_000_003 + index)
    heads = rng.choice([1, 2, 4, 6, 8])
    kv = rng.choice([None, None, *[d for d in range(1, heads) if heads % d == 0], rng.randint(1, 8)])
    sq = rng.choice([1, 1, 2, 3, 7, 16, 31, 48, 64])
    sk = rng.choice([None, None, sq, rng.choice([1, 4, 17, 32, 64, 96])])
    batch = rng.randint(1, 3)
    case: dict[str, Any] = {
        "batch": batch,
        "heads": heads,
        "seq_q": sq,
        "head_dim": rng.choice([8, 16, 24, 32, 64]),
        "dtype": rng.choice(["fp32", "fp32", "bf16", "fp16"]),
        "kv_heads": kv,
        "seq_kv": sk,
        "mask": _mask(rng, batch, sq, sk or sq),
        "softcap": rng.choice([None, None, None, 0.5, 5.0, 30.0, 50.0, 1e4, 7e4, 0.0]),
        "alibi": rng.random() < 0.2,
        "mode": "fwd_bwd" if rng.random() < 0.3 else "fwd",
        "device": "cpu",
    }
    if case["mask"] is None and rng.random() < 0.3:
        case["causal"] = False
    options: dict[str, Any] = {"timing_budget_s": 0.002, "measure_peak": False}
    if rng.random() < 0.05:  # a number that is no usable number, given to the library
        key = rng.choice(["timing_budget_s", "timeout_s"])
        options[key] = rng.choice(HOSTILE_NUMBERS)
    variants = rng.sample(FAST_VARIANTS, rng.randint(1, 3))
    # drawn last, so that the draws above (and every spec of an earlier run without serving cases) stay as they were
    if rng.random() < SERVING_SHARE:
        variants = _serving(rng, case, variants)
    return {"index": index, "case": case, "variants": variants, "options": options}


def _serving(rng: random.Random, case: dict[str, Any], dense: list[str]) -> list[str]:
    """Make ``case`` a serving one: a paged and/or ragged KV cache read at decode (one query) or by a chunk of
    prefill, with now and then a field a serving case refuses (a mask other than causal_lower_right or none,
    fwd_bwd, soft-cap, ALiBi, a page size or a length that is no length); returns its variants (a dense one
    among them now and then, which must be skipped with its reason)."""
    b = case["batch"]
    case["seq_q"] = rng.choice([1, 1, 1, 2, 7, 16])
    case["seq_kv"] = None
    if rng.random() < 0.9:
        case["mask"] = rng.choice([None, None, "causal_lower_right", "none", case["mask"]])
    if rng.random() < 0.9:
        case["mode"], case["softcap"], case["alibi"] = "fwd", None, False
    form = rng.random()
    if form < 0.45:
        lens = [rng.randint(1, 96) for _ in range(b)]
        case["kv_lens"] = ",".join(map(str, lens))
    elif form < 0.8:
        lo = rng.randint(1, 64)
        case["kv_lens"] = f"uniform:{lo}..{lo + rng.randint(0, 64)}@{rng.randint(0, 9)}"
    else:  # no usable lengths: a zero, a list of the wrong size, a range the wrong way round, no number
        case["kv_lens"] = rng.choice(["0," * (b - 1) + "0", ",".join(["8"] * (b + 1)), "uniform:9..3", "list:x"])
    case["page_size"] = rng.choice([None, 1, 4, 16, 16, 64, 0, -2]) if rng.random() < 0.85 else 16
    picked = rng.sample(SERVING_VARIANTS, rng.randint(1, 2))
    return picked + ([rng.choice(dense)] if rng.random() < 0.2 else [])


def _one_line(e: BaseException) -> bool:
    return "\n" not in str(e).strip()


def _classify_rows(rows: list[dict[str, Any]], counts: Counter[str], bad: list[dict[str, Any]], spec: Any) -> None:
    for r in rows:
        counts[f"row {r.get('status')}"] += 1
        c = r.get("case") or {}
        if c.get("kv_lens") is not None or c.get("page_size") is not None:
            counts[f"serving row {r.get('status')}"] += 1
        if r.get("status") != "ok":
            continue
        ok = r.get("numerics_ok")
        if ok is True:
            counts["ok rows matching fp64"] += 1
        elif ok is None:
            counts["ok rows unchecked (no reference)"] += 1
            if not r.get("notes") and r.get("max_rel_error") is None:
                bad.append(
                    {"kind": "unexplained unchecked", "spec": spec, "case": r.get("case"), "variant": r.get("variant")}
                )
        else:
            counts["ok rows mismatching fp64"] += 1
            bad.append(
                {
                    "kind": "mismatch",
                    "spec": spec,
                    # a sweep crosses the specs' cases with their variants: the row's own case is the one to replay
                    "case": r.get("case"),
                    "variant": r.get("variant"),
                    "error": r.get("max_rel_error"),
                    "errors": r.get("rel_errors"),
                    "nonfinite": r.get("nonfinite"),
                    "tolerance": r.get("error_tolerance"),
                }
            )


def _build_case(spec: dict[str, Any]) -> Any:
    from attnscope.core.types import Case

    return Case(**{k: v for k, v in spec["case"].items() if v is not None or k in ("mask",)})


def run_channel(spec: dict[str, Any], counts: Counter[str], bad: list[dict[str, Any]]) -> None:
    """``attnscope.api.run`` on the spec: refused in one line, or measured."""
    from attnscope.api import run
    from attnscope.document.schema import result_to_dict

    try:
        case = _build_case(spec)
        opts = dict(spec["options"])
        timeout = opts.pop("timeout_s", None)
        with contextlib.redirect_stdout(io.StringIO()):
            doc = run(case, spec["variants"], executor="inline", timeout_s=timeout, **opts)
    except ValueError as e:
        counts["refused"] += 1
        if not _one_line(e):
            bad.append({"kind": "multi-line refusal", "spec": spec, "error": str(e)[:2000]})
        return
    except Exception as e:  # noqa: BLE001 -- what the fuzzer looks for
        counts["traceback"] += 1
        bad.append({"kind": "traceback", "spec": spec, "error": traceback.format_exception_only(e)[-1].strip()})
        return
    counts["measured"] += 1
    _classify_rows([result_to_dict(r) for r in doc.results], counts, bad, spec)


def sweep_channel(specs: list[dict[str, Any]], counts: Counter[str], bad: list[dict[str, Any]]) -> None:
    """``attnscope.api.sweep`` over the valid cases of ``specs``: every planned job in the file exactly once."""
    from attnscope.api import sweep
    from attnscope.core.cases import mask_at_shape
    from attnscope.execute.job import job_key
    from attnscope.execute.store import Store

    cases = []
    for s in specs:
        try:
            c = _build_case(s)
        except ValueError:
            continue
        # one case once: a mask spelled with an alignment where seq_q == seq_kv is the case without it
        if mask_at_shape(c) not in {mask_at_shape(x) for x in cases} and not c.mask_mod:
            cases.append(c)
    if not cases:
        return
    variants = sorted({v for s in specs for v in s["variants"]})[:3]
    with tempfile.TemporaryDirectory(prefix="attnscope-fuzz-") as tmp:
        out = Path(tmp) / "s.jsonl"
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                rows = sweep(cases, variants, out=out, executor="inline", timing_budget_s=0.002, measure_peak=False)
        except ValueError as e:
            counts["sweep refused"] += 1
            if not _one_line(e):
                bad.append({"kind": "multi-line refusal", "spec": [s["index"] for s in specs], "error": str(e)})
            return
        except Exception as e:  # noqa: BLE001
            counts["traceback"] += 1
            err = traceback.format_exception_only(e)[-1].strip()
            bad.append({"kind": "traceback", "spec": [s["index"] for s in specs], "error": err})
            return
        counts["sweeps"] += 1
        stored = Store(out).rows()
        keys = [job_key(r["variant"], r.get("case")) for r in stored]
        planned = len(cases) * len(variants)
        counts["sweep jobs"] += planned
        if len(stored) != planned or len(set(keys)) != planned or len(rows) != planned:
            counts["lost"] += 1
            bad.append({"kind": "lost", "spec": [s["index"] for s in specs], "planned": planned, "got": len(stored)})
        _classify_rows(stored, counts, bad, [s["index"] for s in specs])


def cli_argv(spec: dict[str, Any]) -> list[str]:
    """The spec as ``attnscope run`` flags (a number the library refuses becomes the flag's text)."""
    c = spec["case"]
    argv = ["run", "--device", "cpu", "--batch", str(c["batch"]), "--heads", str(c["heads"]), "--seq", str(c["seq_q"])]
    argv += ["--head-dim", str(c["head_dim"]), "--dtype", c["dtype"], "--mode", c["mode"], "--no-peak"]
    if c["kv_heads"] is not None:
        argv += ["--kv-heads", str(c["kv_heads"])]
    if c["seq_kv"] is not None:
        argv += ["--seq-kv", str(c["seq_kv"])]
    if c["mask"] is not None:
        argv += ["--mask", c["mask"]]
    elif c.get("causal") is False:
        argv += ["--no-causal"]
    if c["softcap"] is not None:
        argv += ["--softcap", repr(c["softcap"])]
    if c["alibi"]:
        argv += ["--alibi"]
    if c.get("kv_lens") is not None:
        argv += ["--kv-lens", c["kv_lens"]]
    if c.get("page_size") is not None:
        argv += ["--page-size", str(c["page_size"])]
    o = spec["options"]
    argv += ["--variants", ",".join(spec["variants"]), "--budget", repr(o["timing_budget_s"])]
    if "timeout_s" in o:
        argv += ["--executor", "process", "--timeout", repr(o["timeout_s"])]
    return argv


def check_channel(spec: dict[str, Any], counts: Counter[str], bad: list[dict[str, Any]]) -> None:
    """Every check before work, twice: the library's (the Case) and the command line's (its parser and every check
    ``attnscope run`` makes before a tensor exists).  Both must accept the case, or both refuse it in one line."""
    from attnscope.api.running import check_run
    from attnscope.cli.main import build_parser
    from attnscope.cli.run import request_of

    try:
        _build_case(spec)
        lib = None
    except ValueError as e:
        lib = str(e)
        if not _one_line(e):
            bad.append({"kind": "multi-line refusal", "spec": spec, "error": lib[:2000]})
    except Exception as e:  # noqa: BLE001
        counts["traceback"] += 1
        bad.append({"kind": "traceback", "spec": spec, "error": traceback.format_exception_only(e)[-1].strip()})
        return
    argv = cli_argv({**spec, "options": {"timing_budget_s": 0.002}})  # the case alone: no hostile option
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            args = build_parser(argv).parse_args(argv)
        args.argv = argv
        check_run(request_of(args))
        cli = None
    except SystemExit as e:
        cli = f"exit {e.code}"
    except ValueError as e:
        cli = str(e)
        if not _one_line(e):
            bad.append({"kind": "multi-line refusal", "spec": spec, "error": cli[:2000]})
    except Exception as e:  # noqa: BLE001
        counts["traceback"] += 1
        bad.append({"kind": "traceback (cli checks)", "spec": spec, "error": traceback.format_exception_only(e)[-1]})
        return
    counts["checked: accepted" if lib is None else "checked: refused"] += 1
    if (lib is None) != (cli is None):
        counts["disagree"] += 1
        bad.append({"kind": "library and command line disagree", "spec": spec, "library": lib, "cli": cli})


def cli_channel(spec: dict[str, Any], counts: Counter[str], bad: list[dict[str, Any]], subprocess_: bool) -> None:
    argv = cli_argv(spec)
    if subprocess_:
        import subprocess

        p = subprocess.run([sys.executable, "-m", "attnscope", *argv], capture_output=True, text=True, timeout=600)
        rc, err = p.returncode, p.stderr
    else:
        from attnscope.cli.main import main

        buf_err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(buf_err):
            rc = main(argv)
        err = buf_err.getvalue()
    counts[f"cli exit {rc}"] += 1
    if rc not in (0, 1, 2):
        counts["exit"] += 1
        bad.append({"kind": f"exit {rc}", "spec": spec, "argv": argv, "stderr": err[-1500:]})
    elif "Traceback" in err:
        counts["traceback"] += 1
        bad.append({"kind": "traceback (cli)", "spec": spec, "argv": argv, "stderr": err[-1500:]})


_PARENT: int | None = None  # in a pool worker, the fuzzer's pid: a worker whose parent is gone stops


def fuzz(
    indices: list[int],
    seed: int,
    *,
    deadline: float,
    cli_every: int = 7,
    sweep_every: int = 25,
    measure_every: int = 1,
    subprocess_: bool = False,
) -> tuple[Counter[str], list[dict[str, Any]]]:
    """Every spec of ``indices`` through the checks (library and command line) and, one in ``measure_every``,
    measured through its channel, until ``deadline`` (time.monotonic()); the counts and failures."""
    counts: Counter[str] = Counter()
    bad: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    for i in indices:
        if _PARENT is not None and os.getppid() != _PARENT:  # the fuzzer was killed: a pool worker stops with it
            break
        if time.monotonic() > deadline:
            counts["not run (time limit)"] += 1
            continue
        spec = make_spec(seed, i)
        counts["specs"] += 1
        if spec["case"].get("kv_lens") is not None or spec["case"].get("page_size") is not None:
            counts["specs serving"] += 1
        check_channel(spec, counts, bad)
        if measure_every > 1 and i % measure_every:
            continue
        if cli_every and i % cli_every == cli_every - 1:
            counts["channel cli"] += 1
            cli_channel(spec, counts, bad, subprocess_)
        elif sweep_every and i % sweep_every < 4:  # four specs in a row make one small sweep
            counts["channel sweep"] += 1
            pending.append(spec)
            if len(pending) == 4:
                sweep_channel(pending, counts, bad)
                pending = []
        else:
            counts["channel run"] += 1
            run_channel(spec, counts, bad)
    if pending:
        sweep_channel(pending, counts, bad)
    return counts, bad


def _worker(args: tuple[list[int], int, float, int, int, int, bool]) -> tuple[dict[str, int], list[dict[str, Any]]]:
    indices, seed, deadline_wall, cli_every, sweep_every, measure_every, subprocess_ = args
    global _PARENT
    _PARENT = os.getppid()
    import torch

    torch.set_num_threads(1)
    deadline = time.monotonic() + max(0.0, deadline_wall - time.time())
    counts, bad = fuzz(indices, seed, deadline=deadline, cli_every=cli_every, sweep_every=sweep_every,
                       measure_every=measure_every, subprocess_=subprocess_)  # fmt: skip
    return dict(counts), bad


def merge(parts: list[str], out: str) -> int:
    """Shards of one run (same seed, disjoint index ranges) counted as one: counts and failure kinds added up, the
    first examples of each failure kept, the ranges and each shard's time listed."""
    docs = [json.loads(Path(p).read_text()) for p in parts]
    seeds = {d["seed"] for d in docs}
    if len(seeds) != 1:
        print(f"fuzz: shards of different seeds {sorted(seeds)} are not one run", file=sys.stderr)
        return 2
    ranges = sorted(tuple(d.get("range") or (0, d["counts"].get("specs", 0))) for d in docs)
    for (a0, a1), (b0, _b1) in itertools.pairwise(ranges):
        if b0 < a1:
            print(f"fuzz: shards overlap ({a0}..{a1} and {b0}..)", file=sys.stderr)
            return 2
    counts: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    failures: dict[str, list[Any]] = {}
    for d in docs:
        counts.update(d["counts"])
        kinds.update(d.get("failure_kinds") or {})
        for k, v in (d.get("failures") or {}).items():
            failures[k] = (failures.get(k, []) + v)[:EXAMPLES]
    result = {
        "merged": [{"file": Path(p).name, "range": d.get("range"), "workers": d["workers"],
                    "elapsed_s": d["elapsed_s"], "command": d["command"]} for p, d in zip(parts, docs, strict=True)],
        "seed": seeds.pop(),
        "ranges": [list(r) for r in ranges],
        "versions": docs[0]["versions"],
        "counts": dict(sorted(counts.items())),
        "failure_kinds": dict(kinds),
        "failures": failures,
    }  # fmt: skip
    Path(out).write_text(json.dumps(result, indent=1, default=str))
    print("| outcome | count |\n|---|---:|")
    for k, v in sorted(counts.items()):
        print(f"| {k} | {v:,} |")
    print(f"\n{counts['specs']:,} specs in {len(docs)} shard(s); failures: {dict(kinds) or 'none'}")
    return 1 if kinds else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--specs", type=int, default=10_000)
    ap.add_argument("--start", type=int, default=0, help="the first spec index (a shard of a larger run)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--merge", nargs="+", metavar="PART", help="add up the counts of shards written by --out")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--time-limit", type=float, default=math.inf, help="seconds; specs not started by then are counted")
    ap.add_argument("--cli-every", type=int, default=7, help="every K-th spec through the command line (0: none)")
    ap.add_argument("--sweep-every", type=int, default=25, help="4 specs of every K make one sweep (0: none)")
    ap.add_argument("--subprocess", action="store_true", help="the command-line specs as new processes")
    ap.add_argument(
        "--measure-every", type=int, default=1, help="measure one spec in M (every spec is checked; default 1: all)"
    )
    ap.add_argument("--only", type=int, help="replay one spec index and print it")
    ap.add_argument("--out", default="fuzz-results.json")
    a = ap.parse_args(argv)
    if a.merge:
        return merge(a.merge, a.out)
    if a.start < 0 or a.specs < 0:
        ap.error("--start and --specs take counts >= 0")
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")
    if a.only is not None:
        spec = make_spec(a.seed, a.only)
        print(json.dumps(spec, indent=1))
        counts, bad = fuzz([a.only], a.seed, deadline=math.inf, cli_every=a.cli_every, sweep_every=0)
        print(json.dumps({"counts": counts, "failures": bad}, indent=1, default=str))
        return 1 if bad else 0
    t0 = time.time()
    deadline = t0 + a.time_limit if math.isfinite(a.time_limit) else math.inf
    end = a.start + a.specs
    chunks = [list(range(a.start + w, end, a.workers)) for w in range(a.workers)]
    jobs = [(c, a.seed, deadline, a.cli_every, a.sweep_every, a.measure_every, a.subprocess) for c in chunks if c]
    if a.workers > 1:
        import multiprocessing as mp

        with mp.get_context("spawn").Pool(len(jobs)) as pool:
            parts = pool.map(_worker, jobs)
    else:
        parts = [_worker(jobs[0])]
    counts: Counter[str] = Counter()
    bad: list[dict[str, Any]] = []
    for c, b in parts:
        counts.update(c)
        bad += b
    elapsed = time.time() - t0
    kinds = Counter(b["kind"] for b in bad)
    failures = {k: [b for b in bad if b["kind"] == k][:EXAMPLES] for k in kinds}
    import torch

    import attnscope

    result = {
        "command": " ".join(["python", "benchmarks/fuzz.py", *(argv if argv is not None else sys.argv[1:])]),
        "seed": a.seed,
        "range": [a.start, end],
        "workers": a.workers,
        "elapsed_s": round(elapsed, 1),
        "versions": {"attnscope": attnscope.__version__, "torch": torch.__version__, "python": sys.version.split()[0]},
        "counts": dict(sorted(counts.items())),
        "failure_kinds": dict(kinds),
        "failures": failures,
    }
    Path(a.out).write_text(json.dumps(result, indent=1, default=str))
    print("| outcome | count |\n|---|---:|")
    for k, v in sorted(counts.items()):
        print(f"| {k} | {v:,} |")
    print(
        f"\n{counts['specs']:,} specs in {elapsed:,.0f} s on {a.workers} worker(s); failures: {dict(kinds) or 'none'}"
    )
    print(f"details in {a.out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
