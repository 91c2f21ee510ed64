"""FSDP reduce-scatters every micro-batch's gradients in that micro-batch's backward
(``data_parallel.scatters_each_micro_batch``), on the PyTorch-native stack as on Megatron-Core's (Megatron-FSDP
reduces whenever its gradients are sharded: ``grad_reduce_every_bprop`` in NVIDIA/Megatron-LM
megatron/core/distributed/fsdp/src/megatron_fsdp/megatron_fsdp.py at 00caa53).

Read from the code: PyTorch's FSDP2 reduces a parameter group's gradients in its post-backward hook unless
``set_requires_gradient_sync(False)`` turned ``reduce_grads`` off (pytorch/pytorch
torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py at 002a76f: ``self.reduce_grads: bool = True``); OLMo-core's
``_train_microbatch_context`` never turns it off (allenai/OLMo-core src/olmo_core/train/train_module/transformer/
train_module.py at 00cbace: ``set_is_last_backward`` and, for HSDP, ``set_requires_all_reduce`` only; the older
train_module/transformer.py at 0355f5c enters ``no_sync`` for DDP alone); torchtitan's ``train_step`` runs a
``loss.backward()`` a micro-batch with no sync switch (pytorch/torchtitan torchtitan/train.py at 000204a); Composer's
``ddp_sync_context`` returns at once for a model that is not DDP, as its FSDP1-wrapped models are (mosaicml/composer
composer/trainer/dist_strategy.py at 029483a). With pipeline stages PyTorch's ``PipelineStage`` turns the sync off and
reduces once after the last backward (pytorch/pytorch torch/distributed/pipelining/stage.py at 0138610).
"""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.data_parallel import (
    DataParallelTerms,
    data_parallel_terms,
    fsdp2_copies_s,
    group_link_of,
    scatters_each_micro_batch,
)
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.speed.links import reduce_scatter_s
from anchorgpu.planner.speed.runs import load_runs, predict
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import training_step

H100 = get_gpu("h100")
SLOW_NIC = 100e9 / 8  # 100 Gb/s a GPU: slow enough that a 70B model's FSDP traffic outruns its micro-batch
MODEL = load_model("llama-3.1-70b")
FSDP_64 = TrainLayout(gpus=64, tp=1, pp=1, dp=64, zero=3)


def _terms(stack: str, lay: TrainLayout = FSDP_64, compute_s: float = 1.0, fsdp1: bool = False) -> DataParallelTerms:
    return data_parallel_terms(MODEL, H100, calibration(), lay, stage_layers=MODEL.num_layers / lay.pp,
                               compute_s=compute_s, trains_base=True, gpus_per_server=8,
                               network_bytes_per_s=SLOW_NIC, grad_bytes_per_value=4, train_stack=stack, fsdp1=fsdp1)


def _copies_s(lay: TrainLayout = FSDP_64, grad_bytes: int = 4) -> float:
    """FSDP2's copies out of the gather buffer (forward and backward) and, with ``grad_bytes``, into the scatter's."""
    return fsdp2_copies_s(H100, calibration(), MODEL.params_total / lay.pp, grad_bytes)


def _scatter_s(lay: TrainLayout = FSDP_64) -> float:
    """One bandwidth-bound reduce-scatter of the whole FP32 gradient over the FSDP group (no ring latency)."""
    link = group_link_of(H100, lay, gpus_per_server=8, network_bytes_per_s=SLOW_NIC)
    return reduce_scatter_s(MODEL.params_total / lay.pp * 4, lay.dp, link, efficiency=calibration().link_efficiency)


def test_fsdp_scatters_every_micro_batch_but_under_pytorch_pipelining() -> None:
    """Megatron-FSDP (``optim_grads_params``) reduces in every backward, as FSDP2 does; only PyTorch's pipelining
    schedule holds the scatter to once a step; ZeRO-2 has its own path (speed.zero2)."""
    assert scatters_each_micro_batch("pytorch", FSDP_64)
    assert scatters_each_micro_batch("megatron", FSDP_64)
    assert scatters_each_micro_batch("megatron", TrainLayout(gpus=64, tp=1, pp=2, dp=32, zero=3))
    assert not scatters_each_micro_batch("pytorch", TrainLayout(gpus=64, tp=1, pp=1, dp=64, zero=2))
    assert not scatters_each_micro_batch("pytorch", TrainLayout(gpus=64, tp=1, pp=2, dp=32, zero=3))


