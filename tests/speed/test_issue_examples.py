"""What a new user tried in issue 11, end to end through the CLI and the API.

Figures come from ``shared/reference/perf_measured.md`` (row ids named in each test).
"""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.speed.estimate import plan_performance
from cli_runner import run, run_json


def test_nemo_llama2_70b_fp8_run_fits_with_its_published_layout_and_speed(capsys) -> None:
    """perf_measured T32 (NeMo 24.07, 64 H100, TP4 PP4 VP20 DP4, MBS1, FP8, 4k): 1,707 tokens/s per GPU."""
    data = run_json(capsys, "plan", "llama-2-70b", "--task", "train", "--gpu", "h100", "--gpus", "64", "--tp", "4",
                    "--pp", "4", "--virtual-stages", "20", "--seq", "4096", "--global-batch", "524288",
                    "--micro-batch", "1", "--train-precision", "fp8", "--tp-overlap", "--zero", "1")
    assert data["fits"] is True
    assert data["performance"]["train_tokens_per_s"] / 64 == pytest.approx(1707, rel=0.15)


def test_nemo_llama3_70b_run_with_context_parallelism_fits(capsys) -> None:
    """perf_measured T33 (TP4 PP4 CP2 VP5 DP2, 8k, FP8): 1,533 tokens/s per GPU."""
    data = run_json(capsys, "plan", "llama-3-70b", "--task", "train", "--gpu", "h100", "--gpus", "64", "--tp", "4",
                    "--pp", "4", "--cp", "2", "--virtual-stages", "5", "--seq", "8192", "--global-batch", "1M",
                    "--micro-batch", "1", "--train-precision", "fp8", "--tp-overlap", "--zero", "1")
    assert data["fits"] is True and data["layout"]["cp"] == 2 and data["layout"]["dp"] == 2
    assert data["performance"]["train_tokens_per_s"] / 64 == pytest.approx(1533, rel=0.15)


def test_a_short_request_is_sized_at_prompt_plus_output_not_the_whole_window(capsys) -> None:
    code, out, _ = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--prompt", "1000", "--output-tokens", "200",
                       "--concurrency", "64")
    assert code == 0 and "FITS" in out and "1,200 tokens" in out
    data = run_json(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--prompt", "1000", "--output-tokens", "200",
                    "--concurrency", "64")
    assert data["workload"]["context_tokens"] == 1200
    perf = data["performance"]
    assert perf["tpot_s"] > perf["tpot_s_ceiling"] and perf["ttft_s"] > 0


def test_a_70b_training_on_512_gpus_gets_a_layout_that_fits(capsys) -> None:
    data = run_json(capsys, "plan", "llama-3.1-70b", "--task", "train", "--gpu", "h100", "--gpus", "512",
                    "--tokens", "1e12")
    assert data["fits"] is True
    lay = data["layout"]
    assert lay["tp"] * lay["pp"] * lay["cp"] * lay["dp"] == 512 and lay["tp"] <= 8
    assert any(a.startswith("Layout chosen") for a in data["assumptions"])
    perf = data["performance"]
    assert 0.2 < perf["train_mfu"] < 0.7
    assert perf["gpu_hours"] == pytest.approx(perf["train_time_s"] * 512 / 3600)


def test_a_partial_layout_keeps_what_was_given_and_chooses_the_rest(capsys) -> None:
    data = run_json(capsys, "plan", "llama-3.1-70b", "--task", "train", "--gpu", "h100", "--gpus", "64", "--tp", "8",
                    "--pp", "4")
    assert data["fits"] is True
    assert (data["layout"]["tp"], data["layout"]["pp"], data["layout"]["dp"]) == (8, 4, 2)
    assert data["workload"]["micro_batch"] >= 1 and data["workload"]["recompute"] in ("none", "selective", "full")
    assert any("kept as given: --tp, --pp" in a for a in data["assumptions"])


