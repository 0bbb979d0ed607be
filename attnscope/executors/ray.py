"""Jobs on Ray actors: one long-lived actor per GPU (or per CPU slot), reused across jobs.

An actor pays once for importing torch and initialising CUDA (seconds); a task per job would pay
it every time.  An actor that dies or hangs past the timeout becomes a ``crashed`` or
``timeout`` row and is replaced.  Ray is optional: ``pip install 'attnscope[ray]'``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from attnscope.executors import OnStart
from attnscope.executors.process import _row
from attnscope.job import Job
from attnscope.types import Result
from attnscope.variants import MODULES_ENV


class _Actor:
    """Runs in a Ray worker process: ``measure_one`` with the same per-process caches."""

    def __init__(self, spawned_at: float) -> None:
        from attnscope import worker  # imports torch once, here

        self._measure = worker.measure_one
        self._start_s: float | None = time.time() - spawned_at

    def measure(self, job: Job) -> Result:
        r = self._measure(job)
        if self._start_s is not None:
            r = replace(r, cost_s={**(r.cost_s or {}), "worker_start": self._start_s})
            self._start_s = None
        return r


@dataclass
class RayExecutor:
    devices: list[str] | None = None  # GPUs: one actor each, asking Ray for one GPU
    timeout_s: float | None = None
    address: str | None = None  # None: a local Ray started here
    workers: int | None = None  # actors when no GPUs are asked for (default 1), one CPU each
    _actors: list[Any] = field(default_factory=list)
    _cls: Any = None

    def _init(self) -> None:
        try:
            import ray
        except ImportError:
            raise ValueError("--executor ray needs Ray: pip install 'attnscope[ray]'") from None
        if not ray.is_initialized():
            env = {MODULES_ENV: os.environ.get(MODULES_ENV, "")}
            if self.address is None:  # a local cluster sees this checkout: give it our import path
                env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
            ray.init(
                address=self.address,
                runtime_env={"env_vars": env},
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
            )
        res = {"num_gpus": 1} if self.devices else {"num_cpus": 1}
        self._cls = ray.remote(**res)(_Actor)  # type: ignore[call-overload]

    def _new_actor(self) -> Any:
        return self._cls.remote(time.time())

    def run(self, jobs: Iterable[Job], on_start: OnStart | None = None) -> Iterator[Result]:
        import ray
        from ray.exceptions import RayActorError, WorkerCrashedError

        if self._cls is None:
            self._init()
        n = len(self.devices) if self.devices else max(1, self.workers or 1)
        while len(self._actors) < n:
            self._actors.append(self._new_actor())
        todo = deque(jobs)
        idle = list(range(n))
        running: dict[Any, tuple[int, Job, float]] = {}
        while todo or running:
            while idle and todo:
                i, job = idle.pop(), todo.popleft()
                if on_start:
                    on_start(job)
                running[self._actors[i].measure.remote(job)] = (i, job, time.monotonic())
            done, _ = ray.wait(list(running), num_returns=1, timeout=1.0)
            for ref in done:
                i, job, _t = running.pop(ref)
                try:
                    r: Result = ray.get(ref)
                except (RayActorError, WorkerCrashedError) as e:
                    r = _row(job, "crashed", f"the Ray actor died: {_first_line(e)}")
                if r.status == "crashed":  # died, or a sticky CUDA fault: a fresh actor takes over
                    with contextlib.suppress(Exception):
                        ray.kill(self._actors[i])
                    self._actors[i] = self._new_actor()
                idle.append(i)
                yield r
            if self.timeout_s is not None:
                yield from self._expire(running, idle)

    def _expire(self, running: dict[Any, tuple[int, Job, float]], idle: list[int]) -> Iterator[Result]:
        import ray

        now = time.monotonic()
        assert self.timeout_s is not None
        for ref, (i, job, t) in list(running.items()):
            if now - t > self.timeout_s:
                running.pop(ref)
                ray.kill(self._actors[i])
                self._actors[i] = self._new_actor()
                idle.append(i)
                yield _row(job, "timeout", f"no result after --timeout {self.timeout_s:g} s: the Ray actor was stopped")

    def close(self) -> None:
        import ray

        for a in self._actors:
            ray.kill(a)
        self._actors = []
        if self.address is None and ray.is_initialized():
            ray.shutdown()


def _first_line(e: BaseException) -> str:
    lines = [s.strip() for s in str(e).splitlines() if s.strip()]
    return lines[0][:300] if lines else type(e).__name__
