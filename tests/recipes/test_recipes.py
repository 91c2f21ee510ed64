"""Launch recipes (issue 15): every emitted flag is the engine's own (recipes/data, read from the released
wheels), every value is the plan's, and a recipe that cannot express the plan is refused in one line.

The figures compared here come from the plans themselves (layout, context, engine limits, batch), never typed in.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Plan, PrecisionPlan, Workload, plan
from anchorgpu.recipes import KINDS, build_recipe, flag_data, recipe_to_json

SERVING = ("vllm", "sglang", "trtllm")


def _serve(model: str, gpu: str, gpus: int, **kw: Any) -> Plan:
    prec = PrecisionPlan(**{k: kw.pop(k) for k in ("weights", "kv_cache") if k in kw})
    lay = Layout(gpus=gpus, **{k: kw.pop(k) for k in ("tp", "pp", "dp", "ep") if k in kw})
    return plan(load_model(model), Workload(**kw), precision=prec, layout=lay, gpu=get_gpu(gpu))


def _train(model: str, gpu: str, gpus: int, layout: dict[str, Any] | None = None, **kw: Any) -> Plan:
    return plan(load_model(model), Workload(task=kw.pop("task", "train"), **kw), layout=Layout(gpus=gpus, **(layout or {})),
                gpu=get_gpu(gpu))


def _flags(command: str) -> list[str]:
    words = shlex.split(command.replace("\\\n", " "))
    return [w.split("=", 1)[0] for w in words if w.startswith("--")]


def _value(command: str, flag: str) -> str:
    words = shlex.split(command.replace("\\\n", " "))
    return words[words.index(flag) + 1]


SERVING_PLANS = {
    "llama-70b-tp8": lambda: _serve("llama-3.1-70b", "h100", 8, context_tokens=8192, concurrency=32),
    "llama-8b-fp8kv": lambda: _serve("llama-3.1-8b", "h100", 1, context_tokens=4096, concurrency=64, kv_cache="fp8"),
    "deepseek-v3-shipped-fp8": lambda: _serve("deepseek-v3", "h200", 8, context_tokens=8192),
    "llama-8b-replicas": lambda: _serve("llama-3.1-8b", "h100", 8, tp=2, context_tokens=8192, concurrency=64),
    # fp16 weights: trtllm_config.yaml gets "dtype", a BaseLlmArgs field the list lacked (QA pass)
    "llama-8b-fp16": lambda: _serve("llama-3.1-8b", "h100", 1, context_tokens=4096, weights="fp16"),
    # attention data parallelism, EP 8, as TensorRT-LLM runs it (tests/planner/test_serving_attention_dp_choice.py)
    "deepseek-r1-attention-dp": lambda: _serve("deepseek-r1", "h200", 8, tp=1, dp=8, ep=8, prompt_tokens=1000,
                                               output_tokens=1000, concurrency=512),
}


@pytest.mark.parametrize("name", sorted(SERVING_PLANS))
@pytest.mark.parametrize("kind", SERVING)
def test_every_serving_flag_is_the_engines_own(name: str, kind: str) -> None:
    recipe = build_recipe(SERVING_PLANS[name](), kind)
    known = set(flag_data(f"{kind}_flags")["flags"])
    emitted = _flags(recipe.command)
    assert emitted and not set(emitted) - known, set(emitted) - known
    if kind == "trtllm":  # the YAML given to --config holds LLM arguments
        keys = flag_data("trtllm_flags")["config_keys"]
        text = dict(recipe.files)["trtllm_config.yaml"]
        top = {line.split(":")[0] for line in text.splitlines() if line and not line.startswith(" ")}
        nested = {line.strip().split(":")[0] for line in text.splitlines() if line.startswith("  ")}
        assert top <= set(keys["top"]) and nested <= set(keys["kv_cache_config"])


@pytest.mark.parametrize("kind", ("vllm", "sglang"))
def test_every_emitted_value_is_one_the_engine_accepts(kind: str) -> None:
    values = flag_data(f"{kind}_flags")["values"]
    plans = [_serve("llama-3.1-8b", "h100", 1, context_tokens=4096, weights="fp16", kv_cache="fp8"),
             _serve("llama-3.1-8b", "h100", 1, context_tokens=4096, weights="fp8")]
    seen = 0
    for p in plans:
        cmd = build_recipe(p, kind).command
        for flag, allowed in values.items():
            if flag in _flags(cmd):
                assert _value(cmd, flag) in allowed, (flag, _value(cmd, flag))
                seen += 1
    assert seen >= 3  # --dtype, --kv-cache-dtype and --quantization were all exercised


def test_vllm_values_are_the_plans() -> None:
    p = SERVING_PLANS["llama-70b-tp8"]()
    cmd = build_recipe(p, "vllm").command
    assert _value(cmd, "--tensor-parallel-size") == str(p.layout.tp)
    assert _value(cmd, "--max-model-len") == str(p.workload.context_tokens)
    assert _value(cmd, "--max-num-seqs") == str(p.workload.max_num_seqs)
    assert _value(cmd, "--max-num-batched-tokens") == str(p.workload.max_num_batched_tokens)
    assert float(_value(cmd, "--gpu-memory-utilization")) == p.workload.gpu_memory_utilization
    assert "--kv-cache-dtype" not in cmd and "--quantization" not in cmd  # bf16 weights and KV: engine defaults


def test_fp8_kv_and_online_fp8_weights_reach_every_engine() -> None:
    p = _serve("llama-3.1-8b", "h100", 1, context_tokens=4096, concurrency=64, weights="fp8", kv_cache="fp8")
    assert _value(build_recipe(p, "vllm").command, "--kv-cache-dtype") == "fp8"
    assert _value(build_recipe(p, "vllm").command, "--quantization") == "fp8"
    assert _value(build_recipe(p, "sglang").command, "--kv-cache-dtype") == "fp8_e4m3"
    # trtllm-serve cannot quantize at load time: refused rather than launched in 16-bit
    with pytest.raises(InvalidWorkload, match="cannot quantize"):
        build_recipe(p, "trtllm")
    kv_only = SERVING_PLANS["llama-8b-fp8kv"]()
    assert "dtype: fp8" in dict(build_recipe(kv_only, "trtllm").files)["trtllm_config.yaml"]


def test_shipped_quantization_needs_no_flag_and_moe_gets_expert_parallelism() -> None:
    p = SERVING_PLANS["deepseek-v3-shipped-fp8"]()
    recipe = build_recipe(p, "vllm")
    assert "--quantization" not in recipe.command
    assert any("quantization_config" in a for a in recipe.assumptions)
    if p.layout.ep > 1:
        assert "--enable-expert-parallel" in recipe.command


def test_replicas_on_one_server_use_data_parallel_flags() -> None:
    p = SERVING_PLANS["llama-8b-replicas"]()
    assert p.layout.dp > 1
    assert _value(build_recipe(p, "vllm").command, "--data-parallel-size") == str(p.layout.dp)
    assert _value(build_recipe(p, "sglang").command, "--dp-size") == str(p.layout.dp)
    assert any("load balancer" in a for a in build_recipe(p, "trtllm").assumptions)


def _ds(p: Plan) -> dict[str, Any]:
    return json.loads(dict(build_recipe(p, "deepspeed").files)["ds_config.json"])


def test_deepspeed_config_keys_and_batch_arithmetic() -> None:
    p = _train("llama-3.1-8b", "h100", 16, {"fsdp": True}, global_batch_tokens=2**21)
    cfg = _ds(p)
    keys = flag_data("deepspeed_keys")
    assert set(cfg) <= set(keys["config_keys"])
    assert set(cfg["zero_optimization"]) <= set(keys["zero_optimization_keys"])
    micro, seq, dp = p.workload.micro_batch, p.workload.seq_tokens, p.layout.dp
    assert cfg["train_micro_batch_size_per_gpu"] == micro
    assert cfg["train_batch_size"] == micro * cfg["gradient_accumulation_steps"] * dp
    assert cfg["train_batch_size"] * seq == 2**21  # the global batch divides exactly here
    assert cfg["zero_optimization"]["stage"] == 3  # FSDP planned: ZeRO-3 shards the same states


def test_deepspeed_offload_and_zero_stage_follow_the_plan() -> None:
    p = _train("llama-3.1-8b", "h100", 8, {"zero": 2, "offload": "optimizer"})
    cfg = _ds(p)
    assert cfg["zero_optimization"]["stage"] == 2
    assert cfg["zero_optimization"]["offload_optimizer"]["device"] == "cpu"
    assert set(cfg["zero_optimization"]["offload_optimizer"]) <= set(flag_data("deepspeed_keys")["offload_keys"])


def _accelerate_doc(p: Plan) -> dict[str, Any]:
    yaml = pytest.importorskip("yaml", reason="PyYAML is in the dev and recipes-check extras")
    doc: dict[str, Any] = yaml.safe_load(dict(build_recipe(p, "accelerate").files)["accelerate_config.yaml"])
    return doc


@pytest.mark.parametrize("layout,task", [({"fsdp": True}, "train"), ({"zero": 1}, "train"), ({"zero": 0}, "lora")])
def test_accelerate_keys_are_accelerates(layout: dict[str, Any], task: str) -> None:
    p = _train("llama-3.1-8b", "h100", 8, layout, task=task)
    doc = _accelerate_doc(p)
    data = flag_data("accelerate_keys")
    assert set(doc) <= set(data["config_keys"])
    flags = set(data["flags"])
    for section, prefix in (("fsdp_config", ""), ("parallelism_config", ""), ("deepspeed_config", ""),
                            ("fp8_config", "fp8_")):
        for key in doc.get(section) or {}:
            assert f"--{prefix}{key}" in flags, (section, key)  # accelerate launch maps each key to its flag
    assert doc["num_processes"] == p.layout.gpus
    assert doc["distributed_type"] == {"fsdp": "FSDP", "zero": "DEEPSPEED" if layout.get("zero") else "MULTI_GPU"}[
        next(iter(layout))]


def test_accelerate_config_loads_in_accelerate_itself() -> None:
    config_args = pytest.importorskip("accelerate.commands.config.config_args",
                                      reason="accelerate (needs torch) is not installed here")
    p = _train("llama-3.1-8b", "h100", 8, {"fsdp": True})
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "c.yaml"
        path.write_text(dict(build_recipe(p, "accelerate").files)["accelerate_config.yaml"])
        cfg = config_args.ClusterConfig.from_yaml_file(str(path))
    assert cfg.num_processes == 8


@pytest.mark.parametrize("kind", ("torchrun-fsdp", "deepspeed"))
def test_torchrun_flags_are_torchruns(kind: str) -> None:
    for gpus in (8, 16):
        recipe = build_recipe(_train("llama-3.1-8b", "h100", gpus, {"fsdp": True}), kind)
        launcher = recipe.command.split(" train.py")[0]
        flags = _flags(launcher.split("torchrun", 1)[1])
        assert flags and set(flags) <= set(flag_data("torchrun_flags")["flags"])
        assert _value(launcher, "--nnodes") == str(max(1, gpus // 8))


def test_skypilot_task_validates_against_skypilots_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is in the dev and recipes-check extras")
    yaml = pytest.importorskip("yaml", reason="PyYAML is in the dev and recipes-check extras")
    schema = flag_data("skypilot_task_schema")["schema"]
    for p in (SERVING_PLANS["llama-70b-tp8"](), _train("llama-3.1-8b", "h100", 16, {"fsdp": True}),
              _serve("llama-3.1-8b", "mi300x", 1, context_tokens=8192)):
        task = yaml.safe_load(dict(build_recipe(p, "skypilot").files)["task.yaml"])
        jsonschema.validate(task, schema)
        jsonschema.validate(task["resources"], flag_data("skypilot_task_schema")["resources_schema"])
        accel, count = task["resources"]["accelerators"].split(":")
        assert int(count) * task["num_nodes"] == p.layout.gpus
        assert accel == {"h100-sxm": "H100", "mi300x": "MI300X"}[p.gpu.name if p.gpu else ""]


def _k8s_docs(p: Plan) -> list[dict[str, Any]]:
    yaml = pytest.importorskip("yaml", reason="PyYAML is in the dev and recipes-check extras")
    return [d for d in yaml.safe_load_all(dict(build_recipe(p, "k8s").files)["anchorgpu.yaml"]) if d]


@pytest.mark.parametrize("which", ["serve-h100", "serve-mi300x", "train-1-node", "train-2-nodes"])
def test_k8s_objects_validate_against_the_kubernetes_schema(which: str) -> None:
    kv = pytest.importorskip("kubernetes_validate", reason="kubernetes-validate is in the dev and recipes-check extras")
    p = {"serve-h100": lambda: SERVING_PLANS["llama-70b-tp8"](),
         "serve-mi300x": lambda: _serve("llama-3.1-8b", "mi300x", 1, context_tokens=8192),
         "train-1-node": lambda: _train("llama-3.1-8b", "h100", 8, {"zero": 1}),
         "train-2-nodes": lambda: _train("llama-3.1-8b", "h100", 16, {"fsdp": True})}[which]()
    docs = _k8s_docs(p)
    for doc in docs:
        kv.validate(doc, "1.33.0", strict=True)
    kinds = [d["kind"] for d in docs]
    work = next(d for d in docs if d["kind"] in ("Deployment", "Job"))
    pod = work["spec"]["template"]["spec"]
    limits = pod["containers"][0]["resources"]["limits"]
    vendor = "amd.com/gpu" if p.gpu is not None and p.gpu.vendor == "AMD" else "nvidia.com/gpu"
    assert vendor in limits
    assert ("rocm/" in pod["containers"][0]["image"]) == (vendor == "amd.com/gpu")  # never a CUDA image on AMD
    assert any(v.get("emptyDir", {}).get("medium") == "Memory" for v in pod["volumes"])
    if p.workload.task == "inference":
        assert work["kind"] == "Deployment" and limits[vendor] == p.layout.tp * p.layout.pp * p.layout.dp
    else:
        assert work["kind"] == "Job" and limits[vendor] * work["spec"].get("completions", 1) == p.layout.gpus
        if p.layout.gpus > 8:
            assert work["spec"]["completionMode"] == "Indexed" and "Service" in kinds


@pytest.mark.parametrize("make,kind,reason", [
    (lambda: SERVING_PLANS["llama-70b-tp8"](), "helm", "unknown kind"),
    (lambda: _serve("llama-3.1-8b", "a100-80gb-sxm", 1, context_tokens=4096, kv_cache="fp8"), "vllm", "no FP8 hardware"),
    (lambda: SERVING_PLANS["llama-70b-tp8"](), "deepspeed", "training recipe for an inference plan"),
    (lambda: _train("llama-3.1-8b", "h100", 8, {"fsdp": True}), "sglang", "serving engine for a train plan"),
    (lambda: _train("llama-3.1-8b", "h100", 16, {"pp": 2, "zero": 1}), "accelerate", "pipeline parallelism"),
    (lambda: _train("llama-3.1-8b", "h100", 16, {"pp": 2, "zero": 1}), "torchrun-fsdp", "pipeline parallelism"),
    (lambda: _train("llama-3.1-8b", "h100", 8, {"fsdp": True}, train_precision="fp8"), "deepspeed", "no FP8"),
    (lambda: _serve("llama-3.1-8b", "h100", 1, context_tokens=4096, weights="int4-awq"), "vllm", "cannot quantize"),
    (lambda: _serve("llama-3.1-8b", "l40s", 1, context_tokens=4096, weights="nf4"), "vllm", "cannot quantize"),
    (lambda: _serve("llama-3.1-405b", "h100", 16, tp=8, pp=2, context_tokens=4096), "k8s", "spans 16 GPUs"),
])
def test_a_recipe_that_cannot_express_the_plan_is_refused_in_one_line(make: Any, kind: str, reason: str) -> None:
    with pytest.raises(InvalidWorkload, match=reason) as err:
        build_recipe(make(), kind)
    assert "\n" not in str(err.value) and err.value.code == "recipe_not_expressible"


def test_every_kind_states_assumptions_or_limits_and_serialises() -> None:
    serving, training = SERVING_PLANS["llama-70b-tp8"](), _train("llama-3.1-8b", "h100", 8, {"fsdp": True})
    for kind in KINDS:
        p = training if kind in ("torchrun-fsdp", "deepspeed", "accelerate") else serving
        out = recipe_to_json(build_recipe(p, kind))
        assert out["kind"] == kind and out["command"] and out["tool_version"]
        assert out["cannot_set"]  # every launch leaves something to the user, and says what
        json.dumps(out)


def test_flag_data_names_tool_version_and_source() -> None:
    for name in ("vllm_flags", "sglang_flags", "trtllm_flags", "torchrun_flags", "accelerate_keys", "deepspeed_keys",
                 "skypilot_task_schema"):
        data = flag_data(name)
        assert data["tool"] and data["version"] and data["source"]
