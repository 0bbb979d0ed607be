"""`attnscope recommend` on the command line: what it prints and writes, the page and the terminal saying the
same, and bad input refused in one line."""

from __future__ import annotations

import json

import pytest

from attnscope.analysis.recommend import recommend
from attnscope.cli.main import main
from tests.analysis.recommend.sweeps import hand_sweep, write_rows

# ------------------------------------------------------------------------------------------- command line


def test_cli_prints_and_writes_json(tmp_path, capsys):
    src = write_rows(tmp_path / "s.jsonl", hand_sweep())
    out = tmp_path / "rec.json"
    assert main(["recommend", str(src), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"Policy: {recommend(hand_sweep())['policy_text']}" in " ".join(text.split())
    assert "best at 3 (at 2 of them a variant running the same kernels was timed faster), tied at 1, slower at 4" in (
        " ".join(text.split())
    )
    doc = json.loads(out.read_text())
    assert doc["kind"] == "recommend" and doc["files"] == [str(src)]
    assert {"best", "crossovers", "policy", "default_gaps", "excluded", "counts", "time_source"} <= set(doc)
    b = next(b for b in doc["best"] if b["case"]["seq_q"] == 128 and b["case"]["head_dim"] == 64)
    assert {"case", "mode", "variant", "median_us", "runner_up", "margin", "tied", "same_as"} <= set(b)


def test_page_and_terminal_say_the_same(tmp_path, capsys):
    pytest.importorskip("plotly")
    from attnscope.api.report import render_html

    page = render_html([hand_sweep()])
    src = write_rows(tmp_path / "s.jsonl", hand_sweep())
    assert main(["recommend", str(src)]) == 0
    text = capsys.readouterr().out
    rec = recommend(hand_sweep())
    text = " ".join(text.split())  # rich wraps long lines
    for said in (rec["policy_text"], "tied at 1, slower at 4 of 8 points"):
        assert said in text and said in page
    assert "1.25× slower" in page and "1.10× (tied: quartiles overlap)" in page  # S=128 D=64 default; S=256 D=64


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        ("", "no attnscope result rows"),
        ("not json\n", "no attnscope result rows"),
        ('{"variant": "a", "status": "ok", "kernels": 5}\n', "kernels must be a list of objects"),
        ('{"variant": 3, "status": "ok"}\n', "needs variant and status strings"),
        ('{"variant": "a", "status": "ok", "case": "big"}\n', "case must be an object or null"),
        ('{"variant": "a", "status": "ok", "gpu_time_us": "fast"}\n', "gpu_time_us must be a number"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2(tmp_path, capsys, content, message):
    path = tmp_path / "in.jsonl"
    if content is not None:
        path.write_text(content)
    assert main(["recommend", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_cli_rows_that_all_failed_exit_1_with_the_reason(tmp_path, capsys):
    """Well-formed rows none of which was measured: nothing to compare (exit 1, as documented), not bad input."""
    path = tmp_path / "in.jsonl"
    path.write_text('{"variant": "a", "status": "oom", "case": {"seq_q": 1}}\n')
    assert main(["recommend", str(path)]) == 1
    out = capsys.readouterr()
    assert "no row to compare (one needs status ok" in out.err + out.out and "Traceback" not in out.err


def test_cli_bad_paths(tmp_path, capsys):
    src = write_rows(tmp_path / "s.jsonl", hand_sweep())
    assert main(["recommend", str(tmp_path)]) == 2
    assert main(["recommend", str(src), "--json", str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"attnscope: error: {tmp_path}: a directory: name a result file or a trace in it",
        f"attnscope: error: --json {tmp_path}: is a directory; name a file",
    ]
