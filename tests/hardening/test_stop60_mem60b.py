"""Stop 60 mem60b: torchrun-fsdp's ZeRO-1/2 counted as launched (benchmarks/hardening/stop60_mem60b.md).

The torchrun-fsdp recipe writes ZeRO-1/2 as FSDP2 with ``fsdp.reshard_after_forward`` false and the parameters kept in
fp32 (``anchorgpu_train.json``'s ``parameter_dtype``). torch ``_fully_shard/_fsdp_param_group.py``:
``FSDPParamGroup.reshard`` returns in the FORWARD state when ``_reshard_after_forward`` is false, so every unit's
16-bit parameters stay gathered from its forward into its backward; ``post_backward`` reshards the unit
(``reshard_after_backward``) and ``foreach_reduce`` reduce-scatters its gradients into the sharded parameter's dtype
(fp32). A plan for that launch (``launch_reach("torchrun-fsdp")``: ``Workload.launch_torchrun_fsdp``) counts that, not
DeepSpeed's ZeRO-1/2 (16-bit sharded gradients, reduce buckets, edge overhang). Each test fails if its term is dropped.
Llama-3.1-8B from its config: vocab 128,256 x hidden 4,096, 32 layers."""

from __future__ import annotations

from typing import Any

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner import memory as mm
from anchorgpu.planner.engine_choice import launch_reach
from anchorgpu.planner.training_states import params_per_gpu
from anchorgpu.planner.weight_parts import model_param_parts

H100 = get_gpu("h100")
TRAIN = {"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": 8, "tp": 1, "pp": 1, "dp": 8}


def _planned(recipe: str | None, zero: int, name: str = "llama-3.1-8b", gpus: int = 8):  # type: ignore[no-untyped-def]
    w = Workload(task="train", train_stack="pytorch", **launch_reach(recipe))  # type: ignore[arg-type]
    return plan(load_model(name), w, gpu=H100, layout=Layout(gpus=gpus, tp=1, pp=1, dp=gpus, zero=zero),
                suggest=False, choose_layout=False)


@pytest.mark.parametrize("zero", [1, 2])
def test_torchrun_fsdp_zero12_holds_fp32_sharded_gradients_and_each_units_backward(zero: int) -> None:
    """``foreach_reduce`` (torch ``_fsdp_collectives.py``): ``_to_dtype_if_needed(reduce_output, target_dtype)``, the
    sharded parameter's dtype, fp32 under the recipe's fp32 parameters: 4 B a parameter / DP, not ZeRO's 2 (ZeRO-1's
    whole 16-bit gradients neither). ``post_backward``: each unit's 16-bit gradients and fp32 reduce-scatter input,
    the previous unit's input kept in ``reduce_scatter_state``, less the units already resharded
    (``mm.fsdp_unresharded_gradients_bytes``). None of DeepSpeed's buffers (stage_1_and_2.py's buckets and
    ``grads_in_partition`` overhang): the launch runs no DeepSpeed."""
    model = load_model("llama-3.1-8b")
    p, deepspeed = _planned("torchrun-fsdp", zero), _planned(None, zero)
    units = mm.fsdp_unresharded_gradients_bytes(model_param_parts(model), tp=1, param_bytes=2, reduce_bytes=4)
    head = 128_256 * 4_096
    assert units >= 4 * head  # the head's fp32 reduce-scatter input, at least
    assert p.breakdown["fsdp_unit_gradients_bytes"] == units
    sharded = mm.gradient_bytes(params_per_gpu(model, 1, 1, 1), bytes_per_value=4, zero=2, dp=8)
    assert p.per_gpu.gradients_bytes == sharded + units
    assert not {"zero_reduce_buckets_bytes", "zero_boundary_overhang_bytes"} & set(p.breakdown)
    assert "zero_reduce_buckets_bytes" in deepspeed.breakdown  # the plan without the launch: DeepSpeed's ZeRO
    assert p.per_gpu.weights_bytes == deepspeed.per_gpu.weights_bytes  # the whole 16-bit weights either way
    assert any("torchrun-fsdp launches it" in a and "FSDPParamGroup.reshard" in a for a in p.assumptions)


def test_the_recipe_says_as_planned_only_for_a_plan_made_for_it() -> None:
    """recipes/training.py ``_torchrun``: the ZeRO-1/2 line says "as planned" where the plan counted the launch
    (``fsdp_unit_gradients_bytes``), and says to plan with the recipe where it did not; it names the whole gathered
    16-bit weights (14.96 GiB a GPU for Llama-3.1-8B: 8.03B x 2 B) and ZeRO-3 as the way to shard them."""
    from anchorgpu.recipes import build_recipe

    mine = build_recipe(_planned("torchrun-fsdp", 2), "torchrun-fsdp").assumptions
    other = build_recipe(_planned(None, 2), "torchrun-fsdp").assumptions
    line = next(a for a in mine if a.startswith("ZeRO-2 was planned"))
    assert "as planned" in line and "14.96 GiB a GPU" in line and "--zero 3" in line
    assert "fp32 gradients" in line and "no more memory than planned" not in line
    assert any(a.startswith("ZeRO-2 was planned") and "plan with --recipe torchrun-fsdp" in a for a in other)


