"""The one way a size in bytes and a time in µs are written in words and tables.  Pure."""

from __future__ import annotations

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB


def fmt_bytes(n: float) -> str:
    """``n`` bytes in binary units with one decimal, each unit from one of it: 512 B, 1.5 KiB, 2.0 MiB, 1.2 GiB."""
    for unit, size in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if abs(n) >= size:
            return f"{n / size:,.1f} {unit}"
    return f"{int(n)} B"


def fmt_mib(n: float) -> str:
    """``n`` bytes in MiB with one decimal from 1 MiB up (never GiB: the sizes one message compares stay in one unit);
    below, :func:`fmt_bytes` (KiB or B), so a small size never reads 0.0 MiB."""
    return f"{n / MIB:.1f} MiB" if abs(n) >= MIB else fmt_bytes(n)


def fmt_us(us: float | None, unit: bool = True) -> str:
    """A time in µs with one decimal and thousands separators (never switched to ms, so one column keeps one unit);
    "—" for None.  ``unit``: False in a column whose header already names µs."""
    if us is None:
        return "—"
    return f"{us:,.1f} µs" if unit else f"{us:,.1f}"
