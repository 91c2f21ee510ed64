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

from anchorgpu.architectures._config import ConfigReader
from anchorgpu.architectures.families import CLASSES, FAMILY_NAMES, PARSERS, READS
from anchorgpu.architectures.quantization import read_quantization
from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidConfig, did_you_mean

__all__ = ["COUNT_KEYS", "SUPPORTED_MODEL_TYPES", "from_hf_config", "parse_config_text", "unread_count_keys"]

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

# Architectures users bring that no family counts yet: what each is, its nearest supported relative, and
# what counting it as that relative would get wrong.
_RELATIVES: dict[str, tuple[str, str, str]] = {
    "olmoe": ("OLMo with mixture-of-experts MLPs", "olmo2",
              "count one dense MLP per layer where it has routed experts and a router"),
    "qwen3_next": ("Qwen3-Next: Gated DeltaNet linear-attention layers beside gated full attention, MoE MLPs",
                   "qwen3_moe", "miss the linear-attention weights and put a KV cache where it keeps a recurrent state"),
    "deepseek_v32": ("DeepSeek-V3.2: DeepSeek-V3 with a sparse-attention indexer", "deepseek_v3",
                     "miss the indexer weights of every layer"),
    "gemma3n": ("Gemma 3n: per-layer embeddings, AltUp and audio and vision encoders", "gemma3_text",
                "miss the per-layer embedding tables and both encoders"),
    "minimax": ("MiniMax-Text-01: lightning (linear) attention layers with MoE MLPs", "mixtral",
                "put a growing KV cache on the linear-attention layers"),
    "granitemoehybrid": ("Granite 4: Mamba-2 layers beside attention layers, MoE MLPs", "granitemoe",
                         "count attention and a KV cache on the Mamba-2 layers and miss their state"),
    "phi": ("Phi-1/Phi-2: partial rotary, biased projections and a plain MLP", "phi3",
            "count a gated MLP without biases: every layer's shapes differ"),
    "gpt_bigcode": ("StarCoder/SantaCoder: multi-query attention with learned positions", "starcoder2",
                    "miss the position table and count grouped-query attention"),
}


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
    alias_note = ""
    if model_type not in PARSERS:
        cls, target = _known_class(cfg)
        if target is None:
            raise _unsupported(reader, model_type, cls)
        alias_note = f"loaded as {target} because architectures names {cls} (model_type {model_type!r} is not one AnchorGPU counts)"
        model_type = target
        reader = ConfigReader({**cfg, "model_type": target}, where=where)
    unread = unread_count_keys(cfg, model_type)
    if unread:
        raise _refuse_unread(reader, model_type, unread)
    spec = PARSERS[model_type](reader, name, source)
    if alias_note:
        spec = replace(spec, notes=(alias_note, *spec.notes))
    spec = replace(spec, quantization=read_quantization(cfg, spec, where=where))  # the precision it ships in
    return replace(spec, family=FAMILY_NAMES.get(spec.model_type, spec.model_type))


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


def _unsupported(reader: ConfigReader, model_type: str, cls: str) -> InvalidConfig:
    known = _RELATIVES.get(model_type)
    named = f" ({cls})" if cls else ""
    if known is not None and known[1] in PARSERS:
        what, relative, wrong = known
        return InvalidConfig(
            f"{reader.where}: model_type {model_type!r}{named} is not supported: {what}; its nearest supported relative "
            f"is {relative!r}, and counting it as {relative!r} would {wrong}"
        )
    close = did_you_mean(model_type, SUPPORTED_MODEL_TYPES)
    hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
    return reader.fail(
        "model_type",
        f"value {model_type!r}{named} is not supported{hint}; counted as another type its layers could be missed or "
        f"misshapen, so no count is given; supported: {', '.join(SUPPORTED_MODEL_TYPES)}",
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
