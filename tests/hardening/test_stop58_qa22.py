"""Stop 58's qa22: a new user's adversarial pass over plan, recommend, the API and the page
(benchmarks/hardening/stop58_qa22.md, whose table numbers these).

1. A serving plan of one output token a request among several users gave the time to first token of the request's
   own prompt chunks (``plan llama-3.1-8b --gpu h100 --gpus 1 --prompt 1000 --output-tokens 1 --concurrency 64``:
   TTFT 0.028 s) beside an output of 49 tok/s: 64 requests ending every 0.028 s would be 2,285 tok/s. By Little's
   law a request of ``O`` tokens takes ``O`` mean steps, and with ``O = 1`` all of it comes before the first (and
   only) token: TTFT is the step, 1.31 s (the ``O > 1`` guard skipped the rule, in plan and in recommend's sweep).
   1b. recommend's TTFT limit searched with the same guard: ``recommend llama-3.1-8b --prompt 1000 --output-tokens 1
   --max-ttft-s 0.5 --gpu h100`` offered 414 users a GPU at a 0.05-s TTFT and 48.8 tok/s (8.5 s a request); now 24.
2. The output rate and the time to first token contradicted each other where a prompt is longer than the engine's
   token budget: ``plan llama-3.1-8b --gpu l40s --concurrency 1 --prompt 5000 --output-tokens 2`` said TTFT 0.359 s,
   TPOT 22.4 ms and 5.8 tok/s, where one user's request of 0.381 s gives 5.2. The rate was the steady state's mean
   step, which spreads the prompt over the request's ``O`` steps as if one step held 2,501 tokens, while the TTFT
   runs the prompt's own budget-sized chunks (three of 2,048 on the L40S's vLLM budget). By Little's law ``B``
   users emit ``B * O / (TTFT + (O - 1) * TPOT)``: the rate is now timed at no less than that cycle
   (``speed.request_cycle.request_step_s``, and the sweep alike). It moved the chooser: DeepSeek-R1 for 4 users of
   128,000 + 1,000 on 8 B200 as TP 2 x PP 4 was "115 tok/s" at a 20.9-s TTFT (4 x 1,000 tokens over 20.9 s +
   999 x 29.8 ms is 79), so a staged layout that was never faster looked 13% faster than TP 8.
3. More users than the engine runs (``--concurrency 256 --max-num-seqs 64``): the plan said "timed for 256 requests
   at once" and a time to first token of 0.034 s, from admission; the 192 waiting had no figure. By Little's law
   each of the 256 takes 256 x 200 / 3,951 = 13.0 s a request, 3.24 s of it running: a "Requests queue" line now
   says the 9.72-s wait (``speed.request_cycle.admission_wait_s``), under "Still to check" and on the page, and the
   CLI's line says 64 of them run at once.
4. A package its software sees as two devices (MI250X: 2 GCDs of 64 GB) was planned as one GPU with no word of it:
   ``plan qwen3-30b-a3b --gpu mi250x --gpus 1 --concurrency 4 --recipe vllm`` fits at 63.22 GiB as TP 1 and
   launches ``--tensor-parallel-size 1``, one 64-GB device. A ``package_is_several_devices`` warning now says to
   launch TP 2 (``devices_per_package`` in gpus.toml).
5. The page answered ``task=serve`` with the choices only, where the CLI and the API add "did you mean 'inference'?"
   (stop57_qa21.md item 3): the page's error line now says it too, in its language.
6. The page said "must be a whole number" of a whole count past its bound (``concurrency=1e9``, ``context=100m``,
   ``tokens=1e30``), where the CLI says "expected a whole number from 1 to 1,000,000" and the API "must be at most":
   the form now reads the number and names the bound it passes.
7. The ru quote form and catalog wrote the offering's uplink in English ("25 Gb/s public").
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from cli_runner import run, run_json
from hardening.conftest import page_error

_ONE_TOKEN = ("--gpu", "h100", "--prompt", "1000", "--output-tokens", "1", "--concurrency", "64")


@pytest.mark.parametrize(("model", "gpus"), [("llama-3.1-8b", "1"), ("llama-3.1-8b", "2"), ("qwen3-30b-a3b", "1")])
def test_one_token_requests_end_at_their_first_token(capsys: pytest.CaptureFixture[str], model: str,
                                                     gpus: str) -> None:
    """Property: with one output token a request, C users in a closed loop emit C tokens every TTFT."""
    perf = run_json(capsys, "plan", model, *_ONE_TOKEN, "--gpus", gpus)["performance"]
    assert perf["output_tokens"] == 1
    assert 64 / perf["ttft_s"] == pytest.approx(perf["output_tokens_per_s"], rel=0.02), perf
    assert perf["ttft_s_ceiling"] <= perf["ttft_s_low"] <= perf["ttft_s"] <= perf["ttft_s_high"]


def test_one_token_ttft_runs_on_from_two_tokens(capsys: pytest.CaptureFixture[str]) -> None:
    """Property: one token fewer a request cannot cut the wait before the first token to a fortieth."""
    one = run_json(capsys, "plan", "llama-3.1-8b", *_ONE_TOKEN, "--gpus", "1")["performance"]["ttft_s"]
    two = run_json(capsys, "plan", "llama-3.1-8b", *_ONE_TOKEN[:-3], "2", "--concurrency", "64",
                   "--gpus", "1")["performance"]["ttft_s"]
    assert two / 2 < one < two * 2, (one, two)


def test_recommend_times_one_token_requests_as_plan(capsys: pytest.CaptureFixture[str]) -> None:
    rows = run_json(capsys, "recommend", "llama-3.1-8b", *_ONE_TOKEN)["results"]
    row = next(r for r in rows if r["gpus"] == 1)
    plan = run_json(capsys, "plan", "llama-3.1-8b", *_ONE_TOKEN, "--gpus", "1")["performance"]
    assert row["ttft_s"] == pytest.approx(plan["ttft_s"], rel=1e-3)
    assert 64 / row["ttft_s"] == pytest.approx(row["output_tokens_per_s"], rel=0.02)


@pytest.mark.parametrize(("path", "typed", "meant"), [("/plan", "serve", "inference"), ("/recommend", "serve", "inference"),
                                                       ("/plan", "Training", "train")])
def test_the_page_says_which_task_a_synonym_means(client: TestClient, path: str, typed: str, meant: str) -> None:
    """The CLI and the API answer ``task=serve`` with "did you mean 'inference'?" (planner.inputs.task_hint); the
    page's error line said only the choices."""
    page = client.get(f"{path}?model=llama-3.1-8b&gpu=h100&task={typed}&lang=en")
    assert page.status_code == 422
    assert page_error(page.text).endswith(f"; did you mean '{meant}'?"), page_error(page.text)
    ru = page_error(client.get(f"{path}?model=llama-3.1-8b&gpu=h100&task={typed}&lang=ru").text)
    assert ru.endswith(f"; возможно, имелось в виду '{meant}'?"), ru


