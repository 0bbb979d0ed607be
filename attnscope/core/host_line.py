"""The one line every report (terminal, JSON readers, HTML) gives a loaded host: pure, from the document's
``host`` (``attnscope.measure.host.assess``)."""

from __future__ import annotations

from typing import Any


def host_line(host: Any) -> str | None:
    """The caveat for a loaded host; None when the host is not loaded or not assessed."""
    if not isinstance(host, dict) or not host.get("loaded"):
        return None
    return f"host loaded: {host.get('why')}. Timings and rankings may be wrong: measure again on a quiet machine"


def host_line_ahead(host: Any, stop: str) -> str | None:
    """The caveat for a host found loaded before the first measurement (its load, read then), said while the user
    can still stop the command (``stop``: how, and what stopping keeps); None when it is not loaded."""
    if not isinstance(host, dict) or not host.get("loaded"):
        return None
    return f"host loaded before the first measurement: {host.get('why')}. The timings to come may be wrong: {stop}"
