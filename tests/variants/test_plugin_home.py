"""The plugin contract's public home, attnscope.plugin: every name a plugin needs, the very objects of the modules
that define them (the top-level copies attnscope.types and attnscope.mask_mods are gone), and the example plugin
written against it."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import attnscope.plugin as plugin

ROOT = Path(__file__).resolve().parents[2]

# (name, old module) pairs: where plugins written before attnscope.plugin imported each name from
OLD_PATHS = [
    ("Variant", "attnscope.variants.base"),
    ("Variant", "attnscope.variants"),
    ("Inputs", "attnscope.variants.base"),
    ("Inputs", "attnscope.variants"),
    ("Prepared", "attnscope.variants.base"),
    ("Prepared", "attnscope.variants"),
    ("Unsupported", "attnscope.variants.base"),
    ("register", "attnscope.variants"),
    ("Case", "attnscope.core.types"),
    ("dense_keep", "attnscope.variants.mask_mods"),
    ("dense_bias", "attnscope.variants.mask_mods"),
    ("alibi_bias", "attnscope.variants.mask_mods"),
    ("mask_mod_for", "attnscope.variants.mask_mods"),
    ("score_mod_for", "attnscope.variants.mask_mods"),
    ("block_mask_for", "attnscope.variants.mask_mods"),
]


@pytest.mark.parametrize("gone", ["types.py", "mask_mods.py"])
def test_the_top_level_shims_are_gone(gone):
    """attnscope.plugin is the one public home: the top-level copies of core.types and variants.mask_mods are not
    (read from the package's folder: an editable install elsewhere may still answer the old name)."""
    assert not (ROOT / "attnscope" / gone).exists()


@pytest.mark.parametrize(("name", "old"), OLD_PATHS)
def test_the_public_home_holds_the_same_object_as_the_old_path(name, old):
    assert getattr(plugin, name) is getattr(importlib.import_module(old), name)


def test_all_lists_exactly_what_is_exported():
    assert sorted(plugin.__all__) == sorted({n for n, _ in OLD_PATHS})
    for name in plugin.__all__:
        assert hasattr(plugin, name)


def test_the_example_plugin_imports_only_from_the_public_home():
    """Every attnscope name examples/plugin imports (read from its source) exists in attnscope.plugin."""
    src = (ROOT / "examples" / "plugin" / "attnscope_example_plugin" / "__init__.py").read_text()
    imported = [
        (node.module, a.name)
        for node in ast.walk(ast.parse(src))
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("attnscope")
        for a in node.names
    ]
    assert {n for _, n in imported} == {"Case", "Inputs", "Prepared", "Variant", "dense_bias", "dense_keep"}
    assert {m for m, _ in imported} == {"attnscope.plugin"}


def test_a_variant_built_from_the_public_home_registers_and_resolves():
    from attnscope.variants import REGISTRY, get

    v = plugin.Variant(
        name="plugin_home_probe",
        family="plugin",
        description="test",
        check=lambda case: None,
        prepare=lambda case, x: plugin.Prepared(fn=lambda: x.q),
    )
    try:
        assert plugin.register(v) is v
        assert get("plugin_home_probe") is v
    finally:
        REGISTRY.pop("plugin_home_probe", None)
