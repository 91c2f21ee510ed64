"""Vision towers as data: a few widths read from config keys and a handful of flags per tower type.

One :class:`Tower` row describes each vision transformer transformers builds for a multimodal model
(CLIP, SigLIP, Pixtral, the Qwen2-VL / Qwen2.5-VL / Qwen3-VL ViTs, mllama's and Llama 4's); the
generic :func:`tower_params` adds up its patch embedding, positions, blocks and final norm. The few
modules that are not a plain ViT block (SigLIP's attention-pooling head, the Qwen patch mergers,
mllama's tile embeddings and gated global layers, Llama 4's pixel-shuffle adapter) are
``extras`` named in the row and counted by small functions below. Pure; stdlib only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from anchorgpu.architectures._config import ConfigReader

__all__ = ["TOWERS", "Tower", "tower_params", "vision_reader"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Tower:
    """One vision transformer: where its widths live in ``vision_config`` and which modules it has."""

    hidden: tuple[str, ...] = ("hidden_size",)
    layers: tuple[str, ...] = ("num_hidden_layers",)
    ffn: tuple[str, ...] = ("intermediate_size",)  # empty: ``mlp_ratio × hidden`` (Qwen2-VL)
    defaults: Mapping[str, int] = field(default_factory=dict)  # transformers' config defaults for absent keys
    norm: Literal["layer", "rms"] = "layer"  # LayerNorm (weight + bias) or RMSNorm (weight)
    qkv_bias: bool = True
    o_bias: bool = True
    mlp: Literal["plain", "gated"] = "plain"
    mlp_bias: bool = True
    patch: Literal["conv", "conv_bias", "linear"] = "conv"  # patch embedding: conv without/with bias, or a linear
    temporal: bool = False  # the patch embedding also spans ``temporal_patch_size`` frames (Qwen-VL)
    class_token: bool = False
    positions: Literal["none", "grid", "grid_cls", "table"] = "none"  # table: ``num_position_embeddings`` rows
    pre_norm: bool = False
    post_norm: bool = False
    extras: tuple[str, ...] = ()  # names in _EXTRAS


def vision_reader(r: ConfigReader, key: str = "vision_config") -> ConfigReader:
    """The reader of a model's vision sub-config (an empty one when the config leaves it out)."""
    if key not in r.data or r.data[key] is None:
        return ConfigReader({}, where=f"{r.where} [{key}]")
    return r.sub(key)


def _hidden(r: ConfigReader, t: Tower) -> int:
    return r.size(*t.hidden, default=t.defaults.get(t.hidden[0]))


def _get(r: ConfigReader, t: Tower, key: str) -> int:
    return r.size(key, default=t.defaults.get(key))


def _patches_per_side(r: ConfigReader, t: Tower) -> int:
    image, patch = _get(r, t, "image_size"), _get(r, t, "patch_size")
    return image // patch


def _norm(t: Tower, width: int) -> int:
    return 2 * width if t.norm == "layer" else width


def tower_params(r: ConfigReader, t: Tower, *, text_hidden: int) -> int:
    """Every parameter of the tower described by ``t`` reading ``r`` (its ``vision_config``)."""
    h = _hidden(r, t)
    n = r.size(*t.layers, default=t.defaults.get(t.layers[0]))
    ffn = r.size(*t.ffn, default=t.defaults.get(t.ffn[0])) if t.ffn else h * r.size("mlp_ratio", default=4)
    channels, patch = r.size("num_channels", "in_channels", default=3), _get(r, t, "patch_size")
    frames = r.size("temporal_patch_size", default=t.defaults.get("temporal_patch_size", 2)) if t.temporal else 1
    total = channels * frames * patch * patch * h + (h if t.patch == "conv_bias" else 0)
    total += h if t.class_token else 0
    if t.positions in ("grid", "grid_cls"):
        total += (_patches_per_side(r, t) ** 2 + (t.positions == "grid_cls")) * h
    elif t.positions == "table":
        total += _get(r, t, "num_position_embeddings") * h
    total += _norm(t, h) * (int(t.pre_norm) + int(t.post_norm))
    attention = 4 * h * h + (3 * h if t.qkv_bias else 0) + (h if t.o_bias else 0)
    mats = 3 if t.mlp == "gated" else 2
    mlp = mats * h * ffn + ((mats - 1) * ffn + h if t.mlp_bias else 0)
    total += n * (attention + mlp + 2 * _norm(t, h))
    for extra in t.extras:
        total += _EXTRAS[extra](r, t, h, ffn, text_hidden)
    return total


# ------------------------------------------------------------------------------------------ extras

def _siglip_head(r: ConfigReader, t: Tower, h: int, ffn: int, text_hidden: int) -> int:
    """SigLIP's attention-pooling head (probe, multi-head attention, LayerNorm, MLP) when ``vision_use_head``."""
    if not r.flag("vision_use_head", default=True):
        return 0
    return h + (3 * h * h + 3 * h) + (h * h + h) + 2 * h + (h * ffn + ffn) + (ffn * h + h)


def _qwen_merger(r: ConfigReader, h: int, out: int, *, norm: int) -> int:
    """Patch merger: a norm, then (h·m²) → (h·m²) → ``out`` with biases."""
    m = r.size("spatial_merge_size", default=2)
    wide = h * m * m
    return norm + wide * wide + wide + wide * out + out


def _qwen2_merger(r: ConfigReader, t: Tower, h: int, ffn: int, text_hidden: int) -> int:
    return _qwen_merger(r, h, r.size("hidden_size", default=text_hidden), norm=2 * h)


def _qwen2_5_merger(r: ConfigReader, t: Tower, h: int, ffn: int, text_hidden: int) -> int:
    return _qwen_merger(r, h, r.size("out_hidden_size", default=text_hidden), norm=h)


