"""A dense variant's refusal of a serving case names the variants that measure it (paged_*), not the command the
user may be running ('the serving variants (attnscope variants) measure it', printed by attnscope variants)."""

from __future__ import annotations

from attnscope.core.case import Case
from attnscope.variants import REGISTRY


def test_every_serving_variant_is_named_paged_and_the_refusal_says_so():
    serving = [name for name in REGISTRY if REGISTRY[name].serving]
    assert serving and all(name.startswith("paged_") for name in serving)
    case = Case(3, 8, 1, 64, "bf16", False, seq_kv=40, device="cpu", page_size=4, kv_lens="5,17,40")
    why = REGISTRY["sdpa_default"].refusal(case)
    assert why == (
        "sdpa_default takes one dense K and V for the whole batch, not a paged or ragged cache: the serving variants "
        "(paged_*) measure it"
    )
