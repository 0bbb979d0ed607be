"""One entry point that adds the explanations to a result document.  Pure.

``annotate`` is what `attnscope run` and `attnscope analyze` both call on the JSON-shaped
document: insights (and the rules not checked, with why) per result, the recommendation
for the case, and, when predictions were written first, a verdict for each.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

from attnscope.analysis.equivalent import equivalent_case
from attnscope.analysis.fingerprint.compiled import fell_back_to_eager
from attnscope.analysis.recommend.recommender import recommend as recommend_rows
from attnscope.analysis.recommend.run import recommend
from attnscope.analysis.roofline import peak_basis, row_roofline, step_rooflines
from attnscope.analysis.rules import explain
from attnscope.analysis.rules.insights import main_kernel
from attnscope.analysis.rules.model_step import split_insights
from attnscope.analysis.rules.peers import ALONE, Peers, case_key, ranked
from attnscope.analysis.rules.row_kernels import kernels_read_once
from attnscope.core.types import Insight, NotChecked, Prediction, Verdict

_ATOMS = frozenset({str, int, float, bool, type(None)})


def as_data(o: Any) -> Any:
    """``dataclasses.asdict`` of a record (and of any value inside one), the same dicts, lists and tuples, taking
    str, numbers and None as they are rather than through ``copy.deepcopy`` (a hidden-copy insight holds 10^3
    dims lists); anything else (a namedtuple, a dict subclass) goes through ``asdict`` itself."""
    t = type(o)
    if t in _ATOMS:
        return o
    if t is dict:
        return {as_data(k): as_data(v) for k, v in o.items()}
    if t is list:
        return [as_data(x) for x in o]
    if t is tuple:
        return tuple(as_data(x) for x in o)
    if dataclasses.is_dataclass(o) and not isinstance(o, type):
        return {f.name: as_data(getattr(o, f.name)) for f in dataclasses.fields(o)}
    return dataclasses.asdict(_boxed()(o))["value"]


@functools.cache
def _boxed() -> Any:
    """A record of one field, for :func:`as_data`'s rare values (made on first use: a dataclass costs ~0.2 ms)."""
    return dataclasses.make_dataclass("_Boxed", ["value"])


def verdict_to_dict(v: Verdict) -> dict[str, Any]:
    d = dataclasses.asdict(v)
    d["prediction"] = dataclasses.asdict(v.prediction)
    return d


def peers_of(results: list[dict[str, Any]]) -> Peers:
    """The results of one case as the rules receive them: ranked once, with the one recommender's answer over
    them (asked once)."""
    return Peers(results, ranked(results), recommend_rows(results))


def _cases(results: list[dict[str, Any]], one_job: bool = False) -> tuple[list[Peers], dict[str, Peers]]:
    """Each result's peers (in order), and the peers of each known case (by its key): results whose case is not
    known are compared with nothing, nor are the ranks of one job (``one_job``: parts of one run, not
    implementations to choose between)."""
    if one_job:
        return [ALONE for _ in results], {}
    keys = [case_key(r) for r in results]
    groups: dict[str, list[dict[str, Any]]] = {}
    for r, k in zip(results, keys, strict=True):
        if k is not None:
            groups.setdefault(k, []).append(r)
    by_case = {k: peers_of(g) for k, g in groups.items()}
    return [by_case[k] if k is not None else ALONE for k in keys], by_case


def explain_results(results: list[dict[str, Any]]) -> list[tuple[list[Insight], list[NotChecked]]]:
    """Every rule on each result, in order (:func:`attnscope.analysis.rules.explain`; skipped rows get none), the
    recommendation of each case worked out once and handed to the rules."""
    each, _ = _cases(results)
    return [explain(r, p) for r, p in zip(results, each, strict=True)]


# variant name -> (family, backend) as the registry declares it, or None for a name it does not know
Declared = Callable[[str], tuple[str, str | None] | None]


def _with_declared_flags(r: dict[str, Any], declared: Declared) -> dict[str, Any]:
    """A row written before variants declared their flags gets them from the declarations, by its variant."""
    if "family" in r:
        return r
    flags = declared(r.get("variant") or "")
    if flags is not None:
        r["family"], r["backend"] = flags
    return r


