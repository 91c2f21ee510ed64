"""Context parallelism's exchanges in a training step (:mod:`anchorgpu.planner.speed.training`): the K/V each rank
needs from the ranks that share its sequence, as Megatron-Core's ring attention and as PyTorch's experimental context
parallelism run them, and how much of it the attention hides. Pure; stdlib only."""

from __future__ import annotations

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import said
from anchorgpu.planner.speed.links import ACTIVATION_BYTES, Link, all_gather_s, p2p_s

__all__ = ["context_parallel_s", "cp_split_refusal", "pytorch_cp_exposed_s"]


def cp_split_refusal(cp: int, seq_tokens: int) -> str | None:
    """Why ``cp`` context-parallel ranks cannot share a sequence of ``seq_tokens``, or ``None`` where they can. Both
    training stacks balance the causal work by cutting each sequence into ``2 x cp`` equal chunks and giving rank ``r``
    chunks ``r`` and ``2cp - 1 - r``, so the sequence must be a multiple of ``2 x cp``: Megatron-Core views it as
    ``2 * cp_size`` chunks (NVIDIA/Megatron-LM@00611e6e ``megatron/core/utils.py``,
    ``get_pretrain_batch_on_this_cp_rank``), PyTorch's context parallelism asserts ``size % (cp_world_size * 2) == 0``
    (pytorch/pytorch@f2127dbd ``torch/distributed/tensor/experimental/_attention.py``, ``_RoundRobinLoadBalancer``).

    >>> cp_split_refusal(2, 8192) is None, cp_split_refusal(1, 2049) is None
    (True, True)
    >>> cp_split_refusal(3, 8192)
    '--cp 3 does not divide the sequence of 8,192 tokens'
    >>> cp_split_refusal(2048, 2048)  # doctest: +ELLIPSIS
    '--cp 2048: ring attention cuts each sequence into 2 x CP = 4,096 equal chunks ... 2,048 tokens is not a multiple of 4,096'
    """
    if seq_tokens % cp:
        return said("--cp {cp} does not divide the sequence of {seq_tokens:,} tokens", cp=cp, seq_tokens=seq_tokens)
    if cp > 1 and seq_tokens % (2 * cp):
        return (said("--cp {cp}: ring attention cuts each sequence into 2 x CP = {value:,} equal chunks (two a "
                     "rank, for the causal load balance: Megatron-Core and PyTorch alike), and the sequence of "
                     "{seq_tokens:,} tokens is not a multiple of {value:,}", cp=cp, value=2 * cp,
                     seq_tokens=seq_tokens))
    return None


