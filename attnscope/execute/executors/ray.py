"""Jobs on Ray actors: one long-lived actor per GPU (or per CPU slot), reused across jobs.

An actor pays once for importing torch and initialising CUDA (seconds); a task per job would pay
it every time.  An actor that dies or hangs past the timeout becomes a ``crashed`` or
``timeout`` row and is replaced.  Ray is optional: ``pip install -e '.[ray]'`` in the clone.

Where Ray listens.  Without an address, a new local Ray is started for the sweep (``address="local"``: neither
``RAY_ADDRESS`` in the environment nor a Ray already running on the machine is joined) with the node's address
127.0.0.1, so that its servers (the GCS, the raylet's, the workers', the runtime-env agent) listen on the loopback
interface only, and no dashboard.  Ray turns a node address of 127.0.0.1 into the machine's outward one
(``ray._private.services.resolve_ip_for_localhost``, which ``ray.init`` calls); that one call is held to 127.0.0.1
while the local Ray starts.  With an address (``--ray-address``), the cluster is joined only after its address
answers a TCP connection within :data:`CONNECT_TIMEOUT_S`, instead of ``ray.init`` waiting minutes on a dead one.
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

from attnscope.core.arguments import UsageError
from attnscope.execute.executors import OnStart, R, pick
from attnscope.execute.job import Job
from attnscope.variants import MODULES_ENV

# Starting an actor (a worker process, torch, CUDA) is not the job's time; past this it is a failure.
START_ALLOWANCE_S = 120.0
CONNECT_TIMEOUT_S = 10.0  # a cluster's address must answer a TCP connection within this
LOOPBACK = "127.0.0.1"


def cluster_endpoint(address: str) -> tuple[str, int] | None:
    """(host, port) a cluster address names (``host:port``, ``ray://host:port``, ``[v6]:port``), or None for the
    addresses Ray resolves itself (``auto``: the cluster ``ray start`` left on this machine)."""
    a = address.strip()
    if a in ("auto", "local", ""):
        return None
    a = a.split("://", 1)[-1].rstrip("/")
    host, sep, port = a.rpartition(":")
    if not sep or not port.isdigit() or not host or not 0 < int(port) < 65536:
        raise ValueError(f"Ray address {address!r}: expected host:port (or ray://host:port, or auto)")
    return host.strip("[]"), int(port)


def check_reachable(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Refuse (one-line ValueError) a cluster address that does not answer a TCP connection within ``timeout_s``:
    ``ray.init`` would wait minutes on it."""
    import socket

    end = cluster_endpoint(address)
    if end is None:
        return
    try:
        socket.create_connection(end, timeout=timeout_s).close()
    except OSError as e:
        raise ValueError(
            f"Ray address {address}: nothing answered at {end[0]}:{end[1]} within {timeout_s:g} s "
            f"({e.strerror or type(e).__name__})"
        ) from None


@contextlib.contextmanager
def _local_only(ray: Any) -> Iterator[None]:
    """While a local Ray starts: no ``RAY_ADDRESS`` (it would redirect the start to a cluster), and the node's
    address kept at 127.0.0.1 (see the module's docstring)."""
    env = os.environ.pop("RAY_ADDRESS", None)
    try:
        services = ray._private.services
        resolve = services.resolve_ip_for_localhost
    except AttributeError:  # another Ray: it keeps its own choice, which the caller reads back and says
        services = resolve = None
    if services is not None:
        services.resolve_ip_for_localhost = lambda host: host
    try:
        yield
    finally:
        if services is not None:
            services.resolve_ip_for_localhost = resolve
        if env is not None:
            os.environ["RAY_ADDRESS"] = env


class _Actor:
    """Runs in a Ray worker process: each job's ``measure``, with the same per-process caches."""

    def __init__(self, spawned_at: float) -> None:
        from attnscope.execute import worker  # imports torch once, here

        worker.import_all()
        self._start_s: float | None = time.time() - spawned_at

    def ready(self) -> bool:
        """Answered once torch is imported: a job's timeout runs from here, not from the actor's birth."""
        return True

    def measure(self, job: Job[R]) -> R:
        r = job.measure()
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
    _ready: list[Any] = field(default_factory=list)  # per actor: its ready() reference until it answers
    _cls: Any = None
    _started_ray: bool = False

    def _init(self) -> None:
        try:
            import ray
        except ImportError:
            raise UsageError(
                "executor ray needs Ray: pip install -e '.[ray]' in the attnscope clone", fields=("executor",)
            ) from None
        env = {MODULES_ENV: os.environ.get(MODULES_ENV, "")}
        if self.address is None:  # a local cluster sees this checkout: give it our import path
            env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        if not ray.is_initialized():
            if self.address is None:
                with _local_only(ray):
                    ray.init(
                        address="local",
                        _node_ip_address=LOOPBACK,
                        include_dashboard=False,
                        log_to_driver=False,
                        configure_logging=False,
                    )
            else:
                check_reachable(self.address)
                ray.init(address=self.address, include_dashboard=False, log_to_driver=False, configure_logging=False)
            self._started_ray = True
        res = {"num_gpus": 1} if self.devices else {"num_cpus": 1}
        # per actor, so that a Ray started by the caller still gives actors our variants and import path
        self._cls = ray.remote(**res, runtime_env={"env_vars": env})(_Actor)  # type: ignore[call-overload]

    def _new_actor(self, i: int) -> None:
        a = self._cls.remote(time.time())
        if i < len(self._actors):
            self._actors[i], self._ready[i] = a, a.ready.remote()
        else:
            self._actors.append(a)
            self._ready.append(a.ready.remote())

    def _started(self, i: int) -> bool:
        """Whether actor ``i`` has finished starting (torch imported); a job's clock starts after that."""
        import ray

        if self._ready[i] is None:
            return True
        done, _ = ray.wait([self._ready[i]], timeout=0)
        if done:
            self._ready[i] = None
        return bool(done)

    def run(self, jobs: Iterable[Job[R]], on_start: OnStart | None = None) -> Iterator[R]:
        import ray
        from ray.exceptions import RayError, RayTaskError

        if self._cls is None:
            self._init()
        n = len(self.devices) if self.devices else max(1, self.workers or 1)
        while len(self._actors) < n:
            self._new_actor(len(self._actors))
        todo = deque(jobs)
        idle = list(range(n))[::-1]
        last: dict[int, Any] = {}  # actor → the case of its last job (cached there)
        # ref → [actor, job, start (None: the actor is still starting), submitted]
        running: dict[Any, list[Any]] = {}
        while todo or running:
            while idle and todo:
                i = idle.pop()
                job = pick(todo, last.get(i), {j.case for _, j, *_ in running.values()})
                last[i] = job.case
                if on_start:
                    on_start(job)
                running[self._actors[i].measure.remote(job)] = [i, job, None, time.monotonic()]
            done, _ = ray.wait(list(running), num_returns=1, timeout=1.0)
            for ref in done:
                i, job = running.pop(ref)[:2]
                try:
                    r: R = ray.get(ref)
                except RayTaskError as e:  # raised inside measure: a bug there, the actor lives on
                    r = job.failed("error", f"the Ray task failed: {_first_line(e)}")
                except RayError as e:  # the actor died (a signal, os.abort, its node lost)
                    r = job.failed("crashed", f"the Ray actor died: {_first_line(e)}")
                if r.status == "crashed":  # died, or a sticky CUDA fault: a fresh actor takes over
                    with contextlib.suppress(Exception):
                        ray.kill(self._actors[i])
                    self._new_actor(i)
                idle.append(i)
                yield r
            if self.timeout_s is not None:
                yield from self._expire(running, idle)

    def _expire(self, running: dict[Any, list[Any]], idle: list[int]) -> Iterator[Any]:
        import ray

        now = time.monotonic()
        assert self.timeout_s is not None
        for ref, (i, job, t, submitted) in list(running.items()):
            why = None
            if t is None:
                if self._started(i):  # Ray runs an actor's calls in order: ready() answered, the job began
                    running[ref][2] = now
                elif now - submitted > self.timeout_s + START_ALLOWANCE_S:
                    why = (
                        f"the Ray actor did not start within {self.timeout_s + START_ALLOWANCE_S:g} s "
                        "(does the cluster have a free GPU or CPU for it?)"
                    )
            elif now - t > self.timeout_s:
                why = f"no result within the timeout of {self.timeout_s:g} s: the Ray actor was stopped"
            if why:
                running.pop(ref)
                with contextlib.suppress(Exception):
                    ray.kill(self._actors[i])
                self._new_actor(i)
                idle.append(i)
                yield job.failed("timeout", why)

    def close(self) -> None:
        import ray

        for a in self._actors:
            with contextlib.suppress(Exception):
                ray.kill(a)
        self._actors, self._ready = [], []
        if self._started_ray and ray.is_initialized():
            ray.shutdown()
            self._started_ray = False
        self._cls = None


def _first_line(e: BaseException) -> str:
    lines = [s.strip() for s in str(e).splitlines() if s.strip()]
    return lines[0][:300] if lines else type(e).__name__
