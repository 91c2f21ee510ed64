"""A training sweep's runtime-overhead assumption states the rule each layout's memory follows, not the one-GPU probe's
figures: it said "NCCL 0 B" beside rows of 8 to 128 GPUs, each of which plans 256 MiB and more (planner.terms.nccl_bytes)."""

from __future__ import annotations

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.planner import Workload
from anchorgpu.planner.inputs import Overheads
from anchorgpu.planner.sweep import sweep
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.planner.terms import overhead_rule_line
from anchorgpu.recommend import shapes_from_catalog


def test_the_training_sweep_states_the_overhead_rule_not_one_gpus_figures() -> None:
    shapes = tuple(s for s in shapes_from_catalog(load_catalog().offerings, max_servers=1) if s.id == "h100-sxm-8x-bm")
    result = sweep(load_model("llama-3.1-8b"), shapes, SweepSpec(workload=Workload(task="train")))
    lines = [a for a in result.assumptions if a.startswith("Runtime overhead")]
    assert lines == [overhead_rule_line(Overheads())]
    assert "NCCL 0 B" not in lines[0] and "NCCL 256.00 MiB plus 32.00 MiB a peer" in lines[0]
