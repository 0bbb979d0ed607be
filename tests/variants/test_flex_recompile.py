"""compiled flex in a process that has compiled it for many shapes (a sweep's worker): dynamo's recompile
limit must not turn it into eager flex behind its name."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attnscope.core.types import Case  # noqa: E402
from attnscope.variants import get  # noqa: E402
from attnscope.workloads.attention import make_inputs  # noqa: E402


def _eager_flex_ops(fn) -> list[str]:
    """Names of the ops eager flex runs (its autograd op) in one profiled call."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        fn()
    return [e.name for e in prof.events() if "FlexAttention" in e.name]


@pytest.mark.slow
def test_past_the_recompile_limit_the_shape_is_compiled_afresh():
    pytest.importorskip("attn_gym")
    torch._dynamo.reset()
    # the config's own patch (not monkeypatch): cache_size_limit is an alias of recompile_limit, and undoing
    # a monkeypatch of the alias deletes the real setting for every later test
    with torch._dynamo.config.patch(recompile_limit=1):
        _compile_two_shapes()
    assert torch._dynamo.config.recompile_limit > 1
    torch._dynamo.reset()


def _compile_two_shapes() -> None:
    v = get("flex_compiled")
    notes = []
    for s in (16, 32):  # the second shape is one recompile past a limit of 1
        c = Case(1, 1, s, 16, dtype="fp32", causal=True, device="cpu")
        prep = v.prepare(c, make_inputs(c, 0))
        notes.append(" ".join(prep.notes))
        # eager flex would run FlexAttentionAutogradOp; the compiled graph runs generated code instead
        assert _eager_flex_ops(prep.fn) == [], s
    assert "recompile limit" not in notes[0]
    assert "recompile limit" in notes[1] and "compiled afresh" in notes[1]
