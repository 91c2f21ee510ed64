"""vLLM sizes its scheduler by the GPU: 8,192 batched tokens and 1,024 sequences on a GPU of at least 70 GiB, except
an A100, whose name vLLM checks apart (``"a100" not in device_name``), and which keeps 2,048 and 256 like a small GPU
(vllm-project/vllm tests/engine/test_arg_utils.py::test_defaults_with_usage_context). GPUStack's vLLM 0.11 runs on an
A100 (set vllm-gpustack-a100 in measured_runs.json) were measured with those limits."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.sweep import sweep
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import shapes_from_catalog
from sweep_rows import plan_of_row


def _engine_line(gpu: str) -> str:
    p = plan(load_model("qwen3-14b"), Workload(prompt_tokens=217, output_tokens=202, concurrency=512), gpu=get_gpu(gpu))
    return next(a for a in p.assumptions if a.startswith("Serving engine sized like vLLM"))


@pytest.mark.parametrize(("gpu", "tokens", "seqs"), [("a100-80gb-sxm", 2048, 256), ("a100-40gb-sxm", 2048, 256),
                                                     ("h100-sxm", 8192, 1024), ("h200", 8192, 1024), ("l40s", 2048, 256)])
def test_the_engine_takes_vllms_defaults_for_the_gpu(gpu: str, tokens: int, seqs: int) -> None:
    assert f"max_num_batched_tokens {tokens}, max_num_seqs {seqs}," in _engine_line(gpu)


def test_an_a100_80gb_saturates_at_vllms_256_sequences() -> None:
    p = plan(load_model("qwen3-14b"), Workload(prompt_tokens=217, output_tokens=202, concurrency=512),
             gpu=get_gpu("a100-80gb-sxm"), layout=Layout(gpus=1))
    assert plan_performance(p)["saturation_concurrency"] == 256
    # without --gpus the layout chosen runs every user at once: two replicas of 256
    chosen = plan(load_model("qwen3-14b"), Workload(prompt_tokens=217, output_tokens=202, concurrency=512),
                  gpu=get_gpu("a100-80gb-sxm"))
    assert chosen.layout.dp == 2 and plan_performance(chosen)["saturation_concurrency"] == 512


def test_the_sweep_sizes_the_a100_engine_as_plan_does() -> None:
    """The recommend sweep restates the same defaults: every A100 row's activation peak (vLLM profiles a prefill at
    the token budget) and memory total are plan()'s for the same configuration."""
    model = load_model("qwen3-14b")
    shapes = [s for s in shapes_from_catalog(load_catalog().offerings, max_servers=1) if s.gpu.name == "a100-80gb-sxm"]
    assert shapes
    w = Workload(task="inference", context_tokens=4096, concurrency=8)
    result = sweep(model, shapes, SweepSpec(workload=w))
    for i in range(0, result.evaluated, max(1, result.evaluated // 12)):
        row = result.row(i)
        p, shape = plan_of_row(model, Workload(task="inference", context_tokens=4096), result, row)
        assert row["activations_bytes"] == p.per_gpu.activations_bytes
        assert row["per_gpu_total_bytes"] == p.per_gpu.total_bytes
