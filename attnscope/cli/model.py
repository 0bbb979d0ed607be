"""``attnscope model``: arguments, the checks that name flags (before any torch work), one ``attnscope.api.model``
call (the grid through the one campaign loop), the printed report and the files."""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path
from typing import Any

from attnscope.api.modeling import DTYPES, IMPLS, MODES
from attnscope.cli.common import add_assets_arg
from attnscope.cli.flags import check_html, comma_items, listed_once, positive_int, seconds, timeout_seconds
from attnscope.core.arguments import MAX_DIM, MAX_LAYERS, check_timeout
from attnscope.core.case_text import parse_int_axis

__all__ = ["add_parser", "cmd_model", "prepare"]


def add_parser(sub: Any, help_text: str) -> None:
    """The full parser of the command; its help line is the top-level one (cli.LAZY_COMMANDS)."""
    m = sub.add_parser(
        "model",
        help=help_text,
        epilog="exit codes: 0 something measured; 1 nothing could be measured (every row skipped, error, OOM or "
        "timeout); 2 bad input, refused before any model is built; 130/143/129 interrupted (SIGINT/SIGTERM/SIGHUP), "
        "after saving the rows so far",
    )
    m.add_argument(
        "--config",
        default="tiny",
        help="a preset (tiny, llama-3-8b, mistral-7b, qwen2-7b, gemma-2-9b, gpt2, bert-base), a config.json path, "
        "or a transformers model type (default: tiny)",
    )
    m.add_argument(
        "--impl",
        type=listed_once("--impl", comma_items),
        help=f"comma list of {', '.join(IMPLS)} (default: every one that can run here)",
    )
    m.add_argument(
        "--mode",
        type=listed_once("--mode", comma_items),
        help="comma list of prefill, decode, train (default: every one that applies: an encoder such as bert-base "
        "has no decode step)",
    )
    m.add_argument("--device", help="cpu or cuda[:N] (default: cuda if available, else cpu)")
    m.add_argument(
        "--batch",
        type=listed_once("--batch", partial(parse_int_axis, "batch", limit=MAX_DIM["batch"])),
        help="batch size, or a grid: 1,4 or 1..8x2 (default 1 on CPU, 2 on CUDA)",
    )
    m.add_argument(
        "--seq",
        type=listed_once("--seq", partial(parse_int_axis, "seq", limit=MAX_DIM["seq"])),
        help="tokens per sequence (decode: the KV cache length), or a grid: 512,1024 or 512..4096x2 "
        "(default 128 CPU, 2048 CUDA)",
    )
    m.add_argument(
        "--layers",
        type=positive_int("layers", MAX_LAYERS),
        help="override the depth (number of blocks) so that big models fit",
    )
    m.add_argument(
        "--steps",
        type=positive_int("steps", 100_000),
        help="decode over a static KV cache that grows by one token a step, this many steps after the --seq "
        "prefill: each step timed and split (needs --mode with decode)",
    )
    m.add_argument(
        "--replay",
        type=listed_once("--replay", comma_items),
        help="with --steps: comma list of eager, graph (a CUDA graph captured once, replayed each step; CUDA only) "
        "(default: eager,graph on CUDA, eager on a CPU)",
    )
    m.add_argument("--dtype", default="bf16", help="bf16, fp16 or fp32 (default bf16)")
    m.add_argument("--budget", type=seconds("budget"), default=1.0, help="seconds of timing per row (default 1.0)")
    m.add_argument(
        "--time-limit",
        type=seconds("time-limit"),
        help="seconds; rows not started by then (the first always runs) are skipped rows that say so",
    )
    m.add_argument("--json", help="write the JSON document here (rewritten after every row)")
    m.add_argument("--out", help="append each row to this JSONL store as soon as it is measured (for --resume)")
    m.add_argument("--resume", action="store_true", help="with --out: measure only the rows not yet in it")
    m.add_argument(
        "--force",
        action="store_true",
        help="with --resume: resume although the settings recorded in <out>.settings.json (budget, torch, "
        "transformers, device) differ",
    )
    m.add_argument(
        "--executor",
        choices=("process", "inline", "ray"),
        default="process",
        help="process (default: rows in a worker process, so a crash or an OOM is a row), inline, ray",
    )
    m.add_argument("--devices", help="cuda:0,cuda:1 or all: one worker per GPU (process or ray executor)")
    m.add_argument(
        "--timeout", type=timeout_seconds, help="seconds per row before its worker is stopped (process, ray)"
    )
    m.add_argument("--html", help="also write a one-file HTML report here")
    add_assets_arg(m)
    m.add_argument("--trace-dir", help="keep the profiled step's Kineto trace of each row here")
    m.set_defaults(func=cmd_model)


