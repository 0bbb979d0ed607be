"""attnscope: what attention implementations really do on the hardware in front of you."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported on first use (below): the command line's first instant imports no dataclass table
    from attnscope.core.types import Case, Fingerprint, KernelRecord, Result

__version__ = "0.1.0"
__all__ = ["Case", "Fingerprint", "KernelRecord", "Result", "__version__", "analyze", "run"]


def __getattr__(name: str) -> Any:
    """``attnscope.run`` and ``attnscope.analyze`` on first use: reading a document imports no analysis; the types
    (``Case``, ``Result``, …) too, so that the console script installs its signal handlers within milliseconds."""
    if name in ("Case", "Fingerprint", "KernelRecord", "Result"):
        from attnscope.core import types

        return getattr(types, name)
    if name in ("analyze", "run"):
        from attnscope import api

        return getattr(api, name)
    raise AttributeError(f"module 'attnscope' has no attribute {name!r}")