def test_the_faces_plan_the_launch_alike(client: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """``anchorgpu plan --recipe torchrun-fsdp --zero 2``, ``POST /v1/plan`` and the planner page with that recipe give
    one plan for the launch (each builds the workload through ``launch_reach``): its units counted, none of
    DeepSpeed's buckets, and the CLI's recipe says so."""
    import re

    from cli_runner import run_json

    body = {**TRAIN, "zero": 2, "recipe": "torchrun-fsdp"}
    api = client.post("/v1/plan", json=body)
    assert api.status_code == 200, api.text
    total, breakdown = api.json()["per_gpu"]["total_bytes"], api.json()["breakdown"]
    assert breakdown["fsdp_unit_gradients_bytes"] > 0 and "zero_reduce_buckets_bytes" not in breakdown
    page = client.get("/plan", params={k: str(v) for k, v in body.items()})
    assert page.status_code == 200
    shown = re.search(r"<th>Total</th><td[^>]*><strong>[^<]*</strong></td><td[^>]*>([\d,]+) bytes</td>", page.text)
    assert shown is not None and int(shown.group(1).replace(",", "")) == total
    doc = run_json(capsys, "plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "8", "--tp", "1",
                   "--pp", "1", "--dp", "8", "--zero", "2", "--recipe", "torchrun-fsdp")
    assert doc["per_gpu"]["total_bytes"] == total
    assert any("as planned" in a for a in doc["recipe"]["assumptions"] if a.startswith("ZeRO-2 was planned"))


def test_recommends_rows_are_the_launchs_plans(capsys: pytest.CaptureFixture[str]) -> None:
    """recommend's sweep takes training memory from ``plan`` once per layout with the workload it was given
    (planner/sweep.py), which ``recommend --recipe`` builds through ``launch_reach``: its 8-GPU ZeRO-2 row is
    ``plan --recipe torchrun-fsdp --zero 2``'s memory, and not the row of the same workload without the launch."""
    from anchorgpu.planner.sweep import sweep
    from anchorgpu.planner.sweep_types import HardwareShape, SweepSpec
    from cli_runner import run_json

    model = load_model("llama-3.1-8b")
    shapes = (HardwareShape(id="h100x8", gpu=H100, gpus_per_server=8, max_servers=1, scale_out=False),)

    def row_total(recipe: str | None) -> float:
        w = Workload(task="train", train_stack="pytorch", **launch_reach(recipe))  # type: ignore[arg-type]
        result = sweep(model, shapes, SweepSpec(workload=w, train_tokens=10**10))
        rows = [result.row(i) for i in range(result.evaluated)]
        row = next(r for r in rows if (r["gpus"], r["tp"], r["pp"], r["dp"], r["zero"]) == (8, 1, 1, 8, 2))
        return float(row["per_gpu_total_bytes"])

    doc = run_json(capsys, "plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "8", "--tp", "1",
                   "--pp", "1", "--dp", "8", "--zero", "2", "--recipe", "torchrun-fsdp")
    assert "fsdp_unit_gradients_bytes" in doc["breakdown"]
    assert row_total("torchrun-fsdp") == doc["per_gpu"]["total_bytes"] != row_total(None)


@pytest.mark.parametrize(("zero", "launched", "deepspeed"), [(2, 38.20, 36.35), (1, 38.20, 47.99)])
def test_the_readme_figures_are_the_plans(capsys: pytest.CaptureFixture[str], zero: int, launched: float,
                                          deepspeed: float) -> None:
    """README's FSDP paragraph: Llama-3.1-8B on 8 H100, DP 8, planned for ``--recipe torchrun-fsdp`` and for DeepSpeed's
    ZeRO (``--train-stack pytorch``), micro-batch 1 and full recompute: the launch holds ZeRO-2's states at ZeRO-1 too."""
    from pathlib import Path

    from cli_runner import run_json

    base = ("plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "8", "--tp", "1", "--pp", "1",
            "--dp", "8", "--zero", str(zero))
    fixed = ("--micro-batch", "1", "--recompute", "full")

    def gib(*extra: str) -> float:
        return round(run_json(capsys, *base, *fixed, *extra)["per_gpu"]["total_bytes"] / 2**30, 2)

    assert (gib("--recipe", "torchrun-fsdp"), gib("--train-stack", "pytorch")) == (launched, deepspeed)
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    assert f"{launched:.2f}" in readme and f"{deepspeed:.2f}" in readme
