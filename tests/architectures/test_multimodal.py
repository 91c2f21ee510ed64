"""Multimodal and encoder-decoder models: every tower counted, image tokens at a resolution, refusals in one line.

Figures: parameter counts are transformers 5.24.0's on the meta device (``transformers_counts.json`` for the
registry configs, ``multimodal_cases.json`` for unseen configs; the scripts beside them regenerate both). Image
tokens are worked out by hand from each config and the image processor's published arithmetic (shown per test).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from anchorgpu.architectures import ModelSpec, from_hf_config, load_model
from anchorgpu.architectures.images import image_tokens, smart_resize
from anchorgpu.errors import InvalidConfig
from cli_runner import run, run_json

HERE = Path(__file__).resolve().parent
CASES: dict[str, dict[str, Any]] = {
    k: v for k, v in json.loads((HERE / "multimodal_cases.json").read_text()).items() if not k.startswith("_")
}
COUNTS: dict[str, dict[str, int]] = {
    k: v for k, v in json.loads((HERE / "transformers_counts.json").read_text()).items() if isinstance(v, dict)
}
MULTIMODAL = ["gemma-3-27b", "llava-1.5-7b", "mistral-small-3.1-24b", "qwen2-vl-7b", "qwen2.5-vl-7b", "llama-3.2-11b-vision",
              "llama-4-scout-17b-16e", "llama-4-maverick-17b-128e-fp8", "whisper-large-v3",
              "t5-base", "flan-t5-xl", "qwen3-vl-4b", "qwen3-vl-30b-a3b", "gemma-3-4b",
              "llava-v1.6-mistral-7b", "gemma-3-12b"]


def llm(name: str) -> ModelSpec:
    spec = load_model(name)
    assert isinstance(spec, ModelSpec)
    return spec


@pytest.mark.parametrize("name", MULTIMODAL)
def test_registry_multimodal_models_match_transformers_and_towers_add_up(name: str) -> None:
    spec = llm(name)
    assert spec.params_total == COUNTS[name]["params_total"]
    assert sum(dict(spec.towers).values()) == spec.params_total
    assert spec.params.towers == sum(v for k, v in spec.towers if k in ("vision", "projector"))
    assert (spec.image is None) == (spec.model_type in ("t5", "whisper"))
    assert (spec.encoder is None) == (spec.model_type not in ("t5", "whisper"))


def test_qwen2_5_vl_7b_towers_are_the_modules_transformers_builds() -> None:
    # transformers 5.24 on the meta device: model.visual 676,550,144 parameters; language model + lm_head
    # 7,070,619,136 + 544,997,376 = 7,615,616,512.
    assert dict(llm("qwen2.5-vl-7b").towers) == {"language_model": 7_615_616_512, "vision": 676_550_144}


def test_whisper_large_v3_encoder_and_decoder() -> None:
    # transformers 5.24: model.encoder 636,968,960 and model.decoder 906,521,600 (proj_out tied to embed_tokens).
    spec = llm("whisper-large-v3")
    assert dict(spec.towers) == {"audio_encoder": 636_968_960, "decoder": 906_521_600}
    assert spec.encoder is not None and spec.encoder.fixed_tokens == 1500
    # cross-attention K and V of 32 decoder layers, 20 heads of 64: 2 · 32 · 1280 values per encoder frame
    assert spec.encoder.cross_kv_values_per_token == 2 * 32 * 1280
    assert spec.kv_bytes_per_token() == 2 * 32 * 1280 * 2  # the decoder's own self-attention cache, bf16


@pytest.mark.parametrize("case", sorted(CASES))
def test_unseen_configs_of_each_family_are_exact(case: str) -> None:
    spec = from_hf_config(CASES[case]["config"], name=case)
    assert spec.params_total == CASES[case]["params_total"]


def test_unseen_config_loaded_from_a_file_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CASES["mllama_cross_layers"]["config"]))
    doc = run_json(capsys, "model", str(path))
    assert doc["params_total"] == CASES["mllama_cross_layers"]["params_total"]
    assert set(doc["towers"]) == {"language_model", "vision", "projector"}
    # 5 text layers, 2 of them cross-attention: the text KV cache covers the 3 self-attention layers (2 KV heads of 32)
    assert doc["kv_bytes_per_token"] == 3 * 2 * 2 * 32 * 2


def test_model_json_keeps_its_keys_and_adds_towers_for_a_text_model(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "model", "llama-3.1-8b")
    assert doc["towers"] == {"language_model": 8_030_261_248}
    assert doc["image_tokens"] is None and doc["encoder"] is None
    assert doc["breakdown"]["towers"] == 0


# ------------------------------------------------------------------------------------------- image tokens

def test_qwen2_vl_tokens_at_1024_by_1024_follow_smart_resize() -> None:
    # factor = patch 14 × merge 2 = 28; round(1024 / 28) = round(36.57) = 37 → 1,036 px a side; 1,036² = 1,073,296
    # lies within min_pixels 3,136 and max_pixels 12,845,056 (Qwen2.5-VL's preprocessor_config.json), so
    # 1,036 / 14 = 74 patches a side, merged 2 × 2: 37 × 37 = 1,369 tokens.
    assert smart_resize(1024, 1024, factor=28, min_pixels=3136, max_pixels=12_845_056) == (1036, 1036)
    rule = llm("qwen2.5-vl-7b").image
    assert rule is not None
    assert image_tokens(rule, 1024, 1024) == 37 * 37 == 1369
    # 1920 × 1080: round(1920 / 28) = 69 → 1,932; round(1080 / 28) = 39 → 1,092 (2,109,744 px, within the bounds):
    # 1,932 / 28 = 69 and 1,092 / 28 = 39 tokens a side
    assert image_tokens(rule, 1920, 1080) == 69 * 39


def test_qwen_vl_caps_a_huge_image_at_max_pixels() -> None:
    rule = llm("qwen2.5-vl-7b").image
    assert rule is not None
    # 8,192² = 67,108,864 px > 12,845,056: β = sqrt(67,108,864 / 12,845,056) = 2.2857; floor(8192 / 2.2857 / 28) = 128
    # → 3,584 px a side, 3,584 / 28 = 128 tokens a side
    assert image_tokens(rule, 8192, 8192) == 128 * 128


def test_fixed_token_models() -> None:
    # LLaVA-1.5: CLIP at 336 px with 14-px patches, the CLS feature dropped ("default" strategy): (336/14)² = 576
    llava = llm("llava-1.5-7b").image
    gemma = llm("gemma-3-27b").image
    assert llava is not None and gemma is not None
    assert image_tokens(llava, 1920, 1080) == 576
    assert image_tokens(gemma, 640, 480) == 256  # mm_tokens_per_image of the Gemma 3 config


def test_mistral_small_tokens_follow_pixtral() -> None:
    rule = llm("mistral-small-3.1-24b").image
    assert rule is not None
    # 1024 × 1024 is under the 1,540 longest edge: ceil(1024 / 14) = 74 patches a side, merged 2 × 2 → 37 rows of
    # 37 tokens, each row closed by a break token: 37 × 38 = 1,406
    assert image_tokens(rule, 1024, 1024) == 37 * 38
    # 3080 × 1540 is scaled by 2 to 1540 × 770: ceil(1540/14) = 110 → 55 columns; ceil(770/14) = 55 → 27 rows
    assert image_tokens(rule, 3080, 1540) == 27 * 56


def test_llava_next_anyres_tokens() -> None:
    spec = from_hf_config(CASES["llava_next_qwen2_pinpoints"]["config"], name="n")
    rule = spec.image
    assert rule is not None
    # CLIP 112 px, patch 14 → 8 × 8 base features; a 224 × 224 image picks the (224, 224) pinpoint: a 2 × 2 grid of
    # 8 × 8 = 16 × 16 features, no padding to cut, plus one newline per row: 256 + 16 + 64 = 336
    assert image_tokens(rule, 224, 224) == 16 * 16 + 16 + 8 * 8


# --------------------------------------------------------------------------------------------- bad input

def test_malformed_grid_pinpoints_are_refused_in_one_line() -> None:
    cfg = {**CASES["llava_next_qwen2_pinpoints"]["config"], "image_grid_pinpoints": [[224, -1]]}
    with pytest.raises(InvalidConfig, match="image_grid_pinpoints") as err:
        from_hf_config(cfg, name="bad")
    assert "\n" not in str(err.value)


def test_text_config_keys_its_decoder_does_not_read_are_refused() -> None:
    base = CASES["llava_siglip_feature_layers_no_bias_tied"]["config"]
    cfg = {**base, "text_config": {**base["text_config"], "num_local_experts": 8}}
    with pytest.raises(InvalidConfig, match="num_local_experts"):
        from_hf_config(cfg, name="bad")


def test_unknown_vision_tower_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    base = CASES["llava_siglip_feature_layers_no_bias_tied"]["config"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**base, "vision_config": {**base["vision_config"], "model_type": "dinov2"}}))
    code, out, err = run(capsys, "model", str(path))
    assert code == 2 and out == ""
    assert "dinov2" in err and len(err.strip().splitlines()) == 1


def test_llama_3_2_vision_caches_text_kv_on_its_self_attention_layers_only() -> None:
    spec = llm("llama-3.2-11b-vision")
    # 40 layers, 8 of them cross-attention (3, 8, …, 38): text K/V on 32 layers × 8 KV heads × 128 × 2 bytes × K,V
    assert spec.kv_bytes_per_token() == 32 * 2 * 8 * 128 * 2 == 131_072
    rule = spec.image
    assert rule is not None and not rule.in_context
    # one 560-px tile: (560 / 14)² patches + the class token = 1,601 positions in the cross-attention cache;
    # a 1120 × 1120 image takes 2 × 2 = 4 tiles (max_num_tiles 4)
    assert image_tokens(rule, 560, 560) == 1601
    assert image_tokens(rule, 1120, 1120) == 4 * 1601
    assert rule.cross_kv_values_per_token == 8 * 2 * 8 * 128


def test_llama_4_scout_image_tile_tokens() -> None:
    rule = llm("llama-4-scout-17b-16e").image
    assert rule is not None
    # a 336-px tile of 14-px patches: 24² = 576 patches, pixel shuffle ratio 0.5 keeps 576 × 0.25 = 144 tokens;
    # one tile: <|image_start|>, <|image|>, 144 patch tokens, <|image_end|> (Llama4Processor._prompt_split_image)
    assert image_tokens(rule, 336, 336) == 1 + 1 + 144 + 1
    # 1024 × 768: the smallest undistorted upscale among canvases of ≤ 16 tiles is 3 rows × 4 columns (× 1.3125);
    # 12 tiles of 144 tokens, 3 × 3 x-separators, 3 y-separators, then the global tile and the 3 markers
    assert image_tokens(rule, 1024, 768) == 12 * 144 + 3 * 3 + 3 + 144 + 3


def test_t5_base_encoder_decoder_split() -> None:
    spec = llm("t5-base")
    # shared table 32,128 × 768; encoder 12 blocks of q,k,v,o (4 · 768²) + relu FFN (2 · 768 · 3,072) + 2 norms, one
    # relative-bias table 32 × 12, final norm; decoder 12 blocks with cross-attention, 3 norms each
    enc = 12 * (4 * 768 * 768 + 2 * 768 * 3072 + 2 * 768) + 32 * 12 + 768
    dec = 12 * (8 * 768 * 768 + 2 * 768 * 3072 + 3 * 768) + 32 * 12 + 768
    assert dict(spec.towers) == {"shared_embeddings": 32128 * 768, "encoder": enc, "decoder": dec}
    assert spec.params_total == 222_903_552
    assert any("n_positions" in note for note in spec.notes)


def test_llava_next_mistral_anyres_tokens_at_672() -> None:
    rule = llm("llava-v1.6-mistral-7b").image
    assert rule is not None
    # CLIP 336 px / 14 = 24 × 24 base features; a 672 × 672 image picks the (672, 672) pinpoint: 2 × 2 tiles of
    # 24 × 24 = 48 × 48 features (same aspect, nothing unpadded), 48 newline tokens, plus the base 576: 2,928
    assert image_tokens(rule, 672, 672) == 48 * 48 + 48 + 24 * 24 == 2928
