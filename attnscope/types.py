"""Old import path of :mod:`attnscope.core.types`, kept for plugins written against it."""

from attnscope.core.types import *  # noqa: F403
from attnscope.core.types import Case, Result  # noqa: F401