def _split(arg: str | None, allowed: tuple[str, ...], what: str) -> list[str] | None:
    if arg is None:
        return None
    items = comma_items(arg)  # each listed once: the flag's type refused a repeat (listed_once)
    bad = [x for x in items if x not in allowed]
    if bad or not items:
        raise ValueError(f"--{what}: unknown {', '.join(bad) or '(empty)'}; choose from {', '.join(allowed)}")
    return items


def _replays(args: argparse.Namespace, modes: list[str], device: str) -> list[str] | None:
    """The replays of a --steps decode loop, checked: --replay without --steps, --steps without decode, and a graph
    on a CPU are refused in one line."""
    from attnscope.api.modeling import REPLAYS, graph_refusal

    steps = getattr(args, "steps", None)
    replay = getattr(args, "replay", None)
    if steps is None:
        if replay is not None:
            raise ValueError("--replay applies to a decode loop: add --steps N")
        return None
    if "decode" not in modes:
        raise ValueError(f"--steps {steps}: the decode loop needs decode in --mode (got {','.join(modes)})")
    replays = _split(replay, REPLAYS, "replay") or (list(REPLAYS) if device.startswith("cuda") else ["eager"])
    for r in replays:
        why = graph_refusal(r, device)
        if why:
            raise ValueError(f"--replay {r}: {why}")
    return replays


def _device(arg: str | None) -> str:
    """The one device parser (attnscope.api.checks.device): cpu or cuda[:N] that torch can reach."""
    from attnscope.api.checks import device

    return device(arg)


def _check_paths(args: argparse.Namespace) -> None:
    """Every output path checked before a model is built: a bad one is exit 2, not a lost measurement."""
    from attnscope.cli.flags import check_output_dir, check_output_file

    if args.resume and not args.out:
        raise ValueError("--resume needs --out (the JSONL store to complete)")
    if args.force and not args.resume:
        raise ValueError("--force is for --resume (it resumes although the recorded settings differ)")
    check_output_file(args.out, "--out")
    check_output_file(args.json, "--json")
    check_html(args)  # the one --html/--assets check: a writable page, plotly installed, assets beside it
    check_output_dir(args.trace_dir, "--trace-dir")
    from attnscope.core.files import check_outputs

    config = args.config if args.config and Path(args.config).is_file() else None
    check_outputs([("--config", config)], [("--out", args.out), ("--json", args.json), ("--html", args.html)])


def _check_size(
    cfg: Any, modes: list[str], impls: list[str], batch: int, seq: int, dtype: str, device: str, layers: int | None
) -> None:
    """Refuse, before anything is allocated, a mode whose estimate (weights, activations, optimizer state) does
    not fit in the free memory (attnscope.workloads.hf.size says how each term is counted)."""
    from attnscope.api.modeling import size_over

    over, free, params, usable = size_over(cfg, modes, impls, batch, seq, dtype, device)
    if over and free is not None:
        hint = "" if layers is not None else "; try --layers 2"
        raise ValueError(
            f"{cfg.model_type} with {cfg.num_hidden_layers} layers ({params / 1e9:,.2f} B parameters) does "
            f"not fit on {device}: {'; '.join(over)}, against {free / 1024**3:,.1f} GiB free ({usable:.0%} usable)"
            f"{hint}, a smaller --batch/--seq, or fewer --mode"
        )


def prepare(args: argparse.Namespace) -> Any:
    """Everything checked before any model is built (bad input is one line and exit 2): the grid to measure."""
    from attnscope.api.modeling import config_of, mode_refusal, modes_for, positions

    impls = _split(args.impl, IMPLS, "impl")
    given_modes = _split(args.mode, MODES, "mode")
    if args.dtype not in DTYPES:
        raise ValueError(f"--dtype: expected one of {', '.join(DTYPES)}, got {args.dtype!r}")
    # the numbers first, before any config is read or model library imported (--budget, --timeout and
    # --time-limit are checked by their types: finite seconds in (0, a week])
    given_batches = parse_int_axis("batch", args.batch, limit=MAX_DIM["batch"]) if args.batch is not None else None
    given_seqs = parse_int_axis("seq", args.seq, limit=MAX_DIM["seq"]) if args.seq is not None else None
    if given_seqs and min(given_seqs) < 2:
        raise ValueError(f"--seq must be ≥ 2 (a step predicts the next token), got {args.seq}")
    _check_paths(args)
    spec, cfg = config_of(args.config, args.layers)
    why = mode_refusal(cfg, given_modes or [])
    if why:
        raise ValueError(f"--mode {args.mode}: {why}")
    modes = given_modes or modes_for(cfg)
    device = _device(args.device)
    cuda = device.startswith("cuda")
    if args.devices and device != "cuda":
        raise ValueError(f"--devices {args.devices}: each worker gets its own GPU as cuda; here the device is {device}")
    batches = given_batches or [2 if cuda else 1]
    seqs = given_seqs or [2048 if cuda else 128]
    batch, seq = max(batches), max(seqs)  # the largest point: what the positions and the size check weigh
    check_timeout(args.executor, args.timeout)  # the one timeout check, as run and sweep make it
    if args.devices and args.executor == "inline":
        raise ValueError("--devices needs one worker per GPU: use --executor process or ray")
    replays = _replays(args, modes, device)
    limit = positions(cfg)
    need = seq + ((args.steps or 1) if "decode" in modes and not spec.is_encoder else 0)
    if limit is not None and need > limit:
        raise ValueError(f"{spec.name}: --seq {seq} needs {need} positions, the config allows {limit}")
    _check_size(cfg, modes, impls or list(IMPLS), batch, seq, args.dtype, device, args.layers)
    points = [(b, q) for q in seqs for b in batches]
    if args.trace_dir:  # before any model is built: no output where a kept trace goes
        from attnscope.api.modeling import trace_names
        from attnscope.core.files import check_trace_names

        names = trace_names(device, args.dtype, impls or list(IMPLS), modes, points)
        check_trace_names(args.trace_dir, names, [("--out", args.out), ("--json", args.json), ("--html", args.html)])
    from attnscope.api.modeling import ModelGrid

    return ModelGrid(spec, cfg, impls, modes, points, args.dtype, device, args.layers, args.steps, replays)


