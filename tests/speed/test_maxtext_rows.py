"""MaxText (JAX/XLA) training on H100, from NVIDIA's DGXC Benchmarking recipes in the NGC catalog (set ``maxtext-dgxc``
of ``src/anchorgpu/planner/speed/data/measured_runs.json``): a training stack the constants were never fitted on,
sharded FSDP-only over every GPU.

- "Maxtext Llama2 70B 25.01.1": the logged step of 64 GPUs in BF16, ``seconds: 7.908, ... Tokens/s/device: 1035.970``
  (4,096-token sequences, 128 a step).
- "Maxtext Llama3 70B 25.02": 128 GPUs in BF16, ``seconds: 15.570, ... Tokens/s/device: 1052.266`` (8,192 tokens,
  256 a step; the 25.04.01 page's table: dcn_FSDP 16 x ici_FSDP 8, per_device_batch_size 2, GA 1).
"""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.speed import calibrate
from anchorgpu.planner.speed.calibration import read_calibration_doc
from anchorgpu.planner.speed.runs import load_runs, predict

ROWS = {run.id: run for run in load_runs() if run.row.get("set") == "maxtext-dgxc"}
LOGGED = {"MX-L2-70B-H100-64": (1035.97, 7.908), "MX-L3-70B-H100-128": (1052.266, 15.570)}


def test_the_rows_are_the_logged_steps_held_out() -> None:
    assert "maxtext-dgxc" in calibrate.SETS
    assert set(ROWS) == set(LOGGED)
    report = {row["id"]: row for row in read_calibration_doc()["fit_report"]}
    for run_id, (per_gpu, step_s) in LOGGED.items():
        run = ROWS[run_id]
        r = run.row
        assert run.role == "holdout" and report[run_id]["role"] == "holdout"
        assert run.source.startswith("NVIDIA NGC catalog, DGXC Benchmarking") and f"{step_s:.3f}" in run.source
        assert run.value == per_gpu
        # the logged tokens a GPU are the step's tokens over its seconds and GPUs
        assert r["global_batch_tokens"] / step_s / r["gpus"] == pytest.approx(per_gpu, rel=1e-3)
        # FSDP-only: every GPU a data-parallel rank holding a shard, 2 sequences each, no accumulation
        assert (r["tp"], r["pp"], r["cp"], r["zero"], r["micro_batch"]) == (1, 1, 1, 3, 2)
        assert r["global_batch_tokens"] == r["gpus"] * r["micro_batch"] * r["seq_tokens"]


def test_a_stack_never_fitted_is_predicted_within_25_percent() -> None:
    for run_id, run in ROWS.items():
        assert abs(predict(run) / run.value - 1) <= 0.25, run_id


@pytest.mark.parametrize("run_id", sorted(LOGGED))
def test_full_recompute_is_assumed_because_the_planner_fits_nothing_less(run_id: str) -> None:
    """The recipes do not give their remat policy: at 2 sequences a GPU the planner holds the layout only with full
    recompute, so the rows are planned with it (a run that saved some activations ran faster than that plan)."""
    r = ROWS[run_id].row
    layout = Layout(gpus=r["gpus"], tp=1, pp=1, dp=r["gpus"], zero=3)
    answers = {}
    for level in ("full", "selective"):
        w = Workload(task="train", seq_tokens=r["seq_tokens"], micro_batch=2, recompute=level,
                     global_batch_tokens=r["global_batch_tokens"])
        answers[level] = plan(load_model(r["model"]["registry"]), w, layout=layout, gpu=get_gpu("h100")).fits
    assert answers == {"full": True, "selective": False}
