"""The one byte formatter and the one µs formatter, at each unit's boundary (values worked out by hand)."""

from __future__ import annotations

import pytest

from attnscope.core.units import fmt_bytes, fmt_us


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1.0 KiB"),
        (1536, "1.5 KiB"),  # 1536 / 1024
        (1024**2 - 1, "1,024.0 KiB"),  # 1048575 / 1024 = 1023.999 → 1,024.0: still below 1 MiB
        (1024**2, "1.0 MiB"),
        (3 * 1024**2 + 512 * 1024, "3.5 MiB"),
        (1024**3, "1.0 GiB"),
        (5 * 1024**3 // 4, "1.2 GiB"),  # 1.25 rounds half to even → 1.2
    ],
)
def test_bytes_in_binary_units_from_one_of_each(n, text):
    assert fmt_bytes(n) == text


def test_us_keeps_one_unit_and_dashes_none():
    assert fmt_us(None) == "—" and fmt_us(None, unit=False) == "—"
    assert fmt_us(12.34) == "12.3 µs"
    assert fmt_us(1_234_567.89) == "1,234,567.9 µs"  # never switched to ms
    assert fmt_us(12.35, unit=False) == "12.3"  # 12.35 is 12.3499… in binary


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (24_576, "24.0 KiB"),  # 3 upcasts of 1·2·64·16 fp32 = 3·8192 bytes: read 0.0 MiB before
        (1024**2 - 1, "1,024.0 KiB"),  # still below 1 MiB
        (1024**2, "1.0 MiB"),
        (3 * 1024**3, "3072.0 MiB"),  # never switched to GiB, no thousands separator (the messages' own MiB)
        (512, "512 B"),
    ],
)
def test_mib_below_one_mib_is_kib_or_bytes(n, text):
    from attnscope.core.units import fmt_mib

    assert fmt_mib(n) == text
