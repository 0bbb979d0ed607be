"""Lines of one output that must not contradict each other."""

from __future__ import annotations

from attnscope.analysis.rules.mask_build import _mask_advice


def _ev(backend: str | None, dims: list[int]) -> dict[str, object]:
    return {"mask": "causal_lower_right", "dims": dims, "backend": backend, "built_inside": None}


def test_a_dense_lower_right_build_under_flash_is_not_called_flash_refusing() -> None:
    text = _mask_advice({"kernels": []}, _ev("flash", [1, 8192]))
    assert "neither flash nor efficient can take the call" not in text
    assert "SDPA ran flash, which applies the lower-right mask inside the kernel" in text
    # one query, lower-right: every key is kept, so no mask is needed at all
    assert "it sees all 8192 keys" in text


def test_under_cudnn_the_fallback_is_named() -> None:
    text = _mask_advice({"kernels": []}, _ev("cudnn", [4, 8]))
    assert "neither flash nor efficient can take the call (here SDPA ran cuDNN)" in text
