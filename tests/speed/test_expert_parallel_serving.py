"""Serving a mixture of experts with expert parallelism wider than TP (attention data parallelism: ``--tp 1 --dp 8
--ep 8``): each GPU's experts serve every replica of its EP group, and every MoE layer all-gathers the group's tokens
and reduce-scatters the experts' outputs: what vLLM does by default (vllm-project/vllm vllm/config/parallel.py,
``all2all_backend: All2AllBackend = "allgather_reducescatter"``) and TensorRT-LLM's CUTLASS MoE does under attention
data parallelism (NVIDIA/TensorRT-LLM tensorrt_llm/_torch/modules/fused_moe/fused_moe_cutlass.py,
``forward_chunk``: ``allgather`` of the quantised inputs, then ``reducescatter_or_allreduce``).

Before this was modelled, each replica was timed as if its own few tokens were all its experts saw: Llama 4 Maverick
on 8 H200 at 512 users came out at 141.7 ms a token with EP 8 against 49.0 ms with TP 8 (routed experts with half a
row each), and a plan's speed with ``--ep`` was not usable.
"""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.formats import get_format
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.links import ACTIVATION_BYTES, group_link
from anchorgpu.planner.speed.serving import (
    ServingSetup,
    decode_step,
    expert_rows_factor,
    routed_weight_bytes_share_per_gpu,
)
from anchorgpu.planner.weight_parts import model_weight_parts
from cli_runner import run_json

MODEL = load_model("qwen3-30b-a3b")
H200 = get_gpu("h200")


def _setup(*, tp: int, ep: int, replicas: int) -> ServingSetup:
    return ServingSetup(weights_bytes_per_gpu=10e9, kv_bytes_per_sequence_per_gpu=1e6, precision="fp8", tp=tp,
                        replicas=replicas, ep=ep)


def test_each_moe_layer_gathers_the_groups_tokens_and_scatters_the_outputs_back() -> None:
    """Each GPU of an 8-replica EP group receives the other 7 replicas' tokens (all-gather) and returns their outputs
    (reduce-scatter): 7 token sets each way per MoE layer, whatever the model's top-k. The all-to-all of each token's
    routed copies timed before moved 7/8 x k: the same for Qwen3-30B-A3B's top-8, an eighth of it for top-1."""
    batch = 16
    link, moe = group_link(H200, 8), MODEL.moe
    assert moe is not None
    message = batch * MODEL.hidden_size * ACTIVATION_BYTES
    rate = link.bytes_per_s * calibration().link_efficiency
    step = decode_step(MODEL, H200, _setup(tp=1, ep=8, replicas=8), batch=batch, cached_tokens=1000)
    # each collective's fixed cost: NCCL's all-gather / reduce-scatter over 8 H200s (stated.ep_exchange_latency_s)
    latency = calibration().ep_exchange_latency_s["h200"][8]
    assert step.communication_s == pytest.approx(2 * moe.num_moe_layers * (latency + 7 * message / rate),
                                                 rel=1e-9)
    # top-1 (Llama 4 Maverick): the same 7 token sets, not 7/8 of one routed copy
    maverick = load_model("llama-4-maverick-17b-128e-fp8")
    assert maverick.moe is not None and maverick.moe.experts_per_token == 1
    wide = decode_step(maverick, H200, _setup(tp=1, ep=8, replicas=8), batch=batch, cached_tokens=1000)
    big = batch * maverick.hidden_size * ACTIVATION_BYTES
    assert wide.communication_s == pytest.approx(2 * maverick.moe.num_moe_layers * (latency + 7 * big / rate),
                                                 rel=1e-9)
    # two replicas of TP 4 (EP 8): each GPU receives the other replica's tokens once
    half = decode_step(MODEL, H200, _setup(tp=4, ep=8, replicas=2), batch=batch, cached_tokens=1000)
    tp_only = decode_step(MODEL, H200, _setup(tp=4, ep=1, replicas=2), batch=batch, cached_tokens=1000)
    assert half.communication_s - tp_only.communication_s == pytest.approx(
        2 * moe.num_moe_layers * (latency + 1 * message / rate), rel=1e-9)
    # EP inside one TP group needs no all-to-all: the TP group already holds every token
    inside = decode_step(MODEL, H200, _setup(tp=8, ep=8, replicas=1), batch=batch, cached_tokens=1000)
    plain_tp = decode_step(MODEL, H200, _setup(tp=8, ep=1, replicas=1), batch=batch, cached_tokens=1000)
    assert inside.step_s == plain_tp.step_s


