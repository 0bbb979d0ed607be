"""Older Kineto named its categories Operator, Kernel, Memcpy, Memset and Runtime (today: cpu_op, kernel,
gpu_memcpy, gpu_memset, cuda_runtime).  Both decoders read them as the same events; they were once passed over, so
a GPU trace in the old names read as a CPU trace with nothing in it."""

from __future__ import annotations

import gzip
import json

import pytest

import attnscope.trace as T
from attnscope.trace import load_trace
from tests.rawtrace import DATA
from tests.synth import doc, kernel, launch, op, write_kineto

OLD = {
    "cpu_op": "Operator",
    "kernel": "Kernel",
    "gpu_memcpy": "Memcpy",
    "gpu_memset": "Memset",
    "cuda_runtime": "Runtime",
}
HTA_OLD = DATA / "hta/trace_file_list_inference_rank_1.json.gz"


def _events() -> list[dict]:
    return [
        op("aten::mm", 10.0, 50.0, 1, **{"Input Dims": [[4, 8], [8, 4]], "Input type": ["float", "float"]}),
        launch(12.0, 100, 1),
        kernel("ampere_sgemm_32x32_sliced1x4_tn", 30.0, 7.0, 100, 1),
        op("aten::copy_", 70.0, 20.0, 2),
        launch(72.0, 101, 2, name="cudaMemcpyAsync"),
        kernel("Memcpy DtoD (Device -> Device)", 80.0, 3.0, 101, 2, cat="gpu_memcpy", bytes=4096),
        launch(75.0, 102, 2, name="cudaMemsetAsync"),
        kernel("Memset (Device)", 85.0, 1.0, 102, 2, cat="gpu_memset"),
    ]


def _renamed(evs: list[dict]) -> list[dict]:
    return [{**e, "cat": OLD.get(e["cat"], e["cat"])} for e in evs]


@pytest.mark.parametrize("path", ["typed", "safe"])
def test_old_category_names_read_as_todays(tmp_path, monkeypatch, path):
    new = load_trace(write_kineto(tmp_path / "new.json", doc(_events())))
    old_file = write_kineto(tmp_path / "old.json", doc(_renamed(_events())))
    if path == "safe":
        monkeypatch.setattr(T, "_fast", None)
    old = load_trace(old_file)
    assert (len(old.cpu_ops), len(old.gpu), len(old.runtime)) == (2, 3, 3)
    assert sorted(g.kind for g in old.gpu) == ["kernel", "memcpy", "memset"]
    for f in ("cpu_ops", "gpu", "runtime"):
        assert getattr(old, f) == getattr(new, f), f


def test_hta_trace_in_the_old_names_has_its_kernels():
    """HTA's inference trace (Kernel and Runtime events only): its kernels and launches, counted and summed with
    the json module, are all read; before, none were."""
    raw = json.loads(gzip.open(HTA_OLD).read())["traceEvents"]
    kernels = [e for e in raw if e.get("cat") == "Kernel"]
    runtime = [e for e in raw if e.get("cat") == "Runtime"]
    assert len(kernels) == 4 and len(runtime) == 8
    tr = load_trace(HTA_OLD)
    assert len(tr.gpu) == 4 and {g.kind for g in tr.gpu} == {"kernel"}
    assert sum(g.dur for g in tr.gpu) == sum(e["dur"] for e in kernels) == 30
    assert len(tr.runtime) == 8
    assert {g.correlation for g in tr.gpu} == {e["args"]["correlation"] for e in kernels}
