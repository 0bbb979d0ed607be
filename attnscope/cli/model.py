"""``attnscope model``: arguments, checks before any torch work, the run, the printed report and the JSON."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path
from typing import Any

from attnscope.cli.flags import positive_int, seconds, timeout_seconds
from attnscope.cli.model_jobs import SCHEMA_VERSION
from attnscope.cli.run import add_assets_arg, check_assets
from attnscope.core.arguments import MAX_DIM, MAX_LAYERS, check_timeout
from attnscope.execute.model_bench import DTYPES, IMPLS, MODES

__all__ = ["SCHEMA_VERSION", "add_parser", "cmd_model", "document", "prepare"]


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
    m.add_argument("--impl", help=f"comma list of {', '.join(IMPLS)} (default: every one that can run here)")
    m.add_argument("--mode", default="prefill,decode,train", help="comma list of prefill, decode, train (default: all)")
    m.add_argument("--device", help="cpu or cuda[:N] (default: cuda if available, else cpu)")
    m.add_argument("--batch", help="batch size, or a grid: 1,4 or 1..8x2 (default 1 on CPU, 2 on CUDA)")
    m.add_argument(
        "--seq",
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
    items = [x.strip() for x in arg.split(",") if x.strip()]
    bad = [x for x in items if x not in allowed]
    if bad or not items:
        raise ValueError(f"--{what}: unknown {', '.join(bad) or '(empty)'}; choose from {', '.join(allowed)}")
    twice = [x for x in dict.fromkeys(items) if items.count(x) > 1]
    if twice:
        raise ValueError(f"--{what}: {', '.join(twice)} given more than once")
    return items


def _replays(args: argparse.Namespace, modes: list[str], device: str) -> list[str] | None:
    """The replays of a --steps decode loop, checked: --replay without --steps, --steps without decode, and a graph
    on a CPU are refused in one line."""
    from attnscope.execute.model_decode import REPLAYS, graph_refusal

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
            raise ValueError(why)
    return replays


def _device(arg: str | None) -> str:
    """The one device check (attnscope.measure.env.check_device: cpu or cuda[:N] that torch reaches)."""
    from attnscope.measure.env import check_device, default_device

    return check_device(arg) or default_device()


def _check_html(path: str | None) -> None:
    if path and importlib.util.find_spec("attnscope.report.html.page") is None:
        raise ValueError("--html: this attnscope has no HTML report (attnscope.report.html.page is missing)")


def _check_paths(args: argparse.Namespace) -> None:
    """Every output path checked before a model is built: a bad one is exit 2, not a lost measurement."""
    from attnscope.cli.flags import check_output_dir, check_output_file

    if args.resume and not args.out:
        raise ValueError("--resume needs --out (the JSONL store to complete)")
    from attnscope.core.files import check_fresh_store

    check_fresh_store(args.out, resume=args.resume)
    check_output_file(args.out, "--out")
    check_output_file(args.json, "--json")
    check_output_file(args.html, "--html")
    check_assets(args)
    check_output_dir(args.trace_dir, "--trace-dir")
    from attnscope.core.files import check_outputs

    config = args.config if args.config and Path(args.config).is_file() else None
    check_outputs([("--config", config)], [("--out", args.out), ("--json", args.json), ("--html", args.html)])


def _check_size(
    cfg: Any, modes: list[str], impls: list[str], batch: int, seq: int, dtype: str, device: str, layers: int | None
) -> None:
    """Refuse, before anything is allocated, a mode whose estimate (weights, activations, optimizer state) does
    not fit in the free memory (attnscope.workloads.hf.size says how each term is counted)."""
    from attnscope.measure.env import free_memory_bytes
    from attnscope.workloads.hf.size import parameters, too_big
    from attnscope.workloads.sizing import HEADROOM

    free = free_memory_bytes(device)  # the one reader: the GPU's, or the host's within the container's limit
    over = too_big(cfg, modes, impls, batch=batch, seq=seq, dtype=dtype, free_bytes=free)
    if over and free is not None:
        hint = "" if layers is not None else "; try --layers 2"
        raise ValueError(
            f"{cfg.model_type} with {cfg.num_hidden_layers} layers ({parameters(cfg) / 1e9:,.2f} B parameters) does "
            f"not fit on {device}: {'; '.join(over)}, against {free / 1024**3:,.1f} GiB free ({HEADROOM:.0%} usable)"
            f"{hint}, a smaller --batch/--seq, or fewer --mode"
        )


def prepare(args: argparse.Namespace) -> tuple[Any, Any, list[str] | None, list[str], Any, list[tuple[int, int]]]:
    """Everything checked before any model is built: bad input is one line and exit 2."""
    from attnscope.core.case_text import parse_int_axis
    from attnscope.execute.model_bench import BenchOptions
    from attnscope.workloads.hf.config import build_config, max_positions, require_transformers, resolve

    impls = _split(args.impl, IMPLS, "impl")
    modes = _split(args.mode, MODES, "mode") or list(MODES)
    if args.dtype not in DTYPES:
        raise ValueError(f"--dtype: expected one of {', '.join(DTYPES)}, got {args.dtype!r}")
    # the numbers first, before any config is read or model library imported (--budget, --timeout and
    # --time-limit are checked by their types: finite seconds in (0, a week])
    given_batches = parse_int_axis("batch", args.batch, limit=MAX_DIM["batch"]) if args.batch is not None else None
    given_seqs = parse_int_axis("seq", args.seq, limit=MAX_DIM["seq"]) if args.seq is not None else None
    if given_seqs and min(given_seqs) < 2:
        raise ValueError(f"--seq must be ≥ 2 (a step predicts the next token), got {args.seq}")
    _check_html(args.html)
    _check_paths(args)
    spec = resolve(args.config)
    require_transformers()
    cfg = build_config(spec, layers=args.layers)
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
    args.replays = _replays(args, modes, device)
    limit = max_positions(cfg)
    need = seq + ((args.steps or 1) if "decode" in modes and not spec.is_encoder else 0)
    if limit is not None and need > limit:
        raise ValueError(f"{spec.name}: --seq {seq} needs {need} positions, the config allows {limit}")
    _check_size(cfg, modes, impls or list(IMPLS), batch, seq, args.dtype, device, args.layers)
    points = [(b, q) for q in seqs for b in batches]
    opts = BenchOptions(
        device,
        args.dtype,
        points[0][0],
        points[0][1],
        grid=len(points) > 1,
        budget_s=args.budget,
        time_limit_s=args.time_limit,
        trace_dir=Path(args.trace_dir) if args.trace_dir else None,
    )
    return spec, cfg, impls, modes, opts, points


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
    points: list[tuple[int, int]] | None = None,
) -> dict[str, Any]:
    from attnscope.workloads.hf.config import describe

    grid = points or [(opts.batch, opts.seq)]

    def order(r: dict[str, Any]) -> tuple[int, int, int]:
        p = (r.get("batch", opts.batch), r.get("seq", opts.seq))
        return impls.index(r["impl"]), grid.index(p) if p in grid else len(grid), modes.index(r["mode"])

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
            "points": [{"batch": b, "seq": q} for b, q in grid],
        },
        "results": sorted(rows, key=order),
        "recommendations": recs or {},
    }


def _env(device: str) -> dict[str, Any]:
    import dataclasses

    import transformers

    from attnscope.measure.env import collect

    return {**dataclasses.asdict(collect(device)), "transformers": transformers.__version__}


def _saved(args: argparse.Namespace, rows: list[dict[str, Any]], new: int) -> str:
    """What an interrupted model run leaves, naming only the files that exist: the rows so far and how to resume."""
    where = [p for p in (args.out, args.json) if p and Path(p).exists()]
    if not rows:
        return "nothing measured yet"
    if not where:
        return f"{new} row(s) measured, not saved (no --out or --json was given)"
    how = f"; resume with --resume --out {args.out}" if args.out and Path(args.out).exists() else ""
    return f"{len(rows)} row(s) saved in {' and '.join(where)} ({new} measured in this run){how}"


def cmd_model(args: argparse.Namespace) -> int:
    """The model's rows, with --out locked from before it is read until the command ends (a second writer is
    refused)."""
    if not args.out:
        return _model(args)
    from attnscope.cli.flags import check_output_file
    from attnscope.core.files import lock_store

    check_output_file(args.out, "--out")  # its own one-line refusals come before the lock's
    with lock_store(args.out, "--out"):
        return _model(args)


def _model(args: argparse.Namespace) -> int:
    import sys
    import time

    from attnscope.analysis.recommend.model import annotate_rows
    from attnscope.cli import stop
    from attnscope.cli.model_jobs import _Bar, _executor, _jobs, _same_run
    from attnscope.cli.run import say_unwritten, traces_not_kept
    from attnscope.core.files import WriteError
    from attnscope.document.schema import write_atomic
    from attnscope.execute.job import job_key
    from attnscope.execute.model_bench import IMPLS as ALL
    from attnscope.execute.store import Store
    from attnscope.report.text.model import render, render_decode_steps, render_layers
    from attnscope.report.text.terminal import console as terminal_console

    spec, cfg, impls, modes, opts, points = prepare(args)
    chosen = impls is not None
    impls = impls or list(ALL)
    env = _env(opts.device)
    store = Store(args.out) if args.out else None
    label = {"config": spec.name, "layers": cfg.num_hidden_layers}
    # Rows of this run already in the store (--resume): kept as they are, never measured again.
    earlier = [r for r in (store.rows() if store else []) if _same_run(r, label, opts, impls, modes, points)]
    rows: list[dict[str, Any]] = list(earlier)
    console = terminal_console()  # the terminal's width (COLUMNS where set); names printed as data
    jobs = _jobs(args, spec, cfg, impls, modes, opts, points, chosen)
    if store is not None:
        console.print(
            f"attnscope model: {len(jobs)} row(s); {len(earlier)} already in {args.out}"
            + (f"; {store.num_torn} unreadable line(s) in it skipped" if store.num_torn else ""),
            highlight=False,
        )

    unwritten: dict[str, str] = {}  # a full disk: the rows stay in memory and are printed; said at the end (74)

    def save(r: dict[str, Any]) -> None:
        rows.append(r)
        if store is not None and "--out" not in unwritten:
            try:
                store.append(r)
            except WriteError as e:
                unwritten["--out"] = f"{e}; the rows before it are saved there"
        if args.json:  # after every row, insights included: a crash or a timeout never loses a finished row
            recs = annotate_rows(rows)
            try:
                write_atomic(args.json, document(spec, cfg, opts, impls, modes, rows, env, recs, True, points))
            except WriteError:
                pass  # tried again with the whole document at the end, and said then

    from attnscope.measure import host

    load = host.read_load()  # before the steps add their own threads to the load
    if args.trace_dir:  # before any model is built: no output where a kept trace goes
        import dataclasses

        from attnscope.core.files import check_trace_names
        from attnscope.execute.model_bench import trace_name

        at = [dataclasses.replace(opts, batch=b, seq=q) for b, q in points]
        names = [trace_name(o, i, m) for i in impls for o in at for m in modes]
        check_trace_names(args.trace_dir, names, [("--out", args.out), ("--json", args.json), ("--html", args.html)])
    done = {job_key(r["variant"], r["case"]) for r in earlier}
    todo = [j for j in jobs if j.key not in done]
    ex = _executor(args)
    old = stop.install()  # SIGTERM (`timeout`, job schedulers), SIGHUP (a closed terminal) save as Ctrl-C does
    try:
        bar = _Bar(len(todo))
        with bar.progress:
            t0 = time.monotonic()
            for res in ex.run(todo, on_start=bar.started):
                save(res.row)
                bar.finished(res.row)
                late = args.time_limit is not None and time.monotonic() - t0 > args.time_limit
                if late and any(r["status"] != "skipped" for r in rows):  # the first row always runs
                    break
            finished = {job_key(r["variant"], r["case"]) for r in rows}
            why = f"not started: the --time-limit of {args.time_limit or 0:g} s was spent on the rows before it"
            for j in todo:
                if j.key not in finished:
                    save(j.failed("skipped", why).row)
    except KeyboardInterrupt as e:
        stop.restore(old)
        return stop.interrupted(e, _saved(args, rows, len(rows) - len(earlier)))
    finally:  # an exception too: the workers stopped, their temporary folder removed
        ex.close()
    stop.restore(old)
    recs = annotate_rows(rows)
    doc = document(spec, cfg, opts, impls, modes, rows, env, recs, False, points)
    walls = [(f"{r['impl']} {r['mode']}", r["wall_time"]) for r in rows if r.get("wall_time")]
    doc["host"] = host.assess(*load, [(name, [t["p25_us"], t["median_us"], t["p75_us"]]) for name, t in walls])
    if args.json:
        try:
            write_atomic(args.json, doc)
        except WriteError as e:
            unwritten["--json"] = str(e)
    sizes = ", ".join(f"B={b} S={q}" for b, q in points)
    title = (
        f"attnscope model — {spec.name} ({cfg.model_type}, {cfg.num_hidden_layers} layers) {sizes} "
        f"{opts.dtype} on {opts.device} — {env['device_name']} — torch {env['torch']}, "
        f"transformers {env['transformers']}"
    )
    render(doc, console, title=title)
    render_decode_steps(doc, console)
    render_layers(doc, console)
    if host.line(doc["host"]):
        console.print(f"  {host.line(doc['host'])}", style="yellow", highlight=False, markup=False)
    if args.out and "--out" not in unwritten:
        console.print(f"  rows in {args.out}")
    if args.json and "--json" not in unwritten:
        console.print(f"  JSON written to {args.json}")
    if args.html:
        from attnscope.api.report import write_html

        try:
            console.print(f"  HTML written to {write_html(doc, args.html, assets=args.assets)}")
        except WriteError as e:
            unwritten["--html"] = str(e)
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
