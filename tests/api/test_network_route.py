"""``network_gbit_per_gpu`` on ``POST /v1/plan`` and ``--network-gbit-per-gpu`` on ``anchorgpu plan``: the bandwidth
between servers each GPU has (Gb/s, one direction) that a training layout spanning servers is timed at. Accepted and
stated on both faces; bad values refused in one line (HTTP 422, exit 2) before anything is planned."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from cli_runner import run

# 16 H100 on two servers: PP 2 stages over TP 8, so the stage transfers cross servers
SPANNING = {"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": 16, "tp": 8, "pp": 2, "dp": 1,
            "zero": 0, "micro_batch": 1, "recompute": "none", "virtual_stages": 1}
CLI = ["plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "16", "--tp", "8", "--pp", "2", "--dp",
       "1", "--zero", "0", "--micro-batch", "1", "--recompute", "none", "--virtual-stages", "1"]


def test_the_api_times_a_spanning_layout_at_the_network_given_and_says_so(client: TestClient) -> None:
    default = client.post("/v1/plan", json=SPANNING)
    slow = client.post("/v1/plan", json={**SPANNING, "network_gbit_per_gpu": 12.5})
    assert default.status_code == 200 == slow.status_code, slow.text
    d, s = default.json(), slow.json()
    assert d["workload"]["network_gbit_per_s_per_gpu"] is None and s["workload"]["network_gbit_per_s_per_gpu"] == 12.5
    # calibration.json's stated network_gbit_per_s_per_gpu: 400
    assert d["performance"]["network_gbit_per_s_per_gpu"] == 400 and s["performance"]["network_gbit_per_s_per_gpu"] == 12.5
    assert any("calibration's default" in a for a in d["performance"]["assumptions"] if a.startswith("network between"))
    assert any("as stated" in a for a in s["performance"]["assumptions"] if a.startswith("network between"))
    # the stage transfers cross the slower network: a longer pp_p2p, fewer tokens a second
    assert s["performance"]["step_time_breakdown_s"]["pp_p2p"] > d["performance"]["step_time_breakdown_s"]["pp_p2p"]
    assert s["performance"]["train_tokens_per_s"] < d["performance"]["train_tokens_per_s"]


def test_one_server_says_nothing_of_the_network(client: TestClient) -> None:
    one = client.post("/v1/plan", json={**SPANNING, "gpus": 8, "pp": 1})
    assert one.status_code == 200, one.text
    perf = one.json()["performance"]
    assert "network_gbit_per_s_per_gpu" not in perf
    assert not any(a.startswith("network between") for a in perf["assumptions"])


@pytest.mark.parametrize("value", [0, -1, "nan", "12.5", True, 1e6])
def test_a_bad_network_is_422_in_one_line(client: TestClient, problem: Any, value: object) -> None:
    body = json.dumps({**SPANNING, "network_gbit_per_gpu": value}).replace('"nan"', "NaN") if value == "nan" else None
    response = (client.post("/v1/plan", content=body, headers={"content-type": "application/json"}) if body
                else client.post("/v1/plan", json={**SPANNING, "network_gbit_per_gpu": value}))
    assert response.status_code == 422, response.text
    detail = problem(response)["detail"]
    assert "network_gbit_per_gpu" in detail and "\n" not in detail


def test_a_serving_plan_refuses_the_network_in_one_line(client: TestClient, problem: Any) -> None:
    response = client.post("/v1/plan", json={"model": "llama-3.1-8b", "gpu": "h100", "network_gbit_per_gpu": 100})
    assert response.status_code == 422
    detail = problem(response)["detail"]
    assert "network_gbit_per_gpu" in detail and "training" in detail and "\n" not in detail


def test_the_cli_takes_the_network_and_states_it(capsys: Any) -> None:
    code, out, err = run(capsys, *CLI, "--network-gbit-per-gpu", "12.5", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["performance"]["network_gbit_per_s_per_gpu"] == 12.5
    code, table, err = run(capsys, *CLI, "--network-gbit-per-gpu", "12.5")
    assert code == 0 and "network between servers: 12.5 Gb/s a GPU each way, as stated" in table


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "abc", "1e309", "100001"])
def test_the_cli_refuses_a_bad_network_with_exit_2(capsys: Any, value: str) -> None:
    code, out, err = run(capsys, *CLI, f"--network-gbit-per-gpu={value}")
    assert code == 2 and not out
    assert err.strip().count("\n") == 0 and "--network-gbit-per-gpu" in err


def test_the_cli_refuses_the_network_for_serving(capsys: Any) -> None:
    code, out, err = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--network-gbit-per-gpu", "100")
    assert code == 2 and not out and "applies to training" in err
