"""Under expert parallelism a GPU (or MoE-TP group) reads only the experts of its own ``E / ep`` that the step's tokens
touch, and the MoE layer waits for the rank that touched the most (``experts.ep_touched_spread``). At a few tokens
that rank reads far more than the mean: DeepSeek-R1 (256 experts, top 8) at EP 8 and 4 tokens touches about 3.8 of
each rank's 32 experts on average, and about 6.6 on the busiest rank (a Monte Carlo of uniform routing below).

Rows this was found on: ``IM-DSR1-H200-TRT-1k-1k-C4/C16/C64`` (InferenceMAX, TensorRT-LLM 1.1.0rc2 on 8 x H200 with
``--tp_size 8 --ep_size 8``: InferenceMAX/InferenceMAX ``benchmarks/dsr1_fp8_h200_trt_slurm.sh`` @ ff7e462, via
``benchmarks/moe_small_batch_findings.md`` "Stop 51"), predicted 20 / 16 / 10% fast before it.
"""

from __future__ import annotations

import random

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.experts import busiest_rank_touched_share, ep_touched_spread
from anchorgpu.planner.speed.serving import ServingSetup, decode_step, routed_weight_bytes_share_per_gpu
from anchorgpu.planner.formats import format_for_model

R1 = load_model("deepseek-r1")
H200 = get_gpu("h200")


def _busiest_mean_drawn(experts: int, k: int, ep: int, tokens: int, trials: int = 4000) -> tuple[float, float]:
    """Uniform routing drawn: each token picks k distinct experts; the busiest rank's touched experts and the mean."""
    rng = random.Random(1234)
    local = experts // ep
    busiest = mean = 0.0
    for _ in range(trials):
        touched: set[int] = set()
        for _ in range(tokens):
            touched.update(rng.sample(range(experts), k))
        counts = [0] * ep
        for e in touched:
            counts[e // local] += 1
        busiest += max(counts)
        mean += sum(counts) / ep
    return busiest / trials, mean / trials


@pytest.mark.parametrize(("ep", "tokens"), [(8, 1), (8, 4), (8, 16), (8, 64), (4, 4), (2, 16)])
def test_the_busiest_ranks_share_follows_drawn_uniform_routing(ep: int, tokens: int) -> None:
    moe = R1.moe
    assert moe is not None and (moe.num_experts, moe.experts_per_token) == (256, 8)
    busiest, mean = _busiest_mean_drawn(256, 8, ep, tokens)
    p = 1.0 - (1.0 - 8 / 256) ** tokens
    local = 256 / ep
    assert mean == pytest.approx(p * local, rel=0.03)
    form = busiest_rank_touched_share(p, ep_touched_spread(R1, ep)) * local
    assert form == pytest.approx(busiest, rel=0.08)  # the normal approximation of the largest of ep binomials


def test_tp_alone_reads_the_mean_and_ep_the_busiest_rank() -> None:
    """DeepSeek-R1 on 8 H200 at 4 decodes: the roofline step's weight read under EP 8 (inside TP 8) exceeds TP 8's
    by the routed bytes times the busiest rank's extra share; with MoE TP every GPU reads the same slices."""
    weights = 84e9
    steps = {ep: decode_step(R1, H200, ServingSetup(weights_bytes_per_gpu=weights, kv_bytes_per_sequence_per_gpu=1e6,
                                                    precision="fp8", tp=8, ep=ep), batch=4, cached_tokens=1000,
                             ideal=True) for ep in (1, 8)}
    routed = routed_weight_bytes_share_per_gpu(R1, format_for_model(R1, "fp8"), tp=8, ep=8)
    assert routed == pytest.approx(routed_weight_bytes_share_per_gpu(R1, format_for_model(R1, "fp8"), tp=8, ep=1))
    p = 1.0 - (1.0 - 8 / 256) ** 4
    busiest, _ = _busiest_mean_drawn(256, 8, 8, 4)
    extra_bytes = weights * routed * (busiest / 32 - p)  # ~7 GB a step: 6.6 experts read against 3.8
    extra_s = steps[8].weights_s - steps[1].weights_s
    assert extra_s == pytest.approx(extra_bytes / H200.memory_bandwidth_bytes_per_s, rel=0.08)
    assert extra_s > 0.3 * steps[1].weights_s


def test_every_local_expert_touched_leaves_no_imbalance() -> None:
    """At a large batch every rank reads all its experts: EP and TP read the same bytes."""
    setup = {ep: ServingSetup(weights_bytes_per_gpu=84e9, kv_bytes_per_sequence_per_gpu=1e6, precision="fp8", tp=8,
                              ep=ep) for ep in (1, 8)}
    big = [decode_step(R1, H200, setup[ep], batch=4096, cached_tokens=1000, ideal=True).weights_s for ep in (1, 8)]
    assert big[1] == pytest.approx(big[0], rel=1e-6)
    assert busiest_rank_touched_share(1.0, ep_touched_spread(R1, 8)) == 1.0
