"""NVIDIA ModelOpt checkpoints: ``quant_method`` modelopt and ``hf_quant_config.json``, read into the planner's groups.

Fixtures:

* ``modelopt/deepseek-r1-nvfp4.hf_quant_config.json``: verbatim ``hf_quant_config.json`` at the root of
  peaceh-nv/TensorRT-LLM (commit 8d8be36b538750351b725de99a2606342f982b59, 25,051 characters): ModelOpt 0.23.0,
  ``quant_algo`` NVFP4, ``group_size`` 16, no KV quantization, ``exclude_modules`` naming, per layer of a 61-layer
  DeepSeek-V3-architecture model, ``kv_a_proj_with_mqa``, ``q_b_proj``, ``kv_b_proj`` (and ``q_proj``, which an
  MLA model with ``q_lora_rank`` does not have), the routers, ``lm_head`` and the MTP layer ``model.layers.61*``.
  It is the file ModelOpt's DeepSeek example writes (``examples/deepseek/ptq.py`` + ``quantize_to_nvfp4.py``);
  which Hub checkpoint it came with is not stated there. Put on the registry's DeepSeek-R1 config.
* The ``config.json`` form is what ModelOpt's own ``convert_hf_quant_config_format``
  (``modelopt/torch/export/convert_hf_config.py``) makes of that file: ``ignore`` = ``exclude_modules``,
  ``quant_method`` modelopt, ``config_groups`` describing the same NVFP4 scheme.
* The FP8 block is that converter's docstring example (producer 0.19.0: FP8, FP8 KV cache, ``exclude_modules``
  ``["lm_head"]``), put on the registry's Llama 3.1 8B config; its ``config.json`` form carries
  ``kv_cache_quant_algo`` as ``kv_cache_scheme`` (NVIDIA/TensorRT-Model-Optimizer
  ``modelopt/torch/export/convert_hf_config.py``). The real DeepSeek-R1 file above ships no KV dtype (null).
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from anchorgpu.architectures import ModelSpec, from_hf_config
from anchorgpu.architectures._modelopt import modelopt_quantization_config
from anchorgpu.architectures.loader import load_config_file
from anchorgpu.architectures.quantization import describe_shipped
from anchorgpu.architectures.registry import read_data_text, resolve
from anchorgpu.errors import InvalidConfig
from anchorgpu.planner.formats import get_format, shipped_format
from anchorgpu.planner.weight_parts import model_weight_parts

HERE = Path(__file__).parent / "modelopt"
DSR1_HF_QUANT = HERE / "deepseek-r1-nvfp4.hf_quant_config.json"
FP8_HF_QUANT = {"producer": {"name": "modelopt", "version": "0.19.0"},
                "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head"]}}


def _registry_config(name: str) -> dict[str, object]:
    info = resolve(name)
    assert info is not None
    return json.loads(read_data_text(info.file))


def _converted(doc: dict[str, object]) -> dict[str, object]:
    """ModelOpt's convert_hf_quant_config_format for an NVFP4 document (what config.json's block holds)."""
    inner = doc["quantization"]
    assert isinstance(inner, dict)
    group = inner.get("group_size", 16)
    scheme = {"dynamic": False, "num_bits": 4, "type": "float", "group_size": group}
    return {"config_groups": {"group_0": {"input_activations": scheme, "weights": scheme, "targets": ["Linear"]}},
            "ignore": inner["exclude_modules"], "quant_algo": inner["quant_algo"], "producer": doc["producer"],
            "quant_method": "modelopt"}


def _dsr1_fp4(block: dict[str, object]):  # noqa: ANN202
    cfg = _registry_config("deepseek-r1")
    cfg["quantization_config"] = block
    return from_hf_config(cfg, name="deepseek-r1-fp4", source="test")


def test_deepseek_r1_nvfp4_hf_quant_config_keeps_the_excluded_mla_projections_16_bit() -> None:
    doc = json.loads(DSR1_HF_QUANT.read_text())
    q = _dsr1_fp4(modelopt_quantization_config(doc, where="hf_quant_config.json")).quantization
    assert q is not None and q.method == "modelopt" and q.name == "nvfp4"
    assert dict(q.groups) == {"q_a": 1.0, "q_b": 0.0, "kv_a": 0.0, "kv_b": 0.0, "o": 1.0, "gate": 1.0, "up": 1.0,
                              "down": 1.0, "router": 0.0, "expert_gate": 1.0, "expert_up": 1.0, "expert_down": 1.0,
                              "shared_gate": 1.0, "shared_up": 1.0, "shared_down": 1.0}
    assert not q.head_quantized
    assert describe_shipped(q).endswith("16-bit: embeddings, lm_head, q_b, kv_a, kv_b, router")


def test_the_config_json_form_reads_the_same_as_the_hf_quant_config() -> None:
    doc = json.loads(DSR1_HF_QUANT.read_text())
    a = _dsr1_fp4(modelopt_quantization_config(doc, where="x")).quantization
    b = _dsr1_fp4(_converted(doc)).quantization
    assert a is not None and b is not None
    assert (a.name, a.groups, a.head_quantized) == (b.name, b.groups, b.head_quantized)


def test_deepseek_r1_nvfp4_weight_bytes_add_the_16_bit_projections_to_an_all_nvfp4_plan() -> None:
    doc = json.loads(DSR1_HF_QUANT.read_text())
    m = _dsr1_fp4(modelopt_quantization_config(doc, where="x"))
    shipped = model_weight_parts(m, shipped_format(m))
    everywhere = model_weight_parts(m, get_format("nvfp4"))
    # q_b (1536 -> 128 x 192), kv_a (7168 -> 576), kv_b (512 -> 128 x 256) in 16 bit, 61 layers
    kept = 61 * (1536 * 128 * 192 + 7168 * 576 + 512 * 128 * 256)
    for name, d_in, d_out in (("q_b", 1536, 128 * 192), ("kv_a", 7168, 576), ("kv_b", 512, 128 * 256)):
        assert shipped.detail[name] == 61 * 2 * d_in * d_out
    nvfp4 = 61 * sum(d_in * d_out / 2 + d_in * d_out / 16 + 8 for d_in, d_out in
                     ((1536, 128 * 192), (7168, 576), (512, 128 * 256)))
    assert math.isclose(shipped.dense - everywhere.dense, 2 * kept - nvfp4, rel_tol=1e-12)
    assert shipped.experts == everywhere.experts


def test_a_checkpoint_folder_with_hf_quant_config_json_is_read_as_modelopt(tmp_path: Path) -> None:
    cfg = _registry_config("deepseek-r1")
    cfg.pop("quantization_config")  # the FP8 source's block; ModelOpt 0.23's export states the precision beside it
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    shutil.copy(DSR1_HF_QUANT, tmp_path / "hf_quant_config.json")
    q = load_config_file(tmp_path).quantization
    assert q is not None and q.method == "modelopt" and q.fraction("kv_b") == 0.0 and q.fraction("o") == 1.0


def test_modelopt_fp8_with_the_head_excluded_ships_its_fp8_kv_cache() -> None:
    cfg = _registry_config("llama-3.1-8b")
    cfg["quantization_config"] = modelopt_quantization_config(FP8_HF_QUANT, where="x")
    q = from_hf_config(cfg, name="llama-fp8", source="test").quantization
    assert q is not None and q.name == "fp8" and not q.head_quantized
    assert all(frac == 1.0 for _, frac in q.groups)
    assert (q.kv_cache, q.kv_cache_field, q.notes) == ("fp8", "kv_cache_quant_algo FP8", ())


def test_the_real_deepseek_r1_fixture_ships_no_kv_cache_dtype() -> None:
    doc = json.loads(DSR1_HF_QUANT.read_text())  # "kv_cache_quant_algo": null
    q = _dsr1_fp4(modelopt_quantization_config(doc, where="x")).quantization
    assert q is not None and q.kv_cache is None


@pytest.mark.parametrize("scheme", ["FP8", {"dynamic": False, "num_bits": 8, "type": "float"}])
def test_the_config_json_form_of_an_fp8_kv_cache_reads_the_same(scheme: object) -> None:
    # convert_hf_quant_config_format writes kv_cache_quant_algo as kv_cache_scheme: the string (ModelOpt 0.29's
    # docstring example), or the compressed-tensors scheme vLLM's resolve_kv_cache_dtype_string also reads
    cfg = _registry_config("llama-3.1-8b")
    cfg["quantization_config"] = {"quant_method": "modelopt", "quant_algo": "FP8", "ignore": ["lm_head"],
                                  "kv_cache_scheme": scheme}
    q = from_hf_config(cfg, name="x", source="test").quantization
    assert q is not None and (q.kv_cache, q.kv_cache_field) == ("fp8", "kv_cache_scheme FP8")


@pytest.mark.parametrize(("key", "value", "field"), [
    ("kv_cache_quant_algo", "NVFP4", "kv_cache_quant_algo NVFP4"),
    ("kv_cache_scheme", "NVFP4", "kv_cache_scheme NVFP4"),
    # the compressed-tensors form vLLM 0.33.0's get_kv_cache_quant_algo_string reads as nvfp4
    ("kv_cache_scheme", {"num_bits": 4, "type": "float"}, "kv_cache_scheme NVFP4"),
])
def test_an_nvfp4_kv_cache_is_the_kv_cache_the_checkpoint_ships(key: str, value: object, field: str) -> None:
    cfg = _registry_config("llama-3.1-8b")
    cfg["quantization_config"] = {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16, key: value}
    q = from_hf_config(cfg, name="x", source="test").quantization
    assert q is not None and (q.kv_cache, q.kv_cache_field, q.notes) == ("nvfp4", field, ())


def test_an_int8_kv_cache_the_planner_has_no_dtype_for_is_a_note() -> None:
    cfg = _registry_config("llama-3.1-8b")
    cfg["quantization_config"] = {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16,
                                  "kv_cache_quant_algo": "INT8"}
    q = from_hf_config(cfg, name="x", source="test").quantization
    assert q is not None and q.kv_cache is None
    assert len(q.notes) == 1 and "INT8 KV cache" in q.notes[0] and "--kv-cache" in q.notes[0]


def test_the_plan_says_it_sized_an_int8_kv_checkpoint_16_bit() -> None:
    """A plan of that checkpoint states the note (it is sized bf16 by default, never silently)."""
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner import Workload, plan

    cfg = _registry_config("llama-3.1-8b")
    cfg["quantization_config"] = {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "INT8"}
    m = from_hf_config(cfg, name="x", source="test")
    p = plan(m, Workload(task="inference", context_tokens=8192, concurrency=4), gpu=get_gpu("h100"))
    assert p.precision.kv_cache == "bf16"
    assert any("INT8 KV cache" in a and "--kv-cache" in a for a in p.assumptions)
    train = plan(m, Workload(task="train", seq_tokens=4096), gpu=get_gpu("h100"))
    assert not any("INT8 KV cache" in a for a in train.assumptions)


def test_modelopt_quantizes_the_head_where_nothing_excludes_it() -> None:
    cfg = _registry_config("llama-3.1-8b")
    cfg["quantization_config"] = {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16, "ignore": []}
    q = from_hf_config(cfg, name="x", source="test").quantization
    assert q is not None and q.head_quantized


@pytest.mark.parametrize(("block", "message"), [
    ({"quant_algo": "MIXED_PRECISION"}, "MIXED_PRECISION' is not supported"),
    ({"quant_algo": "W4A8_AWQ"}, "W4A8_AWQ' is not supported"),
    ({"quant_algo": "NVFP4", "group_size": 32}, "'group_size' must be 16"),
    ({}, "'quantization_config.quant_algo' is missing"),
    ({"quant_algo": "FP8", "ignore": "lm_head"}, "'quantization_config.ignore' must be a list"),
    ({"quant_algo": "FP8", "kv_cache_quant_algo": "FP16X"}, "kv_cache_quant_algo' must be one of"),
])
def test_what_changes_the_bytes_and_is_not_understood_is_refused_in_one_line(block: dict[str, object],
                                                                             message: str) -> None:
    cfg = _registry_config("llama-3.1-8b")
    cfg["quantization_config"] = {"quant_method": "modelopt", **block}
    with pytest.raises(InvalidConfig, match=message) as err:
        from_hf_config(cfg, name="x", source="test")
    assert "\n" not in str(err.value)


def test_an_hf_quant_config_without_its_quantization_object_is_refused() -> None:
    with pytest.raises(InvalidConfig, match="'quantization' object"):
        modelopt_quantization_config({"producer": {}}, where="hf_quant_config.json")


# The shipped hf_quant_config.json of nvidia/DeepSeek-R1-0528-FP4 (architectures/data/quant_configs/, SOURCES.md there):
# supermy/deepseek_fp4_plugin deepseek-r1-fp4/hf_quant_config.json at commit 460bd6ee9eeefbcc1e39799942891e698dff70d8,
# beside that checkpoint's model card (ModelOpt v0.31.0): NVFP4, FP8 KV cache, exclude_modules lm_head, every layer's
# self_attn* and the MTP layer model.layers.61*. The same repository's idea.md lists the layer-0 attention projections
# (q_a, q_b, kv_a_proj_with_mqa, kv_b, o) as BF16 tensors without scales.
DSR1_0528 = "nvidia-deepseek-r1-0528-fp4.hf_quant_config.json"


def test_the_shipped_deepseek_r1_0528_fp4_file_is_the_published_one() -> None:
    doc = json.loads(read_data_text(f"quant_configs/{DSR1_0528}"))
    q = doc["quantization"]
    assert doc["producer"] == {"name": "modelopt", "version": "0.31.0"}
    assert (q["quant_algo"], q["kv_cache_quant_algo"], q["group_size"]) == ("NVFP4", "FP8", 16)
    layers = sorted(str(i) for i in range(61))  # the file's own order: 0, 1, 10, 11, ... 9
    assert q["exclude_modules"] == ["lm_head", *(f"model.layers.{i}.self_attn*" for i in layers), "model.layers.61*"]
    assert len(read_data_text(f"quant_configs/{DSR1_0528}")) == 2918


def test_nvidias_deepseek_r1_fp4_keeps_all_five_mla_projections_bf16() -> None:
    from anchorgpu.architectures.loader import load_with_hf_quant_config

    m = load_with_hf_quant_config("deepseek-r1", DSR1_0528)
    q = m.quantization
    assert q is not None and q.method == "modelopt" and q.name == "nvfp4" and not q.head_quantized
    assert {g: f for g, f in q.groups if f == 0.0} == {"q_a": 0.0, "q_b": 0.0, "kv_a": 0.0, "kv_b": 0.0, "o": 0.0,
                                                       "router": 0.0}
    assert (q.kv_cache, q.kv_cache_field) == ("fp8", "kv_cache_quant_algo FP8")
    # the attention's linear layers, 61 layers x 187M (Stop 44: 11.41B), all 16-bit: +16.4 GB over NVFP4 everywhere
    per_layer = 7168 * 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 * 128 * 256 + 128 * 128 * 7168
    shipped = model_weight_parts(m, shipped_format(m))
    everywhere = model_weight_parts(m, get_format("nvfp4"))
    assert sum(shipped.detail[g] for g in ("q_a", "q_b", "kv_a", "kv_b", "o")) == 61 * 2 * per_layer
    assert 61 * per_layer == 11_413_422_080
    assert shipped.experts == everywhere.experts
    assert 16.3e9 < shipped.dense - everywhere.dense < 16.5e9


def test_a_quant_config_needs_a_registry_language_model() -> None:
    from anchorgpu.architectures.loader import load_with_hf_quant_config
    from anchorgpu.errors import UnknownModel

    with pytest.raises(UnknownModel):
        load_with_hf_quant_config("deepseek-r9", DSR1_0528)
    with pytest.raises(UnknownModel):
        load_with_hf_quant_config("flux.1-dev", DSR1_0528)


def _fake_hub_download(tmp_path: Path, files: dict[str, str | Exception], calls: list[tuple[str, str, str | None]]):
    """``huggingface_hub.hf_hub_download`` over ``files`` (name -> text, or the exception the Hub raises), writing
    into one snapshot folder named by its commit, as the Hub's cache does."""
    snapshot = tmp_path / "snapshots" / ("0123456789abcdef" * 3)[:40]

    def download(repo_id: str, filename: str, revision: str | None = None) -> str:
        calls.append((repo_id, filename, revision))
        served = files[filename]
        if isinstance(served, Exception):
            raise served
        snapshot.mkdir(parents=True, exist_ok=True)
        (snapshot / filename).write_text(served)
        return str(snapshot / filename)

    return download


