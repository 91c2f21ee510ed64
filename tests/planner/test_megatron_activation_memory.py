"""What a Megatron-Core layer keeps for its backward pass, read from the code (benchmarks/activation_memory_findings.md):
no dropout masks at p = 0, Transformer Engine's 1-byte copies of the products' inputs under FP8, and Megatron-Core's
CPU activation offloading (``--offload-activations N``)."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import from_hf_config, load_model
from anchorgpu.errors import InvalidConfig, InvalidWorkload
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.memory.activations import korthikanti_layer_activation_bytes, layer_activation_bytes
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import training_step

S, B = 4096, 1


def _per_sbh(model, **kw) -> float:  # type: ignore[no-untyped-def]
    """A layer's bytes a token and hidden unit, the flash kernel's softmax statistics (4·a·s·b bytes) left out."""
    h = model.hidden_size
    stats = 4 * model.num_attention_heads * S * B
    return (layer_activation_bytes(model, s=S, b=B, t=1, sp=False, recompute="none", **kw) - stats) / (S * B * h)


def test_a_model_without_dropout_keeps_no_masks() -> None:
    """Llama 3.1 8B states no residual dropout: 34 bytes a token and hidden unit, not Korthikanti's 36 (its 2 are the
    two 1-byte dropout masks, which torch's and Megatron-Core's dropout do not make at p = 0)."""
    llama = load_model("llama-3.1-8b")
    assert llama.hidden_dropout == 0.0
    assert _per_sbh(llama) == pytest.approx(34.0)


def test_a_model_trained_with_dropout_keeps_korthikantis_masks() -> None:
    """GPT-2's config states resid_pdrop 0.1: its layer is Korthikanti's Table 2 exactly (no flash kernel)."""
    gpt2 = load_model("gpt2")
    assert gpt2.hidden_dropout == pytest.approx(0.1)
    mine = layer_activation_bytes(gpt2, s=1024, b=1, t=1, sp=False, recompute="none", flash=False)
    paper = korthikanti_layer_activation_bytes(s=1024, b=1, h=gpt2.hidden_size, a=gpt2.num_attention_heads)
    assert mine == pytest.approx(paper)


@pytest.mark.parametrize(("cfg", "expected"), [
    ({"hidden_dropout": 0.1}, 0.1), ({"resid_pdrop": 0.0}, 0.0), ({"dropout": 0.2}, 0.2), ({}, 0.0)])
def test_the_dropout_is_read_from_the_config(cfg: dict[str, float], expected: float) -> None:
    base = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
            "intermediate_size": 512, "vocab_size": 1000, "max_position_embeddings": 2048}
    assert from_hf_config({**base, **cfg}, name="toy").hidden_dropout == pytest.approx(expected)


def test_a_dropout_that_is_no_probability_is_refused_in_one_line() -> None:
    with pytest.raises(InvalidConfig, match=r"field 'hidden_dropout' must be a probability in \[0, 1\), got 2"):
        from_hf_config({"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
                        "intermediate_size": 512, "vocab_size": 1000, "hidden_dropout": 2}, name="toy")


def test_fp8_keeps_the_products_inputs_in_one_byte() -> None:
    """Transformer Engine under FP8 (findings section 2): a Llama block keeps 29.5 bytes a token and hidden unit, the
    norm outputs and the down-projection input in 1 byte, with a 1-byte copy of the attention output beside it."""
    llama = load_model("llama-3.1-8b")
    assert _per_sbh(llama, fp8_linear_inputs=True) == pytest.approx(29.5)


def _train(model: str, gpu: str, gpus: int, *, stack: str = "megatron", precision: str = "fp8", **layout):  # type: ignore[no-untyped-def]
    w = Workload(task="train", seq_tokens=8192, micro_batch=1, recompute="none", global_batch_tokens=2**21,
                 train_precision=precision, train_stack=stack)  # type: ignore[arg-type]
    return plan(load_model(model), w, gpu=get_gpu(gpu), layout=Layout(gpus=gpus, **layout), suggest=False,
                choose_layout=False)


def test_a_megatron_fp8_plan_holds_fewer_activations_and_says_why() -> None:
    fp8 = _train("llama-3.1-8b", "h100", 8, tp=8)
    bf16 = _train("llama-3.1-8b", "h100", 8, tp=8, precision="mixed")
    assert fp8.per_gpu.activations_bytes < 0.9 * bf16.per_gpu.activations_bytes
    assert any("1-byte copies" in line for line in fp8.assumptions)
    assert not any("1-byte copies" in line for line in bf16.assumptions)


def test_a_pytorch_native_fp8_plan_keeps_its_own_activations() -> None:
    """torchtitan's float8 is not Transformer Engine: the 1-byte copies are planned for Megatron-Core only."""
    fp8 = _train("llama-3.1-8b", "h100", 8, tp=8, stack="pytorch")
    bf16 = _train("llama-3.1-8b", "h100", 8, tp=8, stack="pytorch", precision="mixed")
    assert fp8.per_gpu.activations_bytes == bf16.per_gpu.activations_bytes


