"""The variants attnscope itself declares, without the plugins: importing this never runs plugin code.

``attnscope analyze`` reads a trace's declared flags from here, so a plugin that imports torch (or
fails to import) never slows or breaks the analysis of a trace.
"""

from __future__ import annotations

from attnscope.variants.base import Variant
from attnscope.variants.external import FA2, FA3, SAGE, XFORMERS
from attnscope.variants.external_nv import CUDNN_FRONTEND, FLASHINFER_DECODE, FLASHINFER_PREFILL
from attnscope.variants.flex import FLEX, FLEX_COMPILED, FLEX_COMPILED_USER, FLEX_USER
from attnscope.variants.naive import NAIVE, NAIVE_INPLACE
from attnscope.variants.paged import PAGED_VARIANTS
from attnscope.variants.sdpa import SDPA_VARIANTS

EXTERNAL: list[Variant] = [FA2, FA3, XFORMERS, FLASHINFER_PREFILL, FLASHINFER_DECODE, CUDNN_FRONTEND, SAGE]
VARIANTS: list[Variant] = [
    NAIVE,
    NAIVE_INPLACE,
    *SDPA_VARIANTS,
    FLEX,
    FLEX_COMPILED,
    *EXTERNAL,
    FLEX_USER,
    FLEX_COMPILED_USER,
    *PAGED_VARIANTS,
]
BY_NAME: dict[str, Variant] = {v.name: v for v in VARIANTS}
