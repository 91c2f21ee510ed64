"""The NVFP4 KV cache: ``--kv-cache nvfp4`` (plan, recommend, model, API, page) and the default of a ModelOpt
checkpoint whose ``hf_quant_config.json`` says ``kv_cache_quant_algo: NVFP4``.

Bytes: FP4 E2M1 values and one FP8 E4M3 scale per 16, 0.5 + 1/16 = 0.5625 bytes a value, as all three engines store
it (vLLM 0.33.0 ``vllm/utils/torch_utils.py`` ``nvfp4_kv_cache_full_dim``: ``head_size // 2 + head_size // 16``;
NVIDIA/TensorRT-LLM ``tensorrt_llm/_torch/pyexecutor/resource_manager.py`` at 001541bad83b84ae4c5c4a279e464572d5f690f7,
``get_cache_size_per_token``: ``ceil(n / 2) + ceil(n / 16)``; SGLang 0.5.23 ``sglang/srt/mem_cache/memory_pool.py``
``MHATokenToKVPoolFP4``: a ``k // 2`` data buffer and an ``n·k // 16`` scale buffer a token), so 0.5625 of an FP8
cache's bytes, 0.28125 of a 16-bit one's.

Fixtures: no real ``hf_quant_config.json`` with an NVFP4 KV cache is in the stored public code (searched); the
ModelOpt checkpoint here is the real DeepSeek-R1 file ``tests/architectures/modelopt/deepseek-r1-nvfp4.hf_quant_config
.json`` (peaceh-nv/TensorRT-LLM, commit 8d8be36b538750351b725de99a2606342f982b59: ModelOpt 0.23.0, NVFP4,
``kv_cache_quant_algo`` null) with that one field set to ``"NVFP4"``, the value ModelOpt writes for an NVFP4 KV cache
(TensorRT-LLM's ``QuantAlgo.NVFP4``, ``_apply_modelopt_quant_config``), and the same ``quantization`` block with
FP8 weights on the registry's Llama 3.1 8B for the byte arithmetic (a GQA model without MLA, which vLLM runs).
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from anchorgpu.architectures import from_hf_config, load_model, model_to_json
from anchorgpu.architectures._modelopt import modelopt_quantization_config
from anchorgpu.architectures.registry import read_data_text, resolve
from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.catalog import load_catalog
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.inputs import KV_CACHE_DTYPES
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recipes import build_recipe, flag_data
from anchorgpu.recommend import recommend
from cli_runner import run, run_json

HERE = Path(__file__).resolve().parents[1] / "architectures" / "modelopt"
DSR1 = json.loads((HERE / "deepseek-r1-nvfp4.hf_quant_config.json").read_text())
DSR1_NVFP4_KV = {**DSR1, "quantization": {**DSR1["quantization"], "kv_cache_quant_algo": "NVFP4"}}
LLAMA_NVFP4_KV = {"producer": DSR1["producer"],
                  "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "NVFP4", "exclude_modules": ["lm_head"]}}
WORK = Workload(task="inference", context_tokens=8192)
LLAMA_KV_VALUES = 8192 * 32 * 2 * 8 * 128  # tokens x layers x K,V x KV heads x head dim (Llama 3.1 8B)


def _on(name: str, block: dict[str, Any], model_name: str) -> ModelSpec:
    info = resolve(name)
    assert info is not None
    cfg = json.loads(read_data_text(info.file))
    cfg["quantization_config"] = modelopt_quantization_config(block, where="hf_quant_config.json")
    return from_hf_config(cfg, name=model_name, source="test")


LLAMA = _on("llama-3.1-8b", LLAMA_NVFP4_KV, "llama-fp8-nvfp4-kv")
DEEPSEEK = _on("deepseek-r1", DSR1_NVFP4_KV, "deepseek-r1-nvfp4-kv")


def _kv_lines(p: Any) -> list[str]:
    return [a for a in p.assumptions if a.startswith("KV cache: ")]


def test_an_nvfp4_kv_cache_is_0_5625_bytes_a_value_against_fp8() -> None:
    assert KV_CACHE_DTYPES["nvfp4"] == 0.5 + 1 / 16
    base = load_model("llama-3.1-8b")
    nv, fp8, bf16 = (plan(base, WORK, precision=PrecisionPlan(kv_cache=k), gpu=get_gpu("b200"))
                     for k in ("nvfp4", "fp8", "bf16"))
    assert nv.per_gpu.kv_cache_bytes == LLAMA_KV_VALUES * 9 // 16 == 301_989_888
    assert nv.per_gpu.kv_cache_bytes / fp8.per_gpu.kv_cache_bytes == 0.5625
    assert nv.per_gpu.kv_cache_bytes / bf16.per_gpu.kv_cache_bytes == 0.28125
    # the capacity the engine reserves holds more sequences, and decode reads fewer bytes a token
    assert nv.max_concurrency is not None and fp8.max_concurrency is not None and nv.max_concurrency > fp8.max_concurrency
    assert (nv.breakdown["kv_cache_capacity_bytes"] == fp8.breakdown["kv_cache_capacity_bytes"])
    doc = model_to_json(base, kv_cache="nvfp4")
    assert doc["kv_bytes_per_token"] == 32 * 2 * 8 * 128 * 9 // 16 == 36_864
    assert doc["kv_bytes_per_sequence_at_context"] * 16 == model_to_json(base, kv_cache="fp8")[
        "kv_bytes_per_sequence_at_context"] * 9


def test_an_mla_latent_cache_shrinks_the_same_way() -> None:
    ds = load_model("deepseek-r1")
    layout = {"gpus": 8}

    nv, fp8 = (plan(ds, WORK, precision=PrecisionPlan(weights="nvfp4", kv_cache=k), layout=Layout(**layout),
                    gpu=get_gpu("b200")) for k in ("nvfp4", "fp8"))
    assert nv.per_gpu.kv_cache_bytes / fp8.per_gpu.kv_cache_bytes == 0.5625


def test_the_serving_speed_reads_the_nvfp4_bytes_and_says_the_kernels_are_not_timed() -> None:
    from anchorgpu.planner.speed.estimate import plan_performance
    from anchorgpu.planner.speed.serving_plan import NVFP4_KV_SPEED_LINE
    from anchorgpu.planner.speed.serving_setup import serving_setup

    base = load_model("llama-3.1-8b")
    nv, fp8 = (plan(base, WORK, precision=PrecisionPlan(kv_cache=k), gpu=get_gpu("b200")) for k in ("nvfp4", "fp8"))
    read_nv = serving_setup(nv, prompt_tokens=4096, output_tokens=512)
    read_fp8 = serving_setup(fp8, prompt_tokens=4096, output_tokens=512)
    assert read_nv.kv_bytes_per_sequence_per_gpu / read_fp8.kv_bytes_per_sequence_per_gpu == 0.5625
    assert NVFP4_KV_SPEED_LINE in plan_performance(nv)["assumptions"]
    assert NVFP4_KV_SPEED_LINE not in plan_performance(fp8)["assumptions"]
    # the same reserved cache holds more long sequences at once (short ones hit vLLM's max_num_seqs either way)
    long_nv, long_fp8 = (plan_performance(p, prompt_tokens=32_000, output_tokens=1_000) for p in (nv, fp8))
    assert long_nv["saturation_concurrency"] > long_fp8["saturation_concurrency"]


def test_the_checkpoints_nvfp4_kv_cache_is_the_default_where_the_engine_runs_it() -> None:
    # vLLM's auto maps ModelOpt's NVFP4 to nvfp4 on any GPU (get_kv_cache_quant_algo_string) and its FlashInfer
    # backend runs it on Ampere, Ada and Hopper (FA2) as on Blackwell; TensorRT-LLM runs it on Blackwell only
    for engine, gpus in (("vllm", (None, "b200", "rtx-pro-6000", "h100", "a100", "l40s")),
                         ("trtllm", (None, "b200", "rtx-pro-6000"))):
        for name in gpus:
            p = plan(LLAMA, replace(WORK, engine=engine), gpu=get_gpu(name) if name else None)
            assert p.precision.kv_cache == "nvfp4" and p.per_gpu.kv_cache_bytes == LLAMA_KV_VALUES * 9 // 16
            (line,) = _kv_lines(p)
            assert line.startswith("KV cache: nvfp4, as the checkpoint ships it (quantization_config modelopt "
                                   "kv_cache_quant_algo NVFP4: calibrated scales; ")
            assert ("get_kv_cache_quant_algo_string" in line) == (engine == "vllm")
            assert "SGLang's auto would take 16 bit" in line
            codes = {w.code for w in p.warnings}
            assert "quantization_quality_unchecked" not in codes and "kernel_support_unchecked" in codes


def test_the_plan_names_the_vllm_path_that_runs_it() -> None:
    h100 = plan(LLAMA, WORK, gpu=get_gpu("h100"))
    (fa2,) = [a for a in h100.assumptions if a.startswith("NVFP4 KV cache on h100-sxm: ")]
    assert "FlashInfer's FA2 kernels" in fa2 and "SGLang and TensorRT-LLM need Blackwell" in fa2
    (gen,) = [a for a in plan(LLAMA, WORK, gpu=get_gpu("b200")).assumptions if a.startswith("NVFP4 KV cache on b200")]
    assert "trtllm-gen" in gen
    assert not [a for a in plan(LLAMA, replace(WORK, engine="trtllm"), gpu=get_gpu("b200")).assumptions
                if a.startswith("NVFP4 KV cache on")]


def test_where_the_engine_does_not_run_it_it_falls_back_to_fp8_then_bf16_and_says_why() -> None:
    trt = replace(WORK, engine="trtllm")
    h100 = plan(LLAMA, trt, gpu=get_gpu("h100"))
    assert h100.precision.kv_cache == "fp8" and h100.per_gpu.kv_cache_bytes == LLAMA_KV_VALUES
    (line,) = _kv_lines(h100)
    assert line.startswith("KV cache: fp8. The checkpoint ships an NVFP4 KV cache (quantization_config modelopt "
                           "kv_cache_quant_algo NVFP4), but TensorRT-LLM runs an NVFP4 KV cache on Blackwell GPUs only")
    assert "kv_cache_config.dtype fp8" in line
    # TensorRT-LLM has no FP8 weights on an A100 (stop56 qa16): planned with the weights dequantized, the way out named
    with pytest.raises(InvalidWorkload, match="TensorRT-LLM runs FP8 weights only on GPUs with FP8 tensor cores"):
        plan(LLAMA, trt, gpu=get_gpu("a100"))
    a100 = plan(LLAMA, trt, precision=PrecisionPlan(weights="bf16"), gpu=get_gpu("a100"))
    assert a100.precision.kv_cache == "bf16" and _kv_lines(a100)[0].startswith("KV cache: bf16. The checkpoint ships")
    for name in ("mi300x", "mi355x"):  # vLLM's ROCm backends take no nvfp4; FP8 hardware: fp8
        p = plan(LLAMA, WORK, gpu=get_gpu(name))
        assert p.precision.kv_cache == "fp8"
        assert "none of vLLM's ROCm attention backends takes nvfp4" in _kv_lines(p)[0]
    # an MLA model on a Hopper: vLLM refuses nvfp4 for MLA, SGLang and TensorRT-LLM need Blackwell
    ds = plan(DEEPSEEK, WORK, layout=Layout(gpus=8), gpu=get_gpu("h200"))
    assert ds.precision.kv_cache == "fp8" and "uses MLA" in _kv_lines(ds)[0]


def test_the_flag_overrides_the_default() -> None:
    p = plan(LLAMA, WORK, precision=PrecisionPlan(kv_cache="bf16"), gpu=get_gpu("b200"))
    assert p.precision.kv_cache == "bf16" and p.per_gpu.kv_cache_bytes == 2 * LLAMA_KV_VALUES
    assert _kv_lines(p) == ["KV cache: bf16 (override; the checkpoint ships an NVFP4 KV cache, quantization_config "
                            "modelopt kv_cache_quant_algo NVFP4)."]
    same = plan(LLAMA, WORK, precision=PrecisionPlan(kv_cache="nvfp4"), gpu=get_gpu("b200"))
    assert same.precision.kv_cache == "nvfp4" and _kv_lines(same) == []


@pytest.mark.parametrize("gpu", ["h100", "h200", "a100", "l40s", "rtx-4090", "b200", "rtx-5090"])
def test_vllm_plans_it_on_every_nvidia_gpu_tensorrt_llm_on_blackwell_only(gpu: str) -> None:
    base = load_model("llama-3.1-8b")
    p = plan(base, WORK, precision=PrecisionPlan(kv_cache="nvfp4"), gpu=get_gpu(gpu))
    assert p.precision.kv_cache == "nvfp4" and p.per_gpu.kv_cache_bytes == LLAMA_KV_VALUES * 9 // 16
    trt = replace(WORK, engine="trtllm")
    if "NVFP4" in get_gpu(gpu).fp4_formats:
        assert plan(base, trt, precision=PrecisionPlan(kv_cache="nvfp4"), gpu=get_gpu(gpu)).precision.kv_cache == "nvfp4"
        return
    with pytest.raises(InvalidWorkload, match="^--kv-cache nvfp4 with --engine trtllm: TensorRT-LLM runs an NVFP4 KV "
                                              "cache on Blackwell GPUs only") as err:
        plan(base, trt, precision=PrecisionPlan(kv_cache="nvfp4"), gpu=get_gpu(gpu))
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("gpu", ["mi300x", "mi355x"])
def test_nvfp4_is_refused_in_one_line_on_amd(gpu: str) -> None:
    with pytest.raises(InvalidWorkload, match="^--kv-cache nvfp4 with --engine vllm: .*ROCm") as err:
        plan(load_model("llama-3.1-8b"), WORK, precision=PrecisionPlan(kv_cache="nvfp4"), gpu=get_gpu(gpu))
    assert "\n" not in str(err.value)


def test_vllm_refuses_it_for_mla_and_64_wide_heads_off_blackwell() -> None:
    with pytest.raises(InvalidWorkload, match="deepseek-r1-nvfp4-kv uses MLA, for which vLLM 0.33.0 refuses") as err:
        plan(DEEPSEEK, WORK, precision=PrecisionPlan(kv_cache="nvfp4"), layout=Layout(gpus=8), gpu=get_gpu("h200"))
    assert "\n" not in str(err.value) and "SGLang and TensorRT-LLM need Blackwell" in str(err.value)
    with pytest.raises(InvalidWorkload, match="FA2 kernels, which misread gpt-oss-120b's 64-wide heads"):
        plan(load_model("gpt-oss-120b"), WORK, precision=PrecisionPlan(kv_cache="nvfp4"), gpu=get_gpu("h200"))


def test_the_cli_refuses_it_with_exit_2_for_tensorrt_llm_and_plans_it_for_vllm_on_an_h100(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--kv-cache", "nvfp4", "--engine", "trtllm",
                         "--json")
    assert code == 2 and out == "" and "--engine trtllm: TensorRT-LLM runs an NVFP4 KV cache" in err
    assert err.strip().count("\n") == 0
    for gpu in ("h100", "b200"):
        doc = run_json(capsys, "plan", "llama-3.1-8b", "--gpu", gpu, "--context", "8192", "--kv-cache", "nvfp4")
        assert doc["precision"]["kv_cache"] == "nvfp4"
        assert doc["per_gpu"]["kv_cache_bytes"] == LLAMA_KV_VALUES * 9 // 16
    assert doc["model"]["kv_bytes_per_token"] == 36_864
    model = run_json(capsys, "model", "llama-3.1-8b", "--kv-cache", "nvfp4")
    assert model["kv_cache_dtype"] == "nvfp4" and model["kv_bytes_per_token"] == 36_864


def test_the_cli_plans_a_checkpoint_folder_with_its_nvfp4_kv_cache(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    info = resolve("llama-3.1-8b")
    assert info is not None
    (tmp_path / "config.json").write_text(read_data_text(info.file))
    (tmp_path / "hf_quant_config.json").write_text(json.dumps(LLAMA_NVFP4_KV))
    for gpu, flags, kv in (("b200", (), "nvfp4"), ("h100", (), "nvfp4"), ("h100", ("--engine", "trtllm"), "fp8"),
                           ("h100", ("--recipe", "trtllm"), "fp8"), ("b200", ("--kv-cache", "fp8"), "fp8")):
        doc = run_json(capsys, "plan", str(tmp_path), "--gpu", gpu, "--context", "8192", "--offline", *flags)
        assert doc["precision"]["kv_cache"] == kv


def _kv_flag(command: str) -> str | None:
    parts = command.split()
    return parts[parts.index("--kv-cache-dtype") + 1] if "--kv-cache-dtype" in parts else None


def test_the_serving_recipes_name_nvfp4_where_the_engine_reads_it() -> None:
    p = plan(LLAMA, WORK, gpu=get_gpu("b200"))
    assert _kv_flag(build_recipe(p, "vllm").command) == "nvfp4"
    # SGLang's auto takes a checkpoint's FP8 KV cache only (configure_kv_cache_dtype): the flag is always named
    assert _kv_flag(build_recipe(p, "sglang").command) == "nvfp4"
    assert "dtype: nvfp4" in dict(build_recipe(p, "trtllm").files)["trtllm_config.yaml"]
    for kind in ("vllm", "sglang"):  # a value the engine's own --kv-cache-dtype lists
        assert "nvfp4" in flag_data(f"{kind}_flags")["values"]["--kv-cache-dtype"]
    # on an H100 vLLM's launch runs it (FlashInfer picks itself: no --attention-backend); SGLang's is refused
    h100 = plan(LLAMA, WORK, gpu=get_gpu("h100"))
    vllm = build_recipe(h100, "vllm").command
    assert _kv_flag(vllm) == "nvfp4" and "--attention-backend" not in vllm
    with pytest.raises(InvalidWorkload, match="^--recipe sglang: an NVFP4 KV cache on .*SGLang runs --kv-cache-dtype "
                                              "nvfp4 on Blackwell SM100 or SM120 only") as err:
        build_recipe(h100, "sglang")
    assert "\n" not in str(err.value)
    # TensorRT-LLM's sizing falls back to FP8 there, named in kv_cache_config.dtype
    h100_trt = plan(LLAMA, replace(WORK, engine="trtllm"), gpu=get_gpu("h100"))
    assert h100_trt.precision.kv_cache == "fp8"
    assert "dtype: fp8" in dict(build_recipe(h100_trt, "trtllm").files)["trtllm_config.yaml"]
    # asked for FP8 over the checkpoint's NVFP4, every engine is told
    h100_fp8 = plan(LLAMA, WORK, precision=PrecisionPlan(kv_cache="fp8"), gpu=get_gpu("h100"))
    assert _kv_flag(build_recipe(h100_fp8, "vllm").command) == "fp8"
    assert _kv_flag(build_recipe(h100_fp8, "sglang").command) == "fp8_e4m3"
    # a vLLM-sized NVFP4 plan on a Hopper cannot be launched by TensorRT-LLM
    with pytest.raises(InvalidWorkload, match="^--recipe trtllm: an NVFP4 KV cache on .*Blackwell GPUs only"):
        build_recipe(h100, "trtllm")
    # 16 bit must be named (the engines' auto runs the checkpoint's); TensorRT-LLM cannot be told
    a100 = plan(LLAMA, WORK, precision=PrecisionPlan(kv_cache="bf16"), gpu=get_gpu("a100"))
    assert _kv_flag(build_recipe(a100, "vllm").command) == "bfloat16"
    # and on an A100 TensorRT-LLM runs none of this checkpoint's FP8 weights: plan refuses it (stop56 qa16), where the
    # launch used to be refused for its KV cache ("names fp8 or nvfp4")
    with pytest.raises(InvalidWorkload, match="^--engine trtllm with fp8 weights: TensorRT-LLM runs FP8 weights only"):
        plan(LLAMA, replace(WORK, engine="trtllm"), gpu=get_gpu("a100"))


def test_vllm_refuses_an_nvfp4_kv_cache_for_an_mla_model() -> None:
    # vLLM's default is what vLLM runs: an MLA model's NVFP4 cache falls back to FP8 even on Blackwell
    # (VllmConfig.validate_nvfp4_kv_cache_with_mla refuses it at start-up), saying why; TensorRT-LLM's keeps it
    default = plan(DEEPSEEK, WORK, layout=Layout(gpus=8), gpu=get_gpu("b200"))
    assert default.precision.kv_cache == "fp8"
    assert any("uses MLA, for which vLLM 0.33.0 refuses an NVFP4 KV cache" in a and "(--engine vllm)" in a
               for a in default.assumptions)
    trt = plan(DEEPSEEK, replace(WORK, engine="trtllm"), layout=Layout(gpus=8), gpu=get_gpu("b200"))
    assert trt.precision.kv_cache == "nvfp4"
    # asked for, the vLLM sizing keeps it on Blackwell (SGLang and TensorRT-LLM run it for MLA) and says vLLM's launch
    # is refused
    p = plan(DEEPSEEK, WORK, layout=Layout(gpus=8), gpu=get_gpu("b200"), precision=PrecisionPlan(kv_cache="nvfp4"))
    assert p.precision.kv_cache == "nvfp4"
    (line,) = [a for a in p.assumptions if a.startswith("NVFP4 KV cache on b200: ")]
    assert "uses MLA" in line and "the vLLM launch is refused" in line
    with pytest.raises(InvalidWorkload, match="^--recipe vllm: an NVFP4 KV cache: deepseek-r1-nvfp4-kv uses MLA, for "
                                              "which vLLM 0.33.0 refuses") as err:
        build_recipe(p, "vllm")
    assert "\n" not in str(err.value)
    assert _kv_flag(build_recipe(p, "sglang").command) == "nvfp4"
    assert "dtype: nvfp4" in dict(build_recipe(p, "trtllm").files)["trtllm_config.yaml"]


def test_recommend_keeps_the_engines_default_per_gpu() -> None:
    now = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    for engine in ("vllm", "trtllm"):
        rec = recommend(LLAMA, SweepSpec(workload=replace(WORK, engine=engine)), load_catalog(), "1month", now, top=60)
        seen = set()
        for option in rec.results:
            gpu = get_gpu(option.config["gpu"])
            runs = gpu.vendor == "NVIDIA" if engine == "vllm" else "NVFP4" in gpu.fp4_formats
            want = "nvfp4" if runs else "fp8" if gpu.fp8_hardware else "bf16"
            assert option.config["kv_cache"] == want, (engine, gpu.name)
            seen.add((want, gpu.vendor))
            assert not option.lower_precision
        assert ("nvfp4", "NVIDIA") in seen
        assert "KV cache nvfp4 as the checkpoint ships it" in rec.assumptions[0]
        if engine == "vllm":
            assert any(v == "fp8" for v, vendor in seen if vendor == "AMD")
            assert any(get_gpu(o.config["gpu"]).name.startswith("h") and o.config["kv_cache"] == "nvfp4"
                       for o in rec.results)
        else:
            assert ("fp8", "NVIDIA") in seen


def test_recommend_with_kv_cache_nvfp4_rejects_the_gpus_where_the_engine_does_not_run_it() -> None:
    now = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    base = load_model("llama-3.1-8b")
    catalog = load_catalog()
    for engine, runs in (("vllm", lambda g: g.vendor == "NVIDIA"), ("trtllm", lambda g: "NVFP4" in g.fp4_formats)):
        spec = SweepSpec(workload=replace(WORK, engine=engine), kv_caches=("nvfp4",))
        rec = recommend(base, spec, catalog, "1month", now, top=40)
        assert rec.results and all(runs(get_gpu(o.config["gpu"])) for o in rec.results)
        assert all(o.lower_precision for o in rec.results)  # below the plan's 16-bit cache
        if engine == "vllm":  # Hopper offerings among the results; the AMD ones, dearer, are not shown as rejected
            assert any(get_gpu(o.config["gpu"]).architecture.startswith("Hopper") for o in rec.results)
            amd = tuple(o for o in catalog.offerings if get_gpu(o.gpu).vendor == "AMD")
            with pytest.raises(InvalidWorkload, match="^--kv-cache nvfp4 with --engine vllm: no offering considered "
                                                      "has a GPU where vLLM or SGLang runs it"):
                recommend(base, spec, catalog, "1month", now, offerings=amd)
            continue
        reasons = [r.reason for r in rec.rejected if "nvfp4" in r.reason]
        assert reasons and all(r.startswith("--kv-cache nvfp4 with --engine trtllm: ") for r in reasons)
