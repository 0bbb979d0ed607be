"""The library's checks of the values it is given (core/arguments.py), each message and boundary by hand: numbers
(≥ or > their minimum, at most their maximum), whole numbers and their text, variant lists, the one device parser,
and a UsageError crossing a process with its fields."""

from __future__ import annotations

import pickle

import pytest

from attnscope.core.arguments import (
    UsageError,
    check_number,
    check_whole,
    number_problem,
    parse_device,
    read_number,
    read_whole,
    variant_names,
)


class _Refusal(UsageError):
    """A subclass that keeps UsageError's constructor: it crosses a process as itself."""


def test_a_subclass_with_usage_errors_constructor_crosses_a_process_as_itself_with_its_fields():
    back = pickle.loads(pickle.dumps(_Refusal("seq_q: too long", fields=("seq_q",))))
    assert type(back) is _Refusal and str(back) == "seq_q: too long" and back.fields == ("seq_q",)


def test_a_number_is_checked_against_zero_inclusive_unless_told_otherwise():
    assert number_problem(0) is None and number_problem(0.0) is None and number_problem(7) is None
    assert number_problem(-1) == "must be ≥ 0, got -1"
    assert number_problem(0, strict=True) == "must be > 0, got 0"
    assert number_problem(2.5, minimum=3) == "must be ≥ 3, got 2.5"
    assert number_problem(3, minimum=3) is None
    assert number_problem(11, maximum=10) == "must be at most 10, got 11"
    assert number_problem(10, maximum=10) is None
    assert number_problem(True) == "expected a number, got True"
    assert number_problem(float("nan")) == "expected a finite number, got nan"
    check_number("timeout_s", 0)  # ≥ 0 by default: no refusal
    with pytest.raises(UsageError) as e:
        check_number("timeout_s", 0, strict=True)
    assert str(e.value) == "timeout_s: must be > 0, got 0" and e.value.fields == ("timeout_s",)


def test_a_whole_number_may_equal_its_maximum_and_not_pass_it():
    check_whole("steps", 5, maximum=5)
    with pytest.raises(UsageError) as e:
        check_whole("steps", 6, maximum=5)
    assert str(e.value) == "steps 6 is past the most this tool takes (5)" and e.value.fields == ("steps",)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x", "expected a whole number, got 'x'"),
        ("0", "must be at least 1, got 0"),
        ("6", "6 is beyond any attention case this tool measures (max 5)"),
        ("12000", "12,000 is beyond any attention case this tool measures (max 5)"),
    ],
)
def test_a_whole_numbers_text_is_refused_in_its_own_words(text, message):
    with pytest.raises(UsageError) as e:
        read_whole(text, 5)
    assert str(e.value) == message


def test_a_whole_numbers_text_may_equal_its_limit():
    assert read_whole("5", 5) == 5 and read_whole("1", 5) == 1


@pytest.mark.parametrize(
    ("text", "kw", "message"),
    [
        ("x", {}, "expected a number, got 'x'"),
        ("inf", {}, "expected a finite number, got 'inf'"),
        ("-1", {}, "must be ≥ 0, got -1"),
        ("0.5", {"minimum": 1.0}, "must be ≥ 1, got 0.5"),
        ("0", {"strict": True}, "must be > 0, got 0"),
    ],
)
def test_a_numbers_text_is_refused_in_its_own_words(text, kw, message):
    with pytest.raises(UsageError) as e:
        read_number(text, **kw)
    assert str(e.value) == message


def test_a_numbers_text_takes_zero_by_default():
    assert read_number("0") == 0.0 and read_number("2.5") == 2.5


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "variants '' names no variant; give a comma list or 'all'"),
        (" , ", "variants ' , ' names no variant; give a comma list or 'all'"),
        ("naive,,flex", "variants 'naive,,flex' has an empty name between commas"),
        ("naive,flex,naive,sdpa,flex", "variants names flex, naive more than once"),
    ],
)
def test_a_variant_list_is_refused_naming_the_variants_value(text, message):
    with pytest.raises(UsageError) as e:
        variant_names(text)
    assert str(e.value) == message and e.value.fields == ("variants",)


def test_a_variant_list_keeps_its_order_and_spaces_trimmed():
    assert variant_names(" naive , flex") == ["naive", "flex"]


@pytest.mark.parametrize(
    ("text", "want"),
    [("cpu", ("cpu", None)), ("cuda", ("cuda", None)), ("cuda:1", ("cuda", 1)), (" CUDA:12 ", ("cuda", 12))],
)
def test_the_device_parser_reads_the_kind_and_the_index(text, want):
    assert parse_device(text) == want


@pytest.mark.parametrize(
    ("text", "what", "message"),
    [
        ("cpu:0", "device", "device 'cpu:0': the CPU takes no index; use cpu"),
        ("tpu", "case.device", "case.device 'tpu': attnscope measures on cpu or cuda[:N] (NVIDIA GPUs) only"),
    ],
)
def test_the_device_parser_refuses_naming_the_value_as_the_caller_calls_it(text, what, message):
    with pytest.raises(UsageError) as e:
        parse_device(text, what)
    assert str(e.value) == message and e.value.fields == (what,)
