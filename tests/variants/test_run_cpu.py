"""Every variant's run path on CPU (real torch work on a tiny case), skip reasons, JSON schema."""

from __future__ import annotations

import json
import math
import warnings

import pytest

torch = pytest.importorskip("torch")

from attnscope.core.cases import make_case  # noqa: E402
from attnscope.core.types import Case  # noqa: E402
from attnscope.document.load import load_document  # noqa: E402
from attnscope.document.schema import SCHEMA_VERSION, document, write_atomic  # noqa: E402
from attnscope.execute.job import Options  # noqa: E402
from attnscope.variants import REGISTRY, Unsupported, resolve  # noqa: E402
from attnscope.variants.sdpa import trial  # noqa: E402
from attnscope.workloads.attention import make_inputs, reference  # noqa: E402
from tests.inline import run  # noqa: E402

TINY = Case(batch=1, heads=2, seq_q=64, head_dim=16, dtype="bf16", causal=True, device="cpu")
FAST = Options(timing_budget_s=0.02, measure_peak=False)


@pytest.fixture(scope="module")
def tiny_report(tmp_path_factory):
    d = tmp_path_factory.mktemp("traces")
    # variants=None: the CPU default set, where flex_compiled is a visible opt-in skip row
    return run(TINY, None, Options(timing_budget_s=0.02, measure_peak=True, trace_dir=d))


def _by_name(rep):
    return {r.variant: r for r in rep.results}


