"""The rest of torchtitan's December 2024 H100 benchmark (pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md,
commit 31a17bf) that T26-T28 come from, held out (set ``torchtitan-2412`` of
``src/anchorgpu/planner/speed/data/measured_runs.json``): Llama 3.1 8B with FSDP on one server and on 16 (Tables 1 and
3), 70B without AsyncTP (Table 4), and the context-parallel runs of 8B and 405B (Tables 2 and 6), which make the
context-parallel training band and caveat with the NeMo and Megatron-Bridge runs that use CP."""

from __future__ import annotations

from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.rows_report import band_kind, speed_ratio
from anchorgpu.planner.speed.runs import load_runs, predict

RUNS = load_runs()
ROWS = {run.id: run for run in RUNS if run.row.get("set") == "torchtitan-2412"}


def _ratio(run_id: str) -> float:
    run = next(r for r in RUNS if r.id == run_id)
    return speed_ratio(run, predict(run))


def test_fsdp_over_sixteen_servers_keeps_the_one_server_speed() -> None:
    """Table 3 against Table 1: the same 8B run on 128 GPUs kept 98% of its one-server speed (6,514 and 6,667 tokens a
    second per GPU, compiled BF16). Its FSDP traffic leaves each server through all eight NICs and hides behind the
    products: the prediction loses nothing either (within 1%)."""
    eight, many = ROWS["TT-8B-8-BF16"], ROWS["TT-8B-128-BF16"]
    assert many.value / eight.value > 0.97
    assert abs(predict(many) / predict(eight) - 1) < 0.01


def test_the_rows_are_held_out() -> None:
    assert len(ROWS) == 12 and all(run.role == "holdout" for run in ROWS.values())


def test_context_parallel_runs_make_their_own_band_and_caveat() -> None:
    """A dense run with CP above 1 belongs to the ``cp`` kind: its band is the context-parallel rows', not the dense
    training band, and the caveat says how far each stack's runs fell (recomputed from the rows here)."""
    cp_runs = [r for r in RUNS if r.phase == "train" and band_kind(r) == "cp"]
    assert {r.id for r in cp_runs} >= {"TT-8B-8-CP2", "TT-405B-512-CP8", "T33", "N24-L3-8B"}
    titan = sorted(_ratio(r.id) for r in cp_runs if "torchtitan" in r.source)
    megatron = sorted(_ratio(r.id) for r in cp_runs if "torchtitan" not in r.source)
    cal = calibration()
    text = cal.caveats["cp_train"]
    assert f"{megatron[0]:.2f}x-{megatron[-1]:.2f}x" in text
    assert f"{titan[0]:.2f}x-{titan[-1]:.2f}x" in text
    assert cal.bands["cuda-train-cp"].low < cal.bands["cuda-train"].low


def test_a_context_parallel_plan_says_so_and_takes_that_band() -> None:
    from anchorgpu.architectures import load_model
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner import Layout, Workload, plan
    from anchorgpu.planner.speed.estimate import plan_performance

    model, gpu = load_model("llama-3.1-8b"), get_gpu("h100")
    perf = {cp: plan_performance(plan(model, Workload(task="train", seq_tokens=65536, micro_batch=1), gpu=gpu,
                                      layout=Layout(gpus=8, tp=1, pp=1, cp=cp, dp=8 // cp, zero=3)))
            for cp in (1, 2)}
    assert any(a.startswith("Context parallelism:") for a in perf[2]["assumptions"])
    assert not any(a.startswith("Context parallelism:") for a in perf[1]["assumptions"])
    low = {cp: p["train_tokens_per_s_low"] / p["train_tokens_per_s"] for cp, p in perf.items()}
    assert low[2] < low[1]