def _not_found() -> Exception:
    import httpx2
    from huggingface_hub.errors import RemoteEntryNotFoundError

    request = httpx2.Request("GET", "https://huggingface.co/someone/deepseek-r1-bf16/resolve/main/hf_quant_config.json")
    return RemoteEntryNotFoundError("404 Client Error: Entry Not Found", response=httpx2.Response(404, request=request))


def test_a_hub_checkpoint_states_its_modelopt_precision_in_hf_quant_config_json(tmp_path: Path,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """nvidia/DeepSeek-R1-0528-FP4 (ModelOpt 0.31.0) states its NVFP4 layout only in hf_quant_config.json beside a
    config.json without a quantization_config (the stored file's source: quant_configs/SOURCES.md): fetched from the
    Hub it must be planned as that layout, not 16-bit. That id is now a registry row (read offline,
    test_shipped_checkpoints.py); a copy of the checkpoint under another, unregistered id is what gets fetched."""
    import huggingface_hub

    from anchorgpu.architectures import load_model

    cfg = _registry_config("deepseek-r1")
    cfg.pop("quantization_config")
    calls: list[tuple[str, str, str | None]] = []
    files: dict[str, str | Exception] = {"config.json": json.dumps(cfg),
                                         "hf_quant_config.json": read_data_text(f"quant_configs/{DSR1_0528}")}
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", _fake_hub_download(tmp_path, files, calls))
    m = load_model("someone/DeepSeek-R1-0528-FP4-copy", environ={})  # a hypothetical re-upload, not in the registry
    assert isinstance(m, ModelSpec) and m.quantization is not None
    assert (m.quantization.method, m.quantization.name, m.quantization.fraction("q_a")) == ("modelopt", "nvfp4", 0.0)
    assert [c[1] for c in calls] == ["config.json", "hf_quant_config.json"]
    assert calls[1][2] == ("0123456789abcdef" * 3)[:40]  # the sidecar from config.json's own commit


def test_a_hub_checkpoint_without_hf_quant_config_json_is_its_config_alone(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub

    from anchorgpu.architectures import load_model

    cfg = _registry_config("deepseek-r1")
    cfg.pop("quantization_config")
    calls: list[tuple[str, str, str | None]] = []
    files: dict[str, str | Exception] = {"config.json": json.dumps(cfg), "hf_quant_config.json": _not_found()}
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", _fake_hub_download(tmp_path, files, calls))
    m = load_model("someone/deepseek-r1-bf16", environ={})
    assert isinstance(m, ModelSpec) and m.quantization is None
    assert [c[1] for c in calls] == ["config.json", "hf_quant_config.json"]


def test_a_config_that_states_its_quantization_fetches_no_sidecar(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub

    from anchorgpu.architectures import load_model

    calls: list[tuple[str, str, str | None]] = []
    files: dict[str, str | Exception] = {"config.json": json.dumps(_registry_config("deepseek-r1"))}
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", _fake_hub_download(tmp_path, files, calls))
    m = load_model("someone/deepseek-r1-fp8-copy", environ={})
    assert isinstance(m, ModelSpec) and m.quantization is not None
    assert [c[1] for c in calls] == ["config.json"]


def test_a_sidecar_the_hub_cannot_serve_fails_the_fetch_in_one_line(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Planned without its hf_quant_config.json a ModelOpt checkpoint would silently come out 16-bit."""
    import huggingface_hub

    from anchorgpu.architectures import load_model
    from anchorgpu.errors import HubUnavailable

    cfg = _registry_config("deepseek-r1")
    cfg.pop("quantization_config")
    calls: list[tuple[str, str, str | None]] = []
    files: dict[str, str | Exception] = {"config.json": json.dumps(cfg),
                                         "hf_quant_config.json": OSError("Name or service not known")}
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", _fake_hub_download(tmp_path, files, calls))
    with pytest.raises(HubUnavailable, match=r"^nvidia/X: could not fetch hf_quant_config.json .*OSError: Name or "
                                             r"service not known.*planned 16-bit") as err:
        load_model("nvidia/X", environ={})
    assert "\n" not in str(err.value)
