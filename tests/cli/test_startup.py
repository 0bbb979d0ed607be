"""What a short command pays before and after its work: imports, the exit; and the gzip reader's blocks.

Each test can fail: a module imported too early, an exit status lost, a trace read differently gzipped.
(The time itself is measured in benchmarks/analyze_speed.py, not here.)
"""

from __future__ import annotations

import json
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from attnscope import trace
from attnscope.cli.main import LAZY_COMMANDS, PURE_COMMANDS, _command_in, build_parser

ROOT = Path(__file__).resolve().parents[2]
H200 = ROOT / "tests" / "data" / "h200" / "sdpa_flash.json"
ALEXNET = ROOT / "tests" / "data" / "hta" / "critical_path_alexnet_trace.json.gz"  # a GPU trace named after no variant


def _modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=True,
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_analyze_imports_neither_the_sweep_the_model_bench_nor_the_plugin_machinery(tmp_path) -> None:
    mods = _modules_after(
        "from attnscope.cli.main import main\n"
        f"rc = main(['analyze', {str(ALEXNET)!r}, '--json', {str(tmp_path / 'a.json')!r}])\n"
        "assert rc == 0, rc"
    )
    assert "attnscope.analysis.fingerprint.build" in mods  # it did analyse
    for m in (
        "attnscope.cli.sweep",
        "attnscope.cli.model",
        "attnscope.execute.model_bench",
        "importlib.metadata",
        "torch",
        "plotly",  # the page's, with --html only
        "attnscope.cli.run",  # run's and guess's ~50 flags are built only when argv runs them
        "attnscope.execute.executors",
        "attnscope.variants",  # the trace is named after no built-in variant
        "hashlib",
        "difflib",  # the trace replays no CUDA graph
    ):
        assert m not in mods, m


def test_a_trace_named_after_a_built_in_variant_imports_its_declarations() -> None:
    mods = _modules_after(
        "from attnscope.api import analyze\n"
        f"r = analyze({str(H200)!r})\n"
        "assert (r.variant, r.family, r.backend) == ('sdpa_flash', 'sdpa', 'flash'), r"
    )
    assert "attnscope.variants.builtin" in mods


def test_the_names_analyze_knows_without_importing_the_variants_are_the_built_in_ones() -> None:
    from attnscope.api import BUILT_IN_VARIANTS
    from attnscope.variants.builtin import BY_NAME

    assert frozenset(BY_NAME) == BUILT_IN_VARIANTS


def test_run_and_guess_are_listed_and_get_their_flags_only_when_run() -> None:
    text = build_parser(["analyze", "x.json"]).format_help()
    assert "run and fingerprint every attention variant" in text and "guess first" in text
    with pytest.raises(SystemExit):  # analyze's parser left run's flags unbuilt: `run --seq` is not parsed
        build_parser(["analyze", "x.json"]).parse_args(["run", "--seq", "128"])
    for command in ("run", "guess"):
        args = build_parser([command]).parse_args([command, "--seq", "128", "--variants", "naive"])
        assert args.seq == 128 and args.variants == "naive" and callable(args.func)


def test_importing_the_variants_package_runs_no_plugin_lookup() -> None:
    mods = _modules_after("import attnscope.variants.builtin, attnscope.variants as V\nassert V.REGISTRY")
    # REGISTRY's truth value asks its length: that is a lookup, so the plugins were asked for once
    assert "importlib.metadata" in mods
    mods = _modules_after("import attnscope.variants.builtin\nfrom attnscope.variants import REGISTRY")
    assert "importlib.metadata" not in mods


def test_the_registry_joins_the_plugins_on_first_lookup(monkeypatch) -> None:
    from attnscope import variants as V
    from attnscope.variants.base import Variant

    calls: list[object] = []
    extra = Variant(name="zz_plugin_like", family="plugin", description="d", check=lambda c: None, prepare=None)  # type: ignore[arg-type]

    def fake_load(entry_points=None, taken=()):
        calls.append(sorted(taken))
        return [extra]

    reg = V._Registry(V.builtin.BY_NAME)
    monkeypatch.setattr(V.plugins, "load", fake_load)
    assert dict.__contains__(reg, "naive") and not dict.__contains__(reg, "zz_plugin_like")
    assert not calls
    assert reg.get("zz_plugin_like") is extra
    assert "zz_plugin_like" in reg and reg["naive"] is V.builtin.BY_NAME["naive"]
    assert len(calls) == 1 and "naive" in calls[0]  # once, told which names are taken
    assert "zz_plugin_like" in reg.default_names and "naive" in reg.default_names


