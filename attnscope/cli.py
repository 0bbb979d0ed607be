"""Thin command line: parse → call → render.  torch is imported only by commands that run."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def _console() -> Any:
    from rich.console import Console

    return Console(width=max(160, Console().width))


def _add_case_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("case (defaults depend on the device)")
    g.add_argument("--device", help="cpu or cuda[:N] (default: cuda if available, else cpu)")
    g.add_argument("--batch", type=int)
    g.add_argument("--heads", type=int)
    g.add_argument("--kv-heads", type=int, help="KV heads for GQA (default: = heads)")
    g.add_argument("--seq", type=int, help="query sequence length")
    g.add_argument("--seq-kv", type=int, help="key/value sequence length (default: = seq)")
    g.add_argument("--head-dim", type=int)
    g.add_argument("--dtype", help="bf16, fp16 or fp32")
    m = g.add_mutually_exclusive_group()
    m.add_argument("--causal", dest="causal", action="store_true", default=None)
    m.add_argument("--no-causal", dest="causal", action="store_false")


def _case_from(args: argparse.Namespace) -> Any:
    from attnscope.cases import make_case

    return make_case(
        args.device,
        batch=args.batch,
        heads=args.heads,
        kv_heads=args.kv_heads,
        seq_q=args.seq,
        seq_kv=args.seq_kv,
        head_dim=args.head_dim,
        dtype=args.dtype,
        causal=args.causal,
    )


def cmd_run(args: argparse.Namespace) -> int:
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from attnscope.report.json import document, write_atomic
    from attnscope.report.table import render
    from attnscope.runner import Options, run
    from attnscope.types import Result
    from attnscope.variants import resolve

    case = _case_from(args)
    chosen = resolve(args.variants)  # unknown names fail before torch work starts
    preds = getattr(args, "predictions", None)  # from `attnscope guess`
    if getattr(args, "guess", None):  # read and checked before any torch work
        from attnscope.guess import load_predictions
        from attnscope.variants import REGISTRY

        preds = load_predictions(args.guess, [v.name for v in chosen], set(REGISTRY))
    console = _console()
    done: list[Result] = []

    def save(r: Result) -> None:
        done.append(r)
        if args.json:  # rewrite after every variant: a crash never loses finished results
            write_atomic(args.json, document(None, done, case=case.to_dict(), partial=True))

    opts = Options(
        flush_l2=args.flush_l2,
        timing_budget_s=args.budget,
        trace_dir=Path(args.trace_dir) if args.trace_dir else None,
        measure_peak=not args.no_peak,
    )
    with Progress(
        SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console, transient=True
    ) as prog:
        task = prog.add_task(f"attnscope run: {case.label()}")

        def start(name: str) -> None:
            prog.update(task, description=f"{case.label()}: {name}")

        rep = run(case, args.variants, opts, on_result=save, on_start=start)
    doc = document(
        rep.env,
        rep.results,
        case=case.to_dict(),
        peak={"tflops": rep.peak.tflops, "source": rep.peak.source} if rep.peak else None,
    )
    if preds is not None:
        from attnscope.guess import with_verdicts

        doc = with_verdicts(doc, preds)
    if args.json:
        write_atomic(args.json, doc)
    env = rep.env
    title = f"attnscope run — {case.label()} — {env.device_name} — torch {env.torch}" + (
        f", CUDA {env.cuda}, cuDNN {env.cudnn}" if env.cuda and case.device != "cpu" else ""
    )
    render(doc, console, kernels=args.kernels, title=title)
    if args.json:
        console.print(f"  JSON written to {args.json}")
    if args.trace_dir:
        console.print(f"  traces (Perfetto / chrome://tracing) in {args.trace_dir}/")
    if preds is not None and args.strict:
        from attnscope.guess import strict_failure

        failed = strict_failure(doc)
        if failed:
            console.print(f"  {failed}: exit 1", style="bold red")
            return EXIT_FAIL
    return EXIT_OK


def _cmd_guess(args: argparse.Namespace) -> int:
    from attnscope.guess import cmd_guess

    return cmd_guess(args)


def cmd_variants(args: argparse.Namespace) -> int:
    from rich.table import Table

    from attnscope.runner import make_inputs
    from attnscope.variants import REGISTRY, Unsupported

    case = _case_from(args)
    x = make_inputs(case, 0)
    t = Table(title=f"variants on {case.label()}", header_style="bold")
    for col in ("variant", "runs here", "what it is", "reason if not"):
        t.add_column(col, overflow="fold")
    dev = "cuda" if case.device.startswith("cuda") else "cpu"
    for v in REGISTRY.values():
        reason = v.check(case)
        state = "no" if reason else "yes"
        if not reason and dev in v.opt_in_on:
            state, reason = "opt-in", v.opt_in_reason
        elif not reason and not v.compiles:
            try:
                v.prepare(case, x)
            except Unsupported as e:
                state, reason = "no", str(e)
        t.add_row(v.name, state, v.description, reason or "")
    _console().print(t)
    return EXIT_OK


def cmd_analyze(args: argparse.Namespace) -> int:
    from attnscope.trace import no_gc

    with no_gc():  # a short process holding ~10^5 objects: full collections only cost time
        return _analyze_cmd(args)


def _analyze_cmd(args: argparse.Namespace) -> int:
    from attnscope.batch import analyze_many, expand

    results, errors = analyze_many(expand(args.traces), jobs=args.jobs, require_gpu=not args.cpu)
    for e in errors:
        print(f"attnscope: error: {e}", file=sys.stderr)
    if not results:
        return EXIT_USAGE
    from attnscope.analysis.ranks import combine
    from attnscope.report.json import document, write_atomic
    from attnscope.report.summary import render_overall, render_summary
    from attnscope.report.table import render

    named = [(r.variant, r.extra["trace_summary"]) for r in results if "trace_summary" in r.extra]
    overall = combine(named) if len(named) > 1 else None
    doc = document(None, results, **({"overall": overall} if overall else {}))
    if args.json:
        write_atomic(args.json, doc)
    console = _console()
    render(doc, console, kernels=args.kernels, title="attnscope analyze")
    for r in doc["results"]:
        render_summary(r, console, top=args.top)
    if overall:
        render_overall(overall, console)
    if args.json:
        console.print(f"  JSON written to {args.json}")
    return EXIT_USAGE if errors else EXIT_OK


def cmd_diff(args: argparse.Namespace) -> int:
    from attnscope.diff import diff, load_side

    a, b = load_side(args.a), load_side(args.b)
    metrics = tuple(m.strip() for m in args.metrics.split(",") if m.strip())
    if any(m not in ("gpu", "cpu") for m in metrics):
        raise ValueError(f"--metrics takes gpu, cpu or gpu,cpu; got {args.metrics!r}")
    d = diff(a, b, threshold_pct=args.threshold, metrics=metrics)
    if args.json:
        from attnscope.report.json import SCHEMA_VERSION, write_atomic

        write_atomic(
            args.json,
            {
                "schema_version": SCHEMA_VERSION,
                "tool": "attnscope",
                "kind": "diff",
                "a": str(args.a),
                "b": str(args.b),
                **d,
            },
        )
    from attnscope.report.diff import render_diff

    render_diff(d, _console(), title=f"attnscope diff: {args.a} → {args.b}")
    return EXIT_FAIL if d["regressions"] else EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="attnscope", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="run and fingerprint every attention variant on one case")
    g = sub.add_parser("guess", help="guess first: answer a few questions, then run and see every mismatch")
    for sp in (r, g):
        _add_case_args(sp)
        sp.add_argument("--variants", help="comma list, or 'all' (default: the device's default set)")
        sp.add_argument("--kernels", action="store_true", help="also list each variant's kernels")
        sp.add_argument("--json", help="write the versioned JSON document here")
        sp.add_argument("--trace-dir", help="keep one Perfetto-loadable trace per variant here")
        sp.add_argument("--flush-l2", action="store_true", help="flush L2 between timed GPU calls")
        sp.add_argument("--budget", type=float, default=0.5, help="seconds per timer per variant (default 0.5)")
        sp.add_argument("--no-peak", action="store_true", help="skip the matmul peak measurement (no %% peak)")
        sp.add_argument("--strict", action="store_true", help="exit 1 on any missed or unmeasurable prediction (CI)")
    r.add_argument("--guess", metavar="FILE", help="predictions (TOML) written before the run: a verdict for each")
    r.set_defaults(func=cmd_run)
    g.add_argument("--save", metavar="FILE", help="also write the answers as a predictions file for run --guess")
    g.set_defaults(func=_cmd_guess, guess=None)

    v = sub.add_parser("variants", help="list every variant and whether it can run here")
    _add_case_args(v)
    v.set_defaults(func=cmd_variants)

    a = sub.add_parser("analyze", help="fingerprint Kineto trace files captured anywhere (any size, many ranks)")
    a.add_argument("traces", nargs="+", help=".json or .json.gz Kineto traces, or directories of them (one per rank)")
    a.add_argument("--json", help="write the versioned JSON document here")
    a.add_argument("--kernels", action="store_true", help="also list each trace's kernels")
    a.add_argument("--jobs", type=int, help="processes for several traces (default: one per core)")
    a.add_argument("--top", type=int, default=10, help="rows in the top-kernel tables (default 10)")
    a.add_argument("--cpu", action="store_true", help="accept traces without GPU events (fingerprint the CPU ops)")
    a.set_defaults(func=cmd_analyze)

    d = sub.add_parser("diff", help="compare two result JSONs or two traces, variant by variant")
    d.add_argument("a", help="baseline: an attnscope JSON document or a Kineto trace")
    d.add_argument("b", help="candidate: an attnscope JSON document or a Kineto trace")
    d.add_argument("--threshold", type=float, help="exit 1 when a time grows by more than this many percent")
    d.add_argument("--metrics", default="gpu,cpu", help="times the threshold applies to: gpu, cpu (default gpu,cpu)")
    d.add_argument("--json", help="write the diff as JSON here")
    d.set_defaults(func=cmd_diff)
    return p


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")  # silence Kineto's stderr chatter
    args = build_parser().parse_args(argv)
    from attnscope.report.json import DocumentError
    from attnscope.trace import TraceError

    try:
        return int(args.func(args))
    except (TraceError, DocumentError) as e:
        print(f"attnscope: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except ValueError as e:
        print(f"attnscope: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("attnscope: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
