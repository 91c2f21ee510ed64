"""``anchorgpu model`` and ``anchorgpu models`` through ``anchorgpu.cli.main``."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import list_models
from cli_runner import run, run_json

CONTRACT_KEYS = {
    "name", "model_type", "family", "params_total", "params_active", "kv_bytes_per_token", "layers", "hidden_size",
    "heads", "kv_heads", "head_dim", "vocab_size", "experts", "context_length", "attention", "sliding_window_layers",
    "breakdown", "source",
}
BREAKDOWN_KEYS = {"embeddings", "position_embeddings", "attention", "mlp", "experts", "shared_experts", "router", "norms", "head", "other",
                  "recurrent", "towers"}


def test_model_table_for_llama_3_1_70b_is_readable(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "model", "llama-3.1-70b")
    assert code == 0 and err == ""
    for text in ("Llama 3.1 70B", "layers", "80", "8,192", "GQA", "128,256", "131,072 tokens",
                 "70.55 B (70,553,706,496)", "320.00 KiB (327,680 B) at bf16", "LM head (untied)", "parameters by component"):
        assert text in out, text


def test_model_json_has_the_contract_keys(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "model", "llama-3.1-70b")
    assert CONTRACT_KEYS <= set(doc)
    assert set(doc["breakdown"]) == BREAKDOWN_KEYS
    assert sum(doc["breakdown"].values()) == doc["params_total"]
    assert (doc["layers"], doc["heads"], doc["kv_heads"], doc["head_dim"], doc["experts"]) == (80, 64, 8, 128, None)


def test_moe_json_reports_experts_and_active_parameters(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "model", "mixtral-8x7b-v0.1")
    assert doc["experts"]["num_experts"] == 8 and doc["experts"]["experts_per_token"] == 2 and doc["experts"]["shared"] == 0
    assert doc["params_active"] == 12879925248  # expected_params.json


def test_fp8_kv_cache_halves_the_bytes_per_token(capsys: pytest.CaptureFixture[str]) -> None:
    bf16 = run_json(capsys, "model", "llama-3.1-8b")
    fp8 = run_json(capsys, "model", "llama-3.1-8b", "--kv-cache", "fp8")
    assert fp8["kv_bytes_per_token"] * 2 == bf16["kv_bytes_per_token"] == 131072
    assert fp8["kv_cache_dtype"] == "fp8"


def test_sliding_window_models_note_the_window_in_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "model", "gemma-2-27b")
    assert "23 of 46 layers use a 4,096-token sliding window" in out
    doc = run_json(capsys, "model", "gemma-2-27b")
    assert doc["sliding_window_layers"] == 23 and doc["sliding_windows"] == [4096]
    assert doc["kv_bytes_per_sequence_at_context"] < doc["kv_bytes_per_token"] * doc["context_length"]


def test_mla_models_say_the_cache_is_a_latent(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "model", "deepseek-r1")
    assert "MLA: one compressed latent per layer" in out and "kv_lora_rank 512" in out


def test_diffusion_pipelines_show_components_and_latent_geometry(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "model", "flux.1-dev")
    assert code == 0
    assert "FLUX.1 [dev]" in out and "FluxTransformer2DModel" in out and "16 latent channels" in out
    doc = run_json(capsys, "model", "sdxl")
    assert doc["kind"] == "diffusion" and doc["vae_latent_channels"] == 4 and doc["vae_scale_factor"] == 8
    assert doc["params_total"] == sum(c["params"] for c in doc["components"])
    assert doc["kv_bytes_per_token"] is None and doc["latent_shape"] == [4, 128, 128]


def test_models_lists_the_whole_registry(capsys: pytest.CaptureFixture[str]) -> None:
    rows = run_json(capsys, "models")
    assert [r["name"] for r in rows] != [] and {r["name"] for r in rows} == set(list_models())
    code, out, _ = run(capsys, "models")
    assert code == 0 and "llama-3.1-405b" in out and "flux.1-schnell" in out


def test_models_family_filter_is_case_insensitive(capsys: pytest.CaptureFixture[str]) -> None:
    rows = run_json(capsys, "models", "--family", "gemma 2")
    assert {r["name"] for r in rows} == {"gemma-2-9b", "gemma-2-27b"}
    code, _, err = run(capsys, "models", "--family", "bogus")
    assert code == 2 and "matches no registry family" in err
