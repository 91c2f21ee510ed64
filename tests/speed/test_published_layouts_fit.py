"""A published training run that happened must come out as fitting with its published layout (issue 11). Every
training row of ``measured_runs.json`` is planned as ``anchorgpu plan`` would plan it with the row's flags; the runs
that do not fit are exactly the ones listed here, each with what the source leaves out that the planner would need.
A fix that makes one fit, or a change that makes another stop fitting, fails this test until the list says so.

FP8 training is planned with FP8 parameters, as NeMo's and Megatron-Bridge's FP8 recipes run it
(``bf16_with_fp8_current_scaling_mixed`` and ``bf16_with_mxfp8_mixed`` set ``fp8_param_gather = True``,
NVIDIA-NeMo/Megatron-Bridge ``src/megatron/bridge/training/mixed_precision.py``): planned with 16-bit weights plus
FP8 copies beside them, five of their published runs (NeMo's GPT-3 20B and Llama 3 8B, Megatron-Bridge's Llama 3.1
405B on H100, B200 and GB300) came out 1-14% over their GPUs' memory.

torchtitan's runs are planned as a PyTorch-native stack (``train_stack: pytorch``): selective recompute as its
op-level policy keeps it and the loss on fp32 logits (stop 40). Planned with Megatron's selective recompute and a
fused loss, its four Llama 3.1 8B runs with selective checkpointing came out at 87-101 GiB and "did not fit";
tests/planner/test_op_sac_memory.py holds them to their measured peaks.

Megatron-Core's runs keep what its code keeps (stop 41): no dropout masks where the model trains without dropout
(Llama: Megatron-Bridge's providers set both dropouts to 0), Transformer Engine's 1-byte copies of the products' inputs
under FP8, and the first N layers' activations in host memory where the recipe offloads them
(``cpu_offloading_num_layers``, planned as ``--offload-activations N``). Before, Megatron-Bridge's Llama 3 70B on
GB300 and GB200 (FSDP, two 8,192-token sequences a micro-batch, no recompute) planned at 403 and 403 GiB and its
Llama 3.1 405B on GB200 at 190 GiB, none fitting.

DeepSeek-V3's 61 layers run over virtual stages that divide neither them nor 63 (PP 2 x VP 4, PP 4 x VP 4,
PP 8 x VP 4): Megatron-Core states such a split with --pipeline-model-parallel-layout, and the five rows carry the
layout they are planned with (``pipeline_layout``, its source in each row's note). Without it they were refused as
bad input and listed here.

Llama 3 405B (row L3-405B, TP 8 x PP 16 x DP 64, ZeRO-2 with pipeline stages) runs Meta's own FSDP, which shards
the gradients and optimizer state and keeps the parameters gathered from forward to backward under the stages
(arXiv:2407.21783 section 3.3.2). Megatron's ZeRO-2 is Megatron-FSDP, which runs no stages, so planned on that stack
it was refused and listed here; its row now states ``train_stack: pytorch`` (Meta's stack is PyTorch's FSDP), where
``--zero 2 --pp 16`` is planned as Llama 3's FSDP (speed/zero2.py ``LLAMA3_FSDP_LINE``): 75.3 GiB of 80.

NeMo 24.07's Llama 2 70B SFT on 16 H100 (TP 4 PP 4 VP 20, DP 1, FP8, no recompute) runs Apex's distributed_fused_adam
with ``dtype: bf16`` (NeMo-Framework-Launcher ``launcher_scripts/conf/peft/llama/sft.yaml``, commit 0da9ad9c): a bf16
parameter copy and bf16 moments, 6 bytes a parameter. Planned with fp32 master weights and moments (12) it came out at
88.4 GiB of 80 and was listed here; its row now carries ``optimizer_state: bf16`` (``--optimizer-state bf16``).
"""

from __future__ import annotations

import pytest

from anchorgpu.errors import InvalidWorkload
from anchorgpu.planner.speed.runs import load_runs, training_plan_of

KNOWN_MISFITS: dict[str, str] = {
    # DeepSeek-V3 report (arXiv:2412.19437): 3.2.3 recomputes every RMSNorm and the MLA up-projections, 3.3.3 caches
    # the products' inputs in FP8 (the attention output once, in E5M6) and the MoE SwiGLU's inputs in FP8, recomputing
    # its output, keeps the AdamW moments in BF16 beside FP32 master weights and FP32 gradients, and 3.2.1's DualPipe
    # holds two copies of the parameters and (PP+1)/PP the activations of 1F1B. Only the moments are a planner mechanism:
    # --recompute selective keeps 49.7 bytes a token and hidden unit a layer (87.0 GiB, 108.5 in all), --recompute
    # moe 86.6 GiB in all, --offload-activations needs one stage; the report's scheme in the planner's terms keeps
    # 14.9 (26.2 GiB of activations, about 48 GiB in all with its FP32 gradients, 65 with DualPipe's two copies).
    # Its BF16 moments the row states (--optimizer-state bf16-moments): 1.3 GiB less, 107.1 in all, still over
    "DSV3-H800-PRETRAIN": ("fits with full recompute (README); needs the report's own scheme, which the planner cannot "
                           "state: RMSNorm and MLA up-projection recompute with FP8-cached product and SwiGLU inputs "
                           "(26 GiB of activations in place of selective recompute's 87), DualPipe"),
}
TRAINING = [run for run in load_runs() if run.phase == "train"]


