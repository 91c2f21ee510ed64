"""Stop 59 accroot: the plan counts the memory of the launch it is for (benchmarks/hardening/stop59_accroot.md).

Sources. accelerate ``src/accelerate/utils/fsdp_utils.py`` ``fsdp2_prepare_model`` with ``fsdp_auto_wrap_policy:
TRANSFORMER_BASED_WRAP`` (what ``recipes/training.py`` writes): ``fully_shard`` on each ``_no_split_modules`` block,
then on the model, the root, which holds the embedding, the final norm and the head. pytorch
``torch/distributed/fsdp/_fully_shard/_fsdp_state.py`` ``_lazy_init``: "For the root, do not reshard after forward"
(its parameters stay gathered, its gradients unsharded until its post-backward in the final callback). DeepSpeed
0.19.8 ``runtime/zero/config.py``: ``reduce_bucket_size`` default 5e8, ``overlap_comm`` None (True at stage 3 only);
accelerate ``utils/dataclasses.py`` ``DeepSpeedPlugin._deepspeed_config_checks``: beside a ``deepspeed_config_file``
the plugin keys and ``mixed_precision`` are refused. Llama-3.1-8B: vocab 128,256 x hidden 4,096 (config.json).
"""

from __future__ import annotations

import json

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner import memory as mm
from anchorgpu.planner.engine_choice import launch_reach
from anchorgpu.planner.formats import get_format, model_param_parts, model_weight_parts
from anchorgpu.recipes import build_recipe

H100 = get_gpu("h100")
EMBED = 128_256 * 4_096  # Llama-3.1-8B's embedding and (untied) head, values each


def _plan(recipe: str | None, *, model: str = "llama-3.1-8b", task: str = "train", zero: int = 3, **kw: object):  # type: ignore[no-untyped-def]
    w = Workload(task=task, train_stack="pytorch", **launch_reach(recipe), **kw)  # type: ignore[arg-type]
    return plan(load_model(model), w, layout=Layout(gpus=8, tp=1, pp=1, dp=8, zero=zero), gpu=H100)


def test_only_the_accelerate_launch_is_planned_with_its_root() -> None:
    assert launch_reach("accelerate")["launch_accelerate"] is True
    assert not any(launch_reach(k)["launch_accelerate"] for k in (None, "torchrun-fsdp", "deepspeed", "skypilot"))


def test_accelerate_root_keeps_embedding_and_head_gathered_beside_two_blocks() -> None:
    """torchtitan: embedding + a block (525M + 218M values); accelerate: the root (embedding + head, 2 x 525M) and
    two blocks, 2 B a value (bf16)."""
    parts = model_weight_parts(load_model("llama-3.1-8b"), get_format("bf16"))
    assert parts.embed == parts.head == 2 * EMBED
    layer = parts.largest_layer
    torchtitan, accelerate = _plan(None), _plan("accelerate")
    assert torchtitan.breakdown["gather_buffer_bytes"] == pytest.approx(2 * EMBED + layer, abs=1)
    assert accelerate.breakdown["gather_buffer_bytes"] == pytest.approx(4 * EMBED + 2 * layer, abs=1)
    assert mm.gather_buffer_bytes(parts, tp=4, root_ends=True) == pytest.approx((4 * EMBED + 2 * layer) / 4, abs=1)


def test_accelerate_root_gradients_are_held_to_the_end_of_backward() -> None:
    """The fullest moment is the root's own copy-in, at the end: its 16-bit gradients (2 B) and fp32 reduce-scatter
    input (4 B) over embedding + head, the blocks resharded; beyond the gather buffer (root + two blocks, 2 B)."""
    params = model_param_parts(load_model("llama-3.1-8b"))
    root, layer = 2 * EMBED, params.largest_layer
    expected = root * (2 + 4) - (root + 2 * layer) * 2
    p = _plan("accelerate")
    assert p.breakdown["fsdp_unit_gradients_bytes"] == pytest.approx(expected, abs=2)
    assert p.breakdown["fsdp_unit_gradients_bytes"] > _plan(None).breakdown["fsdp_unit_gradients_bytes"] + 1e9
    assert any("TRANSFORMER_BASED_WRAP wraps them" in a for a in p.assumptions)
    # 8 H100 at ZeRO-3: 68.12 GiB as torchtitan's units, 70.78 GiB as accelerate's (README)
    assert (round(_plan(None).per_gpu.total_bytes / 2**30, 2), round(p.per_gpu.total_bytes / 2**30, 2)) == (68.12, 70.78)


def test_a_tied_head_is_in_the_root_either_way() -> None:
    """Gemma-2-9B ties its head to the embedding: one parameter, in no block's unit, so in the root under both wraps."""
    assert _plan("accelerate", model="gemma-2-9b").per_gpu.total_bytes == _plan(None, model="gemma-2-9b").per_gpu.total_bytes


def test_lora_under_accelerate_fsdp_gathers_the_frozen_root() -> None:
    """LoRA's frozen base has no gradients, but the root's embedding and head stay gathered all the same."""
    lora, base = _plan("accelerate", task="lora"), _plan(None, task="lora")
    assert lora.breakdown["gather_buffer_bytes"] - base.breakdown["gather_buffer_bytes"] == pytest.approx(
        2 * EMBED + model_weight_parts(load_model("llama-3.1-8b"), get_format("bf16")).largest_layer, abs=1)
    assert "fsdp_unit_gradients_bytes" not in lora.breakdown


def test_accelerate_fsdp_recipe_says_when_the_plan_counted_other_units() -> None:
    line = "this plan counted torchtitan's units"
    assert any(line in a for a in build_recipe(_plan(None), "accelerate").assumptions)
    assert not any(line in a for a in build_recipe(_plan("accelerate"), "accelerate").assumptions)


def test_accelerate_deepspeed_launch_holds_the_buckets_the_plan_counts() -> None:
    """Mixed precision: ds_config.json with reduce_bucket_size hidden² (two buckets with overlap_comm), as planned."""
    p = _plan("accelerate", zero=1)
    files = dict(build_recipe(p, "accelerate").files)
    zero = json.loads(files["ds_config.json"])["zero_optimization"]
    assert zero["reduce_bucket_size"] == 4_096**2 and zero["overlap_comm"] is True
    assert p.breakdown["zero_reduce_buckets_bytes"] == 2 * 4_096**2 * 2


def test_accelerate_fp8_deepspeed_plan_counts_deepspeeds_default_bucket() -> None:
    """FP8 keeps the plugin keys (its mixed_precision key is refused beside a config file): one 5e8-value bf16
    bucket, 1.0 GB, in the plan for that launch; other launches' FP8 plans count the written hidden²."""
    p = _plan("accelerate", zero=1, train_precision="fp8")
    assert p.breakdown["zero_reduce_buckets_bytes"] == 500_000_000 * 2
    assert _plan(None, zero=1, train_precision="fp8").breakdown["zero_reduce_buckets_bytes"] == 2 * 4_096**2 * 2
    recipe = build_recipe(p, "accelerate")
    assert "ds_config.json" not in dict(recipe.files)
    assert any("5e8" in a and a.endswith("as planned.") for a in recipe.assumptions)
