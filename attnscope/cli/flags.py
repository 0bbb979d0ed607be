"""The command line's own checks: the flags' argparse types, the case's flags on a parser and read back from the
parsed flags, and the output and input paths named by their flag, checked before any measurement (the page's
``--html`` and ``--assets`` among them; then the one output guard, :func:`attnscope.core.files.check_outputs`).

The types read a flag's text with the library's readers (:mod:`attnscope.core.arguments`: ``read_whole``,
``read_number``, ``read_seconds``), whose words argparse puts after the flag (``argument --batch: must be at
least 1, got 0``).  Output paths are probed by creating (and removing) a file where the result will go, because
permission bits say nothing to root and nothing about read-only or virtual file systems (``/proc``).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from attnscope.core.arguments import UsageError, read_number, read_seconds, read_whole, repeats, times
from attnscope.core.files import check_outputs

T = TypeVar("T")


def argparse_type(read: Callable[[str], T], name: str) -> Callable[[str], T]:
    """An argparse ``type=`` from a library reader: its UsageError becomes argparse's one line after the flag."""

    def parse(s: str) -> T:
        try:
            return read(s)
        except UsageError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    parse.__name__ = name
    return parse


def positive_int(name: str, limit: int) -> Callable[[str], int]:
    """An argparse ``type=`` for an integer in [1, limit]."""
    return argparse_type(partial(read_whole, limit=limit), name)


def finite_float(
    name: str, *, minimum: float = 0.0, strict: bool = False, maximum: float | None = None
) -> Callable[[str], float]:
    """An argparse ``type=`` for a finite number ≥ minimum (> minimum when ``strict``), ≤ maximum when given."""
    return argparse_type(partial(read_number, minimum=minimum, strict=strict, maximum=maximum), name)


def seconds(name: str) -> Callable[[str], float]:
    """An argparse ``type=`` for seconds: finite, > 0, at most a week (MAX_SECONDS)."""
    return argparse_type(read_seconds, name)


def timeout_seconds(s: str) -> float:
    """``--timeout``, the same in every command: a finite number of seconds in (0, a week]."""
    return seconds("timeout")(s)


def _typed(v: Any) -> str:
    """A value of a list as the user types it: 0 for none (a soft-cap, a page size), yes/no, numbers plainly."""
    if v is None:
        return "0"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return f"{v:g}" if isinstance(v, float) else str(v)


def listed_once(
    flag: str, read: Callable[[str], list[Any]], typed: Callable[[Any], str] | None = None
) -> Callable[[str], str]:
    """An argparse ``type=`` for a comma-list flag whose values are each measured once (a sweep's axis, model's
    --batch, --seq, --impl, …): a value listed twice, as typed or once through a range or an alias (``64..256+64,128``,
    ``bf16,bfloat16``), is refused in one line naming the flag and the value (``argument --seq: 64 is listed twice in
    '64,64'``), before any work.  The text is kept as given; one that ``read`` refuses is left to the check that reads
    it, whose words name the value.  ``typed``: a value as the flag takes it, where that is not :func:`_typed`'s plain
    spelling (a list of KV lengths is ``list:4,4`` on ``--kv-lens``)."""

    def parse(text: str) -> str:
        try:
            values = read(text)
        except UsageError:
            return text
        twice = repeats(values)
        if twice:
            v, n = twice[0]
            shown = typed(v) if typed is not None else _typed(v)
            raise argparse.ArgumentTypeError(f"{shown} is listed {times(n)} in {text!r}: give each value once")
        return text

    parse.__name__ = flag.removeprefix("--").replace("-", "_")
    return parse


def comma_items(text: str) -> list[str]:
    """A comma list's items, stripped (empty ones dropped: the command's own check says what an empty list is)."""
    return [x.strip() for x in text.split(",") if x.strip()]


def add_flags(group: Any, command: str, names: Iterable[str] | None = None) -> None:
    """The case's fields' flags of ``command`` (``run`` or ``sweep``) on an argparse parser or group (only those of
    ``names`` if given), from the table of fields (:data:`attnscope.core.case.FIELDS`): a flag with a reader gets it
    as its argparse type.

    ``run`` gives the device first (the other fields' defaults depend on it); ``sweep`` the axes in table order,
    each refusing a value listed twice (:func:`listed_once`).
    """
    from attnscope.core.case import FIELDS

    wanted = set(names) if names is not None else None
    order = sorted(FIELDS, key=lambda f: f.name != "device") if command == "run" else list(FIELDS)
    exclusive = None
    for f in order:
        if wanted is not None and f.name not in wanted:
            continue
        for flag in f.flags("run" if command == "run" else "sweep"):
            target = group
            if flag.exclusive:
                exclusive = exclusive if exclusive is not None else group.add_mutually_exclusive_group()
                target = exclusive
            options = dict(flag.options)
            if flag.read is not None:
                options["type"] = argparse_type(flag.read, flag.name.removeprefix("--").replace("-", "_"))
            elif command != "run" and f.axis is not None and flag.name == f.flag:  # a sweep's axis
                options["type"] = listed_once(flag.name, f.axis, f.typed)
            target.add_argument(flag.name, help=flag.help, **options)


def case_fields(args: Any) -> dict[str, Any]:
    """The case's fields as the flags of :func:`add_flags` (``run``) gave them, the device apart: None where a flag
    was not given (the device's default then applies: :func:`attnscope.api.running.case_of`)."""
    from attnscope.core.case import FIELDS

    return {f.name: getattr(args, f.dest, None) for f in FIELDS if f.name != "device"}


