"""``anchorgpu gpus``, ``gpus NAME`` and ``gpus compare A B`` through ``anchorgpu.cli.main``."""

from __future__ import annotations

import pytest

from anchorgpu.hardware import list_gpus
from cli_runner import run, run_json

GPU_KEYS = {
    "name", "display_name", "aliases", "vendor", "architecture", "memory_bytes", "memory_headline", "memory_unit",
    "memory_type", "memory_bandwidth_bytes_per_s", "peaks", "fp8_hardware", "fp4_hardware", "interconnect",
    "interconnect_bandwidth_bytes_per_s", "form_factor", "tdp_w", "pcie_gen", "compute_capability",
    "rocm_gfx_target", "software_stack", "partitioning", "sources", "notes",
}


def test_gpus_lists_every_gpu_in_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "gpus")
    assert code == 0
    for gpu in list_gpus():
        assert gpu.name in out
    assert "14000?" in out  # B300 dense FP4 is uncertain (gpu_specs.csv: 14000?)
    assert "absent" in out and "unknown" in out


def test_gpus_json_lists_every_gpu_with_the_stable_keys(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "gpus")
    assert data["count"] == len(list_gpus()) == len(data["gpus"])
    assert data["data_version"] == "2026-11-29"  # header of hardware/data/gpus.toml
    for gpu in data["gpus"]:
        assert GPU_KEYS <= set(gpu), GPU_KEYS - set(gpu)
        for peak in gpu["peaks"].values():
            assert set(peak) == {"status", "flops_per_s", "uncertain"}
    h100 = next(g for g in data["gpus"] if g["name"] == "h100-sxm")
    assert h100["peaks"]["bf16"] == {"status": "known", "flops_per_s": 989 * 10**12, "uncertain": False}  # S2
    assert h100["peaks"]["fp4"] == {"status": "absent", "flops_per_s": None, "uncertain": False}
    assert h100["software_stack"] == "cuda" and h100["compute_capability"] == "9.0"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--vendor", "amd"), {"mi250x", "mi300x", "mi325x", "mi355x"}),
        (("--vendor", "AMD", "--fp4"), {"mi355x"}),
        (("--fp4",), {"b200", "b300", "gb200", "gb300", "rtx-pro-6000", "rtx-5090", "mi355x"}),  # gpu_specs.md table 2
        (("--min-memory-gb", "180"), {"b200", "b300", "gb200", "gb300", "mi300x", "mi325x", "mi355x"}),
        (("--fp8", "--min-memory-gb", "90", "--vendor", "nvidia"), {"h100-nvl", "h200", "h20", "b200", "b300", "gb200", "gb300", "rtx-pro-6000"}),
    ],
)
def test_filters_narrow_the_list(capsys: pytest.CaptureFixture[str], args: tuple[str, ...], expected: set[str]) -> None:
    data = run_json(capsys, "gpus", *args)
    assert {g["name"] for g in data["gpus"]} == expected


def test_fp8_filter_leaves_out_ampere(capsys: pytest.CaptureFixture[str]) -> None:
    names = {g["name"] for g in run_json(capsys, "gpus", "--fp8")["gpus"]}
    assert "a100-80gb-sxm" not in names and "a10g" not in names and "h100-sxm" in names