def _offload(n: int, **kw):  # type: ignore[no-untyped-def]
    w = Workload(task="train", seq_tokens=8192, micro_batch=2, recompute=kw.pop("recompute", "none"),
                 global_batch_tokens=2**21, train_precision="fp8", offload_activation_layers=n,
                 cross_entropy="te")  # the recipe's fused loss (Megatron-Bridge's performance overrides)
    return plan(load_model("llama-3.1-70b"), w, gpu=get_gpu(kw.pop("gpu", "gb200")),
                layout=Layout(gpus=64, fsdp=kw.pop("fsdp", True), **kw), suggest=False, choose_layout=False)


def test_offloaded_layers_leave_the_gpu_but_one() -> None:
    """Megatron-Bridge's GB200 recipe offloads 40 of Llama 3 70B's 80 layers (cpu_offloading_num_layers 40,
    scripts/performance/configs/llama/llama3_workload_base_configs.py): 39 layers' activations leave the GPU."""
    kept, offloaded = _offload(0), _offload(40)
    per_layer = offloaded.breakdown["offloaded_activations_bytes"] / 39
    assert kept.per_gpu.activations_bytes - offloaded.per_gpu.activations_bytes == pytest.approx(39 * per_layer)
    assert offloaded.fits and not kept.fits
    assert any("--cpu-offloading-num-layers 40" in line for line in offloaded.assumptions)


@pytest.mark.parametrize(("n", "kw", "message"), [
    # ZeRO-1 with the stages: FSDP with them is refused first (Megatron-FSDP runs no pipeline stages)
    (40, {"pp": 2, "dp": 32, "fsdp": False, "zero": 1}, "only without pipeline stages"),
    (80, {}, "at most 79 of the model's 80 layers"),
    (40, {"recompute": "full"}, "only when none are recomputed"),
])
def test_an_offload_megatron_cannot_run_is_refused(n: int, kw: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidWorkload, match=message):
        _offload(n, **kw)


def test_the_copies_hide_behind_grace_but_not_behind_pcie() -> None:
    """NVLink-C2C carries 40 layers' activations within the forward pass; an H100's PCIe 5.0 link does not."""
    model = load_model("llama-3.1-70b")
    lay = TrainLayout(gpus=64, dp=64, zero=3)

    def step(gpu: str, n: int):  # type: ignore[no-untyped-def]
        return training_step(model, get_gpu(gpu), lay, seq_tokens=8192, micro_batch=2, global_batch_tokens=2**21,
                             precision="fp8", offload_activation_layers=n)

    assert step("gb200", 40).breakdown_s["activation_offload"] == 0.0
    assert step("gb200", 40).step_s == pytest.approx(step("gb200", 0).step_s)
    assert step("h100", 40).breakdown_s["activation_offload"] > 0.0
    assert step("h100", 40).step_s > step("h100", 0).step_s


def test_the_chooser_keeps_one_stage_and_no_recompute_with_an_offload() -> None:
    w = Workload(task="train", seq_tokens=8192, global_batch_tokens=2**21, train_precision="fp8",
                 offload_activation_layers=20)
    result = plan(load_model("llama-3.1-70b"), w, gpu=get_gpu("gb300"), layout=Layout(gpus=64), suggest=False)
    assert result.layout.pp == 1 and result.fits
    chosen = next(line for line in result.assumptions if line.startswith("Layout chosen"))
    assert "PP 1" in chosen and "recompute none" in chosen


def test_what_would_fit_offers_offloading_half_the_layers_first_on_grace() -> None:
    """Megatron-Bridge's GB200 recipe without its offload does not fit; offloading half the layers (its own 40 of 80)
    fits on the same GPUs and, hidden behind NVLink-C2C, is the fastest change offered."""
    result = plan(load_model("llama-3.1-70b"),
                  Workload(task="train", seq_tokens=8192, micro_batch=2, recompute="none", global_batch_tokens=2**21,
                           train_precision="fp8", cross_entropy="te"),
                  gpu=get_gpu("gb200"), layout=Layout(gpus=64, tp=1, fsdp=True))  # the recipe's FSDP over all 64
    assert not result.fits
    assert result.suggestions[0].change == "--offload-activations 40"
    pytorch = plan(load_model("llama-3.1-70b"),
                   Workload(task="train", seq_tokens=8192, micro_batch=2, recompute="none", global_batch_tokens=2**21,
                            train_stack="pytorch"),
                   gpu=get_gpu("gb200"), layout=Layout(gpus=64, tp=1, fsdp=True))
    assert not any(s.change.startswith("--offload-activations") for s in pytorch.suggestions)
