"""Stop 60 mem60: memory the plan did not count as launched (benchmarks/hardening/stop60_mem60.md).

Each test names the source line of the term it checks and fails if the term is dropped. Model shapes from the models'
config files: Llama-3.1-8B vocab 128,256 x hidden 4,096, 32 layers; Llama-3.1-70B vocab 128,256 x 8,192, 80 layers."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner import memory as mm
from anchorgpu.planner.weight_parts import model_param_parts

H100 = get_gpu("h100")


def _zero3(name: str, gpus: int, **workload: object):  # type: ignore[no-untyped-def]
    w = Workload(task="train", train_stack="pytorch", seq_tokens=2048, micro_batch=1, recompute="full", **workload)
    return plan(load_model(name), w, gpu=H100, layout=Layout(gpus=gpus, tp=1, pp=1, dp=gpus, zero=3))


def test_fsdp2_keeps_the_previous_units_reduce_scatter_input_through_the_next_units_backward() -> None:
    """torch ``_fsdp_param_group.py`` ``FSDPParamGroup.post_backward``: ``self.comm_ctx.reduce_scatter_state =
    ReduceScatterState(reduce_scatter_input, reduce_scatter_event)`` after ``foreach_reduce``, dropped only in the next
    unit's ``post_backward`` (``wait_event(...reduce_scatter_state.event)``, then ``= None``, then its own
    ``foreach_reduce``). Llama-3.1-70B: the head's fp32 input (1.05B values x 4 B) is still held while the last
    block computes beside the one prefetched (two blocks of 16-bit parameters gathered, its own 16-bit gradients):
    that moment is the fullest, 1.33 GB over the head's copy-in the plan counted before."""
    params = model_param_parts(load_model("llama-3.1-70b"))
    head, layer, embed = params.head, params.largest_layer, params.embed
    assert head == embed == 128_256 * 8_192 and layer > 0.8 * head
    gathered = 2 * max(embed + layer, 2 * layer)
    block_after_head = 2 * (2 * layer) + 2 * layer + 4 * head
    heads_copy_in = 2 * layer + (2 + 4) * head
    assert block_after_head > heads_copy_in + 1.3e9
    term = mm.fsdp_unit_gradients_bytes(params, tp=1, param_bytes=2, reduce_bytes=4)
    assert term == pytest.approx(block_after_head - gathered, abs=2)
    p = _zero3("llama-3.1-70b", 16)
    assert p.breakdown["fsdp_unit_gradients_bytes"] == term
    line = [a for a in p.assumptions if a.startswith("FSDP2 units")][0]
    assert "reduce_scatter_state" in line


def _llama_8b_parameters() -> list[int]:
    """Llama-3.1-8B's ``model.parameters()`` in order (transformers LlamaForCausalLM: embed_tokens; per layer
    self_attn q, k, v, o, mlp gate, up, down, input_layernorm, post_attention_layernorm; norm; lm_head)."""
    h, kv, ffn, vocab = 4_096, 1_024, 14_336, 128_256
    layer = [h * h, h * kv, h * kv, h * h, h * ffn, h * ffn, ffn * h, h, h]
    return [vocab * h, *layer * 32, h, vocab * h]


