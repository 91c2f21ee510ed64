"""``recommend --engine sglang`` as a user reads it: its speeds are plan's for the same layout (SGLang's decode graphs
padding the steps), its engine line states SGLang's settings per GPU and layout (not the defaults SGLang falls back to
without a GPU), and an offering whose weights leave no room for the KV cache is not said to have room it lacks."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.sglang import sglang_settings
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import recommend, recommendation_to_json
from anchorgpu.recommend.eligibility import miss_reason

NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)
MODEL = load_model("qwen3-32b")
WORKLOAD = Workload(task="inference", engine="sglang", concurrency=50)


@pytest.fixture(scope="module")
def answer() -> dict:  # type: ignore[type-arg]
    spec = SweepSpec(workload=WORKLOAD, prompt_tokens=1000, output_tokens=200)
    return recommendation_to_json(recommend(MODEL, spec, load_catalog(), "1month", NOW, top=5))


def test_a_recommended_layouts_speed_is_plans(answer: dict) -> None:  # type: ignore[type-arg]
    """50 users on one replica: SGLang runs its decode-only steps in the 56-sequence graph (1, 2, 4, 8, 12, then every
    8), as plan times them; the sweep timed 50 rows and its TPOT differed from plan's."""
    rows = [r for r in answer["results"] if r["layout"]["dp"] == 1]
    assert rows
    for r in rows:
        p = plan(MODEL, Workload(engine="sglang", concurrency=50, prompt_tokens=1000, output_tokens=200),
                 precision=PrecisionPlan(weights=r["weights"], kv_cache=r["kv_cache"]),
                 layout=Layout(gpus=r["gpus"], tp=r["layout"]["tp"], pp=r["layout"]["pp"], dp=1),
                 gpu=get_gpu(r["gpu"]), suggest=False, choose_layout=False)
        perf = plan_performance(p)
        assert r["decode_tokens_per_s_per_user"] == pytest.approx(perf["decode_tokens_per_s_per_user"], abs=0.01)
        assert r["ttft_s"] == pytest.approx(perf["ttft_s"], abs=1e-4)


def test_the_engine_line_states_sglangs_settings_per_gpu(answer: dict) -> None:  # type: ignore[type-arg]
    line = next(a for a in answer["assumptions"] if a.startswith("Serving engine sized like SGLang"))
    fallback = sglang_settings(None, tp=1, pp=1)  # what SGLang sets where it cannot read the GPU's memory
    assert "on each GPU and layout" in line
    assert f"cuda_graph_max_bs {fallback.cuda_graph_max_bs}," not in line and "(SGLang's default for this GPU" not in line
    h100 = sglang_settings(get_gpu("h100").memory_bytes, tp=1, pp=1)
    assert h100.mem_fraction_static != fallback.mem_fraction_static  # the line once named 0.88 for every offering
    assert f"chunked_prefill_size {fallback.chunked_prefill_size} " not in line


def test_no_room_for_the_kv_cache_is_not_said_as_room() -> None:
    """TensorRT-LLM's and SGLang's budgets follow the weights: on a GPU the weights overfill, the budget is what the
    engine holds (132 GiB for Llama 3.1 70B on one RTX 4090), which "of 132.02 GiB usable" read as room."""
    gib = 1 << 30
    row = {"fits": False, "tp": 1, "pp": 1, "dp": 1, "weights": "bf16", "kv_cache": "bf16", "concurrency": 64,
           "per_gpu_total_bytes": 155 * gib, "budget_bytes": 132 * gib, "weights_bytes": 131 * gib,
           "activations_bytes": gib // 2, "other_bytes": gib // 2, "kv_cache_bytes": 23 * gib}
    reason = miss_reason(row, None, False)
    assert "usable" not in reason and "alone take 132.00 GiB, no room for the KV cache" in reason
    vllm = miss_reason({**row, "budget_bytes": int(21.6 * gib)}, None, False)  # vLLM's: a share of the GPU
    assert "alone take 132.00 GiB of 21.60 GiB usable" in vllm
    roomy = miss_reason({**row, "budget_bytes": 150 * gib}, None, False)
    assert roomy.endswith("needs 155.00 GiB per GPU of 150.00 GiB usable")