def test_a_micro_batch_carries_its_own_scatter_beside_its_backward_gather() -> None:
    """70B over 8 servers at 100 Gb/s a GPU, a 1 s micro-batch: each gather outruns its pass, so every byte of the
    FP32 scatter is exposed in every micro-batch, on either stack (plus one launch a layer); the PyTorch-native stack
    adds FSDP2's copies around the collectives, serial on the compute stream."""
    pt, mc = _terms("pytorch"), _terms("megatron")
    scatter = _scatter_s()
    assert scatter > 0.5 and mc.fsdp_s > 0.5  # communication-bound: nothing of the scatter hides
    assert pt.fsdp_s - mc.fsdp_s == pytest.approx(_copies_s())
    assert pt.micro_sync_s == mc.micro_sync_s == pytest.approx(scatter, rel=0.05)


def test_the_step_end_waits_only_for_the_last_layers_scatter() -> None:
    """At the step's end each stack waits for one layer's share of a micro-batch's scatter, the rest having run
    beside the backward."""
    for terms in (_terms("pytorch"), _terms("megatron")):
        assert terms.sync_s == pytest.approx(_scatter_s() / MODEL.num_layers, rel=0.1)


def test_with_pipeline_stages_the_pytorch_stack_scatters_once_a_step() -> None:
    """PyTorch's pipelining schedule: the scatter rides the last micro-batch's backward once a step (what Megatron-FSDP
    pays in every micro-batch, but its launches); a micro-batch keeps FSDP2's copies out of the gather buffer only."""
    lay = TrainLayout(gpus=64, tp=1, pp=2, dp=32, zero=3)
    pt, mc = _terms("pytorch", lay), _terms("megatron", lay)
    link = group_link_of(H100, lay, gpus_per_server=8, network_bytes_per_s=SLOW_NIC)
    assert pt.micro_sync_s == 0.0 and mc.micro_sync_s > 1.0
    assert pt.sync_s == pytest.approx(mc.micro_sync_s - MODEL.num_layers / lay.pp * link.latency_s)
    assert pt.fsdp_s - mc.fsdp_s == pytest.approx(_copies_s(lay, grad_bytes=0))
    fsdp1 = _terms("pytorch", lay, fsdp1=True)
    assert (fsdp1.fsdp_s, fsdp1.local_params) == (mc.fsdp_s, mc.local_params)


def test_hidden_traffic_costs_next_to_nothing() -> None:
    """With a micro-batch long enough to hide gathers and scatter (20 s against about 4 s of traffic) neither stack
    exposes bandwidth time; only the per-layer launches, the last layer's scatter and, on the PyTorch-native stack,
    FSDP2's copies remain."""
    pt, mc = _terms("pytorch", compute_s=20.0), _terms("megatron", compute_s=20.0)
    assert pt.sync_s == mc.sync_s < 0.05
    assert pt.micro_sync_s == mc.micro_sync_s < 0.01
    assert pt.fsdp_s - _copies_s() < 0.01 and mc.fsdp_s < 0.01


def test_over_a_slow_network_fsdp_pays_the_scatter_every_micro_batch() -> None:
    """The whole step, 8 micro-batches of 4,096 tokens a GPU at 100 Gb/s: the gradient sync grows by up to a
    scatter per micro-batch on either stack, less what the backward's window has left beside its gather."""
    for stack in ("megatron", "pytorch"):
        st = training_step(MODEL, H100, FSDP_64, seq_tokens=4096, micro_batch=1, global_batch_tokens=64 * 8 * 4096,
                           recompute="full", network_bytes_per_s=SLOW_NIC, grad_bytes_per_value=4, train_stack=stack)
        assert st.microbatches == 8
        assert 4 * _scatter_s() < st.breakdown_s["dp_sync"] < 8 * _scatter_s() + 0.1


