"""The kernels one decoder layer launches in a decode step, by architecture. Pure; stdlib only.

A step's fixed cost per layer (``per_layer_step_s``, fitted) is what a Llama-style layer costs beyond its reads and
products: kernel launches and the synchronisation between them, which bound one-user speeds. Other architectures
launch more kernels a layer - multi-head latent attention projects through a compressed latent with its own norms,
a mixture of experts routes, sorts and combines its tokens around two grouped products, and shared experts add a
small MLP of their own - so their fixed cost is the fitted one scaled by the ratio of the kernels their layers launch
to a Llama layer's. A checkpoint whose weights are FP8 in blocks (DeepSeek's 128 x 128 recipe) adds one more kernel
before each of a layer's products: the engines quantise its input per 128-value group first (vLLM's and SGLang's
``apply_w8a8_block_fp8_linear`` calls ``per_token_group_quant_fp8``, then the block-scaled product; their fused MoE
does the same before each grouped product). An engine that keeps MLA's two absorbed latent products' weights in FP8
and dequantises them to 16 bit at every step (SGLang on ROCm: :func:`absorbed_dequant_bytes`) launches two more
kernels before each of them, a cast and a scale. The counts are stated in ``data/calibration.json``
(``kernel_launches_per_layer``) with the engine code they were read from; none of them is fitted.
"""

from __future__ import annotations

from dataclasses import dataclass

from anchorgpu.architectures.spec import ModelSpec

__all__ = ["DEQUANT_BYTES_PER_VALUE", "LayerLaunches", "absorbed_dequant_bytes", "fuses_norms_into_allreduce",
           "is_block_fp8", "launch_ratio", "launches_per_layer"]

DEQUANT_BYTES_PER_VALUE = 2 + 2 + 2 + 2
"""Bytes a weight of an absorbed latent product moves beyond its one FP8 byte when the engine dequantises it every
step (``torch.bmm(x, w.to(torch.bfloat16) * w_scale)``): the cast writes it in BF16 (2), the scale reads and writes
it (2 + 2), the product reads it (2) where it would have read the FP8 byte the weights are counted at."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LayerLaunches:
    """Kernels a decode step launches per block of a layer (the all-reduces are timed apart, with their latency)."""

    attention: int = 5  # norm, fused QKV product, rotary, attention, output product (a recurrent mixer alike)
    mla_attention: int = 10  # norm, fused q_a/kv_a product, two latent norms, q_b product, rotary, two absorbed
    # products around the attention, output product
    mlp: int = 4  # norm, fused gate/up product, activation, down product
    moe: int = 8  # norm, router product, top-k, token sort, two grouped products, activation, combine
    shared_experts: int = 3  # fused gate/up product, activation, down product
    # products per block whose input a block-scaled FP8 checkpoint quantises first, and the kernels that takes
    attention_products: int = 2  # fused QKV, output
    mla_attention_products: int = 3  # fused q_a/kv_a, q_b, output (the absorbed latent products stay 16-bit)
    mlp_products: int = 2  # fused gate/up, down
    moe_products: int = 2  # the two grouped products
    shared_experts_products: int = 2  # fused gate/up, down
    block_fp8_quant: int = 1  # per_token_group_quant_fp8 before each product
    mla_absorbed_dequant: int = 4  # FP8 absorbed weights dequantised every step: a cast and a scale before each of
    # the two absorbed latent products (SGLang on ROCm)
    allreduce_fused_norms: int = 2  # norms an engine that fuses residual add + RMSNorm into a layer's two TP
    # all-reduces no longer launches (TensorRT-LLM: AllReduceFusionOp.RESIDUAL_RMS_NORM), the attention's and the MLP's

    @property
    def reference(self) -> int:
        """A Llama layer's: GQA attention and a dense MLP, what ``per_layer_step_s`` is fitted on."""
        return self.attention + self.mlp


def launches_per_layer(model: ModelSpec, launches: LayerLaunches, *, block_fp8: bool = False,
                       absorbed_dequant: bool = False, norms_in_allreduce: bool = False) -> float:
    """The kernels an average layer of ``model`` launches in a decode step; ``block_fp8``: its weights are FP8 in
    blocks, so each product's input is quantised by a kernel of its own first; ``absorbed_dequant``: the engine
    dequantises MLA's absorbed latent weights every step (no effect on a model without MLA); ``norms_in_allreduce``:
    the engine runs each block's RMSNorm inside the TP all-reduce before it (:func:`fuses_norms_into_allreduce`), so
    a layer launches ``allreduce_fused_norms`` kernels fewer.

    >>> from anchorgpu.architectures import load_model
    >>> counts = LayerLaunches()
    >>> launches_per_layer(load_model("llama-3.1-8b"), counts), launches_per_layer(load_model("qwen3-30b-a3b"), counts)
    (9.0, 13.0)
    >>> r1 = load_model("deepseek-r1")  # 3 dense layers, 58 with routed + shared experts
    >>> round(launches_per_layer(r1, counts), 2), round(launches_per_layer(r1, counts, block_fp8=True), 2)
    (20.66, 27.56)
    >>> round(launches_per_layer(r1, counts, block_fp8=True, absorbed_dequant=True), 2)
    31.56
    >>> launches_per_layer(load_model("gpt-oss-120b"), counts, norms_in_allreduce=True)  # 5 + 8 - 2
    11.0
    """
    mla = model.mla is not None
    moe = model.moe
    shared = moe is not None and moe.num_shared_experts > 0
    attention = launches.mla_attention if mla else launches.attention
    if mla and absorbed_dequant:
        attention += launches.mla_absorbed_dequant
    mlp = launches.mlp
    moe_block = launches.moe + (launches.shared_experts if shared else 0)
    if block_fp8:  # a quantisation kernel before each product
        quant = launches.block_fp8_quant
        attention += quant * (launches.mla_attention_products if mla else launches.attention_products)
        mlp += quant * launches.mlp_products
        moe_block += quant * (launches.moe_products + (launches.shared_experts_products if shared else 0))
    if norms_in_allreduce:  # every layer's two all-reduces each carry the norm after them
        attention -= launches.allreduce_fused_norms
    if moe is None:
        return float(attention + mlp)
    dense_layers = model.num_layers - moe.num_moe_layers
    return attention + (moe.num_moe_layers * moe_block + dense_layers * mlp) / model.num_layers


