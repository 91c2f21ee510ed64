"""An adversarial walk over the newest options (images, engines, odd GPU counts, training batches, recommend and
gpus compare with odd inputs): each defect it found is pinned here, and each test fails without its fix.

* ``recommend --task train --tokens 1`` priced a "run" of a fraction of one optimizer step (0.0 h) that ``plan``
  refuses;
* ``recommend --term 99999months`` priced a term of 71,999,280 hours that ``quote`` refuses (at most 10 years), and
  told the user to quote it next;
* ``recommend``'s cost per million output tokens was rounded to the cent: a 1B model for 1,000 users costs
  $0.0065 a million tokens on one offering and $0.0091 on the next, and both read $0.01 (the CLI, the JSON and the
  page);
* ``gpus compare A B --model whisper-large-v3`` was refused for a context of 8,192 tokens the user never typed (the
  default, past Whisper's 448), ``--context 8k`` was "not a valid integer" there while plan takes it, and ``--context``
  or ``--precision`` without ``--model`` were ignored;
* ``gpus --min-memory-gb inf`` listed nothing where ``nan`` was refused;
* an empty or blank model or GPU name was "not found" (exit 3, HTTP 404 for a blank model) where the API's schema
  refuses "" as bad input, and an unknown 5,000-character name was repeated whole in its one-line reason;
* ``plan qwen2.5-vl-7b --context 128000 --images-per-request 2`` was refused as "context 130738 exceeds ... 128000",
  a sum the user never typed, without saying that the images' 2,738 tokens made it;
* the plan's verdict showed the engine's memory share to whole percents: ``--gpu-memory-utilization 0.955`` read
  "96%" and TensorRT-LLM's 0.001 "0%";
* ``recommend --weights ','`` or ``--kv-cache ''`` (and ``"weights": ""`` in the API) was swept as the default, where
  ``plan --weights ''`` is refused;
* ``plan qwen3-30b-a3b --gpu l4 --engine sglang --max-num-batched-tokens 100000`` answered with a mem_fraction_static
  of -5.624 and an engine budget of -111.64 GiB (SGLang's reserve, 1.5 MiB a prefill-chunk token, past the GPU);
* ``recommend --task train --json`` gave the model's window (131,072) as the workload's context and a bf16 KV cache,
  and no sequence, where it trained on 2,048-token sequences with none;
* ``--images-per-request 0 --image-resolution 1024x1024`` planned text only and dropped the resolution silently;
* 100 users on 3 replicas (34, 33, 33) read "per user 85.0 tok/s" beside "output 8,575 tok/s", more than 85.0 x 100:
  the per-user figure is the busiest replica's and now says so;
* ``--output-tokens 131072`` on a 131,072-token model (and ``--context 1``) was planned, its memory for the window while
  the speed timed 1 prompt + 131,072 output tokens; Whisper's ``--output-tokens 447`` timed its 4-token task prompt
  + 447 in a 448-token window;
* ``plan --cuda-context-mib 65536`` was refused as "--gpu-memory-utilization 0.9: ..." though the user gave neither that
  fraction nor saw the context override named;
* ``recommend llama-3.1-70b --task train --tokens 1e15`` suggested ``anchorgpu quote ... --term 5404078h`` next, a run
  of 616 years that quote refuses (at most 10 years);
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from cli_runner import run
from hardening.conftest import Served, cli_refusal, problem_of


def test_recommend_refuses_a_run_shorter_than_one_step_as_plan_does(local_db: None,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The default global batch is 4,194,304 tokens (4M): one token never finishes a step."""
    for command in (("plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8"), ("recommend", "llama-3.1-8b", "--top", "1")):
        err = cli_refusal(capsys, *command, "--task", "train", "--tokens", "1")
        assert "--tokens 1 is less than one optimizer step of 4,194,304 tokens" in err
    # LoRA's default batch is 32 sequences of 2,048 tokens = 65,536 tokens
    err = cli_refusal(capsys, "recommend", "llama-3.1-8b", "--task", "lora", "--tokens", "65535", "--top", "1")
    assert "less than one optimizer step of 65,536 tokens" in err


