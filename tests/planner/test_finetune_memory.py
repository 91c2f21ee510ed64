"""LoRA/QLoRA and full fine-tuning peaks against LitGPT's measured table, through named memory terms.

Source of every figure: Lightning-AI/litgpt ``config_hub/finetune/README.md`` (peak memory on one A10G, bf16-true,
max sequence 512, Alpaca-2k; LoRA rank 32, alpha 16 on query and value as in each model's lora.yaml/qlora.yaml;
QLoRA with ``quantize: bnb.nf4``; no activation checkpointing). Band: 15 % (measured peaks include allocator and
framework effects; the issue's target). The constants of the terms live in planner/data/finetune_memory.json.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from importlib import resources
from pathlib import Path

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner._examples import decoder
from anchorgpu.planner.finetune import constants, finetune_terms, frozen_input_values, quantized_input_values
from anchorgpu.planner.formats import get_format
from anchorgpu.units import GB

sys.path.insert(0, str(Path(__file__).parent))
from _models import phi_2, stablelm_base_alpha_3b, tinyllama_1_1b  # noqa: E402

LITGPT = dict(seq_tokens=512, train_precision="bf16-true")
LORA_QV = dict(lora_rank=32, lora_targets=("q", "v"))


def _mistral() -> ModelSpec:
    return load_model("mistral-7b-v0.1")  # type: ignore[return-value]


def _llama_2_7b() -> ModelSpec:
    # meta-llama/Llama-2-7b-hf config.json: 32 layers, hidden 4096, ffn 11008, 32 heads, vocabulary 32000
    return decoder(name="llama-2-7b", layers=32, hidden=4096, ffn=11008, heads=32, kv_heads=32, vocab=32000,
                   context=4096)


ROWS: list[tuple[str, Callable[[], ModelSpec], Workload, str | None, Layout, float]] = [
    # the six rows of reference/published_figures.md C
    ("mistral-7b/lora.yaml", _mistral, Workload(task="lora", micro_batch=2, **LITGPT, **LORA_QV), None, Layout(), 20.66),
    ("mistral-7b/qlora.yaml", _mistral, Workload(task="qlora", micro_batch=2, recompute="none", **LITGPT, **LORA_QV),
     "nf4", Layout(), 14.29),
    ("stablelm-base-alpha-3b/lora.yaml", stablelm_base_alpha_3b,
     Workload(task="lora", micro_batch=1, **LITGPT, **LORA_QV), None, Layout(), 8.58),
    ("stablelm-base-alpha-3b/qlora.yaml", stablelm_base_alpha_3b,
     Workload(task="qlora", micro_batch=1, recompute="none", **LITGPT, **LORA_QV), "nf4", Layout(), 5.24),
    ("tiny-llama/full.yaml", tinyllama_1_1b, Workload(task="train", micro_batch=4, **LITGPT), None, Layout(), 14.10),
    ("phi-2/full.yaml, 4xA10G", phi_2, Workload(task="train", micro_batch=4, **LITGPT), None, Layout(gpus=4, fsdp=True),
     14.44),
    # held out (same table, same LoRA settings, not used to fit anything but the saved-input constant's check)
    ("llama-2-7b/lora.yaml", _llama_2_7b, Workload(task="lora", micro_batch=2, **LITGPT, **LORA_QV), None, Layout(),
     19.77),
    ("llama-2-7b/qlora.yaml", _llama_2_7b, Workload(task="qlora", micro_batch=2, recompute="none", **LITGPT, **LORA_QV),
     "nf4", Layout(), 13.68),
]


@pytest.mark.parametrize(("row", "model", "workload", "weights", "layout", "measured_gb"), ROWS, ids=[r[0] for r in ROWS])
def test_litgpt_measured_peak_within_15_percent(row: str, model: Callable[[], ModelSpec], workload: Workload,
                                                weights: str | None, layout: Layout, measured_gb: float) -> None:
    result = plan(model(), workload, precision=PrecisionPlan(weights=weights), layout=layout, gpu=get_gpu("a10g"))
    assert result.per_gpu.total_bytes == pytest.approx(measured_gb * GB, rel=0.15), row


def test_qlora_minus_lora_gap_follows_the_measured_one() -> None:
    # Mistral-7B: LoRA 20.66 GB, QLoRA 14.29 GB; the 4-bit base saves ~10 GB of weights, so QLoRA keeps ~3.7 GB
    # more elsewhere. Our gap must be within 1 GB of the measured 6.37 GB (it was 10.5 GB without the terms).
    lora = plan(_mistral(), ROWS[0][2], gpu=get_gpu("a10g"))
    qlora = plan(_mistral(), ROWS[1][2], precision=PrecisionPlan(weights="nf4"), gpu=get_gpu("a10g"))
    gap = (lora.per_gpu.total_bytes - qlora.per_gpu.total_bytes) / GB
    assert gap == pytest.approx(20.66 - 14.29, abs=1.0)


def test_each_term_is_named_in_the_breakdown_and_the_assumptions() -> None:
    result = plan(_mistral(), ROWS[1][2], precision=PrecisionPlan(weights="nf4"), gpu=get_gpu("a10g"))
    b = result.breakdown
    for key in ("quantized_layer_inputs_bytes", "dequantization_workspace_bytes", "logits_gradient_bytes",
                "frozen_inputs_not_kept_bytes"):
        assert b[key] > 0, key
    line = next(a for a in result.assumptions if a.startswith("Fine-tuning terms"))
    for words in ("bitsandbytes 4-bit layers", "dequantization workspace", "logits gradient", "frozen 16-bit MLP inputs",
                  "16-bit copy while quantizing"):
        assert words in line


def test_saved_inputs_follow_their_definition() -> None:
    # Mistral-7B QLoRA, micro-batch 2 x 512 tokens, 32 layers: 4 B x (4096 + 4096 + 4096 + 14336) per token and layer
    model, c = _mistral(), constants()
    terms = finetune_terms(model, get_format("nf4"), task="qlora", seq=512, micro_batch=2, tp=1, stage_layers=32,
                           recompute="none", targets=("q", "v"))
    assert terms.quantized_layer_inputs_bytes == c.saved_input_bytes_per_value * 26624 * 1024 * 32
    assert terms.dequantization_workspace_bytes == c.dequant_copies * 2 * 4096 * 14336  # the MLP matrix in 16 bit
    assert terms.logits_gradient_bytes == 4 * 1024 * 32000
    assert terms.frozen_inputs_not_kept_bytes == 2 * 4096 * 1024 * 32  # the MLP input (gated MLP: nothing else)
    # gradient checkpointing: only the recomputed layer holds the saved inputs and nothing comes off the formula
    ckpt = finetune_terms(model, get_format("nf4"), task="qlora", seq=512, micro_batch=2, tp=1, stage_layers=32,
                          recompute="full", targets=("q", "v"))
    assert ckpt.quantized_layer_inputs_bytes == terms.quantized_layer_inputs_bytes // 32
    assert ckpt.frozen_inputs_not_kept_bytes == 0
    # 16-bit LoRA keeps no quantized inputs and no dequantization workspace
    lora = finetune_terms(model, get_format("bf16"), task="lora", seq=512, micro_batch=2, tp=1, stage_layers=32,
                          recompute="none", targets=("q", "v"))
    assert lora.quantized_layer_inputs_bytes == lora.dequantization_workspace_bytes == 0


def test_adapters_on_the_mlp_keep_its_inputs() -> None:
    model = stablelm_base_alpha_3b()  # plain two-matrix MLP, h 4096, ffn 16384
    assert frozen_input_values(model, ("q", "v")) == 4096 + 16384
    assert frozen_input_values(model, ("q", "v", "up", "down")) == 0
    assert quantized_input_values(model, get_format("nf4")) == 4096 + 4096 + 4096 + 16384


def test_constants_file_names_a_source_for_every_term() -> None:
    doc = json.loads(resources.files("anchorgpu.planner").joinpath("data", "finetune_memory.json").read_text("utf-8"))
    assert doc["schema_version"] == 1
    for name, term in doc["terms"].items():
        assert term.get("mechanism") and term.get("source"), name
