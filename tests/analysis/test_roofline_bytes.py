"""Bytes against the counters: Nsight Compute's DRAM bytes beside the byte model, the roofline on them, and the
insight when traffic exceeds the model.  Expected values from the raw CSV (the csv module) and hand arithmetic."""

from __future__ import annotations

import csv

import pytest

from attnscope.analysis.roofline import measured_bytes, row_roofline
from attnscope.analysis.rules.traffic import traffic_over_model
from attnscope.measure import ncu
from tests.rawtrace import DATA

CSV = DATA / "ncu" / "h200_deep.csv"
FLASH = (
    "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t>>"
)
# the GPU default case of tests/data/h200: B4 H16 S2048 D64 bf16 causal; Q = 4·16·2048·64·2 = 16,777,216 B = K = V = O
CASE = {"batch": 4, "heads": 16, "seq_q": 2048, "head_dim": 64, "dtype": "bf16", "device": "cuda"}
MODEL = 4 * 16_777_216


def _raw_dram(row: int) -> tuple[int, int]:
    """dram__bytes_read.sum and dram__bytes_write.sum of one kernel row, read with the csv module."""
    lines = CSV.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    rows = list(csv.reader(lines[start:]))
    head = rows[0]
    r = rows[2 + row]  # after the header and the units row
    return (
        int(r[head.index("dram__bytes_read.sum")].replace(",", "")),
        int(r[head.index("dram__bytes_write.sum")].replace(",", "")),
    )


def _row(ncu_kernels, case=CASE, **kw):
    return {
        "variant": "sdpa_flash",
        "status": "ok",
        "case": case,
        "device_kind": "gpu",
        "device_name": "NVIDIA H200",
        "gpu_time_us": 100.0,
        "flops": 10**9,
        "kernels": [],
        "ncu": {"status": "ok", "kernels": ncu_kernels},
        **kw,
    }


def test_the_recorded_flash_kernel_against_the_model():
    """flash at the default case: 50,513,664 read + 12,886,784 written = 63,400,448 B against the model's
    4 × 16,777,216 = 67,108,864 B: ratio 0.9447."""
    read, write = _raw_dram(0)
    assert (read, write) == (50_513_664, 12_886_784)
    (k,) = [ncu.deep_fields(ncu.parse_raw_csv(CSV.read_text())[0])]
    row = _row([{"name": FLASH, **k}])
    rf = row_roofline(row)
    assert rf["bytes_measured"] == read + write == 63_400_448
    assert rf["bytes_model"] == MODEL
    assert rf["bytes_ratio"] == pytest.approx(63_400_448 / MODEL, abs=1e-4)
    assert rf["bytes"] == 63_400_448 and rf["bytes_source"].startswith("measured: DRAM bytes read + written")
    assert rf["tbps"] == pytest.approx(63_400_448 / 100e-6 / 1e12)
    assert rf["bytes_per_kernel"] == [{"name": FLASH, "read": read, "write": write}]
    assert traffic_over_model({**row, "roofline": rf}) == []  # under the model: nothing to say


def test_without_counters_the_model_stands():
    row = _row([])
    row["ncu"] = {}
    rf = row_roofline(row)
    assert rf["bytes"] == MODEL and rf["bytes_measured"] is None and rf["bytes_ratio"] is None
    assert rf["bytes_source"].startswith("model:")
    assert measured_bytes(row) == (None, [], "no Nsight Compute counters (run --ncu)")
    missing = _row([{"name": FLASH, "dram_read_bytes": 5, "dram_write_bytes": None}])
    assert measured_bytes(missing)[0] is None and "did not collect DRAM bytes" in measured_bytes(missing)[2]


def test_prefill_re_reading_k_and_v_is_the_insight():
    """Attention reads 16 MiB of Q and 3 × 32 MiB of K and V, writes 16 MiB: 128 MiB = 134,217,728 B against
    the model's 67,108,864 B, ratio 2.0; passes over K and V = (112 − 16) MiB / 32 MiB = 3.0."""
    mib = 1 << 20
    row = _row([{"name": FLASH, "dram_read_bytes": 112 * mib, "dram_write_bytes": 16 * mib}])
    row["roofline"] = row_roofline(row)
    (i,) = traffic_over_model(row)
    assert i.id == "traffic_over_model" and i.severity == "warning"
    assert i.evidence["bytes_ratio"] == 2.0 and i.evidence["kv_passes"] == 3.0
    assert i.message == "DRAM traffic 134.2 MB is 2.00× the byte model's 67.1 MB (Q, K, V read and O written once)"
    assert "read K and V 3.0 times" in i.advice and "measured bytes" in i.advice
    assert i.kernels == (FLASH,)


