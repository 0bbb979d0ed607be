"""The words of a sweep recommendation: its axes, case labels and the texts a terminal or a page shows for the
dict :func:`attnscope.analysis.recommend.recommend` returns.  Plain data in, text out: the report reads a
recommendation through these without importing the analysis."""

from __future__ import annotations

from typing import Any

from attnscope.core.case import recommender_axes

DEFAULT = "sdpa_default"  # PyTorch's own choice among the SDPA backends

# From the table of the case's fields (attnscope.core.case): the axes in the order a policy names them (the most
# telling first; any other case field follows, sorted), their symbols, and the order a case label names them in
# ('B=2 H=8 S=512 D=64 bf16 causal fwd').
_AX = recommender_axes()
AXES = _AX.policy
SYMBOL = _AX.symbol
LABEL_AXES = _AX.label

SUMMARY_KEYS = ("best", "tied", "slower", "not_usable", "not_run")  # each point is in one of these


def axes_of(row: dict[str, Any]) -> dict[str, Any]:
    """The case of a row as axis values: mode from the row or its case; seq_kv and kv_heads filled in
    where the case leaves them to follow seq_q and heads."""
    c = row["case"]
    out = {a: c.get(a) for a in AXES}
    out["mode"] = row.get("mode") or c.get("mode") or "fwd"
    for k, twin in _AX.twin.items():  # seq_kv follows seq_q, kv_heads follows heads
        if out[k] is None:
            out[k] = c.get(twin)
    for k in sorted(c):
        if k not in out:
            out[k] = c[k]
    return out


def label(axes: dict[str, Any], only: list[str] | None = None) -> str:
    """'B=2 H=8 S=512 D=64 bf16 causal fwd', or just the axes named in ``only``."""
    names = only if only is not None else [a for a in LABEL_AXES if a in axes]
    parts = []
    for a in names:
        v = axes.get(a)
        if only is None:
            if a == "kv_heads" and v == axes.get("heads"):
                continue
            if a == "seq_kv" and v == axes.get("seq_q"):
                continue
            if a in ("mask", "softcap", "page_size", "kv_lens") and v is None:
                continue
            if a == "alibi" and not v:
                continue
            if a == "causal" and axes.get("mask") is not None:
                continue
        parts.append(value_text(a, v))
    return " ".join(parts)


def value_text(a: str, v: Any) -> str:
    if a in SYMBOL:
        return f"{SYMBOL[a]}={fmt(v)}"
    if a == "causal":
        return "causal" if v else "non-causal"
    if a == "alibi":
        return "alibi" if v else "no-alibi"
    if a in ("mode", "dtype", "device"):
        return str(v)
    return f"{a}={fmt(v)}"


def fmt(v: Any) -> str:
    if v is None:
        return "none"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def value_order(v: Any) -> tuple[int, Any]:
    """Measured values in order: none, then booleans, numbers, text."""
    if v is None:
        return (0, 0)
    if isinstance(v, bool):
        return (1, int(v))
    if isinstance(v, int | float):
        return (2, v)
    return (3, str(v))


def impl_text(variant: str | None, same_as: list[str], ran: str | None) -> str:
    """A variant as the implementation it ran: 'sdpa_cudnn (= sdpa_default)', 'sdpa_default (cudnn)',
    'sdpa_default (cudnn; = sdpa_cudnn)', or the bare name."""
    if variant is None:
        return "—"
    notes = [ran] if variant == DEFAULT and ran else []
    if same_as:
        notes.append("= " + " = ".join(same_as))
    return f"{variant} ({'; '.join(notes)})" if notes else variant


def group_text(variants: list[str], ran: str | None = None) -> str:
    """One implementation's variants in a stable order, whichever was timed fastest: the forced ones by name,
    sdpa_default last ('sdpa_cudnn = sdpa_default'); with ``ran``: 'cudnn (sdpa_cudnn = sdpa_default)'."""
    names = " = ".join(sorted(variants, key=lambda v: (v == DEFAULT, v)))
    return f"{ran} ({names})" if ran and len(variants) > 1 else names


def rule_variant_text(rule: dict[str, Any]) -> str:
    """The variant a rule names, as the implementation it ran on the rule's points: 'sdpa_cudnn (= sdpa_default)',
    'sdpa_default (cudnn; = sdpa_cudnn)', 'sdpa_default (cudnn at 12, flash at 4; = sdpa_cudnn at 12 of 16 points)'."""
    v, n = rule["variant"], rule["measured"]
    notes = []
    if v == DEFAULT and rule["ran"]:
        ran = rule["ran"]
        notes.append(
            next(iter(ran))
            if len(ran) == 1 and sum(ran.values()) == n
            else ", ".join(f"{b} at {k}" for b, k in ran.items()) + (f" of {n}" if sum(ran.values()) < n else "")
        )
    twins = [
        f"= {t}" + ("" if k == n else f" at {k} of {n} point{'' if n == 1 else 's'}")
        for t, k in rule["same_as"].items()
    ]
    if twins:
        notes.append(", ".join(twins))
    return f"{v} ({'; '.join(notes)})" if notes else v


