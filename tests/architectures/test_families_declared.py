"""Issue 12 (items 1 and 2): decoder families as data, and never a silent wrong answer.

Figures: every count compared here comes from transformers 5.24.0 on the meta device, stored in
``transformers_edge_cases.json`` / ``transformers_counts.json`` by the scripts beside them (the Llama-4-sized
cases: 107,769,861,120 parameters for the Scout-sized text model, the "107.8B" of the issue).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from anchorgpu.architectures import ModelSpec, from_hf_config, load_model
from anchorgpu.architectures._config import ConfigReader
from anchorgpu.architectures.families import CLASSES, PARSERS, READS, dense, moe
from anchorgpu.architectures.families._describe import Decoder, parser
from anchorgpu.architectures.hf import unread_count_keys
from anchorgpu.errors import InvalidConfig
from cli_runner import run

HERE = Path(__file__).resolve().parent
EDGE: dict[str, dict[str, Any]] = {
    k: v for k, v in json.loads((HERE / "transformers_edge_cases.json").read_text()).items() if not k.startswith("_")
}
SCOUT = EDGE["llama4_text scout-sized all moe"]
BLOOM_READS = {"num_hidden_layers": "n_layer", "num_attention_heads": "n_head"}
NEW_TYPES = ("olmo", "olmo2", "olmo3", "granite", "granitemoe", "phimoe", "bloom", "cohere", "cohere2", "glm4",
             "glm4_moe", "ernie4_5", "ernie4_5_moe", "exaone4", "smollm3", "llama4_text")


def spec_of(cfg: dict[str, Any]) -> ModelSpec:
    return from_hf_config(cfg, name="t", source="cfg.json")


# ------------------------------------------------------------------------------------- new families


@pytest.mark.parametrize("model_type", NEW_TYPES)
def test_each_new_family_has_unseen_configs_counted_by_transformers(model_type: str) -> None:
    cases = [name for name, case in EDGE.items() if case["config"]["model_type"] == model_type]
    assert cases, f"no transformers-built config of {model_type}"
    for name in cases:
        assert spec_of(EDGE[name]["config"]).params_total == EDGE[name]["params_total"], name


def test_every_supported_model_type_has_an_unseen_config_counted_by_transformers() -> None:
    # Issue 12's target "any unseen config of a supported family exact": each model_type parsed has at least one
    # config no registry row has, built by transformers 5.24 on the meta device (edge, multimodal and SSM files;
    # test_reference_counts, test_multimodal and test_ssm_families compare each one).
    covered = set()
    for name in ("transformers_edge_cases.json", "multimodal_cases.json", "ssm_counts.json"):
        for key, case in json.loads((HERE / name).read_text()).items():
            if not key.startswith("_"):
                covered.add(case["config"]["model_type"])
    assert set(PARSERS) - covered == set()


def test_a_scout_sized_llama4_text_model_is_counted_whole_and_its_active_share_is_one_expert() -> None:
    s = spec_of(SCOUT["config"])
    assert s.params_total == 107_769_861_120 == SCOUT["params_total"]
    assert s.moe is not None and (s.moe.num_experts, s.moe.num_shared_experts, s.moe.num_moe_layers) == (16, 1, 48)
    expert = 3 * 5120 * 8192  # gate, up and down of one routed expert
    assert s.params_total - s.params_active == 48 * 15 * expert  # the 15 experts a token skips, in every layer


def test_llama4_chunked_layers_cache_one_chunk_and_every_fourth_layer_is_full() -> None:
    cfg = {**SCOUT["config"], "attention_chunk_size": 8192}
    s = spec_of(cfg)
    assert s.layer_windows[:4] == (8192, 8192, 8192, None) and s.sliding_window_layers == 36
    assert any("chunk" in n for n in s.notes)


@pytest.mark.parametrize(("extra", "windows"), [
    ({"model_type": "olmo3"}, (4096, 4096, 4096, None)),
    ({"model_type": "cohere2", "sliding_window": 16, "sliding_window_pattern": 2}, (16, None, 16, None)),
    ({"model_type": "exaone4", "sliding_window": 32, "sliding_window_pattern": "LLG"}, (32, 32, None, 32)),
    ({"model_type": "smollm3", "use_sliding_window": True, "sliding_window": 8, "no_rope_layers": [1, 0, 1, 0]},
     (None, 8, None, 8)),
    ({"model_type": "smollm3", "sliding_window": 8, "no_rope_layers": [1, 0, 1, 0]}, (None,) * 4),
])
def test_window_rules_follow_transformers_defaults(extra: dict[str, Any], windows: tuple[int | None, ...]) -> None:
    base = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 4, "num_attention_heads": 8,
            "num_key_value_heads": 2, "vocab_size": 320, "max_position_embeddings": 256}
    assert spec_of({**base, **extra}).layer_windows == windows


@pytest.mark.parametrize("model_type", NEW_TYPES)
@pytest.mark.parametrize(("change", "field"), [
    ({"num_attention_heads": 0}, "num_attention_heads"),
    ({"num_hidden_layers": -2}, "num_hidden_layers"),
    ({"hidden_size": None}, "hidden_size"),
    ({"vocab_size": 1 << 50}, "vocab_size"),
])
def test_malformed_configs_of_new_families_answer_in_one_line_naming_the_field(
    model_type: str, change: dict[str, Any], field: str
) -> None:
    base = EDGE[next(n for n, c in EDGE.items() if c["config"]["model_type"] == model_type)]["config"]
    if model_type == "bloom":  # BLOOM reads its own names first (n_embed, n_layer, n_head)
        change = {BLOOM_READS.get(k, k): v for k, v in change.items() if k != "hidden_size"} or change
        field = {"hidden_size": "n_embed"}.get(field, BLOOM_READS.get(field, field))
    with pytest.raises(InvalidConfig) as info:
        spec_of({**base, **change})
    message = str(info.value)
    assert message.startswith("cfg.json") and "\n" not in message and f"'{field}'" in message


def test_a_new_family_is_a_row_a_llama_like_row_counts_like_llama() -> None:
    cfg = EDGE["llama biases tied odd head_dim"]["config"]
    row = Decoder(display="Test", qkv_bias=("attention_bias", False), o_bias=("attention_bias", False),
                  mlp_bias=("mlp_bias", False))
    built = parser("llama", row)(ConfigReader(cfg, where="cfg.json"), "t", "cfg.json")
    assert built.params_total == EDGE["llama biases tied odd head_dim"]["params_total"] == spec_of(cfg).params_total


def test_every_dense_and_moe_family_states_the_keys_it_reads_and_its_classes() -> None:
    for module in (dense, moe):
        assert set(module.READS) == set(module.PARSERS)
        assert set(module.CLASSES.values()) <= set(module.PARSERS)
    assert all(mt in PARSERS for mt in CLASSES.values())
    assert CLASSES["DeepseekV3ForCausalLM"] == "deepseek_v3" and CLASSES["Llama4ForCausalLM"] == "llama4_text"


# -------------------------------------------------------------------- refusals and the architectures alias


def relabelled_scout() -> dict[str, Any]:
    return {**SCOUT["config"], "model_type": "llama", "architectures": ["LlamaForCausalLM"]}


def test_a_llama4_text_config_relabelled_llama_is_refused_naming_the_expert_keys() -> None:
    with pytest.raises(InvalidConfig) as info:
        spec_of(relabelled_scout())
    message = str(info.value)
    for key in ("interleave_moe_layer_step", "intermediate_size_mlp", "num_experts_per_tok", "num_local_experts"):
        assert key in message
    assert "'llama4_text'" in message and "would be wrong" in message and "\n" not in message


def test_the_cli_refuses_it_with_exit_2_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(relabelled_scout()))
    code, out, err = run(capsys, "model", str(path))
    assert code == 2 and out == "" and err.count("\n") == 1 and "num_local_experts" in err


def test_the_api_refuses_it_with_422(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sqlite_url: str,
                                     fixed_clock: Any) -> None:
    from fastapi.testclient import TestClient

    from anchorgpu.api import models_ref
    from anchorgpu.api.app import create_app
    from anchorgpu.architectures import loader
    from anchorgpu.config import Settings

    path = tmp_path / "config.json"
    path.write_text(json.dumps(relabelled_scout()))
    monkeypatch.setattr(loader, "_hub_download", lambda repo_id: str(path))
    monkeypatch.setattr(models_ref, "_HUB", models_ref._BoundedHub(slots=1, timeout_s=5, cache_size=1))
    for name in ("ANCHORGPU_OFFLINE", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    app = create_app(Settings(database_url=sqlite_url, offline=False, hub_fetch=True), clock=fixed_clock,
                     session_secret="families")
    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.get("/v1/models/someorg/scout-relabelled")
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "invalid_config" and "num_local_experts" in body["detail"]


@pytest.mark.parametrize(("extra", "named"), [
    ({"layer_types": ["full_attention", "linear_attention"]}, "linear_attention"),
    ({"vision_config": {"hidden_size": 32}}, "vision_config"),
    ({"mamba_d_state": 16}, "mamba_d_state"),
    ({"linear_num_value_heads": 8}, "linear_num_value_heads"),
    ({"n_shared_experts": 1, "n_routed_experts": 8}, "n_routed_experts"),
])
def test_count_changing_keys_a_family_does_not_read_are_refused(extra: dict[str, Any], named: str) -> None:
    cfg = {**EDGE["qwen3 default head_dim"]["config"], "num_hidden_layers": 2, **extra}
    with pytest.raises(InvalidConfig, match=named):
        spec_of(cfg)


def test_keys_set_to_nothing_or_to_the_plain_layer_type_are_not_refused() -> None:
    cfg = {**EDGE["llama biases tied odd head_dim"]["config"], "num_local_experts": None, "moe_layers": [],
           "n_shared_experts": 0, "use_qk_norm": False, "layer_types": ["full_attention"] * 4}
    assert spec_of(cfg).params_total == EDGE["llama biases tied odd head_dim"]["params_total"]
    assert unread_count_keys(cfg, "llama") == []


def test_kimi_k2_is_loaded_as_deepseek_v3_and_says_so() -> None:
    s = load_model("kimi-k2-instruct")
    assert isinstance(s, ModelSpec) and s.model_type == "deepseek_v3"
    assert s.notes[0].startswith("loaded as deepseek_v3 because architectures names DeepseekV3ForCausalLM")
    counts = json.loads((HERE / "transformers_counts.json").read_text())["kimi-k2-instruct"]
    assert s.params_total == counts["params_total"] == 1_026_408_209_408
    assert s.moe is not None and (s.moe.num_experts, s.moe.experts_per_token) == (384, 8)


def test_an_unknown_model_type_naming_a_counted_class_counts_like_that_class() -> None:
    cfg = EDGE["granite biases tied"]["config"]
    renamed = {**cfg, "model_type": "my_granite_finetune", "architectures": ["GraniteForCausalLM"]}
    s = spec_of(renamed)
    assert s.params_total == EDGE["granite biases tied"]["params_total"] and s.model_type == "granite"
    assert "my_granite_finetune" in s.notes[0]


def test_an_unsupported_architecture_names_its_nearest_relative_and_what_would_be_wrong(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = {**EDGE["olmo2 gqa head_dim"]["config"], "model_type": "olmoe", "architectures": ["OlmoeForCausalLM"],
           "num_experts": 64}
    with pytest.raises(InvalidConfig) as info:
        spec_of(cfg)
    message = str(info.value)
    assert "'olmoe' (OlmoeForCausalLM) is not supported" in message and "'olmo2'" in message and "router" in message
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    code, _, err = run(capsys, "model", str(path))
    assert code == 2 and err.count("\n") == 1 and "nearest supported relative" in err


def test_an_unknown_class_is_refused_not_guessed() -> None:
    cfg = {**EDGE["granite biases tied"]["config"], "model_type": "brand_new", "architectures": ["BrandNewForCausalLM"]}
    with pytest.raises(InvalidConfig, match=r"'brand_new' \(BrandNewForCausalLM\) is not supported.*no count is given"):
        spec_of(cfg)


def test_reads_cover_what_the_registry_models_set() -> None:
    """No registry model of these families trips the check (its parser reads every count-changing key it sets)."""
    for name in ("kimi-k2-instruct", "glm-4.5-air", "olmo-2-7b", "granite-3.3-8b", "qwen3-4b", "deepseek-v3",
                 "gpt-oss-20b", "qwen3-30b-a3b", "mixtral-8x7b-v0.1", "gemma-2-9b"):
        assert isinstance(load_model(name), ModelSpec), name
    assert READS["glm4_moe"] >= {"n_routed_experts", "n_shared_experts", "first_k_dense_replace", "use_qk_norm"}
