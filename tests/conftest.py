"""Shared fixtures."""

from __future__ import annotations

import pytest


@pytest.fixture
def test_variants(monkeypatch):
    """The misbehaving t_* variants, here and in every worker process, for one test only."""
    from attnscope import variants as V

    monkeypatch.setenv(V.MODULES_ENV, "tests.variants_for_tests")
    import tests.variants_for_tests as T

    T.register_all()
    yield T.VARIANTS
    for v in T.VARIANTS:
        V.REGISTRY.pop(v.name, None)


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch):
    """Output is rendered at a wide terminal's width unless a test sets its own (the width tests set 80 and 120):
    the commands take the terminal's width, and pytest's captured output has none."""
    monkeypatch.setenv("COLUMNS", "200")
