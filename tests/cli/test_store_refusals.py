"""One check of a store before any work, in the campaign loop, said by the command line in its flags' words: an --out
that already holds rows is refused without --resume (sweep and model alike), and a file of lines that are no rows is
no store to resume; the file is left as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attnscope.api.campaign import StoreHoldsRows, open_store
from attnscope.cli.main import main
from attnscope.execute.store import Store

SWEEP = ["sweep", "--device", "cpu", "--seq", "16", "--variants", "naive", "--no-peak", "--executor", "inline"]
MODEL = ["model", "--config", "tiny", "--impl", "eager", "--mode", "prefill", "--seq", "16", "--budget", "0.01"]


def _two_rows(path: Path) -> bytes:
    store = Store(path)
    for v in ("naive", "sdpa_math"):
        store.append({"variant": v, "case": {"batch": 1, "mode": "fwd"}, "status": "ok"})
    return path.read_bytes()


@pytest.mark.parametrize("command", [SWEEP, MODEL], ids=["sweep", "model"])
def test_an_out_that_holds_rows_is_refused_without_resume(tmp_path, monkeypatch, capsys, command):
    if command is MODEL:
        pytest.importorskip("transformers")
    monkeypatch.chdir(tmp_path)
    before = _two_rows(tmp_path / "s.jsonl")
    assert main([*command, "--out", "s.jsonl"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "attnscope: error: --out s.jsonl already holds 2 row(s): pass --resume to measure only what is missing, "
        "or choose another file"
    )
    assert (tmp_path / "s.jsonl").read_bytes() == before and not (tmp_path / "s.jsonl.settings.json").exists()


def test_a_file_of_lines_that_are_no_rows_is_no_store_to_resume(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.jsonl").write_text("my notes\nmore notes\n")
    assert main([*SWEEP, "--out", "notes.jsonl", "--resume"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "attnscope: error: --out notes.jsonl: not an attnscope store (no result rows); choose another file"
    assert (tmp_path / "notes.jsonl").read_text() == "my notes\nmore notes\n"


def test_the_library_says_it_in_its_own_words(tmp_path):
    _two_rows(tmp_path / "s.jsonl")
    with pytest.raises(StoreHoldsRows) as e:
        open_store(tmp_path / "s.jsonl", resume=False)
    assert (e.value.rows, "--" in str(e.value)) == (2, False) and "resume=True" in str(e.value)
    assert [json.loads(x)["variant"] for x in (tmp_path / "s.jsonl").read_text().splitlines()] == ["naive", "sdpa_math"]
    assert open_store(tmp_path / "s.jsonl", resume=True).done()  # resumed: its rows are what is not measured again
