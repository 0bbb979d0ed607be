"""The tests that change global state (the variant registry, environment variables, torch's settings) pass
in any order: they run here shuffled, twice, with different seeds, in a fresh pytest process."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# files whose tests register variants, set environment variables or patch module settings
STATEFUL = [
    "tests/variants/test_plugins.py",
    "tests/variants/test_external.py",
    "tests/analysis/recommend/test_rules_agree.py",
    "tests/workloads/test_sizing.py",
]

# shuffles the collected tests by a seed (pytest-randomly is used instead where it is installed)
_SHUFFLE = """
import os, random
def pytest_collection_modifyitems(session, config, items):
    random.Random(int(os.environ["ORDER_SEED"])).shuffle(items)
"""


def _files_order(test_id: str) -> int:
    return STATEFUL.index(test_id.split("::")[0])


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_stateful_tests_pass_in_random_order(tmp_path, seed):
    env = dict(os.environ, PYTHONPATH=str(ROOT), ORDER_SEED=str(seed))
    if importlib.util.find_spec("pytest_randomly") is not None:
        order = ["-p", "randomly", f"--randomly-seed={seed}"]
    else:
        (tmp_path / "shuffle_plugin.py").write_text(_SHUFFLE)
        env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{tmp_path}"
        order = ["-p", "shuffle_plugin"]
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *order, "-v", *STATEFUL]
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    ran = [line.split(" ")[0] for line in out.stdout.splitlines() if " PASSED" in line]
    # the order really changed: not the files' own order
    assert len(ran) > 20
    assert ran != sorted(ran, key=_files_order)
