"""Result ⇄ row dict, generated from the dataclasses' fields and types: a field added to ``Result`` (or to a record
inside it) is written and read back with no line here.  What is not one field, one key, is in the tables below:

- ``FLATTENED``: the fingerprint's fields are the row's own keys (``kernels``, ``num_kernels``, ...);
- ``RENAMED``: ``Result.notes`` is written as ``run_notes`` (the trace's notes are the fingerprint's ``notes``);
- ``PROPERTIES``: derived values written beside the fields for readers, never read back (``Timing.noisy``, ...);
- ``DERIVED``: row keys computed from the whole result (``gpu_time_us``, ``flop_formula``, ``numerics_ok``);
- ``EMPTY_AS_NULL``: an empty ``ncu`` is written as null.

A row of an older schema gives each field it lacks the field's default (None where there is none), and keys this
version does not know are passed over.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from functools import cache
from typing import Any

from attnscope.core.flops import flop_formula, mask_flop_note
from attnscope.core.types import Case, Fingerprint, GraphTiming, Result, Timing

FLATTENED = "fingerprint"
RENAMED = {"notes": "run_notes"}
PROPERTIES: dict[type, tuple[str, ...]] = {Timing: ("iqr_rel", "noisy"), Fingerprint: ("upcast_fp32",)}
EMPTY_AS_NULL = frozenset({"ncu"})


def _flop_formula(r: Result) -> str | None:
    """The formula, and for a run how the case's mask's kept scores were counted."""
    if r.flops is None:
        return None
    if r.source == "trace" and r.flops_basis:  # read from the trace: its calls and how their masks were told
        return f"{flop_formula('fwd')}; {r.flops_basis}"
    if r.source != "run" or r.case is None:
        return flop_formula(r.mode)
    return f"{flop_formula(r.mode)}; {mask_flop_note(r.case)}"


# field -> (key, value) written just before that field's key
DERIVED: dict[str, tuple[str, Callable[[Result], Any]]] = {
    "gpu_time": ("gpu_time_us", lambda r: r.gpu_time.median_us if r.gpu_time else None),
    "cpu_time": ("cpu_time_us", lambda r: r.cpu_time.median_us if r.cpu_time else None),
    "tflops": ("flop_formula", _flop_formula),
    "compile_time_s": ("numerics_ok", lambda r: r.numerics_ok),
    "family": ("mode", lambda r: r.mode),
}


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


# ------------------------------------------------------------------------------------------------ writing


_FLAT_OF: dict[type, Callable[[Any], list[dict[str, Any]]]] = {}


def _flat_writer(cls: type) -> Callable[[Any], list[dict[str, Any]]]:
    """``lambda objs: [{"name": o.name, ...} for o in objs]`` over ``cls``'s fields in order, compiled once per
    record type (as ``dataclasses`` writes ``__init__``; field names are identifiers): one dict display a record,
    twice as fast as ``dict(zip(names, attrgetter(*names)(o)))``."""
    body = ", ".join(f"{f.name!r}: o.{f.name}" for f in dataclasses.fields(cls))
    code = compile(f"lambda objs: [{{{body}}} for o in objs]", f"<records of {cls.__qualname__}>", "eval")
    return eval(code, {})  # type: ignore[no-any-return]


def flat_all(objs: Any, kinds: set[type] | None = None) -> list[dict[str, Any]]:
    """Records of plain fields as dicts, without ``dataclasses.asdict``'s deep copies (10^4–10^5 kernels).
    ``kinds``: the records' types where the caller has them."""
    kinds = {type(o) for o in objs} if kinds is None else kinds
    for t in kinds - _FLAT_OF.keys():
        _FLAT_OF[t] = _flat_writer(t)
    if len(kinds) == 1:
        return _FLAT_OF[next(iter(kinds))](objs)
    return [_FLAT_OF[type(o)]((o,))[0] for o in objs]


def encode(v: Any) -> Any:
    """A value as JSON-shaped data: records as dicts (with their derived properties), tuples as lists."""
    if v is None or isinstance(v, str | int | float | bool):
        return v
    if isinstance(v, Case):
        return v.to_dict()
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        d = {f.name: encode(getattr(v, f.name)) for f in dataclasses.fields(v)}
        d.update({p: getattr(v, p) for p in PROPERTIES.get(type(v), ())})
        return d
    if isinstance(v, tuple | list):
        kinds = {type(x) for x in v}  # 10^4 kernel records: each type checked once
        if v and all(dataclasses.is_dataclass(t) and not PROPERTIES.get(t) for t in kinds):
            return flat_all(v, kinds)  # records of plain fields: their tuples (grid, dims) stay as JSON arrays
        return [encode(x) for x in v]
    if isinstance(v, dict):
        return dict(v)
    return v


