from __future__ import annotations

from attnscope.tour.strip import cells, in_time_order, legend


def _k(cat: str, dur: float, start: float | None) -> dict[str, object]:
    return {"name": cat, "category": cat, "duration_us": dur, "start_us": start}


def test_cells_are_in_time_order_and_proportional() -> None:
    ks = [_k("softmax", 60.0, 30.0), _k("gemm", 10.0, 0.0), _k("elementwise", 30.0, 10.0)]
    # 10 cells over 100 µs: gemm 1, elementwise 3, softmax 6, in start order
    assert cells(ks, width=10) == "G" + "eee" + "SSSSSS"


def test_a_tiny_kernel_still_shows() -> None:
    ks = [_k("gemm", 1000.0, 0.0), _k("copy", 0.01, 1.0), _k("gemm", 1000.0, 2.0)]
    assert cells(ks, width=20) == "G" * 10 + "C" + "G" * 10


def test_kernels_without_a_start_go_last() -> None:
    ks = [_k("copy", 1.0, None), _k("gemm", 1.0, 5.0)]
    assert [k["category"] for k in in_time_order(ks)] == ["gemm", "copy"]
    assert legend(ks) == "C copy  G gemm"