def context_parallel_s(model: ModelSpec, tp: int, pp: int, cp: int, link: Link, efficiency: float, tokens_rank: float,
                       attention_s: float, attn_passes: float, bwd_passes: float, stage_layers: float, *,
                       pytorch: bool = False) -> float:
    """The exposed context-parallel time of one micro-batch on the busiest stage. ``attention_s`` is the stage's
    attention time for the micro-batch (all its passes), ``attn_passes`` how many forward-times of attention it holds,
    ``bwd_passes`` how many of them are the backward's.

    Megatron-Core (Transformer Engine's ring attention): each rank passes its K/V chunk (the KV heads) around the
    ring ``cp - 1`` times forward and twice that backward, hidden behind the attention blocks as far as they last.
    PyTorch-native (``pytorch``): :func:`pytorch_cp_exposed_s` for each layer of the stage."""
    d_qk = model.mla.qk_nope_head_dim + model.mla.qk_rope_head_dim if model.mla else model.head_dim
    if pytorch:
        d_v = model.mla.v_head_dim if model.mla else model.head_dim
        kv_values = tokens_rank * max(1, model.num_attention_heads // tp) * (d_qk + d_v)
        return stage_layers * pytorch_cp_exposed_s(kv_values, cp, link, efficiency, attn_passes - bwd_passes)
    kv_bytes = tokens_rank * 2 * max(1, model.num_kv_heads // tp) * d_qk * ACTIVATION_BYTES
    ring = 3 * (cp - 1) * stage_layers * p2p_s(kv_bytes, link, efficiency=efficiency)
    return max(0.0, ring - attention_s)


def pytorch_cp_exposed_s(kv_values: float, cp: int, link: Link, efficiency: float, fwd_passes: float) -> float:
    """The exchange time one layer's attention leaves exposed under PyTorch's experimental context parallelism
    (``torch.distributed.tensor.experimental.context_parallel``), as torchtitan ran it in December 2024: compiled.

    ``kv_values`` is the K and V values one rank holds (its tokens times the local query heads times the K plus V head
    dims), and the forward runs ``fwd_passes`` times (twice under full recomputation). Read from the code:

    * torchtitan's attention repeats the grouped K/V heads before SDPA (``repeat_kv``), so the K/V the ring exchanges
      has the query heads, not the KV heads (pytorch/torchtitan ``torchtitan/models/llama/model.py``,
      commit 6d74b81);
    * the rotate method defaults to all-gather: torchtitan's ``--experimental.context_parallel_rotate_method``
      defaults to ``allgather`` and ``create_context_parallel_ctx`` passes it to ``set_rotate_method``
      (``torchtitan/utils.py``, commit 9fd2b51); PyTorch's ``_ContextParallelOptions.rotate_method`` defaults to
      ``ALL_GATHER`` too. ``_AllGatherRotater`` gathers every rank's K/V in one all-gather a forward
      (``_templated_ring_attention`` in pytorch/pytorch ``torch/distributed/tensor/experimental/_attention.py``,
      commit f2127db); the backward (``_templated_ring_attention_backward``) all-gathers K/V again the same way and
      passes the float32 (``convert_to_f32``) dK/dV accumulators to the next rank with ``_AllToAllRotater`` once a
      ring step: ``cp`` transfers of twice the K/V bytes;
    * full activation checkpointing re-runs the whole block's forward (torchtitan ``apply_ac``:
      ``checkpoint_wrapper`` around each block, ``torchtitan/parallelisms/parallelize_llama.py``, commit 582fe7d),
      the all-gather included;
    * none of it overlaps the attention, because torchtitan compiles each block (``apply_compile``) and the ring is
      traced into the block's graph. Traced, a functional collective is waited on at once:
      ``_functional_collectives._maybe_wrap_tensor`` returns ``wait_tensor(self)`` when ``_are_we_tracing()``
      (the eager path's ``AsyncCollectiveTensor``, which waits at first use, is what the overlap comment of
      pytorch/pytorch#132820 relies on; ``_attention._maybe_wait`` notes the traced tensor has no ``wait()``). Only
      Inductor's opt-in ``reorder_for_compute_comm_overlap`` (default ``False``) sinks a wait, so the generated code
      issues the all-gather, waits on it, and only then runs the first block; each dK/dV hand-off likewise. Read from
      Inductor's output for PyTorch's own ring functions under torch 2.6.0's defaults, at CP 2, 4 and 8
      (``benchmarks/torchtitan_cp_ring_order.py``, findings in ``benchmarks/torchtitan_cp_findings.md``).

    >>> link = Link(kind="network", bytes_per_s=50e9, latency_s=0.0, description="")
    >>> round(pytorch_cp_exposed_s(1e9, 2, link, 1.0, 2.0), 4)  # three gathers of 0.04 s, two dK/dV of 0.08 s
    0.28
    """
    kv_bytes = kv_values * ACTIVATION_BYTES
    gather = all_gather_s(cp * kv_bytes, cp, link, efficiency=efficiency)  # (cp - 1) ranks' K/V arrive
    dkv = p2p_s(kv_values * 4, link, efficiency=efficiency)  # float32 dK and dV to the next rank
    return (fwd_passes + 1.0) * gather + cp * dkv