def _qwen3_mergers(r: ConfigReader, t: Tower, h: int, ffn: int, text_hidden: int) -> int:
    """The main merger (LayerNorm before the shuffle) and one DeepStack merger (LayerNorm after it) per index."""
    out = r.size("out_hidden_size", default=text_hidden)
    m = r.size("spatial_merge_size", default=2)
    deep = r.int_list("deepstack_visual_indexes") if r.has("deepstack_visual_indexes") else (8, 16, 24)
    return _qwen_merger(r, h, out, norm=2 * h) + len(deep) * _qwen_merger(r, h, out, norm=2 * h * m * m)


def _mllama_tiles(r: ConfigReader, t: Tower, h: int, ffn: int, text_hidden: int) -> int:
    """Gated position and tile embeddings, and the gated global layers after the local ones."""
    positions = _patches_per_side(r, t) ** 2 + 1
    tiles = r.size("max_num_tiles", default=4)
    ratios = r.data.get("supported_aspect_ratios")
    ratio_rows = (len(ratios) if isinstance(ratios, list) and ratios else 8) + 1
    embeddings = 1 + positions * h + ratio_rows * tiles * positions * h  # gated_positional_embedding
    embeddings += 2 * (1 + ratio_rows * tiles * h)  # pre- and post-tile positional embeddings
    global_layers = r.size("num_global_layers", default=8, minimum=0)
    block = 4 * h * h + (h * ffn + ffn) + (ffn * h + h) + 4 * h + 2  # no attention biases; two gates
    return embeddings + global_layers * block


def _llama4_adapter(r: ConfigReader, t: Tower, h: int, ffn: int, text_hidden: int) -> int:
    """The pixel-shuffle MLP after the blocks: fc1 ``ffn → projector_input_dim``, fc2 on the output width."""
    out = r.size("projector_output_dim", default=4096)
    return ffn * r.size("projector_input_dim", default=4096) + out * out


_EXTRAS: dict[str, Callable[[ConfigReader, Tower, int, int, int], int]] = {
    "siglip_head": _siglip_head,
    "qwen2_merger": _qwen2_merger,
    "qwen2_5_merger": _qwen2_5_merger,
    "qwen3_mergers": _qwen3_mergers,
    "mllama_tiles": _mllama_tiles,
    "llama4_adapter": _llama4_adapter,
}

_CLIP = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "image_size": 224, "patch_size": 32,
         "num_channels": 3}
_SIGLIP = {**_CLIP, "patch_size": 16}

TOWERS: dict[str, Tower] = {
    # CLIP ViT (LLaVA): class token, positions for every patch + 1, LayerNorm before and after the blocks
    "clip_vision_model": Tower(defaults=_CLIP, class_token=True, positions="grid_cls", pre_norm=True, post_norm=True),
    # SigLIP (Gemma 3, PaliGemma): biased patch conv, no class token, final LayerNorm, optional pooling head
    "siglip_vision_model": Tower(defaults=_SIGLIP, patch="conv_bias", positions="grid", post_norm=True,
                                 extras=("siglip_head",)),
    # Pixtral (Mistral 3): RMSNorm, no biases anywhere, SwiGLU MLP, 2-D RoPE (no position table)
    "pixtral": Tower(defaults={"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24,
                               "image_size": 1024, "patch_size": 16, "num_channels": 3},
                     norm="rms", qkv_bias=False, o_bias=False, mlp="gated", mlp_bias=False, pre_norm=True),
    # Qwen2-VL: 3-D patch conv over 2 frames, LayerNorm, fused qkv, MLP of mlp_ratio × embed_dim, patch merger
    "qwen2_vl": Tower(hidden=("embed_dim",), layers=("depth",), ffn=(),
                      defaults={"embed_dim": 1280, "depth": 32, "patch_size": 14, "temporal_patch_size": 2},
                      temporal=True, extras=("qwen2_merger",)),
    # Qwen2.5-VL: RMSNorm, biased SwiGLU MLP, merger to out_hidden_size
    "qwen2_5_vl": Tower(layers=("depth",), defaults={"hidden_size": 3584, "depth": 32, "intermediate_size": 3420,
                                                     "patch_size": 14, "temporal_patch_size": 2},
                        norm="rms", mlp="gated", temporal=True, extras=("qwen2_5_merger",)),
    # Qwen3-VL: biased patch conv, learned position table, LayerNorm, merger + DeepStack mergers
    "qwen3_vl": Tower(layers=("depth",), defaults={"hidden_size": 1152, "depth": 27, "intermediate_size": 4304,
                                                   "patch_size": 16, "temporal_patch_size": 2,
                                                   "num_position_embeddings": 2304},
                      patch="conv_bias", temporal=True, positions="table", extras=("qwen3_mergers",)),
    # mllama (Llama 3.2 Vision): local layers without attention biases, tiles, gated global layers
    "mllama": Tower(defaults={"hidden_size": 1280, "intermediate_size": 5120, "num_hidden_layers": 32,
                              "image_size": 448, "patch_size": 14, "num_channels": 3},
                    qkv_bias=False, o_bias=False, class_token=True, pre_norm=True, post_norm=True,
                    extras=("mllama_tiles",)),
    # Llama 4: linear patch embedding, class token, positions, biased blocks, pixel-shuffle adapter
    "llama4": Tower(defaults={"hidden_size": 768, "intermediate_size": 5632, "num_hidden_layers": 34,
                              "image_size": 448, "patch_size": 14, "num_channels": 3},
                    patch="linear", class_token=True, positions="grid_cls", pre_norm=True, post_norm=True,
                    extras=("llama4_adapter",)),
}
