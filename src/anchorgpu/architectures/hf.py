"""Hugging Face ``config.json`` → :class:`ModelSpec`, dispatched on ``model_type``.

Never a silent wrong answer: a ``model_type`` AnchorGPU does not know is loaded as the class its
``architectures`` names when that class is one it counts (and the spec's notes say so); a config that sets
a key which changes the count or the cache and that its family's parser does not read is refused, naming
the keys; an unsupported architecture is refused with its nearest supported relative and what counting it
as that relative would get wrong. Pure; stdlib only. Reading files and the Hub lives in
:mod:`anchorgpu.architectures.loader`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from functools import cache

from anchorgpu.architectures._config import ConfigReader
from anchorgpu.architectures.families import CLASSES, FAMILY_NAMES, PARSERS, READS
from anchorgpu.architectures.quantization import read_quantization
from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import DataFileError, InvalidConfig, did_you_mean

__all__ = ["COUNT_KEYS", "HIDDEN_DROPOUT_KEYS", "SUPPORTED_MODEL_TYPES", "from_hf_config", "hidden_dropout", "parse_config_text",
           "unread_count_keys"]

SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(sorted(PARSERS))

# Config keys that, when set, change the parameter count or the cache: what each one is about. A family's
# parser that does not read a key set in the config (its family module's READS) makes the config refused.
COUNT_KEYS: dict[str, str] = {
    **dict.fromkeys(("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts", "num_experts_per_tok",
                     "experts_per_token", "moe_k", "moe_intermediate_size"), "routed experts"),
    **dict.fromkeys(("shared_expert_intermediate_size", "n_shared_experts", "num_shared_experts",
                     "moe_num_shared_experts"), "shared experts"),
    **dict.fromkeys(("moe_layers", "interleave_moe_layer_step", "decoder_sparse_step", "mlp_only_layers",
                     "first_k_dense_replace", "moe_layer_freq", "moe_layer_start_index", "moe_layer_end_index",
                     "moe_layer_interval", "intermediate_size_mlp"), "which layers are MoE"),
    "layer_types": "layer types",
    "attention_chunk_size": "chunked attention",
    **dict.fromkeys(("q_lora_rank", "kv_lora_rank"), "latent attention"),
    **dict.fromkeys(("use_qk_norm", "qk_layernorm"), "q/k norms"),
    **dict.fromkeys(("attn_layer_indices", "attn_layer_period", "attn_layer_offset", "expert_layer_period",
                     "expert_layer_offset", "layers_block_type", "layer_block_types", "hybrid_override_pattern",
                     "block_types", "full_attn_idxs"), "hybrid layer pattern"),
    **dict.fromkeys(("state_size", "d_state", "conv_kernel", "time_step_rank"), "state-space layers"),
    **dict.fromkeys(("vision_config", "audio_config", "speech_config", "text_config"), "sub-model"),
    **dict.fromkeys(("num_decoder_layers", "encoder_layers", "decoder_layers"), "encoder-decoder"),
}
COUNT_KEY_PREFIXES: dict[str, str] = {"ssm_": "state-space layers", "mamba_": "state-space layers",
                                      "linear_": "linear attention"}

UNSUPPORTED_FILE = "architectures/data/unsupported.toml"
# Above this a config is refused as malformed (the largest published models have about 2 x 10^12 parameters):
# each field alone may be plausible, but a product of them this large means one of them is not.
MAX_PARAMS = 10**14

# The relative a refused config's count-setting keys point to when its model_type has no row in
# ``data/unsupported.toml``: (kind of key in COUNT_KEYS, relative, what it is), first match wins.
_BY_KEYS: tuple[tuple[str, str, str], ...] = (
    ("latent attention", "deepseek_v3", "a decoder with latent (MLA) attention"),
    ("hybrid layer pattern", "nemotron_h", "a hybrid of attention and state-space layers"),
    ("state-space layers", "mamba2", "a state-space model"),
    ("linear attention", "qwen3_next", "a decoder with linear-attention layers"),
    ("sub-model", "llava", "a model with sub-models (vision, audio or text towers)"),
    ("encoder-decoder", "t5", "an encoder-decoder"),
    ("routed experts", "mixtral", "a mixture-of-experts decoder"),
)


def from_hf_config(cfg: Mapping[str, object], *, name: str, source: str = "",
                   quantization_source: str | None = None) -> ModelSpec:
    """Build the exact :class:`ModelSpec` of a Hugging Face config mapping.

    ``source`` names where the mapping came from; every error message starts with it, except those about its
    ``quantization_config`` where ``quantization_source`` names another file it came from (ModelOpt's
    ``hf_quant_config.json`` beside the config).

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
    alias_note = ""
    if model_type not in PARSERS:
        cls, target = _known_class(cfg)
        if target is None:
            raise _unsupported(reader, model_type, cls, cfg)
        alias_note = f"loaded as {target} because architectures names {cls} (model_type {model_type!r} is not one AnchorGPU counts)"
        model_type = target
        reader = ConfigReader({**cfg, "model_type": target}, where=where)
    unread = unread_count_keys(cfg, model_type)
    if unread:
        raise _refuse_unread(reader, model_type, unread)
    spec = PARSERS[model_type](reader, name, source)
    if spec.params_total > MAX_PARAMS:
        raise InvalidConfig(
            f"{where}: describes {spec.params_total:,} parameters (hidden size {spec.hidden_size:,}, {spec.num_layers:,} "
            f"layers, vocabulary {spec.vocab_size:,}), over {MAX_PARAMS:,}: no published model comes near that, so a "
            "width or a count in it is likely wrong and no count is given"
        )
    if alias_note:
        spec = replace(spec, notes=(alias_note, *spec.notes))
    spec = replace(spec, quantization=read_quantization(cfg, spec, where=quantization_source or where),  # as shipped
                   hidden_dropout=hidden_dropout(reader))
    return replace(spec, family=FAMILY_NAMES.get(spec.model_type, spec.model_type))


