"""The settings that shape a sweep's rows, kept beside its JSONL as ``<out>.settings.json``, so that ``--resume``
never mixes rows measured under other settings without being told to (``--resume --force``).

Recorded: the timing budget per timer, whether L2 is flushed between timed calls, the torch version, and the
device (its kind, and the GPU's name where there is one).  Plain data: the command line collects and checks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

KEYS = ("budget_s", "flush_l2", "torch", "device")
WORDS = {"budget_s": "--budget", "flush_l2": "--flush-l2", "torch": "torch", "device": "device"}
LIBRARY_WORDS = {"budget_s": "timing_budget_s", "flush_l2": "flush_l2", "torch": "torch", "device": "device"}


def settings_path(out: str | Path) -> Path:
    return Path(f"{out}.settings.json")


def current(budget_s: float, flush_l2: bool, device: str) -> dict[str, Any]:
    """This process's settings for a sweep on ``device`` (torch is imported here)."""
    import torch

    where = device
    if device.startswith("cuda") and torch.cuda.is_available():
        where = f"{device} ({torch.cuda.get_device_name(0 if device == 'cuda' else int(device.split(':')[1]))})"
    return {"budget_s": budget_s, "flush_l2": flush_l2, "torch": torch.__version__, "device": where}


def load(out: str | Path) -> dict[str, Any] | None:
    """The recorded settings, or None when there are none (a sweep written before they were recorded)."""
    p = settings_path(out)
    if not p.exists():
        return None
    try:
        doc = json.loads(p.read_text())
    except RecursionError:
        why = "nested too deeply"
        raise ValueError(f"{p}: unreadable settings ({why}); move it aside to resume without the check") from None
    except (OSError, ValueError) as e:
        raise ValueError(f"{p}: unreadable settings ({e}); move it aside to resume without the check") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{p}: not a settings document; move it aside to resume without the check")
    return doc


def differences(recorded: dict[str, Any], now: dict[str, Any], words: dict[str, str] = WORDS) -> list[str]:
    """'--budget 0.2 → 0.5' for each recorded setting that differs now (a key not recorded is not compared);
    ``words``: how each is named (the flags by default; :data:`LIBRARY_WORDS` for the API)."""
    return [f"{words[k]} {recorded[k]} → {now[k]}" for k in KEYS if k in recorded and recorded[k] != now.get(k)]
