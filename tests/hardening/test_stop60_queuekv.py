"""Stop 60 (queuekv): a serving plan whose users exceed what its engines run at once (the engine's sequence cap, vLLM's
``max_num_seqs``, SGLang's ``max_running_requests``, TensorRT-LLM's ``max_batch_size``, times the replicas) sizes the
KV cache and recurrent state for the sequences running, not for every user: a waiting request holds no KV blocks
(vLLM's ``Scheduler.schedule`` allocates them with ``kv_cache_manager.allocate_slots`` as it moves a request from
waiting to running; SGLang's ``get_new_batch_prefill`` and TensorRT-LLM's ``KVCacheManager.prepare_resources`` alike:
``planner/serving_queue.py``). Before, every requested sequence's KV was counted as if held at once, so
``--gpus 8 --concurrency 20000`` kept TP 8 at 56,416 tok/s where 8 replicas (156,258) "did not fit"
(benchmarks/hardening/stop60_qa26.md, Left 1). Each test fails with the rule reverted."""

from __future__ import annotations

import math
import re

import pytest
from fastapi.testclient import TestClient

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.units import fmt_bytes
from cli_runner import run, run_json

_BASE = ("plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8", "--prompt", "100", "--output-tokens", "100")


def test_twenty_thousand_users_on_eight_h100_choose_eight_replicas_and_fit(capsys: pytest.CaptureFixture[str]) -> None:
    """stop60_qa26.md's case: 8 replicas run 8 x 1,024 at once (vLLM's default max_num_seqs on an H100), their
    memory holding those; the rest wait. Before: TP 8 kept (56,416 tok/s), 8 replicas refused for holding all 20,000
    sequences' KV (2,500 a replica)."""
    answer = run_json(capsys, *_BASE, "--concurrency", "20000")
    assert (answer["layout"]["tp"], answer["layout"]["dp"]) == (1, 8) and answer["fits"] is True
    assert answer["per_gpu"]["kv_cache_bytes"] == 1024 * answer["breakdown"]["kv_per_sequence_bytes"]
    assert answer["performance"]["output_tokens_per_s"] > 2.5 * 56_416  # stop60_qa26.md: TP 8's figure
    line = next(a for a in answer["assumptions"] if a.startswith("Users past the engines' sequence cap: 20,000 users, 8 "))
    assert "sized for the 8,192 sequences running, the other 11,808 wait in the queue holding none" in line
    assert "allocate_slots" in line


def test_the_layout_given_is_sized_for_its_running_sequences(capsys: pytest.CaptureFixture[str]) -> None:
    """TP 8 with 20,000 users: one engine runs 1,024, so the row is 1,024 sequences' (before: 20,000's, 63.48 GiB
    of the 71.26 GiB budget), and the CLI says which sequences the row is and how many wait."""
    answer = run_json(capsys, *_BASE, "--concurrency", "20000", "--tp", "8")
    kv_one = answer["breakdown"]["kv_per_sequence_bytes"]
    assert answer["per_gpu"]["kv_cache_bytes"] == 1024 * kv_one
    code, out, _ = run(capsys, *_BASE, "--concurrency", "20000", "--tp", "8")
    flat = re.sub(r"\s+", " ", out)
    assert code == 0
    assert (f"the KV cache row below is the 1,024 running sequences' ({fmt_bytes(1024 * kv_one)}): the other 18,976 "
            "wait in the queue holding none") in flat
    assert "longest context at the 1,024 running:" in flat and "as if held at once" not in flat


@pytest.mark.parametrize("users", [1, 64, 1024, 4000, 8192])
def test_at_or_below_the_cap_every_requested_sequence_is_held(users: int) -> None:
    """Control: where the engines run every user at once (at most 1,024 a replica), the row is every requested
    sequence's, one per user a replica, as before; one user past 8 x 1,024 on 8 replicas, it stops growing."""
    model, gpu = load_model("llama-3.1-8b"), get_gpu("h100")

    def kv(concurrency: int) -> tuple[int, int]:
        p = plan(model, Workload(task="inference", concurrency=concurrency, prompt_tokens=100, output_tokens=100),
                 precision=PrecisionPlan(), layout=Layout(gpus=8, tp=1, pp=1, dp=8), gpu=gpu, suggest=False,
                 choose_layout=False)
        return p.per_gpu.kv_cache_bytes, int(p.breakdown["kv_per_sequence_bytes"])

    held, one = kv(users)
    assert held == math.ceil(users / 8) * one
    assert kv(8193)[0] == kv(20_000)[0] == 1024 * one


@pytest.mark.parametrize(("engine", "setting"), [("vllm", "max_num_seqs"), ("sglang", "max_running_requests"),
                                                 ("trtllm", "max_batch_size")])
def test_every_engine_sizes_its_running_batch(capsys: pytest.CaptureFixture[str], engine: str, setting: str) -> None:
    """256 users with a cap of 64 on one H100: the KV row is 64 sequences' on each engine (each holds a waiting
    request's cache nowhere: planner/serving_queue.py's sources), and the plan names the engine's setting."""
    answer = run_json(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--concurrency", "256",
                      "--max-num-seqs", "64", "--prompt", "1000", "--output-tokens", "200", "--engine", engine)
    assert answer["per_gpu"]["kv_cache_bytes"] == 64 * answer["breakdown"]["kv_per_sequence_bytes"]
    assert any(a.startswith(f"Users past the engines' sequence cap: 256 users, 1 replica running at most 64 at once "
                            f"({setting})")
               for a in answer["assumptions"])


