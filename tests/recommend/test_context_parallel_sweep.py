"""``recommend --task train`` tries context parallelism for long sequences, as ``plan``'s layout chooser does: the
sweep had no CP axis, so a 131,072-token run of Llama 3.1 8B fitted no 80 GB GPU in the catalog (each sequence's
activations on one TP group) while ``plan --gpus 16`` found TP 2 x CP 8 fitting on H100; only 192 GB and 288 GB
AMD GPUs were offered."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.speed.estimate import plan_performance
from cli_runner import run, run_json

LONG = ("recommend", "llama-3.1-8b", "--task", "train", "--seq", "131072", "--tokens", "1e10", "--gpu", "h100-sxm",
        "--top", "4")


def test_long_sequences_fit_80gb_gpus_with_context_parallelism(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, *LONG)
    assert doc["results"], "no H100 offering fits a 131,072-token run of the 8B"
    assert all(r["layout"]["cp"] > 1 for r in doc["results"])  # one TP group's GPU cannot hold a whole sequence
    assert any("/CP/" in a for a in doc["assumptions"])
    code, out, _ = run(capsys, *LONG)
    assert code == 0 and " CP" in out


def test_a_context_parallel_result_is_what_plan_gives_for_its_layout(capsys: pytest.CaptureFixture[str]) -> None:
    """The sweep's memory and speed of a CP row are the plan's for that layout (the same planner, no second model)."""
    best = run_json(capsys, *LONG)["results"][0]
    lay = best["layout"]
    w = Workload(task="train", seq_tokens=131072, micro_batch=1, recompute=best["recompute"], allow_long_context=True)
    p = plan(load_model("llama-3.1-8b"), w, gpu=get_gpu("h100-sxm"), suggest=False, choose_layout=False,
             layout=Layout(gpus=best["gpus"], tp=lay["tp"], pp=lay["pp"], cp=lay["cp"], dp=lay["dp"], zero=lay["zero"],
                           virtual_stages=lay["virtual_stages"]))
    assert p.fits
    assert best["per_gpu_total_bytes"] == p.per_gpu.total_bytes
    assert best["train_tokens_per_s"] == pytest.approx(plan_performance(p)["train_tokens_per_s"], rel=1e-3)


def test_short_sequences_sweep_no_context_parallelism(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "recommend", "llama-3.1-8b", "--task", "train", "--seq", "8192", "--tokens", "1e10",
                   "--gpu", "h100-sxm", "--top", "4")
    assert doc["results"] and all(r["layout"]["cp"] == 1 for r in doc["results"])
    assert not any("/CP/" in a for a in doc["assumptions"])


def test_the_launch_recipe_carries_the_context_parallel_size(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, *LONG, "--recipe", "torchrun-fsdp")
    best = doc["results"][0]
    assert best.get("recipe_refused") is None
    config = next(f["text"] for f in best["recipe"]["files"] if f["name"] == "anchorgpu_train.json")
    assert f'"context_parallel": {best["layout"]["cp"]}' in config
