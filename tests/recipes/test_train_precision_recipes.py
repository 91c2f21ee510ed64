"""Every training launch keeps the optimizer state in the dtype the plan counts, for each ``--train-precision``.

bf16-true is planned with bf16 weights, gradients and AdamW moments and no master (``training_states``:
``moment_scale`` 0.5, ``master_weight_bytes`` 0). DeepSpeed 0.19.8 (the version the recipes name,
``recipes/data/deepspeed_keys.json``; sources read from its PyPI sdist) keeps them so only with both keys of its
``bf16`` section:

* ``bf16_master_weights_and_grads``: ``runtime/base_optimizer.py`` ``_configure_master_weights`` returns
  ``torch.bfloat16`` for the partition a ZeRO rank updates and its gradient (``zero/stage_1_and_2.py``
  ``single_partition_of_fp32_groups``, ``zero/stage3.py`` ``fp32_partitioned_groups_flat``);
* ``bf16_optimizer_states``: without it the moments stay fp32, which ``_configure_master_weights`` allows only under
  ZeRO-Offload with DeepSpeedCPUAdam (its ``bf16_offload_validator``); with it the GPU optimizer's moments are
  ``zeros_like`` the bf16 partition (``ops/adam/fused_adam.py``) and the CPU one is built with
  ``fp32_optimizer_states=False`` (``runtime/engine.py`` ``get_optimizer_configuration``; ``ops/adam/cpu_adam.py``).
* ``runtime/config.py`` ``_do_error_check``: both need ZeRO stage 1-3, and the states key needs the master key.

Added in DeepSpeed 0.18.3 (deepspeedai/DeepSpeed PR 7700; 0.18.2's ``precision_config.py`` lacks them); bf16 states
with ``offload_optimizer`` from 0.19.1 (PR 8010; 0.19.0's ``_configure_master_weights`` has no ``offload_enabled``).
accelerate 1.15.0: ``utils/fsdp_utils.py`` ``fsdp2_prepare_model`` upcasts the trainable parameters to fp32 when
``mixed_precision != "no"``; ``utils/dataclasses.py`` ``DeepSpeedPlugin._deepspeed_config_checks`` refuses its own
ZeRO/precision keys beside a ``deepspeed_config_file``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Plan, Workload, plan
from anchorgpu.recipes import build_recipe, flag_data

LOW_KEYS = {"bf16_master_weights_and_grads": True, "bf16_optimizer_states": True}

LAYOUTS: list[dict[str, Any]] = [
    {"zero": 0, "pp": 1},
    {"zero": 1, "pp": 1},
    {"zero": 2, "pp": 1},
    {"fsdp": True},
    {"zero": 0, "pp": 1, "offload": "optimizer"},
    {"zero": 2, "pp": 1, "offload": "optimizer"},
]


def _train(layout: dict[str, Any], gpus: int = 8, **kw: Any) -> Plan:
    return plan(
        load_model("llama-3.2-1b"),
        Workload(task="train", **kw),
        layout=Layout(gpus=gpus, **layout),
        gpu=get_gpu("h100"),
    )


def _files(p: Plan, kind: str) -> dict[str, str]:
    return dict(build_recipe(p, kind).files)


def _ds(p: Plan) -> dict[str, Any]:
    cfg: dict[str, Any] = json.loads(_files(p, "deepspeed")["ds_config.json"])
    return cfg


def _yaml(text: str) -> dict[str, Any]:
    yaml = pytest.importorskip("yaml", reason="PyYAML is in the dev and recipes-check extras")
    doc: dict[str, Any] = yaml.safe_load(text)
    return doc


@pytest.mark.parametrize("layout", LAYOUTS)
def test_bf16_true_deepspeed_config_keeps_master_and_moments_in_bf16(layout: dict[str, Any]) -> None:
    cfg = _ds(_train(layout, train_precision="bf16-true"))
    assert cfg["bf16"] == {"enabled": True, **LOW_KEYS}
    assert set(LOW_KEYS) <= set(flag_data("deepspeed_keys")["config_keys"])  # keys of the 0.19.8 sdist
    assert cfg["zero_optimization"]["stage"] in (1, 2, 3)  # runtime/config.py: both keys need ZeRO 1-3


@pytest.mark.parametrize(
    "precision,state", [("bf16-true", "fp32"), ("mixed", "fp32"), ("mixed", "bf16"), ("mixed", "bf16-moments")]
)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_deepspeed_config_passes_deepspeeds_own_precision_checks(
    layout: dict[str, Any], precision: str, state: str
) -> None:
    """The asserts of runtime/config.py ``_do_error_check`` and base_optimizer ``_configure_master_weights``."""
    kw = {"train_precision": precision} | ({"optimizer_state": state} if state != "fp32" else {})
    cfg = _ds(_train(layout, **kw))
    bf16, zero = cfg["bf16"], cfg["zero_optimization"]
    if bf16.get("bf16_master_weights_and_grads") or bf16.get("bf16_optimizer_states"):
        assert zero["stage"] in (1, 2, 3)
    if bf16.get("bf16_optimizer_states"):
        assert bf16["bf16_master_weights_and_grads"]
    if bf16.get("bf16_master_weights_and_grads") and not bf16.get("bf16_optimizer_states"):
        assert zero.get("offload_optimizer", {}).get("device") == "cpu"  # fp32 moments: ZeRO-Offload only
    # the moments are bf16 exactly where the plan counts them so (bf16-true, or a bf16 master and moments)
    assert bool(bf16.get("bf16_optimizer_states")) == (precision == "bf16-true" or state == "bf16")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_mixed_precision_deepspeed_config_is_unchanged(layout: dict[str, Any]) -> None:
    p = _train(layout)
    cfg = _ds(p)
    assert cfg["bf16"] == {"enabled": True}
    planned = 3 if p.layout.fsdp else p.layout.zero
    assert cfg["zero_optimization"]["stage"] == (2 if planned == 0 and p.layout.offload != "none" else planned)


def test_bf16_true_without_sharding_runs_zero_1_and_says_so() -> None:
    """At stage 0 DeepSpeed's bf16 path (FP16_Optimizer in bf16, runtime/fp16/fused_optimizer.py) clones an fp32
    master: ZeRO-1 keeps the bf16 state, sharded, so no more than planned."""
    r = build_recipe(_train({"zero": 0, "pp": 1}, train_precision="bf16-true"), "deepspeed")
    assert json.loads(dict(r.files)["ds_config.json"])["zero_optimization"]["stage"] == 1
    assert any("so stage 1" in a for a in r.assumptions)
    assert any("own bf16 copy" in a for a in r.assumptions)  # the copy the plan does not count is said


def test_bf16_true_offload_names_the_cpu_optimizer_deepspeed_requires() -> None:
    p = _train({"zero": 2, "pp": 1, "offload": "optimizer"}, train_precision="bf16-true")
    for kind in ("deepspeed", "accelerate"):
        assert any("fp32_optimizer_states=False" in c for c in build_recipe(p, kind).cannot_set), kind
    # the bf16 copy DeepSpeed updates sits on the host, where the plan counts it (update_partition_bytes)
    assert not any("own bf16 copy" in a for a in build_recipe(p, "deepspeed").assumptions)
    mixed = _train({"zero": 2, "pp": 1, "offload": "optimizer"})
    assert not any("fp32_optimizer_states" in c for c in build_recipe(mixed, "deepspeed").cannot_set)


def test_bf16_true_offload_with_an_optimizer_deepspeed_cannot_offload_is_refused() -> None:
    p = _train({"zero": 2, "pp": 1, "offload": "optimizer"}, train_precision="bf16-true", optimizer="lion")
    for kind in ("deepspeed", "accelerate"):
        with pytest.raises(InvalidWorkload, match=f"--recipe {kind}: .*DeepSpeedCPUAdam"):
            build_recipe(p, kind)
    assert build_recipe(p, "torchrun-fsdp").files  # FSDP's CPU offload steps torch's optimizer in bf16


IGNORED_BESIDE_A_FILE = {
    "gradient_accumulation_steps",
    "gradient_clipping",
    "zero_stage",
    "offload_optimizer_device",
    "offload_param_device",
    "offload_param_nvme_path",
    "offload_optimizer_nvme_path",
    "zero3_save_16bit_model",
}  # accelerate DeepSpeedPlugin._deepspeed_config_checks


@pytest.mark.parametrize("layout", [{"zero": 1, "pp": 1}, {"zero": 0, "pp": 1, "offload": "optimizer"}])
def test_accelerate_deepspeed_bf16_true_points_at_the_same_ds_config(layout: dict[str, Any]) -> None:
    p = _train(layout, train_precision="bf16-true")
    files = _files(p, "accelerate")
    doc = _yaml(files["accelerate_config.yaml"])
    assert doc["distributed_type"] == "DEEPSPEED"
    assert doc["deepspeed_config"]["deepspeed_config_file"] == "ds_config.json"
    assert not set(doc["deepspeed_config"]) & IGNORED_BESIDE_A_FILE
    assert "mixed_precision" not in doc  # from the YAML, accelerate refuses it beside a config file
    assert json.loads(files["ds_config.json"]) == _ds(p)


@pytest.mark.parametrize("layout", [{"fsdp": True}, {"zero": 0, "pp": 1}])
def test_accelerate_bf16_true_outside_deepspeed_keeps_bf16_weights(layout: dict[str, Any]) -> None:
    p = _train(layout, train_precision="bf16-true")
    r = build_recipe(p, "accelerate")
    doc = _yaml(dict(r.files)["accelerate_config.yaml"])
    assert doc["mixed_precision"] == "no"  # "bf16" would upcast FSDP2's trainable parameters to an fp32 master
    assert any("torch_dtype=torch.bfloat16" in c for c in r.cannot_set)
    mixed = _yaml(_files(_train(layout), "accelerate")["accelerate_config.yaml"])
    assert mixed["mixed_precision"] == "bf16"  # mixed precision unchanged


def test_accelerate_mixed_deepspeed_writes_the_config_file_the_plan_counts() -> None:
    """stop 59 accroot: the plugin's keys cannot set reduce_bucket_size (DeepSpeed's default 5e8 values, 0.93 GiB,
    where the plan counts hidden²: planner/data/deepspeed_zero.json), so a mixed-precision DeepSpeed launch states
    its ZeRO stage and buckets in ds_config.json, as the deepspeed recipe does, and drops the plugin keys and
    mixed_precision that accelerate refuses beside the file (DeepSpeedPlugin._deepspeed_config_checks)."""
    p = _train({"zero": 1, "pp": 1})
    files = _files(p, "accelerate")
    doc = _yaml(files["accelerate_config.yaml"])
    assert "mixed_precision" not in doc and doc["deepspeed_config"]["deepspeed_config_file"] == "ds_config.json"
    assert "zero_stage" not in doc["deepspeed_config"]
    zero = json.loads(files["ds_config.json"])["zero_optimization"]
    assert zero["stage"] == 1 and zero["reduce_bucket_size"] == p.model.hidden_size ** 2
    assert json.loads(files["ds_config.json"])["bf16"] == {"enabled": True}


def test_accelerate_fp8_deepspeed_keeps_the_plugin_keys() -> None:
    """FP8's mixed_precision is a YAML key accelerate refuses beside a ds_config.json (and ds_config.json has no FP8
    switch): the plugin keys stay, with DeepSpeed's default bucket stated."""
    doc_text = _files(_train({"zero": 1, "pp": 1}, train_precision="fp8"), "accelerate")["accelerate_config.yaml"]
    doc = _yaml(doc_text)
    assert doc["mixed_precision"] == "fp8" and doc["deepspeed_config"]["zero_stage"] == 1
    assert "deepspeed_config_file" not in doc["deepspeed_config"]


