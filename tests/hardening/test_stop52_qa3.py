"""Stop 52's third QA pass (benchmarks/hardening/stop52_qa.md, "qa6"), over recommend's latency limits, the training
chooser around a given ``--tp``, serving's stages around a given TP and ``--ep`` in serving plans. Each test but the
controls fails on the main it branched from (191c58a7):
1. a limit of 1e7 tokens/s was written ``1e+07`` in the reason, the assumption and the sweep's words (``:g``), not
   with thousands separators as every other count;
2. a given training ``--tp 16`` was chosen around with the chooser's sentence "tensor parallelism stays inside one
   server" beside the tp_across_nodes warning that it spans two;
3. the recommend and plan pages wrote a float bound as pydantic gives it ("must be at most 86400.0", "more than 0.0");
4. ``--recipe vllm`` of a plan with EP inside TP smaller than the TP (``--tp 4 --ep 2``) launched
   ``--enable-expert-parallel``, which splits the experts over all TP ranks (EP 4), a layout other than the plan's,
   said only as an assumption; it is now refused in one line, as the other recipes refuse what they cannot launch."""

from __future__ import annotations

import html
import re

import pytest

from cli_runner import run, run_json
from hardening.conftest import Served, cli_refusal, problem_of

REC_8B = ("recommend", "llama-3.1-8b", "--gpu", "h100", "--top", "2", "--max-servers", "1")


# 1. thousands separators in the limits' words ------------------------------------------------------------------


def test_a_large_floor_is_written_with_separators(capsys: pytest.CaptureFixture[str]) -> None:
    answer = run_json(capsys, *REC_8B, "--min-tokens-per-s-per-user", "1e7")
    reasons = [r["reason"] for r in answer["rejected"]]
    assert reasons and all("reaches 10,000,000 tokens/s per user" in r for r in reasons), reasons
    said = " ".join(answer["assumptions"])
    assert "decode at least 10,000,000 tokens/s a user" in said, said
    assert "decode 10,000,000 tokens/s or faster" in said, said  # the sweep's floor rung
    assert "1e+07" not in said + " ".join(reasons)


def test_an_ordinary_floor_and_ttft_read_as_before(capsys: pytest.CaptureFixture[str]) -> None:
    """Control: 20 and 2 stay '20' and '2'; 33.3 stays '33.3' (units.fmt_given)."""
    said = " ".join(run_json(capsys, *REC_8B, "--min-tokens-per-s-per-user", "33.3", "--max-ttft-s", "2")["assumptions"])
    assert "decode at least 33.3 tokens/s a user" in said and "first token within 2 s" in said, said


# 2. a given training TP wider than a server -----------------------------------------------------------------------


def test_a_given_tp_wider_than_a_server_is_not_said_to_stay_inside_one(capsys: pytest.CaptureFixture[str]) -> None:
    answer = run_json(capsys, "plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--tp", "16")
    chosen = next(a for a in answer["assumptions"] if a.startswith("Layout chosen"))
    assert "stays inside one server" not in chosen and "TP 16 as given spans servers of 8" in chosen, chosen
    assert "tp_across_nodes" in {w["code"] for w in answer["warnings"]}


def test_a_tp_inside_a_server_still_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    answer = run_json(capsys, "plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--tp", "2")
    chosen = next(a for a in answer["assumptions"] if a.startswith("Layout chosen"))
    assert chosen.endswith("tensor parallelism stays inside one server."), chosen


# 3. the pages' bounds -----------------------------------------------------------------------------------------------


def _page_error(text: str) -> str:
    found = re.search(r'id="recommend-error"><span[^>]*>(.*?)</span>', text, re.S)
    assert found, text[:300]
    return html.unescape(found.group(1))


@pytest.mark.parametrize(("query", "said"), [
    ("max_ttft_s=1e308", "max_ttft_s: must be at most 86,400"),
    ("min_tokens_per_s_per_user=1e9", "min_tokens_per_s_per_user: must be at most 10,000,000"),
    ("max_ttft_s=-0", "max_ttft_s: must be more than 0"),
])
def test_the_recommend_page_writes_a_bound_as_a_number(sqlite_served: Served, query: str, said: str) -> None:
    response = sqlite_served.client.get(f"/recommend?model=llama-3.1-8b&gpu=h100&top=2&max_servers=1&{query}")
    assert response.status_code == 422
    assert _page_error(response.text) == said


# 4. vLLM's expert parallelism is TP x DP -----------------------------------------------------------------------------

MOE_EP2_TP4 = ("plan", "qwen3-30b-a3b", "--gpu", "h100", "--gpus", "4", "--tp", "4", "--ep", "2")


def test_vllm_recipe_refuses_ep_smaller_than_tp(capsys: pytest.CaptureFixture[str]) -> None:
    err = cli_refusal(capsys, *MOE_EP2_TP4, "--recipe", "vllm")
    assert "EP 2 inside TP 4" in err and "would run EP 4" in err and "--ep 4" in err, err


@pytest.mark.parametrize(("kind", "flag"), [("sglang", "--ep-size 2"), ("trtllm", "--ep_size 2")])
def test_the_engines_with_an_ep_size_still_launch_it(capsys: pytest.CaptureFixture[str], kind: str, flag: str) -> None:
    code, out, err = run(capsys, *MOE_EP2_TP4, "--recipe", kind)
    assert code == 0, err
    assert re.search(re.escape(flag) + r"\b", " ".join(out.split())), out[-1500:]


def test_vllm_recipe_of_ep_equal_to_tp_still_launches(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "plan", "qwen3-30b-a3b", "--gpu", "h100", "--gpus", "8", "--tp", "4", "--ep", "4",
                         "--recipe", "vllm")
    assert code == 0, err
    assert "--tensor-parallel-size 4" in " ".join(out.split()) and "--enable-expert-parallel" in out


def test_the_api_refuses_the_vllm_recipe_in_one_line(sqlite_served: Served) -> None:
    response = sqlite_served.client.post("/v1/plan", json={"model": "qwen3-30b-a3b", "gpu": "h100", "gpus": 4, "tp": 4,
                                                           "ep": 2, "recipe": "vllm"})
    problem = problem_of(response)
    assert problem["status"] == 422 and "EP 2 inside TP 4" in problem["detail"], problem