def annotate(
    doc: dict[str, Any], predictions: list[Prediction] | None = None, declared: Declared | None = None
) -> dict[str, Any]:
    """A copy of ``doc`` with ``insights``/``insights_not_checked`` per result, ``recommendation``,
    and, if ``predictions`` is given, ``predictions`` and ``verdicts``.  ``declared``: each variant's
    (family, backend), for rows written before rows carried them (:func:`attnscope.api.annotate` passes
    the registry's)."""
    with kernels_read_once():
        return _annotate(doc, predictions, declared)


def _annotate(doc: dict[str, Any], predictions: list[Prediction] | None, declared: Declared | None) -> dict[str, Any]:
    results = [_with_declared_flags(dict(r), declared or (lambda _name: None)) for r in doc.get("results") or []]
    got = doc.get("peak")
    peak: dict[str, Any] = got if isinstance(got, dict) else {}
    for r in results:  # before the rules: they read the bound
        r["roofline"] = row_roofline(r, peak.get("tflops"), peak.get("bandwidth_tbps"))
        step_rooflines(r)
        r["equivalent_case"] = equivalent_case(r.get("case"))
    each, by_case = _cases(results, ranks_of_one_job(doc))
    for r, peers in zip(results, each, strict=True):
        found, missing = explain(r, peers)
        r["insights"] = [as_data(i) for i in found]
        r["insights_not_checked"] = [as_data(n) for n in missing]
        store_for_report(r)
    out = dict(doc)
    out["results"] = results
    # a run that measured the plain call in place of an equivalent mask says so in the document it wrote
    out["equivalent_case"] = (
        equivalent_case(doc.get("case"))
        or doc.get("equivalent_case")
        or next((r["equivalent_case"] for r in results if r.get("equivalent_case")), None)
    )
    # the document's sentence reads the same answer the rules read, where the document holds one case
    one = next(iter(by_case.values())) if len(by_case) == 1 and all(p is not ALONE for p in each) else None
    # the ranks of one job are not alternatives: none is "best" (their spread is in the document's overall)
    rec = None if ranks_of_one_job(doc) else recommend(results, one.recommendation if one is not None else None)
    out["recommendation"] = as_data(rec) if rec else None
    if predictions is not None:
        out["predictions"] = [dataclasses.asdict(p) for p in predictions]
        from attnscope.analysis.predict import check_predictions  # with tomllib: only when there are guesses

        out["verdicts"] = [verdict_to_dict(v) for v in check_predictions(predictions, results)]
    return out


def ranks_of_one_job(doc: dict[str, Any]) -> bool:
    """Whether ``doc``'s results are the ranks of one job (analyze of several traces whose ranks were read from
    the traces or their file names), not variants measured on one case."""
    overall = doc.get("overall")
    return isinstance(overall, dict) and overall.get("ranks_known") is True and len(doc.get("results") or []) > 1


def store_for_report(r: dict[str, Any]) -> dict[str, Any]:
    """What a report shows of a row and would otherwise compute, stored once in it (additions to the JSON):
    ``main_kernel`` (the longest compute kernel, or None), ``peak_basis`` (the %peak of the ceiling the roofline's
    bound names, or None), ``eager_fallback`` (why a compiled flex row ran eager
    code, or None) and, for a model step's split, ``model_split_insights``."""
    r["main_kernel"] = main_kernel(r)
    r["peak_basis"] = peak_basis(r.get("roofline"))  # the table's %peak: of the ceiling the bound names
    r["eager_fallback"] = fell_back_to_eager(r)
    if isinstance(r.get("model_split"), dict):
        r["model_split_insights"] = split_insights(r["model_split"])
    return r


def verdict_counts(doc: dict[str, Any]) -> dict[str, int]:
    counts = {"hit": 0, "miss": 0, "close": 0, "unknown": 0}
    for v in doc.get("verdicts") or []:
        counts[v["outcome"]] += 1
    return counts
