"""Comparing two GPUs: ratios a / b, missing ratios explained, and statements that follow the numbers."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

import pytest

from anchorgpu.hardware import FEATURED_COMPARISONS, Workload, compare_gpus, comparison_to_json, get_gpu, workload_fit
from anchorgpu.units import GB


def test_h200_vs_h100_has_the_published_memory_and_bandwidth_ratios_and_the_same_compute() -> None:
    # gpu_specs.csv (S2, S4): H200 141 GB at 4.8 TB/s; H100 SXM 80 GB at 3.35 TB/s; both 989 TFLOP/s dense BF16
    c = compare_gpus(get_gpu("h200"), get_gpu("h100"))
    # memory as CUDA reports it: the H200's 141 GB is 150,109,880,320 bytes (139.80 GiB, measured on one:
    # benchmarks/device/h200_2026-12-04.json), the H100's 80 GB 85,017,624,576 bytes (79.18 GiB: prime-rl's H100
    # baselines, gpus.toml memory_runtime_sources)
    assert c.metric("memory_bytes").ratio == pytest.approx(150_109_880_320 / 85_017_624_576)
    assert c.metric("memory_bandwidth_bytes_per_s").ratio == pytest.approx(4.8 / 3.35)
    assert c.metric("bf16_flops_per_s").ratio == 1.0
    assert c.metric("fp8_flops_per_s").ratio == 1.0
    assert c.metric("interconnect_bandwidth_bytes_per_s").ratio == 1.0
    assert c.metric("tdp_w").ratio == 1.0
    text = " ".join(c.statements)
    assert "1.77x the memory" in text  # 139.80 / 79.18 GiB, CUDA's totals (above)
    assert "1.43x the tokens/s" in text
    assert "same dense BF16 throughput" in text


def test_ratios_are_first_over_second() -> None:
    forward = compare_gpus(get_gpu("b200"), get_gpu("h100"))
    backward = compare_gpus(get_gpu("h100"), get_gpu("b200"))
    for row in forward.metrics:
        if row.ratio is not None:
            assert backward.metric(row.metric).ratio == pytest.approx(1 / row.ratio)
    assert forward.metric("bf16_flops_per_s").ratio == pytest.approx(2250 / 989)  # S5 vs S2


def test_an_absent_precision_gives_no_ratio_and_says_which_side_lacks_it() -> None:
    c = compare_gpus(get_gpu("b200"), get_gpu("h100"))
    fp4 = c.metric("fp4_flops_per_s")
    assert fp4.ratio is None and fp4.a_status == "known" and fp4.b_status == "absent"
    assert fp4.note == "no ratio: second absent"
    assert any(s.startswith("FP4: only b200 computes in FP4 (NVFP4, MXFP4)") for s in c.statements)


def test_unknown_is_reported_as_unknown_not_absent() -> None:
    c = compare_gpus(get_gpu("mi355x"), get_gpu("mi300x"))
    assert c.metric("fp4_flops_per_s").b_status == "absent"
    # a multi-GPU link whose bandwidth no source gives is "unknown"; a card with no link at all is "none"
    unsourced = replace(get_gpu("mi325x"), interconnect_bandwidth_bytes_per_s=None)
    link = compare_gpus(unsourced, get_gpu("l40s")).metric("interconnect_bandwidth_bytes_per_s")
    assert (link.a_status, link.b_status) == ("unknown", "none")


def test_uncertain_inputs_mark_the_ratio_uncertain_on_the_right_side() -> None:
    c = compare_gpus(get_gpu("mi355x"), get_gpu("b200"))
    link = c.metric("interconnect_bandwidth_bytes_per_s")
    assert link.uncertain and link.a_uncertain and not link.b_uncertain  # 1,075? GB/s is secondary
    assert link.ratio == pytest.approx(1075 / 1800)
    assert any(s.startswith("Uncertain (Scale-up link (per GPU, bidirectional))") for s in c.statements)
    assert not compare_gpus(get_gpu("h200"), get_gpu("h100")).metric("bf16_flops_per_s").uncertain


def test_prices_are_compared_when_both_are_given_and_left_out_otherwise() -> None:
    priced = compare_gpus(get_gpu("h200"), get_gpu("h100"), price_a_usd_per_gpu_hour=Decimal("3.65"), price_b_usd_per_gpu_hour=Decimal("2.85"))
    assert priced.metric("price_usd_per_gpu_hour").ratio == pytest.approx(3.65 / 2.85)
    assert any(s.startswith("Price: h200 costs 1.28x per GPU-hour") for s in priced.statements)
    unpriced = compare_gpus(get_gpu("h200"), get_gpu("h100"), price_a_usd_per_gpu_hour=Decimal("3.65"))
    row = unpriced.metric("price_usd_per_gpu_hour")
    assert row.ratio is None and row.b_status == "unpriced"
    assert not any(s.startswith("Price:") for s in unpriced.statements)


def test_vendor_and_link_differences_are_spelled_out() -> None:
    text = " ".join(compare_gpus(get_gpu("mi300x"), get_gpu("l40s")).statements)
    assert "mi300x runs ROCm (gfx942), not CUDA" in text
    assert "l40s has no GPU-to-GPU link" in text
    assert "mi300x links 8 GPUs in one fast domain" in text


def test_different_fp4_formats_are_named() -> None:
    text = " ".join(compare_gpus(get_gpu("mi355x"), get_gpu("b200")).statements)
    assert "FP4 formats differ: mi355x supports MXFP4, MXFP6, b200 NVFP4, MXFP4" in text


def test_a_70b_model_fits_one_h200_but_not_one_h100_by_weights() -> None:
    weights = 70_553_706_496 * 2  # Llama-3.1-70B at bf16: params computed by transformers on the meta device (ARCH registry)
    w = Workload(name="llama-3.1-70b", task="inference", resident_bytes=weights, resident_label="weights at bf16", decode_bytes_per_token=weights)
    c = compare_gpus(get_gpu("h200"), get_gpu("h100"), workload=w)
    assert c.fits is not None
    h200, h100 = c.fits
    assert h200.fits_one_gpu and not h100.fits_one_gpu
    assert h100.min_gpus == 2
    # decode ceiling = bandwidth / bytes per token: 4.8e12 / 141.1e9 ~ 34 tokens/s; 3.35e12 / 141.1e9 ~ 24
    assert h200.decode_ceiling_tokens_per_s == pytest.approx(4.8e12 / weights)
    assert h100.decode_ceiling_tokens_per_s == pytest.approx(3.35e12 / weights)
    text = " ".join(c.statements)
    assert "fit on one h200" in text and "do not fit on one h100-sxm; they need at least 2 GPUs" in text
    assert "run 'anchorgpu plan'" in text


def test_training_workloads_say_that_data_parallel_replicas_do_not_pool_memory() -> None:
    w = Workload(name="7b", task="training", resident_bytes=7 * 10**9 * 16, resident_label="model states")
    c = compare_gpus(get_gpu("h100"), get_gpu("a100"), workload=w)
    assert c.fits is not None and c.fits[0].decode_ceiling_tokens_per_s is None
    assert "plain data parallelism never helps" in " ".join(c.statements)


def test_workload_fit_refuses_an_empty_workload() -> None:
    with pytest.raises(ValueError, match="resident_bytes must be positive"):
        workload_fit(get_gpu("h100"), Workload(name="x", task="inference", resident_bytes=0, resident_label="x"))


def test_memory_ratio_uses_usable_not_headline_memory() -> None:
    c = compare_gpus(get_gpu("b300"), get_gpu("b200"))
    # Both as CUDA reports them (gpus.toml memory_runtime_sources): the B300's 270 GB platform figure is 267.7 GiB to
    # torch (sgl-project/sglang#25225; 287,386,370,048 bytes, the lower edge of that rounding), the B200's 180 GB is
    # 191,503,138,816 bytes (prime-rl's B200 baseline); headlines 288 and 192 GB are not used
    assert c.metric("memory_bytes").ratio == pytest.approx(287_386_370_048 / 191_503_138_816)
    assert get_gpu("b300").memory_nominal_bytes == 270 * 2**30  # S5: the platform figure, read as GiB
    assert get_gpu("b300").memory_bytes / GB > 270  # 267.65 GiB is still more than 270 decimal GB


def test_b300_vs_b200_points_out_the_cut_in_fp64_and_int8() -> None:
    # gpu_specs.md section 3: B300 keeps B200's dense BF16/FP8 but cuts INT8 (154? TOPS) and FP64 (1.2 TF) hard
    text = " ".join(compare_gpus(get_gpu("b300"), get_gpu("b200")).statements)
    assert "FP64: b300 has far less (1.2 vs 37 TFLOP/s dense), so prefer b200" in text
    assert "INT8: b300 has far less (154? vs 4,500 TOP/s dense)" in text
    assert "same dense BF16 throughput" in text
    assert "b300 has 1.56x the dense FP4 throughput of b200" in text


def test_speed_statements_name_the_faster_gpu_first() -> None:
    text = " ".join(compare_gpus(get_gpu("h100-pcie"), get_gpu("h100")).statements)
    assert "h100-sxm has 1.31x the dense FP8 throughput of h100-pcie" in text  # 1979 / 1513 (S2)


@pytest.mark.parametrize(("a", "b"), FEATURED_COMPARISONS)
def test_the_featured_seed_comparisons_explain_capacity_decode_and_compute(a: str, b: str) -> None:
    c = compare_gpus(get_gpu(a), get_gpu(b))
    kinds = {s.split(":")[0] for s in c.statements}
    assert {"Capacity", "Decode"} <= kinds
    assert "Prefill and training" in kinds or "Prefill and training (compute bound)" in kinds
    data = comparison_to_json(c)
    assert data["a"]["name"] == a and data["b"]["name"] == b
    assert data["ratios"]["memory_bytes"] == pytest.approx(get_gpu(a).memory_bytes / get_gpu(b).memory_bytes)


def test_the_batch_1_decode_ceiling_of_a_model_split_over_gpus_counts_all_their_bandwidth() -> None:
    # Llama-3.1-70B at bf16 needs 2 H100: split by TP both read their half at once, so the ceiling is
    # 2 x 3.35e12 / 141.1e9 ~ 47 tokens/s (H100 SXM datasheet bandwidth), not one GPU's 24; PP stages stay at 24.
    weights = 70_553_706_496 * 2  # params as in the test above
    w = Workload(name="llama-3.1-70b", task="inference", resident_bytes=weights, resident_label="weights at bf16",
                 decode_bytes_per_token=weights)
    text = " ".join(compare_gpus(get_gpu("h200"), get_gpu("h100"), workload=w).statements)
    assert "near 47 tokens/s with the weights split by tensor parallelism over 2 GPUs (near 24 in pipeline stages" in text
    assert "do not fit on one h100-sxm; they need at least 2 GPUs (tensor or pipeline parallel); batch-1 decode is " \
           "capped near 24 tokens/s" not in text
    # in GiB, as the table gives the memory: 139.80 GiB (the H200's CUDA total, gpus.toml) less 131.42 GiB of weights;
    # was "150.1 GB", more than the 141 GB on the H200's datasheet
    assert "fit on one h200 (139.8 GiB), leaving 8.4 GiB for KV cache, activations and runtime; batch-1 decode is " \
           "capped near 34 tokens/s" in text
    assert "take 131.4 GiB and" in text


def test_a_runtime_total_beside_a_vendor_figure_is_said_to_be_of_another_kind() -> None:
    # B300: 267.7 GiB as torch reports it (sgl-project/sglang#25225); H800: the 80 GB of S25, no runtime report sourced
    # (the H20 was this example until its CUDA total was sourced)
    mixed = " ".join(compare_gpus(get_gpu("b300"), get_gpu("h800")).statements)
    assert "b300 has 3.35x the memory of h800 (268 GiB vs 80 GiB)" in mixed
    assert ("b300's memory is the total CUDA reports, h800's the vendor's usable figure (no runtime report is "
            "sourced; its runtime would report somewhat less).") in mixed
    # GB200 now has one too (184.31 GiB, XLA's gb200.txtpb device description): both runtime totals, nothing to say
    both = " ".join(compare_gpus(get_gpu("b300"), get_gpu("gb200")).statements)
    assert "b300 has 1.45x the memory of gb200 (268 GiB vs 184 GiB)" in both and "usable figure" not in both
    # both as CUDA reports them (H100 79.18 GiB, H200 139.80 GiB; gpus.toml memory_runtime_sources): nothing to say
    assert "the vendor's usable figure" not in " ".join(compare_gpus(get_gpu("h200"), get_gpu("h100")).statements)
