"""Names are data, never markup: a variant, plugin, kernel, op or stored name holding rich markup (``[/]``,
``[link=…]``, ``[bold]``) or terminal control sequences (ESC, OSC, C1) is printed as written, its control characters
removed, in every command that prints it.  Before, ``[/]`` ended run, sweep, recommend, diff and analyze --kernels
in exit 70 (after the rows were saved), ``[link=…]`` became a hyperlink and ESC sequences reached the terminal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from attnscope.cli.main import main
from tests import synth
from tests.hostile_names import BOLD, CLOSE, ESC, LINK, NAMES

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
TINY = ["--device", "cpu", "--batch", "1", "--heads", "1", "--seq", "16", "--head-dim", "8", "--dtype", "fp32"]
# ESC as the terminal would see it once its control characters (ESC, BEL, U+009B) are removed, written by hand
ESC_SHOWN = "t_esc[31mred]8;;xx2J"
SHOWN = (CLOSE, LINK, BOLD, ESC_SHOWN)
CONTROL = {chr(c) for c in (*range(0, 32), *range(0x7F, 0xA0))} - {"\n"}


def _check(out: str, shown: tuple[str, ...] = SHOWN, whole: bool = True) -> None:
    """Every name printed as written (``whole``: in full; else at least its first 12 characters, its markup among
    them, where a grid's cell cuts it), no control character but newline, no internal error."""
    bad = sorted({repr(c) for c in out if c in CONTROL})
    assert not bad, bad
    assert "internal error" not in out
    for name in shown:
        assert (name if whole else name[:12]) in out, name
    for parsed in ("t_linkx", "t_boldb"):  # what rich's markup would have made of LINK and BOLD
        assert parsed not in out


def _cli(*argv: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="400", **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "attnscope.cli.main", *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


PLUGIN = {"ATTNSCOPE_VARIANT_MODULES": "tests.hostile_names"}


@pytest.mark.slow
def test_run_prints_hostile_variant_names_as_data(tmp_path):
    out = tmp_path / "run.json"
    argv = ["run", *TINY, "--variants", ",".join(NAMES), "--budget", "0.01", "--no-peak", "--json", str(out)]
    p = _cli(*argv, env=PLUGIN)
    assert p.returncode in (0, 1), p.stderr
    _check(p.stdout + p.stderr)
    assert "Recommendation" in p.stdout  # the report was printed in full, not cut by an error
    saved = [r["variant"] for r in json.loads(out.read_text())["results"]]
    assert saved == list(NAMES)  # the document keeps the names as they are: only the terminal's copy is cleaned


@pytest.mark.slow
def test_sweep_recommend_and_resume_print_hostile_names_as_data(tmp_path):
    store = tmp_path / "s.jsonl"
    sweep = ["sweep", *TINY, "--variants", ",".join(NAMES), "--executor", "inline", "--budget", "0.01"]
    p = _cli(*sweep, "--no-peak", "--out", str(store), env=PLUGIN)
    assert p.returncode == 0, p.stderr
    _check(p.stdout + p.stderr)
    assert "Policy" in p.stdout
    assert {json.loads(line)["variant"] for line in store.read_text().splitlines()} == set(NAMES)
    # a store holding such rows: --resume reads and prints it (nothing left to measure)
    p = _cli(*sweep, "--no-peak", "--out", str(store), "--resume", env=PLUGIN)
    assert p.returncode in (0, 1), p.stderr
    _check(p.stdout + p.stderr)
    p = _cli("recommend", str(store))
    assert p.returncode == 0, p.stderr
    _check(p.stdout + p.stderr)


@pytest.mark.slow
def test_variants_lists_hostile_names_and_descriptions_as_data():
    p = _cli("variants", "--device", "cpu", env=PLUGIN)
    assert p.returncode == 0, p.stderr
    _check(p.stdout + p.stderr)
    assert "[link=https://example.invalid/]here" in p.stdout  # the description, markup and all


def _renamed(doc: dict, names: tuple[str, ...]) -> dict:
    for r, name in zip(doc["results"], names, strict=False):
        r["variant"] = name
    return doc


def test_diff_prints_hostile_names_as_data(tmp_path, capsys):
    doc = json.loads((DATA / "h200" / "run.json").read_text())
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_renamed(doc, NAMES)))
    doc["results"][0]["gpu_time"]["median_us"] *= 2  # a regression on the first name: printed in its own line
    b.write_text(json.dumps(doc))
    rc = main(["diff", str(a), str(b), "--threshold", "5"])
    assert rc in (0, 1)
    out = capsys.readouterr()
    _check(out.out + out.err)


def test_recommend_prints_stored_hostile_names_as_data(tmp_path, capsys):
    rows = [json.loads(line) for line in (ROOT / "docs/results/raw/h200_sweep.jsonl").read_text().splitlines()]
    rename = {"sdpa_default": BOLD, "flex_compiled": CLOSE, "sdpa_flash": LINK, "sdpa_cudnn": ESC}  # each printed
    store = tmp_path / "rows.jsonl"
    store.write_text("".join(json.dumps({**r, "variant": rename.get(r["variant"], r["variant"])}) + "\n" for r in rows))
    assert main(["recommend", str(store)]) == 0
    out = capsys.readouterr()
    _check(out.out + out.err, whole=False)


def test_analyze_kernels_prints_trace_names_as_data(tmp_path, capsys):
    ev = []
    for i, name in enumerate(NAMES):
        ev += [
            synth.op(name, 10 + 100 * i, 50, ext=i + 1),
            synth.launch(12 + 100 * i, corr=i + 1, ext=i + 1),
            synth.kernel(f"kernel {name}", 30 + 100 * i, 20, corr=i + 1, ext=i + 1),
        ]
    trace = synth.write_kineto(tmp_path / "hostile.json", synth.doc(ev))
    assert main(["analyze", str(trace), "--kernels"]) == 0
    out = capsys.readouterr()
    _check(out.out + out.err, tuple(f"kernel {n}" for n in SHOWN))


def test_an_error_naming_a_hostile_variant_is_one_clean_line(capsys):
    assert main(["run", *TINY, "--variants", f"nope{ESC}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"nope{ESC_SHOWN}" in err
    _check(err, ())
