"""Stop 57's qa21: the small wrong answers earlier QA rounds left (benchmarks/hardening/stop57_qa21.md).

5. The NVFP4-on-AMD refusal (stop57_qa19.md, Left 6) said ``--engine vllm`` where nobody typed ``--engine``: plan,
   recommend and ``gpus compare`` chose vLLM by default. The workload carries how its engine was chosen
   (``engine_source``); the refusal now says "the default engine (vLLM)" then, and ``--engine vllm`` only where typed.
1. ``plan llama-3.1-70b --task train --gpu h200 --gpus 8`` chose TP 4 x PP 2 with 17.39 MiB of 139.80 GiB to spare
   and said nothing. The plan's total already holds a 5% fragmentation allowance, NCCL buffers and the CUDA context;
   but measured Megatron peaks came out up to 6.0% over the planned tensors and the caching allocator reserves about
   1% beyond its allocations (benchmarks/megatron_memory_checks.md runs B and C; the figures in
   src/anchorgpu/planner/data/training_headroom.json). A training plan whose headroom is below that remainder
   (1.0604 x 1.0103 - 1 - 0.05 = 2.1% of its total) now warns ``thin_training_headroom`` with the remedy
   Megatron-Bridge's memory guide gives first (``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True``). No layout of
   8 H200 has more room (every one splits 16 bytes a parameter eight ways), so the chooser is unchanged.
2. ``--concurrency 1k`` or ``1e3`` was Click's "'1k' is not a valid integer" while ``--prompt 1k`` and ``--tokens
   1e3`` were read: now ``--concurrency`` and ``--max-num-seqs`` (plan, recommend, ``allocations recipe``) and the
   page's fields go through the same parser (``anchorgpu.validation.whole_number``) with the decimal suffixes of
   ``--tokens`` (a count of requests: ``1k`` = 1,000, as users are counted; tokens keep ``1k`` = 1,024, as context
   lengths are written), and a fraction or an out-of-range value is refused in one line, exit 2. The API's fields
   are JSON integers (no spelling to read).
3. ``--task serve`` (``serving``) and ``--task training`` were refused as unknown tasks with no pointer to the one
   meant. DESIGN.md's CLI contract keeps one spelling per task (``workload.task`` is ``inference`` in every answer,
   and ``anchorgpu serve`` is the command that starts the API), so a synonym is not taken: it is refused naming the
   task meant ("did you mean 'inference'?"), on plan, recommend, ``gpus compare`` and the API.
4. The serving chooser's hint on one step fewer GPUs ("4 (TP 1, PP 4) would hold them with --weights int4-awq",
   DeepSeek-R1, 128,000-token prompts for 4 users on B200) named a staged layout on an NVLink server, which the
   chooser's stages rule (``planner/speed/serving_stages.py``, vLLM's distributed-serving guide) leaves out wherever
   a layout of TP alone is in the running (stop57_servepp.md, Left). The closest miss the hint re-plans now goes
   through the same rule.
"""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from cli_runner import run, run_json
from hardening.conftest import cli_refusal, page_error

_R1_MI355X = ("plan", "deepseek-r1-0528-fp4", "--gpu", "mi355x", "--concurrency", "8")


def test_the_nvfp4_on_amd_refusal_names_the_default_engine_when_none_was_typed(
        capsys: pytest.CaptureFixture[str]) -> None:
    err = cli_refusal(capsys, *_R1_MI355X)
    assert err.startswith("error: the default engine (vLLM) with nvfp4 weights on mi355x:"), err
    assert "--engine" not in err.split(";")[0], err
    typed = cli_refusal(capsys, *_R1_MI355X, "--engine", "vllm")
    assert typed.startswith("error: --engine vllm with nvfp4 weights on mi355x:"), typed  # control: typed, named as typed


def test_compare_and_recommend_which_take_no_engine_say_the_default_too(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "gpus", "compare", "mi355x", "b200", "--model", "deepseek-r1-0528-fp4")
    assert code == 0 and "refused: the default engine (vLLM) with nvfp4" in " ".join(out.split()), err
    code, _, err = run(capsys, "recommend", "deepseek-r1-0528-fp4", "--concurrency", "8", "--gpu", "mi355x")
    assert code == 2 and "the default engine (vLLM) with nvfp4 weights" in err and "--engine vllm" not in err, err


def test_the_api_says_the_default_engine_too(client: TestClient) -> None:
    body = {"model": "deepseek-r1-0528-fp4", "gpu": "mi355x", "concurrency": 8}
    r = client.post("/v1/plan", json=body)
    assert r.status_code == 422 and r.json()["detail"].startswith("the default engine (vLLM) with nvfp4"), r.text
    r = client.post("/v1/plan", json={**body, "engine": "vllm"})
    assert r.status_code == 422 and r.json()["detail"].startswith("engine vllm with nvfp4"), r.text


@pytest.mark.parametrize(("argv", "meant"), [
    (("recommend", "llama-3.1-8b", "--task", "serve"), "inference"),
    (("plan", "llama-3.1-8b", "--gpu", "h100", "--task", "serving"), "inference"),
    (("plan", "llama-3.1-8b", "--gpu", "h100", "--task", "training"), "train"),
    (("gpus", "compare", "h100", "h200", "--model", "llama-3.1-8b", "--task", "serve"), "inference"),
])
def test_a_synonym_of_a_task_is_refused_naming_the_task_meant(capsys: pytest.CaptureFixture[str],
                                                              argv: tuple[str, ...], meant: str) -> None:
    err = cli_refusal(capsys, *argv)
    assert f"did you mean {meant!r}?" in err, err


