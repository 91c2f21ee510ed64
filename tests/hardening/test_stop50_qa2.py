"""Stop 50, the second QA pass (benchmarks/hardening/stop50_qa.md, "Stop 50 (branch qa2)"): the leftovers of the
first -- a one-token answer's TPOT, recommend's empty table, refusals' numbers -- pinned in the CLI's lines."""

from __future__ import annotations

import re

import pytest

from anchorgpu.cli.plan_render import NO_TPOT_LINE
from cli_runner import run, run_json
from hardening.conftest import cli_refusal

ONE_TOKEN = ("plan", "llama-3.1-8b", "--gpu", "h100", "--prompt", "200000", "--output-tokens", "1",
             "--allow-long-context")
SLOW_RECOMMEND = ("recommend", "llama-3.1-8b", "--top", "3", "--output-tokens")


def test_a_one_token_answer_shows_no_time_per_output_token(capsys: pytest.CaptureFixture[str]) -> None:
    """It read "time per output token 25,417.7 ms" beside a 26 s time to first token: with one output token no time
    passes between tokens. The JSON keeps ``tpot_s`` (its contract: the steady state's seconds per request)."""
    code, out, err = run(capsys, *ONE_TOKEN)
    assert code == 0, err
    speed = " ".join(out.split())
    assert " ".join(NO_TPOT_LINE.split()) in speed, out
    assert not re.search(r"time per output token [0-9]", speed), out
    assert re.search(r"time to first token [0-9.]+ s", speed) and re.search(r"per user [0-9.]+ tok/s", speed), out
    perf = run_json(capsys, *ONE_TOKEN)["performance"]
    assert perf["tpot_s"] == pytest.approx(1.0 / perf["decode_tokens_per_s_per_user"], rel=1e-3)
    assert "prompt/output = 200,000 prefill tokens" in " ".join(perf["assumptions"]), perf["assumptions"]


def test_two_output_tokens_keep_their_time_per_output_token(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--prompt", "2000", "--output-tokens", "2")
    assert code == 0, err
    assert re.search(r"^  time per output token [0-9,.]+ ms \(", out, re.M), out
    assert "does not apply" not in out


def test_recommend_does_not_hold_a_one_token_answer_to_a_chat_latency(local_db: None,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The note that rows serve each user below 33.3 tok/s "a token every 30 ms" (for chat) named ``#1 (0.0 tok/s)``
    for one-token answers, which stream nothing; with two tokens the note stays, its rates not written 0.0."""
    code, out, err = run(capsys, *SLOW_RECOMMEND, "1", "--prompt", "131071")
    assert code == 0, err
    assert "a token every 30 ms" not in out, out
    code, out, err = run(capsys, *SLOW_RECOMMEND, "2", "--prompt", "131070")
    assert code == 0, err
    note = " ".join(out.split())
    assert "a token every 30 ms" in note and "(0.0 tok/s)" not in note, out
    # one user's two tokens are one decode step apart (its prompt is prefilled before the first:
    # speed.batching.others_output_tokens); with 3 or 4 users the others' 131,070-token prompts pass the token
    # budget, so one budget-full step lies between them (speed.batching.prompt_bound_output_tokens: 3 decodes and
    # 2,045 prompt tokens on the A100's 2,048), not all their prompts' share (0.0xx tok/s before stop56 promptbound)
    assert re.search(r"#2 \([1-9]\.[0-9] tok/s\)", note), note


@pytest.mark.parametrize(("argv", "said"), [
    (("llama-3.1-405b", "--context", "131072", "--concurrency", "1000000"),
     ("(1,000,000 sequences of 131,072 tokens at once)", "short of memory", "--concurrency", "--max-servers")),
    (("llama-3.1-8b", "--max-usd", "100"), ("over --max-usd", "a higher --max-usd")),
    (("llama-3.1-8b", "--min-tokens-per-s", "5000"), ("below the per-user floor", "a lower --min-tokens-per-s-per-user")),
])
def test_nothing_fits_is_one_line_not_an_empty_table(local_db: None, capsys: pytest.CaptureFixture[str],
                                                     argv: tuple[str, ...], said: tuple[str, ...]) -> None:
    """It printed "Nothing in the catalog fits ..." and then the frame of a table with no row; exit 0 kept (the JSON
    answer of such a sweep, ``results: []``, exits 0 too: tests/hardening/test_engine_startup.py)."""
    code, out, err = run(capsys, "recommend", *argv)
    assert code == 0, err
    assert "┏" not in out and "Cheapest offerings that fit" not in out, out
    line = " ".join(out.split())
    assert re.search(r"Nothing in the catalog fits: none of the [0-9,]+ configurations tried", line), out
    for words in said:
        assert words in line, (words, out)
    assert "Cheaper options rejected" in out
    assert run_json(capsys, "recommend", *argv)["results"] == []


@pytest.mark.parametrize(("argv", "said", "not_said"), [
    (("recommend", "llama-3.1-8b", "--task", "train", "--min-tokens-per-s", "10"),
     "--min-tokens-per-s-per-user 10 applies to serving", "10.0"),
    (("recommend", "llama-3.1-8b", "--min-tokens-per-s", "1e9"),
     "--min-tokens-per-s-per-user 1,000,000,000: expected a finite number above 0, at most 10,000,000",
     "1000000000.0"),
    (("recommend", "llama-3.1-8b", "--min-tokens-per-s", "-5"), "--min-tokens-per-s-per-user -5: expected", "-5.0"),
    (("plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "65536", "--global-batch", "1e12"),
     "for no layout of the 65,536 GPUs: DP x micro-batch tried 256 x 1", "16384 x"),
    (("plan", "llama-3.1-8b", "--gpu", "h100", "--network-gbit-per-gpu", "100000"),
     "--network-gbit-per-gpu 100,000 applies to training", "100000.0"),
    (("plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--network-gbit-per-gpu", "1e9"),
     "--network-gbit-per-gpu 1,000,000,000: expected", "1000000000.0"),
    (("plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--seq", "1000000"),
     "seq 1,000,000 exceeds llama-3.1-8b's limit of 131,072 tokens", "131072"),
])
def test_refusals_write_numbers_as_the_rest_does(local_db: None, capsys: pytest.CaptureFixture[str],
                                                 argv: tuple[str, ...], said: str, not_said: str) -> None:
    """"the 65536 GPUs", "--min-tokens-per-s 10.0" (typer hands a float), "limit of 131072 tokens"."""
    err = cli_refusal(capsys, *argv)
    assert said in err and not_said not in err, err