def test_every_variant_has_a_row(tiny_report):
    rows = _by_name(tiny_report)
    # the default set: torch's own variants; external libraries join it only where they import (none do here), and
    # the flex_user variants only with --mask-mod / --score-mod; the serving variants only for a paged or ragged cache
    assert set(rows) == {
        n for n, v in REGISTRY.items() if v.family != "external" and v.in_default_set and not v.serving
    }
    assert {"flex_user", "flex_compiled_user"}.isdisjoint(rows)
    for name in ("naive", "naive_inplace", "sdpa_math", "sdpa_flash", "sdpa_default", "flex"):
        r = rows[name]
        assert r.status == "ok", (name, r.reason)
        assert r.cpu_time is not None and r.cpu_time.median_us > 0
        assert r.gpu_time is None  # no GPU: never invented
        assert r.numerics_ok, (name, r.max_rel_error)
        assert r.fingerprint is not None and r.fingerprint.device_kind == "cpu"
        assert r.flops == 4 * 16 * 2 * (64 * 65 // 2)  # causal keeps the diagonal: 1+2+...+64 per head
        assert r.tflops == pytest.approx(r.flops / (r.cpu_time.median_us * 1e-6) / 1e12)
        assert r.pct_of_peak is not None and r.pct_of_peak > 0


def test_cpu_skip_reasons(tiny_report):
    rows = _by_name(tiny_report)
    for name in ("sdpa_efficient", "sdpa_cudnn"):
        assert rows[name].status == "skipped"
        assert "no CPU kernel" in rows[name].reason
        assert "No viable backend" in rows[name].reason


def test_cpu_fingerprints_tell_variants_apart(tiny_report):
    rows = _by_name(tiny_report)
    naive, inplace, math_ = rows["naive"].fingerprint, rows["naive_inplace"].fingerprint, rows["sdpa_math"].fingerprint
    # out-of-place masked_fill copies the full B·H·S·S bf16 score tensor
    assert [(c.op, c.bytes) for c in naive.hidden_copies] == [("aten::masked_fill", 1 * 2 * 64 * 64 * 2)]
    assert inplace.hidden_copies == ()
    # the copy_ itself is a plain memory copy: counted apart as a memcpy, as a GPU's Memcpy DtoD is
    assert naive.num_kernels == inplace.num_kernels and (naive.num_memcpy, inplace.num_memcpy) == (1, 0)
    assert naive.upcasts == () and inplace.upcasts == ()  # scalar `* scale` wraps are not upcasts
    assert len(math_.upcasts) == 3 and math_.mask_rebuilt and math_.sdpa_backend == "math"
    assert rows["sdpa_flash"].fingerprint.sdpa_backend == "flash"
    assert rows["sdpa_default"].fingerprint.sdpa_backend == "flash"  # CPU default is flash-for-cpu
    assert rows["sdpa_flash"].fingerprint.num_kernels == 1
    assert rows["naive"].peak_memory_bytes and rows["naive"].peak_memory_bytes > 0


def test_trace_dir_keeps_one_loadable_trace_per_ok_variant(tiny_report):
    for r in tiny_report.results:
        if r.status == "ok":
            doc = json.loads(open(r.trace_path).read())
            assert any(e.get("name") == "attnscope::call" for e in doc["traceEvents"])


def test_flex_compiled_runs_and_reports_compile_time():
    rep = run(TINY, ["flex_compiled"], FAST)
    (r,) = rep.results
    assert r.status == "ok", r.reason
    assert r.compile_time_s is not None and r.compile_time_s > 0
    assert r.numerics_ok


def test_flex_compiled_is_opt_in_on_cpu_and_says_so(tiny_report):
    r = _by_name(tiny_report)["flex_compiled"]
    assert r.status == "skipped" and "--variants flex_compiled" in r.reason


def test_error_is_relative_norm_against_fp64_math():
    x = make_inputs(TINY, 0)
    ref = reference(TINY, x)
    assert ref.dtype == torch.float64
    from attnscope.measure.timing import relative_error

    err, nonfinite = relative_error(ref.clone(), ref)
    assert err == 0.0 and not nonfinite
    bad = ref.clone()
    bad[0, 1] *= 1.01  # 1 % off in one head only: the max over heads must see it
    err, _ = relative_error(bad, ref)
    assert err == pytest.approx(0.01, rel=1e-6)
    bad[0, 0, 0, 0] = math.nan
    err, nonfinite = relative_error(bad, ref)
    assert nonfinite and err == math.inf


def test_gqa_case_runs_every_cpu_variant():
    case = Case(batch=1, heads=4, kv_heads=2, seq_q=32, head_dim=16, dtype="fp32", causal=False, device="cpu")
    rep = run(case, ["naive", "sdpa_math", "sdpa_flash", "flex"], FAST)
    for r in rep.results:
        assert r.status == "ok", (r.variant, r.reason)
        assert r.numerics_ok, (r.variant, r.max_rel_error)
        assert r.flops == 4 * 1 * 4 * 32 * 32 * 16  # not causal: no halving


def test_trial_turns_torch_refusal_into_reason_with_its_warnings():
    def refuse():
        warnings.warn("Flash attention requires head_dim <= 256. Got 512", UserWarning, stacklevel=1)
        raise RuntimeError("No available kernel. Aborting execution.")

    import contextlib

    with pytest.raises(Unsupported) as e:
        trial(refuse, contextlib.nullcontext, "FLASH_ATTENTION")
    assert "FLASH_ATTENTION refused" in str(e.value) and "head_dim <= 256" in str(e.value)


def test_unknown_variant_and_bad_case_are_clear_errors():
    with pytest.raises(ValueError, match="unknown variant"):
        resolve("naive,bogus")
    with pytest.raises(ValueError, match="kv_heads"):
        Case(batch=1, heads=6, kv_heads=4, seq_q=8, head_dim=8)
    with pytest.raises(ValueError, match="dtype"):
        make_case("cpu", dtype="int8")
    with pytest.raises(ValueError, match=r"sees no CUDA GPU here; use case\.device cpu"):
        if torch.cuda.is_available():
            pytest.skip("has a GPU")
        import attnscope

        attnscope.run(make_case("cuda"), ["naive"], timing_budget_s=0.01)


REQUIRED = {
    "variant",
    "case",
    "status",
    "reason",
    "num_kernels",
    "num_memcpy",
    "num_memset",
    "kernels",
    "hidden_copies",
    "upcast_fp32",
    "mask_rebuilt",
    "gpu_time_us",
    "cpu_time_us",
    "peak_memory_bytes",
    "flops",
    "tflops",
    "max_rel_error",
}
KERNEL_KEYS = {
    "name",
    "category",
    "duration_us",
    "tensor_cores",
    "registers_per_thread",
    "shared_memory_bytes",
    "block",
    "grid",
    "theoretical_occupancy_pct",
    "occupancy_limiter",
    "kineto_occupancy_pct",
}


def test_json_document_schema(tiny_report, tmp_path):
    p = tmp_path / "out.json"
    write_atomic(p, document(tiny_report.env, tiny_report.results, case=TINY.to_dict()))
    doc = load_document(p)
    assert doc["schema_version"] == SCHEMA_VERSION
    for k in ("torch", "cuda", "cudnn", "device_name", "driver", "python", "date"):
        assert k in doc["env"]
    assert doc["env"]["torch"] == torch.__version__
    for r in doc["results"]:
        assert REQUIRED <= set(r), REQUIRED - set(r)
        assert r["status"] in ("ok", "skipped", "oom", "error")
        for k in r["kernels"]:
            assert KERNEL_KEYS <= set(k)
        for c in r["hidden_copies"]:
            assert {"op", "bytes"} <= set(c)
        if r["status"] == "skipped":
            assert r["reason"] and r["num_kernels"] is None
    json.dumps(doc, allow_nan=False)  # strict JSON: no NaN/Inf


def test_cpu_fingerprint_ignores_gpu_device_properties(tiny_report):
    """A CPU profile taken on a GPU machine lists the GPU in deviceProperties: not our device."""
    from attnscope.analysis.fingerprint.build import fingerprint
    from attnscope.trace import trace_from_doc

    path = next(r.trace_path for r in tiny_report.results if r.variant == "naive")
    doc = json.loads(open(path).read())
    doc["deviceProperties"] = [{"name": "NVIDIA H200", "computeMajor": 9, "computeMinor": 0}]
    fp = fingerprint(trace_from_doc(doc))
    assert fp.device_kind == "cpu" and fp.device_name is None and fp.compute_capability is None


def test_failures_are_rows_and_never_stop_the_run(monkeypatch):
    """OOM in prepare → an 'oom' row; a crash inside the call → an 'error' row; the next variant still runs."""
    from attnscope import variants as V
    from attnscope.variants import Prepared, Variant

    def oom(case, x):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 64.00 GiB")

    def crash(case, x):
        def boom():
            raise RuntimeError("kernel exploded")

        return Prepared(fn=boom)

    fake = {
        "fake_oom": Variant("fake_oom", "test", "raises OOM", lambda c: None, oom),
        "fake_crash": Variant("fake_crash", "test", "raises inside the call", lambda c: None, crash),
    }
    monkeypatch.setattr(V, "REGISTRY", {**V.REGISTRY, **fake})
    seen = []
    rep = run(TINY, ["fake_oom", "fake_crash", "naive"], FAST, on_result=lambda r: seen.append(r.variant))
    rows = {r.variant: r for r in rep.results}
    got = {name: (r.status, r.reason) for name, r in rows.items()}  # said on failure: each row's status and why
    assert rows["fake_oom"].status == "oom" and "64.00 GiB" in rows["fake_oom"].reason, got
    assert rows["fake_crash"].status == "error" and "kernel exploded" in rows["fake_crash"].reason, got
    assert rows["naive"].status == "ok", got
    assert seen == ["fake_oom", "fake_crash", "naive"]  # each row handed over as soon as it exists
