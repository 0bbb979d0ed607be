"""What the command line and the tour ask below the API before any work, and the words they print of it: the one
device parser, the executors, the variants a spec names, the sweep's default set and plan, a model config's size,
the error check's line.  Each is the library's own function (its errors in its own words, or in the
flag's where the caller names it), so that ``cli`` and ``tour`` import only ``api``, ``report``, ``document`` and
``core`` (the import contracts in pyproject.toml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attnscope.execute.executors import EXECUTORS

__all__ = [
    "EXECUTORS",
    "copy_bandwidth",
    "device",
    "devices",
    "gpu_count",
    "known_variants",
    "ray_reachable",
    "store_rows",
    "variant_names",
]


def device(text: str | None, what: str = "device") -> str:
    """The device to use: ``text`` normalised and checked to be reachable (cpu or cuda[:N]), or the default (cuda
    where torch sees a GPU, else cpu).  ``what`` names where the device came from in an error."""
    from attnscope.measure.env import check_device, default_device

    return check_device(text, what) or default_device()


def devices(spec: str | None) -> list[str] | None:
    """'cuda:0,cuda:1' → ['0', '1'] (one worker pinned to each); 'all' → every GPU torch sees; None or 'cpu' → None."""
    from attnscope.execute.executors import parse_devices

    return parse_devices(spec)


def variant_names(spec: str | list[str] | None, *, serving: bool | None = None) -> list[str]:
    """The names of the variants ``spec`` chooses (None: the default set); an unknown name is a one-line error."""
    from attnscope.variants import resolve

    return [v.name for v in resolve(spec, serving=serving)]


def known_variants() -> set[str]:
    """Every variant's name: the built-ins and the plugins'."""
    from attnscope.variants import REGISTRY

    return set(REGISTRY)


def store_rows(path: str | Path) -> tuple[list[dict[str, Any]], int]:
    """A JSONL store's complete rows, and how many of its lines are no rows (a torn write)."""
    from attnscope.execute.store import Store

    store = Store(path)
    rows = store.rows()
    return rows, store.num_torn


def copy_bandwidth(device: str, nbytes: int) -> tuple[float, str]:
    """The device's copy bandwidth in bytes per second over ``nbytes``, and how it was timed."""
    from attnscope.measure.timing import copy_bandwidth as measured

    return measured(device, nbytes)


def gpu_count() -> int:
    """The CUDA devices torch sees here."""
    import torch

    return int(torch.cuda.device_count())


def ray_reachable(address: str) -> float:
    """Check that the Ray cluster at ``address`` answers (a one-line ValueError when not); the seconds allowed."""
    from attnscope.execute.executors.ray import CONNECT_TIMEOUT_S, check_reachable

    check_reachable(address)
    return float(CONNECT_TIMEOUT_S)
