"""``--config``: a preset name, a path to a config.json, or a transformers model type → a checked config.

Reading presets and JSON files is plain Python; turning the dict into a transformers config object
needs transformers (the ``attnscope[hf]`` extra).  Every bad input raises ``ValueError`` with one line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from attnscope.core.arguments import UsageError

# Models with bidirectional attention and no KV cache: prefill and train only.
ENCODER_TYPES = frozenset(
    {"bert", "roberta", "distilbert", "albert", "electra", "deberta", "deberta-v2", "xlm-roberta", "modernbert"}
)


def is_encoder_type(model_type: str) -> bool:
    """An encoder (bidirectional attention, no KV cache): it has no decode step."""
    return model_type in ENCODER_TYPES


def preset_names() -> list[str]:
    return sorted(
        p.name.removesuffix(".json")
        for p in resources.files(__package__).joinpath("presets").iterdir()
        if p.name.endswith(".json")
    )


def _read_json(text: str, where: str) -> dict[str, Any]:
    try:
        d = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{where}: not valid JSON ({e})") from None
    except RecursionError:
        raise ValueError(f"{where}: not a config (JSON nested too deeply to read)") from None
    if not isinstance(d, dict):
        raise ValueError(f"{where}: a config must be a JSON object, got {type(d).__name__}")
    return d


@dataclass
class ModelSpec:
    """What ``--config`` named, as a plain dict, before transformers sees it."""

    source: str  # "preset", "file" or "model_type"
    name: str
    about: str | None
    values: dict[str, Any]

    @property
    def model_type(self) -> str:
        return str(self.values.get("model_type", ""))

    @property
    def is_encoder(self) -> bool:
        return is_encoder_type(self.model_type)


def resolve(arg: str) -> ModelSpec:
    """Preset name, then an existing path (or any *.json), then a transformers model type."""
    if arg in preset_names():
        text = resources.files(__package__).joinpath("presets").joinpath(f"{arg}.json").read_text()
        d = _read_json(text, f"preset {arg}")
        about = d.pop("_about", None)
        return ModelSpec("preset", arg, about, d)
    p = Path(arg)
    if p.suffix == ".json" or p.exists():
        if p.is_dir():  # a model's folder: its config.json is the file
            hint = f"name {p / 'config.json'}" if (p / "config.json").is_file() else "name the model's config.json"
            raise UsageError(f"config {arg!r}: a directory; {hint}", fields=("config",))
        if not p.is_file():
            raise UsageError(f"config {arg!r}: no such file", fields=("config",))
        try:
            text = p.read_text()
        except (OSError, UnicodeDecodeError) as e:
            raise ValueError(f"{arg}: cannot read ({e})") from None
        d = _read_json(text, arg)
        d.pop("_about", None)
        if not isinstance(d.get("model_type"), str):
            raise ValueError(f"{arg}: the config has no 'model_type' (e.g. \"llama\")")
        return ModelSpec("file", arg, None, d)
    types = model_types()
    if arg in types:
        return ModelSpec("model_type", arg, "transformers' default config for this model type", {"model_type": arg})
    raise ValueError(
        f"unknown config {arg!r}: not a preset ({', '.join(preset_names())}), a config.json path, "
        "or a transformers model type"
    )


def model_types() -> set[str]:
    try:
        from transformers import CONFIG_MAPPING
    except ImportError:
        return set()
    return set(CONFIG_MAPPING.keys())


def require_transformers() -> Any:
    try:
        import transformers
    except ImportError:
        raise ValueError("attnscope model needs transformers: pip install -e '.[hf]' in the attnscope clone") from None
    return transformers


def build_config(spec: ModelSpec, *, layers: int | None) -> Any:
    """The transformers config object, depth overridden, shapes checked."""
    require_transformers()
    from transformers import AutoConfig

    values = dict(spec.values)
    model_type = values.pop("model_type", None)
    if model_type not in model_types():
        raise ValueError(f"{spec.name}: model_type {model_type!r} is not known to this transformers")
    if layers is not None:
        if layers < 1:
            raise UsageError(f"layers must be at least 1, got {layers}", fields=("layers",))
        values = _with_depth(values, layers)
    _precheck(values, spec.name)
    try:
        cfg = AutoConfig.for_model(model_type, **values)
    except Exception as e:  # noqa: BLE001 -- transformers' validators raise their own error types
        raise ValueError(f"{spec.name}: transformers rejects this config ({_one_line(e)})") from None
    if layers is not None and getattr(cfg, "num_hidden_layers", layers) != layers:
        raise ValueError(f"{spec.name}: cannot set the depth of a {model_type} config to {layers}")
    check_shapes(cfg, spec.name, explicit_head_dim="head_dim" in values)
    return cfg


def _with_depth(values: dict[str, Any], layers: int) -> dict[str, Any]:
    out = dict(values)
    for key in ("num_hidden_layers", "n_layer", "num_layers"):
        if key in out or key == "num_hidden_layers":
            out[key] = layers
    if isinstance(out.get("layer_types"), list):
        out["layer_types"] = out["layer_types"][:layers]
    return out


def _first(values: dict[str, Any], *keys: str) -> Any:
    return next((values[k] for k in keys if k in values), None)


def _precheck(values: dict[str, Any], name: str) -> None:
    """The shape rules on the raw values, before transformers (whose versions word them differently)."""
    hidden = _first(values, "hidden_size", "n_embd", "d_model")
    heads = _first(values, "num_attention_heads", "n_head")
    if isinstance(hidden, int) and isinstance(heads, int) and heads > 0 and "head_dim" not in values:
        if hidden % heads:
            raise ValueError(
                f"{name}: num_attention_heads ({heads}) does not divide hidden_size ({hidden}) and no head_dim is given"
            )


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split())[:300]


def check_shapes(cfg: Any, name: str, *, explicit_head_dim: bool) -> None:
    hidden = getattr(cfg, "hidden_size", None)
    heads = getattr(cfg, "num_attention_heads", None)
    kv = getattr(cfg, "num_key_value_heads", None) or heads
    if not isinstance(hidden, int) or not isinstance(heads, int) or hidden <= 0 or heads <= 0:
        raise ValueError(f"{name}: hidden_size and num_attention_heads must be positive integers")
    if hidden % heads and not explicit_head_dim:
        raise ValueError(
            f"{name}: num_attention_heads ({heads}) does not divide hidden_size ({hidden}) and no head_dim is given"
        )
    if isinstance(kv, int) and (kv <= 0 or heads % kv):
        raise ValueError(f"{name}: num_key_value_heads ({kv}) must divide num_attention_heads ({heads})")


def max_positions(cfg: Any) -> int | None:
    v = getattr(cfg, "max_position_embeddings", None)
    return v if isinstance(v, int) else None


def describe(cfg: Any) -> dict[str, Any]:
    """The shape numbers a reader needs, in one flat dict (for the JSON and the title)."""
    heads = cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    return {
        "model_type": cfg.model_type,
        "hidden_size": cfg.hidden_size,
        "num_hidden_layers": cfg.num_hidden_layers,
        "num_attention_heads": heads,
        "num_key_value_heads": getattr(cfg, "num_key_value_heads", None) or heads,
        "head_dim": head_dim,
        "intermediate_size": getattr(cfg, "intermediate_size", None) or getattr(cfg, "n_inner", None),
        "vocab_size": cfg.vocab_size,
        "sliding_window": getattr(cfg, "sliding_window", None),
        "attn_logit_softcapping": getattr(cfg, "attn_logit_softcapping", None),
    }
