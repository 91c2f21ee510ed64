"""Regenerate ``multimodal_cases.json``: unseen multimodal and encoder-decoder configs counted by transformers.

Each case is a config no registry model has (sizes shrunk, and the switches a family has flipped: a SigLIP tower
with its pooling head, a list of vision feature layers, projector biases, tied heads, flat Qwen2-VL configs,
DeepStack indexes, dense layers in an MoE text model, Llama 4's MoE on every other layer beside its vision
tower, cross-attention layer lists, gated T5 feed-forwards, an untied Whisper head). The script builds each with the ``*ForConditionalGeneration`` class of its model type on
the meta device (pinned torch==2.13.0 CPU, transformers==5.24.0; never a runtime dependency):

    /work/tfvenv/bin/python tests/architectures/multimodal_cases.py > tests/architectures/multimodal_cases.json
"""

from __future__ import annotations

import json
import sys

_LLAMA = {"model_type": "llama", "vocab_size": 1000, "hidden_size": 256, "intermediate_size": 688,
          "num_hidden_layers": 3, "num_attention_heads": 8, "num_key_value_heads": 2, "max_position_embeddings": 4096}
_MISTRAL = {**_LLAMA, "model_type": "mistral", "head_dim": 48, "sliding_window": None}
_QWEN2 = {**_LLAMA, "model_type": "qwen2"}
_CLIP = {"model_type": "clip_vision_model", "hidden_size": 128, "intermediate_size": 320, "num_hidden_layers": 3,
         "num_attention_heads": 4, "image_size": 112, "patch_size": 14}
_SIGLIP = {"model_type": "siglip_vision_model", "hidden_size": 96, "intermediate_size": 200, "num_hidden_layers": 2,
           "num_attention_heads": 4, "image_size": 64, "patch_size": 16}

