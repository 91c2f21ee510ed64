"""ZeRO and FSDP under context parallelism: the CP ranks of a stage hold the same weights and reduce their gradients
together, so the optimizer states, gradients and (ZeRO-3) weights shard over DP x CP, as Megatron-Core's distributed
optimizer does over ``get_data_parallel_group(with_context_parallel=True)`` and torchtitan's FSDP over its
``dp_shard x cp`` mesh.

Found on torchtitan's own long-context runs (pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md, commit
31a17bf, Table 2: Llama 3.1 8B on 8 H100 as FSDP 8 x CP 1 at 32,768 tokens through FSDP 1 x CP 8 at 262,144, each
at 83.9-84.5 GiB of its 96 GB GPUs): the plan sharded the states over DP alone, so it said the FSDP 2 x CP 4 run
needed 101.9 GiB a GPU and FSDP 1 x CP 8 172.6 GiB (with "ZeRO stage 3 with one data-parallel rank shards
nothing"): two runs that happened did not fit.
"""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan

ADAMW_MIXED_STATE_BYTES = 12  # fp32 master + two fp32 moments per parameter (ZeRO paper, section 3.1)
GIB = 2**30
# torchtitan Table 2 (as above): (FSDP, CP, sequence tokens, measured peak GiB)
TABLE_2 = ((8, 1, 32768, 83.9), (4, 2, 65536, 84.2), (2, 4, 131072, 84.0), (1, 8, 262144, 84.5))


def _table_2_plan(dp: int, cp: int, seq: int):  # type: ignore[no-untyped-def]
    w = Workload(task="train", seq_tokens=seq, recompute="full", micro_batch=1, train_precision="fp8",
                 allow_long_context=True)
    return plan(load_model("llama-3.1-8b"), w, gpu=get_gpu("h100"), suggest=False,
                layout=Layout(gpus=8, tp=1, pp=1, cp=cp, dp=dp, zero=3))


@pytest.mark.parametrize(("dp", "cp", "seq", "measured_gib"), TABLE_2)
def test_fsdp_shards_over_the_context_parallel_ranks_too(dp: int, cp: int, seq: int, measured_gib: float) -> None:
    """Each of torchtitan's four splits shards the 8B's states over all 8 GPUs: a GPU keeps an eighth of the
    optimizer state, whatever the split between FSDP and CP, and each run fits the 96 GB GPUs it ran on."""
    result = _table_2_plan(dp, cp, seq)
    params = load_model("llama-3.1-8b").params_total
    assert result.per_gpu.optimizer_bytes == pytest.approx(ADAMW_MIXED_STATE_BYTES * params / 8, rel=0.01)
    assert result.per_gpu.total_bytes < 96e9
    assert "zero_without_data_parallel" not in {w.code for w in result.warnings}


def test_model_state_per_gpu_does_not_grow_as_cp_replaces_fsdp() -> None:
    """The measured peaks stay within 1% of each other (83.9-84.5 GiB) as CP takes the place of FSDP ranks at a
    longer sequence; the planned weights, gradients and optimizer state per GPU do not move either (the activations
    of a GPU's seq / cp tokens are the same by construction)."""
    states = []
    for dp, cp, seq, _ in TABLE_2:
        b = _table_2_plan(dp, cp, seq).per_gpu
        states.append(b.weights_bytes + b.gradients_bytes + b.optimizer_bytes)
    assert max(states) / min(states) < 1.01
    measured = [m for *_, m in TABLE_2]
    assert max(measured) / min(measured) < 1.01


def test_zero_with_one_rank_of_both_still_warns() -> None:
    """ZeRO over one data-parallel rank and no CP still shards nothing, and says so."""
    w = Workload(task="train", seq_tokens=4096, recompute="full")
    result = plan(load_model("llama-3.1-8b"), w, gpu=get_gpu("h100"), suggest=False,
                  layout=Layout(gpus=8, tp=8, pp=1, cp=1, dp=1, zero=1))
    assert "zero_without_data_parallel" in {x.code for x in result.warnings}


def test_the_chosen_long_context_layout_fits_without_an_idle_zero_stage() -> None:
    """The layout chosen for 131,072-token training of the 8B on 16 H100 fits, and does not pick a ZeRO stage that
    the plan then says shards nothing."""
    w = Workload(task="train", seq_tokens=131072, allow_long_context=True)
    result = plan(load_model("llama-3.1-8b"), w, gpu=get_gpu("h100"), layout=Layout(gpus=16))
    assert result.fits
    assert result.layout.cp > 1
    assert "zero_without_data_parallel" not in {x.code for x in result.warnings}


def test_the_warning_follows_cp_whatever_was_planned_before() -> None:
    """The layout warnings are memoised per split: the same DP, ZeRO and TP with and without CP are two splits."""
    model, gpu = load_model("llama-3.1-8b"), get_gpu("h100")
    w = Workload(task="train", seq_tokens=32768, recompute="full", allow_long_context=True)
    codes = []
    for cp in (8, 1, 8):
        result = plan(model, w, gpu=gpu, suggest=False, layout=Layout(gpus=8 * cp, tp=8, pp=1, cp=cp, dp=1, zero=1))
        codes.append("zero_without_data_parallel" in {x.code for x in result.warnings})
    assert codes == [False, True, False]
