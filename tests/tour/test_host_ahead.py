"""Under load the tour says so before its first measurement, while it can still be stopped, and again at its end
with the timings.  The host's load is faked as tests/cli/test_run_host.py fakes it: ``measure.host.read_load``."""

from __future__ import annotations

import pytest

from attnscope.cli.main import main
from attnscope.measure import host
from attnscope.tour.session import Session

AHEAD = (
    "host loaded before the first measurement: load average 7.50 on 2 cores (3.75 per core, above 1.25). The "
    "timings to come may be wrong: Ctrl-C stops the tour and keeps the steps done; the same command with --resume "
    "continues it once the machine is quiet"
)


def _first_step_stops(seen: list[str], capsys: pytest.CaptureFixture[str]):
    def run_step(self, step, i):
        seen.append(" ".join(capsys.readouterr().out.split()))  # what was printed before anything was measured
        raise KeyboardInterrupt

    return run_step


def test_a_loaded_host_is_said_before_the_first_step_measures(tmp_path, monkeypatch, capsys):
    """7.5 on 2 cores: 3.75 runnable threads per core, above 1.25 (measure/host.py's LOAD_PER_CORE)."""
    monkeypatch.setattr(host, "read_load", lambda: (7.5, 2))
    seen: list[str] = []
    monkeypatch.setattr(Session, "run_step", _first_step_stops(seen, capsys))
    rc = main(["tour", "--device", "cpu", "--size", "tiny", "--auto", "--out", str(tmp_path / "t.json")])
    assert rc != 0 and len(seen) == 1  # stopped in the first step, as a user who read the line would
    assert AHEAD in seen[0]


def test_a_quiet_host_gets_no_line_before_the_steps(tmp_path, monkeypatch, capsys):
    """0.5 on 2 cores: 0.25 per core, no sign."""
    monkeypatch.setattr(host, "read_load", lambda: (0.5, 2))
    seen: list[str] = []
    monkeypatch.setattr(Session, "run_step", _first_step_stops(seen, capsys))
    main(["tour", "--device", "cpu", "--size", "tiny", "--auto", "--out", str(tmp_path / "t.json")])
    assert len(seen) == 1 and "host loaded" not in seen[0]


def test_a_resumed_tour_with_nothing_left_says_nothing_ahead(tmp_path, monkeypatch):
    """Every step done: nothing will be measured, so there is nothing to stop."""
    monkeypatch.setattr(host, "read_load", lambda: (7.5, 2))
    said: list[str] = []
    s = Session("cpu", "tiny", lambda *a: ("", ""), tmp_path / "t.json", said.append)
    s.start(None)
    s.transcript["steps"] = [{"id": step.id} for step in s.steps()]
    monkeypatch.setattr("attnscope.tour.session.score", lambda steps: {}, raising=False)
    monkeypatch.setattr("attnscope.tour.session.surprises", lambda steps: [], raising=False)
    s.run()
    assert not any("before the first measurement" in line for line in said)
