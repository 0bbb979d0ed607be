"""What a variant is: a name, a capability check that gives a reason, and a way to prepare a call."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from attnscope.types import Case

if TYPE_CHECKING:
    import torch


@dataclass
class Inputs:
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    scale: float


class Unsupported(Exception):
    """The variant cannot run this case; the message is the reason (torch's own words)."""


@dataclass
class Prepared:
    """A ready call.  ``context`` is entered around warm-up, timing and profiling but
    never inside the timed region (e.g. ``sdpa_kernel``, whose own cost is not attention)."""

    fn: Callable[[], Any]
    context: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext
    compile_time_s: float | None = None
    notes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)  # plain data for the Result (e.g. sdpa_why)


@dataclass(frozen=True)
class Variant:
    name: str
    family: str
    description: str
    # Cheap check before any tensor exists: None if it may run, else the reason it cannot.
    check: Callable[[Case], str | None]
    # Builds the call; raises Unsupported with torch's reason when torch refuses the case.
    prepare: Callable[[Case, Inputs], Prepared]
    # Not in the default set on these devices (too slow to be a default); still listed.
    opt_in_on: tuple[str, ...] = ()
    opt_in_reason: str = ""
    # Preparing means compiling (seconds to minutes): `attnscope variants` does not try it.
    compiles: bool = False


def torch_version() -> tuple[int, int]:
    import torch

    major, minor = torch.__version__.split(".")[:2]
    return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)
