"""The settings that shape a sweep's (or a model's) rows, kept beside its JSONL as ``<out>.settings.json``, so
that a resume never mixes rows measured under other settings without being told to (``--resume --force``).

Recorded: the timing budget per timer, whether L2 is flushed between timed calls (a sweep), the torch version, the
transformers version (a model), and the device (its kind, and the GPU's name where there is one).  Plain data:
the campaign loop (attnscope.api.campaign) collects and checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

KEYS = ("budget_s", "flush_l2", "torch", "transformers", "device")
WORDS = {
    "budget_s": "--budget",
    "flush_l2": "--flush-l2",
    "torch": "torch",
    "transformers": "transformers",
    "device": "device",
}
LIBRARY_WORDS = {
    "budget_s": "timing_budget_s",
    "flush_l2": "flush_l2",
    "torch": "torch",
    "transformers": "transformers",
    "device": "device",
}


def settings_path(out: str | Path) -> Path:
    return Path(f"{out}.settings.json")


def current(budget_s: float, flush_l2: bool, device: str) -> dict[str, Any]:
    """This process's settings for a sweep on ``device`` (torch is imported here)."""
    import torch

    where = device
    if device.startswith("cuda") and torch.cuda.is_available():
        where = f"{device} ({torch.cuda.get_device_name(0 if device == 'cuda' else int(device.split(':')[1]))})"
    return {"budget_s": budget_s, "flush_l2": flush_l2, "torch": torch.__version__, "device": where}


def model_current(budget_s: float, device: str) -> dict[str, Any]:
    """This process's settings for a model's rows on ``device``: the budget per row, torch, transformers, the
    device (torch and transformers are imported here)."""
    import transformers

    now = current(budget_s, False, device)
    del now["flush_l2"]
    return {**now, "transformers": transformers.__version__}


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