def test_sort_orders_largest_first_and_puts_unknowns_last(capsys: pytest.CaptureFixture[str]) -> None:
    by_memory = [g["name"] for g in run_json(capsys, "gpus", "--sort", "memory")["gpus"]]
    assert by_memory[:3] == ["mi355x", "gb300", "b300"]  # 288 GiB, then 279 and 270 GiB usable
    by_fp4 = [g["name"] for g in run_json(capsys, "gpus", "--sort", "fp4")["gpus"]]
    assert by_fp4[:3] == ["gb300", "b300", "mi355x"]  # 15,000, 14,000? then 10,100 dense FP4
    assert by_fp4[6:] and all(name not in ("b200", "gb200") for name in by_fp4[6:])
    by_name = [g["name"] for g in run_json(capsys, "gpus", "--sort", "name")["gpus"]]
    assert by_name == sorted(by_name)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("gpus", "--vendor", "intel"), "error: --vendor must be nvidia or amd, got 'intel'"),
        (("gpus", "--sort", "speed"), "error: --sort must be one of name, memory, bandwidth, bf16, fp8, fp4, tdp, got 'speed'"),
        (("gpus", "--min-memory-gb", "-1"), "error: --min-memory-gb -1: expected a finite number from 0 to 1,000,000"),
        (("gpus", "h100", "h200"), "error: 'gpus' takes at most one GPU name, got 2; to compare two, use 'anchorgpu gpus compare A B'"),
        (("gpus", "compare", "h100"), "error: 'gpus compare' takes exactly two GPU names, got 1"),
        (("gpus", "h100", "--model", "llama-3.1-8b"), "error: --model applies to 'gpus compare A B' only"),
        (("gpus", "compare", "h100", "h200", "--model", "llama-3.1-8b", "--task", "serving"), "error: --task must be one of inference, training, lora, qlora, got 'serving'; did you mean 'inference'?"),
    ],
)
def test_bad_input_exits_2_with_one_line(capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str) -> None:
    code, out, err = run(capsys, *args)
    assert code == 2
    assert err.strip() == message
    assert out == ""


def test_gpus_name_shows_one_gpu_with_uncertainty_visible(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "gpus", "RTX PRO 6000 Blackwell Server Edition")
    assert code == 0
    assert "rtx-pro-6000" in out
    assert "500? TFLOP/s (uncertain)" in out  # gpu_specs.csv: 500? (page does not say sparse or dense)
    assert "unknown (no usable source)" in out  # FP64: empty cell
    assert "1.6 TB/s" in out  # S13: 1,597 GB/s


def test_gpus_name_marks_uncertain_text_fields(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "gpus", "a10g")
    assert code == 0
    assert "PCIe Gen4 x16? (uncertain)" in out and "CUDA 8.6?" in out  # gpu_specs.csv: "Gen4 x16?", "8.6?"
    assert "TDP" in out and "unknown" in out


def test_gpus_name_says_absent_for_missing_hardware(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "gpus", "a100")
    assert code == 0
    assert "absent (no such hardware unit)" in out  # FP8 and FP4 on Ampere


def test_gpus_name_json_has_the_stable_keys_and_the_catalog_price_note(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "gpus", "H100-SXM5-80GB")
    assert GPU_KEYS <= set(data)
    assert data["name"] == "h100-sxm"
    assert data["memory_bandwidth_bytes_per_s"] == 3_350_000_000_000  # S2: 3.35 TB/s
    assert data["memory_unit"] == "GiB" and data["memory_headline"] == "80 GB"
    assert "catalog_price_usd_per_gpu_hour" in data and data["catalog_price_note"]
    assert data["source_details"]["S2"].startswith("NVIDIA H100")


def test_an_unknown_gpu_exits_3_with_one_line_and_suggestions(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "gpus", "h10")
    assert code == 3
    assert err == "error: unknown GPU 'h10'; did you mean 'h100-sxm', 'h20', 'h100-nvl'?\n"
    assert out == ""


def test_compare_with_an_unknown_gpu_exits_3(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "gpus", "compare", "h200", "h1000", "--json")
    assert code == 3
    assert err.startswith("error: unknown GPU 'h1000'; did you mean 'h100-sxm'")


def test_compare_prints_a_side_by_side_table_with_ratios_and_meaning(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "gpus", "compare", "h200", "h100")
    assert code == 0
    assert "h200 / h100-sxm" in out
    # 139.80 GiB (measured, benchmarks/device) / 79.18 GiB (CUDA's H100 total, gpus.toml); 4.8 / 3.35 TB/s
    assert "1.77x" in out and "1.43x" in out and "1.00x" in out
    assert "What it means:" in out
    assert "Decode:" in out


