"""The kernels one decoder layer launches in a decode step, by architecture. Pure; stdlib only.

A step's fixed cost per layer (``per_layer_step_s``, fitted) is what a Llama-style layer costs beyond its reads and
products: kernel launches and the synchronisation between them, which bound one-user speeds. Other architectures
launch more kernels a layer - multi-head latent attention projects through a compressed latent with its own norms,
a mixture of experts routes, sorts and combines its tokens around two grouped products, and shared experts add a
small MLP of their own - so their fixed cost is the fitted one scaled by the ratio of the kernels their layers launch
to a Llama layer's. The counts are stated in ``data/calibration.json`` (``kernel_launches_per_layer``) with the engine
code they were read from; none of them is fitted.
"""

from __future__ import annotations

from dataclasses import dataclass

from anchorgpu.architectures.spec import ModelSpec

__all__ = ["LayerLaunches", "launch_ratio", "launches_per_layer"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LayerLaunches:
    """Kernels a decode step launches per block of a layer (the all-reduces are timed apart, with their latency)."""

    attention: int = 5  # norm, fused QKV product, rotary, attention, output product (a recurrent mixer alike)
    mla_attention: int = 10  # norm, fused q_a/kv_a product, two latent norms, q_b product, rotary, two absorbed
    # products around the attention, output product
    mlp: int = 4  # norm, fused gate/up product, activation, down product
    moe: int = 8  # norm, router product, top-k, token sort, two grouped products, activation, combine
    shared_experts: int = 3  # fused gate/up product, activation, down product

    @property
    def reference(self) -> int:
        """A Llama layer's: GQA attention and a dense MLP, what ``per_layer_step_s`` is fitted on."""
        return self.attention + self.mlp


def launches_per_layer(model: ModelSpec, launches: LayerLaunches) -> float:
    """The kernels an average layer of ``model`` launches in a decode step.

    >>> from anchorgpu.architectures import load_model
    >>> counts = LayerLaunches()
    >>> launches_per_layer(load_model("llama-3.1-8b"), counts), launches_per_layer(load_model("qwen3-30b-a3b"), counts)
    (9.0, 13.0)
    >>> round(launches_per_layer(load_model("deepseek-r1"), counts), 2)  # 3 dense layers, 58 with routed + shared
    20.66
    """
    attention = launches.mla_attention if model.mla is not None else launches.attention
    moe = model.moe
    if moe is None:
        return float(attention + launches.mlp)
    moe_block = launches.moe + (launches.shared_experts if moe.num_shared_experts else 0)
    dense_layers = model.num_layers - moe.num_moe_layers
    return attention + (moe.num_moe_layers * moe_block + dense_layers * launches.mlp) / model.num_layers


def launch_ratio(model: ModelSpec, launches: LayerLaunches) -> float:
    """How many times a Llama layer's fixed cost one layer of ``model`` costs: 1.0 for a Llama-style dense model.

    >>> from anchorgpu.architectures import load_model
    >>> launch_ratio(load_model("llama-3.1-70b"), LayerLaunches()), round(launch_ratio(load_model("gpt-oss-120b"),
    ...                                                                                 LayerLaunches()), 3)
    (1.0, 1.444)
    """
    return launches_per_layer(model, launches) / launches.reference
