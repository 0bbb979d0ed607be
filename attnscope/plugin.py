"""The plugin contract, in one public home: what a package that adds attention variants imports.

    from attnscope.plugin import Case, Inputs, Prepared, Variant, dense_keep

- :class:`Variant` declares a variant (name, family, description, ``check``, ``prepare``); :func:`register` adds
  one at run time (a package listed under the entry-point group ``attnscope.variants`` is found without it).
- :class:`Inputs` is what ``prepare`` receives (q, k, v, scale); :class:`Prepared` what it returns (the timed
  ``fn`` and notes); raising :class:`Unsupported` in ``prepare`` makes a skipped row with the reason.
- :class:`Case` is the problem (shapes, dtype, mask, softcap, alibi, mode).
- The mask helpers build the case's mask from the same mask_mod every built-in variant uses: :func:`dense_keep`
  (None, (Sq, Sk) or (B, 1, Sq, Sk) booleans), :func:`dense_bias` (an additive float mask with ALiBi),
  :func:`alibi_bias`, and for flex attention :func:`mask_mod_for`, :func:`score_mod_for`, :func:`block_mask_for`.

The modules that define these names (``attnscope.variants.base``, ``attnscope.variants``,
``attnscope.core.types``, ``attnscope.variants.mask_mods``) hold the same objects.  Importing this module imports
no torch; the mask helpers import it when called.
"""

from __future__ import annotations

from attnscope.core.types import Case
from attnscope.variants import register
from attnscope.variants.base import Inputs, Prepared, Unsupported, Variant
from attnscope.variants.mask_mods import (
    alibi_bias,
    block_mask_for,
    dense_bias,
    dense_keep,
    mask_mod_for,
    score_mod_for,
)

__all__ = [
    "Case",
    "Inputs",
    "Prepared",
    "Unsupported",
    "Variant",
    "alibi_bias",
    "block_mask_for",
    "dense_bias",
    "dense_keep",
    "mask_mod_for",
    "register",
    "score_mod_for",
]