def _misfit(row: dict) -> bool:  # type: ignore[type-arg]
    try:
        return not training_plan_of(row).fits
    except InvalidWorkload:
        return True


@pytest.mark.parametrize("run", TRAINING, ids=[run.id for run in TRAINING])
def test_a_published_run_fits_with_its_layout_unless_listed(run) -> None:  # type: ignore[no-untyped-def]
    assert _misfit(run.row) == (run.id in KNOWN_MISFITS), KNOWN_MISFITS.get(run.id, "should fit")


def test_every_listed_run_is_a_training_row() -> None:
    assert set(KNOWN_MISFITS) <= {run.id for run in TRAINING}


@pytest.mark.parametrize("run_id", ["MB-GB300-DSV3", "MB-GB200-DSV3", "MCORE-GB200-DSV3-MXFP8"])
def test_deepseek_v3_runs_need_their_stated_layout(run_id: str) -> None:
    """The rows fit with their layout and are refused without it (the virtual-stage rule for plain input holds)."""
    row = next(run.row for run in TRAINING if run.id == run_id)
    assert row["pipeline_layout"] and training_plan_of(row).fits
    with pytest.raises(InvalidWorkload, match="does not divide the 61 layers"):
        training_plan_of({key: value for key, value in row.items() if key != "pipeline_layout"})


@pytest.mark.parametrize("run_id", ["N24-GPT3-20B", "N24-L3-8B", "MB-H100-L31-405B", "MB-B200-L31-405B",
                                    "MB-GB300-L31-405B"])
def test_megatron_fp8_runs_hold_their_weights_in_fp8(run_id: str) -> None:
    """FP8 parameters: the weights and their transposes are two bytes a parameter, the 16-bit weights' size, with
    no FP8 copies beside them."""
    row = next(run.row for run in TRAINING if run.id == run_id)
    result = training_plan_of(row)
    assert result.fits
    assert "low_precision_weight_copies_bytes" not in result.breakdown
    assert any("--fp8-param-gather" in line for line in result.assumptions)


def test_nemo_llama_2_70b_sft_fits_with_its_bf16_optimizer_state() -> None:
    """NeMo's SFT config keeps Apex's distributed Adam state in bf16 (6 bytes a parameter); with fp32 master weights
    and moments (12) the same layout, one data-parallel rank holding the whole state, does not fit."""
    row = next(run.row for run in TRAINING if run.id == "N24-L2-70B-SFT")
    assert row["optimizer_state"] == "bf16"
    published = training_plan_of(row)
    assert published.fits
    fp32 = training_plan_of({**row, "optimizer_state": "fp32"})
    assert not fp32.fits
    # the only difference is the optimizer's state: half the bytes (6 of 12 a parameter)
    assert 2 * published.per_gpu.optimizer_bytes == pytest.approx(fp32.per_gpu.optimizer_bytes, rel=1e-6)
    assert fp32.per_gpu.total_bytes - published.per_gpu.total_bytes > fp32.per_gpu.optimizer_bytes / 2


def test_llama_3_405b_fits_as_llama_3s_fsdp_and_not_with_whole_gradients() -> None:
    """Row L3-405B: ZeRO-2 with 16 stages fits on the PyTorch stack and says what it assumes; the same layout with
    the gradients held whole (ZeRO-1, what torchtitan's pipelining holds: it reduces once after the last backward)
    does not fit in 80 GiB, and Megatron's stack refuses ZeRO-2 with stages. (Planner figures: 75.32 and 81.96 GiB.)"""
    row = next(run.row for run in TRAINING if run.id == "L3-405B")
    assert row["train_stack"] == "pytorch" and row["zero"] == 2 and row["pp"] == 16
    published = training_plan_of(row)
    assert published.fits
    assert any("Llama 3's FSDP" in line for line in published.assumptions)
    whole = training_plan_of({**row, "zero": 1})
    assert not whole.fits and whole.per_gpu.total_bytes > published.per_gpu.total_bytes
    with pytest.raises(InvalidWorkload, match="Megatron-FSDP"):
        training_plan_of({**row, "train_stack": "megatron"})