def launch_ratio(model: ModelSpec, launches: LayerLaunches, *, block_fp8: bool = False,
                 absorbed_dequant: bool = False, norms_in_allreduce: bool = False) -> float:
    """How many times a Llama layer's fixed cost one layer of ``model`` costs: 1.0 for a Llama-style dense model in
    16-bit or per-tensor FP8 (what ``per_layer_step_s`` is fitted on).

    >>> from anchorgpu.architectures import load_model
    >>> launch_ratio(load_model("llama-3.1-70b"), LayerLaunches()), round(launch_ratio(load_model("gpt-oss-120b"),
    ...                                                                                 LayerLaunches()), 3)
    (1.0, 1.444)
    """
    return launches_per_layer(model, launches, block_fp8=block_fp8, absorbed_dequant=absorbed_dequant,
                              norms_in_allreduce=norms_in_allreduce) / launches.reference


def absorbed_dequant_bytes(model: ModelSpec, tp: int) -> float:
    """Bytes one GPU moves a decode step, beyond the weights' own read, where the engine keeps MLA's absorbed latent
    weights (``w_kc``, ``w_vc``: ``kv_b_proj`` split per head) in FP8 and dequantises them to BF16 before each
    product, every step: :data:`DEQUANT_BYTES_PER_VALUE` a weight, whatever the batch (0.0 without MLA).

    SGLang on ROCm does (sgl-project/sglang ``python/sglang/srt/models/deepseek_v2.py``, commits 00114aef and
    3e4a39ee, either side of v0.5.2: ``post_load_weights`` requantises a block-FP8 ``kv_b_proj`` to one FP8 scale
    with ``block_quant_to_tensor_quant`` where the GPU is not CUDA, and ``forward_absorb_prepare`` / ``_core`` run
    ``torch.bmm(q_nope.to(torch.bfloat16).transpose(0, 1), self.w_kc.to(torch.bfloat16) * self.w_scale)`` under
    ``_is_hip``, "TODO(haishaw): add bmm_fp8 to ROCm", and the same for ``w_vc``; on CUDA the block-FP8 weight is
    dequantised once at load, ``block_quant_dequant``, and the product reads it as it is).

    >>> from anchorgpu.architectures import load_model
    >>> round(absorbed_dequant_bytes(load_model("deepseek-r1"), 8) / 1e9, 3)  # 61 layers x 16 heads x 256 x 512 x 8
    1.023
    >>> absorbed_dequant_bytes(load_model("llama-3.1-8b"), 8)
    0.0
    """
    mla = model.mla
    if mla is None:
        return 0.0
    values = model.num_attention_heads * (mla.qk_nope_head_dim + mla.v_head_dim) * mla.kv_lora_rank
    return float(model.attention_layers * values * DEQUANT_BYTES_PER_VALUE) / tp


def is_block_fp8(weights: str | None) -> bool:
    """Weights FP8 in blocks (``fp8-block128x128``, DeepSeek's recipe), whose products quantise their input first.

    >>> is_block_fp8("fp8-block128x128"), is_block_fp8("fp8"), is_block_fp8(None)
    (True, False, False)
    """
    return bool(weights) and str(weights).startswith("fp8-block")


def fuses_norms_into_allreduce(model: ModelSpec, engine: str, tp: int, *, attention_dp: bool = False) -> bool:
    """Whether ``engine`` runs a layer's two RMSNorms inside its TP all-reduces (residual add + norm in the
    all-reduce kernel): TensorRT-LLM's PyTorch backend under TP without attention data parallelism, read for
    gpt-oss (NVIDIA/TensorRT-LLM ``tensorrt_llm/_torch/models/modeling_gpt_oss.py`` @ 050b6cb:
    ``TransformerBlock.forward_tp`` calls ``AllReduce`` with ``AllReduceFusionOp.RESIDUAL_RMS_NORM`` carrying
    ``post_attention_layernorm`` and then ``next_layer_layernorm``; ``forward_normal``, under TP 1 or attention DP,
    runs both norms apart) and Llama (``modeling_llama.py``: ``PRE_MLP_FUSION``/``POST_MLP_FUSION`` on
    ``mapping.has_tp() and not enable_attention_dp``). Not for MLA (DeepSeek's layers fuse only for some formats)
    nor another engine, whose counts :class:`LayerLaunches` states.

    >>> from anchorgpu.architectures import load_model
    >>> oss = load_model("gpt-oss-120b")
    >>> fuses_norms_into_allreduce(oss, "trtllm", 8), fuses_norms_into_allreduce(oss, "trtllm", 1)
    (True, False)
    >>> fuses_norms_into_allreduce(oss, "vllm", 8), fuses_norms_into_allreduce(oss, "trtllm", 2, attention_dp=True)
    (False, False)
    """
    return engine == "trtllm" and tp > 1 and not attention_dp and model.mla is None
