"""Bad numbers given to the library: NaN, the infinities, numbers past what a tensor or a timer holds, a float or a
bool where a whole number goes, below the least.  Every API entry point refuses each in one line, a ``UsageError``
that names the value in the library's words (never a ``--flag``), before any work.

The rows are written by hand: (what is called, the value's name the message must start with).  The command line's
flags get the same treatment in ``tests/cli/test_numbers.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from attnscope.core.arguments import UsageError
from attnscope.core.types import Case

NAN, INF = float("nan"), float("inf")
HUGE = 10**30  # past an int64
TRACE = Path(__file__).resolve().parents[1] / "data" / "h200" / "flex.json"
SHAPE = {"batch": 1, "heads": 2, "seq_q": 16, "head_dim": 8, "dtype": "fp32"}

WHOLE_BAD = [NAN, INF, -INF, 1e308, 2.5, True, HUGE, 0, -1]
SECONDS_BAD = [NAN, INF, -INF, 1e308, True, 0, -1, 604_801]  # a week (604,800 s) is the most


def _case(**kw: object) -> Case:
    return Case(**{**SHAPE, **kw})  # type: ignore[arg-type]


def _sweep(tmp_path: Path, **kw: object) -> object:
    from attnscope.api import sweep

    return sweep([_case()], "naive", out=tmp_path / "s.jsonl", executor="process", **kw)  # type: ignore[arg-type]


def _run(**kw: object) -> object:
    from attnscope.api import run

    return run(_case(), "naive", **kw)  # type: ignore[arg-type]


def _grid(**axes: object) -> object:
    from attnscope.core.cases import Axes, grid

    return grid(Axes(**axes), "cpu")  # type: ignore[arg-type]


def _analyze_many(jobs: object) -> object:
    from attnscope.api.batch import analyze_many

    return analyze_many([TRACE], jobs=jobs)  # type: ignore[arg-type]


def _diff(threshold: object) -> object:
    from attnscope.api import diff_files

    return diff_files(TRACE, TRACE, threshold_pct=threshold)  # type: ignore[arg-type]


# (an id, the call of one bad value, the values, the name the message starts with)
ROWS = [
    *[(f"Case.{f}", lambda v, f=f: _case(**{f: v}), WHOLE_BAD, f) for f in ("batch", "heads", "seq_q", "head_dim")],
    *[(f"Case.{f}", lambda v, f=f: _case(**{f: v}), WHOLE_BAD, f) for f in ("kv_heads", "seq_kv", "page_size")],
    ("Case.softcap", lambda v: _case(softcap=v), [NAN, INF, -INF, 1e308, True, 0, -1], "softcap"),
    ("grid budget_tokens", lambda v: _grid(seq=[16], budget_tokens=v), WHOLE_BAD, "budget_tokens"),
    ("run timeout_s", lambda v: _run(timeout_s=v, executor="process"), SECONDS_BAD, "timeout_s"),
    ("run timing_budget_s", lambda v: _run(timing_budget_s=v), SECONDS_BAD, "timing_budget_s"),
    ("run steps", lambda v: _run(steps=v), [NAN, INF, 2.5, True, HUGE, -1], "steps"),
    ("run bucket", lambda v: _run(bucket=v), WHOLE_BAD, "bucket"),
    ("run seed", lambda v: _run(seed=v), [NAN, INF, 2.5, True, HUGE, -1], "seed"),
    ("analyze_many jobs", _analyze_many, WHOLE_BAD, "jobs"),
    ("diff_files threshold_pct", _diff, [NAN, INF, -INF, True, -1], "threshold_pct"),
]
CASES = [pytest.param(call, v, name, id=f"{label}={v!r}") for label, call, values, name in ROWS for v in values]


@pytest.mark.parametrize(("call", "value", "name"), CASES)
def test_a_bad_number_is_refused_in_one_line_naming_the_value(call, value, name) -> None:
    pytest.importorskip("torch")
    with pytest.raises(UsageError) as e:
        call(value)
    said = str(e.value)
    assert said.startswith(name) or f": {name}" in said, said  # a grid point says its point first
    assert "\n" not in said and "--" not in said, said
    assert name in e.value.fields


@pytest.mark.parametrize("value", [NAN, INF, 0, 2.5, True, 1025])
def test_sweep_refuses_bad_workers_and_writes_nothing(tmp_path, value) -> None:
    with pytest.raises(UsageError) as e:
        _sweep(tmp_path, workers=value)
    assert str(e.value).startswith("workers") and "--" not in str(e.value)
    assert not (tmp_path / "s.jsonl").exists()


@pytest.mark.parametrize("value", SECONDS_BAD)
@pytest.mark.parametrize(("name", "executor"), [("timeout_s", "process"), ("timing_budget_s", "inline")])
def test_sweep_refuses_bad_seconds_and_writes_nothing(tmp_path, value, name, executor) -> None:
    from attnscope.api import sweep

    with pytest.raises(UsageError) as e:
        sweep([_case()], "naive", out=tmp_path / "s.jsonl", executor=executor, **{name: value})
    assert str(e.value).startswith(name) and "--" not in str(e.value)
    assert not (tmp_path / "s.jsonl").exists()
