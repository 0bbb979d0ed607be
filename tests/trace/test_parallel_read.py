"""A trace read on two cores (trace/parallel.py: a forked child reads the first part) gives the same records, in the
same order, as one process reading it alone; a child that fails or is not taken up leaves the result unchanged."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

import attnscope.trace as trace_pkg
from attnscope.trace import TraceError, load_trace, parallel
from tests.trace.test_trace_golden import traces

ROOT = Path(__file__).resolve().parents[2]
LLAMA = ROOT / "tests" / "data" / "llama_train_sdpa.json.gz"


@pytest.fixture(autouse=True)
def _whatever_the_load(monkeypatch):
    """The child is started whatever the machine's load (a busy machine would otherwise read alone)."""
    monkeypatch.setenv(parallel.ENV, "2")


def _records(tr):
    return {
        "events": tr.num_events,
        "skipped": tr.num_skipped,
        # every field of every op, its shapes as recorded (parsed from the kept text)
        "ops": [(o.name, o.tid, o.pid, o.ts, o.dur, o.ext_id, o.shapes()) for o in tr.cpu_ops],
        "gpu": tr.gpu,
        "runtime": tr.runtime,
        "annotations": tr.annotations,
        "modules": tr.modules,
        "memory": tr.memory,
        "meta": tr.meta,
        "props": tr.device_properties,
        "notes": tr.notes,
    }


def _alone(path, monkeypatch):
    monkeypatch.setenv(parallel.ENV, "1")
    parallel.start(path)  # refused by the switch: nothing pending
    assert parallel.take(Path(path)) is None
    tr = load_trace(path)
    monkeypatch.setenv(parallel.ENV, "2")
    return tr


