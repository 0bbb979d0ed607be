"""`attnscope recommend` as a function: the rows of sweep JSONL files, run documents or `model --out` stores, read by
the one loader, and the recommendation document `recommend --json` writes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


class NothingMeasured(Exception):
    """The rows hold nothing measured to compare (every one skipped, failed or out of memory): not bad input."""


def recommend(files: Sequence[str | Path], *, on_note: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The recommendation document of these files: the best variant per case, crossovers and a policy (for a model
    store's rows: the best implementation per mode and point, under ``recommendations``).

    ``on_note`` hears what the loader left out (a torn line).  A file that holds no comparable row is a ValueError
    (bad input); rows that all ended in a skip, an error or an OOM raise :class:`NothingMeasured`."""
    from attnscope.document.load import result_rows
    from attnscope.document.model_rows import is_model_row
    from attnscope.document.schema import SCHEMA_VERSION

    names = [str(f) for f in files]
    rows, notes = result_rows(files)
    for n in notes:
        (on_note or (lambda _: None))(n)
    head = {"schema_version": SCHEMA_VERSION, "tool": "attnscope"}
    if rows and all(is_model_row(r) for r in rows):  # `model --out` rows
        return {**head, "kind": "model", "files": names, "recommendations": _model(rows, names)}
    from attnscope.analysis.recommend import recommend as recommend_rows

    rec = recommend_rows(rows)
    if not rec["best"] and not rec.get("unresolved"):
        by = ", ".join(f"{k} {v}" for k, v in rec["counts"]["by_status"].items()) or "none, it holds no row"
        why = (
            f"{', '.join(names)}: no row to compare (one needs status ok, numerics_ok true, a case and a "
            f"time; rows by status: {by})"
        )
        if not rows or any(r.get("status") == "ok" for r in rows):  # no rows, or "ok" rows lacking a case or time
            raise ValueError(why)
        raise NothingMeasured(why)
    from attnscope.analysis.recommend.serving import serving_recommendation

    serving = serving_recommendation(rows)  # paged or ragged caches: page size and graphs per point
    return {**head, "files": names, **rec, **({"serving": serving} if serving else {})}


def _model(rows: list[dict[str, Any]], names: list[str]) -> dict[str, dict[str, Any]]:
    """The best implementation per mode and point of `model --out` rows."""
    from attnscope.analysis.recommend.model_points import annotate_rows

    recs = annotate_rows(rows)
    if not recs:
        by: dict[str, int] = {}
        for r in rows:
            by[r["status"]] = by.get(r["status"], 0) + 1
        counts = ", ".join(f"{k} {v}" for k, v in by.items())
        raise ValueError(f"{', '.join(names)}: no model row to compare (rows by status: {counts})")
    return recs
