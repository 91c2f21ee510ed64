"""A mixture of experts' routed experts in a serving step: which experts a step's tokens touch, how many rows each
gets, and what share of the products and weights they are; and in a training step, the host time of launching each
local expert's products, and the bytes an attention-DP all-gather moves a value. Pure. The serving step
(:mod:`anchorgpu.planner.speed.serving`) restates these inline for speed, and its tests hold the two equal."""

from __future__ import annotations

from math import comb
from typing import Literal

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner.formats import WeightFormat
from anchorgpu.planner.speed.flops import MOE_FORWARD_AGAIN, Recompute, TrainKind, forward_matmul_params
from anchorgpu.planner.speed.links import ACTIVATION_BYTES
from anchorgpu.planner.speed.lookup_tables import lookup_table_bytes
from anchorgpu.planner.weight_parts import model_weight_parts

__all__ = ["MoeDispatcher", "dense_layers", "ep_gather_bytes", "expert_gemms_per_layer", "expert_launch_s", "expert_rows_factor",
           "moe_expert_fraction_read", "moe_product_shares", "permutation_bytes",
           "ranks_reached", "routed_rows_per_token_share", "routed_weight_bytes_share_per_gpu", "unfused_expert_bytes", "whole_dense_layers_extra_bytes"]


def moe_expert_fraction_read(model: ModelSpec, batch_tokens: float) -> float:
    """Expected fraction of routed experts a step touches: ``1 - (1 - k/E)^T`` for ``T`` tokens.

    Assumes uniform, independent routing (real routers are skewed, which lowers the fraction).

    >>> from anchorgpu.planner.speed._toys import toy_model
    >>> moe_expert_fraction_read(toy_model(), 64)
    1.0
    """
    if model.moe is None:
        return 1.0
    k, e = model.moe.experts_per_token, model.moe.num_experts
    return float(1.0 - (1.0 - k / e) ** max(batch_tokens, 1.0))


def expert_rows_factor(tokens: float, route_share: float, half_tokens: float, tile_rows: float = 0.0) -> float:
    """How much longer the routed experts' products take than at full efficiency. The step's ``tokens * k`` routed
    copies go to the experts they touch, a share ``f = 1 - (1 - k/E)^tokens`` of them (:func:`moe_expert_fraction_read`),
    so each expert that runs gets ``rows = tokens * k / (E * f)`` rows - at least one - and reaches
    ``rows / (rows + half_tokens)`` of its efficiency (1 without a MoE, without tokens or with ``half_tokens`` 0). With
    many tokens ``f`` is 1 and every expert gets ``tokens * k / E``; one token's experts get one row each, not the
    fraction of a row an average over all ``E`` experts would give them. Below ``tile_rows`` (one tile of the grouped
    product) an expert runs one tile whatever its rows, and reading its weights - the memory term - is what it
    costs, so the falloff stops at the tile's.

    >>> expert_rows_factor(2048, 8 / 128, 128.0)  # 128 rows an expert: half the efficiency, twice the time
    2.0
    >>> expert_rows_factor(1, 8 / 128, 128.0)  # one token: each of its 8 experts gets one row
    129.0
    >>> expert_rows_factor(1, 8 / 128, 128.0, tile_rows=16.0)  # ...which run one 16-row tile each
    9.0
    >>> expert_rows_factor(2048, 8 / 128, 0.0), expert_rows_factor(0, 8 / 128, 128.0)
    (1.0, 1.0)
    """
    rows = tokens * route_share
    if rows <= 0 or half_tokens <= 0:
        return 1.0
    touched = 1.0 - (1.0 - route_share) ** (tokens if tokens >= 1.0 else 1.0)
    if rows < tile_rows * touched:  # fewer rows per touched expert than one tile
        return float(1.0 + half_tokens / tile_rows)
    return float(1.0 + half_tokens * touched / rows)


def moe_product_shares(model: ModelSpec) -> tuple[float, float]:
    """(expert share, route share) of a mixture of experts, (0.0, 0.0) for a dense model: the active routed
    experts' share of the products a token passes, and ``k / E``, the share of a step's tokens each routed expert
    gets (what :func:`expert_rows_factor` divides into rows). The serving step and the sweep both read them here."""
    moe = model.moe
    if moe is None:
        return 0.0, 0.0
    route = moe.experts_per_token / moe.num_experts
    return model.params.experts * moe.experts_per_token / moe.num_experts / forward_matmul_params(model), route