def test_bytes_in_other_kernels_are_named():
    """Attention at the model (64 MiB), plus an elementwise kernel moving 32 MiB: 96 MiB, ratio 1.5; the
    other kernel carries 33.3% of the bytes."""
    mib = 1 << 20
    ew = "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast>"
    row = _row(
        [
            {"name": FLASH, "dram_read_bytes": 48 * mib, "dram_write_bytes": 16 * mib},
            {"name": ew, "dram_read_bytes": 16 * mib, "dram_write_bytes": 16 * mib},
        ]
    )
    row["roofline"] = row_roofline(row)
    (i,) = traffic_over_model(row)
    assert i.evidence["bytes_ratio"] == 1.5 and i.evidence["other_kernels_pct"] == 33.3
    assert "33.6 MB (33.3%) move in kernels beside attention" in i.advice
    assert "read K and V" not in i.advice  # (48 − 16) / 32 = 1.0 pass


def test_a_ratio_at_the_bound_is_quiet_and_a_cause_is_always_given():
    mib = 1 << 20
    at = _row([{"name": FLASH, "dram_read_bytes": 64 * mib, "dram_write_bytes": 16 * mib}])  # 80/64 = 1.25
    at["roofline"] = row_roofline(at)
    assert traffic_over_model(at) == []
    decode = dict(CASE, seq_q=1, seq_kv=2048)  # Q, O 4·16·1·64·2 = 8,192 B each; K, V 16 MiB each
    row = _row([{"name": FLASH, "dram_read_bytes": 48 * mib, "dram_write_bytes": 0}], case=decode)
    row["roofline"] = row_roofline(row)
    (i,) = traffic_over_model(row)  # 48 MiB against 32 MiB + 16 KiB: 1.4995
    assert i.evidence["bytes_ratio"] == pytest.approx(48 * mib / (32 * mib + 16_384), abs=1e-4)
    assert "read K and V" not in i.advice  # one query: nothing to re-read per query block
    assert "no cause the DRAM counters alone show" in i.advice


# Tests written for the survivors of mutation testing: the exact evidence and advice, each cause's path.

MIB = 1 << 20
EW = "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast>"


def _insight(kernels, case=CASE, **kw):
    row = _row(kernels, case=case, **kw)
    row["roofline"] = row_roofline(row)
    return traffic_over_model(row)


def test_every_cause_in_full():
    """Attention reads 16 + 3·32 MiB and writes 16 (128 MiB), three helper kernels move 8 MiB each, and the
    call read a dense mask: 152 MiB against 64 MiB, ratio 2.375; helpers 24 MiB = 15.8%."""
    names = ["void a_copy_kernel<1>", "void b_cast_kernel<2>", EW]
    ks = [{"name": FLASH, "dram_read_bytes": 112 * MIB, "dram_write_bytes": 16 * MIB}] + [
        {"name": n, "dram_read_bytes": 4 * MIB, "dram_write_bytes": 4 * MIB} for n in names
    ]
    note = "attn_mask: dense boolean attn_mask (1, 1, 2048, 2048) for sliding:64"
    (i,) = _insight(ks, run_notes=["another note", note])
    assert i.variant == "sdpa_flash"
    assert i.evidence == {
        "bytes_measured": 152 * MIB,
        "bytes_model": MODEL,
        "bytes_ratio": 2.375,
        "measured_mb": 159.4,
        "model_mb": 67.1,
        "other_kernels_bytes": 24 * MIB,
        "other_kernels_pct": 15.8,
        "kv_passes": 3.0,
    }
    assert i.advice == (
        "25.2 MB (15.8%) move in kernels beside attention (void a_copy_kernel<1>, void "
        "at::native::elementwise_kernel<128,, void b_cast_kernel<2>): copies, casts or a mask built on the device; "
        "the attention "
        "kernel read K and V 3.0 times (its DRAM reads less Q, over K and V's bytes): each block of queries streams "
        "them again where the L2 cannot hold them (prefill); the call read a dense mask tensor (" + note[:80] + "); "
        "the roofline here uses the measured bytes"
    )


