"""Jobs in this process, one after another: cheapest, and no isolation (a crash ends the run)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from attnscope.execute.executors import OnStart, R
from attnscope.execute.job import Job


class InlineExecutor:
    def run(self, jobs: Iterable[Job[R]], on_start: OnStart | None = None) -> Iterator[R]:
        for job in jobs:
            if on_start:
                on_start(job)
            yield job.measure()

    def close(self) -> None:
        return None