def test_a_pytorch_fsdp_plan_says_when_it_scatters() -> None:
    def lines(stack: str, pp: int = 1) -> list[str]:
        p = plan(load_model("llama-3.1-8b"), Workload(task="train", train_stack=stack, recompute="full"), gpu=H100,
                 layout=Layout(gpus=16, tp=1, pp=pp, zero=3))
        return [a for a in plan_performance(p)["assumptions"] if a.startswith("FSDP on the PyTorch-native stack")]

    assert "reduce-scatters every micro-batch's gradients" in lines("pytorch")[0]
    assert "once after the last backward" in lines("pytorch", pp=2)[0]
    assert lines("megatron") == []
    megatron = [a for a in plan_performance(plan(load_model("llama-3.1-8b"), Workload(task="train", recompute="full"),
                                                 gpu=H100, layout=Layout(gpus=16, tp=1, pp=1, zero=3)))["assumptions"]
                if a.startswith("FSDP on Megatron-Core")]
    assert "every micro-batch's gradients" in megatron[0] and "fsdp_comm" in megatron[0]


def test_olmo_cores_32b_over_1024_gpus_is_not_explained_by_the_scatter() -> None:
    """T37 (allenai/OLMo-core README 'Official training scripts', OLMo2-32B.py: 1,500 tokens a second per GPU on
    1,024 H100, the GPU count the public copy of the script gives its 2 x 4,096 tokens a micro-batch, FP32 gradient
    reduction; one micro-batch a step): a micro-batch's two BF16 gathers of 64 GB and
    its FP32 scatter of 128 GB leave each server through its eight 400 Gb/s NICs (each NIC about an eighth of the
    server's share), about 0.8 s against 4.1 s of computation, so they hide and the prediction stays about a third
    fast (+32%): the miss lies elsewhere."""
    run = next(r for r in load_runs() if r.id == "T37")
    assert run.value == 1500
    assert 0.25 < predict(run) / run.value - 1 < 0.40


def test_fsdp2_copies_every_parameter_out_twice_and_every_gradient_in_once() -> None:
    """FSDP2 copies each gathered 16-bit parameter out of the flat gather buffer forward and again backward (read 2 +
    write 2 bytes each time: ``foreach_all_gather_copy_out``) and each 16-bit gradient into the scatter buffer at the
    reduce width (``foreach_reduce_scatter_copy_in``: read 2, write 4 for FP32), on the compute stream, at the share of
    the memory bandwidth the optimizer's update is timed at (pytorch/pytorch
    torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py at 010ae4a)."""
    cal = calibration()
    bandwidth = H100.memory_bandwidth_bytes_per_s * cal.stack(H100).decode_mbu
    assert fsdp2_copies_s(H100, cal, 1e9, 4) == pytest.approx(1e9 * 14 / bandwidth)
    assert fsdp2_copies_s(H100, cal, 1e9, 2) == pytest.approx(1e9 * 12 / bandwidth)
    assert fsdp2_copies_s(H100, cal, 1e9, 0) == pytest.approx(1e9 * 8 / bandwidth)


def test_fsdp1_runs_and_megatron_core_carry_no_fsdp2_copies() -> None:
    """PyTorch's first FSDP (Composer's, rows marked ``fsdp1``) makes the parameters views of the gathered flat
    parameter and casts the gradient on its post-backward stream: no copies on the compute stream, as Megatron-Core,
    while its scatter still runs every micro-batch."""
    pt, pt1 = _terms("pytorch"), _terms("pytorch", fsdp1=True)
    assert pt.fsdp_s - pt1.fsdp_s == pytest.approx(_copies_s())
    assert (pt.sync_s, pt.micro_sync_s) == (pt1.sync_s, pt1.micro_sync_s)
    assert _terms("megatron", fsdp1=True) == _terms("megatron")
    marked = {r.id for r in load_runs() if r.row.get("fsdp1")}
    # and, since stop 58, answer.ai's FSDP-QLoRA runs: its train.py wraps the model in torch's FullyShardedDataParallel
    # (FSDP1, use_orig_params=False; AnswerDotAI/fsdp_qlora benchmarks_03_2024.md, set answerai-fsdp-qlora)
    aa = {r.id for r in load_runs() if r.row.get("set") == "answerai-fsdp-qlora"}
    assert len(aa) == 8 and marked == {"T29", "T30", "T31"} | aa
