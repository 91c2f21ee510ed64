"""Training recipes: a torchrun launch (FSDP2 settings for the script), a DeepSpeed ``ds_config.json`` and an
``accelerate`` config YAML, from a train / LoRA / QLoRA plan.

What a config can say is said: sharding (FSDP or the ZeRO stage), offload, activation checkpointing, the
micro-batch and gradient accumulation from the global batch, BF16/FP8 and the TP/CP sizes where the framework
has them. A layout the framework cannot run (pipeline stages under FSDP, FP8 in a DeepSpeed config) is refused
in one line; what only the training script can do is listed in ``cannot_set``.
"""

from __future__ import annotations

import json

from anchorgpu.errors import said
from anchorgpu.planner.plan import Plan
from anchorgpu.recipes._common import (
    Recipe,
    Target,
    TrainSteps,
    flag_data,
    is_training,
    model_ref,
    not_expressible,
    shell_join,
    train_steps,
)
from anchorgpu.recipes.training_precision import (
    accelerate_runs_deepspeed,
    bf16_section,
    bf16_state_notes,
    bf16_true_weights,
    config_states_bf16,
    training_precision,
    zero_stage,
)
from anchorgpu.recipes.zero_config import plugin_bucket_line, zero_optimization

__all__ = ["torchrun_parts", "training_recipe"]

_SCRIPT = "train.py"

def torchrun_parts(target: Target, *, script_args: list[str], node_rank: str | None = None,
                   master_addr: str = "$MASTER_ADDR") -> list[str]:
    """``torchrun`` for one node (``--standalone``) or many (static rendezvous at ``master_addr``:29500)."""
    parts = ["torchrun"]
    if target.nodes == 1:
        parts += ["--standalone", "--nnodes", "1"]
    else:
        parts += ["--nnodes", str(target.nodes), "--node-rank", node_rank or "$NODE_RANK",
                  "--master-addr", master_addr, "--master-port", "29500"]
    return parts + ["--nproc-per-node", str(target.gpus_per_node), _SCRIPT, *script_args]


def _common_checks(plan: Plan, kind: str, assumptions: list[str], cannot: list[str]) -> None:
    lay, w = plan.layout, plan.workload
    if not is_training(plan):
        if w.task[:1] in "aeiou":
            raise not_expressible(kind, said("a training recipe for an {task} plan (use vllm, sglang or trtllm)",
                                             task=w.task))
        raise not_expressible(kind, said("a training recipe for a {task} plan (use vllm, sglang or trtllm)",
                                         task=w.task))
    if lay.pp > 1:
        zero2 = ("; ZeRO-2 with stages is Llama 3's own FSDP, which neither runs (torchtitan holds the gradients "
                 "whole under stages: plan --zero 1 for its memory)" if lay.zero == 2 else "")
        raise not_expressible(kind, said("pipeline parallelism (PP {pp}) has no setting here; plan with --pp 1 "
                                         "(--pp 1 --fsdp, say) or launch it with Megatron-LM / torchtitan{zero2}",
                                         pp=lay.pp, zero2=zero2))
    if w.recompute in ("selective", "moe"):
        assumptions.append(f"Recompute: {w.recompute} was planned; frameworks checkpoint whole layers, which stores "
                           "less (slower, still fits).")
    if w.task in ("lora", "qlora"):
        cannot.append(f"The {w.task} adapters (rank {w.lora_rank} on {', '.join(w.lora_targets)}) are set up in the "
                      "script, e.g. with peft; QLoRA loads the base in bitsandbytes NF4.")
    if w.optimizer_state != "fp32" and not config_states_bf16(plan, kind):
        held = ("fp32 master weights and bf16 moments" if w.optimizer_state == "bf16-moments"
                else "a bf16 master copy and bf16 moments")
        cannot.append(f"AdamW's state in {w.optimizer_state} ({held}, as planned) is built in the script: this "
                      "framework's config has no such switch (Megatron-Core: --use-precision-aware-optimizer "
                      "--exp-avg-dtype bf16 --exp-avg-sq-dtype bf16; Apex: DistributedFusedAdam(dtype=torch.bfloat16)).")
    bf16_true_weights(plan, kind, cannot)
    if w.cross_entropy is not None and w.cross_entropy != "eager":
        cannot.append(f"The loss ({w.cross_entropy} cross-entropy, as planned) is computed in the script; PyTorch's "
                      "cross_entropy on fp32 logits holds more (12 bytes a token and vocabulary entry).")
    if lay.ep > 1 and kind != "torchrun-fsdp":
        cannot.append(f"Expert parallelism (EP {lay.ep}, as planned) has no setting in this framework's config: the "
                      "MoE layers place their experts in the model code (e.g. DeepSpeed's MoE(ep_size=...)); without "
                      "it every rank shards the experts with the rest.")


