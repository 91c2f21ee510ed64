"""Hand-built models and GPUs for the accuracy tests: the configurations the papers measured.

Parameter counts follow the architectures' published shapes (each builder names its source). GPU figures
are datasheet values (``/work/shared/reference/gpu_specs.md``); A100 40GB, which our catalog does not rent,
is built from NVIDIA's A100 datasheet (1,555 GB/s, 312 TFLOP/s dense BF16/FP16, NVLink 600 GB/s).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from anchorgpu.architectures.spec import ModelSpec, ParamBreakdown
from anchorgpu.hardware.spec import GpuSpec, Peak

ModelFactory = Callable[..., ModelSpec]


def build_model(
    *, name: str, layers: int, hidden: int, heads: int, vocab: int, kv_heads: int | None = None,
    ffn: int | None = None, gated: bool = False, tied: bool = False, learned_positions: int = 0,
    biases: bool = True, context: int = 4096,
) -> ModelSpec:
    """A dense decoder-only transformer with exact parameter counts for its shape.

    GPT-style (``gated=False``): per layer ``4h^2 + 4h`` attention, ``2*h*ffn + ffn + h`` MLP, two LayerNorms
    (``4h``): ``12h^2 + 13h`` for ffn = 4h (Narayanan et al. 2021, eq. 2). Llama-style (``gated=True``,
    ``biases=False``): q, o of ``h^2``, k, v of ``h*kv*d``, three MLP matrices ``3*h*ffn``, RMSNorms ``2h``.
    """
    kv = kv_heads or heads
    d = hidden // heads
    ffn = ffn or 4 * hidden
    attention = 2 * hidden * hidden + 2 * hidden * kv * d + ((2 * hidden + 2 * kv * d) if biases else 0)
    mlp = (3 if gated else 2) * hidden * ffn + ((ffn + hidden) if biases else 0)
    norms = (4 if biases else 2) * hidden
    params = ParamBreakdown(
        embeddings=vocab * hidden, position_embeddings=learned_positions * hidden,
        attention=layers * attention, mlp=layers * mlp, experts=0, shared_experts=0, router=0,
        norms=layers * norms + (2 if biases else 1) * hidden, head=0 if tied else vocab * hidden,
    )
    return ModelSpec(
        name=name, model_type="llama" if gated else "gpt2", family=name, num_layers=layers, hidden_size=hidden,
        intermediate_size=ffn, num_attention_heads=heads, num_kv_heads=kv, head_dim=d, vocab_size=vocab,
        max_context_tokens=context, tie_word_embeddings=tied, attention_kind="mha" if kv == heads else "gqa",
        gated_mlp=gated, params=params, params_active=params.total, linear_groups=(),
        layer_windows=(None,) * layers,
    )


def build_gpu(
    *, name: str, bf16_tflops: float, bandwidth_tb_s: float, memory_gb: int, fp8_tflops: float | None = None,
    nvlink_gb_s: float | None = None, domain: int = 8, pcie_gb_s: float = 64,
) -> GpuSpec:
    peaks = {
        "bf16": Peak(status="known", flops_per_s=bf16_tflops * 1e12),
        "fp8": Peak(status="known", flops_per_s=fp8_tflops * 1e12) if fp8_tflops else Peak(status="absent"),
        "fp4": Peak(status="absent"),
    }
    return GpuSpec(
        name=name, display_name=name, aliases=(), vendor="NVIDIA", architecture="", form_factor="SXM",
        memory_bytes=memory_gb * 10**9, memory_headline=f"{memory_gb} GB", memory_unit="GB", memory_type="HBM",
        memory_bandwidth_bytes_per_s=bandwidth_tb_s * 1e12, peaks=peaks, fp8_hardware=fp8_tflops is not None,
        fp4_hardware=False, interconnect="NVLink" if nvlink_gb_s else "none (PCIe only)",
        interconnect_bandwidth_bytes_per_s=nvlink_gb_s * 1e9 if nvlink_gb_s else None, pcie_gen="Gen4 x16",
        pcie_bandwidth_bytes_per_s=pcie_gb_s * 1e9, tdp_w=None, compute_capability=None, rocm_gfx_target=None,
        partitioning="", sources=("NVIDIA datasheet",), scaleup_domain_gpus=domain if nvlink_gb_s else 1,
    )


@pytest.fixture(scope="session")
def model() -> ModelFactory:
    return build_model


@pytest.fixture(scope="session")
def gpus() -> dict[str, GpuSpec]:
    """Datasheet GPUs (dense figures; gpu_specs.md section 2 and NVIDIA's A100 datasheet for the 40GB part)."""
    return {
        "a100-40gb": build_gpu(name="a100-40gb", bf16_tflops=312, bandwidth_tb_s=1.555, memory_gb=40, nvlink_gb_s=600),
        "a100-80gb": build_gpu(name="a100-80gb", bf16_tflops=312, bandwidth_tb_s=2.039, memory_gb=80, nvlink_gb_s=600),
        "h100-sxm": build_gpu(name="h100-sxm", bf16_tflops=989, fp8_tflops=1979, bandwidth_tb_s=3.35, memory_gb=80,
                              nvlink_gb_s=900),
    }