def test_the_experts_of_an_ep_group_see_every_replicas_tokens() -> None:
    """A GPU of an 8-wide EP group at 64 sequences a replica routes 512 tokens to its experts: its routed products
    run at the rows of 512 tokens (32 an expert, two 16-row tiles), not of 64 (4 an expert, part of one tile), which
    ``expert_rows_factor`` prices."""
    moe = MODEL.moe
    assert moe is not None
    cal = calibration()
    k = cal.stack(H200)
    route = moe.experts_per_token / moe.num_experts
    assert expert_rows_factor(8 * 64, route, k.moe_expert_half_tokens, cal.moe_tile_rows) < expert_rows_factor(
        64, route, k.moe_expert_half_tokens, cal.moe_tile_rows)
    wide = decode_step(MODEL, H200, _setup(tp=1, ep=8, replicas=8), batch=64, cached_tokens=1000)
    alone = decode_step(MODEL, H200, _setup(tp=1, ep=1, replicas=8), batch=64, cached_tokens=1000)
    assert wide.weights_s < alone.weights_s


def test_the_routed_share_of_a_gpus_weights_follows_the_split() -> None:
    bf16 = get_format("bf16")
    parts = model_weight_parts(MODEL, bf16)
    # of the bytes a step streams: the untied token embedding is gathered, not read (speed.lookup_tables)
    experts, total = parts.experts, parts.total - parts.embed
    share = routed_weight_bytes_share_per_gpu
    assert share(MODEL, bf16, tp=1, ep=1) == experts / total == share(MODEL, bf16, tp=4, ep=4)
    per_gpu = experts / 8
    assert share(MODEL, bf16, tp=1, ep=8) == pytest.approx(per_gpu / (per_gpu + total - experts))
    assert share(load_model("llama-3.1-8b"), bf16, tp=1, ep=1) == 0.0


def test_a_plan_with_attention_data_parallelism_and_ep_is_timed_as_one_ep_group(
        capsys: pytest.CaptureFixture[str]) -> None:
    base = ("plan", "llama-4-maverick-17b-128e-fp8", "--gpu", "h200", "--gpus", "8", "--prompt", "128",
            "--output-tokens", "128", "--concurrency", "512")
    tp = run_json(capsys, *base, "--tp", "8")["performance"]
    ep = run_json(capsys, *base, "--tp", "1", "--dp", "8", "--ep", "8")["performance"]
    # the same 512 tokens a step reach the same 128 experts either way; EP trades TP's all-reduces and narrow
    # products for all-to-alls and replicated attention weights, so neither is several times the other
    assert 0.5 < ep["tpot_s"] / tp["tpot_s"] < 1.5
    for perf in (tp, ep):
        assert perf["tpot_s_low"] <= perf["tpot_s"] <= perf["tpot_s_high"]
        assert perf["tpot_s_ceiling"] <= perf["tpot_s"]
    # the plan says how it timed the layout; a TP plan has no such line
    said = [line for line in ep["assumptions"] if line.startswith("expert parallelism over 8 GPUs")]
    assert len(said) == 1 and "8 replicas of its EP group" in said[0] and "the other 7 replicas' tokens" in said[0]
    assert "allgather_reducescatter" in said[0]
    assert not any(line.startswith("expert parallelism over") for line in tp["assumptions"])