def timing(t: Timing | None) -> dict[str, Any] | None:
    return encode(t)  # type: ignore[no-any-return]


def _empty_fingerprint() -> dict[str, Any]:
    """The fingerprint's keys of a row without one: variable-length tuples as [], anything else as null."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(Fingerprint):
        h = _hints(Fingerprint)[f.name]
        out[f.name] = [] if typing.get_origin(h) is tuple and typing.get_args(h)[-1] is Ellipsis else None
    out.update(dict.fromkeys(PROPERTIES[Fingerprint]))
    return out


def result_to_dict(r: Result) -> dict[str, Any]:
    d: dict[str, Any] = {}
    for f in dataclasses.fields(Result):
        v = getattr(r, f.name)
        if f.name == FLATTENED:
            d.update(encode(v) if v is not None else _empty_fingerprint())
            continue
        if f.name in DERIVED:
            key, fn = DERIVED[f.name]
            d[key] = fn(r)
        d[RENAMED.get(f.name, f.name)] = None if f.name in EMPTY_AS_NULL and not v else encode(v)
    return d


# ------------------------------------------------------------------------------------------------ reading


def _optional_of(h: Any) -> Any:
    """``X`` for ``X | None`` (the hint itself otherwise)."""
    if typing.get_origin(h) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(h) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return h


@cache
def _decoder(h: Any) -> Callable[[Any], Any] | None:
    """How a JSON value becomes a value of type ``h``; None: as it is."""
    h = _optional_of(h)
    if h is Case:
        return Case.from_dict
    if isinstance(h, type) and dataclasses.is_dataclass(h):
        return _record(h)
    if typing.get_origin(h) is tuple:
        args = typing.get_args(h)
        if args and args[-1] is Ellipsis:
            inner = _decoder(args[0])
            return (lambda v: tuple(v)) if inner is None else (lambda v: tuple(inner(x) for x in v))
        parts = [_decoder(a) for a in args]
        return lambda v: tuple(x if p is None else p(x) for p, x in zip(parts, v, strict=True))
    return None


def _record(cls: type) -> Callable[[dict[str, Any]], Any]:
    convert = {n: c for n, h in _hints(cls).items() if (c := _decoder(h)) is not None}
    names = frozenset(f.name for f in dataclasses.fields(cls))
    defaulted = frozenset(
        f.name
        for f in dataclasses.fields(cls)
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
    )

    optional = frozenset(n for n, h in _hints(cls).items() if n in names and _optional_of(h) is not h)

    def read(d: dict[str, Any]) -> Any:
        # derived properties and unknown keys are passed over; a null where the field has a default takes it,
        # and an optional field an older row lacks is None
        kw = dict.fromkeys(optional - defaulted)
        kw.update({k: v for k, v in d.items() if k in names and not (v is None and k in defaulted)})
        for k, c in convert.items():
            if kw.get(k) is not None:
                kw[k] = c(kw[k])
        return cls(**kw)

    return read


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None if f.default is dataclasses.MISSING else f.default


def _field_value(f: dataclasses.Field[Any], d: dict[str, Any], key: str) -> Any:
    v = d.get(key)
    if v is None:  # absent (an older row) or null: the field's default
        return _default(f)
    c = _decoder(_hints(Result)[f.name])
    return v if c is None else c(v)


def result_from_dict(d: dict[str, Any]) -> Result:
    """The Result a row was written from (a row of an older schema gives each field it lacks its default)."""
    kw: dict[str, Any] = {"variant": d["variant"], "status": d["status"]}
    for f in dataclasses.fields(Result):
        if f.name in kw:
            continue
        if f.name == FLATTENED:
            kw[f.name] = None if d.get("num_kernels") is None else _record(Fingerprint)(d)
        elif f.name == "case":
            case = dict(d["case"]) if d.get("case") else None
            if case is not None and "mode" not in case and d.get("mode"):
                case["mode"] = d["mode"]  # rows written before the case held its mode
            kw["case"] = Case.from_dict(case) if case is not None else None
        else:
            kw[f.name] = _field_value(f, d, RENAMED.get(f.name, f.name))
    if kw.get("timing") is None and kw.get("gpu_time_graph") is not None:
        kw["timing"] = warm_only(kw["gpu_time_graph"])
    return Result(**kw)


# ------------------------------------------------------------------------------------------------ checking

# Fields of a document's records that its readers (the page, diff) index directly (``k["op"]``): a document's record
# without one cannot be read.  Found by removing each field without a default in turn (tests/cli/test_hostile_files.py).
# A sweep's rows are read by fewer readers (recommend, the sweep page): there every field may be absent and take its
# default, as in rows written by an older attnscope or by hand.
INDEXED: dict[str, tuple[str, ...]] = {
    "HiddenCopy": ("op", "copy_op", "bytes"),
    "Upcast": ("op", "src_dtype", "bytes"),
    "KernelRecord": ("duration_us",),
    "Timing": ("median_us", "p25_us", "p75_us"),
}

_WORDS = {dict: "an object", list: "a list", str: "a string", bool: "true or false", int: "a number", float: "a number"}


Check = Callable[[Any, str], "str | None"]


def _type_check(kinds: tuple[type, ...]) -> Check:
    def check(v: Any, where: str) -> str | None:
        if isinstance(v, kinds) and not (isinstance(v, bool) and bool not in kinds):
            return None
        return f"{where} must be {_WORDS[kinds[0]]} or null, got {type(v).__name__}"

    return check


def _fields_check(kinds: Check, fields: list[tuple[str, str, Check | None, bool]]) -> Check:
    """An object whose keys (json key, label, check, required) are checked in turn."""

    def check(v: Any, where: str) -> str | None:
        if (p := kinds(v, where)) is not None:
            return p
        for key, label, inner, required in fields:
            x = v.get(key)
            if x is None:
                if required:
                    return f"{where} needs {label}"
            elif inner is not None and (p := inner(x, f"{where}.{label}")) is not None:
                return p
        return None

    return check


@cache
def _checker(h: Any, strict: bool = False) -> Check | None:
    """How a value (not None) is checked against hint ``h``, walking records and their lists (None: not checked:
    unions of several types, ``Any``).  ``strict``: a document's, whose records must hold their INDEXED fields."""
    h = _optional_of(h)
    origin = typing.get_origin(h) or h
    obj = _type_check((dict,))
    if h is Case:
        from attnscope.core.case import FIELDS

        hints = _hints(Case)
        return _fields_check(obj, [(f.json_key, f.json_key, _checker(hints[f.name], strict), False) for f in FIELDS])
    if isinstance(h, type) and dataclasses.is_dataclass(h):
        hints = _hints(h)
        fields = []
        for f in dataclasses.fields(h):
            required = strict and f.name in INDEXED.get(h.__name__, ())
            fields.append((f.name, f.name, _checker(hints[f.name], strict), required))
        return _fields_check(obj, fields)
    if origin is tuple or origin is list:
        args = typing.get_args(h)
        inner = _checker(args[0], strict) if len(args) == 2 and args[-1] is Ellipsis else None
        is_list = _type_check((list,))

        def each(v: Any, where: str) -> str | None:
            if (p := is_list(v, where)) is not None:
                return p
            if inner is not None:
                for j, x in enumerate(v):
                    if x is not None and (p := inner(x, f"{where}[{j}]")) is not None:
                        return p
            return None

        return each
    if origin is dict:
        return obj
    if origin is typing.Literal:  # e.g. a dtype's names: their type (a name outside them is the case's to refuse)
        kinds = tuple(dict.fromkeys(type(a) for a in typing.get_args(h)))
        return _type_check(kinds) if all(k in _WORDS for k in kinds) else None
    if h is str:
        return _type_check((str,))
    if h is bool:
        return _type_check((bool,))
    if h in (int, float):
        return _type_check((int, float))
    return None