def test_an_unknown_task_that_is_no_synonym_gets_no_guess(client: TestClient) -> None:
    said = page_error(client.get("/plan?model=llama-3.1-8b&gpu=h100&task=cook&lang=en").text)
    assert "must be one of" in said and "did you mean" not in said, said  # control


_LONG_PROMPTS = [("llama-3.1-8b", "l40s", "1", "5000", "2"), ("deepseek-v2-lite", "l40s", "1", "5000", "2"),
                 ("llama-3.1-8b", "l4", "1", "30000", "50"), ("qwen3-coder-next", "l40s", "2", "100000", "10"),
                 ("jamba-1.5-mini", "h100", "2", "100000", "10")]


@pytest.mark.parametrize(("model", "gpu", "users", "prompt", "output"), _LONG_PROMPTS)
def test_the_rate_is_no_faster_than_a_request_takes(capsys: pytest.CaptureFixture[str], model: str, gpu: str,
                                                    users: str, prompt: str, output: str) -> None:
    """Property (Little's law): C users each waiting TTFT + (O - 1) x TPOT a request emit at most C x O over it."""
    out = run_json(capsys, "plan", model, "--gpu", gpu, "--concurrency", users, "--prompt", prompt,
                   "--output-tokens", output)
    perf, c, o = out["performance"], int(users), int(output)
    cycle = perf["ttft_s"] + (o - 1) * perf["tpot_s"]
    assert perf["output_tokens_per_s"] <= c * o / cycle * (1 + 1e-9), perf
    if c == 1:  # one user: the rate is its request's, exactly
        assert perf["output_tokens_per_s"] == pytest.approx(o / cycle, rel=1e-9)
    assert perf["output_tokens_per_s"] <= perf["output_tokens_per_s_ceiling"]