def test_one_tokens_experts_each_get_one_row() -> None:
    """A token routed to ``k`` of ``E`` experts gives each of those ``k`` one row. Averaging its ``k`` copies over all
    ``E`` experts gave each ``k/E`` of a row, and priced the products as if every row were ``E/k`` times as costly."""
    route = 4 / 128  # gpt-oss-120b: top-4 of 128
    assert expert_rows_factor(1, route, 200.0) == pytest.approx(1.0 + 200.0)
    # with many tokens every expert runs, and each gets tokens * k / E rows
    assert expert_rows_factor(8192, route, 200.0) == pytest.approx(1.0 + 200.0 / (8192 * route))


def test_one_user_of_a_moe_is_not_priced_at_fractions_of_a_row() -> None:
    """gpt-oss-120b on one H200, one user of 1,000 + 1,000 tokens: 68 ms a token before the fix (97 times its roofline
    ceiling of 0.7 ms), when each of the token's 4 experts was priced at 4/128 of a row. One row each leaves the
    fixed per-layer costs and the products of four one-row experts: a few milliseconds."""
    from anchorgpu.planner import Workload, plan
    from anchorgpu.planner.speed.estimate import plan_performance

    p = plan(load_model("gpt-oss-120b"), Workload(prompt_tokens=1000, output_tokens=1000, concurrency=1),
             gpu=get_gpu("h200"))
    perf = plan_performance(p)
    assert perf["tpot_s"] < 10 * perf["tpot_s_ceiling"]
    assert perf["tpot_s"] > perf["tpot_s_ceiling"]


def test_the_readme_states_what_the_two_maverick_layouts_answer(capsys: pytest.CaptureFixture[str]) -> None:
    """The README's journey "A mixture of experts split by TP, or served with attention data parallelism and expert
    parallelism" gives both layouts' time per output token; they are the planner's own, to the millisecond."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    stated = re.search(r"about (\d+) ms a token against (\d+) ms with TP 8", readme)
    assert stated is not None
    base = ("plan", "llama-4-maverick-17b-128e-fp8", "--gpu", "h200", "--gpus", "8", "--prompt", "128",
            "--output-tokens", "128", "--concurrency", "512")
    ep = run_json(capsys, *base, "--tp", "1", "--dp", "8", "--ep", "8")["performance"]["tpot_s"]
    tp = run_json(capsys, *base, "--tp", "8")["performance"]["tpot_s"]
    assert (int(stated.group(1)), int(stated.group(2))) == (round(ep * 1e3), round(tp * 1e3))



def test_tensorrt_llm_gathers_fp8_and_nvfp4_inputs_quantised() -> None:
    """TensorRT-LLM's CUTLASS MoE quantises the inputs before its attention-DP all-gather (``forward_chunk``:
    ``static_quantize_e4m3_per_tensor`` for FP8, ``fp4_quantize`` for NVFP4, then ``allgather``) and reduce-scatters
    16-bit outputs: with FP8 weights a collective moves (1 + 2) / 4 of a 16-bit token set on average, with NVFP4
    (0.5625 + 2) / 4. vLLM's all-gather carries the 16-bit hidden states."""
    from anchorgpu.planner.speed.serving import ep_gather_bytes

    assert ep_gather_bytes("trtllm", "fp8") == 1.0
    assert ep_gather_bytes("trtllm", "nvfp4") == 0.5625
    assert ep_gather_bytes("trtllm", "fp8-block128x128") == 2.0  # DeepSeek's block scales: gathered in 16 bit
    assert ep_gather_bytes("vllm", "nvfp4") == 2.0
    batch = 16
    link, moe = group_link(H200, 8), MODEL.moe
    assert moe is not None
    message = batch * MODEL.hidden_size * ACTIVATION_BYTES
    rate = link.bytes_per_s * calibration().link_efficiency
    setup = ServingSetup(weights_bytes_per_gpu=10e9, kv_bytes_per_sequence_per_gpu=1e6, precision="fp8", tp=1,
                         replicas=8, ep=8, ep_gather_bytes=1.0)
    step = decode_step(MODEL, H200, setup, batch=batch, cached_tokens=1000)
    assert step.communication_s == pytest.approx(
        2 * moe.num_moe_layers * (calibration().ep_exchange_latency_s["h200"][8] + 7 * 0.75 * message / rate),
        rel=1e-9)


