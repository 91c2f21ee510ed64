"""Launch recipes count devices, not packages (stop58 qa22 finding 4): ROCm sees each MI250X as
``devices_per_package`` = 2 GCDs of 64 GB (gpus.toml, source S27), so a recipe launches the plan's per-package
parallelism times that over the devices, planned again on one device (planner/devices.py, recipes/devices.py).
Every figure here is derived from the GPU catalog and the plan, not written in."""

from __future__ import annotations

import json
import shlex
from dataclasses import replace

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware import get_gpu, list_gpus
from anchorgpu.planner import Layout, Plan, Workload, plan
from anchorgpu.planner.devices import device_layouts, device_spec, same_layout
from anchorgpu.recipes import build_recipe
from anchorgpu.recipes._common import default_target
from anchorgpu.recipes.devices import device_plan

MI250X = get_gpu("mi250x")
N = MI250X.devices_per_package


def _value(command: str, flag: str) -> str:
    words = shlex.split(command.replace("\\\n", " "))
    return words[words.index(flag) + 1]


def _serve(model: str, gpu: str, gpus: int, **kw: object) -> Plan:
    lay = Layout(gpus=gpus, **{k: kw.pop(k) for k in ("tp", "pp") if k in kw})  # type: ignore[arg-type]
    return plan(load_model(model), Workload(concurrency=4, **kw), layout=lay, gpu=get_gpu(gpu))  # type: ignore[arg-type]


def test_mi250x_is_two_devices_in_the_catalog() -> None:
    assert N == 2 and device_spec(MI250X).memory_bytes * N == MI250X.memory_bytes


@pytest.mark.parametrize("kind,flag", [("vllm", "--tensor-parallel-size"), ("sglang", "--tp-size")])
@pytest.mark.parametrize("packages", [1, 4])
def test_mi250x_serving_launches_tp_over_the_gcds(kind: str, flag: str, packages: int) -> None:
    """qa22 finding 4's case: Qwen3-30B-A3B on 1 MI250X printed --tensor-parallel-size 1 (one 64-GB GCD)."""
    p = _serve("qwen3-30b-a3b", "mi250x", packages, engine=kind)
    recipe = build_recipe(p, kind)
    assert int(_value(recipe.command, flag)) == p.layout.tp * N  # 1 package: TP 2; 4 packages: TP 8
    assert "--pipeline-parallel-size" not in recipe.command and "--pp-size" not in recipe.command
    assert any(f"launch as {packages * N} devices" in a for a in recipe.assumptions)


def test_heads_that_do_not_divide_grow_pipeline_stages() -> None:
    """Qwen2.5-0.5B has 14 attention heads: TP 2 over 2 packages cannot be TP 4 over their GCDs, so it runs PP 2."""
    spec = load_model("qwen2.5-0.5b")
    p = _serve("qwen2.5-0.5b", "mi250x", 2, tp=2)
    assert spec.num_attention_heads % (p.layout.tp * N) != 0  # the premise
    recipe = build_recipe(p, "vllm")
    assert int(_value(recipe.command, "--tensor-parallel-size")) == p.layout.tp
    assert int(_value(recipe.command, "--pipeline-parallel-size")) == p.layout.pp * N


def test_sglang_fraction_is_sglangs_own_for_one_device() -> None:
    """A derived mem_fraction_static is SGLang's default for the memory it divides (a 64-GB GCD), not the package's."""
    p = _serve("qwen3-30b-a3b", "mi250x", 1, engine="sglang")
    device = plan(load_model("qwen3-30b-a3b"), replace(p.workload, gpu_memory_utilization=None),
                  layout=device_layouts(p.layout, MI250X, training=False)[0], gpu=device_spec(MI250X))
    got = float(_value(build_recipe(p, "sglang").command, "--mem-fraction-static"))
    assert got == pytest.approx(device.workload.gpu_memory_utilization)
    assert got != pytest.approx(p.workload.gpu_memory_utilization)  # the package's would leave a GCD's reserve short


