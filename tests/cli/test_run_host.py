"""`run` says when the host is loaded: in the JSON as ``host`` and in one printed line."""

from __future__ import annotations

import json

import pytest


@pytest.mark.slow
def test_run_flags_a_loaded_host(tmp_path, monkeypatch, capsys):
    from attnscope.cli.main import main
    from attnscope.measure import host

    monkeypatch.setattr(host, "read_load", lambda: (7.5, 2))
    out = tmp_path / "run.json"
    argv = ["run", "--device", "cpu", "--batch", "1", "--heads", "1", "--seq", "16", "--head-dim", "8"]
    assert main([*argv, "--variants", "naive", "--budget", "0.01", "--no-peak", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["host"]["loaded"] is True and doc["host"]["load_average"] == 7.5 and doc["host"]["cores"] == 2
    assert "load average 7.50 on 2 cores" in doc["host"]["why"]
    printed = " ".join(capsys.readouterr().out.split())
    assert "host loaded: load average 7.50 on 2 cores" in printed and "quiet machine" in printed
