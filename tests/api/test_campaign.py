"""The one campaign loop (attnscope.api.campaign.measure_jobs) on jobs of a made-up kind: any job that implements
the Job protocol goes through the same executor, store, partial document, events, time limit and stop."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from attnscope.api.campaign import Finished, Interrupted, Planned, Started, measure_jobs
from attnscope.execute.executors.inline import InlineExecutor
from attnscope.execute.job import job_key
from attnscope.execute.store import Store


@dataclass(frozen=True)
class Row:
    variant: str
    status: str
    env: Any = None
    cost_s: dict[str, float] | None = None


@dataclass(frozen=True)
class Tick:
    """A job of another kind than attention or model: it 'measures' by returning a row, or by raising."""

    variant: str
    case: int
    raise_: type[BaseException] | None = None
    sleep_s: float = 0.0

    @property
    def key(self) -> tuple[str, str, str]:
        return job_key(self.variant, {"n": self.case})  # the store's identity of a row, as every job kind's

    def label(self) -> str:
        return f"{self.variant} #{self.case}"

    def measure(self) -> Row:
        if self.raise_ is not None:
            raise self.raise_()
        if self.sleep_s:
            import time

            time.sleep(self.sleep_s)
        return Row(self.variant, "ok", env={"where": "worker"})

    def failed(self, status: str, reason: str | None) -> Row:
        return Row(self.variant, status)


def as_row(r: Row) -> dict[str, Any]:
    return {"variant": r.variant, "case": {"n": int(r.variant[1:])}, "status": r.status, "env": r.env}


def test_rows_are_stored_as_they_come_and_the_events_say_so(tmp_path: Path):
    jobs = [Tick("t1", 1), Tick("t2", 2), Tick("t3", 3)]
    events: list[Any] = []
    store = Store(tmp_path / "s.jsonl")
    out = measure_jobs(jobs, InlineExecutor(), row=as_row, store=store, on_event=events.append, done_before=4)
    assert [r.variant for r in out.results] == ["t1", "t2", "t3"]
    assert [json.loads(x)["variant"] for x in (tmp_path / "s.jsonl").read_text().splitlines()] == ["t1", "t2", "t3"]
    assert events[0] == Planned(3, 4, 0)
    kinds = [type(e).__name__ for e in events[1:]]
    assert kinds == ["Started", "Finished"] * 3  # each job started, then its row saved, before the next
    fin = [e for e in events if isinstance(e, Finished)]
    assert [(e.label, e.done, e.total, e.status) for e in fin] == [
        ("t1 #1", 1, 3, "ok"),
        ("t2 #2", 2, 3, "ok"),
        ("t3 #3", 3, 3, "ok"),
    ]
    assert [e.variant for e in events if isinstance(e, Started)] == ["t1", "t2", "t3"]
    assert set(out.host) >= {"loaded", "why", "signs"}  # the host judged once, after the last job


def test_the_time_limit_makes_the_rest_skipped_rows_that_say_so_and_the_first_always_runs(tmp_path: Path):
    jobs = [Tick("t1", 1, sleep_s=0.05), Tick("t2", 2), Tick("t3", 3)]
    out = measure_jobs(jobs, InlineExecutor(), row=as_row, time_limit_s=0.01)
    assert [(r.variant, r.status) for r in out.results] == [("t1", "ok"), ("t2", "skipped"), ("t3", "skipped")]


def test_the_partial_document_is_rewritten_after_every_row(tmp_path: Path):
    doc = tmp_path / "d.json"
    seen: list[list[str]] = []

    def partial(done: list[Row]) -> dict[str, Any]:
        return {"partial": True, "results": [r.variant for r in done]}

    def after(r: Row) -> None:
        seen.append(json.loads(doc.read_text())["results"])

    out = measure_jobs([Tick("t1", 1), Tick("t2", 2)], InlineExecutor(), row=as_row, document=doc, partial=partial,
                       on_result=after)  # fmt: skip
    assert seen == [["t1"], ["t1", "t2"]] and out.in_document == 2 and out.unsaved == {}


@pytest.mark.parametrize("with_store", [True, False])
def test_a_stop_saves_then_says_what_was_saved_and_how_to_resume(tmp_path: Path, with_store: bool):
    store = Store(tmp_path / "s.jsonl") if with_store else None
    doc = tmp_path / "d.json"
    jobs = [Tick("t1", 1), Tick("t2", 2, raise_=KeyboardInterrupt), Tick("t3", 3)]
    closed: list[bool] = []

    class Closing(InlineExecutor):
        def close(self) -> None:
            closed.append(True)

    with pytest.raises(Interrupted) as e:
        measure_jobs(
            jobs,
            Closing(),
            row=as_row,
            store=store,
            document=None if with_store else doc,
            partial=lambda done: {"results": [r.variant for r in done]},
            resume="attnscope x --resume",
        )
    assert closed == [True]  # the executor closed on the way out
    assert isinstance(e.value.__cause__, KeyboardInterrupt)
    if with_store:
        assert e.value.what == f"1 row(s) saved in {tmp_path / 's.jsonl'} (1 measured in this run); resume with: " + (
            "attnscope x --resume"
        )
    else:
        assert e.value.what == f"1 row(s) saved in {doc} (marked partial)"
        assert json.loads(doc.read_text()) == {"results": ["t1"]}


def test_a_stop_before_any_row_says_nothing_was_measured(tmp_path: Path):
    with pytest.raises(Interrupted) as e:
        measure_jobs([Tick("t1", 1, raise_=KeyboardInterrupt)], InlineExecutor(), row=as_row)
    assert e.value.what == "nothing measured yet"


def test_a_row_whose_worker_died_gets_the_environment_of_one_that_answered():
    @dataclass(frozen=True)
    class Dies(Tick):
        def measure(self) -> Row:
            return Row(self.variant, "crashed", env=None)

    out = measure_jobs([Tick("t1", 1), Dies("t2", 2)], InlineExecutor(), row=as_row, env=lambda: {"where": "here"})
    assert [r.env for r in out.results] == [{"where": "worker"}, {"where": "worker"}]
    out = measure_jobs([Dies("t2", 2)], InlineExecutor(), row=as_row, env=lambda: {"where": "here"})
    assert [r.env for r in out.results] == [{"where": "here"}]
