"""Frozen records of a diffusion pipeline: its components (denoiser, text encoders, VAE) and the latent geometry
the planner reads. Pure; stdlib only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = ["DiffusionComponent", "DiffusionPipelineSpec", "DiffusionRole"]

DiffusionRole = Literal["denoiser", "text_encoder", "vae"]


@dataclass(frozen=True, slots=True, kw_only=True)
class DiffusionComponent:
    name: str  # e.g. "transformer", "text_encoder_2", "vae"
    role: DiffusionRole
    architecture: str  # e.g. "FluxTransformer2DModel", "T5EncoderModel", "AutoencoderKL"
    params: int
    hidden_size: int = 0  # denoiser/encoder width, used for activation estimates
    num_layers: int = 0
    max_tokens: int = 0  # text encoders: max prompt tokens
    source: str = ""  # where the parameter count comes from (published config + how it was counted)


@dataclass(frozen=True, slots=True, kw_only=True)
class DiffusionPipelineSpec:
    name: str
    family: str
    components: tuple[DiffusionComponent, ...]
    vae_latent_channels: int
    vae_scale_factor: int  # pixels per latent cell along one side (8 for SD/SDXL/FLUX)
    patch_size: int  # denoiser patchify size on the latent (2 for DiT/FLUX, 1 for UNet)
    default_resolution: tuple[int, int]  # width, height in pixels
    default_steps: int
    vae_scaling_factor: float = 0.0  # latents are multiplied by this before the denoiser (0 = unknown)
    source: str = ""
    notes: tuple[str, ...] = field(default=())

    @property
    def params_total(self) -> int:
        return sum(c.params for c in self.components)

    def latent_shape(self, width_px: int, height_px: int) -> tuple[int, int, int]:
        """(channels, height, width) of the latent for an image of ``width_px × height_px``.

        >>> DiffusionPipelineSpec(name="x", family="x", components=(), vae_latent_channels=16, vae_scale_factor=8,
        ...     patch_size=2, default_resolution=(1024, 1024), default_steps=28).latent_shape(1024, 768)
        (16, 96, 128)
        """
        f = self.vae_scale_factor
        return (self.vae_latent_channels, height_px // f, width_px // f)

    def denoiser_tokens(self, width_px: int, height_px: int) -> int:
        """Image tokens the denoiser sees: latent cells / patch_size² (DiT/FLUX); cells for a UNet."""
        _, h, w = self.latent_shape(width_px, height_px)
        return (h // self.patch_size) * (w // self.patch_size)
