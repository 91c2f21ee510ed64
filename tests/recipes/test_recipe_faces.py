"""The recipe on the faces: ``anchorgpu plan --recipe KIND`` (text and --json) and the CLI's one-line refusals.

The API side (``POST /v1/plan`` with ``recipe``) is in tests/api/test_recipe_routes.py, beside its fixtures.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from cli_runner import run, run_json


def test_plan_json_carries_the_recipe(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_json(capsys, "plan", "llama-3.1-70b", "--context", "8k", "--concurrency", "32", "--gpu", "h100",
                   "--gpus", "8", "--recipe", "vllm")
    recipe = out["recipe"]
    assert recipe["kind"] == "vllm" and recipe["tool_version"].startswith("vllm ")
    assert f"--tensor-parallel-size {out['layout']['tp']}" in recipe["command"].replace(" \\\n  ", " ")
    assert set(recipe) == {"kind", "tool_version", "command", "files", "assumptions", "cannot_set"}


def test_plan_text_prints_the_launch_and_its_files(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "8", "--fsdp",
                         "--pp", "1", "--recipe", "deepspeed")  # --fsdp alone may choose stages, which it cannot launch
    assert code == 0, err
    assert "Launch (deepspeed, deepspeed 0.19.8)" in out and "ds_config.json" in out
    assert '"stage": 3' in out and "The plan could not set" in out


@pytest.mark.parametrize("argv,reason", [
    (("llama-3.1-8b", "--gpu", "h100", "--recipe", "helm"), "unknown kind"),
    (("llama-3.1-8b", "--gpu", "a100-80gb-sxm", "--kv-cache", "fp8", "--recipe", "sglang"), "no FP8 hardware"),
    (("llama-3.1-8b", "--gpu", "h100", "--recipe", "accelerate"), "training recipe for an inference plan"),
    (("llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "16", "--pp", "2", "--zero", "1",
      "--recipe", "accelerate"), "pipeline parallelism"),
])
def test_refusals_are_one_line_exit_2(capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], reason: str) -> None:
    code, out, err = run(capsys, "plan", *argv)
    assert code == 2 and out == ""
    assert reason in err and len(err.strip().splitlines()) == 1


def _book_two_h100_servers(capsys: pytest.CaptureFixture[str], sqlite_url: str, tmp_path: Any,
                           monkeypatch: pytest.MonkeyPatch, *, term: str, key: str) -> dict[str, Any]:
    """Through the CLI, on the test's own database: a quote for 2 x h100-sxm-8x-bm for ``term``, booked."""
    monkeypatch.setenv("ANCHORGPU_DATABASE_URL", sqlite_url)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("ANCHORGPU_API_KEY", raising=False)
    quote = run_json(capsys, "quote", "h100-sxm-8x-bm", "--term", term, "--quantity", "2")
    booked: dict[str, Any] = run_json(capsys, "book", quote["id"], "--idempotency-key", key)
    return booked


