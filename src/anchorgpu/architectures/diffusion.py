"""Diffusion pipelines (SDXL, Stable Diffusion 3.5, FLUX.1) described by their components.

Each ``data/diffusion/NAME.toml`` lists the denoiser, text encoders and VAE with parameter counts
taken from the published component configs (each component names its source) and the latent
geometry the planner needs (latent channels, VAE scale factor, patch size). Pure; stdlib only.
"""

from __future__ import annotations

import tomllib

from anchorgpu.architectures.spec import DiffusionComponent, DiffusionPipelineSpec, DiffusionRole
from anchorgpu.errors import DataFileError

__all__ = ["parse_pipeline"]

_ROLES: tuple[DiffusionRole, ...] = ("denoiser", "text_encoder", "vae")


def _int(row: dict[str, object], key: str, file: str, where: str, *, default: int | None = None) -> int:
    value = row.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise DataFileError(file, where, f"field {key!r} must be a positive integer, got {value!r}")
    return value


def _text(row: dict[str, object], key: str, file: str, where: str) -> str:
    value = row.get(key)
    if not isinstance(value, str) or not value:
        raise DataFileError(file, where, f"field {key!r} must be a non-empty string")
    return value


def _component(row: dict[str, object], file: str, index: int) -> DiffusionComponent:
    where = f"components[{index}]"
    role = _text(row, "role", file, where)
    if role not in _ROLES:
        raise DataFileError(file, where, f"field 'role' must be one of {', '.join(_ROLES)}, got {role!r}")
    return DiffusionComponent(
        name=_text(row, "name", file, where),
        role=role,
        architecture=_text(row, "architecture", file, where),
        params=_int(row, "params", file, where),
        hidden_size=_int(row, "hidden_size", file, where, default=1) if "hidden_size" in row else 0,
        num_layers=_int(row, "num_layers", file, where, default=1) if "num_layers" in row else 0,
        max_tokens=_int(row, "max_tokens", file, where, default=1) if "max_tokens" in row else 0,
        source=_text(row, "source", file, where),
    )


def parse_pipeline(text: str, *, name: str, family: str, file: str) -> DiffusionPipelineSpec:
    """Build a :class:`DiffusionPipelineSpec` from the TOML text of one pipeline file."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DataFileError(file, "?", f"not valid TOML: {exc}") from None
    rows = doc.get("components")
    if not isinstance(rows, list) or not rows:
        raise DataFileError(file, "components", "must list at least one component")
    components = tuple(_component(row, file, i) for i, row in enumerate(rows))
    for role in ("denoiser", "vae"):
        if sum(1 for c in components if c.role == role) != 1:
            raise DataFileError(file, "components", f"must have exactly one {role}")
    resolution = doc.get("default_resolution")
    if (
        not isinstance(resolution, list)
        or len(resolution) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in resolution)
    ):
        raise DataFileError(file, "default_resolution", "must be [width, height] in pixels")
    scaling = doc.get("vae_scaling_factor")
    if not isinstance(scaling, int | float) or isinstance(scaling, bool) or scaling <= 0:
        raise DataFileError(file, "vae_scaling_factor", "must be a positive number")
    notes = doc.get("notes", [])
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        raise DataFileError(file, "notes", "must be a list of strings")
    return DiffusionPipelineSpec(
        name=name,
        family=family,
        components=components,
        vae_latent_channels=_int(doc, "vae_latent_channels", file, "vae_latent_channels"),
        vae_scale_factor=_int(doc, "vae_scale_factor", file, "vae_scale_factor"),
        patch_size=_int(doc, "patch_size", file, "patch_size"),
        default_resolution=(resolution[0], resolution[1]),
        default_steps=_int(doc, "default_steps", file, "default_steps"),
        vae_scaling_factor=float(scaling),
        source=f"registry:{name} [{file}]",
        notes=tuple(notes),
    )