def _nearest_existing(p: Path) -> Path:
    q = p
    while q != q.parent:
        try:
            if q.exists():
                break
        except OSError:  # a name too long to stat: its parent is asked
            pass
        q = q.parent
    return q


# file systems whose entries are the kernel's, not files a program can create
VIRTUAL_ROOTS = ("/proc", "/sys", "/dev")


def _virtual_root(d: Path) -> str | None:
    r = str(d.resolve())
    return next((v for v in VIRTUAL_ROOTS if r == v or r.startswith(v + "/")), None)


def _probe_dir(d: Path, flag: str, target: Path) -> None:
    """Create and remove a file in ``d``: the only test that root and read-only mounts both answer."""
    virtual = _virtual_root(d)
    if virtual is not None:
        raise UsageError(f"{flag} {target}: {virtual} is the kernel's virtual file system, not a place for files")
    import tempfile  # here: its import (shutil, bz2, lzma, random) is ~2 ms of every command's start-up

    try:
        fd, tmp = tempfile.mkstemp(prefix=".attnscope-probe-", dir=d)
    except OSError as e:
        raise UsageError(f"{flag} {target}: no file can be created in {d} ({e.strerror or e})") from None
    os.close(fd)
    Path(tmp).unlink(missing_ok=True)


# a file is written beside its final name first (".NAME.XXXXXXXX", then renamed): room for that temp name
TEMP_NAME_ROOM = 10


def _check_length(p: Path, base: Path, flag: str, room: int = 0) -> None:
    """Every name within the file system's NAME_MAX (the last one with ``room`` to spare), the whole path within
    PATH_MAX: ENAMETOOLONG said before the measurement, not after it."""
    try:
        name_max = os.pathconf(base, "PC_NAME_MAX")
        path_max = os.pathconf(base, "PC_PATH_MAX")
    except (OSError, ValueError, AttributeError):  # the system does not say: the common Linux limits
        name_max, path_max = 255, 4096
    for i, part in enumerate(p.parts):
        most = name_max - (room if i == len(p.parts) - 1 else 0)
        if len(os.fsencode(part)) > most:
            raise UsageError(
                f"{flag}: the name {part[:40]}… is {len(os.fsencode(part))} bytes; at most {most} fit here"
                + (f" (the file system's {name_max}, less room for the temporary file written first)" if room else "")
            )
    if len(os.fsencode(str(p.absolute()))) >= path_max:
        raise UsageError(f"{flag}: the path is longer than this system's limit of {path_max} bytes")


def check_output_file(path: str | None, flag: str) -> None:
    """A file the run will write at its end: fail now, not after the measurement."""
    if not path:
        return
    p = Path(path)
    # before any stat of p: that would fail with ENAMETOOLONG
    _check_length(p, _nearest_existing(p.parent), flag, TEMP_NAME_ROOM)
    if p.is_dir():
        raise UsageError(f"{flag} {p}: is a directory; name a file")
    if p.name in ("", ".", ".."):
        raise UsageError(f"{flag} {p}: name a file")
    base = _nearest_existing(p.parent if str(p.parent) else Path("."))
    if not base.is_dir():
        raise UsageError(f"{flag} {p}: {base} is not a directory")
    _probe_dir(base, flag, p)


def check_output_dir(path: str | None, flag: str) -> None:
    """A directory the run will fill (trace files): it may not exist yet, but must be creatable."""
    if not path:
        return
    p = Path(path)
    _check_length(p, _nearest_existing(p.parent), flag)
    if p.exists() and not p.is_dir():
        raise UsageError(f"{flag} {p}: exists and is not a directory")
    base = _nearest_existing(p)
    if not base.is_dir():
        raise UsageError(f"{flag} {p}: {base} is not a directory")
    _probe_dir(base, flag, p)


def check_input_file(path: str, flag: str) -> None:
    p = Path(path)
    if not p.exists():
        raise UsageError(f"{flag} {p}: no such file")
    if not p.is_file():
        raise UsageError(f"{flag} {p}: " + ("a directory: name a file in it" if p.is_dir() else "not a file"))


def check_html(args: Any) -> None:  # args: the parsed flags (html, assets)
    """--html needs plotly and a writable path, --assets a page and a folder it can fill: say so before any work,
    not after a long run."""
    check_assets(args)
    if getattr(args, "html", None):
        from attnscope.report.html.page import require_plotly

        check_output_file(args.html, "--html")
        require_plotly()


def check_assets(args: Any) -> None:
    """``--assets`` names a folder that can be made and written, and comes with ``--html``."""
    assets = getattr(args, "assets", None)
    if assets is None:
        return
    if not getattr(args, "html", None):
        raise UsageError("--assets holds the plotly of an HTML page: give --html PATH too")
    check_output_dir(assets, "--assets")


Named = Sequence[tuple[str, str | None]]


def check_paths(args: Any, inputs: Named, outputs: Named, folders: Named = (), *, read_later: Named = ()) -> None:
    """Every path a command's flags name, before any work: each input a file, each output a file (each folder one
    that can be made) where something can be written, the page's --html and --assets (:func:`check_html`), then the
    one output guard: no output is one of the inputs or of ``read_later`` (files a later check reads, a user's
    code), and no two outputs are one file.  ``(flag, path)`` pairs; a path of None is not given."""
    for flag, path in inputs:
        if path:
            check_input_file(path, flag)
    for flag, path in outputs:
        check_output_file(path, flag)
    for flag, path in folders:
        check_output_dir(path, flag)
    check_html(args)
    check_outputs([*inputs, *read_later], [*outputs, ("--html", getattr(args, "html", None))])
