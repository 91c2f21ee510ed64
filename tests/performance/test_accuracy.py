"""Our roofline estimates against published measurements (reference/published_figures.md, B and E).

Every test names its source, the tolerance band it holds and why. The roofline is a *ceiling* scaled by
default efficiencies (mfu 0.6, mbu 0.7); measured systems that fall short of it show up as positive errors.
The errors measured here are recorded in the README's accuracy table.
"""

from __future__ import annotations

import pytest

from anchorgpu.planner import performance as perf


def rel_err(ours: float, published: float) -> float:
    return ours / published - 1.0


# ------------------------------------------------------------------------------------------------ B


def test_six_p_d_gives_gpt3s_published_training_compute_within_two_tenths_of_a_percent(model) -> None:
    # Brown et al. 2020 (GPT-3), Table D.1: 3.14e23 FLOPs for 175B on 300B tokens; the paper says the 6*P*D
    # rule holds within 0.2%. Exact formula, so the band is the paper's own: 0.2%.
    gpt3 = model(name="gpt-3", layers=96, hidden=12288, heads=96, vocab=50257, learned_positions=2048, tied=True)
    flops = 6 * gpt3.params_total * 300e9
    assert abs(rel_err(flops, 3.14e23)) < 0.002  # measured: +0.09%


KORTHIKANTI = [
    # name, heads, hidden, layers, TP, PP, GPUs, global batch, micro-batch, MFU %, iteration s
    # Korthikanti et al. 2022 (arXiv 2205.05198), Tables 3 and 5 (selective recompute + sequence parallel),
    # A100-80GB, s = 2048, V = 51200.
    ("22B", 64, 6144, 48, 8, 1, 8, 4, 4, 41.5, 1.10),
    ("175B", 96, 12288, 96, 8, 8, 64, 64, 1, 51.4, 13.75),
    ("530B", 128, 20480, 105, 8, 35, 280, 280, 1, 56.0, 37.83),
    ("1T", 160, 25600, 128, 8, 64, 512, 512, 1, 56.3, 71.49),
]


def _korthikanti_model(model, heads: int, hidden: int, layers: int):
    return model(name="gpt", layers=layers, hidden=hidden, heads=heads, vocab=51200, learned_positions=2048,
                 tied=True, context=2048)


@pytest.mark.parametrize("row", KORTHIKANTI, ids=[r[0] for r in KORTHIKANTI])
def test_our_flops_count_turns_korthikantis_mfu_back_into_their_iteration_time(model, gpus, row) -> None:
    # Same source. MFU is model FLOPs / (time * GPUs * peak), so if our FLOPs per token match the paper's
    # (Narayanan et al. 2021 eq. 3, full-sequence attention), time = FLOPs / (GPUs * 312 TFLOP/s * MFU) must
    # reproduce the measured iteration time. Band 1%: only rounding of the published MFU (3 digits) remains.
    name, heads, hidden, layers, tp, pp, n, batch, micro, mfu_pct, iteration_s = row
    m = _korthikanti_model(model, heads, hidden, layers)
    model_flops, _ = perf.training_flops_per_token(m, 2048, recompute="selective")
    ours_s = batch * 2048 * model_flops / (n * 312e12 * mfu_pct / 100)
    assert abs(rel_err(ours_s, iteration_s)) < 0.01  # measured: +0.4%, -0.02%, +0.09%, -0.05%


