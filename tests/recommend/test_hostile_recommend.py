"""Hostile values given to ``recommend``: refused up front with the same line as ``plan`` and ``POST /v1/recommend``
give, never as a per-offering rejection that blames the GPUs for the value."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.errors import InvalidWorkload
from anchorgpu.planner import Workload
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import recommend
from cli_runner import run

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize("share", [1.5, math.nan, 2.0])
def test_a_memory_share_outside_0_to_1_is_refused_as_plan_refuses_it(share: float) -> None:
    # vLLM's eligibility pass read the share before the workload's bounds were checked: 1.5 (or NaN) came back as
    # "no offering considered can run it: ... vLLM asks for nan PiB free at start-up" (sglang and trtllm were refused
    # by the sweep's own check)
    spec = SweepSpec(workload=Workload(task="inference", gpu_memory_utilization=share))
    what = "a fraction" if math.isfinite(share) else "a finite number"  # NaN is said to be no number, as the API says
    with pytest.raises(InvalidWorkload, match=rf"--gpu-memory-utilization .*: expected {what} above 0 and at most 1"):
        recommend(load_model("llama-3.1-8b"), spec, load_catalog(), "1month", NOW, top=1)


def test_the_cli_refuses_a_memory_share_past_1_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "recommend", "llama-3.1-8b", "--offline", "--gpu-memory-utilization", "1.5")
    assert code == 2 and err.count("\n") == 1
    assert "--gpu-memory-utilization 1.5: expected a fraction above 0 and at most 1" in err and "no offering" not in err


def test_the_cli_bounds_max_num_seqs_as_plan_and_the_api_do(capsys: pytest.CaptureFixture[str]) -> None:
    # LIMITS["max_num_seqs"] (anchorgpu.validation) bounds plan's --max-num-seqs and POST /v1/recommend's field; the
    # recommend command took 100,000,000 and answered with offerings
    code, out, err = run(capsys, "recommend", "llama-3.1-8b", "--offline", "--max-num-seqs", "100000000", "--top", "1")
    assert code == 2 and not out and err.count("\n") == 1
    assert "--max-num-seqs '100000000': expected a whole number from 1 to 1,000,000" in err  # as --prompt's (qa21)


def test_a_format_listed_twice_is_swept_once() -> None:
    # `recommend --weights bf16,bf16` swept the grid twice (evaluated 11,840 for 5,920 configurations) and reported
    # weights ['bf16', 'bf16'], where the API's answer to the same request said ['bf16']
    model, catalog = load_model("llama-3.1-8b"), load_catalog()
    once, twice = (recommend(model, SweepSpec(workload=Workload(task="inference"), weights=weights,
                                              kv_caches=kvs), catalog, "1month", NOW, top=3)
                   for weights, kvs in ((("bf16",), ("fp8",)), (("bf16", "bf16"), ("fp8", "fp8"))))
    assert twice.workload["weights"] == ["bf16"] and twice.workload["kv_caches"] == ["fp8"]
    assert twice.evaluated == once.evaluated
    assert [(o.offering, o.servers) for o in twice.results] == [(o.offering, o.servers) for o in once.results]


@pytest.mark.parametrize("top", ["0", "101", "100000"])
def test_top_has_the_apis_bounds_on_the_cli(capsys: pytest.CaptureFixture[str], top: str) -> None:
    """hardrec: `recommend --top 100000` answered (exit 0) where POST /v1/recommend refuses top above 100 (422)."""
    code, out, err = run(capsys, "recommend", "llama-3.1-8b", "--top", top)
    assert code == 2 and out == "" and err == f"error: --top {top}: expected a whole number from 1 to 100\n"