def cmd_model(args: argparse.Namespace) -> int:
    """The flags checked, one ``attnscope.api.model`` call (--out locked from before it is read until the command
    ends: a second writer is refused), then the report and the files."""
    import contextlib

    from attnscope.api import model
    from attnscope.api.campaign import Planned
    from attnscope.cli.common import Progress, stopping, store_in_flag_words
    from attnscope.cli.flags import check_output_file
    from attnscope.cli.sweep import _resume_command
    from attnscope.core.files import lock_store
    from attnscope.report.text.terminal import console

    check_output_file(args.out, "--out")  # its own one-line refusals come before the lock's
    with lock_store(args.out, "--out") if args.out else contextlib.nullcontext():
        grid = prepare(args)
        out, bar = console(), Progress()

        def shown(event: Any) -> None:
            if isinstance(event, Planned) and args.out:
                torn = f"; {event.torn} unreadable line(s) in it skipped" if event.torn else ""
                rows = event.total + event.done_before
                out.print(f"attnscope model: {rows} row(s); {event.done_before} already in {args.out}{torn}")
            bar(event)

        with store_in_flag_words(), stopping(), bar:
            doc = model(
                grid, budget_s=args.budget, time_limit_s=args.time_limit, trace_dir=args.trace_dir, out=args.out,
                resume=args.resume, force=args.force, partial_to=args.json, executor=args.executor,
                devices=parse_devices(args.devices), timeout_s=args.timeout, on_event=shown, lock=False,
                resume_with=_resume_command(args) if args.out else None,
            )  # fmt: skip
        return render_model(args, grid, doc, out)


def parse_devices(spec: str | None) -> list[str] | None:
    from attnscope.api.checks import devices

    return devices(spec)


def render_model(args: argparse.Namespace, grid: Any, doc: dict[str, Any], out: Any) -> int:
    """The tables, the host's verdict and the files; the exit status (1 when no row was measured)."""
    import sys

    from attnscope.api.report import traces_not_kept
    from attnscope.cli.common import say_unwritten, write_outputs
    from attnscope.report.text.model import render, render_decode_steps, render_layers
    from attnscope.report.text.terminal import host_caveat

    rows, env = doc["results"], doc["env"]
    unwritten = write_outputs(args, doc)  # --json, then --html (a full disk: said after the tables, exit 74)
    sizes = ", ".join(f"B={b} S={q}" for b, q in grid.points)
    title = (
        f"attnscope model — {grid.spec.name} ({grid.cfg.model_type}, {grid.cfg.num_hidden_layers} layers) {sizes} "
        f"{grid.dtype} on {grid.device} — {env['device_name']} — torch {env['torch']}, "
        f"transformers {env['transformers']}"
    )
    render(doc, out, title=title)
    render_decode_steps(doc, out)
    render_layers(doc, out)
    host_caveat(out, doc["host"])
    if args.out:
        out.print(f"  rows in {args.out}")
    if args.json and "--json" not in unwritten:
        out.print(f"  JSON written to {args.json}")
    if args.html and "--html" not in unwritten:
        out.print(f"  HTML written to {args.html}")
    if args.trace_dir:
        unwritten.update(traces_not_kept(rows, args.trace_dir))
    if unwritten:
        return say_unwritten(unwritten)
    if not any(r["status"] == "ok" for r in rows):
        why = "; ".join(dict.fromkeys(f"{r['impl']} {r['mode']}: {r['status']} ({r['reason']})" for r in rows))
        from attnscope.report.text.terminal import one_line

        print(f"attnscope: nothing was measured: {one_line(why, 400)}", file=sys.stderr)
        return 1
    return 0