HIDDEN_DROPOUT_KEYS = ("hidden_dropout", "resid_pdrop", "residual_dropout", "hidden_dropout_prob", "dropout_rate",
                       "dropout")
"""Where configs state the dropout on the residual stream (Megatron/BLOOM, GPT-2, OLMo, BERT, T5, OPT), first found wins."""


def hidden_dropout(reader: ConfigReader) -> float:
    """The residual stream's dropout probability a config states (0.0 when none of :data:`HIDDEN_DROPOUT_KEYS` is set,
    as Llama-style configs have no such dropout).

    >>> hidden_dropout(ConfigReader({"resid_pdrop": 0.1}, where="gpt2.json")), hidden_dropout(ConfigReader({}, where="x"))
    (0.1, 0.0)
    >>> hidden_dropout(ConfigReader({"dropout": 1.5}, where="opt.json"))
    Traceback (most recent call last):
    anchorgpu.errors.InvalidConfig: opt.json: field 'dropout' must be a probability in [0, 1), got 1.5
    """
    for key in HIDDEN_DROPOUT_KEYS:
        value = reader.data.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1:
            raise reader.fail(key, f"must be a probability in [0, 1), got {value!r}")
        return float(value)
    return 0.0


def _is_set(value: object) -> bool:
    """A key counts as set unless null, false, zero or empty (how configs say "none of these")."""
    if value is None or value is False or value in ("", [], {}):
        return False
    return not (isinstance(value, int | float) and value == 0)


def unread_count_keys(cfg: Mapping[str, object], model_type: str) -> list[str]:
    """Count-changing keys set in ``cfg`` that the parser of ``model_type`` does not read (sorted).

    An unknown ``layer_types`` value is named as ``layer_types (VALUE, …)``. Families that declare no
    ``READS`` are not checked.

    >>> unread_count_keys({"num_local_experts": 16, "interleave_moe_layer_step": 2, "mlp_bias": False}, "llama")
    ['interleave_moe_layer_step', 'num_local_experts']
    """
    reads = READS.get(model_type)
    if reads is None:
        return []
    unread: list[str] = []
    for key, value in cfg.items():
        if not _is_set(value) or key in reads:
            continue
        if key == "layer_types":
            kinds = sorted({v for v in value if isinstance(v, str)}) if isinstance(value, list) else []
            odd = [k for k in kinds if f"layer_types={k}" not in reads]
            if odd:
                unread.append(f"layer_types ({', '.join(odd)})")
        elif key in COUNT_KEYS or any(key.startswith(p) for p in COUNT_KEY_PREFIXES):
            unread.append(key)
    return sorted(unread)


def _what(key: str) -> str:
    base = key.split(" ", 1)[0]
    return COUNT_KEYS.get(base) or next(v for p, v in COUNT_KEY_PREFIXES.items() if base.startswith(p))


