"""How `run` and `guess` measure (attnscope.cli.run.measure_and_render): the API call gets the progress and a note
printer, a stopping signal raises while it runs and the handler before is back after (an error too), and the exit
status is the rendered study's.  The measurement is a stand-in returning the committed CPU document
(tests/data/cpu/run_all.json: 7 of 9 variants ok)."""

from __future__ import annotations

import argparse
import json
import signal
from pathlib import Path
from typing import Any

import pytest

from attnscope.cli.run import measure_and_render
from attnscope.cli.stop import Stopped

DOC = Path(__file__).resolve().parents[1] / "data" / "cpu" / "run_all.json"


class _Doc(dict[str, Any]):
    """What api.run_request returns: the document, with what could not be written beside it."""

    unwritten: dict[str, str]


def _doc(**changes: Any) -> _Doc:
    d = _Doc(json.loads(DOC.read_text()), **changes)
    d.unwritten = {}
    return d


def _args(**kw: Any) -> argparse.Namespace:
    base = {"kernels": False, "verbose": False, "json": None, "trace_dir": None, "html": None, "strict": False}
    return argparse.Namespace(**(base | kw))


def _handler() -> Any:
    return signal.getsignal(signal.SIGTERM)


def test_the_call_gets_progress_and_notes_and_stops_on_sigterm_only_while_it_runs(capsys):
    before = _handler()
    seen: dict[str, Any] = {}

    def measure(*, on_event: Any, on_note: Any) -> _Doc:
        seen["handler"] = _handler()
        seen["on_event"] = on_event
        on_note("a note for the user")
        with pytest.raises(Stopped):
            signal.raise_signal(signal.SIGTERM)
        return _doc()

    assert measure_and_render(measure, _args()) == 0
    assert seen["handler"] != before and callable(seen["on_event"])
    assert _handler() == before
    out = capsys.readouterr().out
    assert "a note for the user" in out
    assert out.index("a note for the user") < out.index("naive_inplace")  # the note as it came, then the study


def test_the_handler_before_is_back_after_an_error():
    before = _handler()

    def measure(**hooks: Any) -> _Doc:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        measure_and_render(measure, _args())
    assert _handler() == before


def test_the_exit_status_is_the_rendered_studys(capsys, tmp_path):
    nothing = _doc()
    nothing["results"] = [{**r, "status": "error", "reason": "x"} for r in nothing["results"]]
    assert measure_and_render(lambda **hooks: nothing, _args()) == 1  # nothing measured
    unwritten = _doc()
    unwritten.unwritten = {"json": "no space left on device"}
    assert measure_and_render(lambda **hooks: unwritten, _args(json=str(tmp_path / "r.json"))) == 74
    said = capsys.readouterr()
    assert said.err == "attnscope: error: no space left on device\n" and "JSON written" not in said.out
