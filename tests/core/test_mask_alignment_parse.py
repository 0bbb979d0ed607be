"""A mask named with its alignment cannot be given the other one."""

from __future__ import annotations

import pytest

from attnscope.core.masks import parse_mask


@pytest.mark.parametrize("spec", ["causal_top_left@lower_right", "causal_lower_right@top_left"])
def test_contradicting_alignment_is_refused(spec: str) -> None:
    with pytest.raises(ValueError, match="cannot be @"):
        parse_mask(spec)


def test_named_alignment_agrees_with_the_suffix() -> None:
    assert parse_mask("causal_top_left@top_left").align == "top_left"
    assert parse_mask("causal_lower_right@lower_right").align == "lower_right"