def test_an_unrelated_task_word_gets_no_guess(capsys: pytest.CaptureFixture[str]) -> None:
    err = cli_refusal(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--task", "cook")
    assert "did you mean" not in err and "valid: inference, train" in err, err


@pytest.mark.parametrize("route", ["/v1/plan", "/v1/recommend"])
def test_the_api_names_the_task_meant(client: TestClient, route: str) -> None:
    r = client.post(route, json={"model": "llama-3.1-8b", "task": "serve"})
    assert r.status_code == 422 and r.json()["detail"].endswith("did you mean 'inference'?"), r.text


@pytest.mark.parametrize("command", ["plan", "recommend"])
def test_concurrency_is_read_as_the_other_counts_are(capsys: pytest.CaptureFixture[str], command: str) -> None:
    base = (("plan", "llama-3.1-8b", "--gpu", "h100") if command == "plan" else ("recommend", "llama-3.1-8b", "--top", "1"))
    plain = run_json(capsys, *base, "--concurrency", "1000", "--max-num-seqs", "2000")
    assert plain["workload"]["concurrency"] == 1000
    for spelled in ("1k", "1e3", "1.0e3"):
        assert run_json(capsys, *base, "--concurrency", spelled, "--max-num-seqs", "2k") == plain, spelled


@pytest.mark.parametrize(("value", "reason"), [
    ("2.5", "'2.5' is 2.5, not a whole number"), ("1.5k", None), ("1e9", "expected a whole number from 1 to 1,000,000"),
    ("0", "expected a whole number from 1 to"), ("nan", "expected a whole number such as 64 or 1k"),
    ("1x", "expected a whole number such as 64 or 1k")])
def test_a_bad_concurrency_is_one_line(capsys: pytest.CaptureFixture[str], value: str, reason: str | None) -> None:
    if reason is None:  # 1.5k = 1,500 users: whole, so planned
        assert run_json(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--concurrency", value)["workload"][
            "concurrency"] == 1500
        return
    err = cli_refusal(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--concurrency", value)
    assert err.startswith("error: --concurrency ") and reason in err, err


def test_the_page_reads_concurrency_as_the_cli_does(client: TestClient) -> None:
    page = client.get("/plan?model=llama-3.1-8b&gpu=h100&concurrency=1k&lang=en")
    assert page.status_code == 200 and "1,000 sequences" in page.text, page_error(page.text)


_R1_128K_B200 = ("plan", "deepseek-r1", "--gpu", "b200", "--prompt", "128000", "--output-tokens", "1000",
                 "--concurrency", "4")


def test_the_fewer_gpus_hint_names_no_staged_layout_on_nvlink(capsys: pytest.CaptureFixture[str]) -> None:
    answer = run_json(capsys, *_R1_128K_B200)
    assert answer["gpus"] == 8 and answer["layout"]["pp"] == 1, answer["layout"]
    reason = " ".join(next(a for a in answer["assumptions"] if a.startswith("Layout chosen")).split())
    hint = reason.split("; 4 (")[1].split(") would hold them")[0]
    assert "PP" not in hint or "PP 1" in hint, reason  # was "TP 1, PP 4"
    assert "--weights int4-awq" in reason, reason


def test_a_hint_where_stages_are_needed_is_kept(capsys: pytest.CaptureFixture[str]) -> None:
    # control: 405B at 32 users on H100 needs two servers (TP 8 x PP 2); the hint on one server is TP 8, unchanged
    answer = run_json(capsys, "plan", "llama-3.1-405b", "--gpu", "h100", "--concurrency", "32")
    text = " ".join(json.dumps(answer).split())
    assert "8 (TP 8, PP 1) would hold them with --weights int4-awq" in text, text[:2000]


def test_a_training_plan_with_almost_no_headroom_warns(capsys: pytest.CaptureFixture[str]) -> None:
    answer = run_json(capsys, "plan", "llama-3.1-70b", "--task", "train", "--gpu", "h200", "--gpus", "8")
    assert answer["fits"] and answer["headroom_bytes"] < 2**30, answer["headroom_bytes"]  # 17.39 MiB
    thin = [w["message"] for w in answer["warnings"] if w["code"] == "thin_training_headroom"]
    assert thin and "under 2.1% of the 139.78 GiB planned" in thin[0] and "expandable_segments:True" in thin[0], thin


def test_a_training_plan_with_room_and_a_serving_plan_do_not(capsys: pytest.CaptureFixture[str]) -> None:
    roomy = run_json(capsys, "plan", "llama-3.1-70b", "--task", "train", "--gpu", "h200", "--gpus", "16")
    assert roomy["headroom_bytes"] > 0.021 * roomy["per_gpu"]["total_bytes"], roomy["headroom_bytes"]
    assert "thin_training_headroom" not in {w["code"] for w in roomy["warnings"]}
    served = run_json(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1")  # the engine fills its budget
    assert "thin_training_headroom" not in {w["code"] for w in served["warnings"]}


def test_the_threshold_comes_from_the_measured_figures() -> None:
    from anchorgpu.planner.headroom import thin_share

    # benchmarks/megatron_memory_checks.md: run B max allocated 27.77 GB over 26.18 GB planned (1 / 0.943 = 1.0604);
    # run C reserved 8,786.0 MiB over 8,696.85 MiB allocated (1.0103); the plan's own fragmentation allowance 5%
    assert thin_share() == pytest.approx(1.0604 * 1.0103 - 1 - 0.05)
    assert thin_share(0.10) == 0.0  # a larger allowance already covers them
