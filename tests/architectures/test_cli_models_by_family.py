"""``anchorgpu models --by-family``: one row per family with its models, types, sizes and shipped formats."""

from __future__ import annotations

import json

import pytest

from anchorgpu.architectures import model_infos
from cli_runner import run, run_json


def test_every_registry_entry_is_in_exactly_one_family_row(capsys: pytest.CaptureFixture[str]) -> None:
    families = run_json(capsys, "models", "--by-family")
    names = [name for f in families for name in f["models"]]
    assert sorted(names) == sorted(info.name for info in model_infos())  # none lost, none twice
    assert [f["family"] for f in families] == list(dict.fromkeys(info.family for info in model_infos()))


def test_a_family_row_groups_the_flat_rows(capsys: pytest.CaptureFixture[str]) -> None:
    flat = {r["name"]: r for r in run_json(capsys, "models")}
    for fam in run_json(capsys, "models", "--by-family"):
        members = [flat[name] for name in fam["models"]]
        assert {m["family"] for m in members} == {fam["family"]}
        assert fam["model_types"] == sorted({m["model_type"] for m in members})
        assert fam["shipped_weights"] == sorted({m["shipped_weights"] for m in members})
        sizes = [m["params_total"] for m in members]
        assert sizes == sorted(sizes) and (fam["params_total_min"], fam["params_total_max"]) == (sizes[0], sizes[-1])


def test_families_show_the_format_their_checkpoints_ship_in(capsys: pytest.CaptureFixture[str]) -> None:
    families = {f["family"]: f for f in run_json(capsys, "models", "--by-family")}
    # gpt-oss ships MXFP4 experts, DeepSeek-V3 block-scaled FP8 (their quantization_config) and, as NVIDIA's
    # deepseek-r1-0528-fp4 (its hf_quant_config.json), NVFP4; Qwen3 16-bit
    assert families["gpt-oss"]["shipped_weights"] == ["mxfp4"]
    assert families["DeepSeek-V3"]["shipped_weights"] == ["fp8-block128x128", "nvfp4"]
    assert families["Qwen3"]["shipped_weights"] == ["bf16"]
    assert families["Qwen3"]["models"][:2] == ["qwen3-0.6b", "qwen3-1.7b"]  # smallest first


def test_the_grouped_table_and_the_family_filter(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "models", "--by-family")
    assert code == 0 and err == "" and "by family" in out and "mxfp4" in out and "qwen3-1.7b" in out
    code, out, _ = run(capsys, "models", "--by-family", "--json", "--family", "qwen3")
    picked = [f["family"] for f in json.loads(out)]
    assert code == 0 and {"Qwen3", "Qwen3-MoE"} <= set(picked) and all(f.lower().startswith("qwen3") for f in picked)
    code, out, _ = run(capsys, "models")
    assert code == 0 and "families; shipped in other than bf16:" in out and "gpt-oss: mxfp4" in out