def test_a_tensorrt_llm_plan_with_attention_dp_times_its_quantised_gather(capsys: pytest.CaptureFixture[str]) -> None:
    base = ("plan", "qwen3-235b-a22b", "--gpu", "h200", "--gpus", "8", "--weights", "fp8", "--prompt", "1000",
            "--output-tokens", "1000", "--concurrency", "256", "--tp", "1", "--dp", "8", "--ep", "8")
    vllm = run_json(capsys, *base)["performance"]
    trt = run_json(capsys, *base, "--engine", "trtllm")["performance"]
    said = [line for line in trt["assumptions"] if line.startswith("expert parallelism over 8 GPUs")]
    assert len(said) == 1 and "gathered at 1 byte a value" in said[0]
    assert not any("byte a value" in line for line in vllm["assumptions"])


def test_the_replicas_of_an_ep_group_step_together_so_any_ones_prompt_chunk_holds_all() -> None:
    """vLLM's data-parallel ranks of a MoE align their forward passes ("Forward passes must be aligned, and expert
    layers across all ranks are required to synchronize during every forward pass": vLLM docs, serving/
    data_parallel_deployment): with 8 replicas each carrying a prompt chunk in a share s of its steps, the group's step
    carries one in 1 - (1 - s)^8 of them. At 16 sequences a replica of 1,000-token prompts and 1,000-token answers, a
    replica's 16 prompt tokens a step come as one 1,000-token chunk in 1.6% of its steps; the group's, 12.1%. Such a
    step's experts serve the 8 replicas' 16 decodes each and the chunks the step holds, 8 x 1.6% / 12.1% = 1.06 of
    them on average, not a chunk from every replica (what the step came to before: 8,128 tokens for the experts
    where the group brings about 1,190)."""
    from anchorgpu.planner.speed.batching import _steady, prefill_chunk_share
    from anchorgpu.planner.speed.calibration import calibration as cal_of
    from anchorgpu.planner.speed.flops import attention_flops_per_token
    from anchorgpu.planner.speed.serving import _step
    from anchorgpu.planner.speed.step_constants import _pair

    cal = cal_of()
    setup = _setup(tp=1, ep=8, replicas=8)
    c, ci = _pair(MODEL, H200, setup, cal)
    attn = (attention_flops_per_token(MODEL, 2 * 1500, causal=True), attention_flops_per_token(MODEL, 1000, causal=True))
    chunk, share = prefill_chunk_share(16, 1000, 1000, setup.max_num_batched_tokens)
    assert share == pytest.approx(0.016)
    group = 1 - (1 - share) ** 8
    assert group == pytest.approx(0.121, abs=1e-3)
    chunks = 8 * share / group
    assert chunks == pytest.approx(1.06, abs=0.01)
    ratio = (16 + chunks * chunk / 8) / (16 + chunk)  # the group's tokens per replica over the chunk carrier's
    assert 8 * (16 + chunk) * ratio == pytest.approx(128 + chunks * 1000)
    skip = 1 - 1 / 1000  # the LM head at each 1,000-token prompt's last token only (flops.unsampled_prompt_share)
    mixed = _step(setup, c, 16, chunk, attn[0], attn[1], one_chunk=True, group_ratio=ratio, head_skip=skip)[0]
    assert mixed < _step(setup, c, 16, chunk, attn[0], attn[1], one_chunk=True, head_skip=skip)[0]  # 8 chunks' work
    plain = _step(setup, c, 16, 0.0, attn[0], 0.0, head_skip=0.0)[0]
    step = _steady(setup, c, ci, 16, 1000, 1000, attn)[0]
    assert step == pytest.approx(group * mixed + (1 - group) * plain, rel=1e-12)
    # a replica on its own (no EP group) keeps its own share
    alone = _setup(tp=1, ep=1, replicas=8)
    ca, cia = _pair(MODEL, H200, alone, cal)
    mixed_a = _step(alone, ca, 16, chunk, attn[0], attn[1], one_chunk=True, head_skip=skip)[0]
    plain_a = _step(alone, ca, 16, 0.0, attn[0], 0.0, head_skip=0.0)[0]
    assert _steady(alone, ca, cia, 16, 1000, 1000, attn)[0] == pytest.approx(
        share * mixed_a + (1 - share) * plain_a, rel=1e-12)


