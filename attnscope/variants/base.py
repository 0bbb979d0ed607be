"""What a variant is: a name, a capability check that gives a reason, and a way to prepare a call."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from attnscope.core.types import Case

if TYPE_CHECKING:
    import torch


@dataclass
class Inputs:
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    scale: float
    grad_out: torch.Tensor | None = None  # dO for the backward (fwd_bwd mode), same shape as the output
    # A serving case's KV cache (attnscope.workloads.paged_cache.ServingCache): k and v are then its pools, not
    # [B, H_kv, S, D]; only the serving variants (``serving=True``) read it.
    cache: Any = None


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


def device_kind(device: str) -> str:
    """'cuda:1' → 'cuda': what a variant's ``devices`` flag speaks of."""
    return device.split(":", 1)[0]


@dataclass(frozen=True)
class Variant:
    """An attention implementation and what it declares about itself.

    Code tells variants apart by these flags, never by the shape of their names.
    """

    name: str
    family: str  # naive, sdpa, flex, ... (what kind of implementation)
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
    # The backend this variant forces (e.g. "flash" for sdpa_kernel(FLASH_ATTENTION)); None: it picks none.
    backend: str | None = None
    modes: tuple[str, ...] = ("fwd", "fwd_bwd")
    devices: tuple[str, ...] = ("cpu", "cuda")  # device kinds it has kernels for
    requires: tuple[str, ...] = ()  # what it needs beyond torch, in words (e.g. "torch>=2.5")
    in_default_set: bool = True  # False: only a flag adds it (e.g. --mask-mod adds the flex_user variants)
    # Reads a serving case's paged or ragged cache (Inputs.cache); the others take one dense K/V per batch.
    serving: bool = False

    def refusal(self, case: Case) -> str | None:
        """Why this variant cannot run ``case`` (declared flags first, then its own check), or None."""
        if case.mode not in self.modes:
            return f"{self.name} declares modes {', '.join(self.modes)} only, not {case.mode}"
        kind = device_kind(case.device)
        if case.is_serving != self.serving:
            return (
                f"{self.name} takes one dense K and V for the whole batch, not a paged or ragged cache: the serving "
                "variants (paged_*) measure it"
                if case.is_serving
                else f"{self.name} reads a paged or ragged KV cache: give --page-size and/or --kv-lens"
            )
        elsewhere = f"{self.name} declares devices {', '.join(self.devices)} only, not {kind}"
        if kind not in self.devices and self.requires:
            # what it needs beyond torch is no reason where its device is missing: no install hint on a CPU for a
            # library that needs a GPU (torch's own variants keep their check's words: 'no CPU kernel in torch')
            return elsewhere
        reason = self.check(case)
        if reason is None and kind not in self.devices:
            reason = elsewhere
        return reason


def torch_version() -> tuple[int, int]:
    import torch

    major, minor = torch.__version__.split(".")[:2]
    return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)
