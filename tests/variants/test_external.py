"""External-library variants: skip reasons where the library is missing, and the native mask form checked
against a stand-in that follows the library's documented semantics."""

from __future__ import annotations

import importlib.util
import math
import types

import pytest

torch = pytest.importorskip("torch")

from attnscope.core.types import Case  # noqa: E402
from attnscope.variants import REGISTRY, Inputs, Unsupported, resolve  # noqa: E402
from attnscope.variants import external as ext  # noqa: E402

MODULES = {
    "flash_attn2": "flash_attn",
    "flash_attn3": "flash_attn_interface",
    "xformers": "xformers.ops",
    "flashinfer_prefill": "flashinfer",
    "flashinfer_decode": "flashinfer",
    "cudnn_frontend": "cudnn",
    "sageattention": "sageattention",
}


def _missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except ModuleNotFoundError:  # a missing parent package
        return True


@pytest.mark.parametrize(("variant", "module"), sorted(MODULES.items()))
def test_missing_library_is_a_skip_with_the_import_error(variant, module):
    if not _missing(module):
        pytest.skip(f"{module} is installed here")
    reason = REGISTRY[variant].check(Case(1, 2, 64, 64, device="cuda"))
    assert reason is not None and f"import {module}" in reason and "No module named" in reason
    assert variant not in {v.name for v in resolve(None)}  # not in the default set
    assert variant in {v.name for v in resolve("all")}  # still a row when asked for


def test_unsupported_case_is_the_librarys_check(monkeypatch):
    monkeypatch.setitem(ext._IMPORTS, "sageattention", (types.SimpleNamespace(), None))
    sage = REGISTRY["sageattention"]
    assert "headdim in [64, 96, 128]" in sage.check(Case(1, 2, 64, 32, device="cuda"))
    assert "sliding" in sage.check(Case(1, 2, 64, 64, device="cuda", mask="sliding:8"))
    assert "CUDA GPUs only" in sage.check(Case(1, 2, 64, 64, device="cpu"))
    monkeypatch.setitem(ext._IMPORTS, "flash_attn_interface", (types.SimpleNamespace(), None))
    assert "no native form of prefix:4" in REGISTRY["flash_attn3"].check(
        Case(1, 2, 8, 64, device="cuda", mask="prefix:4")
    )
    assert "no ALiBi" in REGISTRY["flash_attn3"].check(Case(1, 2, 8, 64, device="cuda", alibi=True))


def _fa_semantics(q, k, v, causal, window, scale, softcap=0.0):
    """FlashAttention's documented mask, on (B, S, H, D): query i sees keys j with
    i + Sk - Sq - left <= j <= i + Sk - Sq + right (causal: right = 0); -1 means unbounded."""
    sq, sk = q.shape[1], k.shape[1]
    left, right = window
    i = torch.arange(sq).view(-1, 1) + sk - sq
    j = torch.arange(sk).view(1, -1)
    keep = torch.ones(sq, sk, dtype=torch.bool)
    if causal or right >= 0:
        keep &= j <= i + (0 if causal else right)
    if left >= 0:
        keep &= j >= i - left
    groups = q.shape[2] // k.shape[2]
    kk, vv = (t.repeat_interleave(groups, dim=2).transpose(1, 2).double() for t in (k, v))
    s = q.transpose(1, 2).double() @ kk.transpose(-1, -2) * scale
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    return (torch.softmax(s.masked_fill(~keep, -math.inf), -1) @ vv).transpose(1, 2)


def _fake_flash_attn(calls):
    def flash_attn_func(q, k, v, softmax_scale, causal, window_size, softcap=0.0, **kw):
        calls.append({"causal": causal, "window_size": window_size, "softcap": softcap})
        return _fa_semantics(q, k, v, causal, window_size, softmax_scale, softcap)

    def flash_attn_varlen_func(q, k, v, cq, ck, mq, mk, softmax_scale, causal, window_size, **kw):
        calls.append({"varlen": cq.tolist(), "causal": causal})
        outs = [
            _fa_semantics(q[None, a:b], k[None, c:d], v[None, c:d], causal, window_size, softmax_scale)[0]
            for a, b, c, d in zip(cq[:-1], cq[1:], ck[:-1], ck[1:], strict=True)
        ]
        return torch.cat(outs)

    return types.SimpleNamespace(flash_attn_func=flash_attn_func, flash_attn_varlen_func=flash_attn_varlen_func)