@pytest.mark.parametrize("packages", [1, 8])
def test_mi250x_training_counts_gcds(packages: int) -> None:
    p = plan(load_model("llama-3.1-8b"), Workload(task="lora"), layout=Layout(gpus=packages), gpu=MI250X)
    target = default_target(p)
    per_server = target.gpus_per_node * N
    torchrun = build_recipe(p, "torchrun-fsdp").command
    assert int(_value(torchrun, "--nproc-per-node")) == per_server
    assert int(_value(torchrun, "--nnodes")) * per_server == packages * N
    accel = build_recipe(p, "accelerate").files[0][1]
    assert f"num_processes: {packages * N}\n" in accel
    ds = build_recipe(p, "deepspeed")
    config = json.loads(ds.files[0][1])
    assert int(_value(ds.command, "--nproc-per-node")) == per_server
    # the global batch the plan counted over packages is kept over devices
    dev, _, _ = device_plan(p, "deepspeed", target)
    assert dev.layout.dp == p.layout.dp * N
    assert config["train_batch_size"] == config["train_micro_batch_size_per_gpu"] * config[
        "gradient_accumulation_steps"] * dev.layout.dp


def test_k8s_asks_for_gcds() -> None:
    """The AMD device plugin's amd.com/gpu counts GCDs on an MI250X."""
    p = _serve("qwen3-30b-a3b", "mi250x", 1)
    doc = json.loads(build_recipe(p, "k8s").files[0][1].split("---\n")[-2])
    assert doc["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["amd.com/gpu"] == N


def test_no_device_layout_fits_is_refused_in_one_line() -> None:
    """A serving plan that fills the package leaves a GCD short at every device layout: refused, not launched."""
    p = _serve("qwen2.5-0.5b", "mi250x", 1, engine="vllm")
    tight = replace(p, gpu=replace(MI250X, devices_per_package=64))  # 64 devices of 2 GB: nothing holds the weights
    with pytest.raises(InvalidWorkload) as err:
        build_recipe(tight, "vllm")
    assert "\n" not in err.value.message and "no launch over them holds the plan" in err.value.message


@pytest.mark.parametrize("gpu", [g.name for g in list_gpus() if g.devices_per_package == 1])
def test_one_device_a_package_launches_the_plans_layout(gpu: str) -> None:
    """Property over every other GPU: the device layout is the plan's own and the launch plan is the plan itself."""
    lay = plan(load_model("qwen2.5-0.5b"), Workload(concurrency=4), layout=Layout(gpus=2), gpu=get_gpu(gpu)).layout
    for training in (False, True):
        assert device_layouts(lay, get_gpu(gpu), training=training) == (same_layout(lay, training=training),)
    p = plan(load_model("qwen2.5-0.5b"), Workload(concurrency=4), layout=Layout(gpus=2), gpu=get_gpu(gpu))
    launch, target, note = device_plan(p, "vllm", default_target(p))
    assert launch is p and note is None and target == default_target(p)
    if p.fits is not False:
        assert int(_value(build_recipe(p, "vllm").command, "--tensor-parallel-size")) == p.layout.tp


def test_recommend_recipes_go_through_the_same_mapping() -> None:
    """``recommend --recipe`` (recipes/for_results.py) writes each result's launch through build_recipe: an MI250X
    row of one package (the catalog has no MI250X offering yet, so the row is made here) launches TP over its GCDs."""
    from anchorgpu.recipes.for_results import attach_recipes

    row = {"offering": "made-up", "servers": 1, "weights": "bf16", "gpus": 1, "gpu": "mi250x", "concurrency": 4,
           "layout": {"tp": 1, "pp": 1, "dp": 1}}
    body = attach_recipes({"results": [row]}, load_model("qwen3-30b-a3b"), Workload(concurrency=4), "vllm")
    recipe = body["results"][0]["recipe"]
    assert recipe is not None, body["results"][0].get("recipe_refused")
    assert int(_value(recipe["command"], "--tensor-parallel-size")) == N