def test_the_lighter_replicas_of_an_ep_group_keep_the_busiest_ones_pace() -> None:
    """509 users over 8 replicas: five run 64 sequences and three run 63. Replicas on their own run their 63 at
    their own, faster pace; the replicas of one EP group step together, so all of them emit a token a step at the
    busiest one's pace: 509 tokens a step. The step is the steady state with every user's prompt (the tokens/s in
    all pays them); a user's time between its tokens carries the other users' prompts only (others_output_tokens)."""
    from anchorgpu.planner.speed.batching import _attention_flops, _steady, others_output_tokens, serving_estimate
    from anchorgpu.planner.speed.calibration import calibration as cal_of
    from anchorgpu.planner.speed.step_constants import _pair

    wide = _setup(tp=1, ep=8, replicas=8)
    est = serving_estimate(MODEL, H200, wide, prompt_tokens=1000, output_tokens=1000, concurrency=509,
                           saturation_concurrency=4096)
    assert est.per_replica == 64
    c, ci = _pair(MODEL, H200, wide, cal_of())
    attn = _attention_flops(MODEL, c, 1000, 1000, cal_of())
    even = 1 - 3 / 8 * (1 - 63 / 64)  # three of eight replicas bring 63 of the busiest one's 64 (_pass_outputs_ratio)
    step = _steady(wide, c, ci, 64, 1000, 1000, attn, even)[0]
    assert est.output_tokens_per_s == pytest.approx(509 / step, rel=1e-12)
    between = others_output_tokens(64, 1000)
    assert est.tpot_s == pytest.approx(_steady(wide, c, ci, 64, 1000, between, attn, even)[0], rel=1e-12)
    assert est.tpot_s < step
    alone = _setup(tp=1, ep=1, replicas=8)
    own = serving_estimate(MODEL, H200, alone, prompt_tokens=1000, output_tokens=1000, concurrency=509,
                           saturation_concurrency=4096)
    assert own.output_tokens_per_s > 509 / own.tpot_s



def test_lighter_replicas_of_an_ep_group_emit_what_their_passes_hold() -> None:
    """Long prompts and one output token each (8,000 / 1): every replica's prompts fill each pass's token budget, so
    a replica with a user fewer emits as many tokens a pass as the busiest one. Held to the busiest one's tokens a
    step, 31 users over 4 replicas (8, 8, 8, 7) came out slower than 8 users (2 each), and 5 users (2, 1, 1, 1)
    slower than 4: ``benchmarks/speed_invariants.py`` found 32 such plans (DeepSeek-V2-Lite on 8 H200 with TP 2,
    EP 8, TensorRT-LLM: 61.91 output tokens/s at 8 users, 61.84 at 31). Where decodes fill the passes, the lighter
    replicas still keep the busiest pace (the test above)."""
    from anchorgpu.planner.speed.batching import _pass_outputs_ratio, serving_estimate

    wide = _setup(tp=2, ep=8, replicas=4)
    assert _pass_outputs_ratio(wide, 7, 8, 8000, 1) == 1.0
    assert _pass_outputs_ratio(wide, 7, 8, 1000, 1000) == pytest.approx(7 / 8)
    estimates = [serving_estimate(MODEL, H200, wide, prompt_tokens=8000, output_tokens=1, concurrency=c,
                                  saturation_concurrency=4096) for c in range(1, 41)]
    rates = [e.output_tokens_per_s for e in estimates]
    assert all(b >= a * (1 - 1e-12) for a, b in zip(rates, rates[1:], strict=False))
    five = estimates[4]
    assert five.per_replica == 2 and five.output_tokens_per_s > estimates[3].output_tokens_per_s