@pytest.mark.parametrize(
    ("mask", "sq", "sk", "kw", "expect"),
    [
        ("causal", 12, 12, {}, {"causal": True, "window_size": (-1, -1)}),
        ("causal_lower_right", 3, 12, {}, {"causal": True, "window_size": (-1, -1)}),
        ("sliding:4", 12, 12, {"softcap": 2.0}, {"causal": True, "window_size": (3, 0), "softcap": 2.0}),
        ("sliding:5@lower_right", 2, 12, {}, {"causal": True, "window_size": (4, 0)}),
        ("document:5,7", 12, 12, {}, {"varlen": [0, 5, 12, 17, 24], "causal": True}),
        ("padding:7,12", 12, 12, {}, {"varlen": [0, 12, 24], "causal": False}),
    ],
)
def test_flash_attention_gets_the_mask_in_its_native_form(monkeypatch, mask, sq, sk, kw, expect):
    from attnscope.workloads.reference import reference_chunked

    calls: list[dict] = []
    monkeypatch.setitem(ext._IMPORTS, "flash_attn", (_fake_flash_attn(calls), None))
    c = Case(2, 4, sq, 8, dtype="fp32", kv_heads=2, seq_kv=sk, mask=mask, **kw)
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(2, h, s, 8, generator=g) for h, s in ((4, sq), (2, sk), (2, sk)))
    prep = ext._fa_prepare(c, Inputs(q=q, k=k, v=v, scale=0.3), "flash_attn")
    out = prep.fn()
    assert {key: calls[-1][key] for key in expect} == expect
    want = reference_chunked(c, q, k, v, 0.3)["out"]
    assert out.shape == want.shape and torch.allclose(out.double(), want, atol=1e-5)


def test_fa2_refuses_top_left_causal_with_unequal_lengths():
    with pytest.raises(Unsupported, match="bottom-right"):
        ext._fa_window(Case(1, 2, 3, 8, seq_kv=9, mask="causal@top_left"))


class _FakeGraph:
    """A pybind-like sdpa: keyword names outside ``accepts`` are 'incompatible function arguments'."""

    def __init__(self, accepts: set[str]):
        self.accepts = accepts | {"name", "q", "k", "v", "attn_scale"}
        self.calls: list[dict] = []

    def sdpa(self, **kw):
        if set(kw) - self.accepts:
            raise TypeError("sdpa(): incompatible function arguments")
        self.calls.append(kw)
        return "O", None


def test_cudnn_band_uses_the_first_spelling_the_frontend_accepts():
    """1.32's pybind takes diagonal_band_left/right_bound (its docstrings say left_bound): the band of
    sliding:256 is W=256 keys on a bottom-right diagonal, none to its right."""
    from attnscope.variants import external_nv as nv

    kw, _how = nv._cudnn_mask(Case(1, 2, 512, 64, device="cuda", mask="sliding:256"))
    cudnn = types.SimpleNamespace(
        diagonal_alignment=types.SimpleNamespace(BOTTOM_RIGHT=types.SimpleNamespace(name="BOTTOM_RIGHT"))
    )
    g = _FakeGraph({"is_inference", "diagonal_alignment", "diagonal_band_left_bound", "diagonal_band_right_bound"})
    o, spelled = nv._cudnn_sdpa(g, cudnn, "q", "k", "v", 0.125, dict(kw))
    assert o == "O" and len(g.calls) == 1
    call = g.calls[0]
    assert call["diagonal_band_left_bound"] == 256 and call["diagonal_band_right_bound"] == 0
    assert call["diagonal_alignment"].name == "BOTTOM_RIGHT" and call["is_inference"] is True
    assert spelled == "diagonal_alignment=BOTTOM_RIGHT, diagonal_band_left_bound=256, diagonal_band_right_bound=0"
    # an older frontend without diagonal_alignment: the deprecated sliding_window form
    old = _FakeGraph({"generate_stats", "use_causal_mask_bottom_right", "sliding_window"})
    _, spelled = nv._cudnn_sdpa(old, types.SimpleNamespace(), "q", "k", "v", 0.125, dict(kw))
    assert old.calls[0]["sliding_window"] == 256 and spelled == "use_causal_mask_bottom_right=True, sliding_window=256"
    # none accepted: the last TypeError, for the variant to turn into a skipped row
    with pytest.raises(TypeError):
        nv._cudnn_sdpa(_FakeGraph(set()), cudnn, "q", "k", "v", 0.125, dict(kw))


@pytest.mark.parametrize("variant", [*sorted(MODULES), "paged_flashinfer"])
def test_on_a_cpu_a_gpu_library_is_refused_for_its_device_never_with_an_install_hint(variant):
    """Each library variant declares devices ('cuda',): on a CPU the row says so, whether or not the library is
    installed, and never 'pip install …' (installing it would not make it run on this machine); on a GPU the
    missing library is the reason, as before."""
    v = REGISTRY[variant]
    assert v.devices == ("cuda",)
    kv = {"kv_lens": "16,16", "page_size": 8} if v.serving else {}
    cpu = v.refusal(Case(2, 2, 1 if v.serving else 64, 64, seq_kv=16 if v.serving else None, device="cpu", **kv))
    assert cpu == f"{variant} declares devices cuda only, not cpu"
    if _missing(MODULES.get(variant, "flashinfer")):
        gpu = v.refusal(Case(2, 2, 1 if v.serving else 64, 64, seq_kv=16 if v.serving else None, device="cuda", **kv))
        assert "No module named" in gpu


def test_torch_own_variants_keep_their_words_on_a_cpu():
    """sdpa_efficient also declares ('cuda',), but torch's own variants need nothing installed: their check's
    reason stays (no CPU kernel in torch), not the bare device line."""
    assert "no CPU kernel" in REGISTRY["sdpa_efficient"].refusal(Case(1, 2, 64, 64, device="cpu"))