def test_dp_over_all_the_gpus_keeps_plain_data_parallelism(capsys) -> None:
    """``--dp 8 --zero 0`` is plain DDP (README's "What does FSDP change?"); ``--zero 0`` alone holds the stage and
    searches TP and PP around it (tests/speed/test_chooser_partial_layout.py)."""
    code, out, _ = run(capsys, "plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "8", "--dp", "8",
                       "--zero", "0")
    assert code == 0 and "DOES NOT FIT" in out and "Layout TP 1 · PP 1 · DP 8" in out
    code, out, _ = run(capsys, "plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "8", "--fsdp")
    assert code == 0 and "FITS" in out


def test_inference_without_a_gpu_count_takes_the_fewest_gpus_that_hold_the_load(capsys) -> None:
    data = run_json(capsys, "plan", "llama-3.1-70b", "--gpu", "h100", "--context", "8k", "--concurrency", "32")
    assert data["fits"] is True and data["gpus"] in (2, 4) and data["layout"]["tp"] == data["gpus"]
    assert any("fewest" in a for a in data["assumptions"])


@pytest.mark.parametrize(("argv", "needle"), [
    (["--global-batch", "1000"], "--global-batch 1,000"),
    (["--gpus", "10", "--tp", "4"], "--gpus 10 is not a multiple"),
    (["--cp", "3", "--gpus", "3"], "--cp 3 does not divide"),
    (["--pp", "4", "--virtual-stages", "3", "--gpus", "4"], "--virtual-stages 3"),
    (["--gpu", "a100", "--train-precision", "fp8"], "--train-precision fp8"),
    (["--gpu", "h100", "--train-precision", "fp4"], "--train-precision fp4"),
    (["--global-batch", "4Q"], "--global-batch '4Q'"),
])
def test_bad_training_input_is_one_line_and_exit_2(capsys, argv: list[str], needle: str) -> None:
    args = ["plan", "llama-3.1-8b", "--task", "train", "--seq", "4096", *argv]
    if "--gpu" not in argv:
        args += ["--gpu", "h100"]
    code, out, err = run(capsys, *args)
    assert code == 2, out
    assert needle in err and len(err.strip().splitlines()) == 1


def test_one_user_moe_decode_is_bound_by_fixed_per_layer_costs() -> None:
    """DeepSeek-V3 at one user: the roofline reads only ~37B active parameters, but each of 61 layers pays its
    launches and synchronisation; the prediction sits well under the ceiling (issue 11)."""
    model = load_model("deepseek-v3")
    p = plan(model, Workload(context_tokens=4096, concurrency=1), precision=PrecisionPlan(weights="fp8"),
             layout=Layout(gpus=8, tp=8), gpu=get_gpu("h200"))
    perf = plan_performance(p)
    assert perf["decode_tokens_per_s_per_user"] < 0.6 * perf["decode_tokens_per_s_per_user_ceiling"]


def test_fp4_training_runs_where_the_gpu_has_fp4_units() -> None:
    p = plan(load_model("llama-3.1-8b"), Workload(task="train", seq_tokens=4096, train_precision="fp4"),
             layout=Layout(gpus=8), gpu=get_gpu("b200"))
    assert p.fits and plan_performance(p)["compute_precision"] == "fp4"


def test_mi325x_is_not_slower_than_mi300x_under_tensor_parallelism() -> None:
    """Issue 11: MI325X's scale-up link was unknown, so TP fell back to PCIe and came out 3x slower than MI300X.
    Both have the same 8-GPU Infinity Fabric mesh; MI325X has more memory bandwidth (gpu_specs.md)."""
    model = load_model("llama-3.1-70b")

    def speed(gpu: str) -> float:
        p = plan(model, Workload(context_tokens=4096, concurrency=16), layout=Layout(gpus=8, tp=8), gpu=get_gpu(gpu))
        return float(plan_performance(p)["output_tokens_per_s"])

    assert speed("mi325x") >= speed("mi300x")


def test_recommend_results_carry_the_calibrated_band(capsys) -> None:
    data = run_json(capsys, "recommend", "llama-3.1-8b", "--context", "4096", "--concurrency", "16", "--term", "1month",
                    "--top", "3")
    for r in data["results"]:
        assert r["decode_tokens_per_s_total_low"] <= r["output_tokens_per_s"] <= r["decode_tokens_per_s_total_high"]
        assert r["prefill_s_low"] <= r["ttft_s"] <= r["prefill_s_high"]
    data = run_json(capsys, "recommend", "llama-3.1-8b", "--task", "train", "--tokens", "1e10", "--top", "3")
    for r in data["results"]:
        assert r["train_tokens_per_s_low"] <= r["train_tokens_per_s"] <= r["train_tokens_per_s_high"]
