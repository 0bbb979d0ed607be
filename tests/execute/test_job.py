"""A job's identity: its key in a store, its trace file's name, and the row of a job that measured nothing."""

from __future__ import annotations

import hashlib

import pytest

from attnscope.core.types import Case
from attnscope.execute.job import Options, job_key, trace_file_name
from attnscope.execute.worker import AttentionJob


def test_the_key_is_variant_case_fields_but_the_mode_and_the_mode():
    c = Case(batch=2, heads=4, seq_q=8, head_dim=16, dtype="fp16", mode="fwd_bwd")
    variant, fields, mode = AttentionJob(c, "naive").key
    assert (variant, mode) == ("naive", "fwd_bwd")
    # sorted keys, no spaces, no mode
    assert fields.startswith('{"alibi":false,"batch":2,"causal":true,"device":"cpu","dtype":"fp16","head_dim":16,')
    assert '"mode"' not in fields and " " not in fields
    # a row written without a mode is a forward row; without a case, an empty one
    assert job_key("x", {"batch": 1})[2] == "fwd" and job_key("x", None) == ("x", "{}", "fwd")
    # another key order in the row is the same key
    assert job_key("x", {"b": 1, "a": 2, "mode": "fwd"}) == job_key("x", {"a": 2, "b": 1})


def test_trace_names_carry_gqa_seq_kv_dtype_and_mode():
    c = Case(batch=2, heads=8, kv_heads=2, seq_q=16, seq_kv=32, head_dim=64, dtype="fp16", causal=False)
    assert trace_file_name("sdpa_flash", c) == "sdpa_flash-b2-h8-kv2-s16x32-d64-fp16-fwd.json"
    mha = Case(batch=1, heads=8, seq_q=16, seq_kv=16, head_dim=64, mode="fwd_bwd")
    assert trace_file_name("naive", mha) == "naive-b1-h8-s16-d64-bf16-causal-fwd_bwd.json"
    capped = Case(batch=1, heads=1, seq_q=16, head_dim=16, softcap=2.5, alibi=True, mask="sliding:4@lower_right")
    # '@' is not kept in a file name: it becomes '_'
    assert trace_file_name("flex", capped) == "flex-b1-h1-s16-d16-bf16-mask-sliding_4_lower_right-cap2.5-alibi-fwd.json"


def test_a_long_name_is_cut_at_180_characters_and_ends_with_the_hash_of_the_whole():
    c = Case(batch=1, heads=1, seq_q=4000, head_dim=16, mask="document:" + ",".join(["10"] * 400))
    name = trace_file_name("naive", c)
    stem = "naive-b1-h1-s4000-d16-bf16-mask-document_" + "_".join(["10"] * 400) + "-fwd"
    assert name == stem[:180] + "-" + hashlib.sha256(stem.encode()).hexdigest()[:16] + ".json"
    short = Case(batch=1, heads=1, seq_q=40, head_dim=16, mask="document:" + ",".join(["2"] * 20))
    assert len(trace_file_name("naive", short)) < 200 and trace_file_name("naive", short).endswith("_2-fwd.json")


def test_a_failed_row_carries_the_variant_s_family_and_backend():
    c = Case(batch=1, heads=1, seq_q=8, head_dim=8)
    r = AttentionJob(c, "sdpa_flash", Options()).failed("oom", "out of memory")
    assert (r.variant, r.status, r.reason, r.case) == ("sdpa_flash", "oom", "out of memory", c)
    assert (r.family, r.backend) == ("sdpa", "flash")
    assert r.gpu_time is None and r.fingerprint is None


def test_a_plugin_s_capitalised_name_is_kept_in_the_file_name():
    c = Case(batch=1, heads=1, seq_q=8, head_dim=8, causal=False)
    assert trace_file_name("MyAttn.v2", c) == "MyAttn.v2-b1-h1-s8-d8-bf16-fwd.json"


def _doc_stem(k: int, extra: str) -> tuple[Case, str]:
    lengths = ["1"] * k + ([extra] if extra else [])
    seq = k + (int(extra) if extra else 0)
    case = Case(batch=1, heads=1, seq_q=seq, head_dim=16, mask="document:" + ",".join(lengths))
    return case, f"naive-b1-h1-s{seq}-d16-bf16-mask-document_{'_'.join(lengths)}-fwd"


def test_a_name_of_200_characters_is_kept_and_one_of_201_is_cut():
    found = {}
    for k in range(60, 100):
        for extra in ("", "2", "10"):
            case, stem = _doc_stem(k, extra)
            found.setdefault(len(stem), (case, stem))
    case, stem = found[200]
    assert trace_file_name("naive", case) == stem + ".json"
    case, stem = found[201]
    assert trace_file_name("naive", case) == stem[:180] + "-" + hashlib.sha256(stem.encode()).hexdigest()[:16] + ".json"


def test_options_name_the_budget_they_refuse():
    with pytest.raises(ValueError) as e:
        Options(timing_budget_s=-1.0)
    assert str(e.value).startswith("timing_budget_s")


def test_an_attention_job_measures_itself_in_this_process():
    """The Job protocol's measure: the row of this job (its variant, its case), as an executor's worker gets it."""
    pytest.importorskip("torch")
    c = Case(batch=1, heads=1, seq_q=8, head_dim=8, dtype="fp32", device="cpu")
    r = AttentionJob(c, "naive", Options(timing_budget_s=0.01, measure_peak=False)).measure()
    assert (r.variant, r.case, r.status) == ("naive", c, "ok") and r.max_rel_error is not None
    assert AttentionJob(c, "naive").label() == f"naive · {c.label()}"
