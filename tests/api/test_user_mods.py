"""--mask-mod / --score-mod: the user's flex function loaded, checked entry by entry against the built-ins, and
measured beside the built-in it equals; every bad input one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attnscope.cli.main import main

pytest.importorskip("torch")

USER = Path(__file__).resolve().parents[1] / "data" / "user_mods" / "doc_offsets.py"
# 20 + 30 + 14 tokens: the documents tests/data/user_mods/doc_offsets.py hard-codes
CASE = ["--device", "cpu", "--batch", "2", "--heads", "2", "--seq", "64", "--head-dim", "8", "--dtype", "fp32"]
FAST = ["--budget", "0.01", "--no-peak"]


def _err(capsys, argv: list[str]) -> str:
    assert main(["run", *CASE, *FAST, *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err  # one line
    return err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--mask-mod", "nowhere.py:doc_mask"], "--mask-mod: no file "),
        (["--mask-mod", f"{USER}:missing"], "has no function 'missing'"),
        (["--mask-mod", f"{USER}"], "give FILE.py:FUNCTION"),
        (["--mask-mod", f"{USER}:NOT_A_FUNCTION"], "is not a function"),
        (
            ["--mask-mod", f"{USER}:three_args"],
            "--mask-mod: three_args takes 3 argument(s); flex calls it with (b, h, q_idx, kv_idx)",
        ),
        (["--mask-mod", f"{USER}:raises"], "RuntimeError: this mask is not finished"),
        (["--mask-mod", f"{USER}:every_other"], "no built-in mask equals it"),
        (
            ["--mask-mod", f"{USER}:doc_mask", "--mask", "causal"],
            "equals document:20,30,14, not causal, given as --mask",
        ),
        (
            ["--score-mod", f"{USER}:capped"],
            "--score-mod doc_offsets.py:capped does not compute the case's score modification",
        ),
    ],
)
def test_bad_user_function_is_one_line_exit_2(capsys, argv, said):
    assert said in _err(capsys, argv)


def test_causal_flag_with_a_causal_mask_mod(tmp_path):
    out = tmp_path / "run.json"
    argv = ["run", *CASE, *FAST, "--causal", "--mask-mod", f"{USER}:across_documents", "--variants", "flex_user"]
    assert main([*argv, "--json", str(out)]) == 0
    assert json.loads(out.read_text())["mask_mod"]["equivalent_builtin"] == "causal"


def test_raises_names_the_shape(capsys):
    assert "B=2 H=2 Sq=64 Sk=64" in _err(capsys, ["--mask-mod", f"{USER}:raises"])


def test_offsets_document_mask_measured_beside_the_builtin(tmp_path):
    out = tmp_path / "run.json"
    argv = ["run", *CASE, *FAST, "--mask-mod", f"{USER}:doc_mask", "--variants", "flex,flex_user"]
    assert main([*argv, "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    mm = doc["mask_mod"]
    assert "score_mod" not in doc
    assert mm["equivalent_builtin"] == "document:20,30,14"
    assert mm["checked_entries"] == 2 * 64 * 64  # two (batch, head) points, every (query, key)
    assert mm["source"] == f"{USER}:doc_mask"
    assert doc["case"]["mask"] == "document:20,30,14"
    rows = {r["variant"]: r for r in doc["results"]}
    assert rows["flex_user"]["status"] == "ok" and rows["flex"]["status"] == "ok"
    assert rows["flex_user"]["extra"]["user_mods"]["mask_mod"] == f"{USER}:doc_mask"
    assert "user_mods" not in (rows["flex"]["extra"] or {})
    # the user's function and the built-in computed the same output: both within the fp64 reference's tolerance
    assert rows["flex_user"]["numerics_ok"] is True
    # kept scores of the built-in: (20·21 + 30·31 + 14·15)/2 per (batch, head), 4·D FLOPs each
    assert rows["flex_user"]["flops"] == 4 * 8 * 2 * 2 * (20 * 21 + 30 * 31 + 14 * 15) // 2


def test_sliding_window_inferred(tmp_path):
    out = tmp_path / "run.json"
    argv = ["run", *CASE, *FAST, "--mask-mod", f"{USER}:sliding16", "--variants", "flex_user"]
    assert main([*argv, "--json", str(out)]) == 0
    assert json.loads(out.read_text())["mask_mod"]["equivalent_builtin"] == "sliding:16"


def test_the_user_variants_are_added_without_variants():
    from attnscope.api.user_case import with_user_variants
    from attnscope.core.types import Case

    case = Case(2, 2, 64, 8, "fp32", mask="document:20,30,14", mask_mod=f"{USER}:doc_mask")
    names = with_user_variants(case, None)
    assert "flex_user" in names and "flex" in names  # type: ignore[operator]
    assert "flex_compiled_user" not in names  # type: ignore[operator]  # flex_compiled is opt-in on a CPU
    assert with_user_variants(Case(2, 2, 64, 8, "fp32"), None) is None
    # named variants: the user's join them, unless one is named already
    assert with_user_variants(case, "naive,flex") == ["naive", "flex", "flex_user"]
    assert with_user_variants(case, "flex_compiled") == ["flex_compiled", "flex_user", "flex_compiled_user"]
    assert with_user_variants(case, "naive,flex_user") == ["naive", "flex_user"]


def test_score_mod_checked_against_the_flags_and_measured(tmp_path):
    out = tmp_path / "run.json"
    argv = ["run", *CASE, *FAST, "--softcap", "20", "--score-mod", f"{USER}:capped", "--variants", "flex,flex_user"]
    assert main([*argv, "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["score_mod"] == {"source": f"{USER}:capped", "equivalent_flags": "--softcap 20"}
    assert "mask_mod" not in doc
    rows = {r["variant"]: r for r in doc["results"]}
    assert rows["flex_user"]["extra"]["user_mods"] == {"mask_mod": None, "score_mod": f"{USER}:capped"}
    assert rows["flex_user"]["numerics_ok"] is True


def test_score_mod_with_another_cap_names_the_entry(capsys):
    err = _err(capsys, ["--softcap", "30", "--score-mod", f"{USER}:capped"])
    assert "where the case's (--softcap 30) gives" in err


def test_a_worker_process_loads_the_file_given_relative(tmp_path, monkeypatch):
    # the path is made absolute before the job crosses to the worker, which may start elsewhere
    monkeypatch.chdir(USER.parent)
    out = tmp_path / "run.json"
    argv = ["run", *CASE, *FAST, "--mask-mod", "doc_offsets.py:doc_mask", "--variants", "flex_user"]
    assert main([*argv, "--executor", "process", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    [row] = doc["results"]
    assert row["status"] == "ok" and row["numerics_ok"] is True
    assert doc["mask_mod"]["source"] == f"{USER}:doc_mask"


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"mask_mod": "nowhere.py:doc_mask"}, "mask_mod: no file "),
        ({"mask_mod": f"{USER}:three_args"}, "mask_mod: three_args takes 3 argument(s)"),
        ({"mask_mod": f"{USER}:doc_mask", "mask": "causal"}, "not causal, given as mask: leave mask out"),
        ({"score_mod": f"{USER}:capped", "softcap": 30.0}, "where the case's (softcap 30) gives"),
    ],
)
def test_the_library_names_the_case_field_not_the_flag(fields, said):
    """``api.check_user_mods`` called as a library: the message names the case's field, and no flag."""
    from attnscope.api.user_case import check_user_mods
    from attnscope.core.cases import make_case

    case = make_case("cpu", batch=2, heads=2, seq_q=64, head_dim=8, dtype="fp32", **fields)
    with pytest.raises(ValueError) as e:
        check_user_mods(case)
    assert said in str(e.value) and "--" not in str(e.value)
