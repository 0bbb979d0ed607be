"""report, diff and recommend given a tour transcript say what it is and who draws its page, not 'no
schema_version/results'; and the tour's resume of a finished transcript does draw it without measuring."""

from __future__ import annotations

import json

import pytest

from attnscope.cli.main import main

TRANSCRIPT = {"kind": "tour", "version": 1, "tool": "attnscope", "device": "cpu", "size": "tiny", "steps": []}
SAID = "a tour transcript (what attnscope tour writes), not result rows: the tour draws its own page"


@pytest.mark.parametrize("argv", [["report", "T", "-o", "OUT"], ["diff", "T", "T"], ["recommend", "T"]])
def test_a_transcript_is_named_as_one(argv, tmp_path, capsys):
    t = tmp_path / "t.json"
    t.write_text(json.dumps(TRANSCRIPT))
    args = [str(t) if a == "T" else str(tmp_path / "p.html") if a == "OUT" else a for a in argv]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"attnscope: error: {t}: {SAID}" in err and "schema_version" not in err
