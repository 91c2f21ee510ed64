"""Stop 58's qa23: a new user's adversarial pass over what landed on main in stop 58 (recommend's offloaded training
rows, QLoRA's dequantization, the widened training chooser, qa22's request cycle, perfserve5's hand-over)
(benchmarks/hardening/stop58_qa23.md, whose table numbers these).

1. The launch recipes of an offloaded plan or recommend row dropped the offload where the layout shards nothing
   (``plan llama-3.1-8b --task train --gpu l40s --gpus 1 --offload optimizer --recipe deepspeed``, recommend's first
   8B training row): DeepSpeed's ``zero_optimization.stage: 0`` with ``offload_optimizer`` (DeepSpeed reads the
   offload only under ZeRO, stages 1-3: at stage 0 the fp32 state stays on the GPU, 128 GiB on a 48-GB L40S);
   accelerate's ``zero_stage: 0`` alike; torchrun-fsdp wrote ``"fsdp": null`` ("the script wraps the model in DDP"),
   which has no CPU offload, beside a line on FSDP's CPU offload.
2. recommend's host-RAM check counted only the optimizer state (12 bytes a parameter with AdamW), where DeepSpeed's
   ZeRO-Offload also keeps the fp32 gradient partition its host update reads on the CPU, the master partition's size
   and dtype (``stage_1_and_2.initialize_optimizer_states``): ``recommend gemma-2-9b --task train`` offered one L40S
   VM with 103.28 GiB "of 128.00 GiB" RAM where it keeps 137.71 GiB.
3. ``--max-usd`` held a training run with ``--tokens`` to the term's total, not to the run's price the rows are ranked
   by: ``recommend llama-3.1-8b --task train --tokens 1e11 --max-usd 7650`` dropped the 4 x 8 B200 run at $7,115.52
   ("over the budget: 138992.00 USD") and kept one L40S VM's at $7,640 and the H100 VMs' at $8,205-$9,522.
4. QLoRA's dequantization (stop 58 qloradeq) was timed on every expert of a mixture of experts on every rank, split
   only by TP, where under expert parallelism a rank holds and dequantizes 1/EP of them: ``plan qwen3-235b-a22b --task
   qlora --gpu h100 --gpus 8`` (DP 8 x EP 8) said 14,333 tok/s; the same layout is 16,029.
"""

from __future__ import annotations

import json

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.formats import get_format
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.dequant import QLORA_BASE_FORMAT, dequant_passes
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import training_step
from cli_runner import run_json

_OFFLOADED_8B = ("plan", "llama-3.1-8b", "--task", "train", "--gpu", "l40s", "--gpus", "1", "--offload", "optimizer")


def _offload_launched(recipe: dict) -> bool:
    """Whether a training recipe's config moves the optimizer state to the CPU in a way its framework reads."""
    files = {f["name"]: f["text"] for f in recipe["files"]}
    if recipe["kind"] == "deepspeed":
        zero = json.loads(files["ds_config.json"])["zero_optimization"]
        return "offload_optimizer" in zero and zero["stage"] >= 1
    if recipe["kind"] == "accelerate":
        text = files["accelerate_config.yaml"]
        if "distributed_type: FSDP" in text:
            return "fsdp_offload_params: true" in text
        if "deepspeed_config_file: ds_config.json" in text:  # stop 59 accroot: the DeepSpeed config file it points at
            zero = json.loads(files["ds_config.json"])["zero_optimization"]
            return "offload_optimizer" in zero and zero["stage"] >= 1
        stage = int(text.split("zero_stage: ")[1].split()[0])
        return "offload_optimizer_device: cpu" in text and stage >= 1
    fsdp = json.loads(files["anchorgpu_train.json"])["fsdp"]
    return fsdp is not None and fsdp["cpu_offload"] is True


@pytest.mark.parametrize("kind", ["deepspeed", "accelerate", "torchrun-fsdp"])
def test_an_offloaded_plan_launches_its_offload(capsys: pytest.CaptureFixture[str], kind: str) -> None:
    """Property: a plan with its optimizer offloaded gets a launch whose framework offloads it (item 1)."""
    answer = run_json(capsys, *_OFFLOADED_8B, "--recipe", kind)
    assert answer["layout"]["offload"] == "optimizer" and answer["layout"]["zero"] == 0  # the case: nothing sharded
    assert _offload_launched(answer["recipe"]), answer["recipe"]