def routed_weight_bytes_share_per_gpu(model: ModelSpec, fmt: WeightFormat, *, tp: int, ep: int) -> float:
    """The routed experts' share of the weight BYTES one GPU streams a serving step in ``fmt`` (what the step scales by
    the experts it touches): the experts' bytes split over ``ep`` GPUs (over TP when ``ep`` is 1; over TP too when
    ``ep`` is smaller than TP, each of the ``E / ep`` experts a GPU holds split ``tp / ep`` ways as the engines split
    them: :func:`~anchorgpu.planner.memory.serving_expert_tp`), the rest's over TP (0.0 for a dense model). The rest
    is what the step reads beside the experts: the tables it only gathers rows from are not in it
    (:func:`~anchorgpu.planner.speed.lookup_tables.lookup_table_bytes`: an untied token embedding). Bytes, not
    parameters: a format that stores the experts apart (gpt-oss's MXFP4 experts at 4.25 bits, padded to 3,072 wide,
    beside 16-bit attention and LM head; an FP8 or FP4 format's 16-bit head) gives them a smaller share of the bytes
    than of the parameters (:func:`~anchorgpu.planner.weight_parts.model_weight_parts`).

    >>> from anchorgpu.architectures import load_model
    >>> from anchorgpu.planner.formats import format_for_model
    >>> m = load_model("gpt-oss-120b")  # read: 0.986 of the parameters, 0.953 of the MXFP4 bytes (all: 0.981, 0.937)
    >>> round(routed_weight_bytes_share_per_gpu(m, format_for_model(m, "bf16"), tp=1, ep=1), 3)
    0.986
    >>> round(routed_weight_bytes_share_per_gpu(m, format_for_model(m, "mxfp4"), tp=1, ep=1), 3)
    0.953
    >>> q = load_model("qwen3-30b-a3b")
    >>> round(routed_weight_bytes_share_per_gpu(q, format_for_model(q, "bf16"), tp=1, ep=8), 3)
    0.747
    >>> [round(routed_weight_bytes_share_per_gpu(q, format_for_model(q, "bf16"), tp=8, ep=e), 3) for e in (1, 4, 8)]
    [0.959, 0.959, 0.959]
    """
    parts = model_weight_parts(model, fmt)
    if model.moe is None or not parts.total:
        return 0.0
    total, experts = parts.total - lookup_table_bytes(model, fmt), parts.experts  # the bytes a step streams
    if ep <= tp:  # split alike: over TP, EP x expert TP covering it when EP is inside TP
        return experts / total
    return experts / ep / (experts / ep + (total - experts) / tp)


def expert_gemms_per_layer(kind: TrainKind = "full", recompute: Recompute = "none") -> int:
    """Products one local expert runs per MoE layer and micro-batch: its two (gate/up and down) forward, their two
    input gradients backward, their two weight gradients when the experts train (not under LoRA, whose experts are
    frozen), and the forward pair again when whole layers or the MoE blocks are recomputed.

    >>> expert_gemms_per_layer(), expert_gemms_per_layer("lora"), expert_gemms_per_layer(recompute="moe")
    (6, 4, 8)
    """
    return 2 + 2 + (2 if kind == "full" else 0) + (2 if recompute in MOE_FORWARD_AGAIN else 0)


