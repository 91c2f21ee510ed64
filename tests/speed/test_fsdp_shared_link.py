"""FSDP's parameter gathers and its gradient scatter share one link (``data_parallel.data_parallel_terms``): a
micro-batch's forward gather runs beside its forward pass, its backward gather and its scatter beside its backward
pass, so what the link carries beyond those windows is exposed; the micro-batch's computation is not lent twice.

The figures are derived here from the model's parameter count and the link as the calibration gives it: a GPU's
network bandwidth (``network_gbit_per_s_per_gpu``), eight NICs a server for a TP 1 group (NCCL's rings leave a server
through each member's own NIC), at ``link_efficiency``; 16-bit parameters and gradients.
"""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.data_parallel import data_parallel_terms
from anchorgpu.planner.speed.links import ring_latency_s
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import training_step
from anchorgpu.planner.speed.zero2 import BACKWARD_SHARE

H100 = get_gpu("h100")
MODEL = load_model("llama-3.1-405b")
GPUS = 512
FSDP_512 = TrainLayout(gpus=GPUS, tp=1, pp=1, dp=GPUS, zero=3)  # the layout the chooser picks on 512 H100
NICS_A_SERVER = 8  # TP 1: every GPU of a server is a member of the FSDP group


def _pass_s(network_bytes_per_s: float) -> float:
    """One bandwidth-bound all-gather (or reduce-scatter) of the whole 16-bit model over the 512 GPUs."""
    bytes_per_s = NICS_A_SERVER * network_bytes_per_s * calibration().link_efficiency
    return MODEL.params_total * 2 * (GPUS - 1) / GPUS / bytes_per_s


def _exposed_s(compute_s: float, network_bytes_per_s: float, stack: str = "megatron") -> float:
    t = data_parallel_terms(MODEL, H100, calibration(), FSDP_512, stage_layers=MODEL.num_layers, compute_s=compute_s,
                            trains_base=True, gpus_per_server=8, network_bytes_per_s=network_bytes_per_s,
                            grad_bytes_per_value=2, train_stack=stack)
    return t.fsdp_s + t.micro_sync_s + t.sync_s


def test_the_405b_micro_batch_exposes_at_least_its_traffic_beyond_its_computation() -> None:
    """405B on 512 H100 at the calibration's network: two gathers and a scatter of 0.81 TB a micro-batch, about
    2.5 s each. With a micro-batch of 2.5 gathers' computation the two gathers alone would fit it, and the scatter
    alone two thirds of it, so a window counted once for the gathers and again for the scatter hid everything; one
    link carries all three, so at least half a pass is exposed, and the forward gather alone outruns the forward."""
    nic = calibration().network_bytes_per_s
    one = _pass_s(nic)
    assert 2.0 < one < 3.0
    compute_s = 2.5 * one
    traffic_s = 3 * one
    exposed = _exposed_s(compute_s, nic)
    assert exposed >= traffic_s - compute_s
    assert exposed >= one - compute_s * (1 - BACKWARD_SHARE) + one + one - compute_s * BACKWARD_SHARE


def test_the_405b_step_over_a_slow_network_is_bound_by_its_traffic() -> None:
    """The same layout, 8,192-token sequences and the default 4M-token batch (one micro-batch a GPU), at 50 Gb/s a
    GPU: about 61 s of gathers and scatter against about 44 s of computation. The step cannot be shorter than the
    link's work: its exposed gathers and sync are at least the traffic beyond the computation."""
    slow = 50e9 / 8
    st = training_step(MODEL, H100, FSDP_512, seq_tokens=8192, micro_batch=1, global_batch_tokens=4 * 1024 * 1024,
                       recompute="full", network_bytes_per_s=slow)
    assert st.microbatches == 1
    traffic_s = 3 * _pass_s(slow)
    compute_s = st.breakdown_s["compute"]
    assert traffic_s > compute_s
    assert st.breakdown_s["fsdp_comm"] + st.breakdown_s["dp_sync"] >= traffic_s - compute_s
    assert st.step_s >= traffic_s


def test_at_the_catalogs_network_the_405b_traffic_hides() -> None:
    """At 400 Gb/s a GPU through eight NICs a server the 405B's three passes (about 8.5 s with their ring latency)
    fit the windows of a 44 s micro-batch: what stays exposed is the per-layer launches and the last layer's scatter,
    under a tenth of a second."""
    st = training_step(MODEL, H100, FSDP_512, seq_tokens=8192, micro_batch=1, global_batch_tokens=4 * 1024 * 1024,
                       recompute="full")
    assert 3 * _pass_s(calibration().network_bytes_per_s) < st.breakdown_s["compute"] / 3
    assert st.breakdown_s["fsdp_comm"] + st.breakdown_s["dp_sync"] < 0.1


@pytest.mark.parametrize("stack", ["megatron", "pytorch"])
def test_a_gather_beyond_its_pass_is_exposed_even_where_two_fit_the_micro_batch(stack: str) -> None:
    """LoRA-like (no scatter): two gathers of 1.0 pass each against 2.4 passes of computation fit the whole
    micro-batch, but the forward gather has a third of it (0.8 of a pass), so 0.2 of a pass is exposed, with the
    gather's ring latency (NCCL's, a layer at a time over 512 ranks on 64 servers) and its launches (a hundredth of
    a second) on top."""
    nic = calibration().network_bytes_per_s
    one = _pass_s(nic)
    t = data_parallel_terms(MODEL, H100, calibration(), FSDP_512, stage_layers=MODEL.num_layers, compute_s=2.4 * one,
                            trains_base=False, gpus_per_server=8, network_bytes_per_s=nic, grad_bytes_per_value=2,
                            train_stack=stack, fsdp1=True)
    assert t.sync_s == t.micro_sync_s == 0.0
    ring_s = MODEL.num_layers * ring_latency_s(GPUS, GPUS // 8, "scale-up")
    assert t.fsdp_s == pytest.approx(0.2 * one + ring_s, abs=0.02)


@pytest.mark.parametrize("gpus", [8, GPUS])
def test_the_nics_hide_traffic_beside_in_server_collectives_only_across_servers(gpus: int) -> None:
    """Across servers the data-parallel traffic rides the NICs, free beside the products and the collectives that stay
    on NVLink (``network_window_s``); inside one server it shares NVLink with them, so only the products hide it."""
    layout = TrainLayout(gpus=gpus, tp=1, pp=1, dp=gpus, zero=3)
    compute_s = 0.25 * _pass_s(50e9)  # far too short to hide a gather: the window decides the exposure

    def exposed(window_s: float | None) -> float:
        t = data_parallel_terms(MODEL, H100, calibration(), layout, stage_layers=MODEL.num_layers,
                                compute_s=compute_s, trains_base=True, gpus_per_server=8, network_bytes_per_s=50e9,
                                grad_bytes_per_value=2, train_stack="megatron", network_window_s=window_s)
        return t.fsdp_s + t.micro_sync_s + t.sync_s

    if gpus == 8:
        assert exposed(4 * compute_s) == exposed(None) > 0
    else:
        assert 0 < exposed(4 * compute_s) < exposed(None)
