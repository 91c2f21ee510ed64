"""Sequence parallelism stated on or off (``Layout.sequence_parallel``, ``plan --sequence-parallel/--no-sequence-
parallel``, the API's ``sequence_parallel``): memory and speed without it, the refusals, and the default unchanged.

Memory: Korthikanti et al. 2022 (arXiv 2205.05198), Table 2 - a layer keeps s·b·h·(10 + 24/t + ...) bytes without
sequence parallelism and s·b·h·(34/t + ...) with it: the replicated 10 (the layer-norm inputs 4, the QKV and MLP
inputs 2 + 2, the dropout masks 2) split by t only with it. Llama 3.1 8B trains without dropout, so its replicated
part is 8 (``layer_activation_bytes``). Speed: the same TP traffic (an all-reduce is a reduce-scatter plus an
all-gather), the memory-bound operators' replicated share (``sequence_parallel_share``) t times over, and a pipeline
stage's transfer of the whole sequence (Megatron-Core's ``get_forward_backward_func``: the sequence is seq / t in
the shapes only under sequence parallelism).
"""

from __future__ import annotations

import json

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.memory.activations import sequence_parallel_share
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.speed.links import group_link
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import training_step
from cli_runner import run

LLAMA = load_model("llama-3.1-8b")
H100 = get_gpu("h100")
SEQ = 4096
TRAIN = Workload(task="train", seq_tokens=SEQ, micro_batch=1, recompute="none")


def _plan(sp: bool | None, *, tp: int = 4, pp: int = 1, task: str = "train"):  # type: ignore[no-untyped-def]
    w = TRAIN if task == "train" else Workload(task=task, context_tokens=SEQ, concurrency=1)
    return plan(LLAMA, w, layout=Layout(gpus=8, tp=tp, pp=pp, zero=1 if task == "train" else None,
                                        sequence_parallel=sp), gpu=H100)


def test_without_sequence_parallelism_each_layer_keeps_its_replicated_values_whole() -> None:
    """Llama 3.1 8B at TP 4, seq 4096, micro-batch 1: 8·s·b·h a layer split by 4 with sequence parallelism (2·s·b·h),
    whole without (8·s·b·h): 6·s·b·h more on each of 32 layers, 3 GiB (Korthikanti Table 2, 8 for 10 without dropout
    masks)."""
    on, off = _plan(None), _plan(False)
    extra = 6 * SEQ * 1 * LLAMA.hidden_size * LLAMA.num_layers
    assert extra == 3 * 2**30
    assert off.per_gpu.activations_bytes - on.per_gpu.activations_bytes == pytest.approx(extra, abs=1)
    assert on.layout.sequence_parallel and not off.layout.sequence_parallel
    assert any(a.startswith("Sequence parallelism off (stated)") for a in off.assumptions)


def test_the_default_is_sequence_parallelism_on_with_tp_for_training() -> None:
    """``None`` plans exactly what stating it on plans (memory and speed), and inference has none."""
    default, stated = _plan(None), _plan(True)
    assert default.layout == stated.layout and default.per_gpu == stated.per_gpu
    assert plan_performance(default) == plan_performance(stated)
    assert not _plan(None, task="inference").layout.sequence_parallel
    assert not _plan(None, tp=1).layout.sequence_parallel


def test_without_sequence_parallelism_the_same_traffic_and_t_times_the_replicated_elementwise_work() -> None:
    """The TP collectives take the same time (one all-reduce of the volume a reduce-scatter plus an all-gather move);
    the compute grows by the memory-bound operators' time in the sequence-parallel region times (t - 1): their
    elementwise time split by t (tokens · layers · elementwise bytes · h / t / bandwidth) times the share 8/34."""
    cal = calibration()
    kw = {"seq_tokens": SEQ, "global_batch_tokens": 2**20, "cal": cal}
    on = training_step(LLAMA, H100, TrainLayout(gpus=8, tp=4, dp=2, zero=1), **kw)  # type: ignore[arg-type]
    off = training_step(LLAMA, H100, TrainLayout(gpus=8, tp=4, dp=2, zero=1, sequence_parallel=False),
                        **kw)  # type: ignore[arg-type]
    assert off.breakdown_s["tp_comm"] == on.breakdown_s["tp_comm"]
    share = sequence_parallel_share(LLAMA)
    assert share == pytest.approx(8 / 34)
    h = LLAMA.hidden_size
    elementwise = (on.microbatches * SEQ * LLAMA.num_layers * cal.stack(H100).elementwise_bytes_per_hidden * h / 4
                   / H100.memory_bandwidth_bytes_per_s)
    assert off.breakdown_s["compute"] - on.breakdown_s["compute"] == pytest.approx(elementwise * share * 3, rel=1e-9)
    assert off.tokens_per_s < on.tokens_per_s


