"""Stop 52's QA pass (benchmarks/hardening/stop52_qa.md): the README walked as a new user, then odd flags through the
CLI and POST /v1/plan. Each test pins a fix and fails on the main it branched from (bad3147); the controls pass on
both."""

from __future__ import annotations

from pathlib import Path

import pytest

from anchorgpu.units import GIB, fmt_bytes
from cli_runner import run_json
from hardening.conftest import Served, cli_refusal, problem_of

README = Path(__file__).resolve().parents[2] / "README.md"


def _said(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize(("ep", "concurrency"), [(8, 64), (8, 1), (2, 64), (1, 64)])
def test_a_serving_ep_without_gpus_is_kept(capsys: pytest.CaptureFixture[str], ep: int, concurrency: int) -> None:
    """``plan mixtral-8x7b --gpu h100 --ep 8`` (no --gpus) planned TP 2 with EP 1: the fewest-GPU chooser ignored the
    layout given and dropped the --ep in silence. Now only layouts of that EP are tried: EP 8 on one 8-GPU server (TP
    8 with the experts whole over it for one user, attention data parallelism for 64), EP 2 on 2 GPUs; --ep 1 keeps
    the experts sliced by TP."""
    doc = run_json(capsys, "plan", "mixtral-8x7b", "--gpu", "h100", "--ep", str(ep),
                   "--concurrency", str(concurrency))
    assert doc["layout"]["ep"] == ep and doc["fits"] is True, doc["layout"]
    assert doc["layout"]["gpus"] >= ep
    chosen = next(line for line in doc["assumptions"] if line.startswith("Layout chosen"))
    assert f"with --ep {ep} as given" in chosen, chosen


def test_the_api_keeps_a_serving_ep_without_gpus(sqlite_served: Served) -> None:
    """The same through POST /v1/plan: ``{"ep": 8}`` came back ``layout.ep == 1``."""
    response = sqlite_served.client.post("/v1/plan", json={"model": "mixtral-8x7b", "gpu": "h100", "ep": 8,
                                                           "prompt": 8000, "output_tokens": 50})
    assert response.status_code == 200, response.text[:300]
    assert response.json()["layout"]["ep"] == 8


def test_a_dense_model_with_ep_and_no_gpus_is_refused(capsys: pytest.CaptureFixture[str],
                                                      sqlite_served: Served) -> None:
    """``plan llama-3.1-70b --gpu h100 --ep 2`` planned TP 4 and said nothing (with --gpus it was already refused)."""
    err = cli_refusal(capsys, "plan", "llama-3.1-70b", "--gpu", "h100", "--ep", "2")
    assert "expert parallelism needs a mixture-of-experts model" in err
    problem = problem_of(sqlite_served.client.post("/v1/plan", json={"model": "llama-3.1-70b", "gpu": "h100",
                                                                     "ep": 2}))
    assert problem["status"] == 422 and "mixture-of-experts" in problem["detail"]


@pytest.mark.parametrize(("model", "gpu", "ep", "named"), [
    ("deepseek-v3", "mi300x", "4", "attention data parallelism over 4 GPUs or TP 4"),  # EP 4 never holds it
    ("deepseek-v3", "h100", "16", "inside one 8-GPU server"),  # the chooser's EP layouts stay in a server
])
def test_an_ep_no_layout_holds_is_refused_naming_it(capsys: pytest.CaptureFixture[str], model: str, gpu: str,
                                                    ep: str, named: str) -> None:
    """Where no layout of that EP holds the job, the plan says so in one line instead of planning TP 2 x PP 2
    (DeepSeek-V3 on MI300X with --ep 4) or TP 8 x PP 2 (H100 with --ep 16) without the EP asked."""
    err = _said(cli_refusal(capsys, "plan", model, "--gpu", gpu, "--ep", ep))
    assert f"--ep {ep} without --gpus: no layout of" in err and named in err, err
    assert "leave --ep out" in err


def test_an_ep_refusal_names_the_part_that_fails(capsys: pytest.CaptureFixture[str]) -> None:
    """"ep=16 must divide the 256 experts and the tp·dp = 8 GPUs" named a condition that held (16 divides 256);
    each part is now said alone."""
    err = cli_refusal(capsys, "plan", "mixtral-8x7b", "--gpu", "h100", "--gpus", "8", "--tp", "8", "--ep", "16")
    assert "--ep 16 does not divide the 8 experts of mixtral" in err, err
    err = cli_refusal(capsys, "plan", "deepseek-v3", "--gpu", "h200", "--gpus", "16", "--tp", "8", "--pp", "2",
                      "--ep", "16", "--concurrency", "64")
    assert "--ep 16 must divide the tp·dp = 8 GPUs of a stage" in err and "256 experts" not in err, err


def test_sizes_of_a_thousand_units_or_more_separate_thousands(capsys: pytest.CaptureFixture[str]) -> None:
    """``--micro-batch 100000``: "needs 1023.01 TiB of 79.18 GiB per GPU", the one figure of the plan without a
    separator. The split is given (``--dp 8 --zero 1``): with it open, plan shows the closest split tried on the 8 GPUs
    since stop 57 (closest), which needs less than a thousand TiB."""
    assert fmt_bytes(1000 * GIB) == "1,000.00 GiB"
    doc = run_json(capsys, "plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "8", "--dp", "8",
                   "--zero", "1", "--micro-batch", "100000")
    missing = [w["message"] for w in doc["warnings"] if w["code"] == "does_not_fit"]
    assert missing and "1,0" in missing[0] and "TiB" in missing[0], missing


def test_the_readme_recommend_journey_names_the_gpu_its_row_is_on(capsys: pytest.CaptureFixture[str]) -> None:
    """README: "`anchorgpu recommend qwen3-235b-a22b --concurrency 256 --engine trtllm` puts one 8 x H200 server at TP
    8 x EP 8, 4,244 tok/s" -- without --gpu that row is 7th (A100, RTX PRO 6000 and H100 NVL servers come first);
    the command now names --gpu h200, and its first row is the one quoted (at 128 users since stop 52's refit, where
    TP 8 x EP 8 is still the fastest one-server layout)."""
    said = _said(README.read_text())
    command = "`anchorgpu recommend qwen3-235b-a22b --concurrency 128 --engine trtllm --gpu h200` puts one 8 x H200"
    assert command in said
    doc = run_json(capsys, "recommend", "qwen3-235b-a22b", "--concurrency", "128", "--engine", "trtllm", "--gpu",
                   "h200", "--top", "1")
    first = doc["results"][0]
    assert first["offering"] == "h200-8x-bm" and first["servers"] == 1
    assert (first["layout"]["tp"], first["layout"]["ep"]) == (8, 8)
    assert f"puts one 8 x H200 server at TP 8 x EP 8, {first['decode_tokens_per_s_total']:,.0f} tok/s" in said


def test_the_readme_vision_journey_quotes_the_ttft_printed(capsys: pytest.CaptureFixture[str]) -> None:
    """README said "TTFT 0.39 s" for the Qwen2.5-VL journey; the CLI prints 0.399 s, 0.40 to two places."""
    doc = run_json(capsys, "plan", "qwen2.5-vl-7b", "--gpu", "l40s", "--prompt", "1000", "--output-tokens", "200",
                   "--concurrency", "16", "--images-per-request", "2", "--image-resolution", "1024x1024")
    assert f"TTFT {doc['performance']['ttft_s']:.2f} s (the vision" in _said(README.read_text())
