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


def fmt_mib(n: float, *, grouped: bool = False) -> str:
    """``n`` bytes in MiB with one decimal from 1 MiB up (never GiB: the sizes one message compares stay in one unit);
    below, :func:`fmt_bytes` (KiB or B), so a small size never reads 0.0 MiB.  ``grouped``: thousands separated
    (1,481.5 MiB), as the report's summaries write them; the insights' messages keep 1481.5 MiB."""
    return (f"{n / MIB:,.1f} MiB" if grouped else f"{n / MIB:.1f} MiB") if abs(n) >= MIB else fmt_bytes(n)


def fmt_mib_cell(n: float) -> str:
    """A size in a column whose header names MiB: MiB with one decimal, thousands separated; a size that is not
    zero but under 0.05 MiB reads "<0.1" (the column keeps its unit and never shows 0.0 for a few KiB)."""
    if 0 < n < MIB / 20:
        return "<0.1"
    return f"{n / MIB:,.1f}"


def fmt_us(us: float | None, unit: bool = True) -> str:
    """A time in µs with one decimal and thousands separators (never switched to ms, so one column keeps one unit);
    "—" for None.  ``unit``: False in a column whose header already names µs."""
    if us is None:
        return "—"
    return f"{us:,.1f} µs" if unit else f"{us:,.1f}"