def test_compare_json_has_ratios_a_over_b(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "gpus", "compare", "h200", "h100")
    assert data["ratio_is"] == "a / b"
    assert data["a"]["name"] == "h200" and data["b"]["name"] == "h100-sxm"
    assert GPU_KEYS <= set(data["a"])
    ratios = data["ratios"]
    # CUDA's totals: measured H200 (benchmarks/device) vs the H100's from prime-rl's baselines (gpus.toml)
    assert ratios["memory_bytes"] == pytest.approx(150_109_880_320 / 85_017_624_576)
    assert ratios["memory_bandwidth_bytes_per_s"] == pytest.approx(4.8 / 3.35)
    assert ratios["bf16_flops_per_s"] == 1.0
    assert ratios["fp4_flops_per_s"] is None
    assert set(ratios) == {
        "memory_bytes", "memory_bandwidth_bytes_per_s", "bf16_flops_per_s", "fp8_flops_per_s", "fp4_flops_per_s",
        "interconnect_bandwidth_bytes_per_s", "tdp_w", "price_usd_per_gpu_hour",
    }
    assert data["statements"] and data["workload"] is None and data["fits"] is None
    assert set(data["price_notes"]) == {"a", "b"}


def test_compare_leaves_price_out_gracefully_when_the_catalog_has_none(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import anchorgpu.catalog

    monkeypatch.setattr(anchorgpu.catalog, "gpu_hour_price", lambda name: None)
    data = run_json(capsys, "gpus", "compare", "mi325x", "mi300x")
    price = next(m for m in data["metrics"] if m["metric"] == "price_usd_per_gpu_hour")
    assert price["ratio"] is None and price["a_status"] == "unpriced"
    assert data["price_notes"]["a"] == "not offered (or unpriced) in the AnchorGPU catalog"
    code, out, _ = run(capsys, "gpus", "compare", "mi325x", "mi300x")
    assert code == 0 and "Price: mi325x: not offered" in out


def test_compare_uses_the_catalog_price_when_there_is_one(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from decimal import Decimal

    import anchorgpu.catalog

    prices = {"h200": Decimal("3.65"), "h100-sxm": Decimal("2.85")}
    monkeypatch.setattr(anchorgpu.catalog, "gpu_hour_price", lambda name: prices[name])
    data = run_json(capsys, "gpus", "compare", "h200", "h100")
    assert data["ratios"]["price_usd_per_gpu_hour"] == pytest.approx(3.65 / 2.85)
    price = next(m for m in data["metrics"] if m["metric"] == "price_usd_per_gpu_hour")
    assert price["a"] == "3.65" and price["b"] == "2.85"  # money stays exact (decimal strings)


def test_compare_with_a_model_says_what_fits(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "gpus", "compare", "h200", "h100", "--model", "llama-3.1-70b")
    workload = data["workload"]
    assert workload["name"] == "llama-3.1-70b" and workload["task"] == "inference"
    # 70,553,706,496 parameters (ARCH registry, exact transformers count) x 2 bytes at bf16
    assert workload["resident_bytes"] == 70_553_706_496 * 2
    fits = {f["gpu"]: f for f in data["fits"]}
    assert fits["h200"]["fits_one_gpu"] is True and fits["h100-sxm"]["fits_one_gpu"] is False
    assert fits["h100-sxm"]["min_gpus"] == 2
    assert any("fit on one h200" in s for s in data["statements"])


def test_compare_with_an_fp8_model_halves_the_weights(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "gpus", "compare", "h100", "a100", "--model", "llama-3.1-70b", "--precision", "fp8")
    assert data["workload"]["resident_bytes"] == 70_553_706_496
    assert all(f["fits_one_gpu"] for f in data["fits"])
    assert any(s.startswith("FP8: only h100-sxm computes in FP8") for s in data["statements"])


def test_compare_without_a_precision_takes_the_shipped_checkpoint(capsys: pytest.CaptureFixture[str]) -> None:
    """DeepSeek-R1 ships FP8 with a scale per 128x128 block (its quantization_config): without --precision the
    comparison counts those weights, as `anchorgpu plan` stores them, not 16-bit ones (1.34 TB, twice as many GPUs)."""
    from anchorgpu.architectures import load_model
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner import Layout, Workload, plan

    data = run_json(capsys, "gpus", "compare", "h200", "h100", "--model", "deepseek-r1")
    one = plan(load_model("deepseek-r1"), Workload(task="inference", context_tokens=8192), layout=Layout(gpus=1),
               gpu=get_gpu("h200"))
    assert data["workload"]["resident_bytes"] == one.per_gpu.weights_bytes
    assert "fp8-block128x128 as the checkpoint ships them" in data["workload"]["resident_label"]
    assert data["plan"]["weights_format"] == "fp8-block128x128, as the checkpoint ships it"
    assert data["plan"]["per_gpu"]["h200"]["gpus_needed"] == 8  # plan deepseek-r1 --gpu h200 --context 8192
    bf16 = run_json(capsys, "gpus", "compare", "h200", "h100", "--model", "deepseek-r1", "--precision", "bf16")
    assert bf16["workload"]["resident_bytes"] == load_model("deepseek-r1").params_total * 2
    assert bf16["plan"]["per_gpu"]["h200"]["gpus_needed"] > 8


def test_compare_for_training_counts_model_states(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "gpus", "compare", "h100", "a100", "--model", "llama-3.1-8b", "--task", "training")
    assert data["workload"]["task"] == "training"
    assert data["workload"]["resident_bytes"] % 16 == 0  # 16 bytes per parameter (ZeRO paper, mixed-precision Adam)
    assert all(f["decode_ceiling_tokens_per_s"] is None for f in data["fits"])


def test_compare_with_an_unknown_model_exits_3(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "gpus", "compare", "h200", "h100", "--model", "llama-3.1-7b", "--json")
    assert code == 3
    assert err.startswith("error: unknown model 'llama-3.1-7b'; did you mean") and err.count("\n") == 1


def test_compare_with_a_model_runs_the_full_planner_for_both_gpus(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "gpus", "compare", "h200", "h100", "--model", "llama-3.1-70b", "--context", "8192")
    planned = data["plan"]
    assert planned["context_tokens"] == 8192 and planned["model"] == "llama-3.1-70b"
    h200, h100 = planned["per_gpu"]["h200"], planned["per_gpu"]["h100-sxm"]
    # weights alone (141.1 GB) exceed the serving budget of one GPU on both: 0.9 x 141 GiB and 0.9 x 80 GiB
    assert h200["one_gpu"]["fits"] is False and h100["one_gpu"]["fits"] is False
    assert h200["gpus_needed"] is not None and h100["gpus_needed"] is not None
    assert h200["gpus_needed"] <= h100["gpus_needed"]  # more memory per GPU never needs more GPUs
    assert any(s.startswith("Full plan (inference, context 8,192 tokens, weights bf16, as the checkpoint ships it)")
               for s in data["statements"])


def test_compare_for_training_says_what_plan_answers_without_a_gpu_count(capsys: pytest.CaptureFixture[str]) -> None:
    """The training count is the planner's own (the fewest GPUs that hold the job, the layout chosen on them), and
    the details command plans training at the compared sequence length, not serving."""
    data = run_json(capsys, "gpus", "compare", "h100", "mi300x", "--model", "llama-3.1-70b", "--task", "training")
    per_gpu, text = data["plan"]["per_gpu"], " ".join(data["statements"])
    for name in ("h100-sxm", "mi300x"):
        asked = run_json(capsys, "plan", "llama-3.1-70b", "--task", "train", "--seq", "8192", "--gpu", name)
        assert asked["fits"] and per_gpu[name]["gpus_needed"] == asked["layout"]["gpus"]
    assert per_gpu["h100-sxm"]["gpus_needed"] == 16  # 16 bytes a parameter: 8 H100 cannot hold it
    assert "Details: 'anchorgpu plan llama-3.1-70b --task train --seq 8192 --gpu h100-sxm'" in " ".join(text.split())


def test_compare_for_serving_says_what_plan_answers_without_a_gpu_count(capsys: pytest.CaptureFixture[str]) -> None:
    """Llama 3.1 405B in BF16 at 8,192 tokens: the count is the serving chooser's (16 H100, TP 8 x PP 2), where the
    compare tried 1-8 GPUs and said "not even 8 GPUs are enough"."""
    data = run_json(capsys, "gpus", "compare", "h100", "h200", "--model", "llama-3.1-405b", "--context", "8192")
    for name in ("h100-sxm", "h200"):
        asked = run_json(capsys, "plan", "llama-3.1-405b", "--context", "8192", "--gpu", name)
        assert asked["fits"] and data["plan"]["per_gpu"][name]["gpus_needed"] == asked["layout"]["gpus"]
    assert data["plan"]["per_gpu"]["h100-sxm"]["gpus_needed"] == 16


@pytest.mark.parametrize("context", ["0", "99999999999"])
def test_compare_refuses_a_context_outside_plans_bounds(capsys: pytest.CaptureFixture[str], context: str) -> None:
    # plan's bounds (validation.LIMITS["context"]): 99,999,999,999 was refused as beyond the model's limit with a
    # suggested `plan ... --allow-long-context` that plan itself refuses
    # and parsed as plan parses it: the same refusal, word for word
    code, _, err = run(capsys, "gpus", "compare", "h200", "h100", "--model", "llama-3.1-8b", "--context", context)
    assert code == 2 and err == f"error: --context '{context}': expected a whole number from 1 to 10,000,000\n"
    code, _, plan_err = run(capsys, "plan", "llama-3.1-8b", "--context", context)
    assert code == 2 and plan_err == err


@pytest.mark.parametrize("task", ["inference", "training"])
def test_compare_refuses_a_context_beyond_the_models_limit(capsys: pytest.CaptureFixture[str], task: str) -> None:
    # Llama 3.1 8B's limit is 131,072 tokens (its config's max_position_embeddings): plan refuses a longer one in one
    # line, and so does compare (was: "on h100-sxm no tried layout fits", pointing at a plan command that exits 2)
    code, out, err = run(capsys, "gpus", "compare", "h100", "l4", "--model", "llama-3.1-8b", "--task", task,
                         "--context", "200000")
    assert code == 2 and out == ""
    assert err.startswith("error: --context 200,000 exceeds llama-3.1-8b's limit of 131,072 tokens")
    assert err.count("\n") == 1


def test_compare_takes_plans_spelling_of_training(capsys: pytest.CaptureFixture[str]) -> None:
    # `anchorgpu plan --task train` is how plan names it; compare answered "--task must be one of inference, training"
    train = run_json(capsys, "gpus", "compare", "h100", "h200", "--model", "llama-3.1-8b", "--task", "train")
    training = run_json(capsys, "gpus", "compare", "h100", "h200", "--model", "llama-3.1-8b", "--task", "training")
    assert train["plan"]["task"] == "training" and train == training


def test_compare_with_a_diffusion_pipeline_plans_it_whole_on_each_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "gpus", "compare", "l40s", "rtx-4090", "--model", "flux.1-dev")
    assert data["workload"]["task"] == "diffusion" and data["workload"]["decode_bytes_per_token"] is None
    assert data["plan"]["tried_gpu_counts"] == [1] and data["plan"]["task"] == "diffusion"
    text = " ".join(data["statements"])
    assert "the VAE decode peak" in text and "KV cache" not in text
    assert "Full plan (diffusion at the pipeline's default resolution, weights bf16)" in text


def test_training_a_diffusion_pipeline_is_refused_with_a_reason(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "gpus", "compare", "l40s", "h100", "--model", "flux.1-dev", "--task", "training")
    assert code == 2 and err == "error: flux.1-dev is a diffusion pipeline: compare it for image generation (--task inference)\n"


def test_compare_counts_thousands_of_sequences_with_separators(capsys: pytest.CaptureFixture[str]) -> None:
    """T5-base's 512-token sequences: an H100 holds about two thousand at once; the sentence printed '1976', where
    every other count of the answer has its thousands separated."""
    doc = run_json(capsys, "gpus", "compare", "h100", "l40s", "--model", "t5-base")
    most = doc["plan"]["per_gpu"]["h100-sxm"]["one_gpu"]["max_concurrency"]
    assert most >= 1000
    code, out, _ = run(capsys, "gpus", "compare", "h100", "l40s", "--model", "t5-base")
    assert code == 0 and f"up to {most:,} sequences at once" in " ".join(out.split())
