"""recommend sizes each sequence at prompt + output when a prompt is given without a context, as plan does (issue 11,
'Serving'): it used to size every sequence at the model's whole window, so an 8B model for 64 users of 1,200-token
requests came out as 8 MI300X holding 128 GiB of KV cache each."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import recommend
from cli_runner import run_json

NOW = datetime(2026, 12, 1, tzinfo=UTC)
LLAMA_8B = load_model("llama-3.1-8b")


@pytest.mark.parametrize(("prompt", "output"), [(1000, 200), (128, 2048)])
def test_the_sweep_sizes_sequences_at_prompt_plus_output(prompt: int, output: int) -> None:
    spec = SweepSpec(workload=Workload(task="inference", concurrency=64), prompt_tokens=prompt, output_tokens=output)
    rec = recommend(LLAMA_8B, spec, load_catalog(), "1month", NOW, top=3)
    assert rec.workload["context_tokens"] == prompt + output
    assert (rec.workload["prompt_tokens"], rec.workload["output_tokens"]) == (prompt, output)  # output not halved
    assert any(f"prompt + output = {prompt:,} + {output:,}" in a for a in rec.assumptions)
    best = rec.results[0]
    # the same KV cache per GPU as plan() gives for the same request, layout and GPU
    p = plan(LLAMA_8B, Workload(task="inference", concurrency=64, prompt_tokens=prompt, output_tokens=output),
             precision=PrecisionPlan(weights=best.config["weights"], kv_cache=best.config["kv_cache"]),
             layout=Layout(gpus=best.gpus, tp=best.config["tp"], pp=best.config["pp"], dp=best.config["dp"]),
             gpu=get_gpu(best.gpu), suggest=False, choose_layout=False)
    assert p.workload.context_tokens == prompt + output
    assert best.config["kv_cache_bytes"] == p.per_gpu.kv_cache_bytes


def test_a_context_still_wins_over_the_request() -> None:
    spec = SweepSpec(workload=Workload(task="inference", context_tokens=8192, concurrency=8), prompt_tokens=1000,
                     output_tokens=200)
    assert recommend(LLAMA_8B, spec, load_catalog(), "1month", NOW, top=1).workload["context_tokens"] == 8192


def test_the_cli_takes_the_prompt(capsys: pytest.CaptureFixture[str]) -> None:
    cli: Any = run_json(capsys, "recommend", "llama-3.1-8b", "--prompt", "1000", "--output-tokens", "200",
                        "--concurrency", "64", "--top", "3")
    assert cli["workload"]["context_tokens"] == 1200
    assert cli["results"][0]["per_gpu"]["kv_cache_bytes"] < 16 * 2**30  # was 128 GiB: 64 sequences of 131,072
