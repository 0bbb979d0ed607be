"""report's --help names every kind of file it reads: a Kineto trace too (docs/report.md: analysed first)."""

from __future__ import annotations

from attnscope.cli.main import main
from tests.rawtrace import DATA


def test_help_names_traces(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")
    assert main(["report", "--help"]) == 0
    assert "run/analyze/model JSON documents, sweep JSONL files or Kineto traces (sniffed)" in capsys.readouterr().out


def test_a_trace_is_read_as_the_help_says(tmp_path, capsys):
    out = tmp_path / "p.html"
    assert main(["report", str(DATA / "hta" / "cpu_only_rank-34.json.gz"), "-o", str(out)]) == 0
    assert out.stat().st_size > 0
