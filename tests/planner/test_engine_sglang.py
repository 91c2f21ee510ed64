"""``--engine sglang``: memory and admission sized the way SGLang sizes itself, its figures held to SGLang's own rule
(sgl-project/sglang@001067fffe33427bee0ed2f007fb7551a1d76b44 python/sglang/srt/server_args.py
``_handle_gpu_memory_settings``: reserve = 512 MiB + 1.5 MiB x max(chunked_prefill_size, 2048) + 1 GiB x tp x pp / 8
+ 2 MiB x cuda_graph_max_bs + the prefill graphs (8 MiB a captured size, 1.5 GiB for MLA), at least 10 GiB above
60 GiB; mem_fraction_static = round((memory - reserve) / memory, 3); and
sgl-project/sglang@001ccef0072a4537d4ec6bdd50a73e6feb2c907d model_runner_kv_cache_mixin.py for the KV pool and
request pool), every face naming it."""

from __future__ import annotations

import math
import shlex

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.engine_choice import resolve_engine
from anchorgpu.planner.sglang import max_running_requests, sglang_gpu_memory_bytes, sglang_settings
from cli_runner import run, run_json

GIB = 1024**3


@pytest.mark.parametrize(("gpu", "tp", "mla", "chunk", "max_bs", "reserve_mib", "fraction"), [
    # SGLang divides by the memory nvidia-smi --query-gpu=memory.total reports (get_nvgpu_memory_capacity,
    # sgl-project/sglang@004f0c7a8d398a9c4b6844c1d8071502fa88e78c python/sglang/srt/utils/common.py; rocminfo's GPU
    # pool on AMD), gpus.toml memory_smi_mib, not CUDA's total: these moved from 0.811, 0.829, 0.848 when the
    # planner divided by the CUDA total (81,079 MiB on an H100)
    # H100 80GB HBM3, TP 8: 512 + 12,288 + 1,024 + 1,024 + 58 prefill graph sizes x 8 = 15,312 MiB of nvidia-smi's
    # 81,559 MiB: round(66,247 / 81,559, 3) = 0.812
    ("h100", 8, False, 8192, 512, 15312, 0.812),
    # the same on TP 1: 512 + 12,288 + 128 + 512 + 464 = 13,904 MiB: round(67,655 / 81,559, 3) = 0.830
    ("h100", 1, False, 8192, 256, 13904, 0.830),
    # H200 (nvidia-smi 143,771 MiB), an MLA model on TP 8: 512 + 12,288 + 1,024 + 1,024 + 1,536 = 16,384 MiB:
    # round(127,387 / 143,771, 3) = 0.886
    ("h200", 8, True, 8192, 512, 16384, 0.886),
    # B200, nvidia-smi 183,359 MiB: the 16k chunk, 74 prefill graph sizes: 512 + 24,576 + 1,024 + 1,024 + 592 =
    # 27,728 MiB: round(155,631 / 183,359, 3) = 0.849
    ("b200", 8, False, 16384, 512, 27728, 0.849),
    # L40S, nvidia-smi 46,068 MiB, below the floor: 512 + 6,144 + 128 + 64 + 50 x 8 = 7,248: round(38,820 / 46,068) 0.843
    ("l40s", 1, False, 4096, 32, 7248, 0.843),
    # MI300X, rocminfo's 201,310,208 KB = 196,592 MiB (the ROCm runtime's total too): round(168,864 / 196,592) 0.859
    ("mi300x", 8, False, 16384, 512, 27728, 0.859),
    # L4, nvidia-smi 23,034 MiB (thamada/nvidia-smi gls/L4_smi.py), below the 60 GiB floor: 512 + 3,072 + 128 + 48 +
    # 42 x 8 = 4,096 MiB: round(18,938 / 23,034, 3) = 0.822 (0.833 of the catalog's 24 GiB before the figure was sourced)
    ("l4", 1, False, 2048, 24, 4096, 0.822),
])
def test_the_memory_fraction_is_sglangs_rule(gpu: str, tp: int, mla: bool, chunk: int, max_bs: int,
                                             reserve_mib: int, fraction: float) -> None:
    s = sglang_settings(sglang_gpu_memory_bytes(get_gpu(gpu)), tp=tp, pp=1, mla=mla)
    assert (s.chunked_prefill_size, s.cuda_graph_max_bs, s.reserve_mib, s.mem_fraction_static, s.derived) == (
        chunk, max_bs, reserve_mib, fraction, True)
    smi_mib = get_gpu(gpu).memory_smi_mib or get_gpu(gpu).memory_bytes / 2**20
    assert fraction == round((smi_mib - reserve_mib) / smi_mib, 3)  # SGLang's formula on the figure it reads