def _settings(plan: Plan, steps: TrainSteps, precision: str, model: str) -> dict[str, object]:
    lay, w = plan.layout, plan.workload
    mixed = w.train_precision != "bf16-true"
    return {
        "model": model, "seq_len": steps.seq_tokens, "micro_batch_size": steps.micro_batch,
        "gradient_accumulation_steps": steps.accumulation, "global_batch_sequences": steps.global_batch_sequences,
        "optimizer": w.optimizer, "optimizer_state": w.optimizer_state if mixed else None, "precision": precision,
        # the dtype the script keeps the (sharded) parameters in, which the optimizer's moments take: bf16-true's
        # bf16 weights are their own master; mixed and FP8 keep fp32 ones that FSDP2 casts to bf16 for compute
        "parameter_dtype": "float32" if mixed else "bfloat16",
        "data_parallel_shard": lay.dp, "tensor_parallel": lay.tp, "context_parallel": lay.cp, "expert_parallel": lay.ep,
        "fsdp": {"reshard_after_forward": lay.fsdp or lay.zero == 3,
                 "mixed_precision": {"param_dtype": "bfloat16",
                                     "reduce_dtype": "bfloat16" if w.train_precision == "bf16-true" else "float32"},
                 "cpu_offload": lay.offload != "none"},
        "activation_checkpointing": w.recompute or "none",
    }


def _unresharded_line(plan: Plan) -> str:
    """The torchrun-fsdp recipe's line for ZeRO-1/2: FSDP2 without resharding after forward, counted so where the plan
    was made for this launch (``Workload.launch_torchrun_fsdp``: ``fsdp_unit_gradients_bytes`` in its breakdown), with
    what the whole gathered 16-bit weights cost beside ZeRO-3."""
    from anchorgpu.units import fmt_bytes

    lay, w = plan.layout, plan.workload
    grads = "fp32" if w.train_precision != "bf16-true" else "bf16"
    counted = ("as planned" if w.launch_torchrun_fsdp and "fsdp_unit_gradients_bytes" in plan.breakdown else
               "not this plan's count (DeepSpeed's ZeRO, 16-bit gradients and its buckets): plan with --recipe "
               "torchrun-fsdp to count it")
    return (f"ZeRO-{lay.zero} was planned: the script runs it as FSDP2 without resharding after forward "
            f"(fsdp.reshard_after_forward false), {grads} gradients and the optimizer state sharded over DP x CP, the "
            f"whole model's 16-bit weights ({fmt_bytes(plan.per_gpu.weights_bytes)} a GPU) gathered from forward "
            f"into backward with each unit's gradients and reduce-scatter input beside them: {counted}. "
            "--zero 3 (reshard after forward) shards those weights too, at one more all-gather a step.")


def _torchrun(plan: Plan, target: Target, steps: TrainSteps, model: str, assumptions: list[str],
              cannot: list[str]) -> tuple[str, tuple[tuple[str, str], ...]]:
    lay = plan.layout
    precision = training_precision(plan, "torchrun-fsdp")
    settings = _settings(plan, steps, precision, model)
    if lay.zero in (1, 2) and not lay.fsdp:
        assumptions.append(_unresharded_line(plan))
    if lay.zero == 0 and not lay.fsdp and lay.offload == "none":
        assumptions.append("Plain data parallelism was planned: the script wraps the model in DDP, not FSDP.")
        settings["fsdp"] = None
    elif lay.zero == 0 and not lay.fsdp:  # DDP has no CPU offload: FSDP2 for its offload alone
        assumptions.append("Offload without sharding was planned: DDP has no CPU offload, so the script wraps the "
                           "model in FSDP2 (fully_shard with CPUOffloadPolicy) for it.")
    if lay.offload == "optimizer":
        assumptions.append("Offload: FSDP's CPU offload moves parameters, gradients and optimizer state together "
                           "(more than the optimizer-only offload planned: slower, fits).")
    env = ["OMP_NUM_THREADS=8", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
           if plan.gpu is None or plan.gpu.vendor == "NVIDIA" else "PYTORCH_HIP_ALLOC_CONF=expandable_segments:True"]
    command = " ".join(env) + " \\\n" + shell_join(torchrun_parts(target, script_args=["--config",
                                                                                          "anchorgpu_train.json"]))
    mesh = "DP shard x TP x CP" + (f", experts over EP {lay.ep}" if lay.ep > 1 else "")
    cannot.append(f"{_SCRIPT} is yours: it reads anchorgpu_train.json, builds the device mesh ({mesh}), "
                  "applies fully_shard / checkpoint_wrapper and runs the accumulation loop.")
    if precision == "fp8":
        cannot.append("FP8 matrix products: torchao float8 or Transformer Engine layers in the script.")
    return command, (("anchorgpu_train.json", json.dumps(settings, indent=2) + "\n"),)


