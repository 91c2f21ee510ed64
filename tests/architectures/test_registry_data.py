"""The registry and diffusion data files: every row valid, bad rows named by file and row."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import DiffusionPipelineSpec, load_model, model_infos
from anchorgpu.architectures.diffusion import parse_pipeline
from anchorgpu.architectures.registry import REGISTRY_FILE, _parse
from anchorgpu.errors import DataFileError

GOOD_PIPELINE = """
vae_latent_channels = 16
vae_scale_factor = 8
vae_scaling_factor = 0.3611
patch_size = 2
default_resolution = [1024, 768]
default_steps = 28
[[components]]
name = "transformer"
role = "denoiser"
architecture = "X"
params = 100
source = "test"
[[components]]
name = "vae"
role = "vae"
architecture = "AutoencoderKL"
params = 10
source = "test"
"""


def test_every_row_has_a_family_display_name_and_an_existing_file() -> None:
    for info in model_infos():
        assert info.display_name and info.family and info.file.startswith(("models/", "diffusion/"))
        assert info.name == info.name.lower()


def test_rows_may_not_share_names_or_aliases() -> None:
    doc = {"schema_version": 1, "models": {
        "a": {"file": "models/a.json", "display_name": "A", "family": "F", "aliases": ["x"]},
        "b": {"file": "models/b.json", "display_name": "B", "family": "F", "aliases": ["X"]},
    }}
    from anchorgpu.architectures.registry import _index

    with pytest.raises(DataFileError, match=rf"^{REGISTRY_FILE}, row b: name or alias 'x' is also used by 'a'$"):
        _index(_parse(doc))


@pytest.mark.parametrize(
    ("doc", "row", "reason"),
    [
        ({"schema_version": 2}, "schema_version", "must be 1"),
        ({"schema_version": 1, "models": {"a": {"display_name": "A", "family": "F"}}}, "a", "field 'file'"),
        ({"schema_version": 1, "models": {"A": {"file": "f", "display_name": "A", "family": "F"}}}, "A", "lower-case"),
        ({"schema_version": 1, "models": {"a": {"file": "f", "display_name": "A", "family": "F", "aliases": "x"}}}, "a", "aliases"),
    ],
)
def test_a_bad_registry_row_is_named(doc: dict[str, object], row: str, reason: str) -> None:
    with pytest.raises(DataFileError) as info:
        _parse(doc)
    assert str(info.value).startswith(f"{REGISTRY_FILE}, row {row}: ") and reason in str(info.value)


def test_a_pipeline_file_builds_a_spec_with_latent_geometry() -> None:
    spec = parse_pipeline(GOOD_PIPELINE, name="p", family="F", file="diffusion/p.toml")
    assert spec.params_total == 110
    assert spec.latent_shape(1024, 768) == (16, 96, 128)
    assert spec.denoiser_tokens(1024, 768) == 48 * 64


@pytest.mark.parametrize(
    ("edit", "where"),
    [
        (('role = "vae"', 'role = "decoder"'), "components[1]"),
        (("params = 100", "params = -1"), "components[0]"),
        (("default_resolution = [1024, 768]", "default_resolution = [1024]"), "default_resolution"),
        (('role = "vae"', 'role = "text_encoder"'), "components"),
        (("vae_scale_factor = 8", "vae_scale_factor = 0"), "vae_scale_factor"),
        (("default_steps = 28", "default_steps = 28\n[oops"), "?"),
    ],
)
def test_a_bad_pipeline_file_names_file_and_row(edit: tuple[str, str], where: str) -> None:
    text = GOOD_PIPELINE.replace(*edit)
    with pytest.raises(DataFileError) as info:
        parse_pipeline(text, name="p", family="F", file="diffusion/p.toml")
    assert str(info.value).startswith(f"diffusion/p.toml, row {where}: ")


@pytest.mark.parametrize(
    ("name", "latent_channels", "denoiser_params"),
    [
        # Counts from the published component configs, computed by diffusers 0.42.1 on the meta device
        # (tests/architectures/diffusion_counts.py): SDXL UNet 2.57 B, SD3.5 Large MMDiT 8.06 B, FLUX.1-dev 11.9 B.
        ("sdxl-base-1.0", 4, 2567463684),
        ("sd-3.5-large", 16, 8056627520),
        ("sd-3.5-medium", 16, 2243171520),
        ("flux.1-dev", 16, 11901408320),
        ("flux.1-schnell", 16, 11891178560),
    ],
)
def test_pipelines_carry_their_published_component_counts(name: str, latent_channels: int, denoiser_params: int) -> None:
    spec = load_model(name)
    assert isinstance(spec, DiffusionPipelineSpec)
    assert spec.vae_latent_channels == latent_channels and spec.vae_scale_factor == 8
    denoiser = [c for c in spec.components if c.role == "denoiser"]
    assert len(denoiser) == 1 and denoiser[0].params == denoiser_params
    assert all(c.source for c in spec.components)


def test_flux_dev_and_schnell_differ_only_by_the_guidance_embedder() -> None:
    dev, schnell = load_model("flux.1-dev"), load_model("flux.1-schnell")
    # TimestepEmbedding(256 → 3072 → 3072) with biases: 256·3072 + 3072 + 3072·3072 + 3072
    assert dev.params_total - schnell.params_total == 256 * 3072 + 3072 + 3072 * 3072 + 3072