def test_a_plan_divides_by_nvidia_smis_total_and_sizes_the_pool_from_cudas() -> None:
    """On an H100 the fraction is 0.83 of nvidia-smi's 81,559 MiB (0.829 of CUDA's 81,079 would be SGLang on a GPU
    it does not run on), while the KV pool is that share of the memory free at start, from CUDA's total."""
    gpu = get_gpu("h100")
    p = plan(load_model("llama-3.1-8b"), Workload(engine="sglang", context_tokens=8192), layout=Layout(gpus=1),
             gpu=gpu, suggest=False)
    b = p.breakdown
    assert p.workload.gpu_memory_utilization == 0.83 != sglang_settings(gpu.memory_bytes, tp=1, pp=1).mem_fraction_static
    start_free = gpu.memory_bytes - b["cuda_context_outside_budget_bytes"] - b["non_torch_bytes"]
    assert b["kv_cache_capacity_bytes"] == int(0.83 * start_free) - p.per_gpu.weights_bytes


def test_the_ten_gib_floor_and_a_given_fraction() -> None:
    # a 2,048-token chunk on an H100 reserves 4,560 MiB by the sum, 10 GiB by the floor (memory above 60 GiB)
    assert sglang_settings(80 * GIB, tp=1, pp=1, chunked_prefill_size=2048).mem_fraction_static == round(
        (81920 - 10240) / 81920, 3)
    given = sglang_settings(80 * GIB, tp=8, pp=1, mem_fraction_static=0.7)
    assert (given.mem_fraction_static, given.derived) == (0.7, False)


