"""How a training step's expert-parallel dispatch is timed (``collectives.expert_dispatch_s``, read by
``micro_step``): across servers the network hop and the scale-up hop run at once (DeepSeek-V3 technical report,
arXiv:2412.19437, section 3.2.2: "communications via IB and NVLink are fully overlapped"; DeepEP's internode
kernels run their RDMA senders, forwarders and NVLink receivers as concurrent warp roles), so the slower hop sets
the time; and DeepEP (Megatron-Core's flex dispatcher) sends a token once to each rank holding any of its experts
(``is_token_in_rank`` of its dispatch layout), where the all-to-all dispatcher sends one permuted copy per routed
expert (benchmarks/hardening/stop60_mztrain.md)."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.experts import ranks_reached
from anchorgpu.planner.speed.links import all_to_all_s, expert_dispatch_s, group_link, p2p_s
from anchorgpu.planner.speed.runs import load_runs, predict
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import training_step

H100 = get_gpu("h100")
NIC = 50e9  # 400 Gb/s a GPU, the model zoo's InfiniBand 8 x 50 GB/s a server


def _qwen3_235b() -> ModelSpec:
    model = load_model("qwen3-235b-a22b")
    assert isinstance(model, ModelSpec)
    return model


def test_across_servers_the_dispatch_takes_the_slower_hop_not_their_sum() -> None:
    token, tokens, k, ep = 4096 * 2.0, 2048, 8, 32  # MZ-Q235-H100-EP32: TP 2's half of 4,096 tokens, EP over 4 servers
    servers = ep // 8
    remote = (servers - 1) * (1 - (1 - 1 / servers) ** k)  # other servers a token reaches, uniform routing
    network = p2p_s(token * tokens * remote, group_link(H100, ep, gpus_per_server=8, network_bytes_per_s=NIC))
    scaleup = all_to_all_s(token * tokens * k, 8, group_link(H100, 8, gpus_per_server=8, network_bytes_per_s=NIC))
    got = expert_dispatch_s(token, tokens, k, ep, H100, gpus_per_server=8, network_bytes_per_s=NIC,
                            overlapped_hops=True)
    assert got == pytest.approx(max(network, scaleup))
    # a dispatcher not known to pipeline the hops (a plan's default, Megatron-Core's all-to-all) keeps their sum
    assert expert_dispatch_s(token, tokens, k, ep, H100, gpus_per_server=8,
                             network_bytes_per_s=NIC) == pytest.approx(network + scaleup)


def test_deepep_sends_a_token_once_to_each_rank_it_reaches() -> None:
    model = _qwen3_235b()
    token, tokens, link = 4096 * 2.0, 4096, group_link(H100, 8, gpus_per_server=8)
    rows = ranks_reached(model, 8)  # 5.34 of 8 ranks for 8 of 128 experts
    got = expert_dispatch_s(token, tokens, 8, 8, H100, gpus_per_server=8, network_bytes_per_s=NIC, rows_per_token=rows)
    assert got == pytest.approx(all_to_all_s(token * tokens * rows, 8, link))
    assert got < expert_dispatch_s(token, tokens, 8, 8, H100, gpus_per_server=8, network_bytes_per_s=NIC)


def test_a_step_with_deepep_moves_ranks_reached_rows_where_all_to_all_moves_top_k() -> None:
    model = _qwen3_235b()
    lay = TrainLayout(gpus=64, tp=4, pp=2, dp=8, ep=8, zero=1)

    def ep_s(dispatcher: str) -> float:
        return training_step(model, H100, lay, seq_tokens=16384, global_batch_tokens=64 * 16384,
                             moe_dispatcher=dispatcher).breakdown_s["ep_alltoall"]  # type: ignore[arg-type]

    # the byte share of each exchange scales by ranks reached over top-k; the link's fixed latency does not
    ratio = ep_s("deepep") / ep_s("alltoall")
    assert ranks_reached(model, 8) / 8 < ratio < ranks_reached(model, 8) / 8 + 0.02


@pytest.mark.parametrize("row_id", ["MZ-Q235-H100-EP32", "MZ-Q235-H100-EP8-FSDP"])
def test_the_model_zoo_deepep_step_rows_come_within_ten_percent(row_id: str) -> None:
    """yanring/Megatron-MoE-ModelZoo best_practice/Qwen3/readme.md (c1ad0b5c), 256 H100, DeepEP: EP 32 across servers
    19.7 s a step (+18.3% with the hops summed and a row per routed expert), EP 8 with FSDP 17.6 s (+14.7%)."""
    run = next(r for r in load_runs() if r.id == row_id)
    assert abs(predict(run) / run.value - 1) <= 0.10


def _tp_s(name: str, ep: int, recompute: str = "none") -> float:
    model = load_model(name)
    assert isinstance(model, ModelSpec)
    lay = TrainLayout(gpus=64, tp=4, dp=16, ep=ep, zero=1)
    return training_step(model, H100, lay, seq_tokens=4096, global_batch_tokens=64 * 4096,
                         recompute=recompute).breakdown_s["tp_comm"]  # type: ignore[arg-type]


def test_under_ep_a_moe_layer_pays_only_its_attentions_tp_traffic() -> None:
    """Megatron-Core's MoELayer takes its sequence-parallel shard of the tokens as it is (it refuses TP without
    sequence parallelism in training) and the dispatchers gather over the expert-TP group only when it is larger
    than 1; under EP the planner's experts are not split by TP, so Qwen3-235B-A22B's layers (all MoE, no shared
    expert) pay the attention's two TP volumes where a dense MLP's layer pays four; recomputing the MoE blocks adds
    none, recomputing whole layers the attention's one. DeepSeek-V3's shared expert is a TP-split MLP: it keeps
    its gather and scatter, and only the three dense layers' share differs from EP 1."""
    assert _tp_s("qwen3-235b-a22b", 8) == pytest.approx(_tp_s("qwen3-235b-a22b", 1) * 2 / 4)
    assert _tp_s("qwen3-235b-a22b", 8, "moe") == pytest.approx(_tp_s("qwen3-235b-a22b", 1, "moe") * 2 / 5)
    assert _tp_s("qwen3-235b-a22b", 8, "full") == pytest.approx(_tp_s("qwen3-235b-a22b", 1, "full") * 3 / 6)
    assert _tp_s("deepseek-v3", 8) == pytest.approx(_tp_s("deepseek-v3", 1))
