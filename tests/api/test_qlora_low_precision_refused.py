"""QLoRA keeps its base weights in 4-bit NF4 and bitsandbytes' Linear4bit dequantizes them to its 16/32-bit compute
dtype for every matmul (bitsandbytes-foundation/bitsandbytes@005a63c2 bitsandbytes/nn/modules.py, Linear4bit.forward:
``x.to(self.compute_dtype)`` then ``bnb.matmul_4bit``): an FP8 or FP4 QLoRA run is not a thing the stack runs, so
``--train-precision fp8|fp4 --task qlora`` is refused in one line (CLI exit 2, HTTP 422), while LoRA keeps FP8 (NeMo's
LoRA benchmarks ran in FP8)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from cli_runner import run


@pytest.mark.parametrize("precision", ["fp8", "fp4"])
def test_the_cli_refuses_a_low_precision_qlora_in_one_line(capsys: pytest.CaptureFixture[str], precision: str) -> None:
    code, _, err = run(capsys, "plan", "llama-3.1-8b", "--gpu", "b200", "--task", "qlora", "--train-precision", precision)
    assert code == 2 and err.count("\n") == 1, err
    assert f"--train-precision {precision} with --task qlora" in err and "bitsandbytes Linear4bit" in err


def test_lora_keeps_fp8(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--task", "lora", "--train-precision", "fp8")
    assert code == 0, err


def test_the_api_refuses_it_as_422_on_plan_and_recommend(client: TestClient, problem: Any) -> None:
    body = {"model": "llama-3.1-8b", "task": "qlora", "train_precision": "fp8"}
    for route, extra in (("/v1/plan", {"gpu": "h100"}), ("/v1/recommend", {})):
        response = client.post(route, json={**body, **extra})
        assert response.status_code == 422, (route, response.text)
        detail = problem(response)["detail"]
        assert "task qlora" in detail and "--task" not in detail and "\n" not in detail
