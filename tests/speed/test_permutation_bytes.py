"""Megatron-Core's token dispatchers reorder each token's routed copies around the expert-parallel exchange
(``MoEAlltoAllTokenDispatcher``: permutation 1, the chunk sort by local expert and its inverse, the unpermutation; the
flex dispatcher over DeepEP: a permutation of each received row and its inverse; HybridEP: inside its own kernels).
The bytes are memory-bound work that grows with tokens x top-k, charged at memory bandwidth on the Megatron-Core
stack (stated ``moe_permutation_bytes``, read from NVIDIA/Megatron-LM ``token_dispatcher.py`` 0014f137 and
NVIDIA/TransformerEngine ``triton/permutation.py`` 20deb83; benchmarks/moe_training_findings.md, fifth pass)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from anchorgpu.architectures import load_model as _load
from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.calibration import calibration, read_calibration_doc
from anchorgpu.planner.speed.experts import permutation_bytes, ranks_reached
from anchorgpu.planner.speed.runs import load_runs
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import training_step

GPU = get_gpu("b200")
LAYOUT = TrainLayout(gpus=8, dp=8, ep=8, zero=1)
NONE = replace(calibration(), moe_permutation_bytes={})


def load_model(name: str) -> ModelSpec:
    model = _load(name)
    assert isinstance(model, ModelSpec)
    return model


def _compute_s(model: ModelSpec, **kw: object) -> float:
    step = training_step(model, GPU, LAYOUT, seq_tokens=4096, micro_batch=1, global_batch_tokens=8 * 4096,
                         **kw)  # type: ignore[arg-type]
    return step.breakdown_s["compute"]


def test_the_stated_counts_are_the_code_readings() -> None:
    counts = read_calibration_doc()["stated"]["moe_permutation_bytes"]["value"]
    # 16-bit values: a routed copy written and read back (4 forward), the token's row read and the merged row
    # written (4), two chunk sorts reading and writing each copy (8); the backward the same again
    assert counts == {"routed_per_hidden": 8, "routed_forward_per_hidden": 4, "token_per_hidden": 8,
                      "token_forward_per_hidden": 4, "chunk_sort_per_hidden": 16, "chunk_sort_forward_per_hidden": 8}
    assert calibration().moe_permutation_bytes["chunk_sort_per_hidden"] == 16


@pytest.mark.parametrize(("recompute", "per_copy", "per_token"), [("none", 8 + 16, 8), ("moe", 12 + 24, 12),
                                                                  ("selective", 8 + 16, 8)])
def test_an_alltoall_step_moves_the_stated_bytes_at_bandwidth(recompute: str, per_copy: int, per_token: int) -> None:
    model = load_model("gpt-oss-120b")  # 128 experts over EP 8: 16 a GPU, so the chunk sort runs
    moe = model.moe
    assert moe is not None
    extra = _compute_s(model, recompute=recompute) - _compute_s(model, recompute=recompute, cal=NONE)
    bytes_ = 4096 * moe.num_moe_layers * model.hidden_size * (moe.experts_per_token * per_copy + per_token)
    assert extra == pytest.approx(bytes_ / GPU.memory_bandwidth_bytes_per_s, rel=1e-6)


def test_deepep_moves_fewer_bytes_and_hybridep_none() -> None:
    model = load_model("qwen3-30b-a3b")
    extra = {d: _compute_s(model, moe_dispatcher=d) - _compute_s(model, cal=NONE, moe_dispatcher=d)
             for d in ("alltoall", "deepep", "hybridep")}
    assert 0 < extra["deepep"] < extra["alltoall"]
    assert extra["hybridep"] == 0
    # DeepEP: 8 a routed copy, 8 a rank the token reaches (128 experts, top 8, 16 a rank: 5.34 of 8 ranks)
    assert ranks_reached(model, 8) == pytest.approx(5.34, abs=0.005)
    assert permutation_bytes(model, calibration().moe_permutation_bytes, 8, dispatcher="deepep") == pytest.approx(
        model.hidden_size * (8 * 8 + 8 * ranks_reached(model, 8)))


def test_dense_models_and_the_pytorch_stack_are_unchanged() -> None:
    dense = load_model("llama-3.1-8b")
    assert _compute_s(dense) == _compute_s(dense, cal=NONE)
    oss = load_model("gpt-oss-20b")
    assert _compute_s(oss, train_stack="pytorch") == _compute_s(oss, train_stack="pytorch", cal=NONE)


def test_the_model_zoo_rows_ran_deepep_and_the_bridge_rows_alltoall() -> None:
    rows = {r.id: r.row for r in load_runs()}
    # yanring/Megatron-MoE-ModelZoo's Qwen3-235B-A22B commands run the flex dispatcher over DeepEP (the rows' notes),
    # but for its best-practice table's all-to-all row (stop 57, trainpairs: best_practice/Qwen3/readme.md)
    zoo = [rid for rid in rows if rid.startswith("MZ-")]
    assert {rid: rows[rid].get("moe_dispatcher") for rid in zoo} == {
        rid: "alltoall" if "-A2A-" in rid else "deepep" for rid in zoo}
    assert sum("-A2A-" in rid for rid in zoo) == 1
    # Megatron-Bridge's gpt_oss_provider.py (12bc34a) sets moe_token_dispatcher_type "alltoall": the default
    assert "moe_dispatcher" not in rows["MB-GB200-OSS120"]
