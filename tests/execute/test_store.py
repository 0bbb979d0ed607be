"""The JSONL store's rows and what ``--resume`` takes as done: every row, whatever its status."""

from __future__ import annotations

import json

from attnscope.core.types import Case
from attnscope.execute.job import Options
from attnscope.execute.store import Store
from attnscope.execute.sweep_plan import plan

CASES = [Case(batch=1, heads=2, seq_q=s, head_dim=8, dtype="fp32") for s in (16, 32, 64)]


def _row(variant: str, case: Case, status: str) -> dict:
    return {"variant": variant, "case": case.to_dict(), "status": status, "reason": None if status == "ok" else "x"}


def test_resume_does_not_measure_again_rows_that_ended_in_error_oom_or_timeout(tmp_path):
    """The docs: a crash, an OOM or a timeout is a row, and --resume measures only what is missing."""
    store = Store(tmp_path / "s.jsonl")
    statuses = {"naive": ["ok", "error", "oom"], "sdpa": ["timeout", "skipped", "ok"]}
    for v, sts in statuses.items():
        for c, st in zip(CASES, sts, strict=True):
            store.append(_row(v, c, st))
    # the key a row is known by, worked out here: variant, the case's fields but the mode (sorted JSON), the mode
    want = set()
    for v in statuses:
        for c in CASES:
            d = c.to_dict()
            mode = d.pop("mode")
            want.add((v, json.dumps(d, sort_keys=True, separators=(",", ":")), mode))
    assert store.done() == want
    assert plan(CASES, ["naive", "sdpa"], Options(), explicit=True, done=store.done()) == []
    # a variant the store has not seen is still measured, on every case
    todo = plan(CASES, ["naive", "sdpa", "flex"], Options(), explicit=True, done=store.done())
    assert [(j.variant, j.case.seq_q) for j in todo] == [("flex", 16), ("flex", 32), ("flex", 64)]


def test_a_row_of_another_mode_is_not_done(tmp_path):
    store = Store(tmp_path / "s.jsonl")
    store.append(_row("naive", CASES[0], "error"))
    bwd = Case(batch=1, heads=2, seq_q=16, head_dim=8, dtype="fp32", mode="fwd_bwd")
    todo = plan([CASES[0], bwd], ["naive"], Options(), explicit=True, done=store.done())
    assert [(j.variant, j.case.mode) for j in todo] == [("naive", "fwd_bwd")]


def test_a_torn_last_line_is_skipped_and_the_next_row_starts_on_its_own_line(tmp_path):
    path = tmp_path / "s.jsonl"
    store = Store(path)
    store.append(_row("naive", CASES[0], "ok"))
    with open(path, "ab") as f:
        f.write(b'{"variant": "sdpa", "ca')  # killed mid-write
    store.append(_row("sdpa", CASES[1], "oom"))
    rows = store.rows()
    assert [(r["variant"], r["status"]) for r in rows] == [("naive", "ok"), ("sdpa", "oom")]
    assert store.num_torn == 1
    assert path.read_bytes().count(b"\n") == 3  # the row, the torn line closed, the new row


