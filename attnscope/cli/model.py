"""``attnscope model``: arguments, checks before any torch work, the run, the printed report and the JSON."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path
from typing import Any

from attnscope.execute.model_bench import DTYPES, IMPLS, MODES

SCHEMA_VERSION = 1


def add_parser(sub: Any, help_text: str) -> None:
    """The full parser of the command; its help line is the top-level one (cli.LAZY_COMMANDS)."""
    m = sub.add_parser("model", help=help_text)
    m.add_argument(
        "--config",
        default="tiny",
        help="a preset (tiny, llama-3-8b, mistral-7b, qwen2-7b, gemma-2-9b, gpt2, bert-base), a config.json path, "
        "or a transformers model type (default: tiny)",
    )
    m.add_argument("--impl", help=f"comma list of {', '.join(IMPLS)} (default: every one that can run here)")
    m.add_argument("--mode", default="prefill,decode,train", help="comma list of prefill, decode, train (default: all)")
    m.add_argument("--device", help="cpu or cuda[:N] (default: cuda if available, else cpu)")
    m.add_argument("--batch", type=int, help="batch size (default 1 on CPU, 2 on CUDA)")
    m.add_argument(
        "--seq", type=int, help="tokens per sequence; decode: the KV cache length (default 128 CPU, 2048 CUDA)"
    )
    m.add_argument("--layers", type=int, help="override the depth (number of blocks) so that big models fit")
    m.add_argument("--dtype", default="bf16", help="bf16, fp16 or fp32 (default bf16)")
    m.add_argument("--budget", type=float, default=1.0, help="seconds of timing per row (default 1.0)")
    m.add_argument(
        "--time-limit",
        type=float,
        help="seconds; rows not started by then (the first always runs) are skipped rows that say so",
    )
    m.add_argument("--json", help="write the JSON document here (rewritten after every row)")
    m.add_argument("--html", help="also write a one-file HTML report here")
    m.add_argument("--trace-dir", help="keep the profiled step's Kineto trace of each row here")
    m.set_defaults(func=cmd_model)


def _split(arg: str | None, allowed: tuple[str, ...], what: str) -> list[str] | None:
    if arg is None:
        return None
    items = [x.strip() for x in arg.split(",") if x.strip()]
    bad = [x for x in items if x not in allowed]
    if bad or not items:
        raise ValueError(f"--{what}: unknown {', '.join(bad) or '(empty)'}; choose from {', '.join(allowed)}")
    return list(dict.fromkeys(items))


def _device(arg: str | None) -> str:
    import torch

    if arg is None:
        return "cuda" if torch.cuda.is_available() else "cpu"
    if arg == "cpu":
        return arg
    if arg.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ValueError(f"--device {arg}: CUDA is not available here")
        return arg
    raise ValueError(f"--device: expected cpu or cuda[:N], got {arg!r}")


def _check_html(path: str | None) -> None:
    if path and importlib.util.find_spec("attnscope.report.html.page") is None:
        raise ValueError("--html: this attnscope has no HTML report (attnscope.report.html.page is missing)")


def prepare(args: argparse.Namespace) -> tuple[Any, Any, list[str] | None, list[str], Any]:
    """Everything checked before any model is built: bad input is one line and exit 2."""
    from attnscope.execute.model_bench import BenchOptions
    from attnscope.workloads.hf.config import build_config, max_positions, require_transformers, resolve

    impls = _split(args.impl, IMPLS, "impl")
    modes = _split(args.mode, MODES, "mode") or list(MODES)
    if args.dtype not in DTYPES:
        raise ValueError(f"--dtype: expected one of {', '.join(DTYPES)}, got {args.dtype!r}")
    _check_html(args.html)
    spec = resolve(args.config)
    require_transformers()
    cfg = build_config(spec, layers=args.layers)
    device = _device(args.device)
    cuda = device.startswith("cuda")
    batch = args.batch if args.batch is not None else (2 if cuda else 1)
    seq = args.seq if args.seq is not None else (2048 if cuda else 128)
    if batch < 1 or seq < 2:
        raise ValueError(f"--batch must be ≥ 1 and --seq ≥ 2, got batch {batch}, seq {seq}")
    if args.budget <= 0:
        raise ValueError(f"--budget must be positive, got {args.budget}")
    if args.time_limit is not None and args.time_limit <= 0:
        raise ValueError(f"--time-limit must be positive, got {args.time_limit}")
    limit = max_positions(cfg)
    need = seq + (1 if "decode" in modes and not spec.is_encoder else 0)
    if limit is not None and need > limit:
        raise ValueError(f"{spec.name}: --seq {seq} needs {need} positions, the config allows {limit}")
    opts = BenchOptions(
        device,
        args.dtype,
        batch,
        seq,
        budget_s=args.budget,
        time_limit_s=args.time_limit,
        trace_dir=Path(args.trace_dir) if args.trace_dir else None,
    )
    return spec, cfg, impls, modes, opts


def document(
    spec: Any,
    cfg: Any,
    opts: Any,
    impls: list[str],
    modes: list[str],
    rows: list[dict[str, Any]],
    env: dict[str, Any] | None,
    recs: dict[str, Any] | None,
    partial: bool,
) -> dict[str, Any]:
    from attnscope.workloads.hf.config import describe

    return {
        "schema_version": SCHEMA_VERSION,
        "tool": "attnscope",
        "kind": "model",
        "partial": partial,
        "env": env,
        "config": {"name": spec.name, "source": spec.source, "about": spec.about, **describe(cfg)},
        "case": {
            "device": opts.device,
            "dtype": opts.dtype,
            "batch": opts.batch,
            "seq": opts.seq,
            "impls": impls,
            "modes": modes,
        },
        "results": sorted(rows, key=lambda r: (impls.index(r["impl"]), modes.index(r["mode"]))),
        "recommendations": recs or {},
    }


def _env(device: str) -> dict[str, Any]:
    import dataclasses

    import transformers

    from attnscope.measure.env import collect

    return {**dataclasses.asdict(collect(device)), "transformers": transformers.__version__}


def cmd_model(args: argparse.Namespace) -> int:
    from rich.console import Console

    from attnscope.analysis.recommend.model import annotate_rows
    from attnscope.document.schema import write_atomic
    from attnscope.execute.model_bench import IMPLS as ALL
    from attnscope.execute.model_runner import run_rows
    from attnscope.report.text.model import render, render_layers

    spec, cfg, impls, modes, opts = prepare(args)
    chosen = impls is not None
    impls = impls or list(ALL)
    env = _env(opts.device)
    rows: list[dict[str, Any]] = []
    console = Console(width=max(160, Console().width))

    def save(r: dict[str, Any]) -> None:
        rows.append(r)
        if args.json:  # after every row, insights included: a crash or a timeout never loses a finished row
            recs = annotate_rows(rows)
            write_atomic(args.json, document(spec, cfg, opts, impls, modes, rows, env, recs, partial=True))

    from attnscope.measure import host

    load = host.read_load()  # before the steps add their own threads to the load
    with console.status(f"attnscope model: {spec.name}") as status:
        run_rows(
            cfg,
            spec.is_encoder,
            impls,
            modes,
            opts,
            chosen=chosen,
            on_row=save,
            on_start=lambda s: status.update(f"{spec.name}: {s}"),
        )
    recs = annotate_rows(rows)
    doc = document(spec, cfg, opts, impls, modes, rows, env, recs, partial=False)
    walls = [(f"{r['impl']} {r['mode']}", r["wall_time"]) for r in rows if r.get("wall_time")]
    doc["host"] = host.assess(*load, [(name, [t["p25_us"], t["median_us"], t["p75_us"]]) for name, t in walls])
    if args.json:
        write_atomic(args.json, doc)
    title = (
        f"attnscope model — {spec.name} ({cfg.model_type}, {cfg.num_hidden_layers} layers) B={opts.batch} "
        f"S={opts.seq} {opts.dtype} on {opts.device} — {env['device_name']} — torch {env['torch']}, "
        f"transformers {env['transformers']}"
    )
    render(doc, console, title=title)
    render_layers(doc, console)
    if host.line(doc["host"]):
        console.print(f"  {host.line(doc['host'])}", style="yellow", highlight=False, markup=False)
    if args.json:
        console.print(f"  JSON written to {args.json}")
    if args.html:
        from attnscope.report.html.page import write_html

        console.print(f"  HTML written to {write_html(doc, args.html)}")
    return 0
