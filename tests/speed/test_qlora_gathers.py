"""QLoRA's sharded base is gathered as it is stored (``speed.dequant.gathered_bytes_per_param``): FSDP / ZeRO-3's
all-gathers, FSDP2's copies out of the gather buffer and a ``--offload params`` fetch move the 4-bit linears' packed
NF4 codes (half a byte a weight; bitsandbytes' ``quant_storage``, answer.ai's fsdp_qlora) and the rest at 16 bits;
the block constants (``quant_state``) stay whole on every GPU. A frozen base (LoRA, QLoRA) syncs no gradients.
"""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.formats import NF4_CODE_BITS, get_format, nf4_bits_per_weight
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.data_parallel import DataParallelTerms, data_parallel_terms, fsdp2_copies_s, group_link_of
from anchorgpu.planner.speed.dequant import QLORA_BASE_FORMAT, gathered_bytes_per_param
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.speed.flops import TrainKind
from anchorgpu.planner.speed.links import all_gather_s
from anchorgpu.planner.speed.offload import parameter_fetch_s
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import training_step

GPU = get_gpu("rtx-4090")
FSDP_3 = TrainLayout(gpus=3, dp=3, zero=3)


def _packed_bytes(model: ModelSpec) -> float:
    """The base as bitsandbytes stores it, counted from the model's own parts: every block linear but the routers at
    its 4-bit code, everything else (embeddings, LM head, norms, routers) at 16 bits."""
    linears = sum(g.d_in * g.d_out * g.count for g in model.linear_groups
                  if g.component != "router" and g.name != "router")
    return linears * 4 / 8 + (model.params_total - linears) * 2


def _terms(model: ModelSpec, kind: TrainKind, lay: TrainLayout = FSDP_3, *, stack: str = "pytorch",
           fsdp1: bool = True) -> DataParallelTerms:
    """Nothing to hide behind (compute 0): every gather is exposed whole."""
    return data_parallel_terms(model, GPU, calibration(), lay, stage_layers=model.num_layers, compute_s=0.0,
                               trains_base=kind == "full", gpus_per_server=8, network_bytes_per_s=None,
                               grad_bytes_per_value=4, train_stack=stack, fsdp1=fsdp1,
                               param_bytes=gathered_bytes_per_param(model, kind))


def test_the_code_width_is_the_formats_bits_without_its_block_constants() -> None:
    assert NF4_CODE_BITS == 4
    assert get_format(QLORA_BASE_FORMAT).linear_bits - NF4_CODE_BITS == pytest.approx(
        nf4_bits_per_weight(double_quant=True) - 4)


@pytest.mark.parametrize("name", ["llama-3.1-70b", "llama-2-7b", "qwen2.5-7b"])
def test_a_qlora_gather_moves_exactly_the_packed_bytes(name: str) -> None:
    model = load_model(name)
    dense, _ = gathered_bytes_per_param(model, "qlora")
    assert model.params_total * dense == pytest.approx(_packed_bytes(model), rel=1e-12)
    link = group_link_of(GPU, FSDP_3, gpus_per_server=8)
    gather = all_gather_s(_packed_bytes(model), 3, link, efficiency=calibration().link_efficiency)
    latency = 2.0 * model.num_layers * link.latency_s
    assert _terms(model, "qlora").fsdp_s == pytest.approx(2 * gather + latency, rel=1e-9)  # forward and backward


def test_lora_and_full_training_still_gather_16_bits() -> None:
    model = load_model("llama-3.1-70b")
    assert gathered_bytes_per_param(model, "lora") == gathered_bytes_per_param(model, "full") == (2.0, 2.0)
    link = group_link_of(GPU, FSDP_3, gpus_per_server=8)
    gather = all_gather_s(model.params_total * 2, 3, link, efficiency=calibration().link_efficiency)
    assert _terms(model, "lora").fsdp_s == pytest.approx(2 * gather + 2.0 * model.num_layers * link.latency_s)
    # the default (no param_bytes) is the 16-bit one: callers that do not name the kind keep their answers
    default = data_parallel_terms(model, GPU, calibration(), FSDP_3, stage_layers=model.num_layers, compute_s=0.0,
                                  trains_base=False, gpus_per_server=8, network_bytes_per_s=None,
                                  grad_bytes_per_value=4, train_stack="pytorch", fsdp1=True)
    assert default == _terms(model, "lora")


