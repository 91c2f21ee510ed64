"""One small function per memory term, per GPU, in bytes. Pure; stdlib only.

Modules along the domain, every name re-exported here: :mod:`.model_states` (sharding, gradients,
master weights, optimizer moments, adapters), :mod:`.kv` (KV cache and recurrent state), :mod:`.activations`
(training and serving activations) and :mod:`.rope` (a serving engine's RoPE table).

Notation (formulas.md): L layers, h hidden, a heads, kv KV heads, d head dim, V vocabulary, s sequence,
b micro-batch, t tensor-parallel ranks, p pipeline stages, N data-parallel ranks. Every function returns
integer bytes (or parameter counts where named) and names its source; none reads a clock, a file or
the environment.
"""

from __future__ import annotations

from anchorgpu.planner.memory.activations import (
    FP32_LOGITS_BYTES_PER_LOGIT,
    SAMPLER_BYTES_PER_SEQ_VOCAB,
    inference_activation_bytes,
    korthikanti_layer_activation_bytes,
    layer_activation_bytes,
    logits_bytes,
    moe_block_activation_share,
    op_sac_layer_activation_bytes,
    prefill_activation_bytes,
    sampler_activation_bytes,
    training_activation_bytes,
)
from anchorgpu.planner.memory.fsdp_units import fsdp_unit_gradients_bytes
from anchorgpu.planner.memory.kv import (
    STATE_BYTES_PER_VALUE,
    kv_cache_bytes,
    kv_cache_bytes_and_shape,
    kv_cache_bytes_one_and_all,
    kv_sequence_bytes,
    kv_values_per_token_per_gpu,
    longest_kv_context,
    recurrent_state_bytes,
)
from anchorgpu.planner.memory.model_states import (
    FUSED_LORA_TARGETS,
    OPTIMIZER_MOMENT_BYTES,
    OPTIMIZER_STATE_BYTES,
    RECURRENT_LORA_TARGETS,
    SSM_DEFAULT_LORA_TARGETS,
    adapter_params,
    expand_lora_targets,
    expert_data_parallel,
    gather_buffer_bytes,
    gradient_bytes,
    master_weight_bytes,
    optimizer_moment_bytes,
    routed_expert_share,
    serving_expert_tp,
    shard_share,
    stage_layers,
    zero_fraction,
)
from anchorgpu.planner.memory.rope import rope_table_bytes, rotary_dims

__all__ = [
    "adapter_params",
    "expand_lora_targets",
    "expert_data_parallel",
    "FUSED_LORA_TARGETS",
    "fsdp_unit_gradients_bytes",
    "gather_buffer_bytes",
    "gradient_bytes",
    "inference_activation_bytes",
    "korthikanti_layer_activation_bytes",
    "kv_cache_bytes",
    "kv_cache_bytes_and_shape",
    "kv_cache_bytes_one_and_all",
    "kv_sequence_bytes",
    "kv_values_per_token_per_gpu",
    "layer_activation_bytes",
    "logits_bytes",
    "longest_kv_context",
    "master_weight_bytes",
    "moe_block_activation_share",
    "op_sac_layer_activation_bytes",
    "OPTIMIZER_MOMENT_BYTES",
    "OPTIMIZER_STATE_BYTES",
    "optimizer_moment_bytes",
    "prefill_activation_bytes",
    "RECURRENT_LORA_TARGETS",
    "recurrent_state_bytes",
    "rope_table_bytes",
    "rotary_dims",
    "routed_expert_share",
    "sampler_activation_bytes",
    "serving_expert_tp",
    "FP32_LOGITS_BYTES_PER_LOGIT",
    "SAMPLER_BYTES_PER_SEQ_VOCAB",
    "shard_share",
    "SSM_DEFAULT_LORA_TARGETS",
    "stage_layers",
    "STATE_BYTES_PER_VALUE",
    "training_activation_bytes",
    "zero_fraction",
]