def expert_launch_s(model: ModelSpec, ep: int, stage_layers: float, host_s_per_gemm: float, *,
                    kind: TrainKind = "full", recompute: Recompute = "none") -> float:
    """Host time of one micro-batch's routed-expert products on the busiest rank, which the GPU waits for.

    A dropless MoE layer learns how many tokens each of its experts got only on the host (a device-to-host copy
    of the counts, which empties the GPU's queue), and Transformer Engine's grouped product then launches one
    product per local expert (multi-stream cuBLAS; Megatron-LM's DeepSeek-V3 GB200 guide), each with its own
    quantisation and allocations under FP8. So each layer costs ``local experts x products x host seconds per
    product`` beyond its arithmetic, seconds that grow with the experts a GPU holds (``E / ep``; all of them, sliced
    by TP, without EP) and that no bigger micro-batch amortises. ``host_s_per_gemm`` is fitted on MoE training rows
    (calibration ``moe_host_s_per_expert_gemm``); 0 for a dense model.

    >>> from anchorgpu.architectures import load_model
    >>> m = load_model("qwen3-30b-a3b")  # 128 experts in each of 48 layers
    >>> round(expert_launch_s(m, 8, 48, 50e-6), 4)  # EP 8: 16 experts a GPU, 6 products each
    0.2304
    >>> expert_launch_s(load_model("llama-3.1-8b"), 1, 32, 50e-6)
    0.0
    """
    moe = model.moe
    if moe is None or host_s_per_gemm <= 0:
        return 0.0
    local_experts = moe.num_experts / ep
    moe_layers = stage_layers * moe.num_moe_layers / model.num_layers
    return moe_layers * local_experts * expert_gemms_per_layer(kind, recompute) * host_s_per_gemm


def unfused_expert_bytes(model: ModelSpec, counts: dict[str, float], recompute: Recompute = "none") -> float:
    """Bytes one token moves per MoE layer and micro-batch in training outside Megatron-Core's fused kernels: for
    experts whose down (fc2) product carries a bias, ``_apply_bias`` adds it times the routing weight in an eager
    loop over the local experts (``fc2_bias_per_hidden`` bytes a hidden value); for a clamped GLU (``glu_clamp``),
    ``weighted_bias_quick_geglu_impl`` clamps and re-concatenates the fc1 output outside the fused kernel
    (``glu_clamp_per_intermediate`` bytes an intermediate value); each routed copy of the token (top-k) moves them,
    and the forward part again when whole layers or the MoE blocks are recomputed. ``counts``: calibration
    ``moe_unfused_expert_bytes`` (benchmarks/moe_training_findings.md). 0 for a dense model and for experts with
    neither (Qwen3, DeepSeek-V3).

    >>> from anchorgpu.architectures import load_model
    >>> c = {"fc2_bias_per_hidden": 28, "fc2_bias_forward_per_hidden": 12, "glu_clamp_per_intermediate": 36,
    ...      "glu_clamp_forward_per_intermediate": 16}
    >>> unfused_expert_bytes(load_model("gpt-oss-120b"), c)  # k 4 x (28 x 2,880 + 36 x 2,880)
    737280.0
    >>> unfused_expert_bytes(load_model("gpt-oss-120b"), c, "moe")  # k 4 x (40 x 2,880 + 52 x 2,880)
    1059840.0
    >>> unfused_expert_bytes(load_model("qwen3-30b-a3b"), c)
    0.0
    """
    moe = model.moe
    if moe is None or not counts:
        return 0.0
    again = recompute in MOE_FORWARD_AGAIN
    row = 0.0
    if any(g.component == "experts" and g.name == "expert_down" and g.bias for g in model.linear_groups):
        row += model.hidden_size * (counts["fc2_bias_per_hidden"]
                                    + (counts["fc2_bias_forward_per_hidden"] if again else 0.0))
    if moe.glu_clamp is not None:
        row += moe.expert_intermediate_size * (counts["glu_clamp_per_intermediate"]
                                               + (counts["glu_clamp_forward_per_intermediate"] if again else 0.0))
    return moe.experts_per_token * row


MoeDispatcher = Literal["alltoall", "deepep", "hybridep"]
"""Megatron-Core's token dispatcher of a mixture of experts in training: ``alltoall`` (``moe_token_dispatcher_type``
alltoall, what Megatron-Bridge's gpt-oss and Qwen3 recipes set), or the flex dispatcher over DeepEP or HybridEP."""


