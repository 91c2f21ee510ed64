"""``recommend``'s vLLM engine line states vLLM's scheduler defaults per GPU (planner.engine_limits.large_engine_defaults:
8,192 tokens and 1,024 sequences on GPUs of at least 70 GiB but the A100, 2,048 and 256 elsewhere), as the sweep sizes
each offering, not the one GPU's values of the probe plan."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Workload
from anchorgpu.planner.engine_limits import engine_limits, large_engine_defaults
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import recommend, recommendation_to_json

NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)


def _line(workload: Workload) -> str:
    spec = SweepSpec(workload=workload, prompt_tokens=1000, output_tokens=200)
    answer = recommendation_to_json(recommend(load_model("llama-3.1-8b"), spec, load_catalog(), "1month", NOW, top=5))
    return next(a for a in answer["assumptions"] if a.startswith("Serving engine sized like vLLM"))


@pytest.mark.parametrize("gpu", ["l40s", "a100-80gb-sxm", "h100-sxm"])
def test_the_engine_line_states_each_gpus_vllm_defaults(gpu: str) -> None:
    line = _line(Workload(task="inference", concurrency=4))
    assert "on each GPU" in line and "max_num_batched_tokens 8192, max_num_seqs 1024" not in line
    tokens, seqs = engine_limits(Workload(), large_gpu=large_engine_defaults(get_gpu(gpu)))
    group = next(part for part in line.split("; ") if f" {gpu}" in part or part.endswith(gpu))
    assert group.split(" among the GPUs swept ")[-1].startswith(f"{tokens:,} and {seqs:,} on ")


def test_given_limits_keep_the_one_line() -> None:
    line = _line(Workload(task="inference", concurrency=4, max_num_batched_tokens=4096, max_num_seqs=128))
    assert line.startswith("Serving engine sized like vLLM: max_num_batched_tokens 4096, max_num_seqs 128")


@pytest.mark.parametrize(("gpu", "expected"), [("l40s", (2048, 256)), ("h100-sxm", (8192, 1024))])
def test_one_gpu_kind_states_that_gpus_defaults(gpu: str, expected: tuple[int, int]) -> None:
    """With offerings of one GPU kind (``recommend --gpu l40s``) the line is plan's one-GPU line with that GPU's
    defaults; it gave the probe plan's 8,192 and 1,024 on an L40S, whose vLLM runs 2,048 and 256
    (vLLM ``arg_utils._set_default_args``)."""
    catalog = load_catalog()
    offerings = tuple(o for o in catalog.offerings if o.gpu == get_gpu(gpu).name)
    spec = SweepSpec(workload=Workload(task="inference", concurrency=4), prompt_tokens=1000, output_tokens=200)
    answer = recommendation_to_json(recommend(load_model("llama-3.1-8b"), spec, catalog, "1month", NOW, top=3,
                                              offerings=offerings))
    line = next(a for a in answer["assumptions"] if a.startswith("Serving engine sized like vLLM"))
    tokens, seqs = expected
    assert line.startswith(f"Serving engine sized like vLLM: max_num_batched_tokens {tokens}, max_num_seqs {seqs},")