def test_the_api_recommend_refuses_a_run_shorter_than_one_step(sqlite_served: Served) -> None:
    response = sqlite_served.client.post("/v1/recommend", json={"model": "llama-3.1-8b", "task": "train",
                                                                "train_tokens": 1000, "global_batch": 2048, "top": 1})
    assert response.status_code == 422
    assert "tokens 1,000 is less than one optimizer step of global_batch 2,048 tokens" in problem_of(response)["detail"]


@pytest.mark.parametrize("argv", [("recommend", "llama-3.1-8b"), ("recommend", "flux.1-dev"),
                                  ("quote", "h100-sxm-1x-vm")])
def test_every_face_that_prices_a_term_refuses_one_quote_refuses(local_db: None, capsys: pytest.CaptureFixture[str],
                                                                argv: tuple[str, ...]) -> None:
    """10 years are 87,600 hours (allocations' limit): 87,601 h is refused by quote, so by recommend too."""
    err = cli_refusal(capsys, *argv, "--term", "87601h")
    assert "term 87601h: at most 87,600 hours (10 years) can be quoted at once" in err


def test_the_api_recommend_refuses_a_term_quote_refuses(sqlite_served: Served) -> None:
    response = sqlite_served.client.post("/v1/recommend", json={"model": "llama-3.1-8b", "term": "99999months", "top": 1})
    assert response.status_code == 422 and "at most 87,600 hours" in problem_of(response)["detail"]


