"""The one campaign loop (attnscope.api.campaign.measure_jobs) on jobs of a made-up kind: any job that implements
the Job protocol goes through the same executor, store, partial document, events, time limit and stop."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from attnscope.api.campaign import Finished, Interrupted, Planned, Started, StoreHoldsRows, measure_jobs, open_store
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


def test_the_first_event_counts_the_store_s_unreadable_lines(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    Store(path).append({"variant": "t9", "case": {"n": 9}, "status": "ok"})
    with path.open("ab") as f:
        f.write(b'{"torn\n')  # a write cut short
    store = Store(path)
    store.rows()  # read once, as a resume reads it before planning
    events: list[Any] = []
    measure_jobs([Tick("t1", 1)], InlineExecutor(), row=as_row, store=store, on_event=events.append)
    assert events[0] == Planned(1, 0, 1)
    events.clear()
    measure_jobs([Tick("t2", 2)], InlineExecutor(), row=as_row, on_event=events.append)  # no store: nothing torn
    assert events[0] == Planned(1, 0, 0)


def test_what_each_event_and_callback_carries():
    events: list[Any] = []
    seen: list[Row] = []

    @dataclass(frozen=True)
    class Elsewhere(Tick):  # its row names another case than its job's key: the label falls back to the variant
        def measure(self) -> Row:
            return Row("t7", "ok")

    out = measure_jobs([Tick("t1", 1), Elsewhere("t2", 2)], InlineExecutor(), row=as_row, on_event=events.append,
                       on_result=seen.append)  # fmt: skip
    assert seen == out.results and [r.variant for r in seen] == ["t1", "t7"]
    fin = [e for e in events if isinstance(e, Finished)]
    assert [e.row for e in fin] == [as_row(r) for r in seen]
    assert [e.label for e in fin] == ["t1 #1", "t7"]
    assert [e.label for e in events if isinstance(e, Started)] == ["t1 #1", "t2 #2"]
    assert 0 <= out.elapsed_s < 60


def test_the_skipped_rows_say_the_limit_and_a_first_skipped_row_does_not_spend_it():
    @dataclass(frozen=True)
    class Refused(Tick):
        def measure(self) -> Row:
            import time

            time.sleep(0.02)
            return Row(self.variant, "skipped")

    reasons: dict[str, str | None] = {}

    @dataclass(frozen=True)
    class Said(Tick):
        def failed(self, status: str, reason: str | None) -> Row:
            reasons[self.variant] = reason
            return Row(self.variant, status)

    out = measure_jobs([Refused("t1", 1), Said("t2", 2, sleep_s=0.02), Said("t3", 3)], InlineExecutor(), row=as_row,
                       time_limit_s=0.01)  # fmt: skip
    # t1 was skipped by itself: the limit is not spent until a row ran, so t2 runs; t3 is then left out
    assert [(r.variant, r.status) for r in out.results] == [("t1", "skipped"), ("t2", "ok"), ("t3", "skipped")]
    # in the library's words (its caller gave time_limit_s, typed no flag)
    assert reasons == {"t3": "not started: the time limit of 0.01 s was spent on the rows before it"}


def test_the_host_is_judged_on_the_timings_given():
    wide = lambda results: [(r.variant, [1.0, 10.0, 100.0]) for r in results]  # noqa: E731
    out = measure_jobs([Tick("t1", 1)], InlineExecutor(), row=as_row, timings=wide)
    assert "spread" in out.host["signs"]
    out = measure_jobs([Tick("t1", 1)], InlineExecutor(), row=as_row)  # rows without a host time: no spread
    assert "spread" not in out.host["signs"]


def test_a_document_that_cannot_be_written_costs_no_row_and_is_said(tmp_path: Path):
    (tmp_path / "file").write_text("not a folder")
    doc = tmp_path / "file" / "d.json"
    partial = lambda done: {"results": [r.variant for r in done]}  # noqa: E731
    out = measure_jobs([Tick("t1", 1), Tick("t2", 2)], InlineExecutor(), row=as_row, document=doc, partial=partial)
    assert [r.variant for r in out.results] == ["t1", "t2"] and out.in_document == 0
    assert list(out.unsaved) == ["document"] and out.unsaved["document"].startswith(f"{doc}: not written")
    with pytest.raises(Interrupted) as e:
        measure_jobs([Tick("t1", 1), Tick("t2", 2, raise_=KeyboardInterrupt)], InlineExecutor(), row=as_row,
                     document=doc, partial=partial)  # fmt: skip
    assert str(e.value) == e.value.what == f"1 finished row(s) not saved: {doc} could not be written"


def test_a_store_that_cannot_grow_says_what_it_holds_and_how_to_resume(tmp_path: Path):
    import errno

    from attnscope.api.campaign import StoreFull
    from attnscope.core.files import WriteError

    class Full(Store):  # the disk fills after the first row
        def _append(self, line: bytes) -> None:
            if self.path.exists():
                raise OSError(errno.ENOSPC, "No space left on device")
            super()._append(line)

    store = Full(tmp_path / "s.jsonl")
    with pytest.raises(StoreFull) as e:
        measure_jobs([Tick("t1", 1), Tick("t2", 2)], InlineExecutor(), row=as_row, store=store, resume="x --resume")
    assert isinstance(e.value, WriteError) and e.value.path == store.path and e.value.errno == errno.ENOSPC
    said = str(e.value)
    assert said.startswith(f"{store.path}: not written") and "ENOSPC" in said
    assert said.endswith(f"; 1 row(s) are saved in {store.path}: free space, then resume with: x --resume")
    (tmp_path / "file").write_text("not a folder")  # a store that cannot be read back either
    gone = Store(tmp_path / "file" / "s.jsonl")
    with pytest.raises(StoreFull) as e:
        measure_jobs([Tick("t1", 1)], InlineExecutor(), row=as_row, store=gone)
    assert str(e.value).endswith(f"; the rows before it are saved in {gone.path}: free space, then resume with: resume")


def test_the_environment_of_this_process_is_asked_once():
    @dataclass(frozen=True)
    class Dies(Tick):
        def measure(self) -> Row:
            return Row(self.variant, "crashed", env=None)

    asked: list[int] = []

    def here() -> dict[str, str]:
        asked.append(1)
        return {"where": "here"}

    out = measure_jobs([Dies("t1", 1), Dies("t2", 2)], InlineExecutor(), row=as_row, env=here)
    assert [r.env for r in out.results] == [{"where": "here"}] * 2 and asked == [1]


def test_a_resume_is_checked_against_the_recorded_settings(tmp_path: Path):
    from attnscope.api.campaign import SettingsDiffer, record_settings, resume_settings

    out = tmp_path / "s.jsonl"
    now = {"budget_s": 0.5, "flush_l2": False, "torch": "2.13", "device": "cpu"}
    assert resume_settings(out, now, resuming=False, force=False) == now  # nothing to compare: record these
    assert resume_settings(out, now, resuming=True, force=False) == now  # no record yet
    record_settings(out, {**now, "budget_s": 0.2})
    record_settings(out, None)  # None: the record stays as it is
    path = tmp_path / "s.jsonl.settings.json"
    assert json.loads(path.read_text())["budget_s"] == 0.2
    with pytest.raises(SettingsDiffer) as e:
        resume_settings(out, now, resuming=True, force=False)
    assert (e.value.out, e.value.path, e.value.differences) == (out, path, [("budget_s", 0.2, 0.5)])
    assert str(e.value) == (
        f"resume: the rows in {out} were measured with other settings (timing_budget_s 0.2 → 0.5, as recorded in "
        f"{path}): pass the same settings, another out, or force=True"
    )
    assert resume_settings(out, now, resuming=True, force=True) is None  # forced: the first run's record is kept
    assert resume_settings(out, {**now, "budget_s": 0.2}, resuming=True, force=False) == {**now, "budget_s": 0.2}


def test_what_a_stop_says_in_each_case(tmp_path: Path):
    from attnscope.api.campaign import _saved_text

    store = Store(tmp_path / "s.jsonl")
    doc = tmp_path / "d.json"
    rows = [Row("t1", "ok"), Row("t2", "ok")]
    assert (
        _saved_text(None, None, rows, {}, 0, "r") == "2 row(s) measured, not saved (no file to save them in was given)"
    )
    assert _saved_text(store, None, [], {}, 0, "r") == "nothing measured yet; start again with: r"
    assert _saved_text(None, None, [], {}, 0, "r") == "nothing measured yet"
    assert _saved_text(store, None, [], {}, 0, None) == "nothing measured yet"
    doc.write_text("{}")
    assert _saved_text(None, doc, rows, {}, 3, "r") == f"5 row(s) saved in {doc} (marked partial)"
    assert _saved_text(None, doc, rows, {"document": "full"}, 0, "r") == (
        f"2 finished row(s) not saved: {doc} could not be written"
    )
    for r in rows:
        store.append(as_row(r))
    store.append(as_row(Row("t3", "ok")))
    assert _saved_text(store, doc, rows, {}, 1, "r") == (
        f"3 row(s) saved in {store.path} and {doc} (2 measured in this run); resume with: r"
    )
    assert _saved_text(store, None, rows, {}, 1, None) == f"3 row(s) saved in {store.path} (2 measured in this run)"


def test_a_store_is_opened_only_when_it_can_be_used(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    assert open_store(path, resume=False).path == path  # none yet: fine, with or without resume
    assert open_store(path, resume=True).done() == set()
    path.write_bytes(b"")
    assert open_store(path, resume=False).path == path  # empty: holds nothing
    path.write_text("one line that is no row\n")
    assert open_store(path, resume=True).path == path  # one torn line: a write cut short, the store resumes
    path.write_text("no row\nno row either\n")
    with pytest.raises(StoreHoldsRows) as e:
        open_store(path, resume=True)
    assert (e.value.rows, e.value.torn) == (0, 2)
    assert str(e.value) == f"{path}: not an attnscope store (no result rows in its 2 lines); choose another file"


def test_a_long_time_limit_leaves_every_row_to_run_and_a_document_written_again_clears_its_failure(tmp_path: Path):
    from attnscope.core.files import WriteError

    calls: list[int] = []

    def partial(done: list[Row]) -> dict[str, Any]:
        calls.append(1)
        if len(calls) == 1:  # the first rewrite fails (a full disk), the next succeeds
            raise WriteError(tmp_path / "d.json", OSError(28, "No space left on device"))
        return {"results": [r.variant for r in done]}

    jobs = [Tick("t1", 1), Tick("t2", 2), Tick("t3", 3)]
    out = measure_jobs(jobs, InlineExecutor(), row=as_row, time_limit_s=60.0, document=tmp_path / "d.json",
                       partial=partial)  # fmt: skip
    assert [r.status for r in out.results] == ["ok", "ok", "ok"]
    assert out.unsaved == {} and out.in_document == 3


def test_the_worker_s_environment_spares_asking_this_process():
    @dataclass(frozen=True)
    class Dies(Tick):
        def measure(self) -> Row:
            return Row(self.variant, "crashed", env=None)

    asked: list[int] = []
    measure_jobs([Tick("t1", 1), Dies("t2", 2)], InlineExecutor(), row=as_row, env=lambda: asked.append(1))
    assert asked == []


def test_every_differing_setting_is_named_and_a_one_byte_file_is_no_store(tmp_path: Path):
    from attnscope.api.campaign import SettingsDiffer, host_verdict

    e = SettingsDiffer("s.jsonl", Path("s.jsonl.settings.json"), [("budget_s", 0.2, 0.5), ("torch", "2.11", "2.13")])
    assert "(timing_budget_s 0.2 → 0.5; torch 2.11 → 2.13, as recorded in s.jsonl.settings.json)" in str(e)
    (tmp_path / "x.jsonl").write_text("x")
    with pytest.raises(StoreHoldsRows):
        open_store(tmp_path / "x.jsonl", resume=False)
    busy = host_verdict((100.0, 1), [])  # a load of 100 on one core: the load's sign
    assert busy["loaded"] is True and busy["signs"] == ["load"] and busy["cores"] == 1
    assert host_verdict((None, None), [("t1", [1.0, 10.0, 100.0])])["signs"] == ["spread"]  # the timings judged