def ranks_reached(model: ModelSpec, ep: int) -> float:
    """Expected EP ranks one token's top-k experts sit on (balanced routing, k distinct experts, ``E / ep`` a rank):
    ``ep x (1 - C(E - E/ep, k) / C(E, k))``.

    >>> from anchorgpu.architectures import load_model
    >>> round(ranks_reached(load_model("qwen3-235b-a22b"), 8), 2), ranks_reached(load_model("qwen3-235b-a22b"), 1)
    (5.34, 1.0)
    """
    moe = model.moe
    if moe is None or ep <= 1:
        return 1.0
    e, k = moe.num_experts, moe.experts_per_token
    return ep * (1.0 - comb(e - e // ep, k) / comb(e, k))


def permutation_bytes(model: ModelSpec, counts: dict[str, float], ep: int, recompute: Recompute = "none",
                      dispatcher: MoeDispatcher = "alltoall") -> float:
    """Bytes one token moves per MoE layer and micro-batch in training reordering its routed copies around Megatron-
    Core's token dispatch, forward and backward (the forward again when the MoE blocks are recomputed); ``counts``:
    calibration ``moe_permutation_bytes``, a hidden value's bytes. Memory-bound work that grows with tokens x top-k
    and that the FLOP count leaves out; 0 for a dense model.

    ``alltoall`` (``MoEAlltoAllTokenDispatcher``): permutation 1 copies the token once per routed expert
    (``routed_per_hidden`` a copy, ``token_per_hidden`` the token's own row), permutation 2 sorts the received copies
    by local expert and the combine restores their order (``chunk_sort_per_hidden`` a copy, when a GPU holds more
    than one expert), and the unpermutation sums the copies back into the token's row. ``deepep``: DeepEP's dispatch
    sends one row to each rank the token reaches (:func:`ranks_reached`); the flex dispatcher then permutes each
    received row into its routed copies and unpermutes them before the combine (``routed_per_hidden`` a copy,
    ``token_per_hidden`` a received row). ``hybridep``: HybridEP permutes inside its dispatch and combine kernels
    (``dispatch_with_permute``), none charged here.

    >>> from anchorgpu.architectures import load_model
    >>> c = {"routed_per_hidden": 8, "routed_forward_per_hidden": 4, "token_per_hidden": 8,
    ...      "token_forward_per_hidden": 4, "chunk_sort_per_hidden": 16, "chunk_sort_forward_per_hidden": 8}
    >>> permutation_bytes(load_model("gpt-oss-120b"), c, 64)  # 2,880 x (4 x (8 + 16) + 8)
    299520.0
    >>> permutation_bytes(load_model("gpt-oss-120b"), c, 128)  # one expert a GPU: no chunk sort
    115200.0
    >>> permutation_bytes(load_model("gpt-oss-120b"), c, 64, "moe")  # forward again: 2,880 x (4 x 36 + 12)
    449280.0
    >>> round(permutation_bytes(load_model("qwen3-235b-a22b"), c, 8, dispatcher="deepep"))  # 4,096 x (8 x 8 + 8 x 5.34)
    437104
    >>> permutation_bytes(load_model("gpt-oss-120b"), c, 64, dispatcher="hybridep"), permutation_bytes(
    ...     load_model("llama-3.1-8b"), c, 1)
    (0.0, 0.0)
    """
    moe = model.moe
    if moe is None or not counts or dispatcher == "hybridep":
        return 0.0
    again = recompute in MOE_FORWARD_AGAIN

    def count(name: str) -> float:
        return counts[f"{name}_per_hidden"] + (counts[f"{name}_forward_per_hidden"] if again else 0.0)

    k = moe.experts_per_token
    if dispatcher == "deepep":
        return float(model.hidden_size * (k * count("routed") + ranks_reached(model, ep) * count("token")))
    routed = count("routed") + (count("chunk_sort") if moe.num_experts / max(ep, 1) > 1 else 0.0)
    return float(model.hidden_size * (k * routed + count("token")))


def ep_gather_bytes(engine: str, weights_format: str) -> float:
    """Bytes a value of the tokens an EP group all-gathers takes (expert parallelism wider than TP). TensorRT-LLM's
    CUTLASS MoE quantises the inputs before its all-gather under attention data parallelism for FP8 weights with one
    scale a tensor (to one byte, ``static_quantize_e4m3_per_tensor``) and for NVFP4 (half a byte plus one scale byte
    per 16 values, ``fp4_quantize``; ``CutlassFusedMoE.forward_chunk``, ``run_post_quant_allgather``); block-scaled
    FP8 is gathered as it comes, 16 bit, and so is every other format here (not shown quantised before the gather in
    that source), as vLLM's ``allgather_reducescatter`` gathers every format.

    >>> ep_gather_bytes("trtllm", "fp8"), ep_gather_bytes("trtllm", "nvfp4"), ep_gather_bytes("vllm", "fp8")
    (1.0, 0.5625, 2.0)
    >>> ep_gather_bytes("trtllm", "fp8-block128x128"), ep_gather_bytes("trtllm", "fp8-channel")
    (2.0, 2.0)
    """
    if engine == "trtllm":
        fmt = weights_format.lower()
        if fmt == "nvfp4":
            return 0.5 + 1.0 / 16.0
        if fmt == "fp8":
            return 1.0
    return float(ACTIVATION_BYTES)


def dense_layers(model: ModelSpec) -> int:
    """A mixture of experts' layers without routed experts (Llama 4 Maverick's every other layer, DeepSeek-V3's first
    three); 0 for a dense model, whose layers have no experts to tell them apart.

    >>> from anchorgpu.architectures import load_model
    >>> dense_layers(load_model("llama-4-maverick-17b-128e-fp8")), dense_layers(load_model("qwen3-30b-a3b"))
    (24, 0)
    """
    return model.num_layers - model.moe.num_moe_layers if model.moe is not None else 0


def whole_dense_layers_extra_bytes(model: ModelSpec, fmt: WeightFormat, *, tp: int, pp: int) -> float:
    """Weight bytes one GPU reads a step beyond its TP share when attention data parallelism keeps a mixture of
    experts' dense layers whole on every GPU: their attention (TensorRT-LLM ``modules/attention.py``: ``tp_size = 1``
    under ``enable_attention_dp``) and their dense MLP (``models/modeling_llama.py``: ``Llama4DecoderLayer`` builds its
    ``GatedMLP`` with ``overridden_tp_size=1`` under attention DP), ``1 - 1/tp`` of them beyond the share, a stage's
    ``1/pp``; the linear products only, at the format's bits (0.0 without dense layers or TP).

    >>> from anchorgpu.architectures import load_model
    >>> from anchorgpu.planner.formats import format_for_model
    >>> m = load_model("llama-4-maverick-17b-128e-fp8")  # 24 dense layers: 7.55 B weights, FP8
    >>> round(whole_dense_layers_extra_bytes(m, format_for_model(m, "fp8"), tp=8, pp=1) / 1e9, 2)
    6.61
    """
    dense = dense_layers(model)
    if not dense or tp <= 1:
        return 0.0
    is_moe = model.moe is not None
    total = 0.0
    for g in model.linear_groups:
        if g.component == "attention":
            total += g.d_in * g.d_out * g.count * dense / model.num_layers * fmt.group_bits(g.name, is_moe=is_moe) / 8
        elif g.component == "mlp":  # the dense MLP is only in the dense layers
            total += g.d_in * g.d_out * g.count * fmt.group_bits(g.name, is_moe=is_moe) / 8
    return total * (1.0 - 1.0 / tp) / pp


def routed_rows_per_token_share(tp: int, ep: int) -> float:
    """The share of a replica's token's ``k`` routed rows one GPU runs in a MoE layer: all of them with the experts
    sliced by TP (EP 1: each GPU runs every row on its slice); ``1 / ep`` of them with the experts split by EP inside
    TP (``ep <= tp``: MoE TP ``tp / ep`` x EP ``ep``, balanced routing); under attention DP (EP wider than TP) a GPU
    serves ``ep / tp`` replicas' tokens and holds ``1 / ep`` of the experts, ``1 / tp`` a replica's token.

    >>> routed_rows_per_token_share(8, 1), routed_rows_per_token_share(8, 8), routed_rows_per_token_share(8, 2)
    (1.0, 0.125, 0.5)
    >>> routed_rows_per_token_share(1, 8), routed_rows_per_token_share(2, 8)
    (1.0, 0.5)
    """
    if ep <= 1:
        return 1.0
    if ep <= tp:
        return 1.0 / ep
    return 1.0 / tp
