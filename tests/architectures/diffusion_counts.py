"""Count the parameters of the diffusion components the registry ships, from their published configs.

Not run by the test suite (needs torch, transformers and diffusers, which AnchorGPU never depends on).
The component configs below carry the shape fields of the published ``*/config.json`` files of each
pipeline repository; the counts go into ``src/anchorgpu/architectures/data/diffusion/*.toml``:

    /tmp/tfvenv/bin/pip install diffusers
    /tmp/tfvenv/bin/python tests/architectures/diffusion_counts.py
"""

from __future__ import annotations

import json
from typing import Any

CLIP_L = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
          "max_position_embeddings": 77, "vocab_size": 49408, "projection_dim": 768, "hidden_act": "quick_gelu"}
CLIP_G = {"hidden_size": 1280, "intermediate_size": 5120, "num_hidden_layers": 32, "num_attention_heads": 20,
          "max_position_embeddings": 77, "vocab_size": 49408, "projection_dim": 1280, "hidden_act": "gelu"}
T5_XXL = {"d_model": 4096, "d_ff": 10240, "d_kv": 64, "num_heads": 64, "num_layers": 24, "vocab_size": 32128,
          "feed_forward_proj": "gated-gelu", "relative_attention_num_buckets": 32, "relative_attention_max_distance": 128,
          "tie_word_embeddings": False}
VAE_SD = {"block_out_channels": [128, 256, 512, 512], "down_block_types": ["DownEncoderBlock2D"] * 4,
          "up_block_types": ["UpDecoderBlock2D"] * 4, "in_channels": 3, "out_channels": 3, "layers_per_block": 2,
          "norm_num_groups": 32, "act_fn": "silu"}
SDXL_UNET = {"act_fn": "silu", "addition_embed_type": "text_time", "addition_embed_type_num_heads": 64,
             "addition_time_embed_dim": 256, "attention_head_dim": [5, 10, 20], "block_out_channels": [320, 640, 1280],
             "cross_attention_dim": 2048, "down_block_types": ["DownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D"],
             "in_channels": 4, "layers_per_block": 2, "norm_num_groups": 32, "out_channels": 4,
             "projection_class_embeddings_input_dim": 2816, "sample_size": 128, "transformer_layers_per_block": [1, 2, 10],
             "up_block_types": ["CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"], "use_linear_projection": True}
SD35_LARGE = {"attention_head_dim": 64, "caption_projection_dim": 2432, "in_channels": 16, "joint_attention_dim": 4096,
              "num_attention_heads": 38, "num_layers": 38, "out_channels": 16, "patch_size": 2, "pooled_projection_dim": 2048,
              "pos_embed_max_size": 192, "qk_norm": "rms_norm", "sample_size": 128}
SD35_MEDIUM = {"attention_head_dim": 64, "caption_projection_dim": 1536, "in_channels": 16, "joint_attention_dim": 4096,
               "num_attention_heads": 24, "num_layers": 24, "out_channels": 16, "patch_size": 2, "pooled_projection_dim": 2048,
               "pos_embed_max_size": 384, "qk_norm": "rms_norm", "sample_size": 128,
               "dual_attention_layers": list(range(13))}
FLUX = {"attention_head_dim": 128, "in_channels": 64, "joint_attention_dim": 4096, "num_attention_heads": 24, "num_layers": 19,
        "num_single_layers": 38, "patch_size": 1, "pooled_projection_dim": 768, "axes_dims_rope": [16, 56, 56]}


def _count(module: Any) -> int:
    return sum(p.numel() for p in module.parameters())


def counts() -> dict[str, int]:
    import torch
    from diffusers import AutoencoderKL, FluxTransformer2DModel, SD3Transformer2DModel, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection, T5Config, T5EncoderModel

    with torch.device("meta"):
        return {
            "clip-l (CLIPTextModel)": _count(CLIPTextModel(CLIPTextConfig(**CLIP_L))),
            "clip-l (CLIPTextModelWithProjection)": _count(CLIPTextModelWithProjection(CLIPTextConfig(**CLIP_L))),
            "clip-g (CLIPTextModelWithProjection)": _count(CLIPTextModelWithProjection(CLIPTextConfig(**CLIP_G))),
            "t5-xxl (T5EncoderModel)": _count(T5EncoderModel(T5Config(**T5_XXL))),
            "vae sdxl (4 latent channels)": _count(AutoencoderKL(**VAE_SD, latent_channels=4)),
            "vae sd3/flux (16 latent channels, no quant convs)": _count(
                AutoencoderKL(**VAE_SD, latent_channels=16, use_quant_conv=False, use_post_quant_conv=False)
            ),
            "sdxl unet": _count(UNet2DConditionModel(**SDXL_UNET)),
            "sd3.5-large transformer": _count(SD3Transformer2DModel(**SD35_LARGE)),
            "sd3.5-medium transformer": _count(SD3Transformer2DModel(**SD35_MEDIUM)),
            "flux.1-dev transformer": _count(FluxTransformer2DModel(**FLUX, guidance_embeds=True)),
            "flux.1-schnell transformer": _count(FluxTransformer2DModel(**FLUX, guidance_embeds=False)),
        }


if __name__ == "__main__":
    import diffusers
    import transformers

    print(json.dumps({"diffusers": diffusers.__version__, "transformers": transformers.__version__, **counts()}, indent=1))
