"""Small frozen models and GPUs for the doctests of the speed package. Pure."""

from __future__ import annotations

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.hardware.spec import GpuSpec

__all__ = ["toy_gpu", "toy_model"]


def toy_model() -> ModelSpec:
    """A two-layer dense model for the doctests (h=64, 4 heads of 16, V=100)."""
    from anchorgpu.architectures.spec import ParamBreakdown

    h, layers, vocab = 64, 2, 100
    params = ParamBreakdown(embeddings=vocab * h, position_embeddings=0, attention=layers * 4 * h * h,
                            mlp=layers * 3 * h * 4 * h, experts=0, shared_experts=0, router=0,
                            norms=(2 * layers + 1) * h, head=vocab * h)
    return ModelSpec(
        name="toy", model_type="llama", family="toy", num_layers=layers, hidden_size=h, intermediate_size=4 * h,
        num_attention_heads=4, num_kv_heads=4, head_dim=16, vocab_size=vocab, max_context_tokens=4096,
        tie_word_embeddings=False, attention_kind="mha", gated_mlp=True, params=params,
        params_active=params.total, linear_groups=(), layer_windows=(None,) * layers,
    )


def toy_gpu() -> GpuSpec:
    """An H100-SXM-like GPU for the doctests (989 TFLOP/s BF16, 3.35 TB/s, NVLink 900 GB/s, 8 per board)."""
    from anchorgpu.hardware.spec import Peak

    return GpuSpec(
        name="toy-h100", display_name="toy", aliases=(), vendor="NVIDIA", architecture="Hopper", form_factor="SXM5",
        memory_bytes=80 * 10**9, memory_headline="80 GB", memory_unit="GB", memory_type="HBM3",
        memory_bandwidth_bytes_per_s=3.35e12,
        peaks={"bf16": Peak(status="known", flops_per_s=989e12), "fp8": Peak(status="known", flops_per_s=1979e12),
               "fp4": Peak(status="absent")},
        fp8_hardware=True, fp4_hardware=False, interconnect="NVLink 4", interconnect_bandwidth_bytes_per_s=900e9,
        pcie_gen="Gen5 x16", pcie_bandwidth_bytes_per_s=128e9, tdp_w=700, compute_capability="9.0",
        rocm_gfx_target=None, partitioning="", sources=(), scaleup_domain_gpus=8,
    )
