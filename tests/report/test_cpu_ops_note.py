"""The note under a CPU row's 'ops': 'no device kernels exist' is true of a CPU run, not of a trace without GPU
events (HTA's CUPTI trace launched 77 kernels its GPU side did not record as kernels)."""

from __future__ import annotations

import io

from attnscope.report.text.table import render
from attnscope.report.text.terminal import console


def _row(variant: str, source: str) -> dict:
    return {
        "variant": variant,
        "status": "ok",
        "source": source,
        "device_kind": "cpu",
        "num_kernels": 3,
        "num_memcpy": 0,
        "num_memset": 0,
        "hidden_copies": [],
        "upcast_fp32": False,
        "cpu_time_us": 10.0,
    }


def _text(*rows: dict) -> str:
    out = io.StringIO()
    render({"results": list(rows)}, console(file=out, width=300, color_system=None), title="t")
    return out.getvalue()


def test_a_run_says_no_device_kernels_exist():
    text = _text(_row("naive", "run"))
    assert "'ops' counts leaf compute aten ops (no device kernels exist)" in text


def test_a_trace_says_it_holds_none():
    text = _text(_row("cupti_profiler_trace", "trace"))
    assert "'ops' counts leaf compute aten ops (a trace without GPU events holds no device kernel)" in text
    assert "no device kernels exist" not in text


def test_both_say_both():
    text = _text(_row("naive", "run"), _row("t", "trace"))
    assert "(no device kernels exist; a trace without GPU events holds no device kernel)" in text