def test_recommends_offloaded_row_launches_its_offload(capsys: pytest.CaptureFixture[str]) -> None:
    """Property: recommend's offloaded training row (one GPU, nothing sharded) launches with its offload (item 1).
    OLMo-2 7B, not Llama-3.1 8B: DeepSpeed's ZeRO-Offload also pins a bf16 copy of the partition on the host
    (stop58 dsbf16mem), 18 bytes a parameter in all, which puts the 8B past one L40S VM's 128 GiB of RAM."""
    answer = run_json(capsys, "recommend", "olmo-2-7b", "--task", "train", "--gpu", "l40s", "--recipe", "deepspeed")
    rows = [r for r in answer["results"] if r["layout"].get("offload") == "optimizer"]
    assert rows  # no layout without offload fits one L40S VM
    for row in rows:
        assert _offload_launched(row["recipe"]), row["recipe"]


def test_host_memory_holds_the_fp32_gradients_beside_the_state(capsys: pytest.CaptureFixture[str]) -> None:
    """Property: with mixed-precision AdamW offloaded, the host keeps 4 + 8 bytes of state and 4 of fp32 gradient a
    parameter: the gradients are a third of the state (item 2)."""
    breakdown = run_json(capsys, *_OFFLOADED_8B)["breakdown"]
    assert breakdown["offloaded_gradients_bytes"] * 3 == breakdown["offloaded_optimizer_bytes"]


@pytest.mark.parametrize("model", ["gemma-2-9b", "llama-3.1-8b"])
def test_offloaded_rows_fit_the_servers_ram(capsys: pytest.CaptureFixture[str], model: str) -> None:
    """Property: every offloaded row's server holds what its ranks keep on the host, state and fp32 gradients
    (item 2: gemma-2-9b's L40S VM row kept 137.71 GiB in 128 GiB)."""
    answer = run_json(capsys, "recommend", model, "--task", "train", "--top", "40")
    catalog = load_catalog()
    rows = [r for r in answer["results"] if r["layout"].get("offload")]
    assert rows
    for r in rows:
        per_gpu = r["offloaded_optimizer_bytes"] + r["offloaded_gradients_bytes"]
        assert r["offloaded_gradients_bytes"] * 3 == r["offloaded_optimizer_bytes"]
        assert r["host_bytes_per_server"] == per_gpu * (r["gpus"] // r["servers"])
        assert r["host_bytes_per_server"] <= catalog.offering(r["offering"]).ram_bytes, r["offering"]


def test_a_budget_holds_a_training_run_to_its_price(capsys: pytest.CaptureFixture[str]) -> None:
    """Property: with --tokens the budget is the run's price: every row kept costs at most it, and every row of the
    same answer without a budget whose run costs at most it is kept (item 3)."""
    args = ("recommend", "llama-3.1-8b", "--task", "train", "--tokens", "1e11", "--top", "40")
    free = run_json(capsys, *args)["results"]
    budget = sorted(float(r["run_usd"]) for r in free)[len(free) // 2]
    held = run_json(capsys, *args, "--max-usd", f"{budget:.2f}")["results"]
    assert held and all(float(r["run_usd"]) <= budget for r in held)
    under = {(r["offering"], r["servers"]) for r in free if float(r["run_usd"]) <= budget}
    assert under <= {(r["offering"], r["servers"]) for r in held}


@pytest.mark.parametrize("ep", [1, 2, 8])
def test_a_rank_dequantizes_the_experts_it_holds(ep: int) -> None:
    """Property: at one layout, QLoRA's step less LoRA's is the dequantization of the weights a rank holds, the dense
    linears whole (TP 1) and 1/EP of the experts (item 4)."""
    model, gpu = load_model("qwen3-30b-a3b"), get_gpu("h100")

    def compute_s(kind: str) -> float:
        st = training_step(
            model,
            gpu,
            TrainLayout(gpus=8, dp=8, ep=ep, zero=1),
            seq_tokens=2048,
            micro_batch=1,
            global_batch_tokens=8 * 2048,
            recompute="full",
            kind=kind,
        )  # type: ignore[arg-type]
        return st.breakdown_s["compute"]

    def weights(experts: bool) -> int:  # the 4-bit linears (routers stay 16-bit), the routed experts' or the rest
        return sum(
            g.d_in * g.d_out * g.count
            for g in model.linear_groups
            if g.component != "router" and (g.component == "experts") == experts
        )

    held_bytes = (weights(False) + weights(True) / ep) * (get_format(QLORA_BASE_FORMAT).linear_bits / 8 + 2)
    expected = (
        held_bytes * dequant_passes("full") / (gpu.memory_bandwidth_bytes_per_s * calibration().stack(gpu).decode_mbu)
    )  # one micro-batch
    assert compute_s("qlora") - compute_s("lora") == pytest.approx(expected, rel=1e-9)