def test_routed_experts_gather_at_the_code_width() -> None:
    model = load_model("mixtral-8x7b")  # every routed expert's weight is a block linear: all 4-bit
    dense, expert = gathered_bytes_per_param(model, "qlora")
    assert expert == 0.5
    non_expert = model.params_total - model.params.experts
    assert non_expert * dense + model.params.experts * expert == pytest.approx(_packed_bytes(model), rel=1e-12)


def test_fsdp2_copies_and_host_fetches_move_the_packed_bytes_too() -> None:
    model = load_model("llama-3.1-70b")
    dense, _ = gathered_bytes_per_param(model, "qlora")
    cal = calibration()
    assert fsdp2_copies_s(GPU, cal, 1e9, 0, dense) == pytest.approx(fsdp2_copies_s(GPU, cal, 1e9, 0) * dense / 2)
    assert parameter_fetch_s(GPU, cal, 1e9, dense) == pytest.approx(parameter_fetch_s(GPU, cal, 1e9) * dense / 2)
    # FSDP2 (not FSDP1) adds its copies at the packed width: the step's difference is the copies' difference
    fsdp2 = _terms(model, "qlora", fsdp1=False).fsdp_s - _terms(model, "qlora").fsdp_s
    assert fsdp2 == pytest.approx(fsdp2_copies_s(GPU, cal, model.params_total, 0, dense), rel=1e-9)
    # one GPU holding the whole base, fetched from host memory: only the fetch, at the packed width
    host = TrainLayout(gpus=1, dp=1, zero=3, offload="params")
    assert _terms(model, "qlora", host).fsdp_s == pytest.approx(_terms(model, "lora", host).fsdp_s * dense / 2)


def test_a_frozen_base_syncs_no_gradients() -> None:
    """LoRA and QLoRA: only the adapters have gradients (Llama 3.1 70B at rank 16 on every linear: 207M, 0.3% of the
    base), and their scatter is not timed; the base's never is."""
    model = load_model("llama-3.1-70b")
    for kind in ("lora", "qlora"):
        t = _terms(model, kind)  # type: ignore[arg-type]
        assert (t.sync_s, t.micro_sync_s, t.local_params) == (0.0, 0.0, 0.0)
    assert _terms(model, "full").sync_s > 0.0


def test_qlora_over_pcie_exposes_less_of_its_gathers_than_lora_at_the_same_layout() -> None:
    """3 x RTX 4090 over PCIe, 70B at ZeRO-3: LoRA's 16-bit gathers outrun the forward pass; QLoRA's packed ones
    (0.54 bytes a parameter) do not, so its fsdp_comm is only the gathers' per-layer latency."""
    model = load_model("llama-3.1-70b")

    def fsdp_comm(kind: TrainKind) -> float:
        st = training_step(model, GPU, FSDP_3, seq_tokens=2048, micro_batch=1, global_batch_tokens=3 * 2048 * 4,
                           recompute="full", kind=kind, train_stack="pytorch")
        return st.breakdown_s.get("fsdp_comm", 0.0)

    link = group_link_of(GPU, FSDP_3, gpus_per_server=8)
    latency = 4 * 2.0 * model.num_layers * link.latency_s  # 4 micro-batches
    assert fsdp_comm("lora") > 2 * fsdp_comm("qlora")
    assert fsdp_comm("qlora") == pytest.approx(latency + 4 * fsdp2_copies_s(
        GPU, calibration(), model.params_total, 0, gathered_bytes_per_param(model, "qlora")[0]), rel=1e-9)


def test_the_plan_says_how_the_qlora_base_is_gathered() -> None:
    model = load_model("llama-3.1-70b")
    # four GPUs: three no longer hold it since stop59 fsdpunits (the 16-bit embedding gathered with a block)
    p = plan(model, Workload(task="qlora"), gpu=GPU, layout=Layout(gpus=4, dp=4, zero=3))
    lines = [a for a in plan_performance(p)["assumptions"] if a.startswith("FSDP / ZeRO-3 of a QLoRA base")]
    assert len(lines) == 1, lines
    assert f"{gathered_bytes_per_param(model, 'qlora')[0]:.2f} bytes a parameter" in lines[0]
    lora = plan(model, Workload(task="lora"), gpu=GPU, layout=Layout(gpus=4, dp=4, zero=3))
    assert not any("QLoRA base" in a for a in plan_performance(lora)["assumptions"])
