from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def tour_env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), ATTNSCOPE_TOUR_SIZE="tiny", COLUMNS="200", KINETO_LOG_LEVEL="6")
    env.pop("FORCE_COLOR", None)
    return env


def run_tour(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "attnscope.cli.main", "tour", "--device", "cpu", *args],
        cwd=cwd,
        env=tour_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="session")
def auto_transcript(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    d = tmp_path_factory.mktemp("auto")
    p = run_tour("--auto", "--out", "t.json", "--html", "t.html", cwd=d)
    assert p.returncode == 0, p.stderr + p.stdout
    return json.loads((d / "t.json").read_text()), d