@cache
def row_hints() -> dict[str, Any]:
    """row key → the type its value is read as, from the fields of Result and its fingerprint (and the derived
    numbers): what a reader of a row may rely on."""
    hints: dict[str, Any] = {}
    for f in dataclasses.fields(Result):
        if f.name == FLATTENED:
            hints.update({g.name: _hints(Fingerprint)[g.name] for g in dataclasses.fields(Fingerprint)})
        else:
            hints[RENAMED.get(f.name, f.name)] = _hints(Result)[f.name]
    hints.update(gpu_time_us=float, cpu_time_us=float, flop_formula=str)
    return hints


def row_type_problem(d: dict[str, Any], strict: bool = False) -> str | None:
    """The first value of a row that no reader can take ("case.dtype must be a string or null, got int"; a hidden
    copy without its op), else None.  The types are Result's own, so a field added there is checked with no line
    here."""
    for k, check in _row_checks(strict):
        v = d.get(k)
        if v is not None and (p := check(v, k)) is not None:
            return p
    return None


def warm_only(graph: Timing) -> GraphTiming:
    """A row written before cold-L2 replay (schema 1): its one graph figure replayed the same inputs: warm."""
    return GraphTiming(
        graph_warm=graph,
        graph_cold=None,
        graph_used="warm",
        copies=1,
        working_set_bytes=None,
        l2_bytes=None,
        rotation="written before cold-L2 replay: the same inputs every call (warm)",
    )


@cache
def _row_checks(strict: bool) -> list[tuple[str, Check]]:
    return [(k, c) for k, h in row_hints().items() if (c := _checker(h, strict)) is not None]
