"""Properties and rules of the roofline functions (planner/performance.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorgpu.errors import InvalidWorkload
from anchorgpu.planner import performance as perf

LLAMA_70B = dict(name="llama-3.1-70b", layers=80, hidden=8192, heads=64, kv_heads=8, ffn=28672, vocab=128256,
                 gated=True, biases=False)


@settings(max_examples=60, deadline=None)
@given(batch=st.integers(1, 512), extra=st.integers(1, 512), context=st.integers(1, 32768))
def test_a_bigger_batch_raises_total_tokens_per_s_and_never_raises_per_user_tokens_per_s(
    model, gpus, batch, extra, context
) -> None:
    m = model(**LLAMA_70B)

    def step(b: int) -> perf.DecodeStep:
        return perf.decode_step(m, gpus["h100-sxm"], weights_bytes_per_gpu=m.params_total * 2 / 4,
                                kv_bytes_per_sequence_per_gpu=m.kv_bytes_per_token() * context / 4,
                                concurrency=b, context_tokens=context, tp=4)

    small, big = step(batch), step(batch + extra)
    assert big.tokens_per_s_total > small.tokens_per_s_total
    assert big.tokens_per_s_per_user <= small.tokens_per_s_per_user


@settings(max_examples=60, deadline=None)
@given(log_dp=st.integers(0, 8), more=st.integers(1, 8), tp=st.sampled_from([1, 2, 4, 8]),
       pp=st.sampled_from([1, 2, 4]), recompute=st.sampled_from(["none", "selective", "full"]),
       kind=st.sampled_from(["full", "lora"]))
def test_more_data_parallel_gpus_never_slow_training_when_gradient_sync_is_free_or_absent(
    model, gpus, log_dp, more, tp, pp, recompute, kind
) -> None:
    # LoRA syncs only its adapters (modelled as free); full training gets an ideal network here, so only
    # compute, TP traffic and the pipeline bubble remain. The global batch (512 sequences) stays fixed, so
    # more replicas mean fewer micro-batches each; replica counts are powers of two so it divides evenly.
    m = model(**LLAMA_70B)
    global_batch = 512

    def tokens_per_s(replicas: int) -> float:
        return perf.training_step(m, gpus["h100-sxm"], gpus=replicas * tp * pp, seq_tokens=4096, tp=tp, pp=pp,
                                  microbatches=global_batch // replicas, recompute=recompute, kind=kind,
                                  network_bytes_per_s=1e30, gpus_per_server=1024).tokens_per_s

    dp, bigger = 2**log_dp, 2 ** min(9, log_dp + more)
    assert tokens_per_s(bigger) >= tokens_per_s(dp) * (1 - 1e-12)


@settings(max_examples=40, deadline=None)
@given(dp=st.integers(2, 64), tp=st.sampled_from([1, 2, 8]), zero=st.sampled_from([0, 1, 3]))
def test_data_parallel_training_is_never_faster_than_its_replicas_summed(model, gpus, dp, tp, zero) -> None:
    m = model(**LLAMA_70B)

    def tokens_per_s(replicas: int) -> float:
        return perf.training_step(m, gpus["h100-sxm"], gpus=replicas * tp, seq_tokens=4096, tp=tp, zero=zero,
                                  microbatches=8).tokens_per_s

    assert tokens_per_s(dp) <= dp * tokens_per_s(1) * (1 + 1e-12)


def test_over_a_slow_network_a_second_replica_can_slow_full_training_and_the_model_says_so(model, gpus) -> None:
    # Two single-GPU VMs joined by a 25 Gb/s public network: syncing 16 GB of bf16 gradients each step takes
    # longer than one micro-batch computes. Recommendations must not treat such replicas as free.
    m = model(name="8b", layers=32, hidden=4096, heads=32, kv_heads=8, ffn=14336, vocab=128256, gated=True,
              biases=False)
    slow = dict(seq_tokens=4096, microbatches=1, gpus_per_server=1, network_bytes_per_s=25e9 / 8)
    one = perf.training_step(m, gpus["h100-sxm"], gpus=1, **slow)
    two = perf.training_step(m, gpus["h100-sxm"], gpus=2, **slow)
    assert two.tokens_per_s < one.tokens_per_s and two.dp_sync_exposed_fraction > 0.5
    fast = perf.training_step(m, gpus["h100-sxm"], gpus=16, seq_tokens=4096, gpus_per_server=8)  # 2M-token steps
    assert fast.dp_sync_exposed_fraction < 0.05


def test_full_recompute_costs_one_more_forward_pass(model) -> None:
    # +2*P*D with full recompute (formulas.md item 9): 8/6 of the matmul work of plain training.
    m = model(**LLAMA_70B)
    _, plain = perf.training_flops_per_token(m, 1, recompute="none")
    _, full = perf.training_flops_per_token(m, 1, recompute="full")
    p = perf.forward_matmul_params(m)
    assert full - plain == pytest.approx(2 * p, rel=1e-3)


def test_lora_training_skips_the_weight_gradient_matmuls(model) -> None:
    m = model(**LLAMA_70B)
    full, _ = perf.training_flops_per_token(m, 4096, kind="full")
    lora, _ = perf.training_flops_per_token(m, 4096, kind="lora")
    assert lora == pytest.approx(full * 2 / 3)


def test_fp8_is_computed_at_the_bf16_rate_with_a_warning_on_a_gpu_without_fp8(gpus) -> None:
    choice = perf.peak_for(gpus["a100-80gb"], "fp8")
    assert choice.precision == "bf16" and choice.flops_per_s == 312e12
    assert choice.warning is not None and choice.warning[0] == "fp8_without_hardware"


def test_fp8_uses_the_fp8_peak_where_hardware_has_it(gpus) -> None:
    choice = perf.peak_for(gpus["h100-sxm"], "fp8")
    assert (choice.precision, choice.flops_per_s, choice.warning) == ("fp8", 1979e12, None)


def test_fp4_weights_fall_back_to_bf16_compute_on_hopper(gpus) -> None:
    choice = perf.peak_for(gpus["h100-sxm"], perf.compute_precision_for_weights("nvfp4"))
    assert choice.precision == "bf16" and choice.warning is not None and choice.warning[0] == "fp4_weight_only_emulation"


def test_tp_over_a_pcie_only_gpu_uses_pcie_and_is_slower_than_nvlink(model, gpus) -> None:
    from dataclasses import replace

    m = model(**LLAMA_70B)
    pcie_gpu = replace(gpus["h100-sxm"], interconnect="none (PCIe only)", interconnect_bandwidth_bytes_per_s=None,
                       scaleup_domain_gpus=1)
    assert perf.tp_link(pcie_gpu, 4).kind == "pcie"
    fast = perf.prefill_s(m, gpus["h100-sxm"], 4096, tp=4)
    slow = perf.prefill_s(m, pcie_gpu, 4096, tp=4)
    assert slow > fast


def test_decode_becomes_compute_bound_at_a_large_enough_batch(model, gpus) -> None:
    m = model(**LLAMA_70B)
    step = perf.decode_step(m, gpus["h100-sxm"], weights_bytes_per_gpu=m.params_total * 2, concurrency=4096,
                            kv_bytes_per_sequence_per_gpu=0, context_tokens=1)
    assert step.bound == "compute"


def test_pipeline_bubble_follows_narayanan(model) -> None:
    assert perf.pipeline_bubble_fraction(8, 64) == pytest.approx(7 / 71)
    assert perf.pipeline_bubble_fraction(8, 64, virtual_stages=2) == pytest.approx(7 / 135)
    with pytest.raises(InvalidWorkload):
        perf.pipeline_bubble_fraction(0, 4)


def test_efficiencies_outside_zero_to_one_are_refused_with_one_line() -> None:
    with pytest.raises(InvalidWorkload, match="mfu=1.5"):
        perf.Efficiencies(mfu=1.5)


def test_training_estimate_reports_time_checkpoint_and_assumptions(model, gpus) -> None:
    m = model(name="7b", layers=32, hidden=4096, heads=32, ffn=11008, vocab=32000, gated=True, biases=False)
    est = perf.estimate_performance(m, gpus["h100-sxm"], task="train", gpus=64, weights_bytes_per_gpu=2 * m.params_total,
                                    train_tokens=10**12, master_and_optimizer_bytes_total=12 * m.params_total)
    assert est.train_tokens_per_s and est.train_time_s == pytest.approx(1e12 / est.train_tokens_per_s)
    assert est.checkpoint_bytes == 14 * m.params_total
    assert est.checkpoint_write_s == pytest.approx(14 * m.params_total / perf.DEFAULT_STORAGE_BYTES_PER_S)
    assert est.decode_tokens_per_s_total is None and est.assumptions


def test_moe_decode_at_batch_one_reads_only_a_fraction_of_the_experts() -> None:
    # Uniform routing of one token to k of E experts touches k/E of them.
    from anchorgpu.architectures.spec import ModelSpec, MoeSpec, ParamBreakdown

    params = ParamBreakdown(embeddings=0, position_embeddings=0, attention=0, mlp=0, experts=800, shared_experts=0,
                            router=0, norms=0, head=0)
    moe = ModelSpec(name="m", model_type="mixtral", family="m", num_layers=1, hidden_size=8, intermediate_size=0,
                    num_attention_heads=1, num_kv_heads=1, head_dim=8, vocab_size=1, max_context_tokens=8,
                    tie_word_embeddings=False, attention_kind="mha", gated_mlp=True, params=params, params_active=200,
                    linear_groups=(), layer_windows=(None,), moe=MoeSpec(num_experts=8, experts_per_token=2,
                    num_shared_experts=0, expert_intermediate_size=8, num_moe_layers=1))
    assert perf.moe_expert_fraction_read(moe, 1) == pytest.approx(0.25)
    assert perf.moe_expert_fraction_read(moe, 1000) == pytest.approx(1.0)


def test_every_warning_code_the_roofline_emits_is_in_the_planner_registry(gpus) -> None:
    from dataclasses import replace

    from anchorgpu.hardware.spec import Peak
    from anchorgpu.planner.warnings import WARNING_CODES

    no_fp8_peak = replace(gpus["h100-sxm"], peaks={**gpus["h100-sxm"].peaks, "fp8": Peak(status="unknown")})
    cases = [(gpus["a100-80gb"], "fp8"), (gpus["h100-sxm"], "fp4"), (no_fp8_peak, "fp8")]
    codes = {perf.peak_for(gpu, precision).warning[0] for gpu, precision in cases}
    assert codes <= set(WARNING_CODES)


def test_an_unknown_compute_precision_is_refused_with_one_line(gpus) -> None:
    with pytest.raises(InvalidWorkload, match="compute precision 'int3'"):
        perf.peak_for(gpus["h100-sxm"], "int3")
