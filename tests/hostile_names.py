"""Variants whose names are hostile to a terminal, registered only for tests (ATTNSCOPE_VARIANT_MODULES or import).

Each runs PyTorch's SDPA; only its name differs: rich markup (a closing tag with nothing to close, a hyperlink, a
style) and raw control sequences (an SGR colour, an OSC 8 hyperlink ended by BEL).
"""

from __future__ import annotations

from typing import Any

from attnscope.core.types import Case
from attnscope.variants import REGISTRY, Prepared, Variant, register
from attnscope.variants.base import Inputs

CLOSE, LINK, BOLD = "t_close[/]", "t_link[link=https://example.invalid/]x", "t_bold[bold]b"
ESC = "t_esc\x1b[31mred\x1b]8;;x\x07x\x9b2J"  # an SGR colour, an OSC 8 link ended by BEL, an 8-bit CSI
NAMES = (CLOSE, LINK, BOLD, ESC)


def _always(case: Case) -> str | None:
    return None


def _sdpa(case: Case, x: Inputs) -> Prepared:
    import torch.nn.functional as F

    def call() -> Any:
        return F.scaled_dot_product_attention(x.q, x.k, x.v, is_causal=case.causal, scale=x.scale)

    return Prepared(fn=call)


for _name in NAMES:
    if _name not in REGISTRY:
        # never in the default set: importing this module (the names test does) leaves every default run as it was
        register(
            Variant(
                _name,
                "test",
                f"test-only: {_name} [/] [link=https://example.invalid/]here",
                _always,
                _sdpa,
                in_default_set=False,
            )
        )
