"""Memory of training (full, LoRA, QLoRA) per GPU: weights, gradients, master weights and optimizer
moments under the ZeRO stage and offload, activations for the layout, recompute and pipeline schedule,
fine-tuning terms and runtime overhead. Pure. Full training's model states are counted in
:mod:`~anchorgpu.planner.training_states`, what the pipeline schedule adds in
:mod:`~anchorgpu.planner.training_pipeline`."""

from __future__ import annotations

import math
from functools import lru_cache

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner import memory as mm
from anchorgpu.planner._frozen import evolve, memo_on_frozen
from anchorgpu.planner.deepspeed_terms import deepspeed_terms
from anchorgpu.planner.deepspeed_zero import largest_param_numel, offload_staging_bytes
from anchorgpu.planner.eager_stack import memory_line, pytorch_memory_line
from anchorgpu.planner.finetune import finetune_terms
from anchorgpu.planner.formats import WeightFormat
from anchorgpu.planner.global_batch import check_split
from anchorgpu.planner.inputs import (
    ALL_LORA_TARGETS,
    Overheads,
    Recompute,
    Workload,
    default_seq_tokens,
    seq_tokens_line,
)
from anchorgpu.planner.memory.activations import (
    FLASH_ATTENTION_LINE,
    FP8_ACTIVATIONS_LINE,
    NO_DROPOUT_LINE,
    keeps_fp8_input_copies,
)
from anchorgpu.planner.memory.loss import default_cross_entropy, loss_memory, loss_memory_line
from anchorgpu.planner.pipeline_layout import busiest_rank_layers
from anchorgpu.planner.result import ResolvedLayout, new_memory_breakdown
from anchorgpu.planner.sequence_parallel import memory_off_line
from anchorgpu.planner.speed.pipeline import default_batch_tokens, pipeline_schedule, step_microbatches
from anchorgpu.planner.terms import (
    TaskTerms,
    bnb_constants_line,
    context_bytes,
    nccl_bytes,
    new_task_terms,
    weights_bytes,
)
from anchorgpu.planner.training_pipeline import (
    FSDP_PIPELINE_LINE,
    check_interleaving,
    fsdp2_unresharded,
    fsdp2_unresharded_line,
    fsdp_pipeline_held_bytes,
    fsdp_units_line,
    interleaved_activation_bytes,
    interleaved_activation_line,
    pipeline_layout_line,
)
from anchorgpu.planner.training_states import (
    BF16_TRUE_LINE,
    FP8_STATE_WEIGHTS,
    OPTIMIZER_STATE_LINES,
    STATE_WORDS,
    ZERO_BF16_COPY_LINE,
    full_training_states,
    params_per_gpu,
    update_partition_bytes,
    zero_runs_deepspeed,
)
from anchorgpu.planner.warnings import PlanWarning, make_warning
from anchorgpu.planner.weight_parts import model_param_parts
from anchorgpu.planner.workload_checks import check_activation_offload_layout
from anchorgpu.units import fmt_bytes

__all__ = ["check_training_seq", "plan_training"]

_SP_MEGATRON = said("Tensor parallelism with sequence parallelism (Megatron): norms and dropout activations split too.")
_SP_PYTORCH = said("Tensor parallelism with sequence parallelism (torchtitan's SequenceParallel): norms and dropout "
                   "activations split too.")


def check_training_seq(model: ModelSpec, w: Workload) -> None:
    """Refuse a training sequence past the model's context (without ``--allow-long-context``): checked before a layout
    is chosen too, where the search would drop every candidate for it and refuse for another reason."""
    seq = default_seq_tokens(w, model.max_context_tokens)
    if seq > model.max_context_tokens and not w.allow_long_context:
        raise InvalidWorkload(
            said("--seq {seq:,} exceeds {model_name}'s limit of {max_context_tokens:,} tokens (add "
                 "--allow-long-context)", seq=seq, model_name=model.name, max_context_tokens=model.max_context_tokens))


