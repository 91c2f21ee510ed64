"""NVIDIA's ModelOpt checkpoints named by their Hub id, offline: a registry row with ``base`` and ``quant_config``.

``deepseek-r1-0528-fp4`` (``nvidia/DeepSeek-R1-0528-FP4``) is the ``deepseek-r1`` architecture with that checkpoint's
own ``hf_quant_config.json`` (``architectures/data/quant_configs/``, its public copy in ``SOURCES.md`` there:
supermy/deepseek_fp4_plugin ``deepseek-r1-fp4/hf_quant_config.json`` at commit
460bd6ee9eeefbcc1e39799942891e698dff70d8): NVFP4, every layer's ``self_attn*``, the LM head and the MTP layer
excluded (BF16), an FP8 KV cache. Weights 396.7 GB against 380.3 GB with NVFP4 everywhere but the head (the 11.41 B
attention parameters kept 16-bit, benchmarks/moe_small_batch_findings.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from anchorgpu.architectures import ModelSpec, load_model, model_infos
from anchorgpu.architectures.loader import load_with_hf_quant_config
from anchorgpu.architectures.registry import REGISTRY_FILE, _parse, read_data_text, resolve
from anchorgpu.cli import main
from anchorgpu.errors import DataFileError
from anchorgpu.planner.formats import get_format, shipped_format
from anchorgpu.planner.weight_parts import model_weight_parts

HUB_ID = "nvidia/DeepSeek-R1-0528-FP4"
QUANT_FILE = "nvidia-deepseek-r1-0528-fp4.hf_quant_config.json"
SOURCES = Path(__file__).resolve().parents[2] / "src" / "anchorgpu" / "architectures" / "data" / "quant_configs" / "SOURCES.md"
HERE = Path(__file__).resolve().parent
TRANSFORMERS: dict[str, dict[str, Any]] = {
    k: v for k, v in json.loads((HERE / "transformers_counts.json").read_text()).items() if isinstance(v, dict)
}
QUANTIZED_ROWS = [i for i in model_infos() if i.base]


def _no_fetch(repo: str) -> str:
    raise AssertionError(f"{repo}: a registry checkpoint must not reach the Hub")


@pytest.mark.parametrize("ref", [HUB_ID, HUB_ID.lower(), f"https://huggingface.co/{HUB_ID}", "deepseek-r1-0528-fp4",
                                 "DeepSeek-R1-0528-FP4", "deepseek-r1-0528-nvfp4"])
def test_the_hub_id_and_the_short_name_resolve_offline(ref: str) -> None:
    spec = load_model(ref, offline=True, fetch=_no_fetch, environ={"HF_HUB_OFFLINE": "1"})
    assert isinstance(spec, ModelSpec)
    assert spec.name == "deepseek-r1-0528-fp4" and spec.family == "DeepSeek-V3"
    assert spec.source == (f"registry:deepseek-r1-0528-fp4 [models/deepseek-r1.json + quant_configs/{QUANT_FILE}] "
                           f"(as published in {HUB_ID})")


def test_the_row_reads_the_checkpoints_layout_attention_head_and_mtp_bf16_the_rest_nvfp4() -> None:
    spec = load_model(HUB_ID, offline=True)
    assert isinstance(spec, ModelSpec)
    q = spec.quantization
    assert q is not None and (q.method, q.name, q.head_quantized) == ("modelopt", "nvfp4", False)
    assert {g for g, f in q.groups if f == 0.0} == {"q_a", "q_b", "kv_a", "kv_b", "o", "router"}
    assert {g for g, f in q.groups if f == 1.0} == {"gate", "up", "down", "expert_gate", "expert_up", "expert_down",
                                                    "shared_gate", "shared_up", "shared_down"}
    assert "model.layers.61*" in q.ignore  # the MTP layer (not built by transformers, so not counted)
    assert (q.kv_cache, q.kv_cache_field) == ("fp8", "kv_cache_quant_algo FP8")
    # the same reading as the calibration rows' {"registry": "deepseek-r1", "hf_quant_config": FILE}
    assert q == load_with_hf_quant_config("deepseek-r1", QUANT_FILE).quantization


def test_its_weights_are_396_7_gb_against_380_3_gb_with_nvfp4_everywhere_but_the_head() -> None:
    spec = load_model("deepseek-r1-0528-fp4")
    assert isinstance(spec, ModelSpec)
    shipped = model_weight_parts(spec, shipped_format(spec)).total
    everywhere = model_weight_parts(spec, get_format("nvfp4")).total
    assert round(shipped / 1e9, 1) == 396.7 and round(everywhere / 1e9, 1) == 380.3


def test_the_parameter_count_is_the_bases_transformers_count() -> None:
    """Quantization changes bytes, not parameters: the row is counted as its base architecture was."""
    assert QUANTIZED_ROWS, "no registry row names a base"
    for info in QUANTIZED_ROWS:
        spec, base = load_model(info.name), load_model(info.base)
        assert isinstance(spec, ModelSpec) and isinstance(base, ModelSpec)
        want = TRANSFORMERS[info.base]
        assert (spec.params_total, spec.params.embeddings, spec.params.head) == (
            want["params_total"], want["embedding_params"], want["untied_head_params"])
        assert (spec.params_active, spec.params) == (base.params_active, base.params)
        assert info.file == resolve(info.base).file  # type: ignore[union-attr]


def test_every_quant_config_file_is_shipped_and_named_in_sources() -> None:
    sources = SOURCES.read_text(encoding="utf-8")
    for info in QUANTIZED_ROWS:
        doc = json.loads(read_data_text(info.quant_config))
        assert doc["producer"]["name"] == "modelopt" and "quantization" in doc
        assert f"## {info.quant_config.removeprefix('quant_configs/')}" in sources
        assert info.hub_id and f"`{info.hub_id}`" in sources


def _row(**fields: object) -> dict[str, object]:
    base = {"file": "models/a.json", "display_name": "A", "family": "F"}
    quantized = {"base": "a", "quant_config": "quant_configs/q.json", "display_name": "Q", "family": "F"}
    return {"schema_version": 1, "models": {"a": base, "q": {**quantized, **fields}}}


@pytest.mark.parametrize(
    ("doc", "reason"),
    [
        (_row(quant_config=""), "'base' and 'quant_config' go together"),
        (_row(base=""), "'base' and 'quant_config' go together"),
        (_row(file="models/a.json"), "give no 'file'"),
        (_row(shipped_weights="fp8"), "give no 'file' or 'shipped_weights'"),
        (_row(quant_config="models/a.json"), "under quant_configs/"),
        (_row(quant_config="quant_configs/../models/a.json"), "under quant_configs/"),
        (_row(base="b"), "field 'base' must name a [models] row"),
        (_row(base="q"), "field 'base' must name a [models] row"),
        ({"schema_version": 1, "pipelines": {"p": {"base": "a", "quant_config": "quant_configs/q.json",
                                                   "display_name": "P", "family": "F"}}}, "go together"),
    ],
)
def test_a_bad_quantized_checkpoint_row_is_named(doc: dict[str, object], reason: str) -> None:
    with pytest.raises(DataFileError) as info:
        _parse(doc)
    assert str(info.value).startswith(f"{REGISTRY_FILE}, row ") and reason in str(info.value)


def test_a_good_quantized_checkpoint_row_takes_its_bases_file() -> None:
    rows = {i.name: i for i in _parse(_row(hub_id="org/Q"))}
    assert (rows["q"].file, rows["q"].base, rows["q"].quant_config) == ("models/a.json", "a", "quant_configs/q.json")
    assert rows["q"].source == "registry:q [models/a.json + quant_configs/q.json] (as published in org/Q)"


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def test_plan_on_b200_fits_with_its_nvfp4_weights_and_fp8_kv_cache(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, "plan", HUB_ID, "--gpu", "b200", "--offline", "--json")
    assert doc["fits"] and doc["gpus"] == 4
    assert doc["precision"] == {"weights": "nvfp4", "kv_cache": "fp8", "held_weights": "nvfp4"}
    assert doc["model"]["name"] == "deepseek-r1-0528-fp4"
    # the checkpoint's 396.7 GB of weights split 4 ways (TP 4)
    assert abs(doc["per_gpu"]["weights_bytes"] * 4 / 1e9 - 396.7) < 0.1
    assert "fp4_weight_only_emulation" not in {w["code"] for w in doc["warnings"]}


def test_plan_on_h100_says_the_fp4_weights_are_dequantized(capsys: pytest.CaptureFixture[str]) -> None:
    """As for any NVFP4 weights on Hopper (no FP4 tensor cores): planned, with the weight-only-emulation warning."""
    doc = _json(capsys, "plan", "deepseek-r1-0528-fp4", "--gpu", "h100", "--offline", "--json")
    assert doc["precision"]["weights"] == "nvfp4"
    assert "fp4_weight_only_emulation" in {w["code"] for w in doc["warnings"]}


def test_models_lists_the_checkpoint_as_other_quantized_rows_are(capsys: pytest.CaptureFixture[str]) -> None:
    rows = {r["name"]: r for r in _json(capsys, "models", "--json")}
    row = rows["deepseek-r1-0528-fp4"]
    assert (row["hub_id"], row["shipped_weights"], row["family"], row["kind"]) == (HUB_ID, "nvfp4", "DeepSeek-V3", "llm")
    assert row["params_total"] == rows["deepseek-r1"]["params_total"]
    assert rows["gpt-oss-20b"]["shipped_weights"] == "mxfp4"  # the other 4-bit shipped format, listed alike
