"""gpu_kernel_records builds each KernelRecord positionally (keywords cost 3× the time at 10^5 records):
every field must land where its name says, checked on one event whose fields all differ."""

from __future__ import annotations

from dataclasses import asdict

from attnscope.analysis.fingerprint.attribution import Attribution, build_op_tree
from attnscope.analysis.fingerprint.occupancy import arch_limits, theoretical_occupancy
from attnscope.analysis.fingerprint.records import gpu_kernel_records
from attnscope.trace import CpuOp, GpuEvent

GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel"


def test_every_field_of_a_gpu_kernel_record_is_the_event_field_it_names():
    mm = CpuOp.recorded("aten::mm", 1, 0.0, 50.0, 7, [[64, 32], [32, 16]], ["c10::BFloat16", "c10::BFloat16"], pid=2)
    ev = GpuEvent("kernel", GEMM, 10.0, 12.5, 3, 7, 0, 13, (132, 2, 1), (128, 1, 1), 90, 49152, 37.5, 99)
    limits = arch_limits((9, 0))
    assert limits is not None
    occ = theoretical_occupancy(90, 49152, 128, limits)
    assert occ is not None
    (rec,) = gpu_kernel_records(Attribution(build_op_tree([mm]), [ev], [0], [None], ["external_id"]), limits)
    assert asdict(rec) == {
        "name": GEMM,
        "category": "gemm",
        "duration_us": 12.5,
        "device": "gpu",
        "launched_by": "aten::mm",
        "tensor_cores": True,
        "tensor_core_precision": None,
        "grid": (132, 2, 1),
        "block": (128, 1, 1),
        "registers_per_thread": 90,
        "shared_memory_bytes": 49152,
        "theoretical_occupancy_pct": round(occ.pct, 2),
        "occupancy_limiter": occ.limiter,
        "kineto_occupancy_pct": 37.5,
        "bytes": 99,
        "stream": 13,
        "start_us": 10.0,
        "input_dtype": "bf16",
    }


def test_a_record_crosses_a_process_with_every_field_in_its_place():
    """A rank's records come back from a pool's worker pickled (KernelRecord.__reduce__: its fields in order)."""
    import pickle

    from attnscope.core.types import KernelRecord

    values = {
        "name": "k",
        "category": "gemm",
        "duration_us": 1.5,
        "device": "cpu",
        "launched_by": "aten::mm",
        "tensor_cores": False,
        "tensor_core_precision": "TF32",
        "grid": (1, 2, 3),
        "block": (4, 5, 6),
        "registers_per_thread": 7,
        "shared_memory_bytes": 8,
        "theoretical_occupancy_pct": 9.5,
        "occupancy_limiter": "registers",
        "kineto_occupancy_pct": 10.5,
        "bytes": 11,
        "stream": 12,
        "start_us": -0.0,
        "input_dtype": "bf16",
    }
    rec = KernelRecord(**values)  # type: ignore[arg-type]
    for protocol in (2, pickle.HIGHEST_PROTOCOL):
        back = pickle.loads(pickle.dumps([rec, rec], protocol=protocol))
        assert asdict(back[0]) == values and back[0] == rec and hash(back[0]) == hash(rec)
        assert str(back[0].start_us) == "-0.0" and back[1] is back[0]  # one object, pickled once
