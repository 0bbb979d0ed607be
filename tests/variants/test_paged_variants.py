"""The serving variants against the fp64 reference that walks the block table itself; a variant that ignores the
block table fails that check; the gather shows as a hidden copy with its bytes."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attnscope.core.cases import make_case  # noqa: E402
from attnscope.measure.timing import TOLERANCE, relative_error  # noqa: E402
from attnscope.variants import REGISTRY  # noqa: E402
from attnscope.variants.paged import make_server  # noqa: E402
from attnscope.workloads.attention import make_inputs, reference  # noqa: E402
from attnscope.workloads.paged_cache import sequence_kv, serving_reference  # noqa: E402

CASES = {
    "paged decode, ragged, GQA": dict(batch=3, heads=4, kv_heads=2, seq_q=1, kv_lens="37,5,64", page_size=8),
    "paged verify (4 draft tokens)": dict(batch=2, heads=2, seq_q=4, kv_lens="20,9", page_size=4),
    "packed chunked prefill": dict(batch=2, heads=2, seq_q=12, kv_lens="40,12", dtype="fp32"),
}


def _case(**kw):
    return make_case("cpu", head_dim=16, **kw)


def _dense_by_hand(case, x):
    """The same attention as one fp64 SDPA per sequence on K/V picked by a flat index built from the device's
    int32 block table (another route than the reference's Python page walk)."""
    c = x.cache
    outs = []
    for b, n in enumerate(c.lengths):
        if c.page_size is None:
            s = int(c.starts[b])
            rows = torch.arange(s, s + n)
        else:
            t = torch.arange(n)
            rows = c.block_table[b].long()[t // c.page_size] * c.page_size + t % c.page_size
        k = c.k_pool.reshape(-1, case.num_kv_heads, case.head_dim)[rows].double().transpose(0, 1)
        v = c.v_pool.reshape(-1, case.num_kv_heads, case.head_dim)[rows].double().transpose(0, 1)
        g = case.heads // case.num_kv_heads
        k, v = k.repeat_interleave(g, 0), v.repeat_interleave(g, 0)
        i = torch.arange(case.seq_q)[:, None] + n - case.seq_q
        keep = torch.arange(n)[None, :] <= i
        outs.append(torch.nn.functional.scaled_dot_product_attention(x.q[b].double(), k, v, attn_mask=keep))
    return torch.stack(outs)


@pytest.mark.parametrize("name", list(CASES))
def test_reference_walks_the_block_table(name):
    case = _case(**CASES[name])
    x = make_inputs(case, seed=1)
    ref = serving_reference(case, x)
    assert ref.shape == (case.batch, case.heads, case.seq_q, case.head_dim)
    assert torch.allclose(ref, _dense_by_hand(case, x), atol=1e-12, rtol=1e-10)


def test_reference_reads_a_page_where_the_table_says():
    """Pages of 2, one sequence of length 3 whose table is (pool pages) [p0, p1]: logical tokens 0, 1 are page
    p0's slots 0, 1 and token 2 is page p1's slot 0."""
    case = _case(batch=1, heads=1, seq_q=1, kv_lens="3", page_size=2, dtype="fp32")
    x = make_inputs(case, seed=0)
    p0, p1 = x.cache.table[0]
    k, _ = sequence_kv(x.cache, 0)
    assert torch.equal(k, torch.stack([x.cache.k_pool[p0, 0], x.cache.k_pool[p0, 1], x.cache.k_pool[p1, 0]]))


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("variant", ["paged_gather_sdpa", "paged_flex"])
def test_cpu_variants_match_the_reference(name, variant):
    case = _case(**CASES[name])
    x = make_inputs(case, seed=2)
    assert REGISTRY[variant].refusal(case) is None
    s = make_server(variant, case, x)
    s.plan(max(case.kv_lengths))
    err, bad = relative_error(s.call(), reference(case, x))
    assert not bad and err < TOLERANCE[case.dtype], err


@pytest.mark.parametrize("variant", ["paged_gather_sdpa", "paged_flex"])
def test_a_variant_that_ignores_the_block_table_fails_the_check(variant):
    """The same variant reading the pool's pages in order (the table replaced by the identity, as if the allocator
    had handed pages out in order) is far off the reference: the check sees the block table."""
    case = _case(**CASES["paged decode, ragged, GQA"])
    x = make_inputs(case, seed=3)
    c = x.cache
    width = c.block_table.shape[1]
    used = [len(r) for r in c.table]
    at, rows = 0, []
    for u in used:
        rows.append(list(range(at, at + u)) + [0] * (width - u))
        at += u
    assert rows != c.block_table.tolist()
    c.block_table = torch.tensor(rows, dtype=torch.int32)
    c.table = [r[:u] for r, u in zip(rows, used, strict=True)]  # flex reads the table once, when built
    s = make_server(variant, case, x)
    s.plan(max(case.kv_lengths))
    x.cache.table = None  # the reference must not see the wrong table: it gets the scattered one back
    fresh = make_inputs(case, seed=3)
    err, _ = relative_error(s.call(), reference(case, fresh))
    assert err > 10 * TOLERANCE[case.dtype], err


def test_flash_refuses_a_ragged_batch_in_its_own_words():
    case = _case(**CASES["paged decode, ragged, GQA"])
    assert "takes no attn_mask" in REGISTRY["paged_gather_flash"].refusal(case)
    same = _case(batch=2, heads=2, seq_q=1, seq_kv=24, page_size=8)
    assert REGISTRY["paged_gather_flash"].refusal(same) is None


def test_dense_variants_refuse_a_serving_case_and_serving_ones_a_dense_case():
    case = _case(**CASES["paged decode, ragged, GQA"])
    assert "paged or ragged cache" in REGISTRY["sdpa_flash"].refusal(case)
    assert "--page-size" in REGISTRY["paged_flex"].refusal(make_case("cpu"))
    assert "declares devices cuda" in REGISTRY["paged_varlen"].refusal(case)


def test_the_gather_is_a_hidden_copy_with_its_bytes(tmp_path):
    """B=3, capacity 64 (the longest), H_kv=2, D=16, bf16: each of K and V gathers 3·64 rows of 2·16 elements,
    3·64·2·16·2 = 12,288 B."""
    from attnscope.analysis.fingerprint.build import fingerprint
    from attnscope.measure.capture import capture
    from attnscope.trace import load_trace

    case = _case(**CASES["paged decode, ragged, GQA"])
    x = make_inputs(case, seed=4)
    s = make_server("paged_gather_sdpa", case, x)
    s.plan(64)
    path = tmp_path / "gather.json"
    capture(s.call, path, cuda=False)
    gathers = [c for c in fingerprint(load_trace(path)).hidden_copies if c.kind == "gather"]
    assert [c.bytes for c in gathers] == [12_288, 12_288]
    assert gathers[0].dims == (192, 2, 16)


def test_variants_command_on_a_serving_case_says_which_can_run():
    from attnscope.api.support import variant_support

    case = _case(batch=2, heads=2, seq_q=1, seq_kv=24, page_size=8)
    rows = {r["variant"]: r for r in variant_support(case)}
    assert rows["paged_gather_sdpa"]["runs_here"] == "yes" and rows["paged_flex"]["runs_here"] == "yes"
    assert rows["sdpa_flash"]["runs_here"] == "no" and "paged or ragged cache" in rows["sdpa_flash"]["reason"]
    assert rows["paged_gather_flash_fa3"]["runs_here"] == "no"  # CUDA only; activating FA3 needs its library


def test_which_servers_a_graph_per_bucket_can_replay():
    """A graph sized for a bucket serves every shorter length only where the call reads the lengths on the device:
    flash takes no mask (it would read past each length) and FlashInfer plans on the host."""
    case = _case(batch=2, heads=2, seq_q=1, seq_kv=24, page_size=16)
    x = make_inputs(case, seed=0)
    assert make_server("paged_gather_flash", case, x).graph_refusal is not None
    assert make_server("paged_gather_sdpa", case, x).graph_refusal is None
    assert make_server("paged_flex", case, x).graph_refusal is None


def test_varlen_without_enable_gqa_refuses_a_gqa_case_up_front(monkeypatch):
    # torch 2.11's varlen_attn takes no enable_gqa (seen on the GPU host as a TypeError at the first call): a packed
    # GQA case is refused before any tensor, naming both head counts; a case without GQA is not refused for it
    import torch.nn.attention.varlen as vl

    def varlen_211(query, key, value, cu_seq_q, cu_seq_k, max_q, max_k, *, is_causal=False, scale=None):
        raise AssertionError("not called by a check")

    from attnscope.variants.paged import _varlen_check  # the check behind the variant's refusal (CUDA-only here)

    monkeypatch.setattr(vl, "varlen_attn", varlen_211)
    why = _varlen_check(_case(batch=2, heads=4, kv_heads=2, seq_q=1, kv_lens="9,5"))
    assert why is not None and "enable_gqa" in why and "4 query heads on 2 KV heads" in why
    assert _varlen_check(_case(batch=2, heads=4, seq_q=1, kv_lens="9,5")) is None
