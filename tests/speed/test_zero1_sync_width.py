"""ZeRO-1's once-a-step sync moves the gradients at their reduce width and the updated parameters at 16 bits
(``data_parallel.zero1_sync_bytes_per_value``), and the Megatron-MoE model zoo's rows reduce in FP32.

Sources: NVIDIA/Megatron-LM ``megatron/core/distributed/distributed_data_parallel.py`` groups each parameter by
``(param_dtype, grad_dtype)`` with ``grad_dtype = torch.float if self.ddp_config.grad_reduce_in_fp32 else
param.dtype``: the distributed optimizer reduce-scatters the FP32 gradient buffer and all-gathers the parameter buffer
in the parameters' own BF16. ``megatron/training/arguments.py`` (``validate_args``, the bf16 branch) sets
``accumulate_allreduce_grads_in_fp32`` whenever the main gradients are FP32 (the default) unless
``--grad-reduce-in-bf16``; yanring/Megatron-MoE-ModelZoo runs ``pretrain_gpt.py``
(``runtime_configs/benchmarking/common.conf`` @ 78930f0) with ``model_configs/benchmarking/Qwen3-235B-A22B.yaml``'s
``--bf16`` and no ``--grad-reduce-in-bf16``. Megatron-Bridge's performance scripts set ``grad_reduce_in_fp32 = False``
for every family (``set_gpt_oss_common_configs``, ``set_llama3_common_configs``, ``set_qwen3_common_configs``, ...),
so its rows keep 2 bytes.
"""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.data_parallel import data_parallel_terms
from anchorgpu.planner.speed.runs import load_runs
from anchorgpu.planner.speed.train_layout import TrainLayout

MODEL = load_model("llama-3-8b")
H100 = get_gpu("h100")


def _sync_s(zero: int, grad_bytes_per_value: int) -> float:
    """The whole once-a-step sync of Llama 3 8B over 8 H100 in one server (NVLink: no ring latency), none of it
    hidden (no computation to hide behind)."""
    lay = TrainLayout(gpus=8, dp=8, zero=zero)
    return data_parallel_terms(
        MODEL,
        H100,
        calibration(),
        lay,
        stage_layers=MODEL.num_layers,
        compute_s=0.0,
        trains_base=True,
        gpus_per_server=8,
        network_bytes_per_s=None,
        grad_bytes_per_value=grad_bytes_per_value,
    ).sync_s


def test_zero1_with_fp32_gradients_gathers_the_parameters_at_16_bits() -> None:
    """FP32 gradients: the scatter doubles, the gather of the BF16 parameters does not, so the sync is 1.5 times the
    16-bit one (it was 2 times when the gather was timed at the gradients' width)."""
    ratio = _sync_s(1, 4) / _sync_s(1, 2)
    assert ratio == pytest.approx(1.5, rel=1e-3)


def test_ddp_all_reduces_the_gradients_at_their_width() -> None:
    """DDP (ZeRO 0) has no parameter gather: its all-reduce of FP32 gradients is twice the 16-bit one."""
    assert _sync_s(0, 4) / _sync_s(0, 2) == pytest.approx(2.0, rel=1e-3)


def test_the_model_zoo_zero1_rows_reduce_in_fp32_and_megatron_bridge_rows_in_bf16() -> None:
    """The model zoo's ZeRO-1 rows state FP32 gradient reduction and cite the Megatron-LM default; no
    Megatron-Bridge row does (its performance scripts turn ``grad_reduce_in_fp32`` off)."""
    runs = list(load_runs())
    zoo = [r for r in runs if r.row.get("set") == "megatron-moe-modelzoo" and r.row["zero"] == 1]
    assert len(zoo) == 8  # MZ-Q235-H100-A2A-PP32 (stop 57) is the eighth
    for run in zoo:
        assert run.row.get("grad_bytes_per_value") == 4, run.id
        assert "--grad-reduce-in-bf16" in run.row["note"], run.id
    bridge = [r for r in runs if r.row.get("set") == "megatron-bridge"]
    assert bridge and all(int(r.row.get("grad_bytes_per_value", 2)) == 2 for r in bridge)
