"""``--optimizer-state``: the precision of AdamW's master weights and moments under mixed, FP8 or FP4 training.

Bytes a parameter, from the sources :data:`anchorgpu.planner.memory.OPTIMIZER_STATE_BYTES` names:

* ``fp32``: fp32 master (4) and two fp32 moments (8), ZeRO's 12 (Rajbhandari et al. 2020), the default;
* ``bf16-moments``: fp32 master (4), two bf16 moments (2 + 2): Megatron-Core's precision-aware optimizer with
  ``--exp-avg-dtype bf16 --exp-avg-sq-dtype bf16`` (``OptimizerConfig.exp_avg_dtype``/``exp_avg_sq_dtype``);
* ``bf16``: a bf16 master copy (2), two bf16 moments (4): Apex ``DistributedFusedAdam`` with ``dtype`` bf16, whose
  ``StateBucket`` keeps ``params_shard``, ``exp_avg_shard`` and ``exp_avg_sq_shard`` in that dtype.
"""

from __future__ import annotations

from typing import Any

import pytest

from anchorgpu.architectures import ModelSpec, load_model
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan, plan_to_json
from cli_runner import run

FP32_BYTES, BF16_BYTES = 4, 2
# (master bytes, bytes of AdamW's two moments) a parameter, each written out from the dtypes above
STATE_BYTES = {"fp32": (FP32_BYTES, 2 * FP32_BYTES), "bf16-moments": (FP32_BYTES, 2 * BF16_BYTES),
               "bf16": (BF16_BYTES, 2 * BF16_BYTES)}
MODEL = "llama-3.2-1b"


def _model() -> ModelSpec:
    spec = load_model(MODEL)
    assert isinstance(spec, ModelSpec)
    return spec


def _train(state: str | None = None, *, dp: int = 1, zero: int = 0, precision: str = "mixed", **workload: Any):
    extra = {} if state is None else {"optimizer_state": state}
    w = Workload(task="train", seq_tokens=2048, micro_batch=1, recompute="none", train_precision=precision,  # type: ignore[arg-type]
                 **extra, **workload)
    return plan(_model(), w, gpu=get_gpu("h100"), layout=Layout(gpus=dp, tp=1, pp=1, dp=dp, zero=zero),
                suggest=False, choose_layout=False)


@pytest.mark.parametrize("state", list(STATE_BYTES))
def test_master_and_moments_are_the_states_bytes_a_parameter(state: str) -> None:
    p = _train(state)
    params = p.model.params_total  # one GPU, no sharding: it holds every parameter's state
    master, moments = STATE_BYTES[state]
    assert p.breakdown["master_weights_bytes"] == master * params
    assert p.breakdown["optimizer_moments_bytes"] == moments * params
    assert p.per_gpu.optimizer_bytes == (master + moments) * params
    # the checkpoint holds the 16-bit weights beside the optimizer's state
    assert p.checkpoint_bytes == (BF16_BYTES + master + moments) * params


