"""Stop 58, the lead's review: a training plan whose headroom is thin on its own stack says so even where the eager
stack's warning fires too (benchmarks/hardening/stop58_qa22.md, Left 2).

Qwen3-30B-A3B training on 16 H100 (Megatron stack, the chooser's layout) fits with about 620 MiB free, 0.77% of its
planned total: under the 2.13% that ``planner/data/training_headroom.json`` derives from Megatron's measured peaks
(``thin_training_headroom``), and too little for an eager stack's activations too
(``eager_activations_exceed_headroom``). Before, the eager warning alone was given, and it is about another stack.
"""

from __future__ import annotations

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import plan
from anchorgpu.planner.headroom import fit_headroom_warnings, thin_share
from anchorgpu.planner.inputs import Layout, Workload

GIB = 2**30


def test_both_warnings_where_both_apply() -> None:
    p = plan(load_model("qwen3-30b-a3b"), Workload(task="train"), layout=Layout(gpus=16), gpu=get_gpu("h100"))
    codes = [w.code for w in p.warnings]
    assert p.fits
    assert "eager_activations_exceed_headroom" in codes and "thin_training_headroom" in codes
    total = sum(p.breakdown.values())
    assert p.headroom_bytes is not None and 0 <= p.headroom_bytes < thin_share(0.05) * total


def test_the_rule_gives_each_warning_that_applies() -> None:
    total, free = int(78.57 * GIB), 620 * 2**20  # the case above: thin on Megatron, far under an eager stack's needs
    both = fit_headroom_warnings(total, free, task="train", activations_bytes=8 * GIB, recompute="none",
                                 train_stack="megatron", fragmentation_fraction=0.05)
    assert [w.code for w in both] == ["eager_activations_exceed_headroom", "thin_training_headroom"]
    roomy = fit_headroom_warnings(total, 8 * GIB, task="train", activations_bytes=GIB // 4, recompute="full",
                                  train_stack="megatron", fragmentation_fraction=0.05)
    assert roomy == ()
