"""The gzip members are inflated as raw deflate after a header read by hand: the bytes must be those written."""

from __future__ import annotations

import gzip
import io
import os
from pathlib import Path

import pytest

from attnscope.trace import TraceError
from attnscope.trace import source as src

DATA = os.urandom(200_000).hex().encode()  # 400 kB that deflate cannot shrink much: several chunks


def _named(data: bytes) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="trace.json", mode="wb", fileobj=buf, mtime=0) as g:
        g.write(data)
    return buf.getvalue()


def _with_extra_and_comment(data: bytes) -> bytes:
    """A member with FEXTRA, FCOMMENT and FHCRC set (gzip.compress writes none of them): the header by hand."""
    body = gzip.compress(data)[10:]  # deflate stream + CRC-32 + ISIZE after the 10-byte fixed header
    head = b"\x1f\x8b\x08" + bytes([4 | 16 | 2]) + b"\0\0\0\0\0\xff"
    return head + (3).to_bytes(2, "little") + b"abc" + b"a comment\0" + b"\0\0" + body


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(gzip.compress(DATA), id="one member"),
        pytest.param(gzip.compress(DATA[:1000]) + gzip.compress(DATA[1000:]), id="two members"),
        pytest.param(gzip.compress(b"") + gzip.compress(DATA), id="an empty member first"),
        pytest.param(_named(DATA), id="file name in the header"),
        pytest.param(_with_extra_and_comment(DATA), id="extra field, comment, header CRC"),
    ],
)
def test_members_inflate_to_what_was_written(tmp_path: Path, raw: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "t.json.gz"
    p.write_bytes(raw)
    assert b"".join(src.chunks(p)) == DATA
    monkeypatch.setattr(src, "CHUNK", 7)  # headers and trailers split across the pieces read
    monkeypatch.setattr(src, "BLOCK", 7 * 3)
    assert b"".join(src.chunks(p)) == DATA


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        pytest.param(gzip.compress(DATA)[:5000], "truncated compressed stream", id="cut in the stream"),
        pytest.param(gzip.compress(DATA)[:-3], "truncated compressed stream", id="cut in the trailer"),
        pytest.param(gzip.compress(DATA)[:-1] + b"\x7f", "length differs", id="wrong ISIZE"),
        pytest.param(gzip.compress(DATA) + b"xx", "incorrect header check", id="junk after the member"),
        pytest.param(b"\x1f\x8b\x08\x00" + b"garbage-not-deflate" * 3, "corrupt gzip", id="not deflate"),
    ],
)
def test_broken_gzip_is_an_error(tmp_path: Path, raw: bytes, why: str) -> None:
    p = tmp_path / "t.json.gz"
    p.write_bytes(raw)
    with pytest.raises(TraceError, match=why):
        b"".join(src.chunks(p))


def test_a_member_whose_bytes_changed_is_refused_by_its_crc(tmp_path: Path) -> None:
    """Deflate stored blocks (level 0) carry the bytes as they are: flip one inside, the stream still inflates to the
    right length, and only the trailer's CRC-32 (RFC 1952) can tell."""
    raw = bytearray(gzip.compress(DATA, compresslevel=0))
    at = raw.index(DATA[1000:1016])  # the stored copy of these bytes inside the member
    raw[at] ^= 0x01
    p = tmp_path / "t.json.gz"
    p.write_bytes(bytes(raw))
    with pytest.raises(TraceError, match="CRC-32 mismatch"):
        b"".join(src.chunks(p))


@pytest.mark.parametrize("inflater", ["isal", "zlib"])
def test_both_inflaters_give_the_bytes_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, inflater: str) -> None:
    import zlib

    if inflater == "isal":
        isal_zlib = pytest.importorskip("isal.isal_zlib")
        monkeypatch.setattr(src, "_inflate", isal_zlib)
        monkeypatch.setattr(src, "_INFLATE_ERRORS", (zlib.error, isal_zlib.error))
    else:
        monkeypatch.setattr(src, "_inflate", zlib)
        monkeypatch.setattr(src, "_INFLATE_ERRORS", (zlib.error,))
    p = tmp_path / "t.json.gz"
    p.write_bytes(gzip.compress(DATA[:5000]) + gzip.compress(DATA[5000:]))
    assert b"".join(src.chunks(p)) == DATA
    p.write_bytes(b"\x1f\x8b\x08\x00" + b"garbage-not-deflate" * 3)
    with pytest.raises(TraceError, match="corrupt gzip"):
        b"".join(src.chunks(p))
