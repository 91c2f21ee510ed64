"""Serving memory of state-space and hybrid models: a fixed recurrent state per sequence, KV only on attention layers.

State sizes are worked out from the published configs in ``architectures/data/models`` (see
tests/architectures/test_ssm_families.py for the arithmetic); the sweep is checked against plan() row by row.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from tests.cli_runner import run

from anchorgpu.architectures import ModelSpec, load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan, plan_to_json
from anchorgpu.planner import memory as mm
from anchorgpu.planner.speed.batching import serving_estimate
from anchorgpu.planner.speed.estimate import serving_setup
from anchorgpu.planner.sweep import sweep
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import shapes_from_catalog

MAMBA_2_8B_STATE = 64 * (5120 * 3 + 5120 * 16) * 2  # 64 layers · (conv 5120·3 + SSM 5120·16) · 2 bytes
JAMBA_STATE = 28 * (8192 * 3 + 8192 * 16) * 2  # 28 Mamba layers of d_inner 8192, d_state 16


def _spec(name: str) -> ModelSpec:
    spec = load_model(name)
    assert isinstance(spec, ModelSpec)
    return spec


def _serve(name: str, gpu: str, context: int, *, concurrency: int | None = None, gpus: int = 1, tp: int = 1,
           allow_long: bool = False):
    return plan(_spec(name), Workload(task="inference", context_tokens=context, concurrency=concurrency,
                                      allow_long_context=allow_long),
                layout=Layout(gpus=gpus, tp=tp), gpu=get_gpu(gpu), suggest=False, choose_layout=False)


def test_a_pure_mamba_serves_a_million_token_context_where_a_transformer_of_its_size_cannot() -> None:
    mamba = _serve("mamba-2.8b", "l4", 1 << 20)  # 2.77 B parameters
    llama = _serve("llama-3.2-3b", "l4", 1 << 20, allow_long=True)  # 3.2 B parameters
    assert mamba.fits and not llama.fits
    # the Mamba's cache term is its state alone: no KV at any length
    assert mamba.breakdown["kv_per_sequence_bytes"] == 0
    assert mamba.breakdown["state_per_sequence_bytes"] == mamba.per_gpu.kv_cache_bytes == MAMBA_2_8B_STATE
    # Llama-3.2-3B: 28 layers · 2 · 8 KV heads · 128 · 2 bytes = 114,688 B per token, 112 GiB at 2^20 tokens
    assert llama.breakdown["kv_per_sequence_bytes"] == 28 * 2 * 8 * 128 * 2 * (1 << 20)


def test_state_limits_the_concurrency_of_a_pure_ssm_and_context_does_not() -> None:
    short = _serve("mamba-2.8b", "l4", 1024)
    long = _serve("mamba-2.8b", "l4", 1 << 20)
    capacity = long.breakdown["kv_cache_capacity_bytes"]
    assert long.max_concurrency == capacity // MAMBA_2_8B_STATE
    assert short.max_concurrency == long.max_concurrency  # the same sequences fit at 1K and at 1M tokens
    assert long.max_context_tokens == long.model.max_context_tokens  # limited by the planning limit, not memory
    assert any("Recurrent state" in a and "no KV cache" in a for a in long.assumptions)


def test_a_hybrid_pays_kv_on_its_attention_layers_plus_a_state_per_sequence() -> None:
    jamba = _serve("jamba-1.5-mini", "h200", 8192, concurrency=4)
    # 4 attention layers · 2 · 8 KV heads · 128 · 2 bytes per token, 8192 tokens (a multiple of the 16-token block)
    kv_one = 4 * 2 * 8 * 128 * 2 * 8192
    assert jamba.breakdown["kv_per_sequence_bytes"] == kv_one
    assert jamba.breakdown["state_per_sequence_bytes"] == JAMBA_STATE
    assert jamba.per_gpu.kv_cache_bytes == 4 * (kv_one + JAMBA_STATE)
    assert jamba.max_concurrency == jamba.breakdown["kv_cache_capacity_bytes"] // (kv_one + JAMBA_STATE)
    # counting all 32 layers as attention would have cost 8 times the KV
    assert _spec("jamba-1.5-mini").num_layers * 2 * 8 * 128 * 2 * 8192 == 8 * kv_one


def test_the_state_is_split_over_tensor_parallel_ranks() -> None:
    one = mm.recurrent_state_bytes(_spec("jamba-1.5-mini"), sequences=3, tp=1, pp=1)
    two = mm.recurrent_state_bytes(_spec("jamba-1.5-mini"), sequences=3, tp=2, pp=1)
    assert (one, two) == (3 * JAMBA_STATE, 3 * JAMBA_STATE // 2)
    # four pipeline stages of 8 layers each: a quarter of the layers' state on the most-loaded GPU
    assert mm.recurrent_state_bytes(_spec("jamba-1.5-mini"), sequences=1, tp=1, pp=4) == JAMBA_STATE // 4


def test_plan_json_shows_the_state() -> None:
    doc = plan_to_json(_serve("nemotron-h-8b", "l4", 8192, concurrency=2))
    breakdown = doc["breakdown"]
    assert breakdown["state_per_sequence_bytes"] == 102_137_856  # float32 SSM state (see test_ssm_families)
    assert breakdown["recurrent_state_bytes"] == 2 * 102_137_856
    assert doc["per_gpu"]["kv_cache_bytes"] == 2 * breakdown["kv_per_sequence_bytes"] + 2 * 102_137_856


def test_a_transformer_has_no_state_terms() -> None:
    p = _serve("llama-3.1-8b", "h100", 8192)
    assert "state_per_sequence_bytes" not in p.breakdown
    assert mm.recurrent_state_bytes(p.model, sequences=100, tp=1, pp=1) == 0


def test_training_a_hybrid_states_its_mamba_activation_estimate() -> None:
    spec = _spec("jamba-1.5-mini")
    per_layer = mm.layer_activation_bytes(spec, s=4096, b=1, t=1, sp=False, recompute="none")
    attention_only = mm.layer_activation_bytes(
        ModelSpec(**{**{f: getattr(spec, f) for f in spec.__dataclass_fields__}, "layer_kinds": (), "recurrent": None}),
        s=4096, b=1, t=1, sp=False, recompute="none")
    # 28 of 32 layers swap attention's q, k, v and output (2·q + 4·kv + 2·q = 5 per h) for the Mamba mixer's
    # 5·8192 + 256 + 2·16 = 41,248 values per token at 2 bytes (20.1 per h)
    h, sbh = 4096, 4096 * 4096
    expected_delta = sbh * 28 / 32 * (2 * 41_248 / h - (2 * 1 + 4 * 0.25 + 2 * 1))
    assert per_layer - attention_only == pytest.approx(expected_delta - 4 * 32 * 4096 * 28 / 32, rel=1e-9)


@pytest.mark.parametrize(("name", "context"), [("jamba-1.5-mini", 16384), ("mamba-2.8b", 65536),
                                               ("nemotron-h-8b", 8192)])
def test_the_sweep_agrees_with_plan_on_state_space_models(name: str, context: int) -> None:
    model = _spec(name)
    shapes = shapes_from_catalog(load_catalog().offerings, max_servers=2)
    result = sweep(model, shapes, SweepSpec(workload=Workload(task="inference", context_tokens=context),
                                            weights=("bf16", "fp8")))
    rng = random.Random(20261201)
    for i in rng.sample(range(result.evaluated), min(20, result.evaluated)):
        row = result.row(i)
        shape = next(s for s in result.shapes if s.id == row["shape"])
        p = plan(model, Workload(task="inference", context_tokens=context, concurrency=row["concurrency"]),
                 precision=PrecisionPlan(weights=row["weights"], kv_cache=row["kv_cache"]),
                 layout=Layout(gpus=row["gpus"], tp=row["tp"], pp=row["pp"], dp=row["dp"],
                               ep=row["ep"] if row["ep"] > 1 else None), gpu=shape.gpu,
                 suggest=False, choose_layout=False)
        if row["ep"] > row["tp"] and not row["fits"]:  # an attention-DP entry, planned whole: none of its figures
            # where it does not fit or was left unplanned (sweep_attention_dp's scaled entries; the sample reaches
            # such entries since the grid also holds EP-inside-TP rows)
            continue
        assert row["fits"] == p.fits
        assert row["kv_cache_bytes"] == p.per_gpu.kv_cache_bytes
        assert row["per_gpu_total_bytes"] == p.per_gpu.total_bytes
        # decode speed: the scalar serving model reads the same weights, KV and state per step
        prompt, output = result.prompt_tokens, result.output_tokens
        setup = replace(serving_setup(p, prompt_tokens=prompt, output_tokens=output),
                        gpus_per_server=shape.gpus_per_server)
        est = serving_estimate(model, shape.gpu, setup, prompt_tokens=prompt, output_tokens=output,
                               concurrency=row["concurrency"], saturation_concurrency=row["concurrency"])
        assert row["decode_tokens_per_s_per_user"] == pytest.approx(1 / est.tpot_s, rel=1e-6)


def test_cli_plan_names_the_state_beside_the_kv(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan", "jamba-1.5-mini", "--gpu", "h200", "--gpus", "1", "--context", "8192",
                       "--concurrency", "4")
    assert code == 0
    # 8,716,288 B = 8.31 MiB of state; KV 4 layers · 16 KiB per token · 8192 tokens = 128 MiB
    assert "per sequence: recurrent state 8.31 MiB (any length) + KV 128.00 MiB" in out
    assert "KV cache + state" in out
    assert "Recurrent state: 8.31 MiB per sequence per GPU at any length, over 28 mamba layer(s)" in " ".join(out.split())


def test_lora_on_a_model_without_attention_adapts_the_mixer_projections() -> None:
    p = plan(_spec("mamba-codestral-7b"), Workload(task="lora"), gpu=get_gpu("h100"), suggest=False)
    # PEFT's Mamba targets, Mamba-2 having no x_proj: in_proj 4096 → 8192 + 10,240 + 128 and out_proj 8192 → 4096,
    # rank 16, on each of 64 layers
    assert p.breakdown["lora_adapter_params"] == 64 * 16 * ((4096 + 18_560) + (8192 + 4096)) == 35_782_656
    assert any("has no attention: adapters on the mixer projections" in a for a in p.assumptions)
    named = plan(_spec("jamba-1.5-mini"), Workload(task="lora", lora_targets=("in_proj", "out_proj")),
                 gpu=get_gpu("h200"), suggest=False)
    # 28 Mamba layers: in_proj 4096 → 16,384, out_proj 8192 → 4096
    assert named.breakdown["lora_adapter_params"] == 28 * 16 * ((4096 + 16_384) + (8192 + 4096))
