"""`attnscope run --ncu` without a GPU: the command, the split by call, the join, the reasons, the insight.

Recorded Nsight Compute CSVs from the H200 (tests/data/ncu/) stand in for ncu's output; a fake
``ncu`` on the PATH plays the tool for the end-to-end paths (missing, no permission, a good run)."""

from __future__ import annotations

import csv
import io
import json
import os
import stat
from pathlib import Path

import pytest

from attnscope.analysis.annotate import annotate
from attnscope.api import analyze
from attnscope.core.types import Case
from attnscope.document.schema import result_to_dict
from attnscope.execute import ncu_run
from attnscope.measure import ncu
from tests.rawtrace import DATA, H200

NCU = DATA / "ncu"
CUDA_CASE = Case(batch=4, heads=16, seq_q=2048, head_dim=64, device="cuda")


def test_command_profiles_only_the_marked_calls() -> None:
    cmd = ncu.build_command("ncu", "python3", ["--variants", "sdpa_flash"])
    assert cmd[:3] == ["ncu", "--profile-from-start", "off"]
    assert "--csv" in cmd and cmd[cmd.index("--page") + 1] == "raw"
    assert {cmd[i + 1] for i, c in enumerate(cmd) if c == "--section"} >= {"Occupancy", "WarpStateStats"}
    assert cmd[cmd.index("python3") :] == [
        "python3",
        "-m",
        "attnscope.execute.ncu_run",
        "target",
        "--variants",
        "sdpa_flash",
    ]


def test_split_by_marker_on_the_recorded_counters() -> None:
    ks = ncu.parse_raw_csv((NCU / "h200_tensor_pipe.csv").read_text())
    secs = [s for s in json.loads((NCU / "h200_tensor_pipe_sections.json").read_text())["sections"] if "marker" in s]
    labels = [f"{s['label']} {s['direction']}" for s in sorted(secs, key=lambda s: s["marker"])]
    split = ncu.split_by_marker(ks, labels)
    assert len(split) == 44
    # cuDNN forward at B1 H4 S512 D64 bf16: one generated kernel (no memset: not a kernel to ncu)
    (k,) = split["sdpa_cudnn bf16 B1 H4 S512 D64 causal fwd"]
    assert k.name.startswith("cudnn_generated_fort_native_sdpa_sm90_flash_fprop")
    assert sum(len(v) for v in split.values()) == len(ks) - 44


def test_join_matches_trace_kernels_by_position_skipping_memsets() -> None:
    deep = ncu.parse_raw_csv((NCU / "h200_deep.csv").read_text())
    for variant, d in (("sdpa_flash", deep[0]), ("sdpa_cudnn", deep[1])):
        fp = analyze(H200 / f"{variant}.json").fingerprint
        assert fp is not None
        names = [(k.name, str(k.category)) for k in fp.kernels]
        (j,) = ncu.join(names, [d], "bf16")
        assert names[j["trace_kernel"]][1] == "attention"  # cuDNN's memset (index 0) is skipped
        assert j["tensor_cores"] is True and j["achieved_occupancy_pct"] == d.get(
            ncu.DEEP_METRICS["achieved_occupancy_pct"]
        )


def _fake_ncu(tmp_path: Path, script: str) -> None:
    exe = tmp_path / "ncu"
    exe.write_text("#!/bin/sh\n" + script)
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def path_with(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    return tmp_path


def test_without_ncu_the_reason_is_clear(monkeypatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert ncu_run.profile(CUDA_CASE, ["sdpa_flash"]) == ({}, "ncu (Nsight Compute) is not on the PATH")


def test_without_permission_the_reason_is_clear(path_with) -> None:
    _fake_ncu(path_with, 'echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission" >&2\nexit 1\n')
    got, why = ncu_run.profile(CUDA_CASE, ["sdpa_flash"])
    assert got == {} and why is not None and "no permission" in why and "ERR_NVGPUCTRPERM" in why


def test_on_the_cpu_the_reason_is_clear(path_with) -> None:
    _fake_ncu(path_with, "exit 0\n")
    assert "CPU" in (ncu_run.profile(Case(1, 8, 128, 64), ["sdpa_flash"])[1] or "")


def test_on_the_cpu_without_ncu_the_reason_is_the_device_not_the_path(monkeypatch) -> None:
    """`attnscope run --ncu` on a CPU where no ncu is installed: installing it would change nothing, so the note says
    the device (it said 'ncu (Nsight Compute) is not on the PATH')."""
    monkeypatch.setenv("PATH", "/nonexistent")
    assert ncu_run.profile(Case(1, 8, 128, 64), ["sdpa_flash"]) == (
        {},
        "Nsight Compute profiles CUDA kernels: this run is on the CPU",
    )


def test_a_good_run_joins_into_the_result_and_the_occupancy_insight(path_with) -> None:
    # The fake ncu prints a marker line and the recorded deep CSV with a marker row before flash's kernel.
    rows = list(csv.reader(io.StringIO((NCU / "h200_deep.csv").read_text())))
    start = next(i for i, row in enumerate(rows) if row[:1] == ["ID"])
    head, units, flash = rows[start], rows[start + 1], rows[start + 2]
    marker = list(flash)
    marker[head.index("Kernel Name")] = "cuda::<unnamed>::spin_kernel(long)"
    buf = io.StringIO()
    csv.writer(buf, quoting=csv.QUOTE_ALL).writerows(["==PROF== Connected".split("\t"), head, units, marker, flash])
    (path_with / "out.csv").write_text(buf.getvalue())
    _fake_ncu(path_with, f'echo "attnscope-ncu-marker sdpa_flash" >&2\ncat "{path_with / "out.csv"}"\n')
    r = analyze(H200 / "sdpa_flash.json", variant="sdpa_flash")
    r = type(r)(**{**r.__dict__, "case": CUDA_CASE})
    (r,), why = ncu_run.attach(CUDA_CASE, [r])
    assert why is None
    deep = r.ncu
    assert deep["status"] == "ok" and deep["num_kernels"] == 1
    (k,) = deep["kernels"]
    assert k["trace_kernel"] == 0 and k["theoretical_occupancy_pct"] == 12.5
    doc = annotate({"results": [result_to_dict(r)]})
    (occ,) = [i for i in doc["results"][0]["insights"] if "occupancy" in i["id"]]
    # read by hand from h200_deep.csv: 11.85% achieved against 12.5% theoretical, top stall 'wait'
    assert occ["evidence"]["achieved_occupancy_pct"] == pytest.approx(11.85, abs=0.05)
    assert occ["evidence"]["achieved_over_theoretical_pct"] == round(100 * 11.85 / 12.5)
    assert "Nsight Compute" in occ["message"] and "'wait'" in occ["message"]