def test_recommend_rates_long_prompts_as_plan(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("--concurrency", "1", "--prompt", "5000", "--output-tokens", "2")
    rows = run_json(capsys, "recommend", "llama-3.1-8b", "--gpu", "l40s", *args)["results"]
    row = next(r for r in rows if r["gpus"] == 1)
    perf = run_json(capsys, "plan", "llama-3.1-8b", "--gpu", "l40s", "--gpus", "1", *args)["performance"]
    assert row["output_tokens_per_s"] == pytest.approx(perf["output_tokens_per_s"], abs=0.05)  # the row's 0.1
    assert row["output_tokens_per_s"] == pytest.approx(2 / (perf["ttft_s"] + perf["tpot_s"]), abs=0.05)



@pytest.mark.parametrize(("query", "label", "bound"), [("concurrency=1e9", "Concurrency", "1,000,000"),
                                                        ("context=100m", "Context (tokens)", "10,000,000"),
                                                        ("task=train&tokens=1e30", "Training tokens",
                                                         "1,000,000,000,000,000")])
def test_the_page_names_the_bound_a_whole_count_passes(client: TestClient, query: str, label: str, bound: str) -> None:
    from anchorgpu.validation import LIMITS  # the bounds the CLI and the API hold the same fields to

    name = query.rsplit("&", 1)[-1].split("=")[0]
    assert f"{LIMITS[name].high:,.0f}" == bound
    said = page_error(client.get(f"/plan?model=llama-3.1-8b&gpu=h100&{query}&lang=en").text)
    assert said == f"“{label}”: must be at most {bound}", said
    ru = page_error(client.get(f"/plan?model=llama-3.1-8b&gpu=h100&{query}&lang=ru").text)
    assert "не больше" in ru, ru


def test_a_fraction_is_still_not_whole_on_the_page(client: TestClient) -> None:
    said = page_error(client.get("/plan?model=llama-3.1-8b&gpu=h100&concurrency=2.5&lang=en").text)
    assert said == "“Concurrency”: must be a whole number", said  # control



_QUEUED = ("plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--concurrency", "256", "--max-num-seqs", "64",
           "--prompt", "1000", "--output-tokens", "200")


def test_users_beyond_saturation_are_told_their_wait(capsys: pytest.CaptureFixture[str]) -> None:
    """Property (Little's law): the wait said is C x O / rate less the running request's TTFT + (O - 1) x TPOT."""
    import re

    perf = run_json(capsys, *_QUEUED)["performance"]
    assert perf["saturation_concurrency"] == 64
    (line,) = [a for a in perf["assumptions"] if a.startswith("Requests queue:")]
    said = float(re.search(r"each waits about ([0-9.,]+) s", line).group(1).replace(",", ""))
    wait = 256 * 200 / perf["output_tokens_per_s"] - perf["ttft_s"] - 199 * perf["tpot_s"]
    assert said == pytest.approx(wait, rel=5e-3) and wait > 100 * perf["ttft_s"]
    code, out, _ = run(capsys, *_QUEUED)
    text = " ".join(out.split())
    assert code == 0 and "64 of them running at once" in text and "Requests queue: the engine runs 64 of the 256" in text


def test_no_wait_is_said_where_the_engine_runs_every_user(capsys: pytest.CaptureFixture[str]) -> None:
    perf = run_json(capsys, *_QUEUED[:7], "64", *_QUEUED[8:])["performance"]  # control: 64 users, 64 running
    assert not [a for a in perf["assumptions"] if a.startswith("Requests queue:")]



def test_recommends_ttft_limit_holds_one_token_requests(capsys: pytest.CaptureFixture[str]) -> None:
    """Property: every row kept under --max-ttft-s meets it, and its users end a request every TTFT (Little's law)."""
    rows = run_json(capsys, "recommend", "llama-3.1-8b", "--prompt", "1000", "--output-tokens", "1",
                    "--max-ttft-s", "0.5", "--gpu", "h100")["results"]
    assert rows
    for row in rows:
        assert row["ttft_s"] <= 0.5, row
        assert row["concurrency"] / row["ttft_s"] == pytest.approx(row["output_tokens_per_s"], rel=0.02), row


def test_a_package_of_two_devices_says_the_tp_to_launch(capsys: pytest.CaptureFixture[str]) -> None:
    """4. MI250X is planned as AMD counts it, one 128-GB GPU, but ROCm sees its 2 GCDs as 64-GB devices (the row's own
    notes): Qwen3-30B-A3B for 4 users on one MI250X fits at 63.22 GiB as TP 1, and its vLLM recipe said
    ``--tensor-parallel-size 1``, one 64-GB device. The plan now says to launch TP 2 (gpus.toml devices_per_package)."""
    from anchorgpu.hardware import get_gpu

    n = get_gpu("mi250x").devices_per_package
    assert n == 2 and get_gpu("h100").devices_per_package == 1
    out = run_json(capsys, "plan", "qwen3-30b-a3b", "--gpu", "mi250x", "--gpus", "1", "--concurrency", "4")
    (said,) = [w["message"] for w in out["warnings"] if w["code"] == "package_is_several_devices"]
    assert out["layout"]["tp"] == 1 and f"launch TP {n} where this plan says TP 1" in said, said
    assert f"{get_gpu('mi250x').memory_bytes / n / 2**30:.2f} GiB each" in said
    plain = run_json(capsys, "plan", "qwen3-30b-a3b", "--gpu", "mi300x", "--gpus", "1", "--concurrency", "4")
    assert "package_is_several_devices" not in [w["code"] for w in plain["warnings"]]  # control: one device


def test_the_russian_catalog_says_the_uplink_in_russian(client: TestClient) -> None:
    """(a) The quote form and the catalog's tooltip wrote the offering's network as the catalog's English summary
    ('100 Gb/s public; 8x400 Gb/s InfiniBand NDR'); the uplink is now the page's words (ru 'внешний канал 100
    Гбит/с'), the fabric and link names kept as the datasheets write them."""
    from anchorgpu.catalog import load_catalog

    gbps = load_catalog().offering("h100-sxm-8x-bm").network_gbps
    ru = client.get("/catalog?lang=ru").text
    assert f"внешний канал {gbps} Гбит/с" in ru and f"{gbps} Gb/s public" not in ru
    assert f"{gbps} Gb/s public uplink" in client.get("/catalog?lang=en").text  # control
