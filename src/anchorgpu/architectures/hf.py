"""Hugging Face ``config.json`` → :class:`ModelSpec`, dispatched on ``model_type``.

Pure; stdlib only. Reading files and the Hub lives in :mod:`anchorgpu.architectures.loader`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace

from anchorgpu.architectures._config import ConfigReader
from anchorgpu.architectures.families import FAMILY_NAMES, PARSERS
from anchorgpu.architectures.quantization import read_quantization
from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidConfig, did_you_mean

__all__ = ["SUPPORTED_MODEL_TYPES", "from_hf_config", "parse_config_text"]

SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(sorted(PARSERS))


def from_hf_config(cfg: Mapping[str, object], *, name: str, source: str = "") -> ModelSpec:
    """Build the exact :class:`ModelSpec` of a Hugging Face config mapping.

    ``source`` names where the mapping came from; every error message starts with it.

    >>> spec = from_hf_config({"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12,
    ...                        "n_positions": 1024, "vocab_size": 50257}, name="gpt2")
    >>> spec.params_total, spec.kv_bytes_per_token()
    (124439808, 36864)
    """
    where = source or f"{name} config"
    if not isinstance(cfg, Mapping):
        raise InvalidConfig(f"{where}: must be a JSON object, got {type(cfg).__name__}")
    reader = ConfigReader(cfg, where=where)
    if "_class_name" in cfg and "model_type" not in cfg:
        raise InvalidConfig(
            f"{where}: field 'model_type' is missing; this looks like a diffusers component config "
            f"({cfg['_class_name']!r}); use a registry pipeline name such as 'flux.1-dev' instead"
        )
    model_type = reader.text("model_type")
    parser = PARSERS.get(model_type)
    if parser is None:
        close = did_you_mean(model_type, SUPPORTED_MODEL_TYPES)
        hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
        raise reader.fail(
            "model_type", f"value {model_type!r} is not supported{hint}; supported: {', '.join(SUPPORTED_MODEL_TYPES)}"
        )
    spec = parser(reader, name, source)
    spec = replace(spec, quantization=read_quantization(cfg, spec, where=where))  # the precision it ships in
    return replace(spec, family=FAMILY_NAMES.get(spec.model_type, spec.model_type))


def parse_config_text(text: str, *, where: str) -> dict[str, object]:
    """Decode the text of a ``config.json``; malformed or truncated JSON gives a one-line reason.

    >>> parse_config_text('{"model_type": "llama", "hidden_size": 40', where="cfg.json")
    Traceback (most recent call last):
    anchorgpu.errors.InvalidConfig: cfg.json: not valid JSON (truncated or malformed) at line 1, column 42: Expecting ',' delimiter
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidConfig(
            f"{where}: not valid JSON (truncated or malformed) at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except (RecursionError, ValueError) as exc:
        raise InvalidConfig(f"{where}: not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidConfig(f"{where}: must be a JSON object, got {type(data).__name__}")
    return data
