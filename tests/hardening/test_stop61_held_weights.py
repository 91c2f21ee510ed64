"""The plan's JSON names what the GPUs hold the weights as (stop 60's decision 8, made in stop 61).

Under FP8 full training (Megatron-Core ``--fp8-param-gather``) the weight *format* the plan resolves stays ``bf16`` (the
JSON contract of ``precision.weights``) while the GPUs hold FP8 weights with their transposes; the header says so since
stop 60 (qa26b), and ``precision.held_weights`` now says it to the API's and CLI's JSON readers too.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from cli_runner import run_json

_TRAIN = ("plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "8")


def test_fp8_training_json_says_what_is_held(capsys: pytest.CaptureFixture[str]) -> None:
    fp8 = run_json(capsys, *_TRAIN, "--train-precision", "fp8")["precision"]
    assert fp8 == {"weights": "bf16", "kv_cache": "bf16", "held_weights": "fp8 + transposes"}
    mixed = run_json(capsys, *_TRAIN)["precision"]
    assert mixed["held_weights"] == mixed["weights"] == "bf16"


def test_serving_and_api_keep_the_format(capsys: pytest.CaptureFixture[str], client: TestClient) -> None:
    served = run_json(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--weights", "fp8")["precision"]
    assert served["held_weights"] == served["weights"] == "fp8"
    body = {"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": 8, "train_precision": "fp8"}
    response = client.post("/v1/plan", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["precision"]["held_weights"] == "fp8 + transposes"
