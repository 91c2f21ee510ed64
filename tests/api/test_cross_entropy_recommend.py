"""``cross_entropy`` on ``recommend`` (CLI ``--cross-entropy``, API field): the loss the user states reaches the sweep's
memory, as it does ``plan``'s, and a bad value is refused in one line (exit 2, HTTP 422 problem+json). Bytes a logit
from ``planner/data/loss_memory.json`` (Megatron-Core's unfused loss 6, Transformer Engine's fused kernel 2)."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient

from anchorgpu.planner.memory.loss import loss_memory
from cli_runner import run

MODEL = "llama-3.2-1b"


def _used_bytes(capsys: Any, loss: str) -> dict[str, int]:
    code, out, err = run(capsys, "recommend", MODEL, "--task", "train", "--tokens", "1e9", "--top", "10",
                         "--gpu", "h100", "--micro-batch", "1", "--recompute", "none", "--cross-entropy", loss, "--json")
    assert code == 0, err
    return {json.dumps([r["offering"], r["gpus"], r["layout"], r["recompute"]], sort_keys=True): r["per_gpu_total_bytes"]
            for r in json.loads(out)["results"]}


def test_recommend_plans_the_stated_loss(capsys: Any) -> None:
    unfused, te = _used_bytes(capsys, "unfused"), _used_bytes(capsys, "te")
    same = set(unfused) & set(te)
    assert same, "the two sweeps share no configuration to compare"
    assert loss_memory("unfused").bytes_per_logit > loss_memory("te").bytes_per_logit
    assert all(te[key] < unfused[key] for key in same)


def test_recommend_refuses_a_bad_loss(capsys: Any, client: TestClient, problem: Any) -> None:
    code, out, err = run(capsys, "recommend", MODEL, "--task", "train", "--cross-entropy", "fused")
    assert code == 2 and not out and err.strip().count("\n") == 0 and "--cross-entropy 'fused'" in err
    response = client.post("/v1/recommend", json={"model": MODEL, "task": "train", "cross_entropy": "fused"})
    assert response.status_code == 422
    problem(response)
