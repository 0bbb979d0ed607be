"""Jobs in this process, one after another: cheapest, and no isolation (a crash ends the run)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from attnscope.core.types import Result
from attnscope.execute.executors import OnStart
from attnscope.execute.job import Job


class InlineExecutor:
    def run(self, jobs: Iterable[Job], on_start: OnStart | None = None) -> Iterator[Result]:
        from attnscope.execute.worker import measure_one

        for job in jobs:
            if on_start:
                on_start(job)
            yield measure_one(job)

    def close(self) -> None:
        return None
