"""Lines that explain what a reader would otherwise stop at: jargon, equal peaks, empty op counts.

Each line appears only when the output shows what it explains.  The same terms are in the README
("Terms"), so a line can stay short.
"""

from __future__ import annotations

from typing import Any

PEAK_MATCH = 0.02  # two peaks within 2% are "the same"

TERMS = {
    "safe_softmax": '"safe" softmax: softmax plus guard passes (isneginf, all, where) so that a fully masked row '
    "gives 0, not NaN",
    "score_matrix": "O(S·D) minimum: the output itself (B·H·Sq·D values), all a fused kernel must write; "
    "the S×S scores are B·H·Sq·Sk values",
    "regs+smem": "regs+smem (occupancy): registers per thread and shared memory per block each cap the resident "
    "blocks at the same number",
}


def term_lines(doc: dict[str, Any]) -> list[str]:
    """One line per term the output uses (README, 'Terms', says the same)."""
    results = doc.get("results") or []
    ids = {i["id"] for r in results for i in r.get("insights") or []}
    limiters = [(r.get("main_kernel") or {}).get("occupancy_limiter") or "" for r in results if r.get("status") == "ok"]
    out = [TERMS[t] for t in ("safe_softmax", "score_matrix") if t in ids]
    if any("registers" in lim and "shared_memory" in lim for lim in limiters):
        out.append(TERMS["regs+smem"])
    return out


def _ok(doc: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((r for r in doc.get("results") or [] if r["variant"] == name and r.get("status") == "ok"), None)


def equal_peak_lines(doc: dict[str, Any]) -> list[str]:
    """naive and naive_inplace at the same peak: why the in-place mask saves no memory."""
    a, b = _ok(doc, "naive"), _ok(doc, "naive_inplace")
    if not a or not b or not a.get("peak_memory_bytes") or not b.get("peak_memory_bytes"):
        return []
    pa, pb = a["peak_memory_bytes"], b["peak_memory_bytes"]
    if abs(pa - pb) > PEAK_MATCH * max(pa, pb):
        return []
    return [
        "naive and naive_inplace reach the same peak memory: in both, two score matrices are alive at once "
        "(the matmul's product and its scaled copy, then the scores and softmax's output); the out-of-place "
        "masked_fill's copy replaces one of them rather than adding a third, so it costs time, not peak memory"
    ]


def empty_count_lines(doc: dict[str, Any]) -> list[str]:
    """A CPU row with 0 ops: the work ran, in code the profiler does not record as aten ops."""
    out = []
    for r in doc.get("results") or []:
        if r.get("status") != "ok" or r.get("device_kind") != "cpu" or r.get("num_kernels") != 0:
            continue
        if r.get("compile_time_s") is not None:
            out.append(
                f"{r['variant']}: 0 ops: no aten compute op ran inside the call; its torch.compile'd kernel runs "
                "as generated C++ the profiler does not record as ops (its time, memory and error are still measured)"
            )
        else:
            out.append(f"{r['variant']}: 0 ops: no aten compute op was recorded inside the traced region")
    return out


def reading_lines(doc: dict[str, Any]) -> list[str]:
    return equal_peak_lines(doc) + empty_count_lines(doc) + term_lines(doc)


def case_lines(doc: dict[str, Any]) -> list[str]:
    """What was measured in place of what was asked: the plain call for a mask that keeps every key, the
    built-in a user's mask_mod equals (both stored in the document by the run), and the document's own notes (a
    setting that had no effect where it ran)."""
    out = [str(n) for n in doc.get("notes") or [] if isinstance(n, str)]
    same = doc.get("equivalent_case")
    if isinstance(same, dict) and same.get("asked"):
        out.append(
            f"mask {same['asked']}"
            + (" keeps every key" if same.get("mask") == "none" or str(same.get("mask")).startswith("none@") else "")
            + f": {same.get('why')}; measured and advised as the plain call (mask {same.get('mask')})"
        )
    mm = doc.get("mask_mod")
    if isinstance(mm, dict) and mm.get("equivalent_builtin"):
        name = str(mm.get("source")).rsplit("/", 1)[-1]
        out.append(
            f"mask_mod {name} equals the built-in {mm['equivalent_builtin']} in all {mm['checked_entries']:,} entries "
            f"compared ({mm.get('checked_at')}): the flex_user rows run it, every other row the built-in"
        )
    return out


def peak_lines(doc: dict[str, Any], ok: list[dict[str, Any]]) -> list[str]:
    """Which ceiling the %peak column is of, row by row: the roofline's bound names it (compute: TFLOP/s,
    memory or latency: TB/s); rows without a roofline (a CPU) are of the matmul rate measured in the run."""
    peak = doc.get("peak")
    groups: dict[tuple[str, str, str], list[str]] = {}
    plain = []
    for r in ok:
        b = r.get("peak_basis")
        if isinstance(b, dict):
            key = (b["bound"], f"{b['ceiling']} ceiling, {b['ceiling_value']:,.1f} {b['unit']}", b["source"])
            groups.setdefault(key, []).append(r["variant"])
        elif r.get("pct_of_peak") is not None:
            plain.append(r["variant"])
    lines = []
    if len(groups) == 1 and not plain:
        ((bound, ceiling, source),) = groups
        lines.append(f"% peak against the {ceiling} ({source}): every row is {bound}-bound (the roofline's bound)")
    elif groups:
        each = "; ".join(
            f"{bound}-bound ({', '.join(names)}) against the {ceiling} ({source})"
            for (bound, ceiling, source), names in groups.items()
        )
        lines.append(f"% peak is of the ceiling the roofline's bound names: {each}")
    if peak and (plain or not groups):
        who = f" ({', '.join(plain)})" if groups and plain else ""
        lines.append(f"% peak{who} against {peak['tflops']:.1f} TFLOP/s ({peak['source']})")
    return lines