def test_without_sequence_parallelism_a_stage_sends_the_whole_sequence() -> None:
    """TP 4 x PP 2: each stage-to-stage transfer carries s·b·h 16-bit values, not a quarter of them: four times the
    bytes, the link's latency the same (two transfers a micro-batch on the critical path)."""
    kw = {"seq_tokens": SEQ, "global_batch_tokens": 2**20}
    on = training_step(LLAMA, H100, TrainLayout(gpus=8, tp=4, pp=2, zero=1), **kw)  # type: ignore[arg-type]
    off = training_step(LLAMA, H100, TrainLayout(gpus=8, tp=4, pp=2, zero=1, sequence_parallel=False),
                        **kw)  # type: ignore[arg-type]
    latency = 2 * on.microbatches * group_link(H100, 8, gpus_per_server=8).latency_s
    sent_on, sent_off = on.breakdown_s["pp_p2p"] - latency, off.breakdown_s["pp_p2p"] - latency
    assert sent_off == pytest.approx(4 * sent_on, rel=1e-9)


@pytest.mark.parametrize(("sp", "tp", "task", "says"), [
    (True, 1, "train", "--sequence-parallel needs tensor parallelism"),
    (True, 2, "inference", "applies to training"),
    (False, 2, "inference", "applies to training"),
])
def test_sequence_parallelism_is_refused_where_it_cannot_run(sp: bool, tp: int, task: str, says: str) -> None:
    with pytest.raises(InvalidWorkload, match=says):
        _plan(sp, tp=tp, task=task)


def test_the_chooser_keeps_a_stated_sequence_parallelism() -> None:
    """Open layouts on 8 GPUs: stated off, every candidate is planned without it (and the reason says it was kept);
    stated on, TP 1 is not a candidate."""
    off = plan(LLAMA, Workload(task="train", seq_tokens=SEQ), layout=Layout(gpus=8, sequence_parallel=False), gpu=H100)
    assert not off.layout.sequence_parallel
    assert any("--no-sequence-parallel" in a for a in off.assumptions if a.startswith("Layout chosen"))
    on = plan(LLAMA, Workload(task="train", seq_tokens=SEQ), layout=Layout(gpus=8, sequence_parallel=True), gpu=H100)
    assert on.layout.tp > 1 and on.layout.sequence_parallel


def test_the_cli_states_sequence_parallelism(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "8", "--tp", "4", "--zero", "1",
            "--seq", "4096", "--micro-batch", "1", "--recompute", "none", "--json")
    code, out, err = run(capsys, *args, "--no-sequence-parallel")
    assert code == 0, err
    body = json.loads(out)
    assert body["layout"]["sequence_parallel"] is False
    assert any(a.startswith("Sequence parallelism off (stated)") for a in body["performance"]["assumptions"])
    code, out, err = run(capsys, *args)
    assert code == 0, err
    assert json.loads(out)["layout"]["sequence_parallel"] is True


@pytest.mark.parametrize("argv", [
    ("--task", "train", "--tp", "1", "--sequence-parallel"),
    ("--task", "inference", "--tp", "2", "--no-sequence-parallel"),
])
def test_the_cli_refuses_sequence_parallelism_with_exit_2_and_one_line(capsys: pytest.CaptureFixture[str],
                                                                       argv: tuple[str, ...]) -> None:
    code, _, err = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", *argv)
    assert code == 2 and err.strip().count("\n") == 0 and "sequence-parallel" in err


def test_a_mixture_of_experts_under_tp_keeps_sequence_parallelism() -> None:
    """Megatron-LM refuses MoE with TP > 1 and no sequence parallelism ("When using MoE and tensor parallelism,
    sequence parallelism must be used.", megatron/training/arguments.py validate_args): so does a stated layout; an
    open one is chosen among the layouts Megatron runs (TP 1 when sequence parallelism is stated off)."""
    mixtral, w = load_model("mixtral-8x7b-v0.1"), Workload(task="train", seq_tokens=SEQ)
    with pytest.raises(InvalidWorkload, match="needs sequence parallelism"):
        plan(mixtral, w, layout=Layout(gpus=8, tp=2, sequence_parallel=False), gpu=H100)
    chosen = plan(mixtral, w, layout=Layout(gpus=8, sequence_parallel=False), gpu=H100)
    assert chosen.layout.tp == 1 and not chosen.layout.sequence_parallel
