"""The default SDPA order predicted from the versions alone, case by case against torch's
check_prefer_cudnn_attention as its source reads (cuDNN newer than 9.15.0, sm9x/sm10x, minor 0 or 3 on a
CUDA < 13 build, TORCH_CUDNN_SDPA_DEPRIORITIZED unset; torch 2.10 on)."""

from __future__ import annotations

import pytest

from attnscope.variants.sdpa_why import first_usable, predict_order

CUDNN_FIRST = ["cudnn", "flash", "efficient", "math"]
FLASH_FIRST = ["flash", "efficient", "math", "cudnn"]


@pytest.mark.parametrize(
    ("torch", "sm", "cudnn", "cuda", "env", "order"),
    [
        ("2.11.0+cu130", (9, 0), 91501, "13.0", {}, CUDNN_FIRST),  # H100/H200
        ("2.11.0+cu130", (10, 0), 91600, "13.0", {}, CUDNN_FIRST),  # B200
        ("2.10.0", (10, 1), 91600, "13.0", {}, CUDNN_FIRST),  # any sm10x minor on a CUDA 13 build
        ("2.10.0", (10, 1), 91600, "12.8", {}, FLASH_FIRST),  # ... but minor 0 or 3 only on CUDA < 13
        ("2.10.0", (10, 3), 91600, "12.8", {}, CUDNN_FIRST),
        ("2.11.0", (9, 0), 91500, "13.0", {}, FLASH_FIRST),  # 9.15.0 is not newer than 9.15.0
        ("2.11.0", (9, 0), 91002, "12.6", {}, FLASH_FIRST),
        ("2.11.0", (8, 0), 91600, "13.0", {}, FLASH_FIRST),  # A100
        ("2.11.0", (12, 0), 91600, "13.0", {}, FLASH_FIRST),  # consumer Blackwell
        ("2.9.1", (9, 0), 91600, "13.0", {}, FLASH_FIRST),  # before 2.10
        ("2.11.0", (9, 0), 91600, "13.0", {"TORCH_CUDNN_SDPA_DEPRIORITIZED": "1"}, FLASH_FIRST),
        ("2.11.0", (9, 0), 91600, "13.0", {"TORCH_CUDNN_SDPA_DEPRIORITIZED": "0"}, CUDNN_FIRST),
        ("2.11.0", (9, 0), None, "13.0", {}, FLASH_FIRST),  # no cuDNN
    ],
)
def test_the_order_each_version_gives(torch, sm, cudnn, cuda, env, order):
    got = predict_order(torch, sm, cudnn, cuda, env)
    assert got["order"] == order
    assert got["cudnn_first"] is (order == CUDNN_FIRST)


def test_the_reason_names_the_deciding_fact():
    assert "9.15.0" in predict_order("2.11.0", (9, 0), 91500, "13.0")["why"]
    assert "cuDNN 9.16.0" in predict_order("2.11.0", (9, 0), 91600, "13.0")["why"]
    assert "before 2.10" in predict_order("2.9.1", (9, 0), 91600, "13.0")["why"]
    assert "sm121" in predict_order("2.11.0", (12, 1), 91600, "13.0")["why"]
    assert predict_order("2.13.0+cpu", None, None, None)["order"] == ["flash", "math"]


def test_what_runs_is_the_first_usable_in_the_order():
    usable = {"cudnn": False, "flash": True, "efficient": True, "math": True}
    assert first_usable(CUDNN_FIRST, usable) == "flash"
    assert first_usable(CUDNN_FIRST, {**usable, "cudnn": True}) == "cudnn"
    assert first_usable(FLASH_FIRST, {"math": True}) == "math"
    assert first_usable(FLASH_FIRST, {}) is None


@pytest.mark.slow
def test_the_cpu_explanation_carries_the_prediction_and_set_priority():
    torch = pytest.importorskip("torch")
    import inspect

    from torch.nn.attention import sdpa_kernel

    from attnscope.variants.sdpa_why import explain

    q = torch.randn(1, 2, 16, 16)
    why = explain(q, q, q, is_causal=True)
    assert why["prediction"]["order"] == ["flash", "math"]
    assert why["prediction"]["chosen"] == why["chosen"] == "flash"
    assert why["set_priority"] is ("set_priority" in inspect.signature(sdpa_kernel).parameters)
