"""``POST /v1/plan`` refuses a launch for the other task before planning, as ``anchorgpu plan`` does
(:func:`anchorgpu.recipes.check_kind` with the task)."""

from __future__ import annotations

from typing import Any

from api.conftest import problem_of


def test_plan_refuses_a_launch_for_the_other_task_before_planning_as_the_cli_does(client: Any) -> None:
    # tp=3 divides none of Llama 3.1 8B's heads: the launch of the wrong task is named first, as `anchorgpu plan` names it
    for task, recipe, words in (("train", "vllm", "a serving engine for a train plan"),
                                ("inference", "deepspeed", "a training recipe for an inference plan")):
        r = client.post("/v1/plan", json={"model": "llama-3.1-8b", "gpu": "h100", "task": task, "recipe": recipe,
                                          "tp": 3})
        assert r.status_code == 422 and words in problem_of(r)["detail"], r.text
