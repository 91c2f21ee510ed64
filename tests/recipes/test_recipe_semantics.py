"""Launch recipes read as an engineer reads them (QA pass on issue 15): each value checked against the plan and
against what the tool does with it, not only against the tool's flag list.

Found by trying plans as a new user: ``--max-num-batched-tokens 512`` gave ``vllm serve --max-num-seqs 1024
--max-num-batched-tokens 512``, which vLLM refuses at start-up; ``recommend`` of a vision model counted the image
tokens twice (``--max-model-len 10930`` for a 9,561-token plan, every row refused without ``--context``); a
context beyond the model's window gave an engine command that refuses to start; an SGLang replica over two
servers had no multi-node flags and TensorRT-LLM's was printed as if one server held it; the plan's expert
parallelism vanished from training launches; the k8s Job ran ``train.py`` from the read-only ConfigMap mount and
lost the allocator settings over several servers; ``recommend flux.1-dev --recipe vllm`` ignored ``--recipe``.
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
from anchorgpu.recipes import build_recipe, flag_data
from cli_runner import run, run_json


def _serve(model: str, gpu: str, gpus: int, **kw: Any) -> Plan:
    prec = PrecisionPlan(**{k: kw.pop(k) for k in ("weights", "kv_cache") if k in kw})
    lay = Layout(gpus=gpus, **{k: kw.pop(k) for k in ("tp", "pp") if k in kw})
    return plan(load_model(model), Workload(**kw), precision=prec, layout=lay, gpu=get_gpu(gpu))


def _train(model: str, gpu: str, gpus: int, layout: dict[str, Any], **kw: Any) -> Plan:
    return plan(load_model(model), Workload(task=kw.pop("task", "train"), **kw), layout=Layout(gpus=gpus, **layout),
                gpu=get_gpu(gpu))


def _words(command: str) -> list[str]:
    return shlex.split(command.replace("\\\n", " "))


def _value(command: str, flag: str) -> str:
    words = _words(command)
    return words[words.index(flag) + 1]


@pytest.mark.parametrize("gpu,tokens", [("h100", 512), ("h100", 100), ("l40s", 128), ("h100", None), ("l4", None)])
def test_the_sequence_cap_never_exceeds_the_token_budget_vllm_refuses_that(gpu: str, tokens: int | None) -> None:
    p = _serve("llama-3.1-8b", gpu, 1, context_tokens=8192, max_num_batched_tokens=tokens)
    cmd = build_recipe(p, "vllm").command
    seqs, budget = int(_value(cmd, "--max-num-seqs")), int(_value(cmd, "--max-num-batched-tokens"))
    assert seqs <= budget, cmd  # vLLM SchedulerConfig: max_num_batched_tokens must be >= max_num_seqs
    assert (seqs, budget) == (p.workload.max_num_seqs, p.workload.max_num_batched_tokens)  # what the memory used
    if tokens is None:  # the defaults stay vLLM's own
        assert (budget, seqs) == ((8192, 1024) if gpu == "h100" else (2048, 256))
    assert int(_value(build_recipe(p, "trtllm").command, "--max_batch_size")) == seqs


def test_a_vision_models_recommendation_launches_the_sequence_it_planned(capsys: pytest.CaptureFixture[str]) -> None:
    planned = run_json(capsys, "plan", "qwen2.5-vl-7b", "--context", "8k", "--concurrency", "16", "--gpu", "l40s")
    sequence = planned["workload"]["context_tokens"]  # 8,192 text + the image's tokens
    assert sequence > 8192
    body = run_json(capsys, "recommend", "qwen2.5-vl-7b", "--context", "8k", "--concurrency", "16", "--term", "1month",
                    "--top", "2", "--recipe", "vllm")
    assert body["results"]
    for row in body["results"]:
        assert row["recipe"] is not None, row.get("recipe_refused")
        assert int(_value(row["recipe"]["command"], "--max-model-len")) == sequence
    default = run_json(capsys, "recommend", "qwen2.5-vl-7b", "--concurrency", "16", "--term", "1month", "--top", "2",
                       "--recipe", "vllm")  # no --context: the model's window, images inside it
    assert default["results"] and all(r["recipe"] is not None for r in default["results"]), \
        [r.get("recipe_refused") for r in default["results"]]


def test_a_recommendation_sized_by_its_request_launches_that_request(capsys: pytest.CaptureFixture[str]) -> None:
    """``--prompt 1000 --output-tokens 500`` and no context: the sweep holds each sequence at prompt + output (+ the
    image's tokens), so every row fits; each row's launch was planned again at the model's default context instead,
    and a vision model's rows on one GPU were all refused as not fitting (qwen3-vl-30b-a3b on an A100 80 GB: short by
    11.46 GiB). Now each launch plans the row's request, on the CLI and the API alike."""
    planned = run_json(capsys, "plan", "qwen3-vl-30b-a3b", "--prompt", "1000", "--output-tokens", "500", "--gpu",
                       "a100-80gb-sxm")
    sequence = planned["workload"]["context_tokens"]  # 1,500 text + 1,024 image tokens
    body = run_json(capsys, "recommend", "qwen3-vl-30b-a3b", "--concurrency", "1", "--prompt", "1000",
                    "--output-tokens", "500", "--term", "1month", "--top", "3", "--recipe", "vllm")
    assert body["results"]
    for row in body["results"]:
        assert row["recipe"] is not None, row.get("recipe_refused")
        assert int(_value(row["recipe"]["command"], "--max-model-len")) == sequence
    from fastapi.testclient import TestClient

    from anchorgpu.api import create_app

    api = TestClient(create_app()).post("/v1/recommend", json={
        "model": "qwen3-vl-30b-a3b", "concurrency": 1, "prompt": 1000, "output_tokens": 500, "term": "1month",
        "top": 3, "recipe": "vllm"})
    assert api.status_code == 200 and all(r["recipe"] is not None for r in api.json()["results"])


