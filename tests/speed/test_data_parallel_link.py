"""A data-parallel group across servers leaves each server through every member's NIC (``links.data_parallel_link``):
NCCL's rings use one channel a NIC on rail-optimised clusters, so a group with eight members a server moves eight NICs'
bytes, up to the server's own scale-up link; a group with one member a server (TP 8) has one NIC."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.links import data_parallel_link, group_link
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import training_step

H100 = get_gpu("h100")
NIC = 50e9  # 400 Gb/s a GPU


def test_members_multiply_the_nic_up_to_the_scale_up_link() -> None:
    one = group_link(H100, 64, network_bytes_per_s=NIC)
    assert one.kind == "network" and one.bytes_per_s == NIC
    assert data_parallel_link(H100, 64, 1, network_bytes_per_s=NIC) == one
    assert data_parallel_link(H100, 64, 4, network_bytes_per_s=NIC).bytes_per_s == 4 * NIC
    # eight 400 Gb/s NICs (400 GB/s) pass NVLink 4's 450 GB/s a direction only with faster NICs
    assert data_parallel_link(H100, 64, 8, network_bytes_per_s=NIC).bytes_per_s == 8 * NIC
    assert data_parallel_link(H100, 64, 8, network_bytes_per_s=100e9).bytes_per_s == H100.interconnect_bandwidth_bytes_per_s / 2


def test_inside_one_server_nothing_changes() -> None:
    assert data_parallel_link(H100, 8, 8) == group_link(H100, 8)


def _sync_s(tp: int) -> float:
    model = load_model("llama-3.1-8b")
    lay = TrainLayout(gpus=64, tp=tp, pp=1, dp=64 // tp, zero=1)
    st = training_step(model, H100, lay, seq_tokens=4096, micro_batch=1, global_batch_tokens=64 // tp * 4096,
                       network_bytes_per_s=NIC)
    return st.breakdown_s["dp_sync"]


def test_a_group_with_more_members_a_server_syncs_faster() -> None:
    """Llama 3.1 8B, one micro-batch a step over 8 servers: with TP 8 each group has one member a server (one NIC);
    with TP 1, eight. The parameters a GPU reduces are 8 times more at TP 1, and so are its NICs."""
    tp8, tp1 = _sync_s(8), _sync_s(1)
    assert tp8 > 0.0
    assert tp1 < 2 * tp8  # one NIC for eight times the bytes would be several times tp8's


def test_attention_data_parallelism_over_two_servers_gathers_through_every_nic() -> None:
    """Qwen3-235B-A22B served as 16 attention replicas with EP 16 over two H100 servers: the MoE layers' all-gather
    and reduce-scatter of the group's tokens run at the eight NICs of each server (the stated network a GPU, times 8,
    at the link efficiency), not at one GPU's NIC."""
    from anchorgpu.planner.speed.calibration import calibration
    from anchorgpu.planner.speed.step_constants import ServingSetup, _pair

    cal = calibration()
    setup = ServingSetup(weights_bytes_per_gpu=30e9, kv_bytes_per_sequence_per_gpu=1e8, precision="fp8", tp=1,
                         replicas=16, ep=16)
    c, _ = _pair(load_model("qwen3-235b-a22b"), H100, setup, cal)
    assert c.ep_rate == 8 * cal.network_bytes_per_s * cal.link_efficiency


def test_a_ring_over_thousands_of_gpus_pays_a_latency_a_step() -> None:
    """NCCL's own model of a ring gather (src/graph/tuning.cc): 8.4 us, then 3.4 us a step inside a server and 14 us
    a step across: 32 us over one server's 8 GPUs, about 9.7 ms over 2,048 GPUs on 256 servers. FSDP gathers a layer
    at a time, so Llama 3.1 70B's 80 layers over 2,048 H100 leave that latency to hide behind each micro-batch; over
    one server nothing crosses the network and no ring term is added."""
    from anchorgpu.planner.speed.links import ring_latency_s

    assert ring_latency_s(8, 1, "scale-up") * 1e6 == pytest.approx(8.4 + 7 * 3.4)
    assert ring_latency_s(2048, 256, "scale-up") * 1e3 == pytest.approx((8.4 + 1792 * 3.4 + 255 * 14) / 1e3)
    model = load_model("llama-3.1-70b")

    def fsdp_s(gpus: int, seq: int) -> float:
        lay = TrainLayout(gpus=gpus, tp=1, pp=1, dp=gpus, zero=3)
        st = training_step(model, H100, lay, seq_tokens=seq, micro_batch=1, global_batch_tokens=gpus * seq,
                           network_bytes_per_s=NIC)
        return st.breakdown_s["fsdp_comm"] / st.microbatches

    # 1,024-token micro-batches: about 0.8 s of products against 80 x 2 gathers of 9.7 ms each
    assert fsdp_s(2048, 1024) > 0.5 > fsdp_s(64, 1024)


def test_a_plan_across_servers_says_which_link_its_data_parallel_traffic_takes() -> None:
    """The README's 70B on 512 H100 (the layout chosen for the user: FSDP over all 512) says its gathers and sync go
    through each server's eight NICs; on GB200 the NVL72 rack is the unit; with no data parallelism (70B on 16 H100
    at TP 8 x PP 2) nothing is said."""
    from anchorgpu.planner import Layout, Workload, plan
    from anchorgpu.planner.speed.estimate import plan_performance

    def line(gpu: str, gpus: int) -> list[str]:
        p = plan(load_model("llama-3.1-70b"), Workload(task="train"), gpu=get_gpu(gpu), layout=Layout(gpus=gpus))
        return [a for a in plan_performance(p)["assumptions"] if a.startswith("data-parallel traffic")]

    assert "through 8 NICs a server" in line("h100", 512)[0]
    assert "through 72 NICs a scale-up domain" in line("gb200", 144)[0]
    def given(tp: int, pp: int) -> list[str]:
        p = plan(load_model("llama-3.1-70b"), Workload(task="train", recompute="full"), gpu=get_gpu("h100"),
                 layout=Layout(gpus=16, tp=tp, pp=pp))
        return [a for a in plan_performance(p)["assumptions"] if a.startswith("data-parallel traffic")]

    assert given(8, 2) == []
    assert "through 8 NICs a server" in given(1, 1)[0]
