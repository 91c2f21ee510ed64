"""Serving without --context: the model's window, at most 2^20 tokens (planner.inputs.DEFAULT_CONTEXT_CAP_TOKENS).

Llama 4 Scout's config (architectures/data/models, as published by meta-llama) declares a 10,485,760-token window;
sizing one sequence at that window made `plan llama-4-scout-17b-16e --gpu h100` choose 16 GPUs for one user.
"""

from __future__ import annotations

from anchorgpu.architectures import load_model
from anchorgpu.planner.inputs import DEFAULT_CONTEXT_CAP_TOKENS
from anchorgpu.planner.plan import Workload, plan


def test_a_window_beyond_the_cap_is_planned_at_the_cap_and_the_answer_says_so() -> None:
    model = load_model("llama-4-scout-17b-16e")
    assert model.max_context_tokens > DEFAULT_CONTEXT_CAP_TOKENS
    p = plan(model, Workload(task="inference"))
    assert p.workload.context_tokens == DEFAULT_CONTEXT_CAP_TOKENS
    assert any("not the model's whole" in a and "--context" in a for a in p.assumptions)


def test_a_window_within_the_cap_is_planned_whole() -> None:
    model = load_model("llama-3.1-8b")
    p = plan(model, Workload(task="inference"))
    assert p.workload.context_tokens == model.max_context_tokens == 131_072


def test_an_explicit_context_beyond_the_cap_is_kept() -> None:
    model = load_model("llama-4-scout-17b-16e")
    p = plan(model, Workload(task="inference", context_tokens=2_097_152))
    assert p.workload.context_tokens >= 2_097_152
