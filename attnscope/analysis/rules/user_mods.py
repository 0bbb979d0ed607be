"""The user's own mask_mod against the built-in that keeps the same scores.  Pure.

A row that ran the user's functions (``extra.user_mods``, the flex_user variants) is compared with the
built-in flex row of the same kind (compiled or eager) on the same case: the case's mask is the built-in the
user's mask was checked equal to, entry by entry, so the two rows compute the same scores.  Where the built-in
is faster beyond the noise of both medians (their quartiles do not overlap), ``builtin_mask_faster`` says by
how much, and why where the two main kernels' resources differ (shared memory per block, resident blocks per SM,
occupancy, grid).
"""

from __future__ import annotations

from typing import Any

from attnscope.analysis.fingerprint.occupancy import arch_limits, theoretical_occupancy
from attnscope.analysis.rules.insights import Out, main_kernel, r1, short
from attnscope.analysis.rules.peers import Peers, timing_of
from attnscope.analysis.rules.ties import overlaps
from attnscope.core.types import Insight


def user_mods_of(r: dict[str, Any]) -> dict[str, Any] | None:
    got = (r.get("extra") or {}).get("user_mods")
    return got if isinstance(got, dict) else None


def _compiled(r: dict[str, Any]) -> bool:
    return r.get("compile_time_s") is not None


def builtin_peer(r: dict[str, Any], peers: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The built-in flex row of the same kind (compiled or eager) as the user's row ``r``."""
    return next(
        (
            p
            for p in peers
            if p is not r
            and p.get("status") == "ok"
            and p.get("family") == "flex"
            and user_mods_of(p) is None
            and _compiled(p) == _compiled(r)
        ),
        None,
    )


def resident_blocks(r: dict[str, Any], k: dict[str, Any]) -> int | None:
    """Blocks of kernel ``k`` resident on one SM, from its registers, shared memory and block size on the row's
    compute capability (the occupancy calculator's arithmetic); None where one of them is not recorded."""
    cc, block = r.get("compute_capability"), k.get("block")
    limits = arch_limits((int(cc[0]), int(cc[1]))) if cc else None
    if limits is None or not block or k.get("shared_memory_bytes") is None:
        return None
    occ = theoretical_occupancy(
        int(k.get("registers_per_thread") or 0), int(k["shared_memory_bytes"]), block[0] * block[1] * block[2], limits
    )
    return occ.active_blocks_per_sm if occ else None


def _resources(r: dict[str, Any], k: dict[str, Any] | None) -> dict[str, Any]:
    if not k:
        return {}
    grid = k.get("grid")
    return {
        "blocks_per_sm": resident_blocks(r, k),
        "kernel": k.get("name"),
        "shared_memory_bytes": k.get("shared_memory_bytes"),
        "theoretical_occupancy_pct": k.get("theoretical_occupancy_pct"),
        "occupancy_limiter": k.get("occupancy_limiter"),
        "registers_per_thread": k.get("registers_per_thread"),
        "grid_blocks": grid[0] * grid[1] * grid[2] if grid else None,
    }


def why_slower(mine: dict[str, Any], theirs: dict[str, Any]) -> str | None:
    """The main kernels' resources side by side, where they differ: shared memory, occupancy, grid."""
    parts = []
    a, b = mine.get("shared_memory_bytes"), theirs.get("shared_memory_bytes")
    if a is not None and b is not None and a != b:
        parts.append(f"shared memory per block {a:,} B against {b:,} B")
    a, b = mine.get("theoretical_occupancy_pct"), theirs.get("theoretical_occupancy_pct")
    if a is not None and b is not None and abs(a - b) >= 1:
        lim = f", limited by {mine['occupancy_limiter']}" if mine.get("occupancy_limiter") else ""
        parts.append(f"occupancy {a:.1f}% against {b:.1f}%{lim}")
    a, b = mine.get("blocks_per_sm"), theirs.get("blocks_per_sm")
    if a is not None and b is not None and a != b:
        parts.append(f"{a} resident block(s) per SM against {b}")
    a, b = mine.get("grid_blocks"), theirs.get("grid_blocks")
    if a is not None and b is not None and a != b:
        parts.append(f"{a:,} blocks in the grid against {b:,}")
    if not parts:
        return None
    return "your kernel's resources against the built-in's: " + "; ".join(parts)


Timed = tuple[float, dict[str, Any] | None, str]  # median µs, its timing (quartiles), what it is


def builtin_mask_faster(r: dict[str, Any], case: Peers) -> Out:
    """A user's mask_mod slower, beyond the noise, than the built-in it equals."""
    mods = user_mods_of(r)
    peer = builtin_peer(r, case.results) if mods and mods.get("mask_mod") else None
    mine, theirs = timing_of(r), timing_of(peer) if peer else None
    if peer is None or mine is None or theirs is None or theirs[0] >= mine[0] or overlaps(mine[1], theirs[1]):
        return []
    return _slower_than_builtin(r, peer, mine, theirs)


def _slower_than_builtin(r: dict[str, Any], peer: dict[str, Any], mine: Timed, theirs: Timed) -> list[Insight]:
    """``r`` ran the user's mask_mod, ``peer`` the built-in it equals; the caller has found the built-in's
    median below the user's and their quartiles apart (beyond the noise of both)."""
    mods = user_mods_of(r) or {}
    case = r.get("case") or {}
    ratio = mine[0] / theirs[0]
    ev: dict[str, Any] = {
        "mask_mod": mods.get("mask_mod"),
        "equivalent_builtin": case.get("mask"),
        "builtin_variant": peer["variant"],
        "user_us": r1(mine[0]),
        "builtin_us": r1(theirs[0]),
        "ratio": round(ratio, 2),
        "timing": mine[2],
        "user_kernel": _resources(r, main_kernel(r)),
        "builtin_kernel": _resources(peer, main_kernel(peer)),
    }
    why = why_slower(ev["user_kernel"], ev["builtin_kernel"])
    fn = str(mods.get("mask_mod")).rsplit("/", 1)[-1]
    msg = (
        f"your mask_mod ({fn}) keeps the same scores as the built-in {case.get('mask')} (checked entry by entry), "
        f"yet runs {ev['ratio']:.2f}× slower: {ev['user_us']:,.1f} µs against {ev['builtin_us']:,.1f} µs for "
        f"{peer['variant']} ({mine[2]}, quartiles apart)" + (f"; {why}" if why else "")
    )
    advice = (
        f"write the mask as the built-in {short(str(case.get('mask')), 60)} is written: "
        "attnscope.plugin.mask_mod_for(attnscope.core.masks.parse_mask(MASK), Sq, Sk, device) returns its mask_mod"
    )
    return [Insight("builtin_mask_faster", r["variant"], "warning", msg, advice, ev)]
