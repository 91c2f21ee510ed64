"""Exact counts: the shared reference configs, every registry config and small edge cases vs transformers.

Figures: ``reference_expected_params.json`` is a copy of shared/reference/configs/expected_params.json
(computed by transformers 5.24 on the meta device); ``transformers_counts.json`` and
``transformers_edge_cases.json`` were computed by transformers 5.24.0 on the meta device by the scripts
beside them. AnchorGPU itself never imports torch or transformers.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from anchorgpu.architectures import ModelSpec, from_hf_config, list_models, load_model, model_infos
from anchorgpu.cli import main

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
MODELS_DIR = REPO / "src" / "anchorgpu" / "architectures" / "data" / "models"
SHARED_CONFIGS = REPO.parent / "shared" / "reference" / "configs"

EXPECTED: dict[str, dict[str, int]] = {
    k: v for k, v in json.loads((HERE / "reference_expected_params.json").read_text()).items() if not k.startswith("_")
}
TRANSFORMERS: dict[str, dict[str, int]] = {
    k: v for k, v in json.loads((HERE / "transformers_counts.json").read_text()).items() if isinstance(v, dict)
}
EDGE: dict[str, dict[str, Any]] = {
    k: v for k, v in json.loads((HERE / "transformers_edge_cases.json").read_text()).items() if not k.startswith("_")
}


def _cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code = main(["model", *argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    return doc


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_anchorgpu_model_on_each_reference_config_file_matches_expected_params_exactly(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _cli_json(capsys, str(MODELS_DIR / f"{name}.json"))
    want = EXPECTED[name]
    got = {key: doc[key] for key in want if key != "kv_bytes_per_token_bf16"}
    got["kv_bytes_per_token_bf16"] = doc["kv_bytes_per_token"]
    assert got == want
    breakdown = doc["breakdown"]
    assert (breakdown["embeddings"], breakdown["head"], breakdown["position_embeddings"]) == (
        want["embedding_params"], want["untied_head_params"], want["position_embedding_params"],
    )


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_registry_name_gives_the_same_counts_as_the_reference_file(name: str) -> None:
    spec = load_model(name)
    assert isinstance(spec, ModelSpec)
    assert (spec.params_total, spec.params_active, spec.kv_bytes_per_token()) == (
        EXPECTED[name]["params_total"], EXPECTED[name]["params_active"], EXPECTED[name]["kv_bytes_per_token_bf16"],
    )


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_shipped_reference_configs_are_byte_identical_copies_of_the_shared_ones(name: str) -> None:
    shared = SHARED_CONFIGS / f"{name}.json"
    if not shared.exists():
        pytest.skip(f"shared reference configs not present beside the repository ({SHARED_CONFIGS})")
    assert (MODELS_DIR / f"{name}.json").read_bytes() == shared.read_bytes()


def test_every_registry_language_model_has_a_transformers_count() -> None:
    # A quantized checkpoint of another row (`base`, `quant_config`) has that row's architecture and config file, so
    # its count is the base's (test_shipped_checkpoints.py checks it equals the base's count here), not one of its own.
    llms = {i.name for i in model_infos() if i.kind == "llm" and not i.base}
    assert llms == set(TRANSFORMERS)
    assert len(llms) >= 30
    assert {i.base for i in model_infos() if i.base} <= set(TRANSFORMERS)


@pytest.mark.parametrize("name", sorted(TRANSFORMERS))
def test_registry_model_counts_equal_transformers_on_the_meta_device(name: str) -> None:
    spec = load_model(name)
    assert isinstance(spec, ModelSpec)
    want = TRANSFORMERS[name]
    assert spec.params_total == want["params_total"]
    assert spec.params.embeddings == want["embedding_params"]
    assert spec.params.head == want["untied_head_params"]


@pytest.mark.parametrize("name", sorted(TRANSFORMERS))
def test_each_transformers_count_was_made_from_the_config_file_shipped_now(name: str) -> None:
    digest = hashlib.sha256((MODELS_DIR / f"{name}.json").read_bytes()).hexdigest()
    assert TRANSFORMERS[name]["config_sha256"] == digest, (
        f"{name}.json changed since it was counted: rerun tests/architectures/transformers_counts.py --only {name}")


@pytest.mark.parametrize("case", sorted(EDGE))
def test_edge_case_configs_count_exactly_like_transformers(case: str) -> None:
    spec = from_hf_config(EDGE[case]["config"], name=case)
    assert spec.params_total == EDGE[case]["params_total"]


def test_list_models_holds_every_registry_row_sorted() -> None:
    names = list_models()
    assert list(names) == sorted(names)
    assert {"llama-3.1-70b", "deepseek-r1", "gpt-oss-120b", "flux.1-dev", "sdxl-base-1.0"} <= set(names)
