"""The planner against every published figure in its scope (reference/published_figures.md).

Each test names its source and its tolerance: exact where the source computes from a formula (ZeRO,
Korthikanti, QLoRA's constants), a stated band where the source measured real hardware (measured peaks
include allocator and framework effects a planner only approximates).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.architectures.spec import ModelSpec, ParamBreakdown
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, get_format, plan
from anchorgpu.planner import memory as mm
from anchorgpu.planner._examples import gpt3_175b, llama_65b
from anchorgpu.planner.formats import nf4_bits_per_weight
from anchorgpu.units import GB, GIB, MB

sys.path.insert(0, str(Path(__file__).parent))
from _models import llama_7b, phi_2, stablelm_base_alpha_3b, tinyllama_1_1b  # noqa: E402

# --------------------------------------------------------------------------------------------------
# A. Model states and ZeRO (exact)
# --------------------------------------------------------------------------------------------------


def _flat_model(params: int, *, layers: int = 100) -> ModelSpec:
    """A model that is nothing but ``params`` parameters (for pure model-state accounting)."""
    return ModelSpec(
        name="flat", model_type="flat", family="flat", num_layers=layers, hidden_size=4096, intermediate_size=16384,
        num_attention_heads=32, num_kv_heads=32, head_dim=128, vocab_size=32000, max_context_tokens=2048,
        tie_word_embeddings=True, attention_kind="mha", gated_mlp=False,
        params=ParamBreakdown(embeddings=0, position_embeddings=0, attention=0, mlp=0, experts=0, shared_experts=0,
                              router=0, norms=0, head=0, other=params),
        params_active=params, linear_groups=(), layer_windows=(None,) * layers,
    )


@pytest.mark.parametrize(
    ("zero", "expected_gb"),
    [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)],
)
def test_zero_figure_1_model_states_per_gpu_are_exact(zero: int, expected_gb: float) -> None:
    # Rajbhandari et al., ZeRO (SC'20, arXiv 1910.02054), Figure 1: P = 7.5e9, N = 64, mixed-precision Adam
    # (2 B fp16 weights + 2 B fp16 grads + 12 B fp32 master/momentum/variance). Exact to the paper's 0.1 GB.
    p, n = 7_500_000_000, 64
    weights = 2 * p / (n if zero == 3 else 1)
    grads = mm.gradient_bytes(p, bytes_per_value=2, zero=zero, dp=n)
    master = mm.master_weight_bytes(p, mixed_precision=True, zero=zero, dp=n)
    moments = mm.optimizer_moment_bytes(p, optimizer="adamw", zero=zero, dp=n)
    assert round((weights + grads + master + moments) / GB, 1) == expected_gb


@pytest.mark.parametrize(("zero", "expected_gb"), [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_figure_1_holds_through_plan(zero: int, expected_gb: float) -> None:
    # Same figure through plan(): the gather buffers ZeRO-3 adds are reported apart and left out here.
    result = plan(_flat_model(7_500_000_000), Workload(task="train", seq_tokens=1024),
                  layout=Layout(gpus=64, zero=zero))
    states = (result.per_gpu.weights_bytes - result.breakdown.get("gather_buffer_bytes", 0)
              + result.per_gpu.gradients_bytes + result.per_gpu.optimizer_bytes)
    assert round(states / GB, 1) == expected_gb


def test_gpt2_1_5b_fp16_weights_are_3_gb_and_model_states_at_least_24_gb() -> None:
    # ZeRO paper, section 3: GPT-2 1.5B has 3 GB of fp16 weights and needs at least 24 GB of model states
    # (16 B/param with mixed-precision Adam). GPT-2 XL from the registry has 1.56e9 parameters: band 5 %.
    model = load_model("gpt2-xl")
    result = plan(model, Workload(task="train", seq_tokens=1024))
    assert result.per_gpu.weights_bytes == pytest.approx(3 * GB, rel=0.05)
    states = result.per_gpu.weights_bytes + result.per_gpu.gradients_bytes + result.per_gpu.optimizer_bytes
    assert states >= 24 * GB
    assert states == pytest.approx(16 * model.params_total, rel=1e-6)


def test_adam_state_of_gpt2_124m_counts_the_two_moments() -> None:
    # Measured on CPU with torch 2.13 (published_figures.md A): torch.optim.Adam state after one step is
    # 995,519,056 B for the fp32 model, 497,759,824 B for the bf16 model (moments in the parameter dtype).
    # We count moments only: the remaining 592 B are 148 fp32 scalar ``step`` tensors, one per parameter
    # tensor of GPT-2 (wte, wpe, 12 blocks x 12 tensors, ln_f weight and bias).
    model = load_model("gpt2")
    assert model.params_total == 124_439_808
    step_counters = (2 + 12 * 12 + 2) * 4
    fp32 = mm.optimizer_moment_bytes(model.params_total, optimizer="adamw", zero=0, dp=1)
    bf16 = mm.optimizer_moment_bytes(model.params_total, optimizer="adamw", zero=0, dp=1, moment_scale=0.5)
    assert fp32 + step_counters == 995_519_056
    assert bf16 + step_counters == 497_759_824


# --------------------------------------------------------------------------------------------------
# B. Training activations (Korthikanti et al. 2022, arXiv 2205.05198, Table 2) — exact
# --------------------------------------------------------------------------------------------------

S, B, H, A, T = 2048, 1, 12288, 96, 8  # GPT-3 175B dimensions, TP 8
SBH = S * B * H


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        (dict(t=1, sp=False, recompute="none"), SBH * (34 + 5 * A * S / H)),
        (dict(t=T, sp=False, recompute="none"), SBH * (10 + 24 / T + 5 * A * S / (H * T))),
        (dict(t=T, sp=True, recompute="none"), SBH * (34 / T + 5 * A * S / (H * T))),
        (dict(t=T, sp=False, recompute="selective"), SBH * (10 + 24 / T)),
        (dict(t=T, sp=True, recompute="selective"), SBH * 34 / T),
        (dict(t=1, sp=False, recompute="full"), 2 * SBH),
    ],
    ids=["no-parallelism", "tp", "tp+sp", "tp+selective", "tp+sp+selective", "full-recompute"],
)
def test_korthikanti_table_2_per_layer_activations_are_exact(kwargs: dict, expected: float) -> None:
    assert mm.korthikanti_layer_activation_bytes(s=S, b=B, h=H, a=A, **kwargs) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    ("sp", "recompute", "t"),
    [(False, "none", 1), (False, "none", 8), (True, "none", 8), (False, "selective", 8), (True, "selective", 8),
     (False, "full", 1)],
)
def test_generalised_layer_formula_reduces_to_korthikanti_for_a_gpt_layer(sp: bool, recompute: str, t: int) -> None:
    # Our GQA/SwiGLU/MoE generalisation, without flash attention, equals Table 2 for a GPT layer (kv = a, ffn = 4h).
    model = gpt3_175b()
    ours = mm.layer_activation_bytes(model, s=S, b=B, t=t, sp=sp, recompute=recompute, flash=False)  # type: ignore[arg-type]
    assert ours == pytest.approx(mm.korthikanti_layer_activation_bytes(s=S, b=B, h=H, a=A, t=t, sp=sp,
                                                                       recompute=recompute), rel=1e-12)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("heads", "hidden", "saving"),
    [(96, 12288, 0.70), (128, 20480, 0.65)],
    ids=["gpt3-175b-70pct", "mt-nlg-530b-65pct"],
)
def test_selective_recompute_saves_70_and_65_percent(heads: int, hidden: int, saving: float) -> None:
    # Korthikanti et al. sections 5 and 6.1: 5as/h = 80 (GPT-3) and 64 (MT-NLG) at s = 2048; the paper rounds
    # the savings to whole percent, so we hold them to 0.5 percentage points.
    before = mm.korthikanti_layer_activation_bytes(s=2048, b=1, h=hidden, a=heads, t=8, sp=True)
    after = mm.korthikanti_layer_activation_bytes(s=2048, b=1, h=hidden, a=heads, t=8, sp=True, recompute="selective")
    assert 1 - after / before == pytest.approx(saving, abs=0.005)


def test_first_pipeline_stage_holds_all_layers_worth_of_activations() -> None:
    # Korthikanti section 4.2.3: with 1F1B the first stage keeps p micro-batches of L/p layers = L layers.
    model = load_model("llama-3.1-70b")
    one = mm.training_activation_bytes(model, s=4096, b=1, tp=8, pp=1, sp=True, recompute="selective")
    four = mm.training_activation_bytes(model, s=4096, b=1, tp=8, pp=4, sp=True, recompute="selective")
    logits = mm.logits_bytes(s=4096, b=1, vocab=model.vocab_size, t=8)
    assert four == pytest.approx(one - logits, rel=1e-9)


# --------------------------------------------------------------------------------------------------
# C. Fine-tuning
# --------------------------------------------------------------------------------------------------


def test_qlora_quantization_constants_drop_from_half_a_bit_to_0_127() -> None:
    # Dettmers et al. 2023 (QLoRA), section 3: fp32 absmax per 64 weights = 0.5 bits/param; double quantization
    # (8-bit constants per 64, fp32 per 256 of those) = 0.127 bits/param. Exact to the paper's 3 decimals.
    assert nf4_bits_per_weight(double_quant=False) - 4 == 0.5
    assert round(nf4_bits_per_weight(double_quant=True) - 4, 3) == 0.127
    assert get_format("nf4-dq").linear_bits == nf4_bits_per_weight(double_quant=True)


def test_qlora_fits_llama_65b_under_48_gb_where_16_bit_fine_tuning_needs_over_780_gb() -> None:
    # QLoRA abstract and section 3: LLaMA-65B fine-tuning > 780 GB in 16 bit, < 48 GB with QLoRA (NF4 base,
    # LoRA on every linear layer, paged optimizers, gradient checkpointing). We use r = 64 (the paper's
    # setting), sequence 512, batch 1; "paged optimizers" page optimizer state to CPU RAM under pressure,
    # which we plan as --offload optimizer. The bound is the paper's: under 48 GB (decimal).
    qlora = plan(llama_65b(), Workload(task="qlora", seq_tokens=512, micro_batch=1, lora_rank=64),
                 layout=Layout(offload="optimizer"), gpu=get_gpu("l40s"))
    assert qlora.precision.weights == "nf4-dq"
    assert qlora.workload.recompute == "full"
    assert qlora.per_gpu.total_bytes < 48 * GB
    assert qlora.fits is True
    full = plan(llama_65b(), Workload(task="train", seq_tokens=512))
    assert full.per_gpu.total_bytes > 780 * GB


def test_qlora_llama_7b_4_bit_base_is_near_5048_mb() -> None:
    # QLoRA section 3: "the 4-bit base model consumes 5,048 MB" (measured). Our NF4-DQ weights with 16-bit
    # embeddings and head, plus the CUDA context and library workspace a loaded model also occupies, fall
    # within 15 % of it (the measurement also holds bitsandbytes buffers we do not model).
    result = plan(llama_7b(), Workload(task="qlora"))
    base = result.breakdown["weights_whole_model_bytes"]
    loaded = base + result.breakdown["cuda_context_bytes"] + result.breakdown["cublas_workspace_bytes"]
    assert loaded == pytest.approx(5048 * MB, rel=0.15)
    assert base < 5048 * MB


def test_lora_gpt3_cuts_model_memory_to_350_gb_and_the_checkpoint_to_35_mb() -> None:
    # Hu et al. 2021 (LoRA), section 4.2: GPT-3 175B, r = 4 on query and value, Adam: training memory
    # 1.2 TB -> 350 GB, checkpoint 350 GB -> 35 MB. Model memory (weights + adapter states) within 2 % of
    # 350 GB; the checkpoint (16-bit adapters: 96 layers x 2 x 4 x (12288 + 12288) values) within 10 % of
    # 35 MB; full fine-tuning needs at least the paper's 1.2 TB (we count 16 B/param with fp32 master).
    lora = plan(gpt3_175b(), Workload(task="lora", lora_rank=4, lora_targets=("q", "v"), seq_tokens=2048))
    states = lora.per_gpu.weights_bytes + lora.per_gpu.gradients_bytes + lora.per_gpu.optimizer_bytes
    assert states == pytest.approx(350 * GB, rel=0.02)
    assert lora.checkpoint_bytes == pytest.approx(35 * MB, rel=0.10)
    full = plan(gpt3_175b(), Workload(task="train", seq_tokens=2048))
    assert full.per_gpu.weights_bytes + full.per_gpu.gradients_bytes + full.per_gpu.optimizer_bytes >= 1200 * GB


LITGPT = dict(seq_tokens=512, train_precision="bf16-true")
LORA_QV = dict(lora_rank=32, lora_targets=("q", "v"))


@pytest.mark.parametrize(
    ("label", "model", "workload", "weights", "layout", "measured_gb", "band"),
    [
        ("mistral-7b lora", lambda: load_model("mistral-7b-v0.1"),
         Workload(task="lora", micro_batch=2, **LITGPT, **LORA_QV), None, Layout(), 20.66, 0.15),
        ("stablelm-3b lora", stablelm_base_alpha_3b, Workload(task="lora", micro_batch=1, **LITGPT, **LORA_QV),
         None, Layout(), 8.58, 0.15),
        ("tinyllama full", tinyllama_1_1b, Workload(task="train", micro_batch=4, **LITGPT), None, Layout(), 14.10, 0.15),
        ("phi-2 full, 4 GPUs FSDP", phi_2, Workload(task="train", micro_batch=4, **LITGPT), None,
         Layout(gpus=4, fsdp=True), 14.44, 0.15),
        ("mistral-7b qlora", lambda: load_model("mistral-7b-v0.1"),
         Workload(task="qlora", micro_batch=2, recompute="none", **LITGPT, **LORA_QV), "nf4", Layout(), 14.29, 0.15),
        ("stablelm-3b qlora", stablelm_base_alpha_3b,
         Workload(task="qlora", micro_batch=1, recompute="none", **LITGPT, **LORA_QV), "nf4", Layout(), 5.24, 0.15),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_litgpt_measured_fine_tuning_peaks_within_stated_bands(
    label: str, model, workload: Workload, weights: str | None, layout: Layout, measured_gb: float, band: float
) -> None:
    # Lightning-AI/litgpt config_hub/finetune/README.md: peak memory on A10G 24 GB, bf16-true, max seq 512,
    # Alpaca-2k, settings of each lora.yaml/qlora.yaml/full.yaml (rank 32, query and value; micro-batch as
    # listed; no activation checkpointing in LoRA/QLoRA). Band 15 % for every row: QLoRA's extra over weights +
    # activations is modelled by named terms (inputs kept by bitsandbytes layers, dequantization workspace,
    # logits gradient; planner/data/finetune_memory.json, tests/planner/test_finetune_memory.py).
    result = plan(model(), workload, precision=PrecisionPlan(weights=weights), layout=layout, gpu=get_gpu("a10g"))
    assert result.per_gpu.total_bytes == pytest.approx(measured_gb * GB, rel=band), label


# --------------------------------------------------------------------------------------------------
# D. Serving memory (vLLM's own accounting, llm-d empirical-vllm-memory-results.md)
# --------------------------------------------------------------------------------------------------

# One H100 as torch sees it: 79.18 GiB.
H100_SEEN = dataclasses.replace(get_gpu("h100"), memory_bytes=int(79.18 * GIB))


@pytest.mark.parametrize(
    ("name", "weights", "utilization", "weights_gib", "activation_gib", "kv_gib"),
    [
        ("qwen3-0.6b", "bf16", 0.90, 1.12, 5.56, 64.45),
        ("gpt-oss-20b", "mxfp4", 0.90, 13.47, 7.38, 50.28),
        # 64.38 + 7.38 + 0.13 + 3.33 = 75.22 GiB = 0.95 x 79.18: this row ran at gpu_memory_utilization 0.95.
        ("gpt-oss-120b", "mxfp4", 0.95, 64.38, 7.38, 3.33),
    ],
)
def test_vllm_kv_cache_is_budget_minus_weights_activations_and_non_torch(
    name: str, weights: str, utilization: float, weights_gib: float, activation_gib: float, kv_gib: float
) -> None:
    # llm-d/llm-d-benchmark empirical-vllm-memory-results.md (vLLM V1 startup logs, one H100, max_model_len
    # 16,000). Bands: weights 2 %, activation peak 10 % (our prefill + sampler model, calibrated on these
    # rows and the Llama figure), KV cache 0.5 GiB absolute (0.7 % of the budget).
    result = plan(load_model(name), Workload(context_tokens=16000, gpu_memory_utilization=utilization),
                  precision=PrecisionPlan(weights=weights), gpu=H100_SEEN)
    assert result.per_gpu.weights_bytes / GIB == pytest.approx(weights_gib, rel=0.02)
    assert result.per_gpu.activations_bytes / GIB == pytest.approx(activation_gib, rel=0.10)
    assert result.breakdown["kv_cache_capacity_bytes"] / GIB == pytest.approx(kv_gib, abs=0.5)
    budget = result.breakdown["engine_budget_bytes"]
    assert result.breakdown["kv_cache_capacity_bytes"] == (budget - result.per_gpu.weights_bytes
                                                           - result.per_gpu.activations_bytes
                                                           - result.per_gpu.overhead_bytes)


def test_vllm_activation_peak_for_the_llama_family_is_near_4_8_gib() -> None:
    # llm-d capacity planner: Llama family 4.8 GiB activation peak on H100 at vLLM defaults. Band 10 %.
    result = plan(load_model("llama-3.1-8b"), Workload(context_tokens=16000), gpu=H100_SEEN)
    assert result.per_gpu.activations_bytes / GIB == pytest.approx(4.8, rel=0.10)


def test_vllm_activation_peak_does_not_depend_on_max_model_len() -> None:
    # llm-d: Qwen3-0.6B 5.56 GiB at both 16k and 32k max_model_len.
    model = load_model("qwen3-0.6b")
    a = plan(model, Workload(context_tokens=16000), gpu=H100_SEEN).per_gpu.activations_bytes
    b = plan(model, Workload(context_tokens=32000), gpu=H100_SEEN).per_gpu.activations_bytes
    assert a == b


@pytest.mark.parametrize(
    ("name", "per_token"),
    [("llama-3.1-8b", 131_072), ("llama-3.1-70b", 327_680), ("deepseek-v3", 70_272), ("gemma-2-9b", 344_064)],
)
def test_kv_cache_bytes_per_token_match_the_published_figures(name: str, per_token: int) -> None:
    # formulas.md section 5 item 6 (Llama-3.1-8B 128 KiB, 70B 320 KiB, bf16); published_figures.md "what the
    # peers get wrong": DeepSeek-V3 MLA 70,272 B/token, Gemma-2-9B 344,064 B/token. Exact.
    model = load_model(name)
    one_token = mm.kv_cache_bytes(model, context_tokens=1, sequences=1, bytes_per_value=2, tp=1, pp=1, block_size=1)
    assert one_token == per_token
    fp8 = mm.kv_cache_bytes(model, context_tokens=1, sequences=1, bytes_per_value=1, tp=1, pp=1, block_size=1)
    assert fp8 * 2 == per_token


# --------------------------------------------------------------------------------------------------
# D. FLUX.1-dev (diffusers quantization benchmarks) — bands
# --------------------------------------------------------------------------------------------------


def test_flux_dev_bf16_loaded_and_peak_memory_within_bands() -> None:
    # Hugging Face dataset derekl35/diffusers-quantization-benchmarks: FLUX.1-dev BF16, default settings,
    # 31.447 loaded / 36.166 peak (torch figures in GiB, written "GB"). Loaded = all component weights: band 1 %.
    # Peak = weights + the larger phase (VAE decode at 1024x1024, whose constant was calibrated on the
    # 4.5-5.2 peak-minus-loaded spread of this dataset): band 3 %. Runtime overhead is excluded because the
    # benchmark reports torch's allocated memory.
    result = plan(load_model("flux.1-dev"), gpu=get_gpu("h100"))
    assert result.workload.task == "diffusion"
    assert result.per_gpu.weights_bytes / GIB == pytest.approx(31.447, rel=0.01)
    peak = result.per_gpu.weights_bytes + result.per_gpu.activations_bytes
    assert peak / GIB == pytest.approx(36.166, rel=0.03)
    assert result.breakdown["peak_phase_is_decode"] == 1


@pytest.mark.parametrize(
    ("backend", "loaded", "peak"),
    [("bf16", 31.447, 36.166), ("bnb-4bit", 12.584, 17.281), ("bnb-8bit", 19.273, 24.432),
     ("torchao-int8", 17.020, 21.482), ("gguf-q8_0", 21.502, 25.973), ("gguf-q4_1", 16.838, 21.326)],
)
def test_flux_dev_decode_peak_does_not_depend_on_the_weight_format(backend: str, loaded: float, peak: float) -> None:
    # Same dataset: peak - loaded stays 4.5-5.2 GiB across six quantization backends, because the VAE decode
    # (16-bit, pixels x images) sets it. Our decode peak at 1024x1024 is within 10 % of each row's difference.
    result = plan(load_model("flux.1-dev"), gpu=get_gpu("h100"))
    assert result.per_gpu.activations_bytes / GIB == pytest.approx(peak - loaded, rel=0.10), backend
