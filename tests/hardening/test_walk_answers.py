"""An adversarial walk over the newest options (images, engines, odd GPU counts, training batches, recommend and
gpus compare with odd inputs): each defect it found is pinned here, and each test fails without its fix.

* ``recommend --task train --tokens 1`` priced a "run" of a fraction of one optimizer step (0.0 h) that ``plan``
  refuses;
"""

from __future__ import annotations

import pytest

from hardening.conftest import Served, cli_refusal, problem_of


def test_recommend_refuses_a_run_shorter_than_one_step_as_plan_does(local_db: None,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The default global batch is 4,194,304 tokens (4M): one token never finishes a step."""
    for command in (("plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8"), ("recommend", "llama-3.1-8b", "--top", "1")):
        err = cli_refusal(capsys, *command, "--task", "train", "--tokens", "1")
        assert "--tokens 1 is less than one optimizer step of 4,194,304 tokens" in err
    # LoRA's default batch is 32 sequences of 2,048 tokens = 65,536 tokens
    err = cli_refusal(capsys, "recommend", "llama-3.1-8b", "--task", "lora", "--tokens", "65535", "--top", "1")
    assert "less than one optimizer step of 65,536 tokens" in err


def test_the_api_recommend_refuses_a_run_shorter_than_one_step(sqlite_served: Served) -> None:
    response = sqlite_served.client.post("/v1/recommend", json={"model": "llama-3.1-8b", "task": "train",
                                                                "train_tokens": 1000, "global_batch": 2048, "top": 1})
    assert response.status_code == 422
    assert "--tokens 1,000 is less than one optimizer step of --global-batch 2,048 tokens" in problem_of(response)["detail"]
