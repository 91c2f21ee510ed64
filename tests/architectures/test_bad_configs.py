"""Bad config.json files: one line that names the file and the field, exit 2, never a traceback."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from anchorgpu.architectures import SUPPORTED_MODEL_TYPES, from_hf_config, hf, load_model
from anchorgpu.architectures.hf import MAX_PARAMS
from anchorgpu.errors import InvalidConfig
from cli_runner import run as cli

LLAMA: dict[str, Any] = {
    "model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100, "max_position_embeddings": 128,
}


def write(tmp_path: Path, text: str, name: str = "config.json") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("change", "field", "reason"),
    [
        ({"hidden_size": -4096}, "hidden_size", "must be a positive integer, got -4096"),
        ({"num_hidden_layers": 0}, "num_hidden_layers", "must be a positive integer, got 0"),
        ({"num_hidden_layers": 10**9}, "num_hidden_layers", "must be at most 100,000, got 1000000000"),
        ({"vocab_size": 2**60}, "vocab_size", "must be at most 1,099,511,627,776"),
        ({"vocab_size": "32000"}, "vocab_size", "must be a positive integer, got '32000'"),
        ({"num_attention_heads": True}, "num_attention_heads", "must be a positive integer, got True"),
        ({"intermediate_size": 12.5}, "intermediate_size", "must be a positive integer, got 12.5"),
        ({"num_key_value_heads": 3}, "num_key_value_heads", "must divide num_attention_heads (4), got 3"),
        ({"num_attention_heads": 5, "num_key_value_heads": 5}, "num_attention_heads", "must divide hidden_size (64)"),
        ({"tie_word_embeddings": "yes"}, "tie_word_embeddings", "must be true or false, got 'yes'"),
        ({"model_type": "llamma"}, "model_type", "value 'llamma' is not supported (did you mean 'llama'"),
        ({"model_type": 7}, "model_type", "must be a string, got 7"),
    ],
)
def test_a_bad_field_is_named_in_one_line_with_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, Any], field: str, reason: str
) -> None:
    path = write(tmp_path, json.dumps({**LLAMA, **change}))
    code, out, err = cli(capsys, "model", str(path))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"error: {path}: field '{field}' ")
    assert reason in err


@pytest.mark.parametrize("field", ["hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", "intermediate_size", "model_type"])
def test_a_missing_required_field_is_named(tmp_path: Path, field: str) -> None:
    cfg = dict(LLAMA)
    del cfg[field]
    path = write(tmp_path, json.dumps(cfg))
    with pytest.raises(InvalidConfig, match=rf"^{path}: required field '{field}' is missing$"):
        load_model(str(path))


def test_a_truncated_config_says_where_the_json_stops(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = json.dumps(LLAMA, indent=2)
    path = write(tmp_path, text[: len(text) // 2])
    code, _, err = cli(capsys, "model", str(path))
    assert code == 2
    assert err.startswith(f"error: {path}: not valid JSON (truncated or malformed) at line ")
    assert err.count("\n") == 1


@pytest.mark.parametrize("text", ["", "not json", "[1, 2, 3]", "null", '{"model_type": "llama",}', "\ufeff{"])
def test_malformed_or_non_object_json_is_refused_in_one_line(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(InvalidConfig) as info:
        load_model(str(path))
    assert str(info.value).startswith(f"{path}: ")
    assert "\n" not in str(info.value)


def test_a_file_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(b"\xff\xfe\x00{")
    with pytest.raises(InvalidConfig, match="cannot be read"):
        load_model(str(path))


def test_a_folder_without_config_json_and_a_missing_path_are_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "model", str(tmp_path))
    assert code == 2 and "folder has no config.json" in err
    code, _, err = cli(capsys, "model", str(tmp_path / "nope.json"))
    assert code == 2 and err == f"error: {tmp_path / 'nope.json'}: no such file\n"


def test_an_unknown_model_type_lists_the_supported_ones() -> None:
    with pytest.raises(InvalidConfig, match=r"field 'model_type' value 'brand_new' is not supported.*supported: .*deepseek_v2, deepseek_v3"):
        from_hf_config({**LLAMA, "model_type": "brand_new"}, name="m", source="m.json")


UNSUPPORTED = tomllib.loads((Path(hf.__file__).parent / "data" / "unsupported.toml").read_text())["unsupported"]


@pytest.mark.parametrize("model_type", sorted(UNSUPPORTED))
def test_each_known_unsupported_architecture_says_what_it_is_its_relative_and_what_would_be_wrong(
    model_type: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    row = UNSUPPORTED[model_type]
    assert model_type not in SUPPORTED_MODEL_TYPES, f"{model_type} is counted now: drop its row"
    assert row["relative"] in SUPPORTED_MODEL_TYPES
    path = write(tmp_path, json.dumps({**LLAMA, "model_type": model_type, "architectures": ["SomeForCausalLM"]}))
    code, out, err = cli(capsys, "model", str(path))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"'{model_type}' (SomeForCausalLM) is not supported: {row['what']}" in err
    assert f"nearest supported relative is '{row['relative']}'" in err and row["wrong"] in err


@pytest.mark.parametrize(("extra", "relative"), [
    ({}, "'llama' (a dense decoder)"),
    ({"num_local_experts": 8, "num_experts_per_tok": 2}, "'mixtral' (a mixture-of-experts decoder)"),
    ({"n_routed_experts": 8, "kv_lora_rank": 64}, "'deepseek_v3' (a decoder with latent (MLA) attention)"),
    ({"state_size": 16, "conv_kernel": 4}, "'mamba2' (a state-space model)"),
    ({"vision_config": {"hidden_size": 32}}, "'llava' (a model with sub-models"),
])
def test_an_architecture_without_a_row_is_given_the_relative_its_keys_point_to(extra: dict[str, Any], relative: str) -> None:
    name, what = relative.split(" (", 1)
    with pytest.raises(InvalidConfig) as info:
        from_hf_config({**LLAMA, "model_type": "brand_new", **extra}, name="m", source="m.json")
    message = str(info.value)
    assert "\n" not in message and f"it is {what.rstrip(')')}" in message
    assert f"nearest supported relative is {name}, but counting it as {name} would give it the layer shapes" in message
    assert "no count is given" in message


def test_the_api_answers_an_unsupported_architecture_with_422_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sqlite_url: str, fixed_clock: Any
) -> None:
    from fastapi.testclient import TestClient

    from anchorgpu.api import models_ref
    from anchorgpu.api.app import create_app
    from anchorgpu.architectures import loader
    from anchorgpu.config import Settings

    path = write(tmp_path, json.dumps({**LLAMA, "model_type": "rwkv", "architectures": ["RwkvForCausalLM"]}))
    monkeypatch.setattr(loader, "_hub_download", lambda repo_id: str(path))
    monkeypatch.setattr(models_ref, "_HUB", models_ref._BoundedHub(slots=1, timeout_s=5, cache_size=1))
    for name in ("ANCHORGPU_OFFLINE", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    app = create_app(Settings(database_url=sqlite_url, offline=False, hub_fetch=True), clock=fixed_clock,
                     session_secret="bad-configs")
    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.get("/v1/models/someorg/some-rwkv")
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "invalid_config" and "\n" not in body["detail"]
    assert "nearest supported relative is 'mamba'" in body["detail"]


@pytest.mark.parametrize("change", [
    {"hidden_size": 10**12, "intermediate_size": 10**12},  # each below the per-field bound, the product absurd
    {"vocab_size": 10**11, "hidden_size": 65536, "num_attention_heads": 64, "num_key_value_heads": 64},
    {"num_hidden_layers": 99_999, "hidden_size": 1 << 20, "num_attention_heads": 4096, "num_key_value_heads": 4096},
])
def test_an_absurd_size_is_refused_in_one_line(change: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, json.dumps({**LLAMA, **change}))
    code, out, err = cli(capsys, "model", str(path))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "parameters" in err and f"over {MAX_PARAMS:,}" in err and "no count is given" in err


def test_the_largest_registry_model_is_far_below_the_absurd_size_bound() -> None:
    assert max(load_model(n).params_total for n in ("kimi-k2-instruct", "deepseek-v3", "llama-3.1-405b")) < MAX_PARAMS // 50


def test_a_diffusers_component_config_points_to_the_pipeline_names() -> None:
    with pytest.raises(InvalidConfig, match="diffusers component config"):
        from_hf_config({"_class_name": "FluxTransformer2DModel", "num_layers": 19}, name="x", source="x.json")


@pytest.mark.parametrize(
    ("cfg", "field", "reason"),
    [
        ({**LLAMA, "model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 8}, "num_experts_per_tok", "must not exceed the number of experts (4)"),
        ({**LLAMA, "model_type": "mixtral", "num_experts_per_tok": 2}, "num_local_experts", "is missing"),
        ({**LLAMA, "model_type": "gemma2", "layer_types": ["full_attention"]}, "layer_types", "must list 2 layers"),
        ({**LLAMA, "model_type": "gemma2", "layer_types": ["full_attention", "chunked_attention"]}, "layer_types", "unsupported layer type 'chunked_attention'"),
        ({**LLAMA, "model_type": "qwen2_moe", "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 8, "mlp_only_layers": [-1]}, "mlp_only_layers", "list of non-negative integers"),
        ({**LLAMA, "model_type": "mistral", "sliding_window": -1}, "sliding_window", "must be a positive integer, got -1"),
        ({"model_type": "gemma3", "text_config": "oops"}, "text_config", "must be an object"),
        ({**LLAMA, "model_type": "deepseek_v3", "kv_lora_rank": 0}, "kv_lora_rank", "must be a positive integer, got 0"),
        ({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 10}, "n_positions", "is missing"),
        # transformers 5.24's Zamba2Config refuses a layer count that differs from its layer list (default or given)
        ({"model_type": "zamba2", "hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 10}, "num_hidden_layers",
         "must equal the 54 entries of transformers' default layers_block_type"),
        ({"model_type": "zamba2", "hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 10,
          "layers_block_type": ["mamba", "hybrid", "mamba"]}, "num_hidden_layers", "must equal the 3 entries"),
    ],
)
def test_family_specific_fields_are_validated_too(cfg: dict[str, Any], field: str, reason: str) -> None:
    with pytest.raises(InvalidConfig) as info:
        from_hf_config(cfg, name="x", source="cfg.json")
    message = str(info.value)
    assert message.startswith("cfg.json") and f"'{field}'" in message and reason in message


def test_a_mapping_that_is_not_a_dict_is_refused() -> None:
    with pytest.raises(InvalidConfig, match="must be a JSON object"):
        from_hf_config([1, 2], name="x")  # type: ignore[arg-type]


def test_an_unknown_name_exits_3_with_suggestions(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "model", "lama-3.1-70b")
    assert code == 3 and out == ""
    assert err == "error: unknown model 'lama-3.1-70b'; did you mean 'llama-3.1-70b', 'llama-3.3-70b', 'llama-3-70b'?\n"


def test_a_bad_kv_cache_precision_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "model", "llama-3.1-8b", "--kv-cache", "int3")
    assert code == 2 and "--kv-cache must be one of bf16, fp16, fp8" in err
