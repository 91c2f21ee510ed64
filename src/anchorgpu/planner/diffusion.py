"""Memory terms of a diffusion pipeline (text encoders, denoiser, VAE), per GPU, in bytes. Pure.

A pipeline runs in phases: encode the prompt, denoise for N steps, decode the latent with the VAE.
Memory peaks in the denoising phase (denoiser activations) or in the VAE decode, whichever is larger;
the VAE decode peak scales with output pixels × images and is bounded by tiling (formulas.md item 11).
"""

from __future__ import annotations

import math

from anchorgpu.architectures.spec import DiffusionComponent, DiffusionPipelineSpec
from anchorgpu.planner.formats import WeightFormat

__all__ = [
    "DENOISER_BYTES_PER_TOKEN_HIDDEN",
    "VAE_DECODE_BYTES_PER_PIXEL",
    "VAE_TILE_PIXELS",
    "component_bytes",
    "denoiser_activation_bytes",
    "denoiser_tokens",
    "uses_cfg_batch",
    "vae_decode_bytes",
]

VAE_DECODE_BYTES_PER_PIXEL = 128 * 2 * 19
"""Live bytes per output pixel while the VAE decodes: about 19 full-resolution feature maps of 128 bf16
channels (up-block convolutions, group-norm and residual copies). Calibrated on the FLUX.1-dev figures
(published_figures.md D: peak − loaded 4.5-5.2 GiB at 1024×1024, one image): 4,864 B/px → 4.75 GiB."""

VAE_TILE_PIXELS = 512 * 512
"""With tiling the VAE decodes 512×512-pixel tiles one at a time (diffusers ``enable_tiling``)."""

DENOISER_BYTES_PER_TOKEN_HIDDEN = 2 * 12
"""One transformer block's transients per token: q, k, v, attention output, 4h MLP and residuals,
about 12 hidden-sized bf16 tensors (inference keeps no activations across blocks)."""


def component_bytes(component: DiffusionComponent, fmt: WeightFormat) -> int:
    """Resident bytes of one component: the denoiser in ``fmt`` (all its weights at the format's linear
    bits, an approximation: its norms and embeddings are a fraction of a percent), text encoders and
    VAE in 16 bit (quantization backends in diffusers target the denoiser first).

    >>> from anchorgpu.architectures.spec import DiffusionComponent
    >>> from anchorgpu.planner.formats import get_format
    >>> component_bytes(DiffusionComponent(name="vae", role="vae", architecture="AutoencoderKL", params=10),
    ...                 get_format("nf4"))
    20
    """
    if component.role == "denoiser":
        return math.ceil(component.params * fmt.linear_bits / 8)
    return component.params * 2


def uses_cfg_batch(pipeline: DiffusionPipelineSpec) -> bool:
    """Classifier-free guidance doubles the denoiser batch; FLUX.1 is guidance-distilled and does not."""
    return "flux" not in (pipeline.family + " " + pipeline.name).lower()


def denoiser_tokens(pipeline: DiffusionPipelineSpec, *, width: int, height: int) -> int:
    """Image tokens (latent cells / patch²) plus text tokens joined into attention (FLUX/SD3 MMDiT).

    FLUX.1 at 1024×1024: (1024/8/2)² = 4,096 image tokens + 512 T5 tokens.
    """
    cell = pipeline.vae_scale_factor * pipeline.patch_size
    image_tokens = math.ceil(width / cell) * math.ceil(height / cell)
    text_tokens = max((c.max_tokens for c in pipeline.components if c.role == "text_encoder"), default=0)
    return image_tokens + text_tokens


def denoiser_activation_bytes(pipeline: DiffusionPipelineSpec, *, width: int, height: int, images: int) -> int:
    """Denoiser peak: images × (2 with CFG) × tokens × hidden × 24 bytes (one block's transients)."""
    denoiser = next((c for c in pipeline.components if c.role == "denoiser"), None)
    hidden = denoiser.hidden_size if denoiser is not None and denoiser.hidden_size else 2048
    batch = images * (2 if uses_cfg_batch(pipeline) else 1)
    tokens = denoiser_tokens(pipeline, width=width, height=height)
    return batch * tokens * hidden * DENOISER_BYTES_PER_TOKEN_HIDDEN


def vae_decode_bytes(*, width: int, height: int, images: int, tiling: bool) -> int:
    """VAE decode peak: pixels × images × 4,864 B without tiling; one 512×512 tile at a time with tiling
    (plus the decoded images, 3 channels × 2 bytes per pixel).

    >>> vae_decode_bytes(width=1024, height=1024, images=1, tiling=False) / 2**30
    4.75
    """
    pixels = width * height
    if tiling:
        return min(pixels, VAE_TILE_PIXELS) * VAE_DECODE_BYTES_PER_PIXEL + 6 * pixels * images
    return pixels * images * VAE_DECODE_BYTES_PER_PIXEL