def test_recommend_refuses_a_recipe_for_a_diffusion_pipeline_as_the_api_does(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "recommend", "flux.1-dev", "--term", "1week", "--recipe", "vllm")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "diffusion pipelines have no launch recipe" in err


def test_a_context_beyond_the_models_window_is_launched_with_the_engines_own_switch() -> None:
    long = _serve("llama-3.1-8b", "h100", 4, tp=4, context_tokens=1_048_576, allow_long_context=True)
    vllm, sglang = build_recipe(long, "vllm"), build_recipe(long, "sglang")
    assert _words(vllm.command)[:2] == ["VLLM_ALLOW_LONG_MAX_MODEL_LEN=1", "vllm"]
    assert _words(sglang.command)[:2] == ["SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1", "python"]
    assert _value(vllm.command, "--max-model-len") == str(long.workload.context_tokens)
    assert any("RoPE scaling" in c for c in vllm.cannot_set)
    within = _serve("llama-3.1-8b", "h100", 1, context_tokens=8192)
    assert _words(build_recipe(within, "vllm").command)[0] == "vllm"


def test_one_replica_over_two_servers() -> None:
    p = _serve("llama-3.1-405b", "h100", 16, tp=8, pp=2, context_tokens=4096)
    sglang = build_recipe(p, "sglang").command
    assert _value(sglang, "--nnodes") == "2" and _value(sglang, "--node-rank") == "$NODE_RANK"
    assert _value(sglang, "--dist-init-addr").startswith("$MASTER_ADDR:")
    assert {"--nnodes", "--node-rank", "--dist-init-addr"} <= set(flag_data("sglang_flags")["flags"])
    assert any("Ray cluster" in a for a in build_recipe(p, "vllm").assumptions)
    with pytest.raises(InvalidWorkload, match="MPI launcher") as err:
        build_recipe(p, "trtllm")
    assert "\n" not in str(err.value) and err.value.code == "recipe_not_expressible"
    one_server = _serve("llama-3.1-70b", "h100", 8, context_tokens=8192)
    assert "--nnodes" not in build_recipe(one_server, "sglang").command


def test_the_plans_expert_parallelism_reaches_every_training_launch() -> None:
    p = _train("mixtral-8x7b", "h100", 16, {"ep": 8, "fsdp": True})
    assert p.layout.ep == 8
    torchrun = build_recipe(p, "torchrun-fsdp")
    assert json.loads(dict(torchrun.files)["anchorgpu_train.json"])["expert_parallel"] == 8
    for kind in ("deepspeed", "accelerate"):
        assert any("EP 8" in c for c in build_recipe(p, kind).cannot_set), kind