@pytest.mark.parametrize("state", list(STATE_BYTES))
def test_zero_1_shards_the_state_it_keeps(state: str) -> None:
    p = _train(state, dp=4, zero=1)
    master, moments = STATE_BYTES[state]
    params = p.model.params_total
    assert p.breakdown["master_weights_bytes"] == -(-master * params // 4)
    assert p.breakdown["optimizer_moments_bytes"] == -(-moments * params // 4)


@pytest.mark.parametrize("precision", ["mixed", "fp8"])
def test_the_default_is_fp32_state_and_its_plan_is_unchanged(precision: str) -> None:
    default, stated = _train(precision=precision), _train("fp32", precision=precision)
    assert default.workload.optimizer_state == "fp32"
    assert default.per_gpu == stated.per_gpu and dict(default.breakdown) == dict(stated.breakdown)
    assert default.assumptions == stated.assumptions
    assert any("fp32 master weights and optimizer moments (ZeRO's 2 + 2 + 12 bytes" in line
               for line in default.assumptions)
    # ZeRO's 16 bytes a parameter with 2-byte gradients
    assert default.per_gpu.weights_bytes + default.per_gpu.gradients_bytes + default.per_gpu.optimizer_bytes == \
        16 * default.model.params_total


def test_each_state_says_what_it_keeps_in_which_precision() -> None:
    lines = {state: " ".join(_train(state).assumptions) for state in STATE_BYTES}
    assert "fp32 master weights, AdamW's two moments in bf16" in lines["bf16-moments"]
    assert "a bf16 master copy and AdamW's two moments in bf16" in lines["bf16"]
    assert "--exp-avg-dtype bf16" in lines["bf16-moments"] and "distributed_fused_adam" in lines["bf16"]
    fp8 = " ".join(_train("bf16", precision="fp8").assumptions)
    assert "bf16 master weights and moments in the optimizer" in fp8


@pytest.mark.parametrize(("kwargs", "reason"), [
    ({"precision": "bf16-true"}, "bf16-true already keeps no master copy"),
    ({"optimizer": "lion"}, "not --optimizer lion"),
])
def test_a_state_that_names_nothing_is_refused_in_one_line(kwargs: dict[str, Any], reason: str) -> None:
    with pytest.raises(InvalidWorkload, match=reason) as err:
        _train("bf16", **kwargs)
    assert "\n" not in str(err.value)


def test_lora_and_unknown_states_are_refused() -> None:
    with pytest.raises(InvalidWorkload, match="not task lora"):
        plan(_model(), Workload(task="lora", optimizer_state="bf16-moments"), gpu=get_gpu("h100"), suggest=False)
    with pytest.raises(InvalidWorkload, match="choose fp32, bf16-moments, bf16"):
        _train("fp16")


def test_the_chosen_layout_keeps_the_users_state() -> None:
    """The layout chooser plans with the state the user states; it never picks one itself."""
    w = Workload(task="train", seq_tokens=4096, optimizer_state="bf16-moments")
    p = plan(load_model("llama-3.1-8b"), w, gpu=get_gpu("h100"), layout=Layout(gpus=8), suggest=False)  # type: ignore[arg-type]
    assert p.workload.optimizer_state == "bf16-moments"
    assert any("bf16 optimizer moments" in line for line in p.assumptions)
    params_gpu = p.breakdown["master_weights_bytes"] / FP32_BYTES  # the parameters whose state this GPU keeps
    assert p.breakdown["optimizer_moments_bytes"] == pytest.approx(2 * BF16_BYTES * params_gpu, rel=1e-6)
    default = plan(load_model("llama-3.1-8b"), Workload(task="train", seq_tokens=4096), gpu=get_gpu("h100"),
                   layout=Layout(gpus=8), suggest=False)  # type: ignore[arg-type]
    assert default.workload.optimizer_state == "fp32"


def test_the_cli_refuses_a_bad_state_with_exit_2(capsys: Any) -> None:
    code, out, err = run(capsys, "plan", MODEL, "--task", "train", "--gpu", "h100", "--optimizer-state", "fp16")
    assert code == 2 and not out
    assert err.strip().count("\n") == 0 and "--optimizer-state 'fp16'" in err
    code, out, err = run(capsys, "recommend", MODEL, "--task", "train", "--optimizer-state", "bf16",
                         "--train-precision", "bf16-true")
    assert code == 2 and not out
    assert err.strip().count("\n") == 0 and "bf16-true already keeps no master copy" in err


def test_the_cli_plans_the_state(capsys: Any) -> None:
    code, out, _ = run(capsys, "plan", MODEL, "--task", "train", "--gpu", "h100", "--gpus", "1", "--zero", "0",
                       "--seq", "2048", "--micro-batch", "1", "--recompute", "none", "--optimizer-state", "bf16",
                       "--json")
    assert code == 0
    import json

    doc = json.loads(out)
    assert doc["workload"]["optimizer_state"] == "bf16"
    params = _model().params_total
    assert doc["breakdown"]["master_weights_bytes"] == BF16_BYTES * params
    assert plan_to_json(_train())["workload"]["optimizer_state"] == "fp32"


@pytest.mark.parametrize("state", ["bf16-moments", "bf16"])
def test_the_optimizer_step_reads_and_writes_the_state_it_keeps(state: str) -> None:
    """The speed model's optimizer update is memory-bound: 16-bit state shortens it by the bytes it saves, read once
    and written once; every other part of the step is the same."""
    from anchorgpu.planner.speed.calibration import calibration
    from anchorgpu.planner.speed.train_layout import TrainLayout
    from anchorgpu.planner.speed.training import training_step

    lay = TrainLayout(gpus=8, tp=1, pp=1, dp=8, zero=1)
    fp32, low = (training_step(_model(), get_gpu("h100"), lay, seq_tokens=2048, global_batch_tokens=2**20,
                               optimizer_state=s).breakdown_s for s in ("fp32", state))
    master, moments = STATE_BYTES[state]
    fp32_master, fp32_moments = STATE_BYTES["fp32"]
    fp32_traffic = calibration().optimizer_bytes_per_param  # master, m, v, read and written, beside grads and weights
    traffic = fp32_traffic - 2 * (fp32_master + fp32_moments - master - moments)
    assert low["optimizer"] == pytest.approx(fp32["optimizer"] * traffic / fp32_traffic, rel=1e-9)
    assert {k: v for k, v in low.items() if k != "optimizer"} == {k: v for k, v in fp32.items() if k != "optimizer"}
