"""The InferenceMAX SGLang DeepSeek-R1 rows are planned with the parts their checkpoints quantize
(``architectures/data/quant_configs/SOURCES.md``):

* ``amd/DeepSeek-R1-0528-MXFP4-Preview`` (MI355X rows): its card (Hub README at d53b0ef) quantizes with Quark
  ``--quant_scheme w_mxfp4_a_mxfp4 --group_size 32`` and ``exclude_layers="*self_attn* *mlp.gate.* *lm_head"``: the
  routed experts, the shared experts and the three dense MLPs in MXFP4, attention, router and head 16-bit. The rows
  were planned with ``--weights mxfp4`` on the registry model, which is gpt-oss's rule (the routed experts only).
* ``nvidia/DeepSeek-R1-0528-FP4-V2`` (B200 rows): the -0528-FP4 file's layout plus ``o_proj`` in NVFP4
  (TensorRT-LLM tech blog 14, commit cf60757: v2 "additionally quantize[s] the wo module in attention layers to FP4").
"""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.architectures.loader import load_with_hf_quant_config
from anchorgpu.architectures.quantization import read_quantization
from anchorgpu.errors import InvalidConfig
from anchorgpu.planner.formats import format_for_model
from anchorgpu.planner.speed.experts import routed_weight_bytes_share_per_gpu
from anchorgpu.planner.speed.runs import _model, load_runs
from anchorgpu.planner.weight_parts import model_weight_parts

AMD = "amd-deepseek-r1-0528-mxfp4-preview.quark-card.json"
NV_V2 = "nvidia-deepseek-r1-0528-fp4-v2.restated.hf_quant_config.json"
MLA = ("q_a", "q_b", "kv_a", "kv_b", "o")
MLPS = ("gate", "up", "down", "shared_gate", "shared_up", "shared_down", "expert_gate", "expert_up", "expert_down")


def _rows(prefix: str) -> list:
    return [run for run in load_runs() if run.id.startswith(prefix)]


def test_the_mi355x_rows_plan_the_preview_cards_layers() -> None:
    rows = _rows("IMS-DSR1-MI355X-MXFP4-")
    assert len(rows) == 10
    for run in rows:
        assert run.row["model"] == {"registry": "deepseek-r1", "hf_quant_config": AMD}
        model = _model(run.row)
        fmt = format_for_model(model, run.row["weights"])
        q = model.quantization
        assert q is not None and q.method == "quark" and fmt.shipped is q and fmt.name == "mxfp4"
        assert all(q.fraction(g) == 0.0 for g in (*MLA, "router")) and not q.head_quantized
        assert all(q.fraction(g) == 1.0 for g in MLPS)


def test_the_dense_and_shared_mlps_are_mxfp4_in_the_weight_bytes() -> None:
    card = load_with_hf_quant_config("deepseek-r1", AMD)
    registry = load_model("deepseek-r1", offline=True)
    new = model_weight_parts(card, format_for_model(card, "mxfp4"))
    old = model_weight_parts(registry, format_for_model(registry, "mxfp4"))  # the routed experts only
    # 3 dense MLPs (3 x 3 x 7168 x 18432) + 58 shared experts (58 x 3 x 7168 x 2048): 3.74B weights from 2 bytes to
    # 4.25 bits, 5.5 GB less; attention and the routed experts unchanged
    moved = 3 * 3 * 7168 * 18432 + 58 * 3 * 7168 * 2048
    assert moved == 3_743_416_320
    assert new.total == pytest.approx(old.total - moved * (2 - 4.25 / 8), rel=1e-9)
    assert all(new.detail[g] == old.detail[g] for g in (*MLA, "expert_up"))
    # the routed experts are a larger share of the bytes each GPU reads (the serving step's routed share)
    assert (routed_weight_bytes_share_per_gpu(card, format_for_model(card, "mxfp4"), tp=4, ep=1)
            > routed_weight_bytes_share_per_gpu(registry, format_for_model(registry, "mxfp4"), tp=4, ep=1))


def test_the_b200_rows_plan_v2s_fp4_wo() -> None:
    rows = _rows("IMS-DSR1-B200-FP4-")
    assert len(rows) == 16
    for run in rows:
        assert run.row["model"] == {"registry": "deepseek-r1", "hf_quant_config": NV_V2}
    q = _model(rows[0].row).quantization
    assert q is not None and q.method == "modelopt" and q.name == "nvfp4" and q.kv_cache == "fp8"
    assert q.fraction("o") == 1.0 and all(q.fraction(g) == 0.0 for g in MLA[:4]) and not q.head_quantized
    assert all(q.fraction(g) == 1.0 for g in MLPS)


def test_quark_settings_it_cannot_read_are_refused() -> None:
    m = load_model("deepseek-r1", offline=True)
    mx = {"dtype": "fp4", "qscheme": "per_group", "group_size": 32}
    for bad in ({"global_quant_config": {"weight": {**mx, "group_size": 16}}},
                {"global_quant_config": {"weight": {"dtype": "int4", "qscheme": "per_group", "group_size": 128}}},
                {"global_quant_config": {"weight": [mx]}},
                {"global_quant_config": {"weight": mx}, "layer_quant_config": {"*mlp*": {"weight": mx}}}):
        with pytest.raises(InvalidConfig):
            read_quantization({"quantization_config": {"quant_method": "quark", **bad}}, m, where="x")
    q = read_quantization({"quantization_config": {"quant_method": "quark", "global_quant_config": {"weight": mx}}},
                          m, where="x")
    assert q is not None and q.head_quantized and q.fraction("o") == 1.0  # no exclude: every Linear, the head too
