"""``anchorgpu plan MODEL [workload] [--gpu NAME --gpus N] [parallelism] [--json]``: will it fit, per GPU.

A thin face over :func:`anchorgpu.planner.plan`: parse options, resolve the model and the GPU, plan,
render a table (or the DESIGN.md section 5 JSON with ``--json``). Bad input exits 2 with one line.

The option values are read in :mod:`~anchorgpu.cli.plan_parse` and the table is drawn by
:mod:`~anchorgpu.cli.plan_render` (their names are imported here too, where ``recommend`` first found them).
"""

from __future__ import annotations

from typing import Any

import typer

import anchorgpu.cli._help as OPTION_HELP
from anchorgpu.cli._app import app, emit_json
from anchorgpu.cli.plan_parse import lower_choice, parse_batch, parse_count, parse_gpus, parse_resolution, parse_tokens
from anchorgpu.cli.plan_render import render_plan, render_recipe
from anchorgpu.errors import InvalidWorkload


@app.command("plan")
def plan_command(
    model: str = typer.Argument(..., help="Registry name, path to config.json (or its folder), or a Hub id."),
    task: str = typer.Option("inference", "--task", help="inference | train | lora | qlora | diffusion. An option the task has no use for (--micro-batch for inference, --context for train) is refused, not ignored.", callback=lower_choice),
    gpu: str | None = typer.Option(None, "--gpu", help="GPU name or alias (see `anchorgpu gpus`)."),
    gpus: str | None = typer.Option(None, "--gpus", help="Whole GPUs in total (default, with --gpu: the fewest that hold the job; TP x PP x DP when all three are given)."),
    tp: int | None = typer.Option(None, "--tp", help="Tensor-parallel ranks (training: the layout not given, PP included, is chosen around it; with --pp too the split is fixed, DP the rest)."),
    pp: int | None = typer.Option(None, "--pp", help="Pipeline stages (training: the layout not given, TP included, is chosen around it)."),
    dp: int | None = typer.Option(None, "--dp", help="Data-parallel ranks (replicas)."),
    ep: int | None = typer.Option(None, "--ep", help="Expert-parallel ranks (MoE)."),
    zero: int | None = typer.Option(None, "--zero", help="ZeRO stage 0-3 (training; chosen with the layout when not given)."),
    cp: int | None = typer.Option(None, "--cp", help="Context-parallel ranks (training, ring attention)."),
    virtual_stages: int | None = typer.Option(None, "--virtual-stages", help="Interleaved pipeline chunks per GPU (training; chosen when not given)."),
    pipeline_layout: str | None = typer.Option(None, "--pipeline-layout", help="Which layers each pipeline chunk holds, in Megatron-Core's --pipeline-model-parallel-layout syntax, e.g. 'Et|(tt|)*30L' (training, with --pp; the virtual stages follow from its chunks)."),
    tp_overlap: bool = typer.Option(False, "--tp-overlap", help="Overlap tensor-parallel traffic with the products (training only; needs --tp 2 or more)."),
    sequence_parallel: bool | None = typer.Option(None, "--sequence-parallel/--no-sequence-parallel", help="Megatron's sequence parallelism: norms, dropout and residual adds split over the TP ranks (training; default on with TP > 1)."),
    ep_overlap: bool = typer.Option(False, "--ep-overlap", help="Overlap a MoE's all-to-alls with another micro-batch's computation (training under EP; Megatron-Core --overlap-moe-expert-parallel-comm)."),
    global_batch: str | None = typer.Option(None, "--global-batch", help="Tokens per optimizer step: 4M, 16M or an integer (training only; default 4M, for LoRA/QLoRA 32 sequences); whole sequences that split into whole micro-batches per data-parallel rank, never rounded."),
    fsdp: bool = typer.Option(False, "--fsdp", help="FSDP FULL_SHARD (training; memory of ZeRO-3)."),
    offload: str = typer.Option("none", "--offload", help="none | optimizer | params", callback=lower_choice),
    offload_activations: int = typer.Option(0, "--offload-activations", help="Layers whose activations wait in host memory between the forward and backward pass (full training on Megatron-Core with one pipeline stage and no recompute: --cpu-offloading-num-layers)."),
    weights: str | None = typer.Option(None, "--weights", help="Default: the format the checkpoint ships in (quantization_config). bf16 fp16 fp8 fp8-block128x128 int8 int4-gptq int4-awq nf4 nf4-dq mxfp4 nvfp4 gguf-q4_k_m gguf-q8_0 …"),
    kv_cache: str | None = typer.Option(None, "--kv-cache", callback=lower_choice, help="bf16 | fp16 | fp8 | nvfp4 (inference only; default: the FP8 or NVFP4 KV cache the checkpoint ships, where the GPU and --engine run it; an NVFP4 one falls back to fp8, else bf16). nvfp4 runs with vLLM on NVIDIA GPUs from Ampere on through FlashInfer (not for MLA models), with --engine trtllm on Blackwell only; refused elsewhere"),
    context: str | None = typer.Option(None, "--context", help=OPTION_HELP.CONTEXT),
    concurrency: str | None = typer.Option(None, "--concurrency", help="Sequences at once (inference only), e.g. 64 or 1k (= 1,000: a count, read as --tokens is)."),
    micro_batch: int | None = typer.Option(None, "--micro-batch", help="Sequences per GPU step (training only; chosen with the layout when not given)."),
    seq: str | None = typer.Option(None, "--seq", help="Training sequence length in tokens (training only; serving's is --context; default 2,048 or the model's context if shorter)."),
    recompute: str | None = typer.Option(None, "--recompute", callback=lower_choice, help="Training only: none | selective (the attention core; with --train-stack pytorch, torchtitan's op-level policy: every other product run again) | moe (a mixture of experts' MoE blocks) | full"),
    optimizer: str | None = typer.Option(None, "--optimizer", callback=lower_choice, help=OPTION_HELP.OPTIMIZER),
    train_precision: str | None = typer.Option(None, "--train-precision", callback=lower_choice, help="Training only: mixed (fp32 master+moments; the default) | bf16-true | fp8 | fp4 (FP8/FP4 products, Transformer Engine style)"),
    optimizer_state: str | None = typer.Option(None, "--optimizer-state", callback=lower_choice, help="AdamW's state under mixed/fp8/fp4 training (--task train): fp32 (fp32 master + moments, 12 B a parameter) | bf16-moments (fp32 master, bf16 moments, 8 B: Megatron-Core's precision-aware optimizer) | bf16 (bf16 master + moments, 6 B: Apex distributed_fused_adam dtype bf16, NeMo SFT); default fp32."),
    train_stack: str | None = typer.Option(None, "--train-stack", callback=lower_choice, help=OPTION_HELP.TRAIN_STACK),
    cross_entropy: str | None = typer.Option(None, "--cross-entropy", callback=lower_choice, help="Full training's loss, for its memory: unfused (Megatron-Core's default) | native (--cross-entropy-fusion-impl native) | te (Transformer Engine's fused kernel, Megatron-Bridge's 2025-26 recipes) | eager (PyTorch's fp32 cross_entropy); default unfused on megatron, eager on pytorch."),
    lora_rank: int | None = typer.Option(None, "--lora-rank", help=OPTION_HELP.LORA_RANK),
    lora_targets: str | None = typer.Option(None, "--lora-targets", callback=lower_choice, help="Task lora or qlora only: comma list of q,k,v,o,gate,up,down (default all; qkv = q,k,v; gate_up = gate,up). On a fused module the adapter covers the named slices."),
    resolution: str | None = typer.Option(None, "--resolution", help="Diffusion output WIDTHxHEIGHT."),
    images: int = typer.Option(1, "--images", help="Diffusion images per batch."),
    vae_tiling: bool = typer.Option(False, "--vae-tiling", help="Decode the VAE in tiles."),
    images_per_request: int | None = typer.Option(None, "--images-per-request", help=OPTION_HELP.IMAGES_PER_REQUEST),
    image_resolution: str | None = typer.Option(None, "--image-resolution", help=OPTION_HELP.IMAGE_RESOLUTION),
    gpu_memory_utilization: float | None = typer.Option(None, "--gpu-memory-utilization", help=OPTION_HELP.GPU_MEMORY_UTILIZATION),
    engine: str | None = typer.Option(None, "--engine", callback=lower_choice, help=OPTION_HELP.ENGINE),
    max_num_batched_tokens: str | None = typer.Option(None, "--max-num-batched-tokens", help="Engine prefill budget in tokens, e.g. 8192 or 8k (inference only)."),
    max_num_seqs: str | None = typer.Option(None, "--max-num-seqs", help=OPTION_HELP.MAX_NUM_SEQS),
    allow_long_context: bool = typer.Option(False, "--allow-long-context", help=OPTION_HELP.ALLOW_LONG_CONTEXT),
    prompt: str | None = typer.Option(None, "--prompt", help="Prompt tokens per request (inference only); without --context each sequence is prompt + output."),
    output_tokens: str | None = typer.Option(None, "--output-tokens", help="Output tokens per request, e.g. 256, 1e3 or 1k (inference only)."),
    tokens: str | None = typer.Option(None, "--tokens", help="Training only: training tokens for the training time, e.g. 1e12, 300B or 15T (decimal; performance)."),
    network_gbit_per_gpu: float | None = typer.Option(None, "--network-gbit-per-gpu", help=OPTION_HELP.NETWORK_GBIT_PER_GPU),
    mfu: float | None = typer.Option(None, "--mfu", help=OPTION_HELP.MFU),
    mbu: float | None = typer.Option(None, "--mbu", help=OPTION_HELP.MBU),
    context_mib: int | None = typer.Option(None, "--cuda-context-mib", help="Override the CUDA/ROCm context size (MiB)."),
    fragmentation: float | None = typer.Option(None, "--fragmentation", help="Override the allocator margin (0-0.5)."),
    offline: bool = typer.Option(False, "--offline", help=OPTION_HELP.OFFLINE),
    as_json: bool = typer.Option(False, "--json", help="Print the JSON contract."),
    recipe: str | None = typer.Option(None, "--recipe", callback=lower_choice, help="Also print the launch: vllm | sglang | trtllm | torchrun-fsdp | deepspeed | accelerate | skypilot | k8s."),
) -> None:
    """Per-GPU memory breakdown, fit verdict, capacity, warnings and what to check for one workload."""
    from anchorgpu.architectures import load_model
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner import Layout, PrecisionPlan, plan, plan_to_json
    from anchorgpu.planner.engine_choice import (
        check_engine_caps,
        engine_source,
        launch_reach,
        resolve_engine,
        resolve_train_stack,
    )
    from anchorgpu.planner.inputs import KV_CACHE_AUTO, workload_of
    from anchorgpu.planner.speed.overrides import Overrides
    from anchorgpu.planner.validate import check_task_options, planned_task
    from anchorgpu.planner.workload_checks import check_diffusion_options
    from anchorgpu.validation import bounded_int

    # token counts are read as --prompt and --context are (8k = 8,192, 1e3: one parser)
    output_tokens_n = parse_tokens(output_tokens, field="output_tokens")
    # counts of requests are read as --tokens is (64, 1k = 1,000, 1e3: one parser, one refusal), not by Click
    concurrency_n = parse_count(concurrency, field="concurrency", example="64 or 1k")
    max_num_seqs_n = parse_count(max_num_seqs, field="max_num_seqs", example="256 or 1k")
    batched_tokens_n = parse_tokens(max_num_batched_tokens, field="max_num_batched_tokens")
    for value, field in ((concurrency_n, "concurrency"), (micro_batch, "micro_batch"),
                         (lora_rank, "lora_rank"), (max_num_seqs_n, "max_num_seqs"), (images, "images")):
        bounded_int(value, field=field)  # the API's bounds (anchorgpu.validation.LIMITS), before any work
    for count, field in ((tp, "tp"), (pp, "pp"), (dp, "dp"), (ep, "ep"), (cp, "cp"), (virtual_stages, "virtual_stages")):
        if count is not None and count >= 1:  # the API's upper bounds; 0 and below keep the planner's own refusal
            bounded_int(count, field=field)
    kv = kv_cache if kv_cache is not None else KV_CACHE_AUTO  # '' is refused as an unknown dtype, not taken as auto
    given: dict[str, object] = {  # an option the task has no use for is refused, as every face refuses it
        "train_precision": train_precision, "train_stack": train_stack, "recompute": recompute, "micro_batch": micro_batch,
        "seq": seq, "global_batch": global_batch, "optimizer": optimizer, "optimizer_state": optimizer_state,
        "tokens": tokens, "tp_overlap": tp_overlap, "lora_rank": lora_rank, "lora_targets": lora_targets,
        "context": context, "concurrency": concurrency_n, "prompt": prompt, "output_tokens": output_tokens_n, "engine": engine,
        "max_num_seqs": max_num_seqs_n, "max_num_batched_tokens": batched_tokens_n,
        "gpu_memory_utilization": gpu_memory_utilization, "kv_cache": kv, "network_gbit_per_gpu": network_gbit_per_gpu}
    check_task_options(task, given)
    spec = load_model(model, offline=offline)
    check_task_options(planned_task(task, spec), given)  # a diffusion pipeline's default task is diffusion
    if recipe is not None:  # refused before anything is planned, as recommend refuses it
        from anchorgpu.architectures import ModelSpec
        from anchorgpu.recipes import check_kind

        check_kind(recipe, diffusion=not isinstance(spec, ModelSpec), engine=engine, task=task)
    chosen_by = engine_source(engine, recipe)
    engine = resolve_engine(engine, recipe)
    check_engine_caps(max_num_seqs_n, batched_tokens_n, engine)
    gpu_spec = get_gpu(gpu) if gpu is not None else None
    targets = None if lora_targets is None else tuple(t.strip() for t in lora_targets.split(",") if t.strip())
    if train_precision is not None and train_precision not in ("mixed", "bf16-true", "fp8", "fp4"):
        raise InvalidWorkload(f"--train-precision {train_precision!r}: choose mixed, bf16-true, fp8 or fp4")
    if train_stack not in (None, "megatron", "pytorch"):
        raise InvalidWorkload(f"--train-stack {train_stack!r}: choose megatron or pytorch")
    workload = workload_of(  # the options not given (None) take the planner's defaults
        task=task, context_tokens=parse_tokens(context, field="context"), concurrency=concurrency_n,
        allow_long_context=allow_long_context, gpu_memory_utilization=gpu_memory_utilization, engine=engine,
        engine_source=chosen_by,
        max_num_batched_tokens=batched_tokens_n, max_num_seqs=max_num_seqs_n, micro_batch=micro_batch,
        seq_tokens=parse_tokens(seq, field="seq"), recompute=recompute, offload_activation_layers=offload_activations,
        optimizer=optimizer, optimizer_state=optimizer_state,  # validated by the planner with a one-line reason
        train_precision=train_precision, train_stack=resolve_train_stack(train_stack, recipe, task),
        **launch_reach(recipe),
        cross_entropy=cross_entropy, global_batch_tokens=parse_batch(global_batch),
        prompt_tokens=parse_tokens(prompt, field="prompt"), output_tokens=output_tokens_n,
        lora_rank=lora_rank, lora_targets=targets, resolution=parse_resolution(resolution), images=images,
        vae_tiling=vae_tiling, images_per_request=images_per_request,
        image_resolution=parse_resolution(image_resolution, flag="--image-resolution"),
        network_gbit_per_s_per_gpu=network_gbit_per_gpu,  # validated by the planner with a one-line reason
    )
    check_diffusion_options(spec, images=images, resolution=resolution, vae_tiling=vae_tiling, flags=True)  # well formed
    layout = Layout(gpus=parse_gpus(gpus), tp=tp, pp=pp, dp=dp, ep=ep, zero=zero, fsdp=fsdp, cp=cp,
                    virtual_stages=virtual_stages, tp_overlap=tp_overlap, ep_overlap=ep_overlap, offload=offload,  # type: ignore[arg-type]
                    pipeline_layout=pipeline_layout, sequence_parallel=sequence_parallel)
    result = plan(spec, workload, precision=PrecisionPlan(weights=weights, kv_cache=kv),
                  layout=layout, gpu=gpu_spec, overheads=_overheads(context_mib, fragmentation),
                  efficiencies=Overrides(mfu=mfu, mbu=mbu))
    perf_options: dict[str, Any] = {"train_tokens": parse_count(tokens, field="tokens"), "mfu": mfu, "mbu": mbu}
    from anchorgpu.planner.speed.estimate import attach_performance

    result = attach_performance(result, **{k: v for k, v in perf_options.items() if v is not None})
    launch = None
    if recipe is not None:  # refused in one line (exit 2) before anything is printed
        from anchorgpu.recipes import build_recipe

        launch = build_recipe(result, recipe)
    if as_json:
        out = plan_to_json(result)
        if launch is not None:
            from anchorgpu.recipes import recipe_to_json

            out["recipe"] = recipe_to_json(launch)
        emit_json(out)
    else:
        render_plan(result)
        if launch is not None:
            render_recipe(launch)


def _overheads(context_mib: int | None, fragmentation: float | None) -> Any:
    """Runtime overheads with the user's overrides (stated in the plan's assumptions either way)."""
    import dataclasses

    from anchorgpu.planner import Overheads
    from anchorgpu.units import MIB

    ov = Overheads()
    if context_mib is not None:
        if context_mib < 0:
            raise InvalidWorkload(f"--cuda-context-mib {context_mib}: must be zero or more")
        ov = dataclasses.replace(ov, cuda_context_bytes=context_mib * MIB, rocm_context_bytes=context_mib * MIB)
    if fragmentation is not None:
        if not 0 <= fragmentation <= 0.5:
            raise InvalidWorkload(f"--fragmentation {fragmentation}: expected a fraction between 0 and 0.5")
        ov = dataclasses.replace(ov, fragmentation_fraction=fragmentation)
    return ov