def _refuse_unread(reader: ConfigReader, model_type: str, unread: list[str]) -> InvalidConfig:
    if len(unread) == 1 and unread[0].startswith("layer_types ("):
        odd = unread[0][len("layer_types ("):-1]
        return reader.fail("layer_types", f"has an unsupported layer type {odd!r} for model_type {model_type!r}: its "
                                          "layers would be counted and cached wrongly")
    kinds = sorted({_what(k) for k in unread})
    plain = {k for k in unread if not k.startswith("layer_types")}
    readers = [mt for mt, keys in sorted(READS.items()) if mt != model_type and plain and plain <= keys]
    hint = f"; {' and '.join(repr(m) for m in readers[:3])} read{'s' if len(readers) == 1 else ''} them" if readers else ""
    return InvalidConfig(
        f"{reader.where}: model_type {model_type!r} does not read {', '.join(unread)} ({', '.join(kinds)}), which change "
        f"the parameter count or the cache: counting it as {model_type!r} would be wrong{hint}"
    )


def _known_class(cfg: Mapping[str, object]) -> tuple[str, str | None]:
    """The first ``architectures`` class name, and the model type it maps to when one is counted."""
    names = cfg.get("architectures")
    classes = [n for n in names if isinstance(n, str)] if isinstance(names, list) else []
    for cls in classes:
        if cls in CLASSES:
            return cls, CLASSES[cls]
    return (classes[0] if classes else ""), None


@cache
def unsupported_rows() -> dict[str, tuple[str, str, str]]:
    """``data/unsupported.toml``: model_type -> (what it is, nearest supported relative, what that would get wrong)."""
    import tomllib

    from anchorgpu.architectures.registry import read_data_text

    rows = tomllib.loads(read_data_text("unsupported.toml")).get("unsupported", {})
    out: dict[str, tuple[str, str, str]] = {}
    for model_type, row in rows.items():
        fields = tuple(row.get(k) if isinstance(row, dict) else None for k in ("what", "relative", "wrong"))
        if not all(isinstance(f, str) and f for f in fields):
            raise DataFileError(UNSUPPORTED_FILE, model_type, "needs non-empty strings 'what', 'relative' and 'wrong'")
        out[model_type] = fields  # type: ignore[assignment]
    return out


def _structural_relative(cfg: Mapping[str, object]) -> tuple[str, str]:
    """The supported model_type a config's count-setting keys point to, and what that kind of model is.

    >>> _structural_relative({"model_type": "x", "n_routed_experts": 64, "kv_lora_rank": 512})
    ('deepseek_v3', 'a decoder with latent (MLA) attention')
    >>> _structural_relative({"model_type": "x", "n_embd": 768, "n_head": 12})
    ('gpt2', 'a GPT-2-style decoder')
    """
    kinds = {COUNT_KEYS.get(k) or next((v for p, v in COUNT_KEY_PREFIXES.items() if k.startswith(p)), "")
             for k, value in cfg.items() if _is_set(value)}
    for kind, relative, what in _BY_KEYS:
        if kind in kinds:
            return relative, what
    if "n_embd" in cfg or "n_layer" in cfg:
        return "gpt2", "a GPT-2-style decoder"
    return "llama", "a dense decoder"


def _unsupported(reader: ConfigReader, model_type: str, cls: str, cfg: Mapping[str, object]) -> InvalidConfig:
    named = f" ({cls})" if cls else ""
    known = unsupported_rows().get(model_type)
    if known is not None and known[1] in PARSERS:
        what, relative, wrong = known
        return InvalidConfig(
            f"{reader.where}: model_type {model_type!r}{named} is not supported: {what}; its nearest supported relative "
            f"is {relative!r}, and counting it as {relative!r} would {wrong}"
        )
    close = did_you_mean(model_type, SUPPORTED_MODEL_TYPES)
    hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
    relative, what = _structural_relative(cfg)
    return reader.fail(
        "model_type",
        f"value {model_type!r}{named} is not supported{hint}; by the keys it sets it is {what}, and its nearest supported "
        f"relative is {relative!r}, but counting it as {relative!r} would give it the layer shapes of {relative!r}, which "
        f"nobody has checked against this architecture: weights could be missed or misshapen, so no count is given; "
        f"supported: {', '.join(SUPPORTED_MODEL_TYPES)}",
    )


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
