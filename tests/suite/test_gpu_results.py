"""The GPU driver's bookkeeping, without a GPU: scenarios listed with estimates, the tarball put into docs/results."""

from __future__ import annotations

import importlib.util
import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "benchmarks" / "gpu" / "scenarios"
spec = importlib.util.spec_from_file_location("gpu_results", ROOT / "benchmarks" / "results.py")
assert spec and spec.loader
results = importlib.util.module_from_spec(spec)
spec.loader.exec_module(results)

TABLE = """noise above
              attnscope run — B=1 H=8 S=512 D=64 bf16 causal on cuda
┏━━━━━━━┳━━━━┓
┃ variant ┃ ok ┃
┡━━━━━━━╇━━━━┩
│ naive │ ok │
└───────┴────┘
  • a footnote
"""


def test_every_scenario_names_its_estimate():
    need = {"study", "fwd_bwd", "masks", "decode", "small", "model", "sweep", "ncu", "host", "gpus2"}
    have = {p.stem for p in SCENARIOS.glob("*.sh")}
    assert need <= have
    for p in SCENARIOS.glob("*.sh"):
        est = [line for line in p.read_text().splitlines()[:4] if line.startswith("# estimate: ")]
        assert len(est) == 1 and est[0].removeprefix("# estimate: ").removesuffix(" s").isdigit(), p.name


def test_the_driver_refuses_an_unknown_scenario_before_anything_runs():
    r = subprocess.run(["bash", "benchmarks/gpu/run.sh", "nosuch"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and "unknown scenario 'nosuch'" in r.stderr
    listed = subprocess.run(["bash", "benchmarks/gpu/run.sh", "--list"], cwd=ROOT, capture_output=True, text=True)
    assert listed.returncode == 0 and {line.split()[0] for line in listed.stdout.splitlines()} >= {"study", "ncu"}


def test_a_tarball_is_copied_into_raw_by_scenario_and_redraws_the_marked_table(tmp_path):
    top = tmp_path / "pack" / "attnscope-gpu-20261204-000000"
    (top / "study").mkdir(parents=True)
    (top / "env.txt").write_text("NVIDIA H200\n")
    (top / "study" / "study_default.txt").write_text(TABLE)
    tgz = tmp_path / "a.tgz"
    with tarfile.open(tgz, "w:gz") as t:
        t.add(top, arcname=top.name)
    res = tmp_path / "results"
    (res / "raw" / "study").mkdir(parents=True)
    (res / "raw" / "study" / "old.txt").write_text("an earlier measurement")
    (res / "raw" / "study" / "study_default.txt").write_text("replaced")
    page = res / "h200.md"
    page.write_text(
        "before\n<!-- results: study/study_default.txt table -->\nold\n<!-- /results -->\n"
        "<!-- results: gone/x.txt all -->\nkept\n<!-- /results -->\n"
    )
    assert results.main([str(tgz), "--results", str(res)]) == 0
    assert sorted(p.name for p in (res / "raw" / "study").iterdir()) == ["env.txt", "old.txt", "study_default.txt"]
    want = "\n".join(TABLE.splitlines()[1:7])  # the title line through the └ line, written out above
    assert page.read_text() == (
        f"before\n<!-- results: study/study_default.txt table -->\n```text\n{want}\n```\n<!-- /results -->\n"
        "<!-- results: gone/x.txt all -->\nkept\n<!-- /results -->\n"
    )
    assert results.main([str(tmp_path / "none.tgz"), "--results", str(res)]) == 2