CASES: dict[str, dict[str, object]] = {
    "llava_siglip_feature_layers_no_bias_tied": {
        "model_type": "llava", "architectures": ["LlavaForConditionalGeneration"], "text_config": _MISTRAL,
        "vision_config": _SIGLIP, "vision_feature_layer": [-2, -5], "multimodal_projector_bias": False,
        "tie_word_embeddings": True, "vision_feature_select_strategy": "full"},
    "llava_next_qwen2_pinpoints": {
        "model_type": "llava_next", "architectures": ["LlavaNextForConditionalGeneration"], "text_config": _QWEN2,
        "vision_config": _CLIP, "image_grid_pinpoints": [[112, 224], [224, 112], [224, 224]]},
    "qwen2_vl_flat": {
        "model_type": "qwen2_vl", "architectures": ["Qwen2VLForConditionalGeneration"], "vocab_size": 1200,
        "hidden_size": 192, "intermediate_size": 512, "num_hidden_layers": 3, "num_attention_heads": 6,
        "num_key_value_heads": 2, "max_position_embeddings": 8192, "tie_word_embeddings": True,
        "vision_config": {"embed_dim": 64, "depth": 2, "num_heads": 4, "mlp_ratio": 3, "hidden_size": 192,
                          "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2}},
    "qwen2_5_vl_text_config": {
        "model_type": "qwen2_5_vl", "architectures": ["Qwen2_5_VLForConditionalGeneration"],
        "text_config": {**_QWEN2, "model_type": "qwen2_5_vl_text", "hidden_size": 160, "num_attention_heads": 5,
                        "num_key_value_heads": 1},
        "vision_config": {"hidden_size": 80, "depth": 3, "num_heads": 4, "intermediate_size": 216,
                          "out_hidden_size": 160, "patch_size": 14, "spatial_merge_size": 3}},
    "qwen3_vl_deepstack": {
        "model_type": "qwen3_vl", "architectures": ["Qwen3VLForConditionalGeneration"],
        "text_config": {"model_type": "qwen3_vl_text", "vocab_size": 900, "hidden_size": 128,
                        "intermediate_size": 384, "num_hidden_layers": 2, "num_attention_heads": 4,
                        "num_key_value_heads": 2, "head_dim": 32, "max_position_embeddings": 4096},
        "vision_config": {"hidden_size": 64, "depth": 4, "num_heads": 4, "intermediate_size": 160,
                          "out_hidden_size": 128, "num_position_embeddings": 144, "patch_size": 16,
                          "deepstack_visual_indexes": [1, 2]}},
    "qwen3_vl_moe_dense_layers": {
        "model_type": "qwen3_vl_moe", "architectures": ["Qwen3VLMoeForConditionalGeneration"],
        "text_config": {"model_type": "qwen3_vl_moe_text", "vocab_size": 900, "hidden_size": 128,
                        "intermediate_size": 384, "num_hidden_layers": 4, "num_attention_heads": 4,
                        "num_key_value_heads": 2, "head_dim": 32, "max_position_embeddings": 4096, "num_experts": 6,
                        "num_experts_per_tok": 2, "moe_intermediate_size": 64, "mlp_only_layers": [0]},
        "vision_config": {"hidden_size": 64, "depth": 2, "num_heads": 4, "intermediate_size": 160,
                          "out_hidden_size": 128, "num_position_embeddings": 144, "patch_size": 16,
                          "deepstack_visual_indexes": [0]}},
    "mistral3_feature_layers_bias_untied": {
        "model_type": "mistral3", "architectures": ["Mistral3ForConditionalGeneration"], "text_config": _MISTRAL,
        "vision_config": {"model_type": "pixtral", "hidden_size": 64, "intermediate_size": 160,
                          "num_hidden_layers": 2, "num_attention_heads": 4, "image_size": 224, "patch_size": 14},
        "vision_feature_layer": [-1, -2], "multimodal_projector_bias": True, "tie_word_embeddings": False,
        "spatial_merge_size": 2},
    "gemma3_siglip_head": {
        "model_type": "gemma3", "architectures": ["Gemma3ForConditionalGeneration"],
        "text_config": {"model_type": "gemma3_text", "vocab_size": 1024, "hidden_size": 128,
                        "intermediate_size": 256, "num_hidden_layers": 3, "num_attention_heads": 4,
                        "num_key_value_heads": 2, "head_dim": 32, "sliding_window": 64},
        "vision_config": {**_SIGLIP, "vision_use_head": True}, "mm_tokens_per_image": 16},
    "mllama_cross_layers": {
        "model_type": "mllama", "architectures": ["MllamaForConditionalGeneration"],
        "text_config": {"model_type": "mllama_text_model", "vocab_size": 700, "hidden_size": 128,
                        "intermediate_size": 320, "num_hidden_layers": 5, "num_attention_heads": 4,
                        "num_key_value_heads": 2, "cross_attention_layers": [1, 3], "pad_token_id": 0},
        "vision_config": {"hidden_size": 64, "intermediate_size": 160, "num_hidden_layers": 3,
                          "num_global_layers": 2, "attention_heads": 4, "image_size": 56, "patch_size": 14,
                          "max_num_tiles": 2, "vision_output_dim": 320, "intermediate_layers_indices": [0, 1, 2, 2],
                          "supported_aspect_ratios": [[1, 1], [1, 2], [2, 1]]}},
    "llama4_interleaved_moe_untied": {
        "model_type": "llama4", "architectures": ["Llama4ForConditionalGeneration"],
        "text_config": {"model_type": "llama4_text", "vocab_size": 1100, "hidden_size": 128, "intermediate_size": 96,
                        "intermediate_size_mlp": 320, "num_hidden_layers": 4, "num_attention_heads": 4,
                        "num_key_value_heads": 2, "head_dim": 32, "num_local_experts": 3, "num_experts_per_tok": 1,
                        "interleave_moe_layer_step": 2, "max_position_embeddings": 4096, "use_qk_norm": True,
                        "no_rope_layers": [1, 1, 0, 1], "attention_chunk_size": 64},
        "vision_config": {"model_type": "llama4_vision_model", "hidden_size": 64, "intermediate_size": 160,
                          "num_hidden_layers": 2, "num_attention_heads": 4, "image_size": 56, "patch_size": 14,
                          "pixel_shuffle_ratio": 0.5, "projector_input_dim": 96, "projector_output_dim": 96,
                          "vision_output_dim": 96},
        "tie_word_embeddings": False},
    "t5_gated_uneven_stacks": {
        "model_type": "t5", "architectures": ["T5ForConditionalGeneration"], "vocab_size": 800, "d_model": 96,
        "d_kv": 16, "d_ff": 200, "num_layers": 3, "num_decoder_layers": 2, "num_heads": 4,
        "feed_forward_proj": "gated-gelu", "tie_word_embeddings": False, "relative_attention_num_buckets": 16},
    "whisper_untied": {
        "model_type": "whisper", "architectures": ["WhisperForConditionalGeneration"], "vocab_size": 900,
        "d_model": 96, "encoder_layers": 2, "decoder_layers": 3, "encoder_attention_heads": 4,
        "decoder_attention_heads": 6, "encoder_ffn_dim": 200, "decoder_ffn_dim": 160, "num_mel_bins": 40,
        "max_source_positions": 300, "max_target_positions": 64, "tie_word_embeddings": False,
        "pad_token_id": 0},
}


def count(raw: dict[str, object]) -> int:
    import torch
    import transformers
    from transformers import AutoConfig

    cfg = AutoConfig.for_model(**raw)
    arch = str(raw["architectures"][0])  # type: ignore[index]
    with torch.device("meta"):
        model = getattr(transformers, arch)(cfg)
    return sum(p.numel() for p in model.parameters())


def main() -> None:
    import torch
    import transformers

    out: dict[str, object] = {
        "_about": (f"Unseen multimodal and encoder-decoder configs counted by transformers {transformers.__version__} "
                   f"(torch {torch.__version__}) on the meta device with the *ForConditionalGeneration class: "
                   "sum(p.numel() for p in model.parameters()). Generated by tests/architectures/multimodal_cases.py."),
    }
    for name, raw in CASES.items():
        out[name] = {"config": raw, "params_total": count(raw)}
        print(name, out[name]["params_total"], file=sys.stderr)  # type: ignore[index]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