def test_model_rows_that_failed_are_kept_by_resume_and_not_measured_again(tmp_path):
    """A model grid's store: the rows of this grid (config, depth, dtype, device) are taken as they are,
    errors, OOMs and timeouts included; their keys are the jobs' keys, so none is planned again."""
    from types import SimpleNamespace

    from attnscope.api.modeling import ModelGrid, same_run
    from attnscope.execute.job import job_key

    def case(mode: str, batch: int, seq: int, device: str = "cpu") -> dict:
        return {
            "config": "tiny",
            "layers": 1,
            "batch": batch,
            "seq": seq,
            "dtype": "fp32",
            "device": device,
            "mode": mode,
        }

    store = Store(tmp_path / "m.jsonl")
    rows = [
        {"variant": "eager", "impl": "eager", "case": case("train", 1, 64), "status": "error"},
        {"variant": "sdpa", "impl": "sdpa", "case": case("train", 1, 64), "status": "oom"},
        {"variant": "sdpa", "impl": "sdpa", "case": case("prefill", 2, 128), "status": "timeout"},
        {"variant": "sdpa", "impl": "sdpa", "case": case("prefill", 2, 128, "cuda"), "status": "ok"},  # not this grid
    ]
    for r in rows:
        store.append(r)
    spec, cfg = SimpleNamespace(name="tiny"), SimpleNamespace(num_hidden_layers=1)
    grid = ModelGrid(spec, cfg, None, ["train", "prefill"], [(1, 64), (2, 128)], "fp32", "cpu")
    earlier = [r for r in store.rows() if same_run(r, grid, ["eager", "sdpa"])]
    assert [(r["impl"], r["status"]) for r in earlier] == [("eager", "error"), ("sdpa", "oom"), ("sdpa", "timeout")]
    done = {job_key(r["variant"], r["case"]) for r in earlier}
    assert (
        "sdpa",
        json.dumps(
            {k: v for k, v in case("train", 1, 64).items() if k != "mode"}, sort_keys=True, separators=(",", ":")
        ),
        "train",
    ) in done


def test_rows_count_every_line_that_is_not_a_result_and_keep_reading(tmp_path):
    path = tmp_path / "s.jsonl"
    assert Store(path).num_torn == 0 and Store(path).rows() == []  # no file yet: no rows, nothing torn
    good = [_row("naive", c, "ok") for c in CASES]
    lines = [
        json.dumps(good[0]),
        '{"variant": "sdpa", "ca',  # torn
        json.dumps(["variant"]),  # JSON, not a row
        json.dumps({"case": {}}),  # a dict without a variant
        "",
        json.dumps(good[1]),
        "{",  # torn again
        json.dumps(good[2]),
    ]
    path.write_text("\n".join(lines) + "\n")
    store = Store(path)
    assert [r["case"]["seq_q"] for r in store.rows()] == [16, 32, 64]
    assert store.num_torn == 4
    assert store.rows() and store.num_torn == 4  # read again: counted afresh, not added up


def test_appended_rows_are_one_line_each_with_no_blank_line_between(tmp_path):
    path = tmp_path / "deep" / "er" / "s.jsonl"  # folders made as needed
    store = Store(path)
    store.append({"variant": "a", "case": None, "status": "ok"})
    store.append({"variant": "b", "case": None, "status": "ok"})
    assert path.read_bytes().split(b"\n") == [
        b'{"variant":"a","case":null,"status":"ok"}',
        b'{"variant":"b","case":null,"status":"ok"}',
        b"",
    ]


def test_a_one_character_torn_line_is_closed_before_the_next_row(tmp_path):
    for before in (b"{", b'{"variant":"a","status":"ok"}\n{'):
        path = tmp_path / "s.jsonl"
        path.write_bytes(before)
        store = Store(path)
        store.append({"variant": "b", "case": None, "status": "oom"})
        assert path.read_bytes() == before + b'\n{"variant":"b","case":null,"status":"oom"}\n'
        assert store.rows()[-1]["variant"] == "b" and store.num_torn == 1


def test_the_reader_of_a_store_says_what_is_missing(tmp_path):
    import pytest

    from attnscope.document.load import result_rows
    from attnscope.document.schema import DocumentError

    with pytest.raises(DocumentError, match=r"s\.jsonl: no such file"):
        result_rows([tmp_path / "s.jsonl"])
    (tmp_path / "s.jsonl").write_text("not json\n")
    with pytest.raises(DocumentError, match=r"s\.jsonl: not valid JSON .*no attnscope result rows"):
        result_rows([tmp_path / "s.jsonl"])
    (tmp_path / "s.jsonl").unlink()
    Store(tmp_path / "s.jsonl").append(_row("naive", CASES[0], "error"))
    rows, _ = result_rows([str(tmp_path / "s.jsonl")])
    assert [r["status"] for r in rows] == ["error"]
