"""The error check can fail: a variant that ignores a modifier fails it, and a modifier it cannot see is said.

The ignoring variants are plugins written here (attention by hand, one modifier left out), run through the
real run path on the CPU; the blind-spot numbers are checked against fp64 attention written out here."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from attnscope.core.types import Case  # noqa: E402
from attnscope.variants import REGISTRY, Prepared, Variant  # noqa: E402
from attnscope.variants.base import Inputs  # noqa: E402
from attnscope.workloads import sensitivity  # noqa: E402


def _by_hand(case: Case, x: Inputs, ignore: str | None) -> Prepared:
    from attnscope.variants.mask_mods import alibi_bias, dense_keep

    keep = dense_keep(case, x.q.device)

    def call() -> torch.Tensor:
        q, k, v = (t.detach().float() for t in (x.q, x.k, x.v))
        s = q @ k.transpose(-2, -1) * (1.0 if ignore == "scale" else x.scale)
        if case.alibi and ignore != "alibi":
            s = s + alibi_bias(case, q.device, torch.float32)
        if case.softcap is not None and ignore != "softcap":
            s = case.softcap * torch.tanh(s / case.softcap)
        if keep is not None and ignore != "mask":
            s = s.masked_fill(~keep, -math.inf)
        return (torch.softmax(s, -1) @ v).to(x.q.dtype)

    return Prepared(fn=call)


def _variant(ignore: str | None) -> Variant:
    return Variant(
        name=f"t_ignores_{ignore}" if ignore else "t_by_hand",
        family="plugin",
        description="attention by hand" + (f", ignoring {ignore}" if ignore else ""),
        check=lambda c: None,
        prepare=lambda c, x: _by_hand(c, x, ignore),
    )


IGNORED = [
    ("softcap", {"softcap": 50.0, "mask": "none"}),  # blind on the usual inputs in bf16: caught by the probe
    ("alibi", {"alibi": True}),
    ("mask", {"mask": "sliding:8"}),
    ("scale", {"mask": "none"}),
]


@pytest.mark.slow
@pytest.mark.parametrize(("ignore", "kw"), IGNORED)
def test_a_variant_ignoring_a_modifier_fails_and_the_honest_one_passes(monkeypatch, ignore, kw):
    from attnscope.execute.job import Options
    from tests.inline import run

    honest, bad = _variant(None), _variant(ignore)
    for v in (honest, bad):
        monkeypatch.setitem(REGISTRY, v.name, v)
    case = Case(1, 4, 64, 16, dtype="bf16", **kw)
    rep = run(case, [honest.name, bad.name], Options(timing_budget_s=0.005, measure_peak=False))
    rows = {r.variant: r for r in rep.results}
    assert rows[honest.name].status == rows[bad.name].status == "ok"
    assert rows[honest.name].numerics_ok is True, rows[honest.name].notes
    assert rows[bad.name].numerics_ok is False, (rows[bad.name].max_rel_error, rows[bad.name].notes)
    checks = {c["modifier"]: c for c in rows[bad.name].modifier_checks or []}
    if ignore == "softcap":
        # on the usual inputs a cap of 50 is invisible; the probe shows it and this variant missed it
        assert checks["softcap"]["visible"] is False and checks["softcap"]["variant"]["applied"] is False
        assert rows[bad.name].max_rel_error < rows[bad.name].error_tolerance  # the usual check alone would pass it
        assert any("did NOT apply it" in n for n in rows[bad.name].notes)
    else:
        assert checks[ignore]["visible"] is True
        assert rows[bad.name].max_rel_error > rows[bad.name].error_tolerance


def _fp64_attention(q, k, v, scale, keep):
    s = (q @ k.transpose(-2, -1)) * scale
    if keep is not None:
        s = s.masked_fill(~keep, -math.inf)
    return torch.softmax(s, -1) @ v


def _rel(a, b):
    return float(((a - b).flatten(2).norm(dim=-1) / b.flatten(2).norm(dim=-1)).max())


def test_a_mask_that_hides_one_key_of_many_is_said_blind():
    from attnscope.workloads.attention import make_inputs

    case = Case(1, 2, 256, 16, dtype="bf16", mask="padding:255")
    x = make_inputs(case, 0)
    _, rows, notes, probes = sensitivity.check(case, x, 2e-2)
    q, k, v = (t.double() for t in (x.q, x.k, x.v))
    keep = torch.arange(256).view(1, -1) < 255
    want = _rel(_fp64_attention(q, k, v, x.scale, None), _fp64_attention(q, k, v, x.scale, keep))
    mask = next(r for r in rows if r["modifier"] == "mask")
    assert mask["difference"] == pytest.approx(want, rel=1e-9)
    assert want < 4 * 2e-2 and mask["visible"] is False and not probes
    assert any(n.startswith("the error check is blind to mask") for n in notes)
    from attnscope.report.text.run import modifier_line

    line = modifier_line([{"variant": "naive"}, {"variant": "sdpa", "modifier_checks": rows}])
    assert line is not None and "BLIND to mask" in line and "sees scale" in line


def test_the_scale_and_a_cap_measured_against_attention_written_here():
    from attnscope.workloads.attention import make_inputs

    case = Case(1, 2, 32, 16, dtype="fp32", mask="none", softcap=2.0)
    x = make_inputs(case, 1)
    _, rows, _, _ = sensitivity.check(case, x, 1e-4)
    q, k, v = (t.double() for t in (x.q, x.k, x.v))

    def capped(scale):
        s = q @ k.transpose(-2, -1) * scale
        return torch.softmax(2.0 * torch.tanh(s / 2.0), -1) @ v

    got = {r["modifier"]: r["difference"] for r in rows}
    plain = torch.softmax(q @ k.transpose(-2, -1) * x.scale, -1) @ v
    assert got["softcap"] == pytest.approx(_rel(plain, capped(x.scale)), rel=1e-9)
    assert got["scale"] == pytest.approx(_rel(capped(1.0), capped(x.scale)), rel=1e-9)
    assert set(got) == {"softcap", "scale"}


def test_checks_beyond_the_reference_budget_are_not_run_and_say_so():
    # causal, B1 H8 S8192 D64: 4·64·8·(8192·8193/2) = 6.87e10 FLOP per forward; with the mask and the scale,
    # three references: 2.06e11, inside the CPU's 5e11.  Twice the sequence: 4× the work, 8.25e11, outside.
    assert sensitivity.too_costly(Case(1, 8, 8192, 64)) is None
    why = sensitivity.too_costly(Case(1, 8, 16384, 64))
    assert why is not None and "3 fp64 forward references (8.25e+11 FLOP)" in why


def test_the_probe_gives_no_verdict_where_the_variant_is_near_neither_reference():
    """Spec 2599 of the 10,000-spec fuzz: naive in bf16 on the soft-cap probe (q×32) was 0.082 from the reference
    with the cap and 0.107 from the one without: not 2× nearer either, so no verdict (None), and the row's
    numerics rest on the usual error.  Hand tensors: with = 1s, without = 0s and 3s, so that an output is by
    construction at a known relative distance from each."""
    from attnscope.workloads.sensitivity import Probe, judge

    with_it = torch.ones(1, 1, 4, 4, dtype=torch.float64)
    without_it = torch.full((1, 1, 4, 4), 3.0, dtype=torch.float64)
    probe = Probe("softcap", None, with_it, without_it, 32.0)  # type: ignore[arg-type]
    # the reference with it: 0 from it, 2/3 from the other -> applied
    assert judge(with_it.clone(), probe)["applied"] is True
    # the reference without it: 2 from the one with it (relative to 1), 0 from the other -> not applied
    assert judge(without_it.clone(), probe)["applied"] is False
    # 1.8: 0.8 from the one with it, 1.2/3 = 0.4 from the other: 2× nearer without -> not applied
    assert judge(torch.full((1, 1, 4, 4), 1.8, dtype=torch.float64), probe)["applied"] is False
    # 1.5: 0.5 from the one with it, 1.5/3 = 0.5 from the other: neither 2× nearer -> no verdict
    j = judge(torch.full((1, 1, 4, 4), 1.5, dtype=torch.float64), probe)
    assert j["applied"] is None and j["error_with"] == pytest.approx(0.5) and j["error_without"] == pytest.approx(0.5)
