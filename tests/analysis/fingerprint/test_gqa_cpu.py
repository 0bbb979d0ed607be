"""The CPU fact behind the GQA advice (analysis/copy_context.py): SDPA with enable_gqa=True takes K and V with
fewer heads than Q and repeats nothing on the CPU.  Profiled live here, under whichever torch runs the suite."""

from __future__ import annotations

import torch
from torch.profiler import ProfilerActivity, profile

from attnscope.analysis.fingerprint.copy_context import copy_advice


def _ops(enable_gqa: bool) -> set[str]:
    q = torch.randn(1, 8, 128, 64, dtype=torch.bfloat16)
    k = torch.randn(1, 2 if enable_gqa else 8, 128, 64, dtype=torch.bfloat16)
    v = torch.randn_like(k)
    sdpa = torch.nn.functional.scaled_dot_product_attention
    sdpa(q, k, v, is_causal=True, enable_gqa=enable_gqa)  # warm-up
    with profile(activities=[ProfilerActivity.CPU]) as p:
        out = sdpa(q, k, v, is_causal=True, enable_gqa=enable_gqa)
    assert out.shape == (1, 8, 128, 64)
    return {e.name for e in p.events()}


def test_sdpa_with_enable_gqa_on_the_cpu_runs_flash_without_repeating_k_and_v():
    ops = _ops(True)
    assert "aten::_scaled_dot_product_flash_attention_for_cpu" in ops
    assert not ops & {"aten::repeat_interleave", "aten::repeat", "aten::expand", "aten::copy_", "aten::clone"}


def test_the_cpu_advice_names_that_kernel_and_no_gpu_backend():
    advice = copy_advice("broadcast", None, {"device_kind": "cpu"})
    assert advice is not None and "SDPA's CPU flash kernel then runs without any copy" in advice
    assert "cuDNN" not in advice and "H200" not in advice


def test_a_copy_inside_the_math_backend_on_the_cpu_points_to_the_cpu_flash_backend():
    advice = copy_advice("value", "aten::_scaled_dot_product_attention_math", {"device_kind": "cpu"})
    assert advice == (
        "this is internal to SDPA's math backend (aten::_scaled_dot_product_attention_math), not a call in this "
        "code; SDPA's CPU flash backend runs without it (seen on a CPU: docs/fingerprint.md, 'Copies seen avoided')"
    )


def test_a_k_v_repeat_inside_the_math_backend_on_the_cpu_names_the_cpu_flash_kernel():
    advice = copy_advice("broadcast", "aten::_scaled_dot_product_attention_math", {"device_kind": "cpu"})
    assert advice == (
        "this is internal to SDPA's math backend (aten::_scaled_dot_product_attention_math), not a call in this "
        "code: it repeats K/V itself for GQA; SDPA's CPU flash kernel takes enable_gqa=True without a copy "
        "(seen on a CPU with torch 2.13 and 2.11: docs/fingerprint.md, 'Copies seen avoided')"
    )