def _two_cores(path, monkeypatch, share, used: bool | None = True):
    """The trace read with a child for its first part; ``used``: the child's records were taken up (not a re-read);
    None: either."""
    taken = []
    take = trace_pkg._take_part
    monkeypatch.setattr(trace_pkg, "_take_part", lambda *a: taken.append(take(*a)) or taken[-1])
    monkeypatch.setattr(parallel, "MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "CHILD_SHARE", share)
    monkeypatch.setattr(parallel, "_cores", lambda: 2)
    parallel.start(path)
    tr = load_trace(path)
    if not _kineto_layout(Path(path)):  # the split is by Kineto's layout: a file in another reads in one process
        assert taken == []
    else:
        assert taken == [used] or (used is None and len(taken) == 1)
    return tr


def _kineto_layout(path: Path) -> bool:
    """Whether the file is written as Kineto writes (an event per block, indented by two spaces): read here from
    its first bytes, as a reader of the file would see them."""
    with gzip.open(path) if path.suffix == ".gz" else path.open("rb") as f:
        head = f.read(1 << 20)
    return b'"traceEvents": [\n  {\n' in head


@pytest.mark.parametrize("path", [*traces()[::3], str(LLAMA.relative_to(ROOT))])
def test_two_cores_read_the_same_records(path, monkeypatch):
    p = ROOT / path
    want = _records(_alone(p, monkeypatch))
    for share in (0.3, 0.75):
        # a run the typed decoder refuses in the child's part sends the file to this process alone
        assert _records(_two_cores(p, monkeypatch, share, used=None if want["notes"] else True)) == want
        assert parallel._PENDING == {}  # taken up


def test_the_split_falls_between_runs_of_the_llama_trace(monkeypatch):
    """Both processes read some events: the child the first part, this process the rest (counted from the file)."""
    monkeypatch.setattr(parallel, "_cores", lambda: 2)
    monkeypatch.setattr(parallel, "CHILD_SHARE", 0.5)
    parallel.start(LLAMA)
    helper = parallel._PENDING[os.path.realpath(LLAMA)]
    from attnscope.trace import _first_part

    first = _first_part(LLAMA, helper.split)
    whole = load_trace(LLAMA)  # takes the helper up
    assert whole.num_events == len(json.loads(gzip.open(LLAMA).read())["traceEvents"])
    assert 0 < first.num_events < whole.num_events
    assert whole.cpu_ops[: len(first.cpu_ops)] == first.cpu_ops


def test_a_child_that_fails_leaves_the_result_unchanged(monkeypatch):
    want = _records(_alone(LLAMA, monkeypatch))
    monkeypatch.setattr(parallel, "_cores", lambda: 2)
    monkeypatch.setattr(parallel, "_child", lambda p, split: 1 / 0)  # the child raises: exit status 1, no payload
    parallel.start(LLAMA)
    assert _records(load_trace(LLAMA)) == want


def test_a_refused_run_in_the_childs_part_sends_the_file_to_one_process(monkeypatch, tmp_path):
    """HTA's MI250 trace writes ``"stream": "0x0"``: the typed decoder refuses it, the child gives up, and the file is
    read alone (with the safe path's note), as without a child."""
    p = ROOT / "tests" / "data" / "hta" / "amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz"
    want = _records(_alone(p, monkeypatch))
    assert want["notes"]  # the safe path read some of it
    assert _records(_two_cores(p, monkeypatch, 0.9, used=False)) == want


def test_bounds_hold_and_the_child_is_reaped(monkeypatch, tmp_path):
    """An event past the bound in the child's part: this process cuts every run itself and refuses it in one line;
    the child is killed and reaped (no process left behind)."""
    bad = tmp_path / "long_event.json"
    head = b'{"traceEvents": [\n  {\n    "ph": "X", "cat": "cpu_op", "name": "'
    bad.write_bytes(head + b"x" * (17 << 20) + b'", "pid": 1, "tid": 1, "ts": 1, "dur": 1\n  }\n]}')
    monkeypatch.setattr(parallel, "MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "_cores", lambda: 2)
    parallel.start(bad)
    pid = parallel._PENDING[os.path.realpath(bad)].pid
    with pytest.raises(TraceError, match="past 16 MiB"):
        load_trace(bad)
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # already reaped


def test_off_unless_asked_for_and_auto_only_with_an_idle_core(monkeypatch):
    monkeypatch.setattr(parallel, "_cores", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.1, 0.1, 0.1))
    monkeypatch.delenv(parallel.ENV)
    assert not parallel.wanted(LLAMA)  # off by default: not measured to help
    monkeypatch.setenv(parallel.ENV, "1")
    assert not parallel.wanted(LLAMA)
    monkeypatch.setenv(parallel.ENV, "auto")
    assert parallel.wanted(LLAMA)
    monkeypatch.setattr(os, "getloadavg", lambda: (1.5, 1.0, 1.0))  # more than one core's worth of other work
    assert not parallel.wanted(LLAMA)
    monkeypatch.setenv(parallel.ENV, "2")
    monkeypatch.setattr(os, "getloadavg", lambda: (9.0, 1.0, 1.0))
    assert parallel.wanted(LLAMA)  # forced, whatever the load
    monkeypatch.setattr(parallel, "_cores", lambda: 1)
    assert not parallel.wanted(LLAMA)
    small = ROOT / "tests" / "data" / "hta" / "trace_filter_sampled_rank-0.json.gz"  # ~1.7 MB of text
    monkeypatch.setattr(parallel, "_cores", lambda: 2)
    assert not parallel.wanted(small)


def test_analyze_json_on_two_cores_matches_the_golden(monkeypatch):
    """``attnscope analyze --json`` of the Llama trace (the one trace of tests/data long enough for a child) with the
    child forced on: the golden document, every number (test_trace_golden's comparison)."""
    from tests.trace.test_trace_golden import test_analyze_output_matches_golden

    started = []
    start = parallel.start
    monkeypatch.setattr(parallel, "start", lambda p: started.append(p) or start(p))
    taken = []
    take = trace_pkg._take_part
    monkeypatch.setattr(trace_pkg, "_take_part", lambda *a: taken.append(take(*a)) or taken[-1])
    test_analyze_output_matches_golden([str(LLAMA.relative_to(ROOT))])
    assert started and taken == [True]


@pytest.mark.parametrize("value", ["3", "yes", "0", "Auto"])
def test_a_bad_read_cores_value_is_refused_in_one_line(value, monkeypatch, capsys):
    from attnscope.cli.main import main

    monkeypatch.setenv(parallel.ENV, value)
    assert main(["analyze", str(LLAMA)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"ATTNSCOPE_READ_CORES={value!r}" in err[0]
