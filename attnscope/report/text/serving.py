"""The decode loop of a run (``run --steps``) in a few lines per variant: reads documents only."""

from __future__ import annotations

from typing import Any


def _ms(x: float | None) -> str:
    return "—" if x is None else f"{x:,.3f} ms"


def decode_loop_lines(doc: dict[str, Any]) -> list[str]:
    """One block per row that ran a decode loop: the eager step, the per-shape work per step and per 1,000 steps
    (with what redoes it and the advice that removes it), the graph replay, and whether graphs pay."""
    out = []
    for r in doc.get("results") or []:
        loop = (r.get("extra") or {}).get("decode_loop")
        if not loop:
            continue
        s = loop["summary"]
        e = s["eager"]
        first, last = loop["kv_lengths_first"], loop["kv_lengths_last"]
        out.append(
            f"{r['variant']}: decode loop of {loop['steps']} steps (KV lengths {min(first)}..{max(first)} → "
            f"{min(last)}..{max(last)}; last step's error {loop['last_step_rel_error']:.1e} against fp64)"
        )
        out.append(
            f"  eager: step {_ms(e['step_ms_median'])} median (call {_ms(e['call_ms_median'])}); per-shape work "
            f"({s['rebuild']}) on {e['rebuilds']} of {loop['steps']} steps: {_ms(e['rebuild_ms_per_step'])} per step, "
            f"{_ms(e['rebuild_ms_per_1000_steps'])} per 1,000 steps (wall clock, one sample per step: noisy)"
        )
        inside = e.get("in_call_rebuild_ms_median")
        if inside is not None and e.get("repeat_ms_median") and inside > 0.5 * e["repeat_ms_median"]:
            out.append(
                f"  a new shape also costs {_ms(inside)} inside the call (first call of a shape minus a second: "
                f"{_ms(e['in_call_rebuild_ms_per_1000_steps'])} per 1,000 steps), e.g. a cuDNN graph built per KV "
                "length: shape buckets remove it"
            )
        if s.get("advice"):
            out.append(f"  → {s['advice']}")
        g = s.get("graph")
        if g is None:
            out.append(f"  graph replay: {loop.get('graph_refused')}")
        else:
            be = g["break_even_steps_per_capture"]
            plan = g.get("plan_ms_per_replay_median")  # a server planned before every replay is captured once
            where = "one capture for the loop" if plan is not None else f"bucket {loop['bucket']} tokens"
            replay = (
                "a replay with its plan is not faster than an eager step"
                if plan is not None
                else "a replay is not faster"
            )
            err = loop.get("graph_last_step_rel_error")
            out.append(
                f"  graph replay ({where}): {_ms(g['replay_ms_median'])} median (CUDA events)"
                + (f" + plan() {_ms(plan)} median before each replay (host, synchronised)" if plan is not None else "")
                + (f"; last replay's error {err:.1e} against fp64" if err is not None else "")
                + f"; {g['captures']} capture(s), {_ms(g['capture_ms_per_step'])} per step, "
                f"{_ms(g['capture_ms_per_1000_steps'])} per 1,000 steps; graphs {'pay' if g['pays'] else 'do not pay'}"
                + (f" (a capture pays back after {be:.1f} steps)" if be is not None else f" ({replay})")
            )
        for name, found in (loop.get("trace_rebuilds") or {}).items():
            if found:
                rare = ", ".join(f"{k} ({n})" for k, n in list(found["ops_on_few_steps"].items())[:4]) or "none"
                out.append(
                    f"  trace {name}: rebuild ranges on {found['steps_with_rebuild']} of {found['steps']} steps, "
                    f"median {found['rebuild_host_us_median']:,.0f} µs host; ops on few steps: {rare}"
                )
    return out