@pytest.mark.parametrize("state", ["bf16-moments", "bf16"])
def test_a_planned_optimizer_state_and_loss_reach_every_training_launch(state: str) -> None:
    """The memory was planned with AdamW's state in bf16 and Transformer Engine's fused loss: where a framework config
    has no such switch the launch says the script must build them (and torchrun's settings carry the state); a bf16
    master with bf16 moments is DeepSpeed's own bf16_master_weights_and_grads + bf16_optimizer_states
    (tests/recipes/test_train_precision_recipes.py)."""
    p = _train("llama-3.2-1b", "h100", 8, {"fsdp": True}, optimizer_state=state, cross_entropy="te")
    torchrun = build_recipe(p, "torchrun-fsdp")
    assert json.loads(dict(torchrun.files)["anchorgpu_train.json"])["optimizer_state"] == state
    for kind in ("torchrun-fsdp", "deepspeed", "accelerate"):
        cannot = build_recipe(p, kind).cannot_set
        in_config = kind == "deepspeed" and state == "bf16"
        assert any(f"AdamW's state in {state}" in c for c in cannot) != in_config, kind
        assert any("te cross-entropy" in c for c in cannot), kind


def _k8s_work(p: Plan) -> dict[str, Any]:
    yaml = pytest.importorskip("yaml", reason="PyYAML is in the dev and recipes-check extras")
    docs = [d for d in yaml.safe_load_all(dict(build_recipe(p, "k8s").files)["anchorgpu.yaml"]) if d]
    config = next(d for d in docs if d["kind"] == "ConfigMap")
    work = next(d for d in docs if d["kind"] == "Job")
    return {"files": set(config["data"]), "container": work["spec"]["template"]["spec"]["containers"][0]}


@pytest.mark.parametrize("gpus,layout", [(8, {"zero": 1}), (8, {"fsdp": True}), (16, {"fsdp": True})])
def test_the_k8s_job_reads_its_files_from_the_mount_and_runs_the_images_script(gpus: int, layout: dict[str, Any]) -> None:
    found = _k8s_work(_train("llama-3.1-8b", "h100", gpus, layout))
    container, script = found["container"], found["container"]["command"][-1]
    assert "workingDir" not in container  # train.py is the image's, not on the read-only ConfigMap mount
    mount = next(m for m in container["volumeMounts"] if m["name"] == "recipe")
    for name in found["files"]:
        assert f" {mount['mountPath']}/{name}" in script and f" {name}" not in script
    if "torchrun-fsdp" in json.dumps(container) or "--config" in script:
        assert script.startswith("OMP_NUM_THREADS=8 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True torchrun")


def test_a_cluster_recipes_refusal_names_the_kind_asked_for() -> None:
    p = _train("llama-3.1-8b", "h100", 16, {"pp": 2, "zero": 1})
    for kind in ("k8s", "skypilot"):
        with pytest.raises(InvalidWorkload, match=rf"^--recipe {kind}: pipeline parallelism .*\(in its deepspeed launch\)$"):
            build_recipe(p, kind)


@pytest.mark.parametrize("make", [lambda: _serve("llama-3.1-70b", "h100", 8, context_tokens=8192, concurrency=32),
                                  lambda: _serve("llama-3.1-8b", "l4", 1, context_tokens=8192),
                                  lambda: _serve("deepseek-v3", "h200", 8, context_tokens=8192)])
def test_sglangs_static_fraction_leaves_the_planned_activations_outside_it(make: Any) -> None:
    """SGLang's --mem-fraction-static is weights + KV cache only; the plan's 0.9 is vLLM's whole-engine cap (weights,
    KV cache, activations). Passing 0.9 gave SGLang the activations' room on top of the plan."""
    p = make()
    recipe = build_recipe(p, "sglang")
    fraction = float(_value(recipe.command, "--mem-fraction-static"))
    assert p.gpu is not None and fraction < p.workload.gpu_memory_utilization
    static = fraction * p.gpu.memory_bytes
    assert static + p.per_gpu.activations_bytes + p.per_gpu.overhead_bytes <= p.breakdown["engine_budget_bytes"]
    assert static >= p.per_gpu.weights_bytes + p.per_gpu.kv_cache_bytes  # what the plan puts in it still fits
    assert any(f"--mem-fraction-static {fraction:g}" in a for a in recipe.assumptions)


