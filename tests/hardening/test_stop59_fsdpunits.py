"""Stop 59 fsdpunits: the FSDP / ZeRO-3 gather buffer is the largest two units gathered together, with the embedding and
the untied head as units of their own, and FSDP2's backward holds a unit's unsharded gradients and its reduce-scatter
input (benchmarks/hardening/stop59_fsdpunits.md).

Sources: pytorch/torchtitan ``torchtitan/models/llama3/infra/parallelize.py`` ``apply_fsdp`` (018740b: ``fully_shard``
on ``tok_embeddings``, on each block, on ``[norm, output]`` with ``reshard_after_forward`` only under the "always"
policy, then on the model); pytorch ``torch/distributed/fsdp/_fully_shard/_fsdp_state.py`` ``_lazy_init`` ("For the
root, do not reshard after forward"); ``_fsdp_collectives.py`` ``foreach_reduce`` (``reduce_scatter_input`` of
``reduce_dtype``; "Only after the copy-in finishes can we free the gradients"). Model shapes from the models' config
files: Llama-3.1-8B vocab 128,256 x hidden 4,096, 32 layers; Gemma-2-9B vocab 256,000 x 3,584, tied, 42 layers;
Llama-3.1-405B vocab 128,256 x 16,384, 126 layers."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner import memory as mm
from anchorgpu.planner.formats import get_format
from anchorgpu.planner.weight_parts import model_param_parts, model_weight_parts

H100 = get_gpu("h100")


def _bf16(name: str):  # type: ignore[no-untyped-def]
    return model_weight_parts(load_model(name), get_format("bf16"))


def test_llama_8b_gathers_its_embedding_with_the_first_block() -> None:
    """525M embedding values (128,256 x 4,096) against 218M a block: the largest pair is embedding + block (the head
    + last block is the same), 2 B each: 1.49 GB where two blocks were 0.87 GB."""
    parts = _bf16("llama-3.1-8b")
    embed = 2 * 128_256 * 4_096
    assert parts.embed == parts.head == embed
    assert mm.gather_buffer_bytes(parts, tp=1) == pytest.approx(embed + parts.largest_layer, abs=1)
    assert mm.gather_buffer_bytes(parts, tp=1) > 2 * parts.largest_layer + 600e6
    # TP splits the vocabulary (torchtitan apply_tp: RowwiseParallel embedding, ColwiseParallel output) and the block
    assert mm.gather_buffer_bytes(parts, tp=4) == pytest.approx((embed + parts.largest_layer) / 4, abs=1)


def test_a_tied_embedding_stays_gathered_in_the_root() -> None:
    """Gemma-2-9B ties its head to the embedding: one parameter, in no block's unit, so in the root, which FSDP2 does
    not reshard after forward: the embedding (256,000 x 3,584) plus two blocks are gathered at once."""
    parts = _bf16("gemma-2-9b")
    assert parts.tied and parts.embed == 2 * 256_000 * 3_584 and parts.head == 0
    assert mm.gather_buffer_bytes(parts, tp=1) == pytest.approx(parts.embed + 2 * parts.largest_layer, abs=1)


def test_two_blocks_where_a_block_outweighs_the_embedding() -> None:
    """Llama-3.1-405B: a block (3.19B values) is larger than the embedding (2.10B): two blocks, as before."""
    parts = _bf16("llama-3.1-405b")
    assert parts.largest_layer > parts.embed == 2 * 128_256 * 16_384
    assert mm.gather_buffer_bytes(parts, tp=8) == pytest.approx(2 * parts.largest_layer / 8, abs=1)


def _train(name: str, **workload: object):  # type: ignore[no-untyped-def]
    w = Workload(task="train", train_stack="pytorch", seq_tokens=2048, micro_batch=1, recompute="full", **workload)
    return plan(load_model(name), w, gpu=H100, layout=Layout(gpus=8, tp=1, pp=1, dp=8, zero=3))


@pytest.mark.parametrize(("precision", "reduce_bytes"), [("mixed", 4), ("bf16-true", 2)])
def test_fsdp2_backward_holds_the_heads_gradients_and_reduce_scatter_input(precision: str, reduce_bytes: int) -> None:
    """At the head's copy-in (the head resharded, the last block prefetched): the last block's 16-bit parameters, the
    head's 16-bit gradients and its reduce-scatter input in the reduce dtype (the recipe's reduce_dtype: fp32 mixed,
    bf16 bf16-true), beyond the gather buffer; counted with the gradients."""
    p = _train("llama-3.1-8b", train_precision=precision)
    params = model_param_parts(load_model("llama-3.1-8b"))
    head, layer = params.head, params.largest_layer
    expected = 2 * layer + head * (2 + reduce_bytes) - 2 * (params.embed + layer)
    assert p.breakdown["fsdp_unit_gradients_bytes"] == pytest.approx(expected, abs=2)
    assert p.breakdown["gather_buffer_bytes"] == pytest.approx(2 * (params.embed + layer), abs=2)
    main_grads = mm.gradient_bytes(params.total, bytes_per_value=p.workload.grad_bytes_per_value, zero=3, dp=8)
    assert p.per_gpu.gradients_bytes == pytest.approx(main_grads + expected, abs=8)
    line = [a for a in p.assumptions if a.startswith("FSDP2 units")]
    assert line and "apply_fsdp" in line[0] and "foreach_reduce" in line[0]
    assert ("fp32" if reduce_bytes == 4 else "bf16") in line[0]


def test_no_unit_gradients_without_a_trained_base_or_on_megatron_or_under_stages() -> None:
    """LoRA's frozen base has no gradients to reduce-scatter; the Megatron stack runs Megatron-FSDP (not counted
    here); with pipeline stages the PyTorch stack's gradients are already held whole (fsdp_pipeline_held_bytes)."""
    model = load_model("llama-3.1-8b")
    lora = plan(model, Workload(task="lora", train_stack="pytorch"), gpu=H100,
                layout=Layout(gpus=8, tp=1, pp=1, dp=8, zero=3))
    megatron = plan(model, Workload(task="train", train_stack="megatron", seq_tokens=2048), gpu=H100,
                    layout=Layout(gpus=8, tp=1, pp=1, dp=8, zero=3))
    staged = plan(model, Workload(task="train", train_stack="pytorch", seq_tokens=2048), gpu=H100,
                  layout=Layout(gpus=8, tp=1, pp=2, dp=4, zero=3))
    for p in (lora, megatron, staged):
        assert "fsdp_unit_gradients_bytes" not in p.breakdown
        assert "gather_buffer_bytes" in p.breakdown
    assert "accumulated_gradients_bytes" in staged.breakdown
