"""The ``attnscope run`` flags advice gives for a case make that case again: read back by the command line's own
parser (not by the function under test), each case below comes out equal to its JSON."""

from __future__ import annotations

import shlex
from typing import Any

import pytest

from attnscope.cli.flags import case_fields
from attnscope.cli.main import build_parser
from attnscope.core.case import Case, run_flags
from attnscope.core.cases import make_case

CASES: list[Case] = [
    Case(batch=2, heads=8, seq_q=128, head_dim=64, dtype="bf16", causal=True, device="cpu"),
    Case(batch=1, heads=4, seq_q=64, head_dim=32, dtype="fp32", causal=False, device="cpu"),
    Case(
        batch=2,
        heads=8,
        kv_heads=2,
        seq_q=16,
        seq_kv=256,
        head_dim=64,
        dtype="fp16",
        mask="sliding:32@lower_right",
        softcap=30.0,
        alibi=True,
        mode="fwd_bwd",
        device="cpu",
    ),
    Case(batch=1, heads=4, seq_q=100, head_dim=32, mask="document:40,60", device="cpu"),
    Case(
        batch=3,
        heads=8,
        kv_heads=2,
        seq_q=1,
        head_dim=64,
        mask="none",
        page_size=16,
        kv_lens="list:10,20,30",
        device="cuda",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.label() for c in CASES])
def test_run_flags_read_back_make_the_same_case(case: Case) -> None:
    argv = ["run", *shlex.split(run_flags(case.to_dict()))]
    args = build_parser(argv).parse_args(argv)
    fields: dict[str, Any] = case_fields(args)
    assert make_case(args.device, **fields) == case


def test_causal_is_left_to_the_mask_and_seq_kv_to_the_kv_lens() -> None:
    flags = run_flags(CASES[4].to_dict())
    assert "--causal" not in flags and "--no-causal" not in flags and "--seq-kv" not in flags
    assert "--kv-lens 10,20,30" in flags and "--page-size 16" in flags  # the case keeps the lengths canonical
    assert run_flags(CASES[1].to_dict()).count("--no-causal") == 1