def test_allocations_recipe_plans_on_the_booked_servers(sqlite_url: str, tmp_path: Any,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    booked = _book_two_h100_servers(capsys, sqlite_url, tmp_path, monkeypatch, term="1month", key="recipe-1")
    body = run_json(capsys, "allocations", "recipe", booked["id"], "--kind", "skypilot", "--model", "llama-3.1-8b",
                    "--task", "train")
    assert (body["servers"], body["gpus_per_server"]) == (2, 8)
    task = body["recipe"]["files"][0]["text"]
    assert 'accelerators: "H100:8"' in task and "num_nodes: 2" in task
    code, out, err = run(capsys, "allocations", "recipe", booked["id"], "--kind", "vllm")
    assert code == 2 and "--kind and --model" in err
    code, out, err = run(capsys, "allocations", "recipe", "al_unknown", "--kind", "vllm", "--model", "llama-3.1-8b")
    assert code == 3 and "unknown allocation" in err


def test_recommend_writes_each_results_launch(capsys: pytest.CaptureFixture[str]) -> None:
    body = run_json(capsys, "recommend", "llama-3.1-8b", "--task", "train", "--term", "1month", "--top", "3",
                    "--recipe", "accelerate")
    assert body["results"]
    for row in body["results"]:
        text = row["recipe"]["files"][0]["text"]
        assert f"num_processes: {row['gpus']}" in text and f"num_machines: {row['servers']}" in text
    code, out, err = run(capsys, "recommend", "llama-3.1-8b", "--recipe", "helm")
    assert code == 2 and "unknown kind" in err and len(err.strip().splitlines()) == 1


def test_an_allocation_whose_servers_each_cannot_hold_the_model_gets_one_replica_over_them(
        sqlite_url: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """QA pass: Llama-3.1-405B on 2 x 8 H100 was planned one replica per server (TP 8, DP 2) — DOES NOT FIT — and
    given that launch, although TP 8 x PP 2 over both servers fits; now the first layout that fits is taken, and a
    launcher that cannot span servers says so in one line."""
    booked = _book_two_h100_servers(capsys, sqlite_url, tmp_path, monkeypatch, term="1w", key="recipe-405b")
    body = run_json(capsys, "allocations", "recipe", booked["id"], "--kind", "vllm", "--model", "llama-3.1-405b",
                    "--context", "4k")
    assert body["plan"]["fits"] is True
    assert (body["plan"]["layout"]["tp"], body["plan"]["layout"]["pp"]) == (8, 2)
    assert "--pipeline-parallel-size 2" in body["recipe"]["command"].replace(" \\\n  ", " ")
    code, out, err = run(capsys, "allocations", "recipe", booked["id"], "--kind", "k8s", "--model", "llama-3.1-405b",
                         "--context", "4k")
    assert code == 2 and out == "" and "spans 16 GPUs" in err and len(err.strip().splitlines()) == 1
    small = run_json(capsys, "allocations", "recipe", booked["id"], "--kind", "vllm", "--model", "llama-3.1-70b",
                     "--context", "8k")  # a model one server holds keeps a replica per server
    assert (small["plan"]["layout"]["tp"], small["plan"]["layout"]["dp"]) == (8, 2) and small["plan"]["fits"]


def test_a_plan_that_does_not_fit_gets_no_launch(capsys: pytest.CaptureFixture[str]) -> None:
    """QA pass: a plan that does not fit still printed a launch (with a "does NOT fit" note) that would run out of
    memory; now every kind refuses it in one line, naming the first "What would fit" change. Short by 146.43 GiB:
    131.42 GiB of BF16 weights + 32 x 2.5 GiB of KV cache + 6.09 GiB of activations + 0.15 GiB non-torch + 0.03 GiB of
    vLLM's 16-bit RoPE cos/sin table (131,072 positions, planner/data/rope_tables.json) = 217.69 GiB against vLLM's 0.9 x 79.18 GiB (the H100's CUDA total, gpus.toml) = 71.26 GiB."""
    for kind in ("vllm", "k8s"):
        code, out, err = run(capsys, "plan", "llama-3.1-70b", "--context", "8k", "--concurrency", "32", "--gpu",
                             "h100", "--gpus", "1", "--recipe", kind)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
        assert err.strip() == (f"error: --recipe {kind}: the plan does not fit on 1 x h100-sxm (short by 146.43 GiB "
                               "per GPU); plan with --gpus 4 --tp 4 first")
    # DeepSpeed plans on the PyTorch-native stack: its first "What would fit" change is that stack's plan's own (the
    # suggestions are ranked by predicted speed, so the change named is read from the plan, not written here)
    first = run_json(capsys, "plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "8", "--dp", "8",
                     "--zero", "0", "--train-stack", "pytorch")["suggestions"][0]["change"]
    code, out, err = run(capsys, "plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "8", "--dp", "8",
                         "--zero", "0", "--recipe", "deepspeed", "--json")
    assert code == 2 and out == "" and "does not fit on 8 x h100-sxm" in err and f"plan with {first} first" in err


def test_recommend_launches_each_row_as_it_was_sized(capsys: pytest.CaptureFixture[str]) -> None:
    """QA pass: a training row was planned again for its launch at no recompute and a micro-batch of the planner's
    choosing, not as the sweep sized it (micro-batch 1, the least recompute that fits): the launch differed from the
    row (micro-batch 4 on 7 x MI300X where the row priced 1) or did not fit at all. Each row's launch is now the
    row's own plan: it fits, with the row's micro-batch."""
    body = run_json(capsys, "recommend", "llama-3.1-70b", "--task", "train", "--max-servers", "8", "--term", "1month",
                    "--recipe", "torchrun-fsdp")
    launched = 0
    for row in body["results"] + body["pareto"]:
        if row["layout"]["pp"] > 1:  # torchrun's FSDP has no pipeline stages: refused for that, not for memory
            assert "pipeline parallelism" in row["recipe_refused"], row
            continue
        assert row["recipe"] is not None, row
        settings = json.loads(dict((f["name"], f["text"]) for f in row["recipe"]["files"])["anchorgpu_train.json"])
        assert settings["micro_batch_size"] == row["concurrency"], row["offering"]
        launched += 1
    assert launched >= 3
