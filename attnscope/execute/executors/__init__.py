"""Executors run jobs and yield their results as they finish: inline, worker processes, Ray.

Whatever the executor, a job gives the same row: each calls the job's own ``measure`` (attnscope.execute.job.Job:
an attention job's is ``worker.measure_one``, a model row's ``model_job.measure``).  A job
that kills its worker, hangs past the timeout or poisons CUDA becomes a ``crashed`` or
``timeout`` row, and the executor goes on with a fresh worker.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any, Literal, Protocol, TypeVar

from attnscope.core.arguments import UsageError, parse_device
from attnscope.execute.job import Job, Measured

ExecutorName = Literal["inline", "process", "ray"]
EXECUTORS: tuple[str, ...] = ("inline", "process", "ray")
R = TypeVar("R", bound=Measured)
OnStart = Callable[[Job[Any]], None]
J = TypeVar("J", bound=Job[Any])


class Executor(Protocol):
    def run(self, jobs: Iterable[Job[R]], on_start: OnStart | None = None) -> Iterator[R]: ...

    def close(self) -> None: ...


PICK_WINDOW = 256  # jobs looked at for one of the worker's case: a scan of a 100,000-job queue would cost more


def pick(todo: deque[J], last: Hashable | None, busy: set[Hashable]) -> J:
    """The next job for a free worker: one of the case it ran last (its inputs and reference are cached
    there), else the first whose case no other worker is on, else the first.  With several workers a
    case stays on one of them; with one, the order is the queue's."""
    window = list(itertools.islice(todo, PICK_WINDOW))
    for want in (lambda c: c == last, lambda c: c not in busy):
        for i, j in enumerate(window):
            if want(j.case):
                del todo[i]
                return j
    return todo.popleft()


def parse_devices(spec: str | None) -> list[str] | None:
    """'cuda:0,cuda:1' → ['0', '1'] (CUDA_VISIBLE_DEVICES of each worker); 'all' → every GPU torch
    sees; None or 'cpu' → None (one worker, no pinning).  Each entry is read by the one device parser
    (:func:`attnscope.core.arguments.parse_device`); a bare index N stands for cuda:N."""
    if spec is None or spec.strip() in ("", "cpu"):
        return None
    if spec.strip() == "all":
        import torch

        n = torch.cuda.device_count()
        if n == 0:
            raise UsageError("devices 'all': torch sees no CUDA GPU", fields=("devices",))
        return [str(i) for i in range(n)]
    out = []
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        kind, idx = parse_device(f"cuda:{part}" if part.isdigit() else part, "devices")
        if kind != "cuda":
            raise UsageError(f"devices {spec!r}: takes cuda:N[,cuda:M...] or all, got {part!r}", fields=("devices",))
        out.append(str(idx if idx is not None else 0))
    if len(set(out)) != len(out):
        raise UsageError(f"devices {spec!r}: names a GPU twice", fields=("devices",))
    return out


def make_executor(
    name: str,
    *,
    devices: list[str] | None = None,
    timeout_s: float | None = None,
    ray_address: str | None = None,
    workers: int | None = None,
) -> Executor:
    if name == "inline":
        from attnscope.execute.executors.inline import InlineExecutor

        return InlineExecutor()
    if name == "process":
        from attnscope.execute.executors.process import ProcessExecutor

        return ProcessExecutor(devices=devices, timeout_s=timeout_s, workers=workers)
    if name == "ray":
        from attnscope.execute.executors.ray import RayExecutor

        return RayExecutor(devices=devices, timeout_s=timeout_s, address=ray_address, workers=workers)
    raise ValueError(f"unknown executor {name!r}; use one of {', '.join(EXECUTORS)}")