def test_four_helpers_name_three_and_a_note_without_both_words_is_no_mask():
    names = [f"void k{j}_kernel<{j}>" for j in range(4)]
    ks = [{"name": FLASH, "dram_read_bytes": 48 * MIB, "dram_write_bytes": 16 * MIB}] + [
        {"name": n, "dram_read_bytes": 8 * MIB, "dram_write_bytes": 0} for n in names
    ]
    (i,) = _insight(ks, run_notes=["a dense tensor", "an attn_mask"])
    assert "(void k0_kernel<0>, void k1_kernel<1>, void k2_kernel<2>)" in i.advice
    assert "dense mask" not in i.advice


def test_a_tenth_in_helpers_is_not_named_and_the_fallback_words():
    """Attention 90 MiB (read 80, written 10: (80 − 16)/32 = 2.0 passes over K and V) and a helper moving
    exactly 10 MiB of the 100: not over a tenth, so not named."""
    ks = [
        {"name": FLASH, "dram_read_bytes": 80 * MIB, "dram_write_bytes": 10 * MIB},
        {"name": EW, "dram_read_bytes": 10 * MIB, "dram_write_bytes": 0},
    ]
    (i,) = _insight(ks)
    assert "beside attention" not in i.advice and "read K and V 2.0 times" in i.advice
    decode = dict(CASE, seq_q=1, seq_kv=2048)
    (j,) = _insight([{"name": FLASH, "dram_read_bytes": 48 * MIB, "dram_write_bytes": 0}], case=decode)
    assert j.advice == (
        "no cause the DRAM counters alone show: a register spill to local memory or a partial L2 reuse (ncu's "
        "MemoryWorkloadAnalysis and the spill counters say which); the roofline here uses the measured bytes"
    )


def test_passes_use_the_case_shapes_dtype_and_kv_heads():
    """fp32, 2 KV heads of 4, Sk 1024 ≠ Sq 512: Q = 1·4·512·64·4 = 524,288 B; K+V = 2·1·2·1024·64·4 =
    1,048,576 B; attention reads 0.5 + 3·1 MiB: (3.5 − 0.5) MiB / 1 MiB = 3.0 passes, at exactly 1.2 not re-read."""
    case = {"batch": 1, "heads": 4, "kv_heads": 2, "seq_q": 512, "seq_kv": 1024, "head_dim": 64, "dtype": "fp32"}
    (i,) = _insight([{"name": FLASH, "dram_read_bytes": 3_670_016, "dram_write_bytes": 524_288}], case=case)
    assert i.evidence["kv_passes"] == 3.0
    # 1.2 passes: reads 0.5 MiB + 1.2 MiB; writes padded to pass 1.25×: model 2·0.5 + 1 = 2 MiB
    (j,) = _insight([{"name": FLASH, "dram_read_bytes": 1_782_579, "dram_write_bytes": 1 * MIB}], case=case)
    assert j.evidence["kv_passes"] == 1.2 and "read K and V" not in j.advice
    bwd = dict(case, mode="fwd_bwd")
    rows = _insight([{"name": FLASH, "dram_read_bytes": 40 * MIB, "dram_write_bytes": 0}], case=bwd)
    assert rows and "kv_passes" not in rows[0].evidence  # the backward's reads are not one forward's passes


def test_no_insight_without_a_ratio_or_at_zero_bytes():
    assert (
        traffic_over_model({"variant": "v", "roofline": {"bytes_ratio": None, "bytes_measured": 1, "bytes_model": 1}})
        == []
    )
    assert (
        traffic_over_model({"variant": "v", "roofline": {"bytes_ratio": 9.0, "bytes_measured": 0, "bytes_model": 1}})
        == []
    )
    assert (
        traffic_over_model({"variant": "v", "roofline": {"bytes_ratio": 9.0, "bytes_measured": 1, "bytes_model": 0}})
        == []
    )


def test_measured_bytes_reasons_exactly():
    row = _row([{"name": FLASH, "dram_read_bytes": 5, "dram_write_bytes": None}])
    assert measured_bytes(row) == (None, [], f"Nsight Compute did not collect DRAM bytes for {FLASH}")
    assert measured_bytes(_row([])) == (None, [], "Nsight Compute profiled no kernel of the call")