def exception_text(rule: dict[str, Any], limit: int = 3) -> str:
    """'B=2 … S=512 …: sdpa_flash best (sdpa_cudnn 1.05× slower); … 2 more', or 'none'."""
    parts = []
    for e in rule["exceptions"][:limit]:
        if e.get("ratio") is not None:
            how = f"{rule['variant']} {e['ratio']:.2f}× slower"
        else:
            how = f"{rule['variant']} not measured: {e.get('why')}"
        parts.append(f"{e['label']}: {impl_text(e['best'], e['best_same_as'], None)} best ({how})")
    more = len(rule["exceptions"]) - limit
    if more > 0:
        parts.append(f"… {more} more")
    return "; ".join(parts) or "none"


def policy_text(rules: list[dict[str, Any]]) -> str:
    """The policy in one line: 'S = 128 → sdpa_flash; otherwise sdpa_cudnn'."""
    if len(rules) == 1 and not rules[0]["when"]:
        return f"{rule_variant_text(rules[0])} everywhere measured"
    return "; ".join(
        f"{r['text']} → {rule_variant_text(r)}" if r["when"] else f"otherwise {rule_variant_text(r)}" for r in rules
    )


def tie_text(b: dict[str, Any]) -> str:
    """Why a best entry is tied with its runner-up, in a few words ('' when it is not)."""
    if not b["tied"]:
        return ""
    if b["preferred_over"]:
        return f"quartiles overlap; {b['preferred_over']} writes the S×S scores out"
    return str(b["tie_reason"])


def crossover_note(x: dict[str, Any]) -> str:
    """What else to know about a crossover: inside the noise, derived axes that changed with it."""
    notes = []
    if x["within_noise"]:
        notes.append("within the noise (tied at one of the two points)")
    if x["also_changes"]:
        notes.append("also " + ", ".join(f"{SYMBOL.get(k, k)} {a}→{b}" for k, (a, b) in x["also_changes"].items()))
    return "; ".join(notes)


def default_summary_text(rec: dict[str, Any]) -> str:
    """'sdpa_default (PyTorch's own choice; it ran cudnn at all 16 points) against the best implementation: best
    at 12 (at 10 of them a variant running the same kernels was timed faster), tied at 0, slower at 4 of 16 points'."""
    s = rec["default_summary"]
    n = sum(s[k] for k in SUMMARY_KEYS)
    if not n or s["not_run"] == n:
        cases = [b.get("case") or {} for b in rec.get("best") or []]
        if cases and all(c.get("page_size") is not None or c.get("kv_lens") is not None for c in cases):
            # a paged or ragged cache: sdpa_default reads contiguous K and V only, so it has no row to run
            return (
                f"{DEFAULT} has no row at these points: it takes one dense K and V for the whole batch, not a paged "
                "or ragged KV cache (the serving variants are compared instead)"
            )
        return f"{DEFAULT} was not run: PyTorch's own choice cannot be compared"
    ran = rec.get("default_ran") or {}
    m = n - s["not_run"] - s["not_usable"]
    if len(ran) == 1 and sum(ran.values()) == m:
        ran_text = f"; it ran {next(iter(ran))} at {'all ' if m == n and n > 1 else ''}{m} point{'s' * (m != 1)}"
    elif ran:
        ran_text = "; it ran " + ", ".join(f"{b} at {k}" for b, k in ran.items())
    else:
        ran_text = ""
    twin = s.get("same_kernels_as_best", 0)
    return (
        f"{DEFAULT} (PyTorch's own choice{ran_text}) against the best implementation: best at {s['best']}"
        + (f" (at {twin} of them a variant running the same kernels was timed faster)" if twin else "")
        + f", tied at {s['tied']}, slower at {s['slower']} of {n} point{'' if n == 1 else 's'}"
        + (f"; not usable at {s['not_usable']}" if s["not_usable"] else "")
        + (f"; not run at {s['not_run']}" if s["not_run"] else "")
    )


def crossover_best_text(x: dict[str, Any]) -> str:
    """'sdpa_default (cudnn; = sdpa_cudnn) → flex_compiled': the best implementation on each side."""
    return (
        f"{impl_text(x['from'], x['from_same_as'], x['from_ran'])} → {impl_text(x['to'], x['to_same_as'], x['to_ran'])}"
    )


def real_crossovers(rec: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
    """(the crossovers beyond the noise, how many more changes were within the noise): what a page or a
    terminal shows; the JSON holds them all."""
    real = [x for x in rec["crossovers"] if not x["within_noise"]]
    return real, len(rec["crossovers"]) - len(real)


def noise_changes_text(n: int) -> str:
    return f"{n} more change{'s' * (n != 1)} within the noise: see --json" if n else ""


def same_masks_text(entry: dict[str, Any]) -> str:
    """One line for the masks a sweep measured once for several spellings (``same_masks``, from
    :func:`attnscope.core.cases.one_per_mask`): 'mask causal@top_left and causal_lower_right: the same mask as
    causal where seq_q == seq_kv (…); measured once, as causal, at 4 points'."""
    same, n = entry["same"], entry["points"]
    names = " and ".join(same) if len(same) < 3 else ", ".join(same[:-1]) + f" and {same[-1]}"
    return (
        f"mask {names}: the same mask as {entry['measured']} where {entry['where']}; measured once, as "
        f"{entry['measured']}, at {n} point{'' if n == 1 else 's'}"
    )
