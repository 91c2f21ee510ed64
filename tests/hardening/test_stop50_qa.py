"""Stop 50, the adversarial walk of issue 11's speed and layout answers (benchmarks/hardening/stop50_qa.md): what it
found wrong in the answers' lines, each pinned here."""

from __future__ import annotations

import re

import pytest

from anchorgpu.planner.warnings import NO_CHANGE_FITS_CHECK, NO_COUNT_FITS_CHECK
from cli_runner import run, run_json
from hardening.conftest import cli_refusal

# one 200,000-token prompt for one output token: prefill-bound, a small fraction of a token a second
SLOW_PLAN = ("plan", "llama-3.1-8b", "--gpu", "h100", "--prompt", "200000", "--output-tokens", "1",
             "--allow-long-context")
SLOW_RECOMMEND = ("recommend", "llama-3.1-8b", "--prompt", "131071", "--output-tokens", "1", "--top", "3")


def test_a_rate_below_one_token_a_second_is_not_written_zero(capsys: pytest.CaptureFixture[str]) -> None:
    """It read ``per user 0.0 tok/s`` and ``output 0 tok/s (0 tok/s-0 tok/s; ceiling 0 tok/s)``."""
    code, out, err = run(capsys, *SLOW_PLAN)
    assert code == 0, err
    for label in ("per user", "output", "at saturation"):
        shown = re.search(rf"^  {label} ([0-9.,]+) tok/s \(([0-9.,]+) tok/s-([0-9.,]+) tok/s; ceiling ([0-9.,]+) tok/s\)",
                          out, re.M)
        assert shown, (label, out)
        assert all(float(v.replace(",", "")) > 0 for v in shown.groups()), shown.group(0)


def test_recommend_keeps_a_slow_rows_rate_and_its_band(local_db: None, capsys: pytest.CaptureFixture[str]) -> None:
    """Rounded to one decimal, the JSON's total output tok/s was 0.0 beside a per-user 0.03 (one user), the table's
    ``tok/s`` column, the band line and the Pareto front ``0``, while $/M tok was priced on the unrounded rate."""
    doc = run_json(capsys, *SLOW_RECOMMEND)
    assert doc["results"]
    for row in doc["results"]:
        for name in ("decode_tokens_per_s_total", "decode_tokens_per_s_per_user", "output_tokens_per_s"):
            for key in (name, f"{name}_low", f"{name}_high", f"{name}_ceiling"):
                assert row[key] > 0, (row["offering"], key, row[key])
        # one user's rate is the total's share: never above the total
        assert row["decode_tokens_per_s_per_user"] <= row["decode_tokens_per_s_total"] * 1.001, row
    code, out, err = run(capsys, *SLOW_RECOMMEND)
    assert code == 0, err
    assert not re.search(r"#1 0–0, ceiling 0\b", out), out
    assert not re.search(r"→ 0 tok/s total", out), out


def test_no_gpu_count_up_to_the_largest_tried_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    """Without --gpus, a million users of Llama-3.1-8B fit on no count the planner tries (up to 1,024 H100): the plan
    showed one GPU, said the layout was the default of one server, and told the user to drop layout flags they had not
    given.

    Since stop 60's queuekv merge (86af01d0) a plan past the engine's sequence cap holds the KV cache of the sequences
    that run (vLLM's max_num_seqs, 1,024) and the rest wait holding none, so "What would fit" now offers
    ``--gpus 4 --tp 4`` (the same 1,024 running, sharded) and the check points at it instead of saying no change fits;
    the count chooser still asks that every user run at once, so the GPU-count line stays. The suggestion is pinned to
    fit as pasted, running and queueing as the failed plan does; the no-count check is pinned on a job no change fits
    (121,000-token requests)."""
    at = ("plan", "llama-3.1-8b", "--gpu", "h100", "--concurrency", "1000000")
    doc = run_json(capsys, *at)
    assert doc["fits"] is False and doc["gpus"] == 1
    assert any(a.startswith("GPU count not given: no count of h100-sxm up to 1,024 holds 1,000,000 sequences")
               for a in doc["assumptions"]), doc["assumptions"]
    assert NO_COUNT_FITS_CHECK not in doc["checks"] and NO_CHANGE_FITS_CHECK not in doc["checks"]
    assert "The per-GPU total exceeds the GPU's memory: see the suggestions." in doc["checks"]
    assert [s["change"] for s in doc["suggestions"]] == ["--gpus 4 --tp 4"]
    pasted = run_json(capsys, *at, "--gpus", "4", "--tp", "4")
    assert pasted["fits"] is True
    assert pasted["per_gpu"]["total_bytes"] == doc["suggestions"][0]["total_bytes"]
    assert any("1,024 sequences running, the other 998,976 wait in the queue" in a for a in pasted["assumptions"])
    # with --gpus past the search, the same users are held
    assert run_json(capsys, *at, "--gpus", "4096")["fits"] is True
    # where no change fits either, the check says so without naming flags the user did not give
    none = run_json(capsys, *at, "--prompt", "120000", "--output-tokens", "1000")
    assert none["fits"] is False and none["gpus"] == 1 and none["suggestions"] == []
    assert any(a.startswith("GPU count not given: no count of h100-sxm up to 1,024 holds 1,000,000 sequences")
               for a in none["assumptions"]), none["assumptions"]
    assert NO_COUNT_FITS_CHECK in none["checks"] and NO_CHANGE_FITS_CHECK not in none["checks"]


