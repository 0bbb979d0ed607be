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
