"""The rest of the NeMo 24.07 performance table that T32-T34 come from (NVIDIA/NeMo
docs/source/performance/performance_summary.md, commit 070a0bb; DGX-H100, FP8; set ``nemo-2407`` of
``src/anchorgpu/planner/speed/data/measured_runs.json``): pre-training with the published layouts, and fine-tuning of
Llama 2 whole (SFT) and with LoRA, all held out.

The table gives each row's model TFLOP/s beside its tokens a second, so the FLOPs a token it counts check the
shapes the rows are planned with (the GPT-3 sizes are NeMo's, not a registry model's).
"""

from __future__ import annotations

import pytest

from anchorgpu.planner.speed import calibrate
from anchorgpu.planner.speed.runs import _model, load_runs, predict
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import training_step

ROWS = {run.id: run for run in load_runs() if run.row.get("set") == "nemo-2407"}
# the table's tokens/s/GPU and model TFLOP/s/GPU of each row
TABLE = {"N24-GPT3-5B": (22521, 736), "N24-GPT3-20B": (5851, 750), "N24-GPT3-175B-128": (726, 782),
         "N24-L2-7B": (16847, 776), "N24-L2-13B": (8646, 754), "N24-L3-8B": (12036, 697),
         "N24-L2-7B-SFT": (17120, 682), "N24-L2-13B-SFT": (9741, 754), "N24-L2-70B-SFT": (1833, 756),
         "N24-L2-7B-LORA": (25206, 673), "N24-L2-13B-LORA": (14161, 733), "N24-L2-70B-LORA": (2557, 705)}
LORA = [run_id for run_id in TABLE if run_id.endswith("-LORA")]


def _flops_per_token(run_id: str) -> float:
    r = ROWS[run_id].row
    lay = TrainLayout(gpus=r["gpus"], tp=r["tp"], pp=r["pp"], cp=r["cp"], dp=r["gpus"] // (r["tp"] * r["pp"] * r["cp"]),
                      zero=r["zero"], virtual_stages=r["virtual_stages"], tp_overlap=r["tp_overlap"])
    from anchorgpu.hardware import get_gpu

    return training_step(_model(r), get_gpu(r["gpu"]), lay, seq_tokens=r["seq_tokens"], micro_batch=r["micro_batch"],
                         global_batch_tokens=r["global_batch_tokens"], precision=r["precision"],
                         kind=r.get("kind", "full")).model_flops_per_token


def test_the_set_is_the_tables_rows_held_out() -> None:
    assert "nemo-2407" in calibrate.SETS
    assert set(ROWS) == set(TABLE)
    t32 = next(run for run in load_runs() if run.id == "T32")
    for run_id, (tokens, _) in TABLE.items():
        run = ROWS[run_id]
        assert run.role == "holdout" and run.value == tokens and run.row["precision"] == "fp8"
        assert run.source.startswith("NVIDIA/NeMo docs/source/performance/performance_summary.md (commit 070a0bb")
        assert t32.source.startswith("NVIDIA/NeMo docs/source/performance/performance_summary.md (commit 070a0bb")
        r = run.row
        dp = r["gpus"] // (r["tp"] * r["pp"] * r["cp"])
        assert r["global_batch_tokens"] % (dp * r["micro_batch"] * r["seq_tokens"]) == 0, run_id
    assert all(ROWS[run_id].row["kind"] == "lora" for run_id in LORA)


@pytest.mark.parametrize("run_id", [run_id for run_id in TABLE if "SFT" not in run_id and "LORA" not in run_id])
def test_the_planned_shapes_count_the_tables_flops(run_id: str) -> None:
    """Pre-training: model TFLOP/s over tokens/s is the FLOPs a token NeMo counts; the planner's match to 0.5%."""
    tokens, tflops = TABLE[run_id]
    assert _flops_per_token(run_id) == pytest.approx(tflops * 1e12 / tokens, rel=0.005)


def test_fine_tuning_attends_within_packed_examples_so_the_table_counts_fewer_flops() -> None:
    """NeMo packs SQuAD's short examples into 4,096-token rows and attends within each: its count is 7-16% below the
    planner's for full fine-tuning, which times attention over the whole row (a reason those rows ran faster than
    predicted), and 11-24% for LoRA, whose count is 4 x the parameters beside the attention's three passes (the
    attention core has no weight, so its backward runs whole under LoRA too) over a smaller total."""
    for run_id in TABLE:
        if "SFT" in run_id or "LORA" in run_id:
            tokens, tflops = TABLE[run_id]
            top = 1.17 if "SFT" in run_id else 1.24
            assert 1.05 <= _flops_per_token(run_id) / (tflops * 1e12 / tokens) <= top, run_id


def test_lora_runs_are_predicted_within_15_percent() -> None:
    """The first measured LoRA runs: Llama 2 7B and 13B on 8 H100 (DP 8) and 70B (TP 2 x PP 4), timed as
    ``--task lora`` (the frozen model's products forward and for the input gradients). All three ran faster than
    predicted: 5.9%, 8.7% and 6.6% before stop 38's refit, 6-11% after it (the dense training efficiency moved from
    0.585 to 0.580 with the data-parallel link), 0.4% slow to 1.4% fast after stop 40's (the training fit started from
    three points, which left the narrow-product falloff off its floor); none of them crosses a server."""
    for run_id in LORA:
        assert abs(predict(ROWS[run_id]) / ROWS[run_id].value - 1) <= 0.15, run_id


def test_every_row_comes_within_25_percent() -> None:
    """GPT-3 20B (TP 2 x DP 32 over 8 servers) among them since its gradient sync leaves each server through every
    member's NIC (stop 38: it was 34% slow timed at one NIC)."""
    errors = {run_id: predict(run) / run.value - 1 for run_id, run in ROWS.items()}
    assert not {run_id for run_id, e in errors.items() if abs(e) > 0.25}, errors


def test_gpt3_20b_is_within_reach_only_through_every_nic() -> None:
    """benchmarks/dp_nic_reading.py times the training rows as the calibration does (a data-parallel group leaves each
    server through all its members' NICs) and with one NIC, as before stop 38: GPT-3 20B (TP 2 x DP 32, ZeRO-1) is a
    third slow with one NIC and within 10% with every NIC (-6.5%, most of the rest its 250 buckets' ring latency); more
    network bandwidth never slows a row (T37 included);
    the calibrated functions are back in place afterwards."""
    import importlib.util
    from pathlib import Path

    import anchorgpu.planner.speed.training as training

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "dp_nic_reading.py"
    spec = importlib.util.spec_from_file_location("dp_nic_reading", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    links = training.data_parallel_terms.__globals__  # where the training step reads the link from
    before = (links["data_parallel_link"], training._layout_terms)
    one, every = module.both()
    assert (links["data_parallel_link"], training._layout_terms) == before
    assert one["N24-GPT3-20B"] < -0.25 and abs(every["N24-GPT3-20B"]) < 0.10
    runs = {run.id: run for run in load_runs()}  # more bandwidth: a faster prediction (a shorter step's time)
    assert all((every[k] - one[k]) * (1 if runs[k].higher_is_better else -1) >= -1e-9 for k in one)
    assert one["T37"] < every["T37"]
    assert every["N24-GPT3-20B"] == pytest.approx(predict(ROWS["N24-GPT3-20B"]) / ROWS["N24-GPT3-20B"].value - 1)