def ds_config(plan: Plan, steps: TrainSteps, assumptions: list[str], cannot: list[str],
              kind: str = "deepspeed") -> dict[str, object]:
    """``ds_config.json`` for ``plan`` (the deepspeed recipe's, and accelerate's where its plugin keys cannot state the
    plan's bf16 optimizer state)."""
    lay = plan.layout
    training_precision(plan, "deepspeed")
    if lay.tp > 1 or lay.cp > 1:
        raise not_expressible("deepspeed", said("TP {tp} / CP {cp}: ds_config.json (0.19.8) has no tensor- or "
                                                "context-parallel size; plan with --tp 1 --cp 1 or use --recipe "
                                                "accelerate", tp=lay.tp, cp=lay.cp))
    stage = zero_stage(plan, assumptions)
    zero = zero_optimization(plan, stage, assumptions)
    if lay.offload in ("optimizer", "params"):
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
    if lay.offload == "params":
        if stage != 3:
            raise not_expressible("deepspeed", said("parameter offload needs ZeRO stage 3 (plan with --zero 3)"))
        zero["offload_param"] = {"device": "cpu", "pin_memory": True}
    if stage == 3:
        zero["stage3_gather_16bit_weights_on_model_save"] = True
    if lay.fsdp:
        assumptions.append("FSDP was planned: ZeRO stage 3 shards the same three states.")
    bf16_state_notes(plan, stage, kind, assumptions, cannot)
    config: dict[str, object] = {
        "train_batch_size": steps.global_batch_sequences,
        "train_micro_batch_size_per_gpu": steps.micro_batch,
        "gradient_accumulation_steps": steps.accumulation,
        "bf16": bf16_section(plan),
        "zero_optimization": zero,
        "gradient_clipping": 1.0,
        "steps_per_print": 10,
    }
    return config


def _deepspeed(plan: Plan, target: Target, steps: TrainSteps, model: str, assumptions: list[str],
               cannot: list[str]) -> tuple[str, tuple[tuple[str, str], ...]]:
    w = plan.workload
    config = ds_config(plan, steps, assumptions, cannot)
    command = shell_join(torchrun_parts(target, script_args=["--deepspeed_config", "ds_config.json"]))
    cannot.append(f"{_SCRIPT} is yours: deepspeed.initialize(model=..., config='ds_config.json') and a loop of "
                  "engine.backward / engine.step.")
    if (w.recompute or "none") != "none":
        cannot.append(f"Activation checkpointing ({w.recompute}, as planned) is switched on in the model "
                      "(e.g. gradient_checkpointing_enable()).")
    cannot.append(f"The optimizer ({w.optimizer}) is built in the script or added as an \"optimizer\" section.")
    assumptions.append(f"Launched with torchrun; DeepSpeed reads the ranks from its environment. Model: {model}.")
    return command, (("ds_config.json", json.dumps(config, indent=2) + "\n"),)


_YAML_WORDS = frozenset({"no", "yes", "n", "y", "on", "off", "true", "false", "null"})
"""Plain words a YAML 1.1 loader (PyYAML, which accelerate reads its config with) turns into booleans or null:
quoted, so ``mixed_precision: "no"`` stays the string accelerate expects."""