def test_a_state_space_models_recurrent_state_is_the_running_sequences(capsys: pytest.CaptureFixture[str]) -> None:
    """Mamba keeps a fixed state a sequence and no KV cache: 64 running of 256 hold 64 states (before: 256)."""
    answer = run_json(capsys, "plan", "mamba-2.8b", "--gpu", "h100", "--gpus", "1", "--concurrency", "256",
                      "--max-num-seqs", "64", "--prompt", "1000", "--output-tokens", "200")
    assert answer["layout"]["dp"] == 1  # one engine (without --gpus the chooser runs them on 4 replicas of 64)
    state = answer["breakdown"]["state_per_sequence_bytes"]
    assert answer["breakdown"]["recurrent_state_bytes"] == answer["per_gpu"]["kv_cache_bytes"] == 64 * state


def test_the_api_and_the_page_answer_as_the_cli(capsys: pytest.CaptureFixture[str], client: TestClient) -> None:
    """The same 20,000 users: the API's layout, verdict and memory are the CLI's, and the page's KV line names the
    8,192 running, the 11,808 waiting and the row's size."""
    cli = run_json(capsys, *_BASE, "--concurrency", "20000")
    api = client.post("/v1/plan", json={"model": "llama-3.1-8b", "gpu": "h100", "gpus": 8, "prompt": 100,
                                        "output_tokens": 100, "concurrency": 20000})
    assert api.status_code == 200
    body = api.json()
    assert (body["layout"]["tp"], body["layout"]["dp"], body["fits"]) == (1, 8, True)
    assert body["per_gpu"] == cli["per_gpu"] and body["headroom_bytes"] == cli["headroom_bytes"]
    page = client.get("/plan?model=llama-3.1-8b&gpu=h100&gpus=8&prompt=100&output_tokens=100&concurrency=20000"
                      "&lang=en").text
    found = re.search(r'<dd id="kv-queued">(.*?)</dd>', page)
    assert found and "8,192 running sequences" in found.group(1) and "11,808 wait" in found.group(1)
    assert f"{cli['per_gpu']['kv_cache_bytes'] / 2**30:.1f} GiB" in found.group(1)  # the page's GiB, one decimal


def test_the_speed_runs_the_batch_the_memory_is_sized_for(capsys: pytest.CaptureFixture[str]) -> None:
    """The speed model already ran the queued plan at its engines' cap (8 x 1,024) and timed the queue apart from
    TTFT (counted from admission); the memory now holds that same batch at its full length, so saturation, its
    full-length count and the KV row's sequences are one figure, and the output rate is the saturation's."""
    answer = run_json(capsys, *_BASE, "--concurrency", "20000")
    perf = answer["performance"]
    running = answer["breakdown"]["kv_cache_sequences_per_replica"] * answer["layout"]["dp"]
    assert running == perf["saturation_concurrency"] == perf["saturation_full_length_concurrency"] == 8192
    assert perf["max_output_tokens_per_s"] == perf["output_tokens_per_s"]
    assert "Requests queue: the engine runs 8,192 of the 20,000 requests at once" in str(perf)


def test_recommends_sweep_sizes_a_queued_row_as_plan_does() -> None:
    """The catalog sweep holds a replica's KV cache to the sequences its engine runs (sweep_serving._sequence_caps),
    as plan does: every H100 row of 20,000 users past its replicas' cap has plan's bytes and verdict (before: the
    sweep 20,000 sequences' KV, plan the same, both refusing; now both hold 1,024 a replica). Recommend still keeps
    only rows that run every user at once (recommend.service: ``concurrency <= dp x cap``)."""
    from anchorgpu.catalog import load_catalog
    from anchorgpu.planner.sweep import sweep
    from anchorgpu.planner.sweep_types import SweepSpec
    from anchorgpu.recommend import shapes_from_catalog
    from sweep_rows import plan_of_row

    shapes = tuple(s for s in shapes_from_catalog(load_catalog().offerings, max_servers=1) if s.gpu.name == "h100-sxm")
    w = Workload(task="inference", concurrency=20_000)
    result = sweep(load_model("llama-3.1-8b"), shapes, SweepSpec(workload=w, weights=("bf16",), kv_caches=("bf16",),
                                                                  prompt_tokens=100, output_tokens=100))
    queued = [result.row(i) for i in range(result.evaluated)
              if result.row(i)["concurrency"] > 1024 * result.row(i)["dp"]]
    assert queued and any(row["fits"] for row in queued)
    model = load_model("llama-3.1-8b")
    for row in queued:
        p, _ = plan_of_row(model, Workload(task="inference", prompt_tokens=100, output_tokens=100), result, row)
        assert row["kv_cache_bytes"] == p.per_gpu.kv_cache_bytes == 1024 * p.breakdown["kv_per_sequence_bytes"]
        assert row["fits"] == p.fits