def test_the_kv_pool_and_admission_are_sglangs() -> None:
    model, gpu = load_model("llama-3.1-70b"), get_gpu("h100")
    p = plan(model, Workload(engine="sglang", prompt_tokens=1000, output_tokens=200, concurrency=64),
             layout=Layout(gpus=8, tp=8), gpu=gpu, suggest=False)
    w, b = p.workload, p.breakdown
    assert (w.gpu_memory_utilization, w.max_num_batched_tokens, w.block_size_tokens) == (0.812, 8192, 1)
    # profile_max_num_token: mem_fraction_static of the memory free at start (CUDA context, NCCL taken) less weights
    start_free = gpu.memory_bytes - b["cuda_context_outside_budget_bytes"] - b["non_torch_bytes"]
    assert b["kv_cache_capacity_bytes"] == int(0.812 * start_free) - p.per_gpu.weights_bytes
    assert b["sglang_reserve_bytes"] == start_free - int(0.812 * start_free)
    # one token slot: 80 layers x 8 KV heads / TP 8 x 128 x (K, V) x 2 bytes = 40,960 bytes a token a GPU
    assert b["kv_pool_tokens"] == b["kv_cache_capacity_bytes"] // 40960
    # max_running_requests: half the pool's tokens, at most min(max(tokens / context_len x 512, 2,048), 4,096), where
    # context_len is the launch's --context-length, the plan's 1,200 tokens (sgl-project/sglang@001adf5
    # python/sglang/srt/configs/model_config.py: ModelConfig.from_server_args passes server_args.context_length),
    # not the model's 131,072 (which would give 2,048)
    pool = min(max(int(b["kv_pool_tokens"] / 1200 * 512), 2048), 4096)
    assert w.context_tokens == 1200 and pool == 4096
    assert w.max_num_seqs == min(b["kv_pool_tokens"] // 2, pool) == 4096
    assert b["sampler_logits_bytes"] == 0 and p.fits
    line = next(a for a in p.assumptions if a.startswith("Serving engine sized like SGLang"))
    assert "mem_fraction_static 0.812" in line and "15,312 MiB" in line


def test_weights_above_the_fraction_leave_a_budget_below_the_gpu_short_by_their_excess() -> None:
    """Llama 3.1 70B in BF16 on one H100 at 32 x 8,192 tokens: SGLang's weights and KV pool must fit in
    mem_fraction_static of the memory free at start (profile_max_num_token), so the plan is short by the weights and
    KV cache over that share. A pool clamped at 0 once left the budget at the weights' own 133 GiB (above the GPU's
    79.18) and the shortfall at the KV cache alone (80.00 GiB); the sweep sizes the budget the same way."""
    from anchorgpu.catalog import load_catalog
    from anchorgpu.planner.sweep import sweep
    from anchorgpu.planner.sweep_types import SweepSpec
    from anchorgpu.recommend import shapes_from_catalog

    model, gpu = load_model("llama-3.1-70b"), get_gpu("h100")
    w = Workload(engine="sglang", context_tokens=8192, concurrency=32)
    p = plan(model, w, layout=Layout(gpus=1), gpu=gpu, suggest=False)
    b, share = p.breakdown, p.workload.gpu_memory_utilization
    start_free = gpu.memory_bytes - b["cuda_context_outside_budget_bytes"] - b["non_torch_bytes"]
    assert not p.fits and p.budget_bytes is not None and p.budget_bytes < gpu.memory_bytes
    assert -p.headroom_bytes == p.per_gpu.weights_bytes + p.per_gpu.kv_cache_bytes - int(share * start_free)
    assert round(-p.headroom_bytes / GIB, 2) == 146.24  # 131.42 + 80.00 - 0.83 x 78.53 GiB
    shapes = tuple(s for s in shapes_from_catalog(load_catalog().offerings, max_servers=1) if s.gpu.name == gpu.name)
    rows = sweep(model, shapes, SweepSpec(workload=w, weights=("bf16",)))
    one = next(i for i in range(rows.evaluated) if rows.row(i)["gpus"] == 1)
    assert rows.row(one)["budget_bytes"] == p.budget_bytes and rows.row(one)["fits"] is False


def test_an_fp8_mla_model_on_rocm_dequantises_its_absorbed_weights() -> None:
    from anchorgpu.planner.speed.serving_setup import sglang_step_terms

    r1 = load_model("deepseek-r1")
    for gpu, expected in (("mi300x", True), ("h200", False)):
        p = plan(r1, Workload(engine="sglang", concurrency=4), precision=PrecisionPlan(weights="fp8-block128x128"),
                 layout=Layout(gpus=8, tp=8), gpu=get_gpu(gpu), suggest=False)
        graphs, dequant = sglang_step_terms(p)
        assert dequant is expected and graphs[-1] == 512 and 12 in graphs


def test_the_recipe_launches_the_engine_with_the_plans_own_figures(capsys: pytest.CaptureFixture[str]) -> None:
    assert resolve_engine(None, "sglang") == "sglang"
    out = run_json(capsys, "plan", "llama-3.1-70b", "--gpu", "h100", "--gpus", "8", "--recipe", "sglang",
                   "--prompt", "1000", "--output-tokens", "200", "--concurrency", "64")
    w = out["workload"]
    assert w["engine"] == "sglang"
    words = shlex.split(out["recipe"]["command"].replace("\\\n", " "))
    flag = {name: words[words.index(name) + 1] for name in ("--mem-fraction-static", "--max-running-requests",
                                                              "--chunked-prefill-size")}
    assert math.isclose(float(flag["--mem-fraction-static"]), w["gpu_memory_utilization"])
    assert int(flag["--max-running-requests"]) == w["max_num_seqs"]
    assert int(flag["--chunked-prefill-size"]) == w["max_num_batched_tokens"]
    # the cap is SGLang's own default under the launch's --context-length (its request pool is sized by it)
    assert int(words[words.index("--context-length") + 1]) == w["context_tokens"] == 1200
    b = out["breakdown"]
    assert w["max_num_seqs"] == max_running_requests(b["kv_pool_tokens"], 1200)


def test_the_verdict_names_what_the_budget_holds(capsys: pytest.CaptureFixture[str]) -> None:
    """The budget is the activations, non-torch memory and mem_fraction_static of the memory free at start (its KV
    pool a share of it after the weights), as the verdict says: it once left the non-torch memory out."""
    p = plan(load_model("llama-3.1-70b"), Workload(engine="sglang", prompt_tokens=1000, output_tokens=200,
                                                   concurrency=64), layout=Layout(gpus=4, tp=4), gpu=get_gpu("h100"),
             suggest=False)
    b = p.breakdown
    start_free = p.gpu.memory_bytes - b["cuda_context_outside_budget_bytes"] - b["non_torch_bytes"]
    assert p.budget_bytes == (b["prefill_activation_bytes"] + b["non_torch_bytes"]
                              + int(p.workload.gpu_memory_utilization * start_free))
    code, text, _ = run(capsys, "plan", "llama-3.1-70b", "--gpu", "h100", "--gpus", "4", "--engine", "sglang",
                        "--prompt", "1000", "--output-tokens", "200", "--concurrency", "64")
    assert code == 0 and "(SGLang: the activations and non-torch memory plus mem_fraction_static" in " ".join(text.split())


def test_the_cli_refuses_another_engines_launch(capsys: pytest.CaptureFixture[str]) -> None:
    for engine, recipe in (("vllm", "sglang"), ("sglang", "vllm"), ("sglang", "trtllm")):
        code, out, err = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--engine", engine, "--recipe", recipe)
        assert code == 2 and not out and len(err.strip().splitlines()) == 1, (engine, recipe)
        assert f"--recipe {recipe}: the plan is sized for" in err



def test_a_step_budget_past_sglangs_prefill_limit_raises_it_too(capsys: pytest.CaptureFixture[str]) -> None:
    """SGLang charges every prompt chunk against both ``chunked_prefill_size`` and ``max_prefill_tokens`` (16,384 by
    default: sgl-project/sglang ``python/sglang/srt/managers/schedule_policy.py`` ``PrefillAdder``), so a recipe whose
    budget is past the default must raise both (stop 57, ttftcont's "left"); at the default budget it gives neither."""
    def flags(*extra: str) -> list[str]:
        out = run_json(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--recipe", "sglang",
                       "--prompt", "4000", "--output-tokens", "10", "--concurrency", "16", *extra)
        return shlex.split(out["recipe"]["command"].replace("\\\n", " "))
    words = flags("--max-num-batched-tokens", "20000")
    assert words[words.index("--chunked-prefill-size") + 1] == words[words.index("--max-prefill-tokens") + 1] == "20000"
    assert "--max-prefill-tokens" not in flags()