@pytest.mark.parametrize(
    "precision,param,reduce",
    [("bf16-true", "bfloat16", "bfloat16"), ("mixed", "float32", "float32"), ("fp8", "float32", "float32")],
)
def test_torchrun_settings_carry_the_parameter_dtype_the_moments_take(precision: str, param: str, reduce: str) -> None:
    p = _train({"fsdp": True}, train_precision=precision)
    r = build_recipe(p, "torchrun-fsdp")
    settings = json.loads(dict(r.files)["anchorgpu_train.json"])
    assert settings["parameter_dtype"] == param
    assert settings["fsdp"]["mixed_precision"] == {"param_dtype": "bfloat16", "reduce_dtype": reduce}
    assert (settings["optimizer_state"] is None) == (precision == "bf16-true")  # bf16-true: no master, moments bf16
    assert any("torch_dtype=torch.bfloat16" in c for c in r.cannot_set) == (precision == "bf16-true")


def test_a_bf16_master_and_moments_are_deepspeeds_own_keys_not_a_script_note() -> None:
    """``--optimizer-state bf16`` (a bf16 master and bf16 moments, 2 + 4 bytes) is what the two keys keep."""
    p = _train({"zero": 1, "pp": 1}, optimizer_state="bf16")
    assert _ds(p)["bf16"] == {"enabled": True, **LOW_KEYS}
    assert not any("AdamW's state in bf16" in c for c in build_recipe(p, "deepspeed").cannot_set)
    assert not any("own bf16 copy" in a for a in build_recipe(p, "deepspeed").assumptions)  # the plan counts it
    moments = _train({"zero": 1, "pp": 1}, optimizer_state="bf16-moments")  # fp32 master: no DeepSpeed switch
    assert _ds(moments)["bf16"] == {"enabled": True}
    assert any("AdamW's state in bf16-moments" in c for c in build_recipe(moments, "deepspeed").cannot_set)