def test_an_ep_groups_experts_serve_the_users_it_has() -> None:
    """9 users over 8 replicas of an EP group (one runs 2, seven run 1): the group's experts serve 9 tokens a step and
    each GPU gathers the 8 others', not 8 x 2 = 16 as if every replica ran the busiest one's 2. So the ninth user
    adds a little to the step and the group's output rises; counted as 16, the step of Llama 4 Maverick on 8 H200 at
    1,000 / 1,000 came out 15% longer and the output fell from 945 to 927 tokens/s."""
    from anchorgpu.planner import Layout, Workload, plan
    from anchorgpu.planner.speed.estimate import plan_performance

    maverick, h200 = load_model("llama-4-maverick-17b-128e-fp8"), get_gpu("h200")

    def perf(users: int) -> dict[str, float]:
        p = plan(maverick, Workload(prompt_tokens=1000, output_tokens=1000, concurrency=users),
                 layout=Layout(gpus=8, tp=1, dp=8, ep=8), gpu=h200)
        return plan_performance(p)

    eight, nine, sixteen = perf(8), perf(9), perf(16)
    assert nine["output_tokens_per_s"] > eight["output_tokens_per_s"]
    assert eight["tpot_s"] < nine["tpot_s"] < 1.1 * eight["tpot_s"] < sixteen["tpot_s"]
    rates = [perf(users)["output_tokens_per_s"] for users in range(1, 41)]
    assert all(b > a for a, b in zip(rates, rates[1:], strict=False))


def test_a_prompt_chunk_is_gathered_by_every_other_gpu_of_the_group() -> None:
    """A step where one replica of the EP group carries a prompt chunk: the other GPUs gather that chunk, and the
    all-gather lasts as long as their gathering, not the carrier's (which gathers only the others' decodes). Timed from
    the carrier's side, gpt-oss-20b over 16 B200 (TP 1, EP 16: the group's link is the network) at 4,000 / 4,000
    tokens emitted 80.7k tokens/s at 4,096 users and 73.1k at its 13,504-user saturation: every prompt token is
    gathered once whatever the load, so the saturating load cannot run slower than a smaller one."""
    from anchorgpu.planner import Layout, Workload, plan
    from anchorgpu.planner.speed.estimate import plan_performance

    gpt_oss, b200 = load_model("gpt-oss-20b"), get_gpu("b200")
    p = plan(gpt_oss, Workload(prompt_tokens=4000, output_tokens=4000, concurrency=4096, engine="trtllm"),
             layout=Layout(gpus=16, tp=1, dp=16, ep=16), gpu=b200)
    perf = plan_performance(p)
    assert perf["saturation_concurrency"] > 4096
    assert perf["max_output_tokens_per_s"] >= perf["output_tokens_per_s"]


def test_over_pipeline_stages_a_lighter_replica_runs_a_micro_batch_fewer() -> None:
    """Qwen3-30B-A3B on 8 L40S as 4 replicas of 2 pipeline stages with EP 4: at 5 users one replica runs 2 sequences
    (2 micro-batches of 1) and the others 1. The others' one micro-batch is as full as the busiest replica's first, and
    its way through both stages sets the pace, so the step is no shorter than at 4 users; averaged over the
    micro-batches, the group's tokens came out 10% lighter and the time per token fell from 14.9 to 13.5 ms."""
    from anchorgpu.planner import Layout, Workload, plan
    from anchorgpu.planner.speed.estimate import plan_performance

    l40s = get_gpu("l40s")

    def tpot(users: int) -> float:
        p = plan(MODEL, Workload(prompt_tokens=1000, output_tokens=300, concurrency=users),
                 layout=Layout(gpus=8, tp=1, pp=2, dp=4, ep=4), gpu=l40s)
        return float(plan_performance(p)["tpot_s"])

    times = [tpot(users) for users in range(1, 13)]
    assert all(b >= a * (1 - 1e-12) for a, b in zip(times, times[1:], strict=False))
