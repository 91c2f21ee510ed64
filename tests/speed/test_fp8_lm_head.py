"""The LM head stays at BF16 when a training step's products run in FP8 (or FP4).

The recipes the calibration rows ran leave the output layer out: torchtitan converts every ``nn.Linear`` but
``output`` (pytorch/torchtitan torchtitan/float8.py at 0f892e8, ``module_filter_fn=lambda mod, fqn: fqn !=
"output"``), OLMo-core every one but ``lm_head.w_out`` (allenai/OLMo-core
src/olmo_core/train/train_module/transformer/train_module.py, ``modules_to_ignore={"lm_head.w_out"}``), and
Megatron-Core's ``output_layer`` is its own ``tensor_parallel.ColumnParallelLinear``, not a Transformer Engine module
that ``fp8_autocast`` reaches (NVIDIA/Megatron-LM megatron/core/models/gpt/gpt_model.py at 007562f).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from anchorgpu.planner.speed._toys import toy_gpu, toy_model
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.micro_step import micro_step
from anchorgpu.planner.speed.peaks import peak_for


def _compute_s(vocab: int, precision: str, kind: str = "full") -> float:
    m = toy_model()
    h = m.hidden_size
    params = replace(m.params, embeddings=vocab * h, head=vocab * h)
    m = replace(m, vocab_size=vocab, params=params, params_active=params.total)
    return micro_step(m, toy_gpu(), calibration(), 1, 1, 1, 1, 1, False, False, 128, 1, "none", kind, precision, 8,
                      None, "fa2", "pytorch", None, False).compute_s


@pytest.mark.parametrize("kind", ["full", "lora"])
def test_a_larger_vocabulary_costs_the_same_in_fp8_as_in_bf16(kind: str) -> None:
    """Widening the head by 1,000 rows adds its products at the BF16 rate whether the blocks run in BF16 or FP8: three
    passes of 2 x V x h a token for full training (forward, input and weight gradients), two for LoRA (the frozen head
    computes no weight gradient)."""
    cal, gpu = calibration(), toy_gpu()
    k = cal.stack(gpu)
    h = toy_model().hidden_size
    bf16_rate = peak_for(gpu, "bf16").flops_per_s * k.train_matmul_efficiency * h / (h + k.train_matmul_half_width)
    passes = 3.0 if kind == "full" else 2.0
    added = passes * 2.0 * 1000 * h * 128 / bf16_rate
    assert _compute_s(1100, "bf16", kind) - _compute_s(100, "bf16", kind) == pytest.approx(added)
    assert _compute_s(1100, "fp8", kind) - _compute_s(100, "fp8", kind) == pytest.approx(added)


def test_fp8_still_speeds_up_the_blocks() -> None:
    """The blocks' products keep the FP8 rate: the FP8 step is faster than the BF16 one, by less than it would be with
    the head in FP8 too."""
    assert _compute_s(100, "fp8") < _compute_s(100, "bf16")
