"""``attnscope model``'s rows as jobs: building them, the executor, the progress bar, signals, and ``recommend`` on
the rows of ``model --out``."""

from __future__ import annotations

import argparse
from typing import Any

SCHEMA_VERSION = 1  # of the model document (``kind: "model"``)


class _Bar:
    """Rows done of the rows to measure, elapsed time and ETA, the row now running (stderr); where stderr is not a
    terminal, one plain line per finished row instead."""

    def __init__(self, total: int) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        from attnscope.report.text.terminal import console as terminal_console

        console = terminal_console(stderr=True)
        self.plain = not console.is_terminal
        self.total, self.done = total, 0
        self.progress = Progress(
            BarColumn(bar_width=30),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TextColumn("{task.description}", markup=False),
            console=console,
            disable=self.plain,
        )
        self.task = self.progress.add_task("", total=total)

    def started(self, job: Any) -> None:
        self.progress.update(self.task, description=f"{job.variant} {job.case.mode} {job.case.label()}")

    def finished(self, row: dict[str, Any]) -> None:
        import sys

        self.done += 1
        self.progress.update(self.task, advance=1)
        if self.plain:
            t = row.get("median_us")
            what = f"{t:,.1f} µs per step" if row["status"] == "ok" and t else (row.get("reason") or "")[:160]
            from attnscope.report.text.terminal import clean

            print(
                clean(
                    f"[{self.done}/{self.total}] {row['status']} {row['impl']} {row['mode']} B={row['batch']} "
                    f"S={row['seq']}: {what}"
                ),
                file=sys.stderr,
                flush=True,
            )


def _jobs(
    args: argparse.Namespace,
    spec: Any,
    cfg: Any,
    impls: list[str],
    modes: list[str],
    opts: Any,
    points: list[tuple[int, int]],
    chosen: bool,
) -> list[Any]:
    """One job per (implementation, batch, seq, mode), in that order: a worker builds each model once."""
    import json

    from attnscope.execute.model_job import ModelCase, ModelJob

    values = {**spec.values, "model_type": cfg.model_type}
    if args.layers is not None:
        from attnscope.workloads.hf.config import _with_depth

        values = _with_depth(values, args.layers)
    steps = getattr(args, "steps", None)
    replays: list[str | None] = list(getattr(args, "replays", None) or []) or [None]
    return [
        ModelJob(
            ModelCase(
                spec.name,
                spec.source,
                json.dumps(values, sort_keys=True),
                None,
                cfg.num_hidden_layers,
                b,
                q,
                opts.dtype,
                opts.device,
                mode,
                steps if mode == "decode" and steps else None,
                replay if mode == "decode" and steps else None,
            ),
            impl,
            budget_s=opts.budget_s,
            explicit=chosen,
            trace_dir=str(opts.trace_dir) if opts.trace_dir else None,
            grid=len(points) > 1,
        )
        for impl in impls
        for b, q in points
        for mode in modes
        for replay in (replays if mode == "decode" and steps else [None])
    ]


def _executor(args: argparse.Namespace) -> Any:
    from attnscope.execute.executors import make_executor, parse_devices

    return make_executor(args.executor, devices=parse_devices(args.devices), timeout_s=args.timeout)


def _same_run(
    r: dict[str, Any],
    label: dict[str, Any],
    opts: Any,
    impls: list[str],
    modes: list[str],
    points: list[tuple[int, int]],
) -> bool:
    """A store row that belongs to this run's grid (same config, depth, dtype and device)."""
    c = r.get("case") or {}
    return (
        isinstance(c, dict)
        and c.get("config") == label["config"]
        and c.get("layers") == label["layers"]
        and c.get("dtype") == opts.dtype
        and c.get("device") == opts.device
        and r.get("impl") in impls
        and c.get("mode") in modes
        and (c.get("batch"), c.get("seq")) in points
    )
