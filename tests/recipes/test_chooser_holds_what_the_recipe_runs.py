"""A training plan asked with ``--recipe torchrun-fsdp``, ``deepspeed`` or ``accelerate`` chooses a layout the launch
can run: PP 1 (none of their configs has a pipeline setting: recipes/training.py refuses PP > 1), and TP 1 and CP 1
under ``deepspeed`` (ds_config.json has no TP or CP size). Before (branch l405's base, ee512d3), ``plan llama-3.1-70b
--task train --gpu h100 --gpus 64 --recipe deepspeed`` chose TP 2 x PP 4 (v 10) x DP 8, ZeRO-1, and the recipe
refused it ("pipeline parallelism (PP 4) has no setting here"); the same plan on the PyTorch stack without a recipe
still chooses that layout (the control)."""

from __future__ import annotations

import pytest

from cli_runner import run_json

TRAIN_70B = ("plan", "llama-3.1-70b", "--task", "train", "--gpu", "h100", "--gpus", "64")


@pytest.mark.parametrize("recipe", ["deepspeed", "torchrun-fsdp", "accelerate"])
def test_the_chooser_picks_a_layout_the_recipe_launches(capsys: pytest.CaptureFixture[str], recipe: str) -> None:
    doc = run_json(capsys, *TRAIN_70B, "--recipe", recipe)
    assert doc["layout"]["pp"] == 1 and doc["fits"] is True
    assert doc["recipe"]["kind"] == recipe and doc["recipe"]["command"]  # launched, not refused
    if recipe == "deepspeed":
        assert doc["layout"]["tp"] == 1 and doc["layout"]["cp"] == 1
    else:  # TP is still searched where the launch sets it (held only where it cannot)
        assert doc["layout"]["tp"] > 1


def test_without_a_recipe_the_pytorch_stack_still_chooses_pipeline_stages(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, *TRAIN_70B, "--train-stack", "pytorch")
    assert doc["layout"]["pp"] > 1


def test_stages_given_are_kept_and_the_recipe_refuses_them(capsys: pytest.CaptureFixture[str]) -> None:
    from cli_runner import run

    code, _out, err = run(capsys, *TRAIN_70B, "--tp", "2", "--pp", "4", "--zero", "1", "--recipe", "torchrun-fsdp")
    assert code == 2 and "pipeline parallelism (PP 4) has no setting here" in err


def test_recommends_sweep_holds_the_same_dimensions() -> None:
    from anchorgpu.architectures import load_model
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner.sweep_grid import layout_grid
    from anchorgpu.planner.sweep_types import HardwareShape

    model = load_model("llama-3.1-70b")
    shapes = [HardwareShape(id="h100x8", gpu=get_gpu("h100"), gpus_per_server=8, max_servers=8, scale_out=True)]
    free = layout_grid(model, shapes, training=True, max_pp=8, zero_stages=(1, 2, 3), seq_tokens=8192)
    held = layout_grid(model, shapes, training=True, max_pp=8, zero_stages=(1, 2, 3), seq_tokens=8192,
                       launch_stages=False, launch_tp_cp=False)
    assert free.pp.max() > 1 and free.tp.max() > 1
    assert held.pp.max() == 1 and held.tp.max() == 1 and held.cp.max() == 1 and len(held.pp) > 0