def test_the_cost_per_million_tokens_agrees_with_the_price_and_the_speed(local_db: None,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """$/M = total for the term / (tokens a second x the term's seconds / 10^6), to 4 significant digits."""
    code, out, err = run(capsys, "recommend", "llama-3.2-1b", "--concurrency", "1000", "--prompt", "10",
                         "--output-tokens", "10", "--top", "5", "--json")
    assert code == 0, err
    answer = json.loads(out)
    for r in answer["results"]:
        seconds = answer["term_hours"] * 3600
        expected = float(Decimal(r["total_usd"])) / (r["decode_tokens_per_s_total"] * seconds / 1e6)
        assert float(r["usd_per_million_output_tokens"]) == pytest.approx(expected, rel=1e-3), r["offering"]


def test_the_page_shows_a_rate_below_a_cent_with_its_digits() -> None:
    from anchorgpu.web.templating import environment

    assert environment("en").filters["usd_rate"]("0.006527") == "$0.006527"
    assert environment("ru").filters["usd_rate"]("0.006527").startswith("0,006527")


def test_gpus_compare_sizes_its_default_sequence_within_the_models_limit(local_db: None,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Whisper large-v3's decoder holds 448 positions (its config's max_target_positions)."""
    code, out, err = run(capsys, "gpus", "compare", "h100", "a100", "--model", "whisper-large-v3", "--json")
    assert code == 0, err
    assert json.loads(out)["plan"]["context_tokens"] == 448
    code, out, err = run(capsys, "gpus", "compare", "h100", "b200", "--model", "llama-3.1-70b", "--context", "8k", "--json")
    assert code == 0, err
    assert json.loads(out)["plan"]["context_tokens"] == 8192


@pytest.mark.parametrize("option", [("--context", "8k"), ("--precision", "fp8")])
def test_gpus_compare_refuses_what_only_a_models_plan_reads_without_one(local_db: None,
                                                                       capsys: pytest.CaptureFixture[str],
                                                                       option: tuple[str, str]) -> None:
    err = cli_refusal(capsys, "gpus", "compare", "h100", "b200", *option)
    assert f"{option[0]} applies to 'gpus compare A B --model M' only" in err


@pytest.mark.parametrize("value", ["inf", "nan", "-1"])
def test_gpus_refuses_a_memory_floor_that_is_not_a_finite_number(local_db: None, capsys: pytest.CaptureFixture[str],
                                                                 value: str) -> None:
    assert "expected a finite number" in cli_refusal(capsys, "gpus", "--min-memory-gb", value)


@pytest.mark.parametrize("argv", [("plan", "", "--gpu", "h100"), ("plan", " ", "--gpu", "h100"), ("recommend", "", "--top", "1"),
                                  ("plan", "llama-3.1-8b", "--gpu", ""), ("gpus", "compare", " ", "h100")])
def test_an_empty_name_is_bad_input_not_an_unknown_one(local_db: None, capsys: pytest.CaptureFixture[str],
                                                      argv: tuple[str, ...]) -> None:
    assert "the name is empty" in cli_refusal(capsys, *argv)


@pytest.mark.parametrize("body", [{"model": " ", "gpu": "h100"}, {"model": "llama-3.1-8b", "gpu": " "}])
def test_the_api_refuses_a_blank_name_as_bad_input(sqlite_served: Served, body: dict[str, str]) -> None:
    response = sqlite_served.client.post("/v1/plan", json=body)
    assert response.status_code == 422 and "the name is empty" in problem_of(response)["detail"]


@pytest.mark.parametrize("route", ["/v1/plan", "/v1/recommend"])
def test_the_api_refuses_an_empty_gpu_name_as_the_cli_does(sqlite_served: Served, route: str) -> None:
    """``"gpu": ""`` planned with no GPU (/v1/plan) or swept every GPU (/v1/recommend), where ``" "`` and the CLI's
    ``--gpu ''`` are refused; the page drops a blank field before it asks (web.planning.form_values)."""
    body = {"model": "llama-3.1-8b", "gpu": "", **({"top": 1} if route.endswith("recommend") else {})}
    response = sqlite_served.client.post(route, json=body)
    assert response.status_code == 422 and "the name is empty" in problem_of(response)["detail"]


def test_an_unknown_long_name_is_not_repeated_whole(local_db: None, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h" * 5000)
    assert code == 3 and len(err) < 300 and "(5,000 characters)" in err


@pytest.mark.parametrize("command", ["plan", "recommend"])
def test_a_context_the_images_push_past_the_window_says_so(local_db: None, capsys: pytest.CaptureFixture[str],
                                                           command: str) -> None:
    """Qwen2.5-VL-7B: 128,000 positions; a 1024x1024 image is 1,369 tokens (README's vision journey), two 2,738."""
    extra = ("--gpu", "l40s") if command == "plan" else ("--top", "1")
    err = cli_refusal(capsys, command, "qwen2.5-vl-7b", *extra, "--context", "128000", "--images-per-request", "2",
                      "--image-resolution", "1024x1024")
    assert "128,000 text + 2,738 image tokens = 130,738 exceeds qwen2.5-vl-7b's limit of 128,000 tokens" in err
    # the image a vision request has by default is named with the way to drop it
    err = cli_refusal(capsys, "plan", "gemma-3-4b", "--gpu", "l4", "--context", "131072")
    assert "--images-per-request 0 for text only" in err


@pytest.mark.parametrize(("argv", "shown"), [(("--gpu-memory-utilization", "0.955"), "serving engine budget: 95.5% of"),
                                             (("--engine", "trtllm", "--gpu-memory-utilization", "0.001",
                                               "--concurrency", "5"), "the peak plus 0.1% of the memory")])
def test_the_verdict_shows_the_memory_share_as_given(local_db: None, capsys: pytest.CaptureFixture[str],
                                                     argv: tuple[str, ...], shown: str) -> None:
    code, out, err = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", *argv)
    assert code == 0, err
    assert shown in " ".join(out.split())


@pytest.mark.parametrize("option", [("--weights", ","), ("--kv-cache", ""), ("--weights", " , ")])
def test_recommend_refuses_a_comma_list_with_nothing_in_it(local_db: None, capsys: pytest.CaptureFixture[str],
                                                           option: tuple[str, str]) -> None:
    err = cli_refusal(capsys, "recommend", "llama-3.1-8b", "--top", "1", *option)
    assert f"{option[0]} {option[1]!r}: no entry listed" in err


def test_the_api_recommend_refuses_an_empty_weights_list(sqlite_served: Served) -> None:
    response = sqlite_served.client.post("/v1/recommend", json={"model": "llama-3.1-8b", "weights": ",", "top": 1})
    assert response.status_code == 422 and "no entry listed" in problem_of(response)["detail"]


@pytest.mark.parametrize("gpu", ["l4", "h100"])
def test_a_prefill_chunk_whose_sglang_reserve_takes_the_gpu_is_refused(local_db: None,
                                                                        capsys: pytest.CaptureFixture[str],
                                                                        gpu: str) -> None:
    err = cli_refusal(capsys, "plan", "llama-3.1-8b", "--gpu", gpu, "--engine", "sglang",
                      "--max-num-batched-tokens", "100000", "--json")
    assert "--max-num-batched-tokens 100,000: SGLang reserves" in err and "mem_fraction_static would be -" in err


def test_recommend_training_states_the_sequence_it_trained_on(local_db: None, capsys: pytest.CaptureFixture[str]) -> None:
    """2,048 tokens is the default training sequence (README: "default 2,048 or the model's context if shorter")."""
    code, out, err = run(capsys, "recommend", "llama-3.1-8b", "--task", "train", "--tokens", "1e11", "--top", "1", "--json")
    assert code == 0, err
    workload = json.loads(out)["workload"]
    assert workload["seq_tokens"] == 2048 and workload["context_tokens"] is None and workload["kv_caches"] == []


@pytest.mark.parametrize("command", [("plan", "qwen2.5-vl-7b", "--gpu", "l40s"), ("recommend", "qwen2.5-vl-7b", "--top", "1")])
def test_a_resolution_for_no_image_is_refused(local_db: None, capsys: pytest.CaptureFixture[str],
                                              command: tuple[str, ...]) -> None:
    err = cli_refusal(capsys, *command, "--images-per-request", "0", "--image-resolution", "1024x1024")
    assert "--image-resolution 1024x1024 with --images-per-request 0: there is no image to size" in err


def test_per_user_figures_of_unequal_replicas_name_the_busiest(local_db: None, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", "3", "--prompt", "1000",
                         "--output-tokens", "200", "--concurrency", "100")
    assert code == 0, err
    assert "per user (busiest replica)" in out
    code, out, err = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", "4", "--prompt", "1000",
                         "--output-tokens", "200", "--concurrency", "100")  # 25 each: every user at one pace
    assert code == 0 and "per user " in out and "busiest" not in out


@pytest.mark.parametrize(("argv", "reason"), [
    (("llama-3.1-8b", "--output-tokens", "131072"), "at least 1 prompt + output 131,072 tokens exceed the model's limit"),
    (("llama-3.1-8b", "--context", "1000", "--output-tokens", "1000"), "exceed the context of 1,000 tokens"),
    (("llama-3.1-8b", "--context", "1", "--concurrency", "5"), "--context 1: a request needs at least 1 prompt and 1"),
    # Whisper's decoder holds 448 positions and starts from <|startoftranscript|><|lang|><|task|><|notimestamps|>
    (("whisper-large-v3", "--output-tokens", "445"), "the 4-token decoder prompt + output 445 tokens exceed"),
])
def test_a_request_needs_room_for_its_prompt_as_well_as_its_output(local_db: None, capsys: pytest.CaptureFixture[str],
                                                                   argv: tuple[str, ...], reason: str) -> None:
    assert reason in cli_refusal(capsys, "plan", *argv, "--gpu", "h100")


def test_vllms_start_up_refusal_names_the_default_fraction_and_the_context_override(
        local_db: None, capsys: pytest.CaptureFixture[str]) -> None:
    err = cli_refusal(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--cuda-context-mib", "65536")
    assert "--gpu-memory-utilization 0.9 (vLLM's default)" in err and "--cuda-context-mib 65,536" in err


def test_recommend_suggests_a_quote_that_quote_accepts(local_db: None, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "recommend", "llama-3.1-70b", "--task", "train", "--tokens", "1e15", "--top", "1")
    assert code == 0, err
    command = " ".join(out.split()).split("Next: anchorgpu ", 1)[1].split(" prices it", 1)[0].split()
    code, _, err = run(capsys, *command)
    assert code == 0, f"{command}: {err}"
