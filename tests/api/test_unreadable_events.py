"""A trace none of whose events can be read is bad input (one line, exit 2), not an 'ok' row of nothing; one
malformed event among readable ones is skipped and counted, as before."""

from __future__ import annotations

import json

from attnscope.cli.main import main


def test_every_event_malformed_is_refused(tmp_path, capsys):
    p = tmp_path / "t.json"  # two kernel events without dur: neither decoder can read them
    kernel = {"ph": "X", "cat": "kernel", "name": "k", "ts": 1}
    p.write_text(json.dumps({"traceEvents": [kernel, {**kernel, "ts": 2}]}))
    assert main(["analyze", str(p)]) == 2
    err = capsys.readouterr().err
    assert f"attnscope: error: {p}: none of its 2 events could be read (each lacks a field it needs)" in err


def test_one_malformed_event_among_readable_ones_is_skipped(tmp_path, capsys):
    p = tmp_path / "t.json"
    op = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 5, "pid": 1, "tid": 1}
    p.write_text(json.dumps({"traceEvents": [op, {"ph": "X", "cat": "kernel", "name": "k", "ts": 1}]}))
    out = tmp_path / "o.json"
    assert main(["analyze", str(p), "--json", str(out)]) == 0
    assert json.loads(out.read_text())["results"][0]["notes"] == ["1 malformed trace events skipped"]
