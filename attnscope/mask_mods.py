"""Old import path of :mod:`attnscope.variants.mask_mods`, kept for plugins written against it."""

from attnscope.variants.mask_mods import *  # noqa: F403
from attnscope.variants.mask_mods import dense_bias, dense_keep  # noqa: F401
