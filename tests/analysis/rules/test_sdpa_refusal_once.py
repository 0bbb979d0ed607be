"""A backend's refusal is said once, though torch reports it both as a warning and on stderr."""

from __future__ import annotations

import os
import sys
import warnings

from attnscope.variants.sdpa_why import _check

MSG = "Flash attention does not support a non-null attn_mask."


def test_a_refusal_seen_twice_is_listed_once() -> None:
    def refuse() -> bool:
        warnings.warn(MSG, RuntimeWarning, stacklevel=1)
        sys.stderr.flush()
        os.write(2, f"[W sdp_utils.cpp:1] Warning: {MSG} (function check_for_attn_mask)\n".encode())
        return False

    got = _check("flash", refuse)
    assert got["usable"] is False
    assert len(got["reasons"]) == 1
    assert got["torch_messages"] == [MSG]


def test_a_reason_no_pattern_shortens_is_not_repeated_as_torchs_words() -> None:
    from attnscope.variants.sdpa_why import refusal_text

    why = {"checks": [{"backend": "flash", "usable": False, "reasons": [MSG], "torch_messages": [MSG]}]}
    text = refusal_text(why, "flash")
    assert text.count(MSG) == 1


def test_torchs_words_follow_a_shortened_reason() -> None:
    from attnscope.variants.sdpa_why import refusal_text

    long = "head_dim should be no more than 256"
    why = {"checks": [{"backend": "cudnn", "usable": False, "reasons": ["head_dim > 256"], "torch_messages": [long]}]}
    assert refusal_text(why, "cudnn") == f"head_dim > 256 (torch: {long})"
