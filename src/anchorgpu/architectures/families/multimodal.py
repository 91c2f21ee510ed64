"""Vision-language models: every tower counted (vision tower, projector, language model) as transformers builds it.

A multimodal parser reads the language model with the decoder parser of its ``text_config`` type
(Llama, Mistral, Qwen2/3, Qwen3-MoE, Gemma 3, Llama 4 …), counts the vision tower from its row in
:data:`.vision.TOWERS`, adds the projector, and records how images become tokens
(:class:`~anchorgpu.architectures.spec.ImageTokens`). Tied embeddings follow transformers 5.24: the
outer config's ``tie_word_embeddings`` (with each model's default), or the text config's where the
outer config forwards it. Pure; stdlib only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from anchorgpu.architectures._build import Tally
from anchorgpu.architectures._config import ConfigReader
from anchorgpu.architectures.families._blocks import (
    Core,
    Parser,
    assemble_dense,
    core_shape,
    gated_mlp,
    gqa,
    rms_norms,
    with_note,
)
from anchorgpu.architectures.families.vision import TOWERS, tower_params, vision_reader
from anchorgpu.architectures.spec import ImageTokens, LayerKind, ModelSpec

# transformers' config defaults for text configs that published VLM configs leave partly empty (LLaVA-1.5 gives
# only a vocabulary and a context: the rest is LlamaConfig's 7B shape).
_TEXT_DEFAULTS: dict[str, dict[str, object]] = {
    "llama": {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
              "num_attention_heads": 32, "max_position_embeddings": 2048},
    "mistral": {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
                "num_attention_heads": 32, "num_key_value_heads": 8, "max_position_embeddings": 131072},
}

# Outer ``tie_word_embeddings`` default per model type, and whether a text config's own value is forwarded.
_TIE_DEFAULT = {"llava": False, "llava_next": False, "qwen2_vl": False, "qwen2_5_vl": False, "qwen3_vl": False,
                "qwen3_vl_moe": False, "mistral3": True, "gemma3": True, "mllama": False, "llama4": False}
_TIE_FORWARDED = {"llava", "qwen2_vl", "qwen2_5_vl"}

# Image processors as published beside each model (``preprocessor_config.json``), not in ``config.json``.
_QWEN2_PIXELS = (3136, 12845056)  # Qwen2-VL / Qwen2.5-VL: min_pixels 56·56, max_pixels 14·14·4·16384
_QWEN3_PIXELS = (65536, 16777216)  # Qwen3-VL: size shortest_edge 65,536, longest_edge 16,777,216 pixels


def _text_reader(r: ConfigReader, mt: str, *, key: str = "text_config") -> tuple[ConfigReader, bool]:
    """The language model's config with transformers' defaults filled in, and whether its embeddings are tied."""
    flat = key not in r.data  # Qwen2-VL / Qwen2.5-VL configs published before transformers 5 are flat
    text = r.data if flat else r.sub(key).data
    text_type = str(text.get("model_type") or "")
    data: dict[str, object] = {**_TEXT_DEFAULTS.get(text_type, {}), **{k: v for k, v in text.items() if v is not None}}
    tied = r.flag("tie_word_embeddings", default=_TIE_DEFAULT[mt])
    if not tied and mt in _TIE_FORWARDED and not flat:
        tied = ConfigReader(text, where=r.where).flag("tie_word_embeddings", default=False)
    data["tie_word_embeddings"] = tied
    return ConfigReader(data, where=r.where if flat else f"{r.where} [{key}]"), tied


def _language_model(r: ConfigReader, mt: str, name: str, source: str, *, parser_type: str | None = None,
                    key: str = "text_config") -> ModelSpec:
    from anchorgpu.architectures.families import PARSERS  # the merged table (other modules' decoders)

    text, _ = _text_reader(r, mt, key=key)
    kind = parser_type or text.text("model_type", default="")
    if kind == "qwen3_moe" and "num_local_experts" in text.data:  # transformers 5 saves num_experts under this alias
        data = {k: v for k, v in text.data.items() if k != "num_local_experts"}
        data.setdefault("num_experts", text.data["num_local_experts"])
        text = ConfigReader(data, where=text.where)
    parser = PARSERS.get(kind)
    if parser is None or kind == mt:
        raise r.fail(f"{key}.model_type", f"value {kind!r} is not a supported language model for {mt}")
    if key in r.data:  # the text config's count-changing keys must be ones its decoder reads
        from anchorgpu.architectures.hf import unread_count_keys

        unread = unread_count_keys({k: v for k, v in text.data.items() if k in r.sub(key).data}, kind)
        if unread:
            raise r.fail(key, f"sets {', '.join(unread)}, which the {kind} language model does not read: no count given")
    return parser(text, name, source)


def with_towers(lm: ModelSpec, mt: str, towers: Mapping[str, int], *, image: ImageTokens | None,
                note: str = "") -> ModelSpec:
    """The language model plus the named towers: totals, the ``towers`` map and the image rule."""
    extra = sum(towers.values())
    params = replace(lm.params, towers=lm.params.towers + extra)
    notes = (*lm.notes, note) if note else lm.notes
    return replace(lm, model_type=mt, params=params, towers=(("language_model", lm.params_total), *towers.items()),
                   image=image, notes=notes)


def _active_note(towers: Mapping[str, int]) -> str:
    names = " and ".join(towers)
    return f"params_active counts what a text token passes through; the {names} run once per image (prefill)"


def _lm_hidden(lm: ModelSpec) -> int:
    return lm.hidden_size


def _pinpoints(r: ConfigReader) -> tuple[tuple[int, int], ...]:
    """LLaVA-NeXT's ``image_grid_pinpoints`` (height, width pairs); transformers' default grid when absent."""
    pins = r.data.get("image_grid_pinpoints")
    if pins is None:
        return ((336, 672), (672, 336), (672, 672), (1008, 336), (336, 1008))
    ok = isinstance(pins, list) and pins and all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in p)
        for p in pins)
    if not ok:
        raise r.fail("image_grid_pinpoints", f"must be a list of [height, width] pairs of positive integers, got {pins!r}")
    return tuple((int(p[0]), int(p[1])) for p in pins)  # type: ignore[attr-defined]


# ----------------------------------------------------------------------------------------------- families

def _llava(r: ConfigReader, name: str, source: str) -> ModelSpec:
    mt = r.text("model_type")
    lm = _language_model(r, mt, name, source)
    v = vision_reader(r)
    vtype = v.text("model_type", default="clip_vision_model")
    tower = TOWERS.get(vtype)
    if tower is None:
        raise v.fail("model_type", f"vision tower {vtype!r} is not supported (supported: clip_vision_model, "
                                   "siglip_vision_model)")
    vision = tower_params(v, tower, text_hidden=lm.hidden_size)
    vh = v.size("hidden_size", default=tower.defaults["hidden_size"])
    layers = r.data.get("vision_feature_layer", -2)
    feature_layers = len(layers) if isinstance(layers, list) else 1
    bias = r.flag("multimodal_projector_bias", default=True)
    h = lm.hidden_size
    projector = vh * feature_layers * h + h * h + (2 * h if bias else 0)
    side = v.size("image_size", default=tower.defaults["image_size"])
    patch = v.size("patch_size", default=tower.defaults["patch_size"])
    full = r.data.get("vision_feature_select_strategy", "default") == "full"
    if mt == "llava_next":
        projector += h  # image_newline
        image = ImageTokens(rule="anyres", native_resolution=(side, side), patch_size=patch, tile_size=side,
                            grid_pinpoints=_pinpoints(r),
                            encoder_params=vision)
    else:
        image = ImageTokens(rule="fixed", native_resolution=(side, side), patch_size=patch,
                            tokens_per_image=(side // patch) ** 2 + (1 if full else 0), encoder_params=vision)
    towers = {"vision": vision, "projector": projector}
    return with_towers(lm, mt, towers, image=image, note=_active_note(towers))


def _qwen_vl(r: ConfigReader, name: str, source: str) -> ModelSpec:
    mt = r.text("model_type")
    text_type = {"qwen2_vl": "qwen2", "qwen2_5_vl": "qwen2", "qwen3_vl": "qwen3", "qwen3_vl_moe": "qwen3_moe"}[mt]
    lm = _language_model(r, mt, name, source, parser_type=text_type)
    v = vision_reader(r)
    tower = TOWERS[mt.removesuffix("_moe")]
    vision_all = tower_params(v, tower, text_hidden=lm.hidden_size)
    patch = v.size("patch_size", default=tower.defaults["patch_size"])
    merge = v.size("spatial_merge_size", default=2)
    low, high = _QWEN3_PIXELS if mt.startswith("qwen3") else _QWEN2_PIXELS
    image = ImageTokens(rule="grid", native_resolution=(1024, 1024), patch_size=patch, merge=merge, min_pixels=low,
                        max_pixels=high, encoder_params=vision_all)
    towers = {"vision": vision_all}
    note = _active_note(towers) + "; the vision count includes its patch merger(s)"
    return with_towers(lm, mt, towers, image=image, note=note)


def _mistral3(r: ConfigReader, name: str, source: str) -> ModelSpec:
    mt = "mistral3"
    lm = _language_model(r, mt, name, source)
    v = vision_reader(r)
    tower = TOWERS["pixtral"]
    vision = tower_params(v, tower, text_hidden=lm.hidden_size)
    vh = v.size("hidden_size", default=tower.defaults["hidden_size"])
    merge = r.size("spatial_merge_size", default=2)
    layers = r.data.get("vision_feature_layer", -1)
    width = vh * (len(layers) if isinstance(layers, list) else 1)
    bias = r.flag("multimodal_projector_bias", default=False)
    h = lm.hidden_size
    projector = vh + vh * merge * merge * vh + width * h + h * h + (2 * h if bias else 0)
    side = v.size("image_size", default=tower.defaults["image_size"])
    image = ImageTokens(rule="pixtral", native_resolution=(side, side), patch_size=v.size(
        "patch_size", default=tower.defaults["patch_size"]), merge=merge, longest_edge=side, encoder_params=vision)
    towers = {"vision": vision, "projector": projector}
    spec = with_towers(lm, mt, towers, image=image, note=_active_note(towers))
    if not r.has("tie_word_embeddings"):
        spec = with_note(spec, "tie_word_embeddings is not set: transformers 5 ties the LM head to the embeddings "
                               "(Mistral3Config's default), so no separate head is counted")
    return spec


def _gemma3(r: ConfigReader, name: str, source: str) -> ModelSpec:
    from anchorgpu.architectures.families import PARSERS

    if "text_config" not in r.data:  # a text-only config published under model_type gemma3
        return PARSERS["gemma3_text"](r, name, source)
    lm = _language_model(r, "gemma3", name, source, parser_type="gemma3_text")
    v = vision_reader(r)
    tower = TOWERS["siglip_vision_model"]
    vision = tower_params(v, tower, text_hidden=lm.hidden_size)
    vh = v.size("hidden_size", default=tower.defaults["hidden_size"])
    projector = vh * lm.hidden_size + vh  # mm_input_projection_weight and the soft-embedding RMSNorm
    side = v.size("image_size", default=tower.defaults["image_size"])
    image = ImageTokens(rule="fixed", native_resolution=(side, side), patch_size=v.size(
        "patch_size", default=tower.defaults["patch_size"]), tokens_per_image=r.size("mm_tokens_per_image",
                                                                                      default=256),
        encoder_params=vision)
    towers = {"vision": vision, "projector": projector}
    spec = with_towers(lm, "gemma3", towers, image=image, note=_active_note(towers))
    return replace(spec, model_type="gemma3")


def _mllama_text(r: ConfigReader, name: str, source: str) -> tuple[ModelSpec, int, Core]:
    """Llama 3.2 Vision's language model: self-attention layers and gated cross-attention layers."""
    text, tied = _text_reader(r, "mllama")
    c = core_shape(text, context_default=131072)
    cross = sorted(set(text.int_list("cross_attention_layers") or (3, 8, 13, 18, 23, 28, 33, 38)))
    if any(i >= c.layers for i in cross):
        raise text.fail("cross_attention_layers", f"must index layers below num_hidden_layers ({c.layers})")
    ffn = text.size("intermediate_size")
    t = Tally()
    t.table("embeddings", c.vocab + 8, c.hidden)  # 8 extra rows for the image and special tokens
    if not tied:
        t.table("head", c.vocab, c.hidden)
    gqa(t, replace(c, layers=c.layers - len(cross)))
    gqa(t, replace(c, layers=len(cross)), qk_norm=True)  # cross-attention: q/k RMS norms of head_dim
    t.vector("other", 1, count=2 * len(cross))
    t.notes.append("other: the attention and MLP gates of the cross-attention layers")
    gated_mlp(t, c.hidden, ffn, count=c.layers)
    rms_norms(t, c, per_layer=2)
    spec = assemble_dense(t, text, c, name, source, tied=tied, ffn=ffn, windows=(None,) * c.layers,
                          model_type="mllama")
    kinds: tuple[LayerKind, ...] = tuple("mlp" if i in cross else "attention" for i in range(c.layers))
    spec = replace(spec, layer_kinds=kinds)
    return spec, len(cross), c


