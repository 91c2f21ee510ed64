"""Stop 59 accroot: the plan counts the memory of the launch it is for (benchmarks/hardening/stop59_accroot.md).

Sources. accelerate 1.15.0 ``src/accelerate/utils/fsdp_utils.py`` ``fsdp2_prepare_model`` with
``fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP`` (what ``recipes/training.py`` writes): ``fully_shard`` on each
``_no_split_modules`` block, on the embedding and on [final norm, head] (restated at stop 60), then the root. pytorch
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
from anchorgpu.planner.formats import get_format
from anchorgpu.planner.weight_parts import model_param_parts, model_weight_parts
from anchorgpu.recipes import build_recipe

H100 = get_gpu("h100")
EMBED = 128_256 * 4_096  # Llama-3.1-8B's embedding and (untied) head, values each


def _plan(recipe: str | None, *, model: str = "llama-3.1-8b", task: str = "train", zero: int = 3, **kw: object):  # type: ignore[no-untyped-def]
    w = Workload(task=task, train_stack="pytorch", **launch_reach(recipe), **kw)  # type: ignore[arg-type]
    return plan(load_model(model), w, layout=Layout(gpus=8, tp=1, pp=1, dp=8, zero=zero), gpu=H100)


def test_only_the_accelerate_launch_is_planned_as_accelerates() -> None:
    assert launch_reach("accelerate")["launch_accelerate"] is True
    assert not any(launch_reach(k)["launch_accelerate"] for k in (None, "torchrun-fsdp", "deepspeed", "skypilot"))


def test_accelerate_wraps_the_embedding_and_head_as_units_of_their_own() -> None:
    """Restated at stop 60 (mem60): accelerate 1.15.0, the version the recipe names, carves the embedding and
    [final norm, head] into units of their own (``fsdp2_prepare_model``: "Carve embed + tail=[final_norm, lm_head] into
    their own units", ``fully_shard(tail, reshard_after_forward=False)``), so its FSDP2 holds torchtitan's units: the
    embedding with a block gathered (525M + 218M values, 2 B), and 68.12 GiB for 8B on 8 H100 at ZeRO-3 either way (the
    root this file counted at stop 59, 70.78 GiB, is an older accelerate's wrap)."""
    parts = model_weight_parts(load_model("llama-3.1-8b"), get_format("bf16"))
    assert parts.embed == parts.head == 2 * EMBED
    torchtitan, accelerate = _plan(None), _plan("accelerate")
    assert accelerate.breakdown["gather_buffer_bytes"] == torchtitan.breakdown["gather_buffer_bytes"] == pytest.approx(
        2 * EMBED + parts.largest_layer, abs=1)
    assert accelerate.breakdown["fsdp_unit_gradients_bytes"] == torchtitan.breakdown["fsdp_unit_gradients_bytes"]
    assert (round(torchtitan.per_gpu.total_bytes / 2**30, 2), round(accelerate.per_gpu.total_bytes / 2**30, 2)) == (
        68.12, 68.12)
    assert any("accelerate 1.15.0 fsdp2_prepare_model" in a for a in accelerate.assumptions)
    params = model_param_parts(load_model("llama-3.1-8b"))
    assert mm.fsdp_unit_gradients_bytes(params, tp=1, param_bytes=2, reduce_bytes=4) == pytest.approx(
        2 * params.largest_layer + 6 * EMBED - 2 * (EMBED + params.largest_layer), abs=2)


def test_a_tied_head_is_gathered_throughout_either_way() -> None:
    """Gemma-2-9B ties its head to the embedding: accelerate puts it in the tail unit (not resharded after forward,
    its post-backward in the final callback), torchtitan in the root: the same memory."""
    assert _plan("accelerate", model="gemma-2-9b").per_gpu.total_bytes == _plan(None, model="gemma-2-9b").per_gpu.total_bytes


def test_accelerate_fsdp_recipe_says_the_units_are_the_plans() -> None:
    line = "the units the plan counted"
    assert any(line in a for a in build_recipe(_plan(None), "accelerate").assumptions)
    assert any(line in a for a in build_recipe(_plan("accelerate"), "accelerate").assumptions)


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