def _most_outside_partition(numels: list[int], dp: int) -> int:
    """stage_1_and_2.py, written out: partitions of the flat group padded to 2 x DP (nccl_start_alignment_factor);
    get_partition_info's params_in_partition (starting inside, or starting before and reaching in), whole in
    copy_grads_in_partition's grads_in_partition; the most any rank holds beyond its partition."""
    total = sum(numels)
    part = -(-total // (2 * dp)) * 2 * dp // dp
    most = 0
    for rank in range(dp):
        lo, hi = rank * part, (rank + 1) * part
        held, start = 0, 0
        for n in numels:
            if lo <= start < hi or start < lo < start + n:
                held += n
            start += n
        most = max(most, held - (min(hi, total) - min(lo, total)))
    return most


def test_zero2_holds_the_edge_parameters_whole_in_grads_in_partition() -> None:
    """DeepSpeed 0.19.8 stage_1_and_2.py ``copy_grads_in_partition``: ``total_size += param_in_partition.numel()`` over
    ``params_in_partition`` (``get_partition_info``: a parameter straddling the partition's start or end is in it,
    whole), ``self.grads_in_partition = torch.empty(int(total_size), dtype=self.dtype, ...)``. Llama-3.1-8B at ZeRO-2
    over 64 ranks: partitions of 125.5M values, several inside the 525M-value embedding; the busiest rank holds the
    embedding's gradient whole, ~1.0 GiB beyond its partition, in the gradients (backward) and through the step."""
    from anchorgpu.planner.deepspeed_partition import boundary_overhang_numel

    model = load_model("llama-3.1-8b")
    expected = _most_outside_partition(_llama_8b_parameters(), 64)
    assert expected > 500e6
    assert boundary_overhang_numel(model, 64) == pytest.approx(expected, abs=8_192)  # norms kept as one tensor
    w = Workload(task="train", train_stack="pytorch", seq_tokens=2048, micro_batch=1, recompute="full")
    lay = Layout(gpus=64, tp=1, pp=1, dp=64, zero=2)
    p = plan(model, w, gpu=H100, layout=lay, suggest=False, choose_layout=False)
    overhang = p.breakdown["zero_boundary_overhang_bytes"]
    assert overhang == 2 * boundary_overhang_numel(model, 64)
    main = mm.gradient_bytes(model.params_total, bytes_per_value=2, zero=2, dp=64)
    assert p.per_gpu.gradients_bytes == main + p.breakdown["zero_reduce_buckets_bytes"] + overhang
    assert any("straddling the partition's edges" in a for a in p.assumptions)
    # ZeRO-1's backward holds whole gradients already: the buffer's overhang is no more there
    one = plan(model, w, gpu=H100, layout=Layout(gpus=64, tp=1, pp=1, dp=64, zero=1), suggest=False,
               choose_layout=False)
    assert one.per_gpu.gradients_bytes == mm.gradient_bytes(model.params_total, bytes_per_value=2, zero=1, dp=64) + \
        one.breakdown["zero_reduce_buckets_bytes"]


def test_the_step_holds_the_whole_partition_buffer() -> None:
    """stage_1_and_2.py ``step``: per group ``free_grad_in_param_list(self.params_in_partition[i])`` drops views of the
    one ``grads_in_partition`` storage, freed only with the last: the buffer, overhang included, stays through every
    group's flat and master-dtype copies (``flatten(averaged_gradients[i])``, ``.to(single_partition_of_fp32_groups
    [i].dtype)``)."""
    from anchorgpu.planner.deepspeed_zero import step_held_bytes

    assert step_held_bytes(1_000, 0, 2, 4, 0, overhang_numel=500) == (1_000 + 500) * 2 + 1_000 * (2 + 4)
    assert step_held_bytes(1_000, 3_000, 2, 4, 6_000, overhang_numel=500) == (1_000 + 500 + 3_000) * 2 + 3_000 * 6


def test_a_deepspeed_zero3_launch_holds_its_reduce_bucket_for_the_whole_run(client) -> None:  # type: ignore[no-untyped-def]
    """DeepSpeed 0.19.8 stage3.py ``DeepSpeedZeroOptimizer_Stage3.__init__``, "# IPG": ``bucket.buffer =
    torch.empty(self.reduce_bucket_size, dtype=dtype, ...)`` per communication dtype (bf16) under
    ``contiguous_gradients``, kept for the whole run. The recipe writes reduce_bucket_size hidden² (4,096² for
    Llama-3.1-8B): 32 MiB in the gradients of a plan for ``--recipe deepspeed``, none for FSDP2's launches; the recipe
    says it is planned; the API's plan for the recipe equals the library's."""
    from anchorgpu.planner.engine_choice import launch_reach
    from anchorgpu.recipes import build_recipe

    model = load_model("llama-3.1-8b")

    def zero3(recipe: str):  # type: ignore[no-untyped-def]
        w = Workload(task="train", train_stack="pytorch", **launch_reach(recipe))  # type: ignore[arg-type]
        return plan(model, w, gpu=H100, layout=Layout(gpus=8, tp=1, pp=1, dp=8, zero=3))

    deepspeed, fsdp = zero3("deepspeed"), zero3("torchrun-fsdp")
    assert deepspeed.breakdown["zero3_reduce_bucket_bytes"] == 4_096**2 * 2
    assert "zero3_reduce_bucket_bytes" not in fsdp.breakdown
    assert deepspeed.per_gpu.gradients_bytes - fsdp.per_gpu.gradients_bytes == 4_096**2 * 2
    assert any("stage3.py __init__" in a for a in deepspeed.assumptions)
    assert any("ZeRO-3's reduce bucket" in a and a.endswith("as planned.")
               for a in build_recipe(deepspeed, "deepspeed").assumptions)
    assert any("ZeRO-3's reduce bucket" in a and "more than planned" in a
               for a in build_recipe(fsdp, "deepspeed").assumptions)
    body = {"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": 8, "tp": 1, "pp": 1, "dp": 8, "zero": 3,
            "recipe": "deepspeed"}
    api = client.post("/v1/plan", json=body)
    assert api.status_code == 200, api.text
    assert api.json()["per_gpu"]["total_bytes"] == deepspeed.per_gpu.total_bytes


@pytest.mark.parametrize("zero", [1, 2])
def test_accelerate_runs_tp_below_zero3_as_fsdp2_without_resharding(zero: int) -> None:
    """The accelerate recipe writes ZeRO-1/2 with TP as FSDP2 with ``fsdp_reshard_after_forward: false`` and a
    ``parallelism_config`` (its DeepSpeed plugin has no TP size); accelerate 1.15.0 ``fsdp2_prepare_model`` upcasts the
    trainable parameters to fp32 under mixed precision ("Upcast to fp32 master weights"), so FSDP2's sharded
    gradients are fp32 (``foreach_reduce``: ``_to_dtype_if_needed(reduce_output, target_dtype)``, the sharded
    parameter's dtype), over DP x CP (``fsdp_dim_names``: ``dp_shard_cp``), and every unit stays gathered from forward
    into backward. Llama-3.1-8B, TP 2 x DP 4: the states are ZeRO-2's with 4-byte gradients, and the head's copy-in adds
    its fp32 reduce-scatter input (its 16-bit parameters resharded, its gradients beside it: 4 B x 262.7M values)."""
    from anchorgpu.planner.engine_choice import launch_reach

    model = load_model("llama-3.1-8b")
    lay = Layout(gpus=8, tp=2, pp=1, dp=4, zero=zero)

    def planned(recipe: str | None):  # type: ignore[no-untyped-def]
        w = Workload(task="train", train_stack="pytorch", seq_tokens=2048, micro_batch=1, recompute="full",
                     **launch_reach(recipe))  # type: ignore[arg-type]
        return plan(model, w, gpu=H100, layout=lay, suggest=False, choose_layout=False)

    p, torchtitan = planned("accelerate"), planned(None)
    params = model_param_parts(model)
    head = params.head / 2  # TP splits the vocabulary
    assert p.breakdown["fsdp_unit_gradients_bytes"] == pytest.approx(4 * head, abs=2)
    from anchorgpu.planner.training_states import params_per_gpu

    sharded = mm.gradient_bytes(params_per_gpu(model, 2, 1, 1), bytes_per_value=4, zero=2, dp=4)
    assert p.per_gpu.gradients_bytes == pytest.approx(sharded + 4 * head, abs=16)
    assert p.per_gpu.gradients_bytes != torchtitan.per_gpu.gradients_bytes
    assert p.per_gpu.weights_bytes == torchtitan.per_gpu.weights_bytes  # the whole 16-bit weights either way
    assert any("FSDP2 without resharding after forward" in a for a in p.assumptions)
    from anchorgpu.recipes import build_recipe

    recipe = build_recipe(p, "accelerate")
    yaml = dict(recipe.files)["accelerate_config.yaml"]
    assert "fsdp_reshard_after_forward: false" in yaml and "parallelism_config_tp_size: 2" in yaml
    assert any("counted so in the plan" in a and "without resharding" in a for a in recipe.assumptions)
    assert any("plan with --recipe accelerate" in a for a in build_recipe(torchtitan, "accelerate").assumptions)


def test_accelerate_runs_tp_alone_without_fsdp() -> None:
    """accelerate 1.15.0 parallelism_config.py ``_validate_accelerator``: "FSDP is enabled but the parallelism config
    has no dimension for FSDP to shard across (both `dp_shard_size` and `cp_size` are 1)" raises; the recipe writes TP
    8 x DP 1 as MULTI_GPU with the TP size (accelerator.py ``prepare_model``: a TP model is not wrapped in DDP), as the
    plan's ZeRO-0 counts it."""
    from anchorgpu.planner.engine_choice import launch_reach
    from anchorgpu.recipes import build_recipe

    w = Workload(task="train", train_stack="pytorch", seq_tokens=2048, micro_batch=1, recompute="full",
                 **launch_reach("accelerate"))  # type: ignore[arg-type]
    p = plan(load_model("llama-3.1-8b"), w, gpu=H100, layout=Layout(gpus=8, tp=8, pp=1, dp=1, zero=0), suggest=False,
             choose_layout=False)
    yaml = dict(build_recipe(p, "accelerate").files)["accelerate_config.yaml"]
    assert "distributed_type: MULTI_GPU" in yaml and "parallelism_config_tp_size: 8" in yaml
    assert "fsdp_config" not in yaml and "fsdp_unit_gradients_bytes" not in p.breakdown


def test_accelerate_fsdp_accumulates_with_a_reduce_scatter_each_micro_batch() -> None:
    """accelerate 1.15.0 accelerator.py ``accumulate``: unless ``sync_each_batch`` (GradientAccumulationPlugin), the
    micro-batches before the last run under ``no_sync``, which for FSDP2 is ``set_requires_gradient_sync(False)``; torch
    ``FSDPParamGroup.post_backward`` then skips the reduce-scatter (``if not self.reduce_grads``) and
    ``to_accumulated_grad_if_needed`` keeps each unsharded gradient in the reduce dtype until the last micro-batch: the
    whole model's gradients, 4 B a parameter, which the plan does not hold. The recipe asks for sync_each_batch."""
    from anchorgpu.planner.engine_choice import launch_reach
    from anchorgpu.recipes import build_recipe

    w = Workload(task="train", train_stack="pytorch", global_batch_tokens=4_194_304, seq_tokens=4096, micro_batch=1,
                 **launch_reach("accelerate"))  # type: ignore[arg-type]
    p = plan(load_model("llama-3.1-8b"), w, gpu=H100, layout=Layout(gpus=8, tp=1, pp=1, dp=8, zero=3), suggest=False,
             choose_layout=False)
    recipe = build_recipe(p, "accelerate")
    assert any("GradientAccumulationPlugin(num_steps=128, sync_each_batch=True)" in c for c in recipe.cannot_set)
    assert any("sync_each_batch" in a for a in recipe.assumptions)
