"""Case-insensitive kernel-name rules searched through lowercased twins answer as the rules themselves.

The expected answer is the original ``re.IGNORECASE`` pattern's own search, on every event name in the traces
under tests/data and on names made to trip a lowercasing (non-ASCII letters, upper-case escapes, mixed case).
"""

from __future__ import annotations

import gzip
import json
import re
from functools import cache
from pathlib import Path

import pytest

from attnscope.analysis.fingerprint import kernels as K
from attnscope.analysis.rules import masks as M

DATA = Path(__file__).resolve().parents[2] / "data"
MADE_UP = [
    "FLASH_FWD_SPLITKV_COMBINE_KERNEL",
    "void SingleDecodeWithKVCacheKernel<ΑΒΓ>",  # Greek capitals: not ASCII, searched as written
    "MergeStatesLargeNumHeads",
    "triton_per_fused_FLEX_attention_backward_0",
    "triton_red_fused_flex_attention_1",
    "Cudnn_Generated_Fort_Native_Sdpa_sm90_FPROP",
    "sm90_xmma_gemm_BF16BF16_bf16f32",
    "nccl:all_Reduce",
    "K\u212aLVIN",  # KELVIN SIGN folds to k under re.IGNORECASE
]


@cache
def names() -> list[str]:
    out: set[str] = set(MADE_UP)
    for p in DATA.rglob("*"):
        if not (p.is_file() and p.name.endswith((".json", ".json.gz"))):
            continue
        try:
            doc = json.load(gzip.open(p) if p.name.endswith(".gz") else p.open())
        except (ValueError, OSError):
            continue
        if isinstance(doc, dict):
            events = [e for e in doc.get("traceEvents") or [] if isinstance(e, dict)]
            out.update(e["name"] for e in events if isinstance(e.get("name"), str))
    return sorted(out)


PATTERNS = [
    *(pat for pat, _ in K.GPU_CATEGORY_RULES),
    *(pat for pat, _, _ in K.ATTENTION_IMPL_RULES),
    M.COMBINE,
    M.SPLIT,
]


@pytest.mark.parametrize("pat", PATTERNS, ids=[p.pattern[:40] for p in PATTERNS])
def test_the_lowered_twin_finds_what_the_pattern_finds(pat: re.Pattern[str]) -> None:
    low = K.lowered(pat)
    assert len(names()) > 500
    got = {n for n in names() if K.search_ignoring_case(pat, low, n)}
    assert got == {n for n in names() if pat.search(n)}


def test_a_pattern_with_an_upper_case_escape_has_no_twin() -> None:
    assert K.lowered(re.compile(r"a\Wb", re.IGNORECASE)) is None  # \w once lowered would mean the opposite
    assert K.lowered(re.compile(r"(?-i:Abc)d", re.IGNORECASE)) is None  # an inline flag: case matters inside
    assert K.lowered(re.compile("abc")) is None  # not case-insensitive: nothing to lower