def test_vllm_holds_a_vision_model_to_the_images_planned_per_request() -> None:
    two = _serve("qwen2.5-vl-7b", "l40s", 1, prompt_tokens=1000, output_tokens=200, concurrency=16,
                 images_per_request=2, image_resolution=(1024, 1024))
    cmd = build_recipe(two, "vllm").command
    assert json.loads(_value(cmd, "--limit-mm-per-prompt")) == {"image": 2}
    assert "--limit-mm-per-prompt" in flag_data("vllm_flags")["flags"]
    none = _serve("qwen2.5-vl-7b", "l40s", 1, context_tokens=4096, images_per_request=0)
    assert json.loads(_value(build_recipe(none, "vllm").command, "--limit-mm-per-prompt")) == {"image": 0}
    assert "--limit-mm-per-prompt" not in build_recipe(_serve("llama-3.1-8b", "h100", 1, context_tokens=4096), "vllm").command


def test_the_sequence_cap_is_explained_against_the_concurrency_asked_for() -> None:
    asked = build_recipe(_serve("llama-3.1-70b", "h100", 8, context_tokens=8192, concurrency=32), "vllm")
    assert _value(asked.command, "--max-num-seqs") == "1024"  # what the memory was sized with (vLLM's default)
    note = next(a for a in asked.assumptions if a.startswith("Sequence cap 1,024"))
    # 49.29 GiB of KV cache a GPU (0.9 x the H100's 79.18 GiB CUDA total, gpus.toml, less an eighth of the weights and
    # the profile) / 0.3125 GiB an 8,192-token sequence's eighth = 157.7: the plan's max_concurrency
    assert "holds 157 sequences of 8,192 tokens" in note and "set the cap to 32" in note
    unasked = build_recipe(_serve("llama-3.1-70b", "h100", 8, context_tokens=8192), "vllm")
    assert not any(a.startswith("Sequence cap") for a in unasked.assumptions)


def test_an_encoder_decoder_model_gets_no_chunked_prefill_and_is_told_why() -> None:
    """QA pass: Whisper (an encoder-decoder) was launched with --enable-chunked-prefill, which vLLM turns off for
    encoder-decoder models; a decoder-only model keeps it."""
    whisper = build_recipe(_serve("whisper-large-v3", "l40s", 1), "vllm")
    assert "--enable-chunked-prefill" not in _words(whisper.command)
    assert any(a.startswith("Chunked prefill: not set; whisper-large-v3 is an encoder-decoder model")
               for a in whisper.assumptions)
    assert "--max-num-batched-tokens" in _words(whisper.command)  # the budget the memory was sized with stays
    llama = build_recipe(_serve("llama-3.1-8b", "h100", 1, context_tokens=4096), "vllm")
    assert "--enable-chunked-prefill" in _words(llama.command)
    assert not any(a.startswith("Chunked prefill") for a in llama.assumptions)


def test_accelerate_over_several_servers_reads_rank_and_address_from_the_environment_as_torchrun_does() -> None:
    """QA pass: accelerate_config.yaml had main_process_ip set to the literal text MASTER_ADDR (the YAML cannot
    read the environment). Now the launch passes $NODE_RANK and $MASTER_ADDR, which the user sets on each server,
    as the torchrun recipe does, and says so under "could not set"; the YAML keeps only valid keys."""
    yaml = pytest.importorskip("yaml", reason="PyYAML is in the dev and recipes-check extras")
    p = _train("llama-3.1-8b", "h100", 16, {"fsdp": True})
    recipe = build_recipe(p, "accelerate")
    doc = yaml.safe_load(dict(recipe.files)["accelerate_config.yaml"])
    assert "main_process_ip" not in doc and "MASTER_ADDR" not in dict(recipe.files)["accelerate_config.yaml"]
    assert (doc["num_machines"], doc["num_processes"], doc["main_process_port"]) == (2, 16, 29500)
    assert set(doc) <= set(flag_data("accelerate_keys")["config_keys"])
    words = _words(recipe.command)
    assert _value(recipe.command, "--machine_rank") == "$NODE_RANK"
    assert _value(recipe.command, "--main_process_ip") == "$MASTER_ADDR"
    assert {w for w in words if w.startswith("--")} <= set(flag_data("accelerate_keys")["flags"])
    torchrun = build_recipe(p, "torchrun-fsdp")
    assert _value(torchrun.command, "--master-addr") == "$MASTER_ADDR"
    told = "On each of the 2 servers set NODE_RANK (0 .. 1) and MASTER_ADDR (the first server's address)."
    assert told in recipe.cannot_set and told in torchrun.cannot_set
    single = yaml.safe_load(dict(build_recipe(_train("llama-3.1-8b", "h100", 8, {"fsdp": True}), "accelerate").files)[
        "accelerate_config.yaml"])
    assert single["machine_rank"] == 0 and "main_process_ip" not in single
