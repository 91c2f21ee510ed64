"""A data-parallel group across servers leaves each server through every member's NIC (``links.data_parallel_link``):
NCCL's rings use one channel a NIC on rail-optimised clusters, so a group with eight members a server moves eight NICs'
bytes, up to the server's own scale-up link; a group with one member a server (TP 8) has one NIC."""

from __future__ import annotations

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.links import data_parallel_link, group_link
from anchorgpu.planner.speed.training import TrainLayout, training_step

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