def test_lazy_commands_are_listed_and_get_their_full_parser_only_when_run() -> None:
    p = build_parser(["analyze", "x.json"])
    text = p.format_help()
    for name, (_module, help_text) in LAZY_COMMANDS.items():
        assert name in text and help_text.split()[0] in text
    full = build_parser(["sweep", "--seq", "128"]).parse_args(["sweep", "--seq", "128", "--variants", "naive"])
    assert full.seq == "128" and full.variants == "naive"
    m = build_parser(["model"]).parse_args(["model", "--config", "tiny"])
    assert m.config == "tiny"


def test_the_command_is_the_first_word_that_is_not_an_option() -> None:
    assert _command_in(["--version"]) is None
    assert _command_in(["analyze", "--json", "x"]) == "analyze"
    assert _command_in(["-h", "sweep"]) == "sweep"
    assert _command_in([]) is None


def test_entry_keeps_the_exit_status_of_a_pure_command(tmp_path) -> None:
    assert {"analyze", "diff", "recommend", "report"} == PURE_COMMANDS
    bad = subprocess.run(
        [sys.executable, "-m", "attnscope.cli.main", "analyze", str(tmp_path / "missing.json")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert bad.returncode == 2 and "no such file" in bad.stderr
    out = tmp_path / "a.json"
    good = subprocess.run(
        [sys.executable, "-m", "attnscope.cli.main", "analyze", str(H200), "--json", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert good.returncode == 0, good.stderr
    assert "attnscope analyze" in good.stdout  # flushed before the fast exit
    assert json.loads(out.read_text())["results"][0]["num_kernels"] == 1  # the file is whole


def test_python_dash_m_attnscope_is_the_command_line(tmp_path) -> None:
    """``python -m attnscope`` answers as the console script: its version, and an error's exit status."""
    version = subprocess.run(
        [sys.executable, "-m", "attnscope", "--version"], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert version.returncode == 0 and version.stdout.startswith("attnscope ")
    bad = subprocess.run(
        [sys.executable, "-m", "attnscope", "analyze", str(tmp_path / "missing.json")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert bad.returncode == 2 and bad.stderr.strip() == f"attnscope: error: {tmp_path / 'missing.json'}: no such file"


def _gz(data: bytes) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()


def test_a_gzip_trace_reads_the_same_as_its_json_across_blocks_and_members(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(trace.source, "CHUNK", 128)  # many chunks and several 4-chunk blocks from a small trace
    monkeypatch.setattr(trace.source, "BLOCK", 4 * 128)
    raw = H200.read_bytes()
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(_gz(raw))
    a, b = trace.load_trace(H200), trace.load_trace(gz)
    assert gz.stat().st_size > 3 * 4 * 128  # 2,761 B: five blocks of 512 B, 22 chunks
    assert len(a.gpu) == len(b.gpu) > 0 and len(a.cpu_ops) == len(b.cpu_ops) > 0
    assert [g.name for g in a.gpu] == [g.name for g in b.gpu]
    half = len(raw) // 2  # two gzip members, cut inside the trace: one stream to the reader
    two = tmp_path / "two.json.gz"
    two.write_bytes(_gz(raw[:half]) + _gz(raw[half:]))
    c = trace.load_trace(two)
    assert [g.name for g in c.gpu] == [g.name for g in a.gpu] and len(c.cpu_ops) == len(a.cpu_ops)
    truncated = tmp_path / "cut.json.gz"
    truncated.write_bytes(_gz(raw)[: len(_gz(raw)) // 2])
    with pytest.raises(trace.TraceError, match=r"truncated|corrupt"):
        trace.load_trace(truncated)