def test_a_flag_given_keeps_the_check_that_says_to_drop_it(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "plan", "deepseek-v3", "--task", "train", "--gpu", "l4", "--seq", "131072", "--tp", "1",
                   "--pp", "1", "--zero", "0")  # the split pinned: --zero 0 alone has TP and PP searched around it
    assert doc["fits"] is False
    assert any(a.startswith("GPU count not given: no count of l4 up to 1,024 holds this job as asked")
               for a in doc["assumptions"]), doc["assumptions"]
    assert NO_CHANGE_FITS_CHECK in doc["checks"]


def test_the_note_stays_off_a_plan_whose_count_was_given_or_that_fits(capsys: pytest.CaptureFixture[str]) -> None:
    given = run_json(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--concurrency", "1000000", "--gpus", "8")
    fits = run_json(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--concurrency", "64")
    for doc in (given, fits):
        assert not any("no count of" in a for a in doc["assumptions"]), doc["assumptions"]


def test_a_batch_a_token_past_whole_sequences_does_not_read_whole(capsys: pytest.CaptureFixture[str]) -> None:
    """2,049 tokens of 2,048-token sequences read "(1.00 of them)"."""
    err = cli_refusal(capsys, "plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "8",
                      "--global-batch", "2049")
    assert "(1.0005 of them)" in err, err


def test_a_number_out_of_range_names_its_limits_as_written(local_db: None, capsys: pytest.CaptureFixture[str]) -> None:
    """``expected a finite number from 0 to 1e+07`` where the other options write ``1,000,000`` (a floor must be
    above 0 since --min-tokens-per-s-per-user: a floor of 0 is none)."""
    err = cli_refusal(capsys, "recommend", "llama-3.1-8b", "--min-tokens-per-s", "1e9")
    assert err.endswith("expected a finite number above 0, at most 10,000,000\n"), err


@pytest.mark.parametrize(("flag", "typed", "named"), [("--mbu", "0", "--mbu 0:"), ("--mfu", "0.001", "--mfu 0.001:")])
def test_an_efficiency_out_of_range_is_named_as_typed(capsys: pytest.CaptureFixture[str], flag: str, typed: str,
                                                      named: str) -> None:
    """``--mbu 0`` was refused as ``--mbu 0.0``."""
    err = cli_refusal(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", flag, typed)
    assert err.startswith(f"error: {named} an efficiency is a fraction from 0.01 to 1"), err


def test_recommend_writes_a_floor_and_a_users_count_with_separators(local_db: None,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """``no configuration reaches 5000 tokens/s per user`` and a header's ``concurrency 1000000``, where every other
    count of the answer has its thousands separated."""
    code, out, err = run(capsys, "recommend", "llama-3.1-8b", "--min-tokens-per-s", "5000")
    assert code == 0, err
    assert "no configuration reaches 5,000 tokens/s per user" in out, out
    code, out, err = run(capsys, "recommend", "llama-3.1-8b", "--concurrency", "1000000")
    assert code == 0, err
    assert "· concurrency 1,000,000" in out.splitlines()[0], out.splitlines()[0]


def _readme() -> str:
    from pathlib import Path

    return " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8").split())


def test_the_readmes_deepseek_r1_row_is_the_first_of_its_command(local_db: None,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """README's attention-DP paragraph: its command's answer "puts one 8 x H200 server at TP 2 x DP 4 x EP 8", but
    without ``--gpu h200`` the first row was an MI300X server and the H200 one third."""
    readme = _readme()
    found = re.search(r"`anchorgpu (recommend deepseek-r1 [^`]+)` puts one 8 x H200 server at TP 2 x DP 4 x EP 8, "
                      r"([0-9,]+) tok/s and \$([0-9.]+) a million tokens", readme)
    assert found, "the paragraph moved"
    first = run_json(capsys, *found.group(1).split())["results"][0]
    assert (first["offering"], first["servers"], first["layout"]["tp"], first["layout"]["dp"]) == ("h200-8x-bm", 1, 2, 4)
    assert f"{first['decode_tokens_per_s_total']:,.0f}" == found.group(2)
    assert first["usd_per_million_output_tokens"] == found.group(3)


def test_the_readmes_qwen3_moe_training_figures_are_plans(capsys: pytest.CaptureFixture[str]) -> None:
    """README's recommend section quoted 60,843 and 37,354 tok/s, the figures before the stop-49 refit."""
    at = ("plan", "qwen3-30b-a3b", "--task", "train", "--gpu", "h100", "--gpus", "8")
    best = run_json(capsys, *at)["performance"]["train_tokens_per_s"]
    one = run_json(capsys, *at, "--micro-batch", "1")["performance"]["train_tokens_per_s"]
    assert (f"EP 8 at micro-batch 4 with full recompute, {best:,.0f} tok/s, where micro-batch 1 at the least recompute "
            f"that fits runs {one:,.0f}.") in _readme()
