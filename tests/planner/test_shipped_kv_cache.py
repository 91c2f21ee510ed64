"""A checkpoint that ships an FP8 KV cache is planned with it by default, saying so; ``--kv-cache`` overrides.

vLLM's ``--kv-cache-dtype auto`` resolves to the checkpoint's ModelOpt ``kv_cache_quant_algo`` FP8
(``vllm/utils/torch_utils.py`` ``resolve_kv_cache_dtype_string``) and to fp8 for a compressed-tensors
``kv_cache_scheme`` (``Attention.__init__``); TensorRT-LLM takes the checkpoint's ``kv_cache_quant_algo`` unless
``kv_cache_config.dtype`` names one. The ModelOpt block is ModelOpt's ``convert_hf_quant_config_format`` docstring
example (FP8, FP8 KV cache, ``lm_head`` excluded, as ``tests/architectures/test_modelopt.py`` uses it); the
compressed-tensors block is constructed in the shape llm-compressor writes (no such config is in the shared
reference configs or the registry). On a GPU without FP8 hardware the default is bf16 (the serving recipes refuse an
FP8 KV cache there, as they refuse ``--kv-cache fp8``).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from anchorgpu.architectures import from_hf_config, load_model, model_to_json
from anchorgpu.architectures._modelopt import modelopt_quantization_config
from anchorgpu.architectures.registry import read_data_text, resolve
from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.catalog import load_catalog
from anchorgpu.errors import InvalidConfig
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import PrecisionPlan, Workload, plan
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import recommend
from cli_runner import run_json

FP8_HF_QUANT = {"producer": {"name": "modelopt", "version": "0.19.0"},
                "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head"]}}
FP8_SCHEME = {"dynamic": False, "num_bits": 8, "type": "float", "strategy": "tensor", "symmetric": True}
CT_FP8 = {"quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"],
          "config_groups": {"group_0": {"targets": ["Linear"], "weights": FP8_SCHEME,
                                        "input_activations": {**FP8_SCHEME, "dynamic": True}}},
          "kv_cache_scheme": FP8_SCHEME}
WORK = Workload(task="inference", context_tokens=8192)


def _llama(block: dict[str, object], name: str = "llama-fp8-kv") -> ModelSpec:
    info = resolve("llama-3.1-8b")
    assert info is not None
    cfg = json.loads(read_data_text(info.file))
    cfg["quantization_config"] = block
    return from_hf_config(cfg, name=name, source="test")


MODELOPT = _llama(modelopt_quantization_config(FP8_HF_QUANT, where="hf_quant_config.json"))
COMPRESSED = _llama(CT_FP8, name="llama-ct-fp8-kv")


def _kv_lines(p: object) -> list[str]:
    return [a for a in p.assumptions if a.startswith("KV cache: ")]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("model", "field"), [(MODELOPT, "modelopt kv_cache_quant_algo FP8"),
                                              (COMPRESSED, "compressed-tensors kv_cache_scheme 8-bit float")])
def test_the_default_plan_sizes_the_fp8_kv_cache_the_checkpoint_ships_and_says_so(model: ModelSpec, field: str) -> None:
    for gpu in (None, get_gpu("h100")):
        p = plan(model, WORK, gpu=gpu)
        assert p.precision.kv_cache == "fp8"
        assert p.per_gpu.kv_cache_bytes == 8192 * 32 * 2 * 8 * 128  # tokens x layers x K,V x heads x dim, 1 byte
        assert _kv_lines(p) == [f"KV cache: fp8, as the checkpoint ships it (quantization_config {field}: calibrated "
                                "scales, which vLLM and TensorRT-LLM use by default); --kv-cache overrides."]
        codes = {w.code for w in p.warnings}
        assert "quantization_quality_unchecked" not in codes and "kernel_support_unchecked" in codes


def test_kv_cache_bf16_overrides_it_and_says_what_the_checkpoint_ships() -> None:
    p = plan(MODELOPT, WORK, precision=PrecisionPlan(kv_cache="bf16"), gpu=get_gpu("h100"))
    assert p.precision.kv_cache == "bf16" and p.per_gpu.kv_cache_bytes == 2 * 8192 * 32 * 2 * 8 * 128
    assert _kv_lines(p) == ["KV cache: bf16 (override; the checkpoint ships an FP8 KV cache, quantization_config "
                            "modelopt kv_cache_quant_algo FP8)."]
    explicit = plan(MODELOPT, WORK, precision=PrecisionPlan(kv_cache="fp8"), gpu=get_gpu("h100"))
    assert explicit.precision.kv_cache == "fp8" and _kv_lines(explicit) == []


def test_on_a_gpu_without_fp8_hardware_the_default_is_bf16_and_says_why() -> None:
    a100 = get_gpu("a100")
    p = plan(MODELOPT, WORK, gpu=a100)
    assert p.precision.kv_cache == "bf16" and p.per_gpu.kv_cache_bytes == 2 * 8192 * 32 * 2 * 8 * 128
    (line,) = _kv_lines(p)
    assert line.startswith("KV cache: bf16. The checkpoint ships an FP8 KV cache") and f"{a100.name} has no FP8" in line
    asked = plan(MODELOPT, WORK, precision=PrecisionPlan(kv_cache="fp8"), gpu=a100)  # as --kv-cache fp8 is today
    assert asked.precision.kv_cache == "fp8" and "fp8_without_hardware" in {w.code for w in asked.warnings}


def test_training_and_checkpoints_without_a_kv_scheme_keep_bf16_silently() -> None:
    lora = plan(MODELOPT, Workload(task="lora", seq_tokens=2048), gpu=get_gpu("h100"))
    assert lora.precision.kv_cache == "bf16" and _kv_lines(lora) == []
    for name in ("llama-3.1-8b", "deepseek-v3", "llama-4-maverick-17b-128e-fp8"):  # the last: kv_cache_scheme null
        p = plan(load_model(name), WORK)
        assert p.precision.kv_cache == "bf16" and _kv_lines(p) == []


def test_a_compressed_tensors_kv_scheme_vllm_does_not_run_is_refused_in_one_line() -> None:
    with pytest.raises(InvalidConfig, match="kv_cache_scheme int 8-bit is not supported") as err:
        _llama({**CT_FP8, "kv_cache_scheme": {**FP8_SCHEME, "type": "int"}})
    assert "\n" not in str(err.value)


def test_the_model_document_states_the_shipped_kv_dtype() -> None:
    doc = model_to_json(MODELOPT)
    assert doc["shipped_quantization"]["kv_cache"] == "fp8"
    assert doc["kv_cache_dtype"] == "fp8" and doc["kv_bytes_per_token"] == 32 * 2 * 8 * 128
    assert model_to_json(MODELOPT, kv_cache="bf16")["kv_bytes_per_token"] == 2 * 32 * 2 * 8 * 128


def test_the_cli_plan_defaults_to_it_and_the_flag_overrides(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    info = resolve("llama-3.1-8b")
    assert info is not None
    (tmp_path / "config.json").write_text(read_data_text(info.file))
    (tmp_path / "hf_quant_config.json").write_text(json.dumps(FP8_HF_QUANT))
    for flags, kv in (((), "fp8"), (("--kv-cache", "bf16"), "bf16")):
        doc = run_json(capsys, "plan", str(tmp_path), "--gpu", "h100", "--context", "8192", "--offline", *flags)
        assert doc["precision"]["kv_cache"] == kv


def test_recommend_keeps_the_shipped_fp8_kv_cache_where_the_gpu_has_fp8_and_bf16_where_not() -> None:
    now = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    catalog = load_catalog()
    rec = recommend(MODELOPT, SweepSpec(workload=WORK), catalog, "1month", now, top=40)
    assert rec.results
    gpus = set()
    for option in rec.results:
        gpu = get_gpu(option.config["gpu"])
        gpus.add(gpu.fp8_hardware)
        assert option.config["kv_cache"] == ("fp8" if gpu.fp8_hardware else "bf16")
        assert not option.lower_precision and "quantization_quality_unchecked" not in option.codes
    assert True in gpus
    assert "KV cache fp8 as the checkpoint ships it" in rec.assumptions[0]


def _kv_flag(command: str) -> str | None:
    parts = command.split()
    return parts[parts.index("--kv-cache-dtype") + 1] if "--kv-cache-dtype" in parts else None


def test_the_serving_recipes_name_the_kv_dtype_the_plan_sized() -> None:
    from anchorgpu.errors import InvalidWorkload
    from anchorgpu.recipes import build_recipe

    default = plan(MODELOPT, WORK, gpu=get_gpu("h100"))
    assert _kv_flag(build_recipe(default, "vllm").command) == "fp8"
    assert "dtype: fp8" in dict(build_recipe(default, "trtllm").files)["trtllm_config.yaml"]
    # a 16-bit cache must be named, or the engine's auto would run the checkpoint's FP8 one
    for p in (plan(MODELOPT, WORK, precision=PrecisionPlan(kv_cache="bf16"), gpu=get_gpu("h100")),
              plan(MODELOPT, WORK, gpu=get_gpu("a100"))):
        assert _kv_flag(build_recipe(p, "vllm").command) == "bfloat16"
        assert _kv_flag(build_recipe(p, "sglang").command) == "bfloat16"
        with pytest.raises(InvalidWorkload, match="kv_cache_quant_algo unless kv_cache_config.dtype"):
            build_recipe(p, "trtllm")
    plain = plan(load_model("llama-3.1-8b"), WORK, gpu=get_gpu("h100"))
    assert _kv_flag(build_recipe(plain, "vllm").command) is None


def test_an_fp8_kv_cache_asked_of_a_checkpoint_shipping_fp8_weights_names_the_cache_only_as_unchecked() -> None:
    # DeepSeek-V3 ships its FP8 weights (calibrated) and no KV cache: the warning named the shipped weights too
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan

    p = plan(load_model("deepseek-v3", offline=True), Workload(context_tokens=8192),
             precision=PrecisionPlan(kv_cache="fp8"), gpu=get_gpu("h200"), layout=Layout(gpus=8))
    unchecked = [w.message for w in p.warnings if w.code == "quantization_quality_unchecked"]
    assert unchecked == ["fp8 KV cache: quality depends on the model and the task"]