def plan_training(model: ModelSpec, gpu: GpuSpec | None, w: Workload, fmt: WeightFormat, lay: ResolvedLayout,
              ov: Overheads, assumptions: list[str], warnings: list[PlanWarning]) -> TaskTerms:
    seq = default_seq_tokens(w, model.max_context_tokens)
    if w.seq_tokens is None:
        assumptions.append(seq_tokens_line(seq))
    check_training_seq(model, w)
    micro_batch = w.micro_batch or 1
    if w.micro_batch is None:
        assumptions.append("Micro-batch not given: 1 sequence per GPU step.")
    # a stated batch splits into whole micro-batches per DP rank (CP ranks share a sequence), else one line refuses it
    check_split(w.global_batch_tokens, dp=lay.dp, micro_batch=micro_batch, seq_tokens=seq, cp=lay.cp)
    # the micro-batches a step runs: the count the speed estimate times and the plan's batch line states
    microbatches = step_microbatches(w.global_batch_tokens, dp=lay.dp, micro_batch=micro_batch, seq_tokens=seq,
                                     default_tokens=default_batch_tokens(w.task, seq))
    check_interleaving(w, lay, micro_batch, seq, microbatches)
    recompute: Recompute = w.recompute or ("full" if w.task == "qlora" else "none")
    if w.recompute is None:
        assumptions.append(f"Activation recompute: {recompute} (default for {w.task}"
                           + (", gradient checkpointing as in the QLoRA paper)." if recompute == "full" else ")."))
    if lay.sequence_parallel:
        assumptions.append(_SP_PYTORCH if w.train_stack == "pytorch" else _SP_MEGATRON)
    elif lay.tp > 1:
        assumptions.append(memory_off_line(lay.tp))
    assumptions.append(FLASH_ATTENTION_LINE)
    # a PyTorch-native stack's own activations, loss and FSDP pipeline, full training only: the fine-tuning terms below
    # are measured on PEFT runs with their loss (planner.finetune)
    pytorch = w.task == "train" and w.train_stack == "pytorch"
    loss_bytes = _loss_bytes_per_logit(w)
    if w.task == "train":
        assumptions.append(pytorch_memory_line() if pytorch else memory_line())
        assumptions.append(loss_memory_line(_cross_entropy_of(w), stated=w.cross_entropy is not None))
    mixed = w.train_precision != "bf16-true"
    stated = busiest_rank_layers(lay.pipeline_layout)
    if lay.pipeline_layout is not None:
        assumptions.append(pipeline_layout_line(lay.pipeline_layout))
    breakdown: dict[str, int] = {}
    # FSDP2 without resharding below ZeRO-3 (accelerate's TP/CP, torchrun-fsdp's ZeRO-1/2): ZeRO-2's sharding, gradients
    # in the parameters' dtype
    unresharded = fsdp2_unresharded(w, lay)
    if w.task == "train":
        states = full_training_states(model, fmt, lay.tp, lay.pp, lay.ep, lay.dp, lay.cp, 2 if unresharded else lay.zero,
                                      lay.offload, w.optimizer, mixed, (4 if mixed else 2) if unresharded
                                      else w.grad_bytes_per_value, stated, w.optimizer_state)
        weights, weight_terms, grads, master, moments, checkpoint, rest_gpu, expert_gpu, shards, expert_dp = states
        update_value = mm.OPTIMIZER_STATE_BYTES[w.optimizer_state][0] if mixed else 2  # bf16-true: the bf16 weights
        update_copy = master if mixed else update_partition_bytes(rest_gpu, expert_gpu, lay.zero, shards, expert_dp,
                                                                              update_value)
        grad_value = w.grad_bytes_per_value
        breakdown.update(weight_terms)
        state_line = BF16_TRUE_LINE if not mixed else OPTIMIZER_STATE_LINES[w.optimizer_state]
        if w.train_precision == "fp8" and w.task == "train":  # the weights held are FP8's, 2 bytes too (below)
            state_line = state_line.replace("16-bit weights and gradients", FP8_STATE_WEIGHTS)
        assumptions.append(state_line)
        if not mixed and lay.offload == "none" and lay.zero >= 1 and not unresharded and zero_runs_deepspeed(
                w.train_stack, lay.zero, lay.fsdp):
            master = update_partition_bytes(rest_gpu, expert_gpu, lay.zero, shards, expert_dp, 2)
            assumptions.append(ZERO_BF16_COPY_LINE)
    else:
        weights = weights_bytes(model, fmt, lay, breakdown, bnb_constants_whole=w.train_stack == "pytorch")
        if "weights_bnb_constants_bytes" in breakdown:
            assumptions.append(bnb_constants_line(breakdown["weights_bnb_constants_bytes"]))
        params_gpu = params_per_gpu(model, lay.tp, lay.pp, lay.ep, stated)
        share = params_gpu / max(1, model.params_total)
        shards = lay.shard_group
        moment_scale = 1.0 if mixed or w.optimizer == "adamw-8bit" else 0.5
        adapters = mm.adapter_params(model, rank=w.lora_rank, targets=w.lora_targets)
        if adapters == 0 and w.lora_targets == ALL_LORA_TARGETS and model.attention_layers == 0:
            w = evolve(w, lora_targets=mm.SSM_DEFAULT_LORA_TARGETS)  # no attention: adapt the mixers instead
            adapters = mm.adapter_params(model, rank=w.lora_rank, targets=w.lora_targets)
            assumptions.append(f"LoRA targets not given and {model.name} has no attention: adapters on the mixer "
                               f"projections {', '.join(w.lora_targets)} (PEFT's Mamba example).")
        if adapters == 0:
            names = ", ".join(g.name for g in model.linear_groups)
            raise InvalidWorkload(said("--lora-targets {lora_targets} match no linear layer of {model_name} "
                                       "({names})", lora_targets=','.join(w.lora_targets), model_name=model.name,
                                       names=names))
        adapters_gpu = math.ceil(adapters * share)
        value = 4 if mixed else 2
        breakdown["lora_adapter_params"] = adapters
        breakdown["lora_adapter_weights_bytes"] = adapters_gpu * value
        weights += adapters_gpu * value
        grads = adapters_gpu * value
        master = 0
        moments = mm.optimizer_moment_bytes(adapters_gpu, optimizer=w.optimizer, zero=lay.zero, dp=shards,
                                            moment_scale=moment_scale)
        checkpoint = adapters * 2
        update_value = value
        update_copy = update_partition_bytes(adapters_gpu, 0.0, lay.zero, shards, shards, value)
        # the adapters are the partition the optimizer updates (update_partition_bytes, the DeepSpeed terms below)
        rest_gpu, expert_gpu, expert_dp = float(adapters_gpu), 0.0, shards
        grad_value = value
        assumptions.append("Activations of the whole model are kept for the backward pass through the frozen layers.")
        assumptions.append(
            f"LoRA rank {w.lora_rank} on {','.join(w.lora_targets)}: frozen base, adapters "
            + ("in fp32 with fp32 gradients and optimizer moments." if mixed else "and their states in bf16."))
    if pytorch and lay.zero == 3 and lay.pp > 1:
        held = fsdp_pipeline_held_bytes(math.ceil(rest_gpu + expert_gpu), breakdown.get("gather_buffer_bytes", 0))
        breakdown.update(held)
        weights += held["gathered_stage_weights_bytes"]
        grads += held["accumulated_gradients_bytes"]
        assumptions.append(FSDP_PIPELINE_LINE)
    elif pytorch and lay.zero == 3:
        unit_grads = mm.fsdp_unit_gradients_bytes(model_param_parts(model), tp=lay.tp, param_bytes=2,
                                                  reduce_bytes=4 if mixed else 2)
        breakdown["fsdp_unit_gradients_bytes"] = unit_grads
        grads += unit_grads
        assumptions.append(fsdp_units_line(unit_grads, breakdown.get("gather_buffer_bytes", 0), mixed))
    elif unresharded:
        unit_grads = mm.fsdp_unresharded_gradients_bytes(model_param_parts(model), tp=lay.tp, param_bytes=2,
                                                         reduce_bytes=4 if mixed else 2)
        breakdown["fsdp_unit_gradients_bytes"] = unit_grads
        grads += unit_grads
        assumptions.append(fsdp2_unresharded_line(unit_grads, lay.zero, mixed, w.launch_accelerate))
    if lay.offload != "none":
        # the host's update (ZeRO-Offload, FSDP's CPU offload) keeps the partition it updates (the master where there
        # is one), the state and that partition's gradient in its dtype: training_states.update_partition_bytes
        breakdown["offloaded_optimizer_bytes"] = update_copy + moments
        breakdown["offloaded_gradients_bytes"] = update_copy
        if zero_runs_deepspeed(w.train_stack, lay.zero, lay.fsdp):
            # ZeRO-Offload's pinned bf16 buffer of the partition (the LoRA adapters' too), copied back to the GPU after
            # the host's step; and its pinned gradient staging buffer (deepspeed_zero.offload_staging_bytes)
            breakdown["offloaded_bf16_buffer_bytes"] = update_partition_bytes(rest_gpu, expert_gpu, lay.zero, shards,
                                                                              expert_dp, 2)
            if lay.tp == lay.cp == 1:  # DeepSpeed's layouts: deepspeed_zero.runs_zero_optimizer
                breakdown["offloaded_gradient_staging_bytes"] = offload_staging_bytes(
                    largest_param_numel(model, 1, 0 if w.task == "train" else w.lora_rank))
        host_extra = breakdown.get("offloaded_bf16_buffer_bytes", 0) + breakdown.get("offloaded_gradient_staging_bytes", 0)
        warnings.append(make_warning("offload_slows_training",
                                     f"--offload {lay.offload}: optimizer state lives in CPU RAM, "
                                     f"{fmt_bytes(2 * update_copy + moments + host_extra)} a GPU with the "
                                     f"{'fp32' if update_value == 4 else 'bf16'} gradients its update reads"))
        master = moments = 0
    breakdown["master_weights_bytes"] = master
    breakdown["optimizer_moments_bytes"] = moments
    fp8_inputs = w.task == "train" and keeps_fp8_input_copies(w.train_stack, w.train_precision)
    # QLoRA's device_map stages run one after another: one micro-batch's activations on each GPU, not 1F1B's p
    in_flight = 1 if lay.pp > 1 and pipeline_schedule(w.task, w.train_stack) == "sequential" else None
    act = _activation_bytes(model, seq // lay.cp, micro_batch, lay.tp, lay.pp, lay.sequence_parallel, recompute,
                            pytorch, fp8_inputs, 0, stated, loss_bytes, in_flight)
    if in_flight is not None:
        assumptions.append(f"Pipeline stages by device_map (QLoRA on the PyTorch stack) run one after another: each of "
                           f"the {lay.pp} GPUs holds one micro-batch's activations of its layers, where 1F1B's first "
                           f"stage holds {lay.pp}.")
    if w.offload_activation_layers:
        check_activation_offload_layout(model.num_layers, w.offload_activation_layers, lay.pp)
        kept = _activation_bytes(model, seq // lay.cp, micro_batch, lay.tp, lay.pp, lay.sequence_parallel, recompute,
                                 pytorch, fp8_inputs, w.offload_activation_layers, stated, loss_bytes)
        breakdown["offloaded_activations_bytes"] = act - kept
        act = kept
        assumptions.append(offload_activations_line(w.offload_activation_layers, model.num_layers,
                                                    breakdown["offloaded_activations_bytes"]))
    if pytorch and recompute == "selective":
        assumptions.append(PYTORCH_SAC_LINE)
    if lay.virtual_stages > 1 and lay.pp > 1:
        act = interleaved_activation_bytes(act, lay.pp, microbatches)
        assumptions.append(interleaved_activation_line(lay.virtual_stages))
    if lay.cp > 1:
        assumptions.append(f"Context parallelism {lay.cp}: each GPU keeps the activations of {seq // lay.cp:,} of the "
                           f"{seq:,} tokens (ring attention).")
    if w.train_precision == "fp8" and w.task == "train":
        # FP8 parameters (Megatron-Core's --fp8-param-gather, which NeMo's and Megatron-Bridge's FP8 recipes set): the
        # weights live in FP8 with their transposes for the backward pass, two bytes a parameter in place of the
        # 16-bit copy (weights_bytes, counted at two bytes, is already their size); fp32 master and moments as before
        stack = gpu.training_stack("fp8") if gpu is not None else None  # the MI300X's: ROCm Transformer Engine
        assumptions.append(f"FP8 training as Megatron-Core runs it on {stack or 'Transformer Engine'} with FP8 "
                           "parameters (--fp8-param-gather, set by NeMo's and Megatron-Bridge's FP8 recipes): the "
                           "weights held in FP8 with their transposes for the backward pass (2 bytes a parameter, in "
                           "place of the 16-bit weights), " + STATE_WORDS[w.optimizer_state] + " in the optimizer as "
                           "in mixed precision. A stack that keeps 16-bit weights and caches FP8 copies beside them "
                           "holds 2 bytes a parameter more.")
    elif w.train_precision == "fp4" and w.task == "train":
        low = math.ceil(rest_gpu / (shards if lay.zero == 3 else 1) + expert_gpu / (expert_dp if lay.zero == 3 else 1))
        breakdown["low_precision_weight_copies_bytes"] = low
        weights += low
        stack = gpu.training_stack("fp4") if gpu is not None else None
        assumptions.append(f"FP4 training as {stack or 'Transformer Engine'} runs it: 16-bit weights and "
                           + STATE_WORDS[w.optimizer_state].replace(" weights and ", "/") + " as in "
                           "mixed precision, plus FP4 copies of the weights for the matrix products.")
    if fp8_inputs:
        assumptions.append(FP8_ACTIVATIONS_LINE)
    if not model.hidden_dropout:
        assumptions.append(NO_DROPOUT_LINE)
    breakdown["logits_bytes"] = mm.logits_bytes(s=seq // lay.cp, b=micro_batch, vocab=model.vocab_size, t=lay.tp,
                                                bytes_per_logit=loss_bytes)
    if w.task in ("lora", "qlora"):
        act += finetune_activation_terms(model, fmt, w, seq // lay.cp, micro_batch, lay, recompute, breakdown, assumptions)
    if pytorch and lay.pp == 1 and microbatches == 1:
        # PyTorch frees the gradients after each optimizer step (zero_grad(set_to_none=True)): with one micro-batch a
        # step, the forward pass's activations (the loss's included) and the gradients are never held at once
        apart = min(act, grads)
        breakdown["activations_not_beside_gradients_bytes"] = apart
        act -= apart
        assumptions.append(gradients_apart_line(apart))
    ds = deepspeed_terms(model, w, lay, mixed=mixed, rest_gpu=rest_gpu, expert_gpu=expert_gpu, shards=shards,
                         expert_dp=expert_dp, grad_value=grad_value, update_value=update_value, grads_bytes=grads,
                         activations_bytes=act)
    breakdown.update(ds.breakdown)
    grads += ds.gradients_bytes
    step_extra = ds.step_excess_bytes
    if ds.line:
        assumptions.append(ds.line)
    tensors = weights + grads + master + moments + step_extra + act
    fragmentation = math.ceil(tensors * ov.fragmentation_fraction)
    context = context_bytes(gpu, ov)
    nccl = nccl_bytes(lay, ov)
    breakdown.update(cuda_context_bytes=context, cublas_workspace_bytes=ov.cublas_workspace_bytes,
                     nccl_buffers_bytes=nccl, fragmentation_bytes=fragmentation, checkpoint_bytes=checkpoint)
    overhead = context + ov.cublas_workspace_bytes + nccl + fragmentation
    assumptions.append(_overhead_line(context, ov.cublas_workspace_bytes, nccl, ov.fragmentation_fraction))
    per_gpu = new_memory_breakdown(weights_bytes=weights, kv_cache_bytes=0, activations_bytes=act,
                                   gradients_bytes=grads, optimizer_bytes=master + moments + step_extra,
                                   overhead_bytes=overhead)
    budget = gpu.memory_bytes if gpu is not None else None
    return new_task_terms(per_gpu=per_gpu, breakdown=breakdown, budget_bytes=budget, checkpoint_bytes=checkpoint,
                          workload=w if (w.seq_tokens, w.recompute, w.micro_batch) == (seq, recompute, micro_batch)
                          else evolve(w, seq_tokens=seq, recompute=recompute, micro_batch=micro_batch))


@memo_on_frozen
def _activation_bytes(model: ModelSpec, s: int, b: int, tp: int, pp: int, sp: bool, recompute: Recompute,
                      pytorch: bool = False, fp8_inputs: bool = False, offloaded_layers: int = 0,
                      stated: int | None = None, loss_bytes_per_logit: int = mm.FP32_LOGITS_BYTES_PER_LOGIT,
                      in_flight: int | None = None) -> int:
    """:func:`~anchorgpu.planner.memory.training_activation_bytes`, memoised on the (frozen) model and its counts:
    the layouts of a search and the plans of a sweep ask for the same few. A PyTorch-native stack (``pytorch``)
    keeps what torchtitan's op-level policy keeps under selective recompute; ``loss_bytes_per_logit``: what its loss
    holds a token and vocabulary entry (:func:`_loss_bytes_per_logit`). ``fp8_inputs``: FP8 or FP4
    products under Megatron-Core and Transformer Engine keep their inputs as 1-byte copies
    (:func:`~anchorgpu.planner.memory.activations.fp8_cached_input_saving`). ``offloaded_layers``: Megatron-Core's CPU
    activation offloading of that many layers (:func:`~anchorgpu.planner.memory.training_activation_bytes`)."""
    return mm.training_activation_bytes(model, s=s, b=b, tp=tp, pp=pp, sp=sp, recompute=recompute, op_sac=pytorch,
                                        loss_bytes_per_logit=loss_bytes_per_logit,
                                        fp8_linear_inputs=fp8_inputs, offloaded_layers=offloaded_layers, stated=stated,
                                        in_flight=in_flight)


def _loss_bytes_per_logit(w: Workload) -> int:
    """Bytes the loss holds a token and vocabulary entry: full training's by its cross-entropy (stated, else the
    stack's default: planner/data/loss_memory.json); fine-tuning's fp32 logits, whose gradient the fine-tuning terms
    add (planner/data/finetune_memory.json, measured with PEFT's loss)."""
    if w.task != "train":
        return mm.FP32_LOGITS_BYTES_PER_LOGIT
    return loss_memory(_cross_entropy_of(w)).bytes_per_logit


def _cross_entropy_of(w: Workload) -> str:
    """The loss full training runs: the one stated, else its stack's default."""
    return w.cross_entropy or default_cross_entropy(w.train_stack)



def offload_activations_line(offloaded: int, layers: int, host_bytes: int) -> str:
    """What ``--offload-activations N`` plans: Megatron-Core's CPU activation offloading."""
    return (f"Activations of the first {offloaded} of {layers} layers offloaded to the host's pinned memory between the "
            f"forward and the backward pass (Megatron-Core's --cpu-offloading --cpu-offloading-num-layers {offloaded}): "
            f"{fmt_bytes(host_bytes)} of host memory a GPU; one offloaded layer's activations stay on the GPU while "
            "they are copied out and back. The copies run beside the computation; the part they outlast is timed.")



def gradients_apart_line(apart_bytes: int) -> str:
    """Why a PyTorch-native plan with one micro-batch a step counts only the activations beyond the gradients."""
    return ("One micro-batch a step on a PyTorch-native stack: the gradients are freed after each optimizer step "
            "(zero_grad(set_to_none=True)) and made again in the backward pass, so they and the forward pass's "
            f"activations are never held at once; the peak counts {fmt_bytes(apart_bytes)} of the activations "
            "once, in the gradients.")


PYTORCH_SAC_LINE = (
    "Selective recompute as torchtitan's op-level policy runs it: each block keeps its input, the attention output and "
    "every other matrix product's output (q, v, gate, down in a Llama block) and runs the rest again, pointwise "
    "operations included.")


@lru_cache(maxsize=256)
def _overhead_line(context: int, workspace: int, nccl: int, fragmentation: float) -> str:
    """The runtime-overhead assumption (a few distinct values recur across plans: memoised)."""
    return said("Runtime overhead: context {context}, library workspace {workspace}, NCCL {nccl}, allocator "
                "fragmentation {fragmentation:.0%} of tensors.", context=fmt_bytes(context),
                workspace=fmt_bytes(workspace), nccl=fmt_bytes(nccl), fragmentation=fragmentation)


def finetune_activation_terms(model: ModelSpec, fmt: WeightFormat, w: Workload, seq: int, micro_batch: int, lay: ResolvedLayout,
                    recompute: Recompute, breakdown: dict[str, int], assumptions: list[str]) -> int:
    """LoRA/QLoRA terms beyond the layer activations (planner.finetune, constants in data/finetune_memory.json),
    added to the activations; each named in the breakdown and the assumptions."""
    terms = finetune_terms(model, fmt, task=w.task, seq=seq, micro_batch=micro_batch, tp=lay.tp,
                           stage_layers=mm.stage_layers(model.num_layers, lay.pp,
                                                        busiest_rank_layers(lay.pipeline_layout)),
                           recompute=recompute,
                           targets=mm.expand_lora_targets(w.lora_targets))
    breakdown.update(quantized_layer_inputs_bytes=terms.quantized_layer_inputs_bytes,
                     dequantization_workspace_bytes=terms.dequantization_workspace_bytes,
                     logits_gradient_bytes=terms.logits_gradient_bytes,
                     frozen_inputs_not_kept_bytes=terms.frozen_inputs_not_kept_bytes)
    named = [f"fp32 logits gradient {fmt_bytes(terms.logits_gradient_bytes)}"]
    if terms.frozen_inputs_not_kept_bytes:
        named.append(f"minus {fmt_bytes(terms.frozen_inputs_not_kept_bytes)} of frozen 16-bit MLP inputs the layer "
                     "formula counts but autograd does not keep")
    if terms.dequantization_workspace_bytes:
        named.append(f"dequantization workspace {fmt_bytes(terms.dequantization_workspace_bytes)} (the largest "
                     "quantized matrix dequantized to 16 bit)")
    if terms.quantized_layer_inputs_bytes:
        named.append(f"inputs kept by the bitsandbytes 4-bit layers for the backward pass "
                     f"{fmt_bytes(terms.quantized_layer_inputs_bytes)}"
                     + (" (the recomputed layer only)" if recompute == "full" else ""))
    assumptions.append("Fine-tuning terms added to the activations: " + "; ".join(named)
                       + ". The loader's 16-bit copy while quantizing is transient and not added.")
    return terms.total_bytes
