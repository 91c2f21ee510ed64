"""The premise of the chooser's stop past the layout it chose (:data:`~anchorgpu.planner.speed.chooser_margin.LADDER_GAIN`):
a rung of the micro-batch ladder at most doubles a layout's speed at the rung below, at the same recompute level (the
step's tokens stay the global batch, the micro-batches halve and each takes no less time). Checked over a sample of
layouts of a mixture of experts (whose per-expert launches micro-batch 8 amortises most) and a dense model."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.inputs import Recompute
from anchorgpu.planner.speed.chooser_margin import LADDER_GAIN
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import training_step

SAMPLE = [
    ("qwen3-30b-a3b", "h100", TrainLayout(gpus=64, tp=1, pp=1, dp=64, ep=8, zero=1)),
    ("qwen3-30b-a3b", "h100", TrainLayout(gpus=64, tp=1, pp=2, dp=32, ep=8, zero=1, virtual_stages=8)),
    ("qwen3-30b-a3b", "b200", TrainLayout(gpus=8, tp=1, pp=1, dp=8, ep=8, zero=1)),
    ("qwen3-30b-a3b", "b200", TrainLayout(gpus=8, tp=1, pp=2, dp=4, ep=4, zero=1, virtual_stages=8)),
    ("qwen3-30b-a3b", "h100", TrainLayout(gpus=64, tp=2, pp=4, dp=8, ep=8, zero=1)),
    ("llama-3.1-8b", "h100", TrainLayout(gpus=64, tp=1, pp=1, dp=64, zero=1)),
    ("llama-3.1-8b", "h100", TrainLayout(gpus=64, tp=2, pp=2, dp=16, zero=3)),
]


@pytest.mark.parametrize(("name", "gpu", "lay"), SAMPLE)
@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
@pytest.mark.parametrize("seq", [2048, 4096])
def test_micro_batch_8_at_most_doubles_4(name: str, gpu: str, lay: TrainLayout, recompute: Recompute, seq: int) -> None:
    model, spec = load_model(name), get_gpu(gpu)
    assert isinstance(model, ModelSpec)
    batch = 1024 * seq  # a global batch of 1,024 sequences

    def tokens_per_s(mb: int) -> float:
        return training_step(
            model, spec, lay, seq_tokens=seq, micro_batch=mb, global_batch_tokens=batch, recompute=recompute
        ).tokens_per_s

    assert tokens_per_s(8) <= LADDER_GAIN * tokens_per_s(4)