def _yaml_scalar(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    text = str(value)
    plain = text.replace("_", "").replace(".", "").isalnum() and text.lower() not in _YAML_WORDS
    return text if plain else json.dumps(value)


def yaml_dump(doc: dict[str, object], indent: int = 0) -> str:
    """A small YAML writer for nested mappings of scalars (what accelerate's config holds)."""
    out: list[str] = []
    pad = " " * indent
    for key, value in doc.items():
        if isinstance(value, dict):
            out.append(f"{pad}{key}:")
            out.append(yaml_dump(value, indent + 2).rstrip("\n"))
        else:
            out.append(f"{pad}{key}: {_yaml_scalar(value)}")
    return "\n".join(out) + "\n"


def _accelerate(plan: Plan, target: Target, steps: TrainSteps, model: str, assumptions: list[str],
                cannot: list[str]) -> tuple[str, tuple[tuple[str, str], ...]]:
    lay, w = plan.layout, plan.workload
    precision = training_precision(plan, "accelerate")
    recompute = (w.recompute or "none") != "none"
    doc: dict[str, object] = {"compute_environment": "LOCAL_MACHINE", "debug": False}
    files: list[tuple[str, str]] = []
    if accelerate_runs_deepspeed(plan) and precision != "fp8":
        # the plugin's keys have neither reduce_bucket_size (without it DeepSpeed's 5e8-element default, a 0.93 GiB
        # bf16 bucket, not the plan's hidden²) nor a bf16 optimizer-state switch: the DeepSpeed config file states
        # them as the deepspeed recipe's does, and accelerate then refuses its own copies of the plugin keys and
        # mixed_precision (DeepSpeedPlugin._deepspeed_config_checks)
        doc["distributed_type"] = "DEEPSPEED"
        doc["deepspeed_config"] = {"deepspeed_config_file": "ds_config.json", "zero3_init_flag": False}
        files.append(("ds_config.json", json.dumps(ds_config(plan, steps, assumptions, cannot, "accelerate"), indent=2) + "\n"))
        if recompute:
            cannot.append("Activation checkpointing under DeepSpeed: switch it on in the model "
                          "(gradient_checkpointing_enable()).")
    elif lay.tp > 1 and lay.dp == lay.cp == 1 and not (lay.fsdp or lay.zero == 3):
        # accelerate 1.15.0 refuses FSDP2 with no dimension to shard across (parallelism_config.py
        # _validate_accelerator: dp_shard and cp both 1) and prepares a TP model without DDP (prepare_model)
        doc["distributed_type"] = "MULTI_GPU"
        doc["parallelism_config"] = {"parallelism_config_dp_replicate_size": 1, "parallelism_config_dp_shard_size": 1,
                                     "parallelism_config_tp_size": lay.tp, "parallelism_config_cp_size": 1}
        assumptions.append(f"TP {lay.tp} alone: accelerate runs FSDP2 only with a data- or context-parallel dimension to "
                           "shard across, so tensor parallelism without FSDP or DDP, each GPU keeping its TP share "
                           "of the optimizer state, as planned.")
        cannot.append(f"Load the model tensor-parallel before accelerator.prepare (from_pretrained(..., tp_plan='auto'), "
                      f"TP {lay.tp}): accelerate checks the model's TP size against parallelism_config.")
        if recompute:
            cannot.append("Activation checkpointing: switch it on in the model (gradient_checkpointing_enable()).")
    elif lay.fsdp or lay.zero == 3 or lay.tp > 1 or lay.cp > 1:
        doc["distributed_type"] = "FSDP"
        doc["fsdp_config"] = {
            "fsdp_version": 2, "fsdp_reshard_after_forward": lay.fsdp or lay.zero == 3,
            "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP", "fsdp_state_dict_type": "SHARDED_STATE_DICT",
            "fsdp_activation_checkpointing": recompute, "fsdp_offload_params": lay.offload != "none",
            "fsdp_cpu_ram_efficient_loading": True,
        }
        if lay.tp > 1 or lay.cp > 1:
            doc["parallelism_config"] = {"parallelism_config_dp_replicate_size": 1,
                                         "parallelism_config_dp_shard_size": lay.dp,
                                         "parallelism_config_tp_size": lay.tp, "parallelism_config_cp_size": lay.cp}
        if lay.zero < 3 and not lay.fsdp:
            counted = ("counted so in the plan" if plan.breakdown.get("fsdp_unit_gradients_bytes") else
                       "not this plan's count: plan with --recipe accelerate to count it")
            assumptions.append(f"ZeRO-{lay.zero} with TP/CP runs as FSDP2 without resharding after forward (the "
                               "DeepSpeed plugin has no TP/CP size): optimizer state and fp32 gradients sharded over "
                               f"DP x CP, the 16-bit weights gathered from forward into backward; {counted}.")
        else:  # accelerate utils/fsdp_utils.py fsdp2_prepare_model: "Carve embed + tail=[final_norm, lm_head]"
            assumptions.append("TRANSFORMER_BASED_WRAP (accelerate 1.15.0) shards each block, the embedding and the "
                               "final norm with the head as units of their own, the head's kept gathered from forward "
                               "into backward: the units the plan counted.")
    elif lay.zero in (1, 2) or lay.offload != "none":  # FP8: mixed_precision fp8 is a YAML key, refused beside a file
        doc["distributed_type"] = "DEEPSPEED"
        assumptions.append(plugin_bucket_line(plan))
        ds: dict[str, object] = {"zero_stage": zero_stage(plan, assumptions), "gradient_accumulation_steps": steps.accumulation,
                                 "gradient_clipping": 1.0, "zero3_init_flag": False,
                                 "offload_optimizer_device": "cpu" if lay.offload != "none" else "none",
                                 "offload_param_device": "cpu" if lay.offload == "params" else "none"}
        doc["deepspeed_config"] = ds
        if recompute:
            cannot.append("Activation checkpointing under DeepSpeed: switch it on in the model "
                          "(gradient_checkpointing_enable()).")
    else:
        doc["distributed_type"] = "MULTI_GPU" if lay.gpus > 1 else "NO"
        if recompute:
            cannot.append("Activation checkpointing under DDP: switch it on in the model (gradient_checkpointing_enable()).")
    if not files:  # bf16-true keeps bf16 weights with no autocast: "no" (see bf16_true_weights)
        doc["mixed_precision"] = "no" if w.train_precision == "bf16-true" else precision
    if precision == "fp8":
        doc["fp8_config"] = {"backend": "TE"}
    doc.update({"num_machines": target.nodes, "num_processes": target.nodes * target.gpus_per_node,
                "machine_rank": 0, "rdzv_backend": "static", "same_network": True, "use_cpu": False,
                "main_training_function": "main"})
    launch = ["accelerate", "launch", "--config_file", "accelerate_config.yaml"]
    if target.nodes > 1:
        # as torchrun's launch: each server's rank and the first server's address come from NODE_RANK and MASTER_ADDR,
        # which the user sets (the YAML cannot read the environment; the launch flags override its keys)
        del doc["machine_rank"]
        doc["main_process_port"] = 29500
        launch += ["--machine_rank", "$NODE_RANK", "--main_process_ip", "$MASTER_ADDR"]
    accumulation = f"gradient_accumulation_steps={steps.accumulation}"
    if doc["distributed_type"] == "FSDP" and steps.accumulation > 1:
        # accelerator.py accumulate(): without sync_each_batch its no_sync calls FSDP2's set_requires_gradient_sync(
        # False), whose post_backward keeps every unsharded gradient (to_accumulated_grad_if_needed, in the reduce
        # dtype) until the last micro-batch: 4 B a parameter / TP the plan does not hold
        accumulation = (f"gradient_accumulation_plugin=GradientAccumulationPlugin(num_steps={steps.accumulation}, "
                        "sync_each_batch=True)")
        assumptions.append("Gradient accumulation under FSDP2 reduce-scatters each micro-batch (sync_each_batch), as "
                           "planned: accelerate's default skips it (no_sync, set_requires_gradient_sync(False)) and "
                           "keeps every parameter's unsharded gradient, in fp32 under mixed precision, until the last "
                           "micro-batch.")
    cannot.append(f"{_SCRIPT} is yours: Accelerator({accumulation}) and a DataLoader of batch size {steps.micro_batch} "
                  f"with sequences of {steps.seq_tokens:,} tokens.")
    assumptions.append(f"Model: {model}.")
    command = shell_join([*launch, _SCRIPT])
    return command, (("accelerate_config.yaml", yaml_dump(doc)), *files)


def training_recipe(plan: Plan, kind: str, target: Target) -> Recipe:
    assumptions: list[str] = []
    cannot: list[str] = []
    _common_checks(plan, kind, assumptions, cannot)
    if target.nodes > 1:
        cannot.append(f"On each of the {target.nodes} servers set NODE_RANK (0 .. {target.nodes - 1}) and MASTER_ADDR "
                      "(the first server's address).")
    model = model_ref(plan, assumptions)
    steps = train_steps(plan, assumptions)
    assumptions.append(f"Steps: micro-batch {steps.micro_batch} x {steps.accumulation} accumulation x "
                       f"{plan.layout.dp} data-parallel ranks = {steps.global_batch_sequences:,} sequences of "
                       f"{steps.seq_tokens:,} tokens per optimizer step.")
    build = {"torchrun-fsdp": _torchrun, "deepspeed": _deepspeed, "accelerate": _accelerate}[kind]
    command, files = build(plan, target, steps, model, assumptions, cannot)
    data = flag_data({"torchrun-fsdp": "torchrun_flags", "deepspeed": "deepspeed_keys",
                      "accelerate": "accelerate_keys"}[kind])
    return Recipe(kind=kind, command=command, files=files, assumptions=tuple(assumptions), cannot_set=tuple(cannot),
                  tool_version=f"{data['tool']} {data['version']}")
