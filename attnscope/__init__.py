"""attnscope: what attention implementations really do on the hardware in front of you."""

from __future__ import annotations

from attnscope.api import analyze, run
from attnscope.core.types import Case, Fingerprint, KernelRecord, Result

__version__ = "0.1.0"
__all__ = ["Case", "Fingerprint", "KernelRecord", "Result", "__version__", "analyze", "run"]
