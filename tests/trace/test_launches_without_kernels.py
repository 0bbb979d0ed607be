"""A trace that launched kernels but holds no GPU event (the GPU side not recorded, or recorded as CUPTI profiler
ranges) says so in one note: it read as a CPU trace, 'no device kernels exist', with nothing said of its launches."""

from __future__ import annotations

import gzip
import json
from collections import Counter

from attnscope.trace import load_trace
from tests.rawtrace import DATA
from tests.synth import doc, kernel, launch, op, write_kineto


def test_hta_cupti_trace_names_its_launches(capsys):
    path = DATA / "hta/cupti_profiler_trace.json.gz"
    raw = json.loads(gzip.open(path).read())["traceEvents"]
    cats = Counter(e.get("cat") for e in raw)
    assert cats["kernel"] == cats["gpu_memcpy"] == cats["gpu_memset"] == 0 and cats["cuda_profiler_range"] == 77
    n = sum(1 for e in raw if e.get("cat") == "cuda_runtime" and e["name"] == "cudaLaunchKernel")
    assert n == 77
    tr = load_trace(path)
    assert tr.gpu == []
    err = capsys.readouterr().err
    assert f"attnscope: note: {path}: 77 kernel launch(es) (cudaLaunchKernel ×77) but no GPU kernel" in err
    assert "CUPTI profiler ranges" in err


def test_no_note_where_the_kernels_are_there_or_nothing_was_launched(tmp_path, capsys):
    with_kernel = [op("aten::mm", 10.0, 20.0, 1), launch(12.0, 5, 1), kernel("gemm", 40.0, 3.0, 5, 1)]
    load_trace(write_kineto(tmp_path / "a.json", doc(with_kernel)))
    load_trace(write_kineto(tmp_path / "b.json", doc([op("aten::mm", 10.0, 20.0, 1)])))
    assert "kernel launch" not in capsys.readouterr().err
    load_trace(write_kineto(tmp_path / "c.json", doc(with_kernel[:2])))
    assert "1 kernel launch(es) (cudaLaunchKernel ×1) but no GPU kernel" in capsys.readouterr().err