def _mllama(r: ConfigReader, name: str, source: str) -> ModelSpec:
    lm, n_cross, c = _mllama_text(r, name, source)
    v = vision_reader(r)
    tower = TOWERS["mllama"]
    vision = tower_params(v, tower, text_hidden=lm.hidden_size)
    projector = v.size("vision_output_dim", default=7680) * lm.hidden_size + lm.hidden_size
    side = v.size("image_size", default=tower.defaults["image_size"])
    patch = v.size("patch_size", default=tower.defaults["patch_size"])
    image = ImageTokens(rule="tiles", native_resolution=(side, side), patch_size=patch, tile_size=side,
                        max_tiles=v.size("max_num_tiles", default=4), tokens_per_tile=(side // patch) ** 2 + 1,
                        in_context=False, cross_kv_values_per_token=2 * n_cross * c.kv_heads * c.head_dim,
                        encoder_params=vision)
    towers = {"vision": vision, "projector": projector}
    note = (f"{n_cross} cross-attention layers read the image through their own K/V (kept per sequence); the text KV "
            f"cache covers the {c.layers - n_cross} self-attention layers")
    return with_towers(lm, "mllama", towers, image=image, note=note)


def _llama4(r: ConfigReader, name: str, source: str) -> ModelSpec:
    from anchorgpu.architectures.families import PARSERS

    if "llama4_text" not in PARSERS:
        raise r.fail("model_type", "value 'llama4' needs the llama4_text language model parser, not available")
    lm = _language_model(r, "llama4", name, source, parser_type="llama4_text")
    v = vision_reader(r)
    tower = TOWERS["llama4"]
    vision = tower_params(v, tower, text_hidden=lm.hidden_size)
    projector = v.size("vision_output_dim", default=7680) * lm.hidden_size
    side = v.size("image_size", default=tower.defaults["image_size"])
    patch = v.size("patch_size", default=tower.defaults["patch_size"])
    ratio = v.number("pixel_shuffle_ratio", default=0.5)
    per_tile = int((side // patch) ** 2 * ratio * ratio)
    image = ImageTokens(rule="tiles", native_resolution=(side, side), patch_size=patch, tile_size=side, max_tiles=16,
                        tokens_per_tile=per_tile, global_tile=True, encoder_params=vision)
    towers = {"vision": vision, "projector": projector}
    return with_towers(lm, "llama4", towers, image=image, note=_active_note(towers))


FAMILY_NAMES: dict[str, str] = {
    "llava": "LLaVA",
    "llava_next": "LLaVA-NeXT",
    "qwen2_vl": "Qwen2-VL",
    "qwen2_5_vl": "Qwen2.5-VL",
    "qwen3_vl": "Qwen3-VL",
    "qwen3_vl_moe": "Qwen3-VL-MoE",
    "mistral3": "Mistral 3",
    "gemma3": "Gemma 3",
    "mllama": "Llama 3.2 Vision",
    "llama4": "Llama 4",
}

PARSERS: dict[str, Parser] = {
    "llava": _llava,
    "llava_next": _llava,
    "qwen2_vl": _qwen_vl,
    "qwen2_5_vl": _qwen_vl,
    "qwen3_vl": _qwen_vl,
    "qwen3_vl_moe": _qwen_vl,
    "mistral3": _mistral3,
    "gemma3": _gemma3,
    "mllama": _mllama,
    "llama4": _llama4,
}

# Count-changing top-level keys each parser reads (the text config's own keys are checked against its decoder's).
_SUB = frozenset({"vision_config", "text_config"})
_TYPES = frozenset({"layer_types=full_attention", "layer_types=sliding_attention"})
READS: dict[str, frozenset[str]] = {
    **dict.fromkeys(("llava", "llava_next", "mistral3", "mllama", "llama4", "qwen3_vl", "qwen3_vl_moe"), _SUB),
    # Qwen2-VL / Qwen2.5-VL configs published flat, and text-only Gemma 3 configs, carry the text keys at the top
    **dict.fromkeys(("qwen2_vl", "qwen2_5_vl", "gemma3"), _SUB | _TYPES),
}

CLASSES: dict[str, str] = {
    "LlavaForConditionalGeneration": "llava",
    "LlavaNextForConditionalGeneration": "llava_next",
    "Qwen2VLForConditionalGeneration": "qwen2_vl",
    "Qwen2_5_VLForConditionalGeneration": "qwen2_5_vl",
    "Qwen3VLForConditionalGeneration": "qwen3_vl",
    "Qwen3VLMoeForConditionalGeneration": "qwen3_vl_moe",
    "Mistral3ForConditionalGeneration": "mistral3",
    "Gemma3ForConditionalGeneration": "gemma3",
    "MllamaForConditionalGeneration": "mllama",
    "Llama4ForConditionalGeneration": "llama4",
}
