"""Plugins through the entry-point group attnscope.variants: the example package installs with pip and runs;
a plugin that fails to import, returns the wrong thing or raises is a row with the reason, never a crash."""

from __future__ import annotations

import shutil
import subprocess
import sys
import types
from importlib import metadata
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from attnscope.core.types import Case  # noqa: E402
from attnscope.execute.job import Options  # noqa: E402
from attnscope.variants import REGISTRY, Prepared, Variant, plugins  # noqa: E402
from tests.inline import run  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FAST = Options(timing_budget_s=0.005, measure_peak=False)


def _ep(name: str, value: str) -> metadata.EntryPoint:
    return metadata.EntryPoint(name, value, plugins.GROUP)


@pytest.fixture(scope="module")
def installed_example(tmp_path_factory):
    """pip installs examples/plugin into a fresh target directory (no network: --no-deps, no build isolation)."""
    target = tmp_path_factory.mktemp("site")
    src = tmp_path_factory.mktemp("src") / "plugin"  # a copy: the build leaves nothing in the repository
    shutil.copytree(ROOT / "examples" / "plugin", src)
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", str(target)]
    proc = subprocess.run([*cmd, str(src)], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0 and "No module named pip" in proc.stderr:
        pytest.skip("no pip in this interpreter")
    assert proc.returncode == 0, proc.stderr[-2000:]
    sys.path.insert(0, str(target))
    yield target
    sys.path.remove(str(target))


@pytest.mark.slow
def test_the_example_plugin_installs_and_runs_with_a_mask(installed_example, monkeypatch):
    eps = [ep for d in metadata.distributions(path=[str(installed_example)]) for ep in d.entry_points]
    assert [(ep.group, ep.name) for ep in eps] == [(plugins.GROUP, "sdpa_query_chunks")]
    [v] = plugins.load(eps)
    assert v.name == "sdpa_query_chunks" and "plugin sdpa_query_chunks" in v.description
    monkeypatch.setitem(REGISTRY, v.name, v)
    c = Case(1, 4, 600, 16, dtype="fp32", kv_heads=2, mask="sliding:100")  # 3 chunks of queries
    [r] = run(c, "sdpa_query_chunks", FAST).results
    assert r.status == "ok", r.reason
    assert r.max_rel_error is not None and r.max_rel_error < 1e-5
    assert "3 SDPA call(s)" in " ".join(r.notes)


def _bad_module(monkeypatch):
    mod = types.ModuleType("attnscope_bad_plugins")

    def raising_check(case):
        raise RuntimeError("check exploded")

    def raising_prepare(case, x):
        raise RuntimeError("prepare exploded")

    def raising_call(case, x):
        def fn():
            raise ZeroDivisionError("call exploded")

        return Prepared(fn=fn)

    mod.CHECK = Variant("bad_check", "plugin", "raises in check", raising_check, raising_prepare)
    mod.PREPARE = Variant("bad_prepare", "plugin", "raises in prepare", lambda c: None, raising_prepare)
    mod.CALL = Variant("bad_call", "plugin", "raises in the call", lambda c: None, raising_call)
    mod.NOT_A_VARIANT = ["naive"]
    mod.DUPLICATE = Variant("naive", "plugin", "takes a built-in name", lambda c: None, raising_prepare)

    def factory():
        raise ImportError("a dependency of the plugin is missing")

    mod.FACTORY = factory
    monkeypatch.setitem(sys.modules, "attnscope_bad_plugins", mod)


def test_broken_plugins_are_rows_with_the_reason(monkeypatch):
    _bad_module(monkeypatch)
    eps = [
        _ep("gone", "attnscope_no_such_plugin:VARIANTS"),
        _ep("bad_check", "attnscope_bad_plugins:CHECK"),
        _ep("bad_prepare", "attnscope_bad_plugins:PREPARE"),
        _ep("bad_call", "attnscope_bad_plugins:CALL"),
        _ep("wrong_type", "attnscope_bad_plugins:NOT_A_VARIANT"),
        _ep("dup", "attnscope_bad_plugins:DUPLICATE"),
        _ep("factory", "attnscope_bad_plugins:FACTORY"),
    ]
    loaded = plugins.load(eps, taken=REGISTRY)
    for v in loaded:
        monkeypatch.setitem(REGISTRY, v.name, v)
    names = [v.name for v in loaded]
    assert names == ["gone", "bad_check", "bad_prepare", "bad_call", "wrong_type", "dup:naive", "factory"]
    rep = run(Case(1, 2, 16, 8, dtype="fp32"), ",".join(names), FAST)
    rows = {r.variant: r for r in rep.results}
    assert rows["gone"].status == "skipped" and "No module named 'attnscope_no_such_plugin'" in rows["gone"].reason
    assert (
        rows["bad_check"].status == "skipped"
        and "check raised RuntimeError: check exploded" in rows["bad_check"].reason
    )
    assert rows["bad_prepare"].status == "error" and "prepare exploded" in rows["bad_prepare"].reason
    assert rows["bad_call"].status == "error" and "ZeroDivisionError" in rows["bad_call"].reason
    assert "expected attnscope Variant objects, got str" in rows["wrong_type"].reason
    assert "'naive' is taken" in rows["dup:naive"].reason
    assert "a dependency of the plugin is missing" in rows["factory"].reason
    assert REGISTRY["naive"].family == "naive"  # a plugin never replaces a built-in variant