@pytest.mark.parametrize("row", KORTHIKANTI, ids=[r[0] for r in KORTHIKANTI])
def test_predicted_iteration_time_with_default_efficiency_is_within_25_percent_of_korthikantis(model, gpus, row) -> None:
    # Same source. Here nothing is taken from the measurement: default mfu 0.6, the 1F1B bubble for the
    # published layout (v = 1) and un-overlapped TP all-reduces over NVLink. Band 25%: the paper's own
    # MFU spreads 41.5-56.3% across these four runs, so one efficiency cannot be closer than that spread.
    name, heads, hidden, layers, tp, pp, n, batch, micro, mfu_pct, iteration_s = row
    m = _korthikanti_model(model, heads, hidden, layers)
    step = perf.training_step(m, gpus["a100-80gb"], gpus=n, seq_tokens=2048, tp=tp, pp=pp, micro_batch=micro,
                              microbatches=batch // micro, recompute="selective")
    ours_s = batch * 2048 / step.tokens_per_s
    assert abs(rel_err(ours_s, iteration_s)) < 0.25  # measured: -16.3%, +5.3%, +11.6%, +10.8%


def test_llama3_405b_per_gpu_throughput_is_within_25_percent_of_metas_430_tflops(model, gpus) -> None:
    # Llama 3 paper (arXiv 2407.21783), Table 4: 430 TFLOP/s per GPU (43% BF16 MFU) on 8,192 H100 with
    # TP 8, PP 16, DP 64, s = 8,192, 32 sequences per DP rank per step. The paper used an interleaved
    # schedule whose depth it does not publish; we take plain 1F1B (v = 1), the pessimistic case, so the
    # band is asymmetric: -25% .. +10%.
    llama = model(name="llama-3.1-405b", layers=126, hidden=16384, heads=128, kv_heads=8, ffn=53248,
                  vocab=128256, gated=True, biases=False)
    assert llama.params_total == 405_853_388_800  # expected_params.json (transformers on the meta device)
    step = perf.training_step(llama, gpus["h100-sxm"], gpus=8192, seq_tokens=8192, tp=8, pp=16, micro_batch=1,
                              microbatches=32)
    achieved_tflops = step.predicted_mfu * 989
    assert -0.25 < rel_err(achieved_tflops, 430) < 0.10  # measured: -18.9% (349 TFLOP/s)


# ------------------------------------------------------------------------------------------------ E


def _kipply_13b(model):
    # kipply, "Transformer Inference Arithmetic": a 13B GPT-style model, L = 40, h = 5120 (OPT-13B shape).
    return model(name="13b", layers=40, hidden=5120, heads=40, vocab=50272, learned_positions=2048, tied=True)


@pytest.mark.parametrize(("tp", "published_ms"), [(1, 63.17), (2, 45.45)])
def test_prefill_of_512_tokens_on_a100_matches_kiplys_fastertransformer_figure_within_25_percent(
    model, gpus, tp, published_ms
) -> None:
    # kipply's FasterTransformer measurements, A100-40GB, fp16, 512-token context, batch 1: 63.17 ms (TP 1),
    # 45.45 ms (TP 2). Band 25%: prefill runs at whatever fraction of peak the kernels reach; our default
    # mfu 0.6 is one number for all GPUs and models.
    ours_ms = perf.prefill_s(_kipply_13b(model), gpus["a100-40gb"], 512, tp=tp) * 1e3
    assert abs(rel_err(ours_ms, published_ms)) < 0.25  # measured: +12.0% (TP 1), -16.4% (TP 2)


@pytest.mark.parametrize(("tp", "published_ms"), [(1, 22.0), (2, 13.5)])
def test_decode_step_on_a100_matches_kiplys_fastertransformer_figure_within_15_percent(
    model, gpus, tp, published_ms
) -> None:
    # Same source: 22.0 ms/token (TP 1), 13.5 ms/token (TP 2). Band 15%: decode at batch 1 is a memory
    # stream whose achieved fraction of bandwidth (mbu) varies 0.6-0.8 across engines.
    m = _kipply_13b(model)
    step = perf.decode_step(m, gpus["a100-40gb"], weights_bytes_per_gpu=2 * m.params_total / tp,
                            kv_bytes_per_sequence_per_gpu=m.kv_bytes_per_token() * 512 / tp, concurrency=1,
                            context_tokens=512, tp=tp)
    assert step.bound == "memory"
    assert abs(rel_err(step.step_s * 1e3, published_ms)) < 0.15  # measured: +9.1% (TP 1), -2.2% (TP 2)


def _static_batch_output_tokens_per_s(m, gpu, *, tp: int, batch: int, prompt: int, output: int) -> float:
    """Static batching: prefill the whole batch, then ``output`` decode steps with a growing cache."""
    total_s = perf.prefill_s(m, gpu, prompt, tp=tp, batch=batch, precision="fp8")
    slices = 16
    for i in range(slices):
        cached = prompt + (i + 0.5) * output / slices
        step = perf.decode_step(m, gpu, weights_bytes_per_gpu=m.params_total / tp,  # FP8: 1 byte per weight
                                kv_bytes_per_sequence_per_gpu=m.kv_bytes_per_token() * cached / tp,
                                concurrency=batch, context_tokens=int(cached), tp=tp, precision="fp8")
        total_s += step.step_s * output / slices
    return batch * output / total_s


def _llama2_70b(model):
    return model(name="llama-2-70b", layers=80, hidden=8192, heads=64, kv_heads=8, ffn=28672, vocab=32000,
                 gated=True, biases=False)


@pytest.mark.parametrize(
    ("prompt", "output", "published"), [(128, 128, 3317), (128, 2048, 2616), (2048, 128, 843), (2048, 2048, 1583)]
)
def test_llama_70b_fp8_tp4_output_throughput_is_a_ceiling_over_tensorrt_llm_0_5(model, gpus, prompt, output,
                                                                                published) -> None:
    # NVIDIA/TensorRT-LLM docs/source/performance.md (release 0.5.0): H100, FP8, LLaMA-70B, batch 64, TP 4,
    # static batching. Our figure is a roofline ceiling; that 2023 release reached 50-75% of it at TP 4 (it
    # loses more with long outputs: attention over a 2-4k cache at batch 64 ran below bandwidth). Band:
    # ours between 0.9x (a ceiling must not sit far below a measurement) and 2.1x the published figure.
    ours = _static_batch_output_tokens_per_s(_llama2_70b(model), gpus["h100-sxm"], tp=4, batch=64,
                                             prompt=prompt, output=output)
    assert 0.9 < ours / published < 2.1  # measured: 1.43x, 1.85x, 1.34x, 2.03x


def test_llama_7b_fp8_single_gpu_output_throughput_is_within_20_percent_of_tensorrt_llm(model, gpus) -> None:
    # Same source: LLaMA-7B, batch 64, TP 1, 128 in / 128 out: 9,193 output tokens/s. Band 20%: on one GPU
    # there is no all-reduce, so only kernel efficiency separates the ceiling from the measurement.
    llama7 = model(name="llama-7b", layers=32, hidden=4096, heads=32, ffn=11008, vocab=32000, gated=True,
                   biases=False)
    ours = _static_batch_output_tokens_per_s(llama7, gpus["h100-sxm"], tp=1, batch=64, prompt=128, output=128)
    assert abs(rel_err(ours, 9193)) < 0.20  # measured: +9.9%
